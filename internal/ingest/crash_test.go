package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

var errKilled = errors.New("killed")

// crashingWriter is a sweep's process killed (kill -9) as it is about to
// commit a removal of sources in a transaction of its own: that Delete
// commits nothing, and nor does any write after it, the process being gone.
type crashingWriter struct {
	*sqlite.DB
	dead atomic.Bool
}

func (w *crashingWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	if w.dead.Load() {
		return recall.WriteResult{}, errKilled
	}
	return w.DB.Write(ctx, docs, vecs, remove...)
}

func (w *crashingWriter) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	w.dead.Store(true)
	return 0, recall.WriteResult{}, errKilled
}

// The conversations a changed export no longer holds are removed in the
// transaction that records the export as swept: a crash can leave neither
// them stored beside the export's new state nor anything else lost. They
// were removed in a transaction after it, and a kill -9 between the two
// left them searchable; for good when the export's sources then looked
// unchanged, as after a --full sweep of an export rewritten at the same
// size and mtime (a copy that keeps mtimes, a same-size edit): no later
// sweep read it again. Both in one piece and in several (each committed on
// its own, the last one settling the export).
func TestDroppedConversationsGoWithTheExportsWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch BatchLimits
	}{
		{"one piece", BatchLimits{}},
		{"pieces", BatchLimits{Docs: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			before := claudeExport(t, 6, 600, 1, nil)
			write(t, root, "conversations.json", before)
			st := openStore(t)
			if res, log := sweep(t, st, root, Options{Batch: tc.batch}); res.FilesChanged != 1 || len(sourceIDs(t, st, root)) != 6 {
				t.Fatalf("first sweep: %+v %q", res, log)
			}

			// The export loses conversations 1 and 4 and keeps its size
			// (JSON allows the trailing spaces) and mtime.
			dropped := []string{"conversations.json/c-1-1", "conversations.json/c-1-4"}
			after := claudeExport(t, 6, 600, 1, func(i int, msgs []string) ([]string, bool) { return msgs, i != 1 && i != 4 })
			if len(after) >= len(before) {
				t.Fatalf("the export grew from %d to %d bytes", len(before), len(after))
			}
			after += strings.Repeat(" ", len(before)-len(after))
			p := filepath.Join(root, "conversations.json")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, root, "conversations.json", after)
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}

			// sweep --full, killed at its first Delete, if it makes one.
			_, err = Sweep(context.Background(), st, &crashingWriter{DB: st}, root, Options{Full: true, Batch: tc.batch})
			if err != nil && !errors.Is(err, errKilled) {
				t.Fatal(err)
			}
			// The next sweep, of the same vault.
			if _, log := sweep(t, st, root, Options{Batch: tc.batch}); log != "" {
				t.Fatalf("sweep after the crash: %q", log)
			}
			ids := sourceIDs(t, st, root)
			for _, id := range dropped {
				if slices.Contains(ids, id) {
					t.Errorf("%s, gone from the export, is still stored after the crash and a sweep: %q", id, ids)
				}
			}
			// Nothing else lost: the store holds what a clean sweep of the
			// vault stores.
			clean := openStore(t)
			sweep(t, clean, root, Options{Batch: tc.batch})
			if got, want := content(t, st), content(t, clean); got != want {
				t.Errorf("after the crash and a sweep the store holds\n%s\nwant, as a clean sweep stores,\n%s", got, want)
			}
			if n := len(ids); n != 4 {
				t.Errorf("%d conversations stored; want 4: %s", n, fmt.Sprint(ids))
			}
		})
	}
}
