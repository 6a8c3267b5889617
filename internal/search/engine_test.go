package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

func newStore(t testing.TB) *sqlite.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "e.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newSpaceStore returns a fresh store with a vector space "t" for the
// test embedder of dim dimensions, and that embedder.
func newSpaceStore(t testing.TB, dim int) (*sqlite.DB, *embedtest.Embedder) {
	t.Helper()
	st := newStore(t)
	emb := embedtest.New(dim)
	info := emb.Info()
	if _, err := st.CreateSpace(context.Background(), recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: dim, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	return st, emb
}

func doc(id, text string) recall.Document {
	return recall.Document{
		Source: recall.Source{ID: id, Kind: recall.KindArchive, ContentHash: recall.TextHash(text), ChunkCount: 1},
		Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}},
	}
}

// writeDocs embeds and writes documents through w.
func writeDocs(t testing.TB, w interface {
	Write(context.Context, []recall.Document, []recall.Vector, ...string) (recall.WriteResult, error)
}, emb recall.Embedder, docs ...recall.Document) {
	t.Helper()
	var vecs []recall.Vector
	for _, d := range docs {
		v, err := embed.EmbedChunks(context.Background(), emb, emb.Info().Dim, []embed.ChunkText{{Text: d.Chunks[0].Text}})
		if err != nil {
			t.Fatal(err)
		}
		vecs = append(vecs, recall.Vector{Space: "t", Key: d.Chunks[0].Hash, Vec: v[0]})
	}
	if _, err := w.Write(context.Background(), docs, vecs); err != nil {
		t.Fatal(err)
	}
}

// writeNumbered embeds and writes n one-chunk documents, the i-th named
// and worded by the formats with i.
func writeNumbered(t *testing.T, st *sqlite.DB, emb recall.Embedder, n int, name, text string) {
	t.Helper()
	docs := make([]recall.Document, n)
	for i := range docs {
		docs[i] = doc(fmt.Sprintf(name, i), fmt.Sprintf(text, i))
	}
	writeDocs(t, st, emb, docs...)
}

// vectorEngine writes docs with their vectors of the test embedder of dim
// dimensions to a new store and returns an engine over it, loaded.
func vectorEngine(t *testing.T, dim int, docs ...recall.Document) *search.Engine {
	t.Helper()
	st, emb := newSpaceStore(t, dim)
	writeDocs(t, st, emb, docs...)
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng
}

func semanticSources(t *testing.T, eng *search.Engine, q string) map[string]bool {
	t.Helper()
	r, err := eng.Search(context.Background(), recall.SearchRequest{Query: q, Mode: recall.ModeSemantic, Limit: 20, PerSource: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, h := range r.Results {
		out[h.Source] = true
	}
	return out
}

// TestLoadIndexReplaysConcurrentWrites: writes and deletes that commit while
// the index loads in the background end up in it, and deleted texts never
// come back.
func TestLoadIndexReplaysConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeNumbered(t, st, emb, 3000, "old/%04d.md", "old passage number %d about kettles and rivers")

	eng := search.New(st, search.Options{Embedder: emb, MemoryLexical: true})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := eng.LoadIndex(ctx); err != nil {
			t.Error(err)
		}
	}()
	for i := range 50 {
		writeDocs(t, eng, emb, doc(fmt.Sprintf("new/%02d.md", i), fmt.Sprintf("fresh zebra note %d", i)))
		if _, _, err := eng.Delete(ctx, fmt.Sprintf("old/%04d.md", i)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()

	// Only the 50 texts written during the load contain "fresh zebra note":
	// all 20 results must be among them.
	got := semanticSources(t, eng, "fresh zebra note")
	newer := 0
	for s := range got {
		var n int
		if _, err := fmt.Sscanf(s, "new/%02d.md", &n); err == nil {
			newer++
		}
	}
	if newer != 20 {
		t.Errorf("%d of 20 semantic results are texts written during the load: %v", newer, got)
	}
	for s := range semanticSources(t, eng, "old passage number about kettles and rivers") {
		var n int
		if _, err := fmt.Sscanf(s, "old/%04d.md", &n); err == nil && n < 50 {
			t.Errorf("deleted source %s returned by semantic search", s)
		}
	}
	fresh := search.New(st, search.Options{Embedder: emb})
	if err := fresh.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	_, a := eng.ReadSpace()
	_, b := fresh.ReadSpace()
	if a != b {
		t.Fatalf("index after concurrent load holds %d entries; a fresh load holds %d", a, b)
	}

	// The in-memory full-text index followed the same writes, and keeps
	// following them after the load.
	writeDocs(t, eng, emb, doc("new/last.md", "the last zebra"))
	lexical := func(q string) []string {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: q, Mode: recall.ModeLexical, Limit: 20, PerSource: 1})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range r.Results {
			out = append(out, h.Source)
		}
		return out
	}
	if got := lexical("zebra"); len(got) != 20 {
		t.Errorf("zebra: %d full-text results; want 20 of the 51 new texts", len(got))
	}
	for _, s := range lexical("kettles 7") {
		var n int
		if _, err := fmt.Sscanf(s, "old/%04d.md", &n); err == nil && n < 50 {
			t.Errorf("deleted source %s found by full text", s)
		}
	}
	if got := lexical("last"); len(got) != 1 || got[0] != "new/last.md" {
		t.Errorf("last: %v; want new/last.md", got)
	}
}

// A query vector no search can use (NaN, or of another dimension than the
// space) is an embedding that failed: hybrid falls back to full text and
// says so, as when the embedder errs, instead of failing the search.
func TestBadQueryVectorFallsBack(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 32)
	writeDocs(t, st, emb, doc("a.md", "the kettle whistles"))
	for _, f := range []embedtest.Fault{embedtest.FaultError, embedtest.FaultNaN, embedtest.FaultWrongDim} {
		eng := search.New(st, search.Options{Embedder: emb})
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		emb.FailOn(0, f)
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle"})
		emb.FailOn(0, 0)
		if err != nil {
			t.Errorf("fault %d: %v", f, err)
			continue
		}
		if r.Mode != recall.ModeLexical || r.Note == "" || len(r.Results) != 1 {
			t.Errorf("fault %d: mode %q note %q, %d results", f, r.Mode, r.Note, len(r.Results))
		}
	}
}

// TestNoVectorsNote: a search that cannot use vectors says why, with
// advice that fits: in an empty archive, to store something (repair has
// nothing to embed); where chunks lack vectors, to repair; without a query
// embedder, whether the configuration turned embedding off or no model
// could be had.
func TestNoVectorsNote(t *testing.T) {
	ctx := context.Background()
	search1 := func(t *testing.T, eng *search.Engine, mode string) (string, error) {
		t.Helper()
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle", Mode: mode})
		if err == nil && r.Mode != recall.ModeLexical {
			t.Errorf("%s search ran as %s", mode, r.Mode)
		}
		return r.Note, err
	}
	for _, scan := range []bool{false, true} {
		st, emb := newSpaceStore(t, 16)
		eng := search.New(st, search.Options{Embedder: emb, ScanVectors: scan})
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		note, _ := search1(t, eng, recall.ModeHybrid)
		_, err := search1(t, eng, recall.ModeSemantic)
		const empty = "nothing is stored yet: sweep a vault or save a memory first"
		if note != empty+"; searched full text only" || recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.HasSuffix(err.Error(), empty) {
			t.Errorf("scan %v, empty archive: note %q, semantic %v; want that nothing is stored", scan, note, err)
		}
		// Text stored without vectors (the embedder was down): repair
		// embeds it.
		if _, err := st.Write(ctx, []recall.Document{doc("a.md", "the kettle whistles")}, nil); err != nil {
			t.Fatal(err)
		}
		note, _ = search1(t, eng, recall.ModeHybrid)
		_, err = search1(t, eng, recall.ModeSemantic)
		if !strings.Contains(note, "recall repair") || err == nil || !strings.Contains(err.Error(), "recall repair") {
			t.Errorf("scan %v, chunks without vectors: note %q, semantic %v; want the advice to repair", scan, note, err)
		}
	}
	st := newStore(t)
	for _, off := range []bool{false, true} {
		eng := search.New(st, search.Options{EmbedderOff: off})
		note, _ := search1(t, eng, "")
		_, err := search1(t, eng, recall.ModeSemantic)
		want := "no embedding model is available"
		if off {
			want = "semantic search is turned off: the embedder is set to none"
		}
		if !strings.HasPrefix(note, want+";") || recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("no embedder, off by configuration %v: note %q, semantic %v; want %q", off, note, err, want)
		}
	}
}

// TestSlowEmbedderFallsBack: hybrid search goes on with full text when the
// query cannot be embedded in time, and says so. The embedder answers
// only when its context ends and the search's budget is an hour: the
// embed budget alone ends the wait (a search that waited out the
// embedder hangs to the test's timeout, where a wall-clock bound on the
// search failed on a busy machine or passed on the search budget's
// fallback).
func TestSlowEmbedderFallsBack(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb, doc("a.md", "the lighthouse keeper's log"))
	slow := embedtest.New(16)
	slow.Delay = time.Hour
	eng := search.New(st, search.Options{Embedder: slow, EmbedBudget: 50 * time.Millisecond, Budget: time.Hour})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != recall.ModeLexical || r.Note == "" || len(r.Results) != 1 {
		t.Fatalf("fallback: %+v", r)
	}
	if _, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse", Mode: recall.ModeSemantic}); recall.ErrorCode(err) != recall.EUNAVAILABLE {
		t.Fatalf("semantic with a stalled embedder: %v", err)
	}
}

// TestEmbedFailureSaysWhy: a search whose query could not be embedded
// carries the reason for the operator (the command's stderr, the server's
// log), and one whose embedder ran out of its budget names the budget, not
// "context deadline exceeded".
func TestEmbedFailureSaysWhy(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb, doc("a.md", "the lighthouse keeper's log"))
	failing := embedtest.New(16)
	failing.FailOn(0, embedtest.FaultError)
	stalled := embedtest.New(16)
	stalled.Delay = time.Hour // until the budget ends
	for _, tt := range []struct {
		name string
		emb  *embedtest.Embedder
		want string
	}{
		{"failing", failing, "embedtest: injected failure"},
		{"stalled", stalled, "the embedder did not answer within 50ms"},
	} {
		eng := search.New(st, search.Options{Embedder: tt.emb, EmbedBudget: 50 * time.Millisecond})
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Mode != recall.ModeLexical || r.EmbedError == nil || !strings.Contains(r.EmbedError.Error(), tt.want) {
			t.Errorf("%s, hybrid: mode %s, embed error %v; want lexical, and %q", tt.name, r.Mode, r.EmbedError, tt.want)
		}
		if b, _ := json.Marshal(r); strings.Contains(string(b), tt.want) {
			t.Errorf("%s: the answer a client gets holds the reason: %s", tt.name, b)
		}
		_, err = eng.Search(ctx, recall.SearchRequest{Query: "lighthouse", Mode: recall.ModeSemantic})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s, semantic: %v; want %q", tt.name, err, tt.want)
		}
	}
	// A search embedded as asked carries none.
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse"}); err != nil || r.EmbedError != nil || r.Mode != recall.ModeHybrid {
		t.Errorf("embedded: mode %s, embed error %v, %v", r.Mode, r.EmbedError, err)
	}
}

// TestPageTopIndependentOfLimit: a hybrid page's first results are the same
// whether a short or a long page was asked for (convex fusion scales cosines
// against the weakest vector candidate, so the candidate depth must not
// follow the limit), and every text fills at most one place per page.
func TestPageTopIndependentOfLimit(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 32)
	words := strings.Fields("kettle river lantern copper meadow violin harbor pepper glacier orchid saddle tunnel " +
		"falcon marble cactus ribbon anchor walnut comet basket quartz pillow ember ferry")
	r := rand.New(rand.NewPCG(3, 5))
	phrase := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	var docs []recall.Document
	for i := range 150 {
		// Several paragraphs: several unit vectors per chunk.
		docs = append(docs, doc(fmt.Sprintf("s/%03d.md", i), phrase(6)+"\n\n"+phrase(6)+"\n\n"+phrase(6)+"\n\n"+phrase(6)))
	}
	writeDocs(t, st, emb, docs...)
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	page := func(q string, limit int) []string {
		resp, err := eng.Search(ctx, recall.SearchRequest{Query: q, Mode: recall.ModeHybrid, Limit: limit, PerSource: 2})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Mode != recall.ModeHybrid {
			t.Fatalf("mode %s (%s), want hybrid", resp.Mode, resp.Note)
		}
		var out []string
		for _, h := range resp.Results {
			out = append(out, h.Source)
		}
		return out
	}
	for range 30 {
		q := phrase(3)
		long := page(q, 10)
		if len(long) != 10 {
			t.Fatalf("%q: %d results, want 10", q, len(long))
		}
		for _, limit := range []int{1, 3, 5} {
			if short := page(q, limit); !slices.Equal(short, long[:limit]) {
				t.Fatalf("%q: limit %d gives %v, limit 10 begins %v", q, limit, short, long[:limit])
			}
		}
	}
}

// TestFallbackFillsPage: a hybrid search whose query cannot be embedded
// answers from full text with as full a page as a lexical search, although
// hybrid itself fuses fewer full-text candidates than a lexical page needs.
func TestFallbackFillsPage(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	// Ten chunks a source, and the more lighthouses the later the source:
	// the best 40 chunks come from four sources, the best 80 from eight.
	var docs []recall.Document
	var vecs []recall.Vector
	for s := range 12 {
		d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("s%02d.md", s), Kind: recall.KindArchive, ChunkCount: 10}}
		for c := range 10 {
			text := fmt.Sprintf("entry %d of log %d:%s", c, s, strings.Repeat(" lighthouse", s+1))
			d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: text, Hash: recall.TextHash(text)})
			v, err := emb.Embed(ctx, recall.InputDocument, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			vecs = append(vecs, recall.Vector{Space: "t", Key: recall.TextHash(text), Vec: v[0]})
		}
		d.Source.ContentHash = recall.TextHash(d.Source.ID)
		docs = append(docs, d)
	}
	if _, err := st.Write(ctx, docs, vecs); err != nil {
		t.Fatal(err)
	}
	slow := embedtest.New(16)
	slow.Delay = time.Minute
	eng := search.New(st, search.Options{Embedder: slow, EmbedBudget: 20 * time.Millisecond})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{recall.ModeHybrid, recall.ModeLexical} {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse", Mode: mode, Limit: 10, PerSource: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Mode != recall.ModeLexical || len(r.Results) != 10 {
			t.Fatalf("%s: mode %s, %d results, want lexical with 10", mode, r.Mode, len(r.Results))
		}
	}
}

// One long conversation that holds every candidate of a pass must not leave
// the page short under the per-source cap when other sources match further
// down: a deeper pass fills it, below what the first pass placed.
func TestCapDoesNotShortenPage(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	var docs []recall.Document
	var vecs []recall.Vector
	add := func(id string, texts ...string) {
		d := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, ChunkCount: len(texts), ContentHash: recall.TextHash(id)}}
		for i, text := range texts {
			d.Chunks = append(d.Chunks, recall.Chunk{Index: i, Text: text, Hash: recall.TextHash(text)})
			v, err := emb.Embed(ctx, recall.InputDocument, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			vecs = append(vecs, recall.Vector{Space: "t", Key: recall.TextHash(text), Vec: v[0]})
		}
		docs = append(docs, d)
	}
	var big []string
	for i := range 300 {
		big = append(big, fmt.Sprintf("day %d: kayak kayak paddle kayak", i))
	}
	add("big.md", big...)
	for i := range 6 {
		add(fmt.Sprintf("small%d.md", i), fmt.Sprintf("we once saw a kayak on lake %d, among many other boats and birds and trees", i))
	}
	if _, err := st.Write(ctx, docs, vecs); err != nil {
		t.Fatal(err)
	}
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{recall.ModeHybrid, recall.ModeLexical, recall.ModeSemantic} {
		for _, cap := range []int{1, 2} {
			r, err := eng.Search(ctx, recall.SearchRequest{Query: "kayak", Mode: mode, Limit: 5, PerSource: cap})
			if err != nil {
				t.Fatal(err)
			}
			bySource := map[string]int{}
			for i, h := range r.Results {
				bySource[h.Source]++
				if i > 0 && h.Score > r.Results[i-1].Score {
					t.Errorf("%s cap %d: scores out of order at %d: %v", mode, cap, i, r.Results)
				}
			}
			if len(r.Results) != 5 || bySource["big.md"] != cap {
				t.Errorf("%s cap %d: %d results %v, want 5 with %d from big.md", mode, cap, len(r.Results), bySource, cap)
			}
		}
	}
}

// A quoted phrase is asked for in every mode: hybrid and semantic rank only
// the passages that hold it, unless none does; then the closest come back
// with a note saying so.
func TestQuotedPhraseIsRequired(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb,
		doc("a.md", "we took the night train north to Porto in October"),
		doc("b.md", "the train to Lisbon was late, Porto was lovely"),
		doc("c.md", "north of Porto the train follows the river"))
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{recall.ModeHybrid, recall.ModeSemantic, recall.ModeLexical} {
		// Typographic quotes, as smart-quote keyboards and Chinese input
		// methods type them, and Japanese brackets quote alike.
		for _, q := range []string{`"train north to Porto"`, `“train north to Porto”`, `「train north to Porto」`} {
			r, err := eng.Search(ctx, recall.SearchRequest{Query: q, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Results) != 1 || r.Results[0].Source != "a.md" || r.Note != "" || !slices.Contains(r.Results[0].Match, "exact") {
				t.Errorf("%s %s: %+v", mode, q, r)
			}
		}
		// Diacritics count in no mode, as in the full-text index: the
		// passages lexical search finds for a quoted phrase are exact.
		for _, q := range []string{`"PÓRTO IN ÓCTOBER"`, `"Pórto in Octóber"`} {
			r, err := eng.Search(ctx, recall.SearchRequest{Query: q, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Results) != 1 || r.Results[0].Source != "a.md" || r.Note != "" || !slices.Contains(r.Results[0].Match, "exact") {
				t.Errorf("%s %s: %+v", mode, q, r)
			}
		}
		r, err := eng.Search(ctx, recall.SearchRequest{Query: `"train south to Faro"`, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if mode != recall.ModeLexical && (len(r.Results) == 0 || !strings.Contains(r.Note, "quoted")) {
			t.Errorf("%s, phrase nowhere: %d results, note %q", mode, len(r.Results), r.Note)
		}
	}
}

// A hybrid search whose words no passage holds still returns the closest
// passages by meaning, and says that none holds a word of the query; a
// search whose words some passage holds has no note, nor has semantic
// search, which asks for meaning alone.
func TestHybridSaysWhenNoWordMatches(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb,
		doc("a.md", "we took the night train north to Porto in October"),
		doc("b.md", "the ferry to the islands leaves at dawn"))
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ query, mode, note string }{
		{"zxqv wibble", recall.ModeHybrid, "no passage holds a word of the query; these are the closest in meaning"},
		{"zxqv wibble", recall.ModeSemantic, ""},
		{"zxqv ferry", recall.ModeHybrid, ""},
	} {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: c.query, Mode: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) == 0 || r.Mode != c.mode || r.Note != c.note {
			t.Errorf("%s %q: mode %s, %d results, note %q; want note %q", c.mode, c.query, r.Mode, len(r.Results), r.Note, c.note)
		}
	}
}

// A quoted phrase is required in semantic mode too, also when the one
// passage holding it is far down the vector ranking (60 passages closer to
// the rest of the query): it is found, labelled exact, with no note.
func TestQuotedPhraseFarDownTheVectors(t *testing.T) {
	ctx := context.Background()
	var docs []recall.Document
	for i := range 60 {
		docs = append(docs, doc(fmt.Sprintf("k/%02d.md", i), fmt.Sprintf("kettle tea morning ritual number n%d", i)))
	}
	docs = append(docs, doc("g.md", "we saw a purple giraffe at the zoo "+strings.Repeat("alpha beta gamma delta epsilon zeta eta theta ", 3)))
	eng := vectorEngine(t, 64, docs...)
	for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid, recall.ModeSemantic} {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: `"purple giraffe" kettle tea morning`, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 1 || r.Results[0].Source != "g.md" || !slices.Contains(r.Results[0].Match, "exact") || r.Note != "" {
			t.Errorf("%s: %+v", mode, r)
		}
	}
}

// Semantic search with a quoted phrase ranks every passage holding it by
// vector, not only those among the first full-text candidates: the best by
// vector (every other word of the query, where 60 holders rank above it by
// full text) comes first.
func TestQuotedSemanticRanksEveryHolder(t *testing.T) {
	ctx := context.Background()
	var docs []recall.Document
	for i := range 60 {
		docs = append(docs, doc(fmt.Sprintf("filler/%02d.md", i), fmt.Sprintf("blue door blue door w%d", i)))
	}
	docs = append(docs, doc("target.md", "blue door the of and to in"))
	eng := vectorEngine(t, 64, docs...)
	for _, q := range []string{"blue door the of and to in", `"blue door" the of and to in`} {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: q, Mode: recall.ModeSemantic})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range r.Results {
			got = append(got, fmt.Sprintf("%s(%.3f)", h.Source, h.Score))
		}
		if len(got) == 0 || r.Results[0].Source != "target.md" {
			t.Errorf("semantic %s: %v; want target.md, whose text is the query's, first", q, got)
		}
	}
}

// fullTextEngines writes docs, without vectors, to a new store and returns
// two engines over it, loaded: the first searches the store's full-text
// index, the second its in-memory one.
func fullTextEngines(t *testing.T, docs ...recall.Document) [2]*search.Engine {
	t.Helper()
	st := newStore(t)
	if _, err := st.Write(context.Background(), docs, nil); err != nil {
		t.Fatal(err)
	}
	var out [2]*search.Engine
	for i := range out {
		// A minute's budget: these tests check what a search finds, and a
		// search over thousands of duplicates under the race detector on a
		// busy machine overran the default 5 s (it failed "context deadline
		// exceeded" in a make test beside other builds).
		out[i] = search.New(st, search.Options{MemoryLexical: i == 1, Budget: time.Minute})
		if err := out[i].LoadIndex(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Full text too returns only the passages that hold a quoted phrase word
// for word, though its index matches phrases by stems and in titles: from
// either full-text index, in lexical mode and in hybrid mode without
// vectors; deeper passes fill the page when passages holding other forms
// of the words rank above every one that holds the phrase.
func TestQuotedPhraseWordForWordInFullText(t *testing.T) {
	ctx := context.Background()
	titled := doc("c.md", "a note about the bus timetable")
	titled.Source.Title = "Running late"
	docs := []recall.Document{doc("a.md", "sorry, I was running late again"), doc("b.md", "the train runs late on sundays"), titled}
	for i := range 100 {
		docs = append(docs, doc(fmt.Sprintf("stems/%03d.md", i), fmt.Sprintf("runs late, runs late, runs late %d", i)))
	}
	for i := range 5 {
		docs = append(docs, doc(fmt.Sprintf("late/%d.md", i), fmt.Sprintf("the bus was running late and so was I, the %d time this week", i)))
	}
	for i, eng := range fullTextEngines(t, docs...) {
		mem := i == 1
		for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid} {
			r, err := eng.Search(ctx, recall.SearchRequest{Query: `"run late"`, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Results) != 0 {
				t.Errorf("in-memory index %v, %s: \"run late\", which no passage holds: %d results", mem, mode, len(r.Results))
			}
			r, err = eng.Search(ctx, recall.SearchRequest{Query: `"running late"`, Mode: mode, Limit: 6})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range r.Results {
				got = append(got, h.Source)
				if !slices.Contains(h.Match, "exact") {
					t.Errorf("in-memory index %v, %s: \"running late\" returned %s, which does not hold it", mem, mode, h.Source)
				}
			}
			if len(got) != 6 {
				t.Errorf("in-memory index %v, %s: \"running late\": %v; want a.md and late/0..4", mem, mode, got)
			}
		}
	}
}

// A passage pasted into thousands of sources (a greeting opening every
// conversation) is one full-text candidate, so its copies never fill the
// candidates (the store's full text returns at most 1,000, and deeper
// passes stop at maxDepth): the page is the passage once, naming every
// other source in also_in, then the next passages, from either index.
func TestDuplicatesDoNotStarvePage(t *testing.T) {
	for _, copies := range []int{1200, 3000} {
		t.Run(fmt.Sprint(copies), func(t *testing.T) {
			ctx := context.Background()
			var docs []recall.Document
			for i := range copies {
				docs = append(docs, doc(fmt.Sprintf("greet/%04d.md", i), "Hello! How can I help you today?"))
			}
			for i := range 10 {
				docs = append(docs, doc(fmt.Sprintf("real/%02d.md", i), fmt.Sprintf("could you help me plan the garden today, the tomatoes and beans and the long border number %d", i)))
			}
			for i, eng := range fullTextEngines(t, docs...) {
				mem := i == 1
				r, err := eng.Search(ctx, recall.SearchRequest{Query: "help today", Mode: recall.ModeLexical, Limit: 5})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range r.Results {
					got = append(got, fmt.Sprintf("%s(+%d)", h.Source, len(h.AlsoIn)))
				}
				if len(r.Results) != 5 || !strings.HasPrefix(r.Results[0].Source, "greet/") || len(r.Results[0].AlsoIn) != copies-1 {
					t.Errorf("in-memory index %v: %v; want the greeting once, naming the %d other sources, then 4 real ones", mem, got, copies-1)
				}
			}
		})
	}
}

// memDoc is doc as owner's memory named key.
func memDoc(owner, key, text string) recall.Document {
	d := doc(recall.MemoryID(owner, key), text)
	d.Source.Kind, d.Source.Owner, d.Source.Title = recall.KindMemory, owner, key
	return d
}

// Sources that show one name (an archive file and two owners' memories
// called todo.md) are still different sources: a passage they all hold
// names the other two in also_in, and a page filled from a deeper pass
// keeps each of them.
func TestSourcesSharingAName(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 32)
	text := "the spare key is under the blue flowerpot"
	writeDocs(t, st, emb, memDoc("alice", "todo.md", text), memDoc("bob", "todo.md", text), doc("todo.md", text))
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid, recall.ModeSemantic} {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "blue flowerpot", Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 1 || len(r.Results[0].AlsoIn) != 2 {
			t.Errorf("%s: %+v; want one hit naming the other two sources", mode, r.Results)
		}
	}

	st2, emb2 := newSpaceStore(t, 32)
	big := recall.Document{Source: recall.Source{ID: "big.md", Kind: recall.KindArchive, ContentHash: "x", ChunkCount: 60}}
	for i := range 60 {
		t := fmt.Sprintf("flowerpot flowerpot flowerpot note %d", i)
		big.Chunks = append(big.Chunks, recall.Chunk{Index: i, Text: t, Hash: recall.TextHash(t)})
	}
	if _, err := st2.Write(ctx, []recall.Document{big}, nil); err != nil {
		t.Fatal(err)
	}
	writeDocs(t, st2, emb2, doc("todo.md", "flowerpot flowerpot flowerpot flowerpot"),
		memDoc("alice", "todo.md", "a flowerpot in alice's memory with many other words around it"))
	r, err := search.New(st2, search.Options{}).Search(ctx, recall.SearchRequest{Query: "flowerpot", Mode: recall.ModeLexical, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 4 {
		t.Errorf("%d results, want 4 (2 of big.md, the file todo.md and the memory todo.md): %+v", len(r.Results), r.Results)
	}
}

// A source replaced while a hybrid search waits for its query vector does
// not come back twice, its old text (read by full text before the write)
// next to its new one (found by the vector search after it): a state the
// store never held.
func TestReplacedDuringSearch(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	// The query's embedding is held until the write has committed: a
	// timed delay let a busy machine finish the search (with the old text
	// alone, rightly) before the write.
	held := &heldEmbedder{Embedder: embedtest.New(16), entered: make(chan struct{}, 1), hold: make(chan struct{})}
	eng := search.New(st, search.Options{Embedder: held, MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	writeDocs(t, eng, emb, doc("a.md", "ann runs marathons every spring"))
	done := make(chan recall.SearchResponse)
	go func() {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "ann marathons"})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-held.entered
	writeDocs(t, eng, emb, doc("a.md", "ann swims marathons in the lake now"))
	close(held.hold)
	r := <-done
	for _, h := range r.Results {
		if h.Text == "ann runs marathons every spring" {
			t.Errorf("replaced text returned after its replacement committed, next to the new one")
		}
	}
}

// cancelAfterCommit cancels the write's context once the store has
// committed (a client that hangs up at that moment).
type cancelAfterCommit struct {
	recall.Store
	cancel context.CancelFunc
}

func (s cancelAfterCommit) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	res, err := s.Store.Write(ctx, docs, vecs, remove...)
	s.cancel()
	return res, err
}

// A write whose caller leaves just after the commit still takes the removed
// chunk's vectors out of the index.
func TestWriteIndexedAfterCallerLeaves(t *testing.T) {
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb, doc("a.md", "ann runs marathons every spring"))
	wctx, cancel := context.WithCancel(context.Background())
	eng := search.New(cancelAfterCommit{st, cancel}, search.Options{Embedder: emb})
	if err := eng.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, before := eng.ReadSpace()
	// Replace a.md with a text not embedded yet (index pending).
	_, err := eng.Write(wctx, []recall.Document{doc("a.md", "ann swims now")}, nil)
	_ = err // the caller has gone; what matters is the index
	if _, n := eng.ReadSpace(); n != 0 {
		t.Errorf("index holds %d entries (had %d); a.md's old chunk is gone from the store", n, before)
	}
}

// TestSearchesRunDuringAWrite: the engine's write lock is taken only for a
// write's commit and index update, so a search answers while a write's
// transaction is still at work (here an Update whose function waits).
func TestSearchesRunDuringAWrite(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	eng := search.New(st, search.Options{Embedder: emb, MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	writeDocs(t, eng, emb, doc("a.md", "the lighthouse keeper's logbook"))
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := eng.Update(ctx, "m/slow", func(*recall.Document) (*recall.Document, error) {
			close(inside)
			<-release
			d := doc("m/slow", "a memory about the lighthouse")
			d.Source.Kind = recall.KindMemory
			d.Source.Body = d.Chunks[0].Text
			return &d, nil
		})
		done <- err
	}()
	<-inside
	searched := make(chan error, 1)
	go func() {
		_, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse", Mode: recall.ModeHybrid})
		searched <- err
	}()
	select {
	case err := <-searched:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a search waited for a write's transaction to finish its work")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse", Mode: recall.ModeLexical, Filter: recall.Filter{Kinds: []recall.Kind{recall.KindMemory}}})
	if err != nil || len(r.Results) != 1 {
		t.Errorf("the memory written: %v %+v", err, r.Results)
	}
}

// TestQueuedWriteHeedsItsContext: a write waiting for the engine's writer
// before it gives up when its context ends.
func TestQueuedWriteHeedsItsContext(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	eng := search.New(st, search.Options{Embedder: emb})
	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := eng.Update(ctx, "m/slow", func(*recall.Document) (*recall.Document, error) {
			close(inside)
			<-release
			return nil, nil
		})
		first <- err
	}()
	<-inside
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() { _, err := eng.Write(wctx, []recall.Document{doc("b.md", "queued text")}, nil); second <- err }()
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("queued write: %v; want its context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a queued write outlived its context while the writer before it held on")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// StoreFullText tells the searches the store's full-text index answers:
// all of them before the in-memory index is loaded, then those with a
// quoted phrase or words of a script written without spaces (phrases of
// their character pairs).
func TestStoreFullText(t *testing.T) {
	st, _ := newSpaceStore(t, 16)
	eng := search.New(st, search.Options{MemoryLexical: true})
	if !eng.StoreFullText("heron") {
		t.Error("before the load, plain words do not go to the store")
	}
	if err := eng.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]bool{"heron pond": false, `"heron pond"`: true, "茶": true, "薄荷茶": true} {
		if got := eng.StoreFullText(q); got != want {
			t.Errorf("StoreFullText(%q) = %v, want %v", q, got, want)
		}
	}
}

// faultyScan is a store whose vector scan hands the index a zero vector at
// row bad, or fails after row fail (0: never), and counts the rows it read.
type faultyScan struct {
	*sqlite.DB
	bad, fail, panicAt, read int
}

var errScan = errors.New("the disk went away")

func (s *faultyScan) ScanVectors(ctx context.Context, space string, fn func(recall.IndexedChunk, []float32) error) error {
	return s.DB.ScanVectors(ctx, space, func(c recall.IndexedChunk, vec []float32) error {
		s.read++
		if s.read == s.fail {
			return errScan
		}
		if s.read == s.panicAt {
			panic("the scan broke")
		}
		if s.read == s.bad {
			vec = make([]float32, len(vec))
		}
		return fn(c, vec)
	})
}

// The index load reads rows and encodes them on two goroutines: a row it
// cannot encode fails the load and stops the scan, and a scan that fails
// fails the load with its error.
func TestLoadIndexFailures(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 8)
	writeNumbered(t, st, emb, 3000, "d/%04d.md", "passage number %d about things")

	bad := &faultyScan{DB: st, bad: 10}
	if err := search.New(bad, search.Options{Embedder: emb}).LoadIndex(ctx); err == nil || !strings.Contains(err.Error(), "zero or not finite") {
		t.Errorf("load with a zero vector: %v", err)
	}
	if bad.read >= 3000 {
		t.Errorf("the scan read all %d rows after the index failed on row 10", bad.read)
	}
	failing := &faultyScan{DB: st, fail: 300}
	if err := search.New(failing, search.Options{Embedder: emb}).LoadIndex(ctx); !errors.Is(err, errScan) {
		t.Errorf("load whose scan fails: %v", err)
	}
	// A scan that panics leaves no goroutine of the load behind.
	before := runtime.NumGoroutine()
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Error("the scan's panic did not reach the caller")
			}
		}()
		search.New(&faultyScan{DB: st, panicAt: 1000}, search.Options{Embedder: emb}).LoadIndex(ctx)
	}()
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the panic, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	whole := &faultyScan{DB: st}
	eng := search.New(whole, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if _, n := eng.ReadSpace(); n == 0 || whole.read != 3000 {
		t.Errorf("a whole load: %d vectors from %d rows", n, whole.read)
	}
}

// Reading around an export's path (or a folder's), which is no source,
// names some of the conversations in it, which are; for every caller, as
// get_context and the command line both read through Context.
func TestContextOfAnExportNamesItsConversations(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb,
		doc("exp/conversations.json/c1", "the first conversation"),
		doc("exp/conversations.json/c2", "the second conversation"),
		doc("notes.md", "a note"))
	eng := search.New(st, search.Options{Embedder: emb})
	for _, c := range []struct {
		name  string
		kind  recall.Kind
		scope recall.Filter
		want  string
	}{
		{"exp/conversations.json", "", recall.Filter{}, `no source "exp/conversations.json": it holds conversations, each a source of its own: give one of them, such as "exp/conversations.json/c1", "exp/conversations.json/c2"`},
		{"exp/", recall.KindArchive, recall.Filter{OwnerScoped: true, Owner: "ann"}, `such as "exp/conversations.json/c1"`},
		{"exp/conversations.json", recall.KindMemory, recall.Filter{}, `no source "exp/conversations.json"`},
		{"exp/conv", "", recall.Filter{}, `no source "exp/conv"`},
	} {
		_, _, err := eng.Context(ctx, c.name, c.kind, 0, 1, c.scope)
		if !recall.IsNotFound(err) || !strings.Contains(recall.ErrorMessage(err), c.want) || (!strings.Contains(c.want, "such as") && strings.Contains(recall.ErrorMessage(err), "such as")) {
			t.Errorf("Context(%q, kind %q): %v; want %q", c.name, c.kind, err, c.want)
		}
	}
}

// With semantic search turned off (embedder none), loading the indexes
// leaves the read space's vectors in the store: nothing would read them.
func TestEmbedderOffLoadsNoVectors(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 16)
	writeDocs(t, st, emb, doc("a.md", "the lighthouse keeper's log"))
	for _, off := range []bool{false, true} {
		opt := search.Options{Embedder: emb, MemoryLexical: true}
		if off {
			opt = search.Options{EmbedderOff: true, MemoryLexical: true}
		}
		eng := search.New(st, opt)
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		if _, n := eng.ReadSpace(); (n > 0) == off {
			t.Errorf("embedder off %v: %d vectors loaded", off, n)
		}
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "lighthouse"})
		if err != nil || len(r.Results) != 1 || (r.Mode == recall.ModeLexical) != off {
			t.Errorf("embedder off %v: %+v %v", off, r, err)
		}
	}
}
