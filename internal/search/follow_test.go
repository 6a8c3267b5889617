package search_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// twoProcesses opens one database file twice, as a server and a command
// run beside it would: the server's engine (in-memory indexes loaded) and
// the other handle's. Both share the vector space "t".
func twoProcesses(t *testing.T, dim int) (server *search.Engine, other *sqlite.DB, emb *embedtest.Embedder) {
	t.Helper()
	ctx := context.Background()
	st, other := openTwice(t, sqlite.Options{})
	emb = embedtest.New(dim)
	info := emb.Info()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: dim, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	server = search.New(st, search.Options{Embedder: emb, MemoryLexical: true})
	if err := server.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	return server, other, emb
}

// openTwice opens one new database file twice with opts, as two
// processes would; both close when the test ends.
func openTwice(tb testing.TB, opts sqlite.Options) (*sqlite.DB, *sqlite.DB) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "shared.db")
	open := func() *sqlite.DB {
		st, err := sqlite.Open(context.Background(), path, opts)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	}
	return open(), open()
}

func sourcesFound(t *testing.T, eng *search.Engine, q string, mode string) []string {
	t.Helper()
	r, err := eng.Search(context.Background(), recall.SearchRequest{Query: q, Mode: mode, Limit: 20, PerSource: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range r.Results {
		out = append(out, h.Source)
		out = append(out, h.AlsoIn...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func follow(t *testing.T, eng *search.Engine) search.Followed {
	t.Helper()
	f, err := eng.Follow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFollowAnotherProcess: what another process writes, deletes and
// embeds reaches a server's in-memory indexes at its next Follow, and
// nothing else changes them.
func TestFollowAnotherProcess(t *testing.T) {
	ctx := context.Background()
	server, other, emb := twoProcesses(t, 16)
	writeDocs(t, server, emb, doc("own.md", "the server wrote this quokka note"))
	if f := follow(t, server); f.Changed() {
		t.Errorf("Follow after the engine's own write changed the indexes: %+v", f)
	}

	// A sweep in another process, with vectors.
	writeDocs(t, other, emb, doc("swept/a.md", "a wombat crossed the river at dawn"), doc("swept/b.md", "wombat burrows are cube shaped"))
	if got := sourcesFound(t, server, "wombat", recall.ModeLexical); len(got) != 0 {
		t.Fatalf("before Follow the server already finds %v: this test proves nothing", got)
	}
	f := follow(t, server)
	if f.Added != 2 || f.Removed != 0 {
		t.Errorf("Follow = %+v; want 2 chunks added", f)
	}
	want := []string{"swept/a.md", "swept/b.md"}
	if got := sourcesFound(t, server, "wombat", recall.ModeLexical); !slices.Equal(got, want) {
		t.Errorf("lexical after Follow: %v; want %v", got, want)
	}
	if got := sourcesFound(t, server, "a wombat crossed the river at dawn", recall.ModeSemantic); !slices.Contains(got, "swept/a.md") {
		t.Errorf("semantic after Follow: %v; want swept/a.md among them", got)
	}
	if f := follow(t, server); f.Changed() {
		t.Errorf("a second Follow with no write between changed the indexes: %+v", f)
	}

	// A deletion there.
	if _, _, err := other.Delete(ctx, "swept/a.md"); err != nil {
		t.Fatal(err)
	}
	if f := follow(t, server); f.Removed != 1 || f.Added != 0 {
		t.Errorf("Follow after a deletion = %+v; want 1 removed", f)
	}
	if got := sourcesFound(t, server, "wombat", recall.ModeLexical); !slices.Equal(got, []string{"swept/b.md"}) {
		t.Errorf("lexical after the deletion: %v", got)
	}

	// Chunks swept without vectors, embedded later by another process's repair.
	d := doc("swept/c.md", "numbat tongues are long and sticky")
	if _, err := other.Write(ctx, []recall.Document{d}, nil); err != nil {
		t.Fatal(err)
	}
	if f := follow(t, server); f.Added != 1 || f.Vectors != 0 {
		t.Errorf("Follow after a write without vectors = %+v", f)
	}
	if got := sourcesFound(t, server, "numbat tongues are long and sticky", recall.ModeSemantic); slices.Contains(got, "swept/c.md") {
		t.Fatalf("a chunk with no vector was found semantically")
	}
	vec, err := emb.Embed(ctx, recall.InputDocument, []string{d.Chunks[0].Text})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.PutVectors(ctx, []recall.Vector{{Space: "t", Key: d.Chunks[0].Hash, Vec: vec[0]}}); err != nil {
		t.Fatal(err)
	}
	if f := follow(t, server); f.Vectors != 1 || f.Added != 0 {
		t.Errorf("Follow after another process stored a vector = %+v; want 1 vector", f)
	}
	if got := sourcesFound(t, server, "numbat tongues are long and sticky", recall.ModeSemantic); !slices.Contains(got, "swept/c.md") {
		t.Errorf("semantic after the vector arrived: %v", got)
	}
	assertInStep(t, server)
}

// assertInStep compares the engine's indexes with a fresh load of its store:
// the same vectors indexed, and the same answers to a few queries.
func assertInStep(t *testing.T, eng *search.Engine) {
	t.Helper()
	fresh := search.New(eng.Store(), search.Options{MemoryLexical: true})
	if err := fresh.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, a := eng.ReadSpace()
	_, b := fresh.ReadSpace()
	if a != b {
		t.Errorf("the engine's vector index holds %d entries; a fresh load %d", a, b)
	}
	for _, q := range []string{"wombat", "note", "river", "passage", "zebra"} {
		if x, y := sourcesFound(t, eng, q, recall.ModeLexical), sourcesFound(t, fresh, q, recall.ModeLexical); !slices.Equal(x, y) {
			t.Errorf("lexical %q: engine %v; fresh load %v", q, x, y)
		}
	}
}

// TestFollowWhileBothWrite: the server writes while another process writes
// and deletes and a loop follows it. Each of the server's own writes is
// searchable the moment it returns, and each own deletion gone, however
// the follows interleave; once everything stops, one more Follow leaves
// the indexes exactly as a fresh load would build them.
func TestFollowWhileBothWrite(t *testing.T) {
	ctx := context.Background()
	server, other, emb := twoProcesses(t, 16)
	for i := range 20 { // written by the server, deleted by the other process
		writeDocs(t, server, emb, doc(fmt.Sprintf("early/%02d.md", i), fmt.Sprintf("early note %d about a passage", i)))
	}
	done := make(chan struct{})
	var wg, writers sync.WaitGroup
	wg.Add(1)
	go func() { // the server's follow loop
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := server.Follow(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	writers.Add(2)
	go func() {
		defer writers.Done()
		for i := range 80 {
			word := fmt.Sprintf("ownword%dx", i)
			writeDocs(t, server, emb, doc(fmt.Sprintf("own/%02d.md", i), fmt.Sprintf("own note %d about a passage %s", i, word)))
			if got := sourcesFound(t, server, word, recall.ModeLexical); len(got) != 1 {
				t.Errorf("own write %d not searchable when it returned: %v", i, got)
			}
			if i%3 == 0 {
				if _, _, err := server.Delete(ctx, fmt.Sprintf("own/%02d.md", i)); err != nil {
					t.Error(err)
				}
				if got := sourcesFound(t, server, word, recall.ModeLexical); len(got) != 0 {
					t.Errorf("own deletion %d still searchable when it returned: %v", i, got)
				}
			}
		}
	}()
	go func() {
		defer writers.Done()
		for i := range 80 {
			d := doc(fmt.Sprintf("other/%02d.md", i), fmt.Sprintf("other note %d about a river", i))
			if i%2 == 0 {
				writeDocs(t, other, emb, d)
			} else if _, err := other.Write(ctx, []recall.Document{d}, nil); err != nil {
				t.Error(err)
			}
			if i%4 == 0 {
				if _, _, err := other.Delete(ctx, fmt.Sprintf("other/%02d.md", i/2), fmt.Sprintf("early/%02d.md", i/4)); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	writers.Wait()
	close(done)
	wg.Wait()
	follow(t, server)
	assertInStep(t, server)
	if f := follow(t, server); f.Changed() {
		t.Errorf("Follow once in step changed the indexes: %+v", f)
	}
}

// switchingServer is twoProcesses with Options.SpaceEmbedder: it makes an
// embedtest embedder of the space's dimension, fails for spaces named in
// refuse, and counts its calls.
func switchingServer(t *testing.T, refuse ...string) (server *search.Engine, other *sqlite.DB, calls *atomic.Int32) {
	t.Helper()
	ctx := context.Background()
	st, other := openTwice(t, sqlite.Options{})
	emb := embedtest.New(16)
	info := emb.Info()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	calls = new(atomic.Int32)
	server = search.New(st, search.Options{Embedder: emb, MemoryLexical: true,
		SpaceEmbedder: func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error) {
			calls.Add(1)
			if slices.Contains(refuse, sp.Name) {
				return nil, recall.Errorf(recall.EUNAVAILABLE, "model %s is not installed", sp.Model)
			}
			return embedtest.New(sp.Dim), nil
		}})
	if err := server.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	return server, other, calls
}

// fillSpace creates space name of dimension dim in st (unless it exists)
// and stores embedtest vectors in it for the given documents' texts.
func fillSpace(t *testing.T, st *sqlite.DB, name string, dim int, docs ...recall.Document) {
	t.Helper()
	ctx := context.Background()
	e := embedtest.New(dim)
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: name, Provider: "embedtest", Model: fmt.Sprintf("word-hash-%d", dim), Dim: dim, Normalized: true}); err != nil && recall.ErrorCode(err) != recall.ECONFLICT {
		t.Fatal(err)
	}
	var vecs []recall.Vector
	for _, d := range docs {
		v, err := embed.EmbedChunks(ctx, e, dim, []embed.ChunkText{{Text: d.Chunks[0].Text}})
		if err != nil {
			t.Fatal(err)
		}
		vecs = append(vecs, recall.Vector{Space: name, Key: d.Chunks[0].Hash, Vec: v[0]})
	}
	if err := st.PutVectors(ctx, vecs); err != nil {
		t.Fatal(err)
	}
}

// TestFollowSwitchesReadSpace: when another process makes a different
// space the read space (`recall space use`), Follow moves searches to it
// with that space's query model, without a restart; a space whose model
// cannot be made leaves searches where they were, is not tried again on
// every look, and is tried again once the read space changes anew.
func TestFollowSwitchesReadSpace(t *testing.T) {
	ctx := context.Background()
	server, other, calls := switchingServer(t, "v")
	emb16 := embedtest.New(16)
	a := doc("a.md", "a wombat crossed the river at dawn")
	b := doc("b.md", "the quokka smiled at the camera")
	writeDocs(t, server, emb16, a, b)

	// Space u (24 dimensions) holds a vector for a alone.
	fillSpace(t, other, "u", 24, a)
	if f := follow(t, server); f.Switched != "" || calls.Load() != 0 {
		t.Fatalf("Follow switched before the read space changed: %+v", f)
	}
	if err := other.UseSpace(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	f := follow(t, server)
	if f.Switched != "u" || f.ReadSpace != "" || f.SwitchErr != nil {
		t.Fatalf("Follow after the read space became u = %+v; want Switched u", f)
	}
	if name, n := server.ReadSpace(); name != "u" || n != 1 {
		t.Errorf("ReadSpace = %s, %d; want u, 1", name, n)
	}
	for _, mode := range []string{recall.ModeSemantic, recall.ModeHybrid} {
		r, err := server.Search(ctx, recall.SearchRequest{Query: "wombat river dawn", Mode: mode, Limit: 5, PerSource: 1})
		if err != nil {
			t.Fatalf("%s search after the switch: %v", mode, err)
		}
		if r.Mode != mode || len(r.Results) == 0 || r.Results[0].Source != "a.md" {
			t.Errorf("%s search after the switch: mode %s, results %+v", mode, r.Mode, r.Results)
		}
	}
	if got := sourcesFound(t, server, "quokka", recall.ModeSemantic); slices.Contains(got, "b.md") {
		t.Errorf("semantic search finds b.md, which has no vector in u: %v", got)
	}
	// The new space's writes are followed as before.
	fillSpace(t, other, "u", 24, b)
	if f := follow(t, server); f.Vectors != 1 {
		t.Errorf("Follow after a repair in u = %+v; want 1 vector", f)
	}
	assertInStep(t, server)

	// A space this process cannot embed queries for.
	fillSpace(t, other, "v", 8, a, b)
	if err := other.UseSpace(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	f = follow(t, server)
	if f.Switched != "" || f.ReadSpace != "v" || f.SwitchErr == nil || !strings.Contains(f.SwitchErr.Error(), "not installed") {
		t.Fatalf("Follow to a space without a model = %+v; want ReadSpace v and the error", f)
	}
	if name, _ := server.ReadSpace(); name != "u" {
		t.Errorf("after a refused switch searches read %s; want u", name)
	}
	if got := sourcesFound(t, server, "quokka smiled camera", recall.ModeSemantic); !slices.Contains(got, "b.md") {
		t.Errorf("semantic search after a refused switch: %v", got)
	}
	follow(t, server)
	follow(t, server)
	if n := calls.Load() - before; n != 1 {
		t.Errorf("the refused space's model was asked for %d times over three looks; want 1", n)
	}
	// Back to u and then to v again: v is tried again.
	if err := other.UseSpace(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if f := follow(t, server); f.Switched != "" || f.ReadSpace != "" {
		t.Errorf("Follow back on the loaded space = %+v", f)
	}
	if err := other.UseSpace(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	follow(t, server)
	if n := calls.Load() - before; n != 2 {
		t.Errorf("after the read space left v and came back the model was asked for %d times in all; want 2", n)
	}
}

// TestSearchesDuringSwitches: searches of every mode keep answering, with
// no error and never with a query vector of the other space's model (the
// spaces differ in dimension), while the read space switches back and
// forth under them.
func TestSearchesDuringSwitches(t *testing.T) {
	ctx := context.Background()
	server, other, _ := switchingServer(t)
	var docs []recall.Document
	for i := range 40 {
		docs = append(docs, doc(fmt.Sprintf("d%02d.md", i), fmt.Sprintf("note %d about the wombat and the river number %d", i, i%7)))
	}
	writeDocs(t, server, embedtest.New(16), docs...)
	fillSpace(t, other, "u", 24, docs...)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, mode := range []string{recall.ModeSemantic, recall.ModeHybrid} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := server.Search(ctx, recall.SearchRequest{Query: "wombat river 3", Mode: mode, Limit: 5, PerSource: 1})
				if err == nil && len(r.Results) == 0 {
					err = fmt.Errorf("%s search found nothing", mode)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range 20 {
		space := []string{"u", "t"}[i%2]
		if err := other.UseSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		if f := follow(t, server); f.Switched != space {
			t.Errorf("switch %d: Follow = %+v; want Switched %s", i, f, space)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// flippingEmbedder switches the read space each time it embeds a query,
// as if another process ran `recall space use` during every search.
type flippingEmbedder struct {
	recall.Embedder
	flip func()
}

func (f *flippingEmbedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	if kind == recall.InputQuery {
		f.flip()
	}
	return f.Embedder.Embed(ctx, kind, texts)
}

// TestSearchWhileSpacesKeepSwitching: a search whose query vector is of
// another model every time runs its pass again a bounded number of times,
// then answers without the vector: hybrid from full text with a note,
// semantic with EUNAVAILABLE. It never loops, and never uses the vector.
func TestSearchWhileSpacesKeepSwitching(t *testing.T) {
	ctx := context.Background()
	st, other := openTwice(t, sqlite.Options{})
	var (
		server *search.Engine
		flips  atomic.Int32
	)
	flip := func() {
		n := flips.Add(1)
		if err := other.UseSpace(ctx, []string{"t", "u"}[n%2]); err != nil {
			t.Error(err)
		}
		if f, err := server.Follow(ctx); err != nil || f.Switched == "" {
			t.Errorf("Follow = %+v, %v; want a switch", f, err)
		}
	}
	first := embedtest.New(16)
	info := first.Info()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	server = search.New(st, search.Options{Embedder: &flippingEmbedder{first, flip}, MemoryLexical: true,
		SpaceEmbedder: func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error) {
			return &flippingEmbedder{embedtest.New(sp.Dim), flip}, nil
		}})
	if err := server.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	docs := []recall.Document{doc("a.md", "the wombat by the river"), doc("b.md", "a heron on the lake")}
	writeDocs(t, server, embedtest.New(16), docs...)
	fillSpace(t, other, "u", 24, docs...)

	flips.Store(0)
	r, err := server.Search(ctx, recall.SearchRequest{Query: "wombat river", Mode: recall.ModeHybrid, Limit: 5})
	if err != nil || r.Mode != recall.ModeLexical || !strings.Contains(r.Note, "switched") || len(r.Results) == 0 {
		t.Errorf("hybrid search while the space keeps switching = %+v, %v; want full-text results with a note", r, err)
	}
	if n := flips.Load(); n != 4 {
		t.Errorf("the query was embedded %d times; want 4: the first pass and 3 more", n)
	}
	flips.Store(0)
	if _, err := server.Search(ctx, recall.SearchRequest{Query: "wombat river", Mode: recall.ModeSemantic, Limit: 5}); recall.ErrorCode(err) != recall.EUNAVAILABLE {
		t.Errorf("semantic search while the space keeps switching: %v; want EUNAVAILABLE", err)
	}
	if n := flips.Load(); n != 4 {
		t.Errorf("the query was embedded %d times; want 4: the first pass and 3 more", n)
	}
}
