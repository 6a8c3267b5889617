package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
)

// An export is sent as it is read, not read whole first: a change to its
// end made while its first request is on the server is seen by the run,
// which fails the file rather than record bytes it did not send, and the
// next run sends the export as it now is. A run that read the export
// whole before its first request recorded it with the old end.
func TestExportIsSentAsItIsRead(t *testing.T) {
	dir := t.TempDir()
	var convs []map[string]any
	for i := range 2000 {
		convs = append(convs, map[string]any{"uuid": fmt.Sprintf("c%04d", i), "name": fmt.Sprintf("conversation %d", i),
			"chat_messages": []map[string]any{{"sender": "human", "text": fmt.Sprintf("question %d %s", i, strings.Repeat("words ", 150))}}})
	}
	convs[len(convs)-1]["name"] = "LAST-OLD"
	b, _ := json.Marshal(convs)
	export := filepath.Join(dir, "conversations.json")
	if err := os.WriteFile(export, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var edited atomic.Bool
	editEnd := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ingest" && edited.CompareAndSwap(false, true) {
				if err := os.WriteFile(export, bytes.Replace(b, []byte("LAST-OLD"), []byte("LAST-NEW"), 1), 0o644); err != nil {
					t.Error(err)
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	tg := newTarget(t, editEnd)
	opt := options(t, tg.srv.URL)
	opt.BatchChunks, opt.Chunk = 0, chunk.Options{Size: 2000, Overlap: 200} // a few requests, under the server's rate limit
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 0 || res.FilesFailed != 1 || !strings.Contains(log.String(), "changed while it was read") ||
		len(manifestFiles(t, opt.Manifest)) != 0 {
		t.Fatalf("first run: %+v %v\n%s", res, err, log.String())
	}
	log.Reset()
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 1 || res.FilesFailed != 0 || len(manifestFiles(t, opt.Manifest)) != 1 {
		t.Fatalf("second run: %+v %v\n%s", res, err, log.String())
	}
	got := strings.Join(contents(t, tg.st), "\n")
	if !strings.Contains(got, "|LAST-NEW|") || strings.Contains(got, "|LAST-OLD|") {
		t.Errorf("the last conversation is not stored as the export now holds it")
	}
}

// A file other than an export is read whole, so one over the local
// sweep's limit fails as it does there, unread; the rest of the vault is
// sent.
func TestFileOverTheSizeLimitFails(t *testing.T) {
	dir := vault(t)
	big, err := os.Create(filepath.Join(dir, "huge.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(ingest.MaxFileSize + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	big.Close()
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	want := fmt.Sprintf("huge.md\tfile is %d bytes, over the %d byte limit for a single conversation", ingest.MaxFileSize+1, ingest.MaxFileSize)
	if err != nil || res.FilesFailed != 1 || res.FilesChanged != 4 || !strings.Contains(log.String(), want) {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
}
