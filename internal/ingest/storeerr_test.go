package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// refusingWriter is a database file that may only be read, refusing
// every write as SQLite's store does.
type refusingWriter struct{ *sqlite.DB }

var errRefused = recall.Errorf(recall.EFORBIDDEN, "the database file may not be written: nothing was changed")

func (refusingWriter) Write(context.Context, []recall.Document, []recall.Vector, ...string) (recall.WriteResult, error) {
	return recall.WriteResult{}, errRefused
}

func (refusingWriter) Delete(context.Context, ...string) (int, recall.WriteResult, error) {
	return 0, recall.WriteResult{}, errRefused
}

// A refused write says what it was storing or removing, in the sweep's
// terms (the files, as its failures name them), then why, keeping the
// store's code: it said "write: the database file may not be written",
// naming a step of the pipeline.
func TestARefusedWriteSaysWhatItStored(t *testing.T) {
	chat := "**User:** why does rye dough stick?\n\n**Assistant:** it holds more water.\n"
	for _, c := range []struct {
		name  string
		files []string
		want  []string // the message begins with one of these
	}{
		{"one file", []string{"notes/a.md"}, []string{"storing notes/a.md: the database file may not be written"}},
		{"two files", []string{"notes/a.md", "notes/b.md"}, []string{
			"storing notes/a.md and 1 other file: the database file", "storing notes/b.md and 1 other file: the database file"}},
		{"three files", []string{"a.md", "b.md", "c.md"}, []string{
			"storing a.md and 2 other files: ", "storing b.md and 2 other files: ", "storing c.md and 2 other files: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range c.files {
				write(t, root, f, chat)
			}
			st := openStore(t)
			_, err := Sweep(context.Background(), st, refusingWriter{st}, root, Options{})
			ok := false
			for _, w := range c.want {
				ok = ok || (err != nil && strings.HasPrefix(err.Error(), w))
			}
			if !ok || recall.ErrorCode(err) != recall.EFORBIDDEN {
				t.Errorf("sweep: %v (%s); want it to begin with one of %q, forbidden", err, recall.ErrorCode(err), c.want)
			}
		})
	}

	// A prune whose removal is refused says so, counting the files.
	root := t.TempDir()
	write(t, root, "notes/a.md", chat)
	write(t, root, "notes/b.md", chat)
	st := openStore(t)
	sweep(t, st, root, Options{})
	if err := os.RemoveAll(filepath.Join(root, "notes")); err != nil {
		t.Fatal(err)
	}
	_, err := Sweep(context.Background(), st, refusingWriter{st}, root, Options{Prune: true, PruneEmpty: true})
	const want = "removing the sources of 2 files gone from the vault: the database file may not be written"
	if err == nil || !strings.HasPrefix(err.Error(), want) || recall.ErrorCode(err) != recall.EFORBIDDEN {
		t.Errorf("prune: %v; want it to begin %q, forbidden", err, want)
	}
}
