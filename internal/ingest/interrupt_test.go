package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// stoppingEmbedder interrupts the sweep, as a Ctrl-C would, during its
// call number at, which then ends with the interruption, as a provider's
// call does; the calls before it embed as usual.
type stoppingEmbedder struct {
	*embedtest.Embedder
	at     int32
	cancel context.CancelFunc
	calls  atomic.Int32
}

func (e *stoppingEmbedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	if e.calls.Add(1) == e.at {
		e.cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return e.Embedder.Embed(ctx, kind, texts)
}

// note is a one-chunk conversation of its own words.
func note(i int) string {
	return fmt.Sprintf("**User:** question %d about %s\n\n**Assistant:** answer %d about %s", i, strings.Repeat("rye ", i+1), i, strings.Repeat("oats ", i+1))
}

// exportOf is a Claude export of n one-chunk conversations.
func exportOf(n int) string {
	var convs []string
	for i := range n {
		convs = append(convs, fmt.Sprintf(`{"uuid":"c-%d","name":"Chat %d","created_at":"2025-01-02T10:00:00Z","chat_messages":[
 {"sender":"human","text":"question %d about barley"},{"sender":"assistant","text":"answer %d about spelt"}]}`, i, i, i, i))
	}
	return "[" + strings.Join(convs, ",\n") + "]"
}

// interrupted sweeps root into st with an embedder that interrupts the
// sweep during its call number at, one parse worker (so files are
// embedded in walk order, one call each but for more than 16 chunks) and
// transactions that never grow old: what is stored, the interruption
// stored. It returns the result, the space and the embedder.
func interrupted(t *testing.T, st *sqlite.DB, root string, at int32, opt Options) (Result, string) {
	t.Helper()
	emb, space := embedSpace(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.Embedder = &stoppingEmbedder{Embedder: emb, at: at, cancel: cancel}
	opt.Space, opt.Dim, opt.Workers = space, 16, 1
	opt.Batch.Age = time.Hour
	res, err := Sweep(ctx, st, st, root, opt)
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("interrupted sweep: %+v, %v; want it interrupted", res, err)
	}
	return res, space
}

// resume sweeps root again with a new embedder, checks that every source
// then has its vectors, and returns the result and how many texts it
// embedded.
func resume(t *testing.T, st *sqlite.DB, root, space string) (Result, int) {
	t.Helper()
	emb := embedtest.New(16)
	res, log := sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16})
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if log != "" || res.VectorsMissing != 0 || stats.Spaces[0].Missing != 0 {
		t.Fatalf("resumed sweep: %+v %q, space %+v", res, log, stats.Spaces[0])
	}
	return res, emb.Texts()
}

// An interrupted sweep commits the files it had finished embedding before
// it returns, though their batch was far from full; the file whose
// embedding the interruption cut is not stored, and the next sweep skips
// the stored ones and embeds only the rest. An export in pieces stays
// marked in progress (read again, its stored conversations not embedded
// again) unless its last piece was embedded too. Before, the batch being
// gathered was dropped: an interrupted first sweep stored nothing.
func TestSweepInterruptedCommitsWhatItEmbedded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		batch   BatchLimits // pieces of 10 conversations: one embedder call each
		at      int32
		stored  int // sources the interrupted sweep stores
		changed int // files it records as swept
		texts   int // texts the sweep after it embeds
	}{
		{name: "notes", files: notes(8), at: 4, stored: 3, changed: 3, texts: 5},
		{name: "export whole", files: map[string]string{"conversations.json": exportOf(30), "z.md": note(1)},
			batch: BatchLimits{Docs: 10}, at: 4, stored: 30, changed: 1, texts: 1},
		{name: "export's last piece cut", files: map[string]string{"conversations.json": exportOf(30), "z.md": note(1)},
			batch: BatchLimits{Docs: 10}, at: 3, stored: 20, changed: 0, texts: 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			root := t.TempDir()
			for rel, text := range tc.files {
				write(t, root, rel, text)
			}
			res, space := interrupted(t, st, root, tc.at, Options{Batch: tc.batch})
			if n := len(sourceIDs(t, st, root)); n != tc.stored || res.FilesChanged != tc.changed {
				t.Fatalf("the interrupted sweep stored %d sources and %d files (%+v); want %d and %d", n, res.FilesChanged, res, tc.stored, tc.changed)
			}
			res, texts := resume(t, st, root, space)
			if res.FilesSkipped != tc.changed || res.FilesChanged != len(tc.files)-tc.changed || texts != tc.texts {
				t.Errorf("the sweep after it: %+v, %d texts embedded; want %d files skipped and %d texts embedded", res, texts, tc.changed, tc.texts)
			}
		})
	}
}

// notes is n one-chunk notes, f0.md, f1.md, ...
func notes(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("f%d.md", i)] = note(i)
	}
	return m
}

// A source whose embedding the interruption cut, some of its texts
// embedded and the rest not, is never stored: stored, it would be
// recorded as swept with chunks lacking vectors, and skipped by the next
// sweep. The file before it, finished, is stored.
func TestSweepInterruptedStoresNoPartlyEmbeddedSource(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "a.md", note(0))
	var msgs []string
	for i := range 40 {
		msgs = append(msgs, fmt.Sprintf("**User:** question %d about millet?\n\n**Assistant:** %s", i, strings.Repeat(fmt.Sprintf("Answer %d about sorghum. ", i), 12)))
	}
	write(t, root, "b.md", strings.Join(msgs, "\n\n"))
	// a.md is call 1, b.md's 40-odd chunks calls 2, 3 and 4.
	res, space := interrupted(t, st, root, 3, Options{Chunk: chunk.Options{Size: 400}})
	if ids := sourceIDs(t, st, root); !slices.Equal(ids, []string{"a.md"}) || res.FilesChanged != 1 {
		t.Fatalf("the interrupted sweep stored %v (%+v); want a.md alone", ids, res)
	}
	res, texts := resume(t, st, root, space)
	if res.FilesSkipped != 1 || res.FilesChanged != 1 || texts < 32 {
		t.Errorf("the sweep after it: %+v, %d texts embedded; want b.md swept and embedded whole", res, texts)
	}
}

// A second interrupt (Options.Hurry) skips what the first would commit:
// nothing begins to commit once both have come.
func TestSweepHurriedCommitsNothingMore(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	for rel, text := range notes(8) {
		write(t, root, rel, text)
	}
	hurry := make(chan struct{})
	close(hurry)
	if res, _ := interrupted(t, st, root, 4, Options{Hurry: hurry}); res.FilesChanged != 0 || len(sourceIDs(t, st, root)) != 0 {
		t.Fatalf("a hurried sweep stored %v (%+v); want nothing", sourceIDs(t, st, root), res)
	}
}

// recordingWriter tells, on committed, of each transaction's first source.
type recordingWriter struct {
	*sqlite.DB
	committed chan string
}

func (w recordingWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	res, err := w.DB.Write(ctx, docs, vecs, remove...)
	if err == nil && len(docs) > 0 {
		w.committed <- docs[0].Source.ID
	}
	return res, err
}

// gateEmbedder holds its calls after the first until open is closed.
type gateEmbedder struct {
	*embedtest.Embedder
	calls   atomic.Int32
	waiting chan struct{} // closed when a call waits
	open    chan struct{}
	once    sync.Once
}

func (g *gateEmbedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	if g.calls.Add(1) > 1 {
		g.once.Do(func() { close(g.waiting) })
		<-g.open
	}
	return g.Embedder.Embed(ctx, kind, texts)
}

// A batch that has gathered for BatchLimits.Age commits, far from full,
// while the next file is still being embedded: a slow embedder never holds
// more than that much finished work uncommitted. Here the second file's
// embedding waits until the first file is committed; before, the first
// file waited in its batch until the sweep's end.
func TestSweepCommitsAnOldBatch(t *testing.T) {
	st := openStore(t)
	emb, space := embedSpace(t, st)
	root := t.TempDir()
	write(t, root, "a.md", note(0))
	write(t, root, "b.md", note(1))
	gate := &gateEmbedder{Embedder: emb, waiting: make(chan struct{}), open: make(chan struct{})}
	w := recordingWriter{DB: st, committed: make(chan string, 2)}
	done := make(chan error, 1)
	go func() {
		_, err := Sweep(context.Background(), st, w, root, Options{Embedder: gate, Space: space, Dim: 16, Workers: 1,
			Batch: BatchLimits{Age: time.Nanosecond}})
		done <- err
	}()
	<-gate.waiting // b.md is being embedded
	select {
	case id := <-w.committed:
		if id != "a.md" {
			t.Errorf("committed %s first; want a.md", id)
		}
	case <-time.After(time.Minute): // a hang, not a measure: it commits at once
		t.Error("a.md, embedded, was not committed while b.md was being embedded")
	}
	close(gate.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ids := sourceIDs(t, st, root); len(ids) != 2 {
		t.Errorf("sources %v", ids)
	}
}
