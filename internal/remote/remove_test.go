package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
	"github.com/recall-mcp/recall/internal/testvault"
)

// export writes a Claude export holding the conversations named.
func export(t *testing.T, p string, convs ...string) {
	t.Helper()
	var parts []string
	for _, c := range convs {
		parts = append(parts, fmt.Sprintf(`{"uuid": %q, "name": "about %s", "chat_messages": [{"sender": "human", "text": "tell me about %s"}, {"sender": "assistant", "text": "%s is a word"}]}`, c, c, c, c))
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testvault.WriteFile(p, "["+strings.Join(parts, ",")+"]", testvault.Settled()); err != nil {
		t.Fatal(err)
	}
}

func sourceIDs(t *testing.T, st recall.Store) string {
	t.Helper()
	var ids []string
	for _, c := range contents(t, st) {
		ids = append(ids, c[:strings.IndexByte(c, '|')])
	}
	return strings.Join(ids, " ")
}

// Files gone from the vault are reported and kept, on the server and in
// the manifest, until a run with Prune removes them from the server; the
// server then holds what a local sweep of the vault holds.
func TestPruneRemovesGoneFilesFromTheServer(t *testing.T) {
	dir, tg, opt, before := sweptVault(t)
	ctx := context.Background()
	os.Remove(filepath.Join(dir, "chinese-names.md"))
	os.RemoveAll(filepath.Join(dir, "exports"))
	for range 2 {
		res, err := remote.Sweep(ctx, dir, opt)
		if err != nil || res.FilesRemoved != 2 || res.SourcesRemoved != 0 || strings.Join(res.Removed, " ") != "chinese-names.md exports/conversations.json" {
			t.Errorf("without prune: %+v %v", res, err)
		}
		if got := sourceIDs(t, tg.st); got != before {
			t.Errorf("without prune the server lost sources: %s", got)
		}
		if got := manifestFiles(t, opt.Manifest); len(got) != 4 {
			t.Errorf("without prune the manifest forgot files: %v", got)
		}
	}
	opt.Prune = true
	res, err := remote.Sweep(ctx, dir, opt)
	if err != nil || res.FilesRemoved != 2 || res.SourcesRemoved < 3 || res.FilesSkipped != 2 {
		t.Errorf("with prune: %+v %v", res, err)
	}
	_, local := localSweep(t, dir, opt.Chunk)
	if got, want := strings.Join(contents(t, tg.st), "\n"), strings.Join(contents(t, local), "\n"); got != want {
		t.Errorf("after prune, remote store:\n%s\n\nlocal sweep:\n%s", got, want)
	}
	if got := manifestFiles(t, opt.Manifest); strings.Join(got, " ") != "2024/02/2024-02-29-standup.md logs/chat-log.jsonl" {
		t.Errorf("manifest after prune: %v", got)
	}
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.FilesRemoved != 0 || res.Batches != 0 {
		t.Errorf("once pruned: %+v %v", res, err)
	}
}

// Conversations a changed export no longer holds are removed from the
// server with it, as a local sweep removes them, Prune or not.
func TestConversationsGoneFromAnExportAreRemoved(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claude.json")
	export(t, p, "alpha", "beta", "gamma")
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	if got := sourceIDs(t, tg.st); got != "claude.json/alpha claude.json/beta claude.json/gamma" {
		t.Fatalf("first run: %s", got)
	}
	export(t, p, "alpha", "delta")
	res, err := remote.Sweep(ctx, dir, opt)
	if err != nil || res.FilesChanged != 1 || res.ConversationsRemoved != 2 || res.SourcesRemoved != 2 {
		t.Errorf("changed export: %+v %v", res, err)
	}
	_, local := localSweep(t, dir, opt.Chunk)
	if got, want := strings.Join(contents(t, tg.st), "\n"), strings.Join(contents(t, local), "\n"); got != want {
		t.Errorf("remote store:\n%s\n\nlocal sweep:\n%s", got, want)
	}
	// A file that was one conversation and is now an export: its own
	// source goes too.
	single := filepath.Join(dir, "notes.json")
	os.WriteFile(single, []byte(`[{"role": "user", "content": "a single chat"}, {"role": "assistant", "content": "indeed"}]`), 0o644)
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	if got := sourceIDs(t, tg.st); !strings.Contains(got, "notes.json") {
		t.Fatalf("single conversation not sent: %s", got)
	}
	export(t, single, "epsilon")
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.ConversationsRemoved != 1 {
		t.Errorf("file turned export: %+v %v", res, err)
	}
	if got := sourceIDs(t, tg.st); got != "claude.json/alpha claude.json/delta notes.json/epsilon" {
		t.Errorf("after the file turned export: %s", got)
	}
}

// A removal the server does not confirm changes nothing in the manifest:
// the next run asks again. A server without the route (older than the
// client) stops the run, saying to upgrade it.
func TestRemovalsRecordedOnlyOnceConfirmed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claude.json")
	export(t, p, "alpha", "beta")
	os.WriteFile(filepath.Join(dir, "gone.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	var refuse atomic.Int32 // 1: as a server without the route; 2: failing
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path != remote.RemovePath:
			case refuse.Load() == 1:
				http.Error(w, `{"error":{"code":"not_found","message":"no such endpoint"}}`, http.StatusNotFound)
				return
			case refuse.Load() == 2:
				http.Error(w, `{"error":{"code":"unavailable","message":"down"}}`, http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.Retries = 1
	opt.Prune = true
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	manifest, _ := os.ReadFile(opt.Manifest)
	export(t, p, "alpha")
	os.Remove(filepath.Join(dir, "gone.md"))
	for _, mode := range []int32{1, 2} {
		refuse.Store(mode)
		_, err := remote.Sweep(ctx, dir, opt)
		want := map[int32]string{1: "is older than this client, upgrade it", 2: "503"}[mode]
		if err == nil || !strings.Contains(err.Error()+recall.ErrorMessage(err), want) {
			t.Errorf("refused (%d): %v", mode, err)
		}
		if got := sourceIDs(t, tg.st); got != "claude.json/alpha claude.json/beta gone.md" {
			t.Errorf("refused (%d): %s", mode, got)
		}
		if now, _ := os.ReadFile(opt.Manifest); string(now) != string(manifest) {
			t.Errorf("refused (%d): the manifest changed:\n%s", mode, now)
		}
	}
	refuse.Store(0)
	res, err := remote.Sweep(ctx, dir, opt)
	if err != nil || res.FilesChanged != 1 || res.ConversationsRemoved != 1 || res.SourcesRemoved != 2 {
		t.Errorf("once it takes them: %+v %v", res, err)
	}
	if got := sourceIDs(t, tg.st); got != "claude.json/alpha" {
		t.Errorf("once it takes them: %s", got)
	}
	if got := manifestFiles(t, opt.Manifest); strings.Join(got, " ") != "claude.json" {
		t.Errorf("manifest: %v", got)
	}
}

// An export replaced by a folder of its name: pruning the export removes
// its conversations, not the sources of the files now in that folder.
func TestPruneKeepsFilesUnderAGoneFilesPath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	export(t, p, "alpha")
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	os.MkdirAll(p, 0o755)
	os.WriteFile(filepath.Join(p, "b.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.FilesRemoved != 1 || res.FilesChanged != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	opt.Prune = true
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.SourcesRemoved != 1 {
		t.Errorf("prune: %+v %v", res, err)
	}
	if got := sourceIDs(t, tg.st); got != "a.json/b.md" {
		t.Errorf("left: %s", got)
	}
}

// oldEntry rewrites the manifest's entry of the file rel as a client from
// before entries recorded an export's conversations wrote it: the file as
// it now is, with no list of its conversations. It records this client's
// reading, so that only the list is at stake (such a client recorded none,
// and its files are sent again on the next run: TestOlderReadingIsSentAgain).
func oldEntry(t *testing.T, manifest, dir, rel string) {
	t.Helper()
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	m["files"].(map[string]any)[rel] = map[string]any{"hash": hex.EncodeToString(sum[:]), "size": fi.Size(), "mtime": fi.ModTime().UnixNano(), "reading": ingest.ReadingVersion}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// An export whose manifest entry an older client wrote, without its
// conversations, lost some before it changes again: once its changed
// conversations are all confirmed, the server is asked which sources it
// holds for it, and those the export no longer holds are removed, as a
// local sweep removes them. They once stayed on the server for good. A
// file that failed is not asked about and removes nothing; a server
// without the listing stops the run, saying to upgrade it; an entry this
// client wrote records its conversations and is never asked about.
func TestOldManifestEntryAsksTheServer(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claude.json")
	export(t, p, "alpha", "beta", "gamma")
	session := filepath.Join(dir, "logs", "session.jsonl")
	os.MkdirAll(filepath.Dir(session), 0o755)
	testvault.WriteFile(session, `{"role": "user", "content": "first"}`+"\n", testvault.Settled())
	var mode atomic.Int32 // 1: /ingest fails; 2: no listing, as an older server; 3: a listing that never ends
	var asked atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == remote.SourcesPath && mode.Load() == 2:
				http.Error(w, `{"error":{"code":"not_found","message":"no such endpoint"}}`, http.StatusNotFound)
				return
			case r.URL.Path == remote.SourcesPath && mode.Load() == 3:
				w.Write([]byte(`{"file": "claude.json", "sources": [], "next": "again"}`))
				return
			case r.URL.Path == remote.SourcesPath && mode.Load() == 4:
				// Cursors that go round: "" → a → b → a …
				var req remote.SourcesRequest
				json.NewDecoder(r.Body).Decode(&req)
				next := map[string]string{"": "a", "a": "b", "b": "a"}[req.Cursor]
				fmt.Fprintf(w, `{"file": "claude.json", "sources": [], "next": %q}`, next)
				return
			case r.URL.Path == remote.SourcesPath:
				asked.Add(1)
			case r.URL.Path == "/ingest" && mode.Load() == 1:
				http.Error(w, `{"error":{"code":"unavailable","message":"down"}}`, http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.Retries = -1
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	// The export lost gamma, swept by an older client: gamma stayed on the
	// server, and the manifest does not know it was sent.
	export(t, p, "alpha", "beta")
	oldEntry(t, opt.Manifest, dir, "claude.json")
	const before = "claude.json/alpha claude.json/beta claude.json/gamma logs/session.jsonl"
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.FilesSkipped != 2 || asked.Load() != 0 || sourceIDs(t, tg.st) != before {
		t.Errorf("unchanged: %+v %v, asked %d, %s", res, err, asked.Load(), sourceIDs(t, tg.st))
	}
	export(t, p, "alpha", "beta", "delta")
	manifest, _ := os.ReadFile(opt.Manifest)
	for _, m := range []int32{1, 2, 3, 4} {
		mode.Store(m)
		res, err := remote.Sweep(ctx, dir, opt)
		switch m {
		case 1:
			if err != nil || res.FilesFailed != 1 {
				t.Errorf("failed send: %+v %v", res, err)
			}
		case 2:
			if err == nil || !strings.Contains(recall.ErrorMessage(err), "is older than this client, upgrade it") {
				t.Errorf("no listing: %+v %v", res, err)
			}
		case 3, 4:
			if err == nil || !strings.Contains(err.Error(), "does not advance") {
				t.Errorf("endless listing (mode %d): %+v %v", m, res, err)
			}
		}
		if got := sourceIDs(t, tg.st); !strings.Contains(got, "claude.json/gamma") {
			t.Errorf("mode %d removed gamma: %s", m, got)
		}
		if now, _ := os.ReadFile(opt.Manifest); string(now) != string(manifest) {
			t.Errorf("mode %d changed the manifest:\n%s", m, now)
		}
	}
	if asked.Load() != 0 {
		t.Errorf("a file that failed was asked about %d times", asked.Load())
	}
	mode.Store(0)
	res, err := remote.Sweep(ctx, dir, opt)
	if err != nil || res.FilesChanged != 1 || res.ConversationsRemoved != 1 || res.SourcesRemoved != 1 || asked.Load() != 1 {
		t.Errorf("changed: %+v %v, asked %d", res, err, asked.Load())
	}
	_, local := localSweep(t, dir, opt.Chunk)
	if got, want := strings.Join(contents(t, tg.st), "\n"), strings.Join(contents(t, local), "\n"); got != want {
		t.Errorf("remote store:\n%s\n\nlocal sweep:\n%s", got, want)
	}
	// Recorded now, with its conversations: the next change removes what
	// the export lost without asking, and so does a session's.
	export(t, p, "alpha", "delta")
	os.WriteFile(session, []byte(`{"role": "user", "content": "first, then more"}`+"\n"), 0o644)
	res, err = remote.Sweep(ctx, dir, opt)
	if err != nil || res.FilesChanged != 2 || res.ConversationsRemoved != 1 || asked.Load() != 1 {
		t.Errorf("recorded: %+v %v, asked %d", res, err, asked.Load())
	}
	if got := sourceIDs(t, tg.st); got != "claude.json/alpha claude.json/delta logs/session.jsonl" {
		t.Errorf("recorded: %s", got)
	}
}

// A source the server lists for an export that is a file of its own (one
// of a folder of the export's name, gone from the vault and kept on the
// server without Prune) is no conversation of the export: asking about
// the export leaves it alone.
func TestAskingKeepsFilesUnderTheExportsPath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	os.MkdirAll(p, 0o755)
	os.WriteFile(filepath.Join(p, "b.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(p)
	export(t, p, "alpha", "beta")
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.FilesRemoved != 1 || res.FilesChanged != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	oldEntry(t, opt.Manifest, dir, "a.json")
	export(t, p, "alpha")
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.ConversationsRemoved != 1 {
		t.Errorf("%+v %v", res, err)
	}
	if got := sourceIDs(t, tg.st); got != "a.json/alpha a.json/b.md" {
		t.Errorf("left: %s", got)
	}
}

// A vault that holds no file at all (a disk not mounted) is not pruned:
// the run fails, the server and the manifest keep every file, until
// PruneEmpty says the vault was emptied on purpose.
func TestPruneRefusesAnEmptyVault(t *testing.T) {
	dir, tg, opt, before := sweptVault(t)
	ctx := context.Background()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	opt.Prune = true
	if _, err := remote.Sweep(ctx, dir, opt); err == nil || !strings.Contains(err.Error(), "holds no files now, but 4 files were swept from it before") {
		t.Fatalf("an empty vault pruned: %v", err)
	}
	if got := sourceIDs(t, tg.st); got != before {
		t.Errorf("the refused prune removed sources: %s", got)
	}
	if got := manifestFiles(t, opt.Manifest); len(got) != 4 {
		t.Errorf("the refused prune changed the manifest: %v", got)
	}
	opt.PruneEmpty = true
	if res, err := remote.Sweep(ctx, dir, opt); err != nil || res.FilesRemoved != 4 || sourceIDs(t, tg.st) != "" {
		t.Errorf("with PruneEmpty: %+v %v, left %s", res, err, sourceIDs(t, tg.st))
	}
}

// sweptVault sweeps the test vault into a test server and returns them,
// the options it was swept with and the sources the server then holds.
func sweptVault(t *testing.T) (dir string, tg *target, opt remote.Options, before string) {
	t.Helper()
	dir = vault(t)
	tg = newTarget(t, nil)
	opt = options(t, tg.srv.URL)
	if _, err := remote.Sweep(context.Background(), dir, opt); err != nil {
		t.Fatal(err)
	}
	return dir, tg, opt, sourceIDs(t, tg.st)
}

// A source the server keeps when asked to remove it (one its own sweep of
// a folder stored under the same id) is counted as kept, not removed.
func TestPruneCountsWhatTheServerKept(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone.md")
	for _, p := range []string{gone, filepath.Join(dir, "stays.md")} {
		if err := testvault.WriteFile(p, "**User:** hi\n\n**Assistant:** hello", testvault.Settled()); err != nil {
			t.Fatal(err)
		}
	}
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	opt.Prune = true
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	// The server's own sweep of a folder now holds gone.md.
	text := "**User:** kept here"
	doc := recall.Document{Source: recall.Source{ID: "gone.md", Kind: recall.KindArchive, Vault: t.TempDir()},
		Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}
	if _, err := tg.st.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	res, err := remote.Sweep(ctx, dir, opt)
	if err != nil || res.FilesRemoved != 1 || res.SourcesRemoved != 0 || res.SourcesKept != 1 {
		t.Errorf("prune of a file the server sweeps itself: %+v %v", res, err)
	}
	if got := sourceIDs(t, tg.st); got != "gone.md stays.md" {
		t.Errorf("the server's own source: %q", got)
	}
}
