package remote_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/testvault"
)

// zoneVault writes an export whose two conversations were created at
// 07:08:09 UTC on 6 May 2024 (the 5th at UTC-10, the 6th at UTC+14) and a
// note dated by the day written.
func zoneVault(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	export := `[{"uuid":"c1","name":"Tea","created_at":"2024-05-06T07:08:09Z","chat_messages":[` +
		`{"sender":"human","text":"how hot for green tea?"},{"sender":"assistant","text":"about 80 degrees"}]},` +
		`{"uuid":"c2","name":"Bread","created_at":"2024-05-06T07:08:09Z","chat_messages":[` +
		`{"sender":"human","text":"why did my bread not rise?"},{"sender":"assistant","text":"old yeast, most likely"}]}]`
	for name, text := range map[string]string{
		"conversations.json": export,
		"note.md":            "# Tea\n\nDate: 2024-03-06 05:30\n\n**user:** how hot for green tea?\n",
	} {
		if err := testvault.WriteFile(filepath.Join(dir, name), text, testvault.Settled()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var (
	west = time.FixedZone("UTC-10", -10*3600)
	east = time.FixedZone("UTC+14", 14*3600)
)

func storedSource(t *testing.T, st recall.Store, id string) recall.Source {
	t.Helper()
	s, err := st.Source(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A remote sweep in another zone than the one it dated a file's
// conversations in sends the file again, though unchanged, and the server
// then holds what a local sweep in that zone stores, as a local sweep
// dates again; it says so (Options.Redating, Result.FilesRedated). A file
// whose dates are the days written is not sent again, nor is anything once
// dated in the zone. The server records the zone with each source.
func TestRemoteSweepRedatesInANewZone(t *testing.T) {
	dir := zoneVault(t)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	opt.Zone = west
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesChanged != 2 || res.FilesRedated != 0 {
		t.Fatalf("first run: %+v %v", res, err)
	}
	if s := storedSource(t, tg.st, "conversations.json/c1"); s.Date != "2024-05-05" || s.Zone != ingest.ZoneKey(west) {
		t.Fatalf("dated %s in zone %q at UTC-10; want 2024-05-05 in %q", s.Date, s.Zone, ingest.ZoneKey(west))
	}

	var told []int
	opt.Zone = east
	opt.Redating = func(files int) { told = append(told, files) }
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 1 || res.FilesSkipped != 1 || res.FilesRedated != 1 || !slices.Equal(told, []int{1}) {
		t.Errorf("run at UTC+14: %+v %v, told of %v; want the export sent again to date it, and said, the note skipped", res, err, told)
	}
	for _, id := range []string{"conversations.json/c1", "conversations.json/c2"} {
		if s := storedSource(t, tg.st, id); s.Date != "2024-05-06" || s.Zone != ingest.ZoneKey(east) {
			t.Errorf("%s dated %s in zone %q after a run at UTC+14; want 2024-05-06 in %q", id, s.Date, s.Zone, ingest.ZoneKey(east))
		}
	}
	if s := storedSource(t, tg.st, "note.md"); s.Date != "2024-03-06" || s.Zone != "" {
		t.Errorf("note dated %s in zone %q; want the day written, in none", s.Date, s.Zone)
	}
	local, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "local.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if _, err := ingest.Sweep(context.Background(), local, local, dir, ingest.Options{Chunk: opt.Chunk, Zone: east}); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, tg.st), contents(t, local); !slices.Equal(got, want) {
		t.Errorf("after the zone changed the server holds\n%q\nwant, as a local sweep there stores,\n%q", got, want)
	}

	// Then nothing more, in the same zone or one that dates alike.
	told = nil
	opt.Zone = time.FixedZone("also +14", 14*3600)
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesSkipped != 2 || res.Batches != 0 || told != nil {
		t.Errorf("the next run: %+v %v, told of %v; want every file skipped", res, err, told)
	}
}

// A manifest an older client wrote records no zone: its files are read
// again once, and sent only when some date of theirs depends on the zone
// (the server answers unchanged when the dates stand); the entries then
// record it, and the run after sends nothing.
func TestManifestWithoutZonesIsReadAgainOnce(t *testing.T) {
	dir := zoneVault(t)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	opt.Zone = east
	if _, err := remote.Sweep(context.Background(), dir, opt); err != nil {
		t.Fatal(err)
	}
	editManifest(t, opt.Manifest, func(name string, e map[string]any) {
		if _, ok := e["zone"]; !ok {
			t.Errorf("the manifest entry of %s records no zone: %v", name, e)
		}
		delete(e, "zone")
	})

	var told []int
	opt.Redating = func(files int) { told = append(told, files) }
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || !slices.Equal(told, []int{2}) || res.FilesRedated != 1 || res.FilesChanged != 1 || res.FilesSkipped != 1 || res.ChunksWritten != 0 {
		t.Errorf("zones unknown: told of %v, %+v %v; want both files read, the export sent again and nothing written", told, res, err)
	}
	told = nil
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || told != nil || res.FilesSkipped != 2 || res.Batches != 0 {
		t.Errorf("the run after: told of %v, %+v %v; want every file skipped", told, res, err)
	}
}

// A server older than the zone field refuses it: the client sends its
// chunks without it, once refused, and still sends a file again when the
// zone changes (the manifest records it), so the server's dates follow.
func TestServerWithoutZonesStillGetsNewDates(t *testing.T) {
	dir := zoneVault(t)
	var refused atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if r.URL.Path == "/ingest" && strings.Contains(string(body), `"zone":`) {
				refused.Add(1)
				http.Error(w, `{"error":{"code":"invalid","message":"json: unknown field \"zone\""}}`, http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.Zone = west
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesChanged != 2 || res.BatchesFailed != 0 || refused.Load() != 1 {
		t.Fatalf("first run: %+v %v, %d requests refused; want one", res, err, refused.Load())
	}
	if s := storedSource(t, tg.st, "conversations.json/c1"); s.Date != "2024-05-05" || s.Zone != "" {
		t.Fatalf("dated %s in zone %q at UTC-10", s.Date, s.Zone)
	}
	opt.Zone = east
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesRedated != 1 || res.FilesChanged != 1 {
		t.Errorf("run at UTC+14: %+v %v", res, err)
	}
	if s := storedSource(t, tg.st, "conversations.json/c2"); s.Date != "2024-05-06" {
		t.Errorf("dated %s after a run at UTC+14; want 2024-05-06", s.Date)
	}
}
