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

// A sweep's removals of what its vault no longer holds, the sources of
// files gone (--prune) and the records of gone files that held no
// conversation, commit in transactions of their own after its writes, and
// rightly so: a kill -9 before them leaves the store as a sweep without
// --prune leaves it, nothing lost, and every sweep finds them again from
// the walk and the manifest, so the next one removes them. (The
// conversations a changed export drops are another matter: only a sweep
// that reads the export again finds them, TestDroppedConversationsGoWith-
// TheExportsWrite.) A file moved within the vault is the case to mind: its
// new path is written before its old one is pruned, so the vectors of its
// unchanged passages stay stored throughout and are never embedded again.
func TestRemovalsKilledBeforeTheyCommitAreRedone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prune bool
	}{
		{"prune", true},   // killed at the prune's Delete
		{"forget", false}, // killed at the Delete of the gone empty file's record
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "a.md", convA)
			write(t, root, "b.md", convB)
			write(t, root, "empty.md", "")
			st := openStore(t)
			emb, space := embedSpace(t, st)
			opt := Options{Prune: tc.prune, Embedder: emb, Space: space, Dim: 16}
			if res, log := sweep(t, st, root, opt); res.FilesChanged != 2 || log != "" {
				t.Fatalf("first sweep: %+v %q", res, log)
			}

			// a.md moves to c.md, b.md and empty.md go, d.md is new.
			if err := os.Rename(filepath.Join(root, "a.md"), filepath.Join(root, "c.md")); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"b.md", "empty.md"} {
				if err := os.Remove(filepath.Join(root, f)); err != nil {
					t.Fatal(err)
				}
			}
			write(t, root, "d.md", "User: when do swifts sleep\n\nAssistant: on the wing.\n")
			calls := emb.Texts()
			_, err := Sweep(context.Background(), st, &crashingWriter{DB: st}, root, opt)
			if !errors.Is(err, errKilled) {
				t.Fatalf("the sweep made no Delete to be killed at: %v", err)
			}
			if err := st.IntegrityCheck(context.Background()); err != nil {
				t.Fatalf("after the kill: %v", err)
			}
			// Killed after its writes: what the sweep wrote is stored, and
			// what it was to remove is as before.
			want := []string{"a.md", "b.md", "c.md", "d.md"}
			if ids := sourceIDs(t, st, root); !slices.Equal(ids, want) {
				t.Errorf("after the kill: %q; want %q", ids, want)
			}
			if got := emb.Texts() - calls; got != 1 {
				t.Errorf("the killed sweep embedded %d texts; want 1 (d.md's: c.md's are a.md's)", got)
			}

			// The next sweep, of the same vault, with the same options.
			calls = emb.Texts()
			if _, log := sweep(t, st, root, opt); log != "" {
				t.Fatalf("sweep after the kill: %q", log)
			}
			if got := emb.Texts() - calls; got != 0 {
				t.Errorf("the sweep after the kill embedded %d texts; want none", got)
			}
			if err := st.IntegrityCheck(context.Background()); err != nil {
				t.Fatalf("after the next sweep: %v", err)
			}
			abs, _ := filepath.Abs(root)
			m, err := st.Manifest(context.Background(), recall.KindArchive, abs)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m["empty.md"]; ok {
				t.Error("the record of empty.md, gone, is kept after the next sweep")
			}
			clean := openStore(t)
			cemb, cspace := embedSpace(t, clean)
			copt := opt
			copt.Embedder, copt.Space = cemb, cspace
			sweep(t, clean, root, copt)
			if !tc.prune {
				// Without --prune, a.md and b.md stay, as after any sweep.
				if ids := sourceIDs(t, st, root); !slices.Equal(ids, want) {
					t.Errorf("after the next sweep: %q; want %q", ids, want)
				}
				return
			}
			if got, want := content(t, st), content(t, clean); got != want {
				t.Errorf("after the kill and a sweep the store holds\n%s\nwant, as a clean sweep stores,\n%s", got, want)
			}
			if got, want := vectorCount(t, st), vectorCount(t, clean); got != want {
				t.Errorf("%d vectors after the kill and a sweep; a clean sweep stores %d", got, want)
			}
		})
	}
}

// vectorCount is how many vectors st's read space holds.
func vectorCount(t *testing.T, st *sqlite.DB) int {
	t.Helper()
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range stats.Spaces {
		if sp.Read {
			return sp.Vectors
		}
	}
	return 0
}
