package remote_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/remote"
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
	if err := os.WriteFile(p, []byte("["+strings.Join(parts, ",")+"]"), 0o644); err != nil {
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
	dir := vault(t)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	ctx := context.Background()
	if _, err := remote.Sweep(ctx, dir, opt); err != nil {
		t.Fatal(err)
	}
	before := sourceIDs(t, tg.st)
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
