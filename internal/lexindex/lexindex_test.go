package lexindex_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lexindex"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/textindex"
)

var ctx = context.Background()

// corpus writes n generated documents (Zipf-distributed words, some in
// titles, some memories of two owners) and returns their ids.
func corpus(t *testing.T, st recall.Store, r *rand.Rand, n int, gen int) ([]string, recall.WriteResult) {
	t.Helper()
	words := strings.Fields(`tea mint garden river morning sister winter letter code bridge quiet lamp orange train
		paper window coffee mountain story night doctor project deadline budget recipe flour starter marathon knee
		running runs runner generalization cafés naïve 薄荷 茶 東京 the and of to in`)
	zipf := rand.NewZipf(r, 1.2, 2, uint64(len(words)-1))
	text := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	var ids []string
	var docs []recall.Document
	for i := range n {
		kind := recall.KindArchive
		id := fmt.Sprintf("g%d/%d.md", gen, i)
		if i%7 == 0 {
			kind, id = recall.KindMemory, fmt.Sprintf("memory:%s:k%d-%d", []string{"alice", "bob"}[i%2], gen, i)
		}
		d := recall.Document{Source: recall.Source{ID: id, Kind: kind, Title: text(1 + r.IntN(3)), IndexState: recall.IndexPending}}
		if kind == recall.KindMemory {
			d.Source.Owner = []string{"alice", "bob"}[i%2]
		}
		for c := range 1 + r.IntN(3) {
			body := text(5 + r.IntN(120))
			if c == 0 && i%5 == 4 {
				// A passage pasted into several sources: one text.
				body = docs[len(docs)-1-r.IntN(3)].Chunks[0].Text
			}
			d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: body, Hash: recall.TextHash(body)})
		}
		d.Source.ChunkCount = len(d.Chunks)
		docs = append(docs, d)
		ids = append(ids, id)
	}
	res, err := st.Write(ctx, docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ids, res
}

func load(t *testing.T, st recall.Store) *lexindex.Index {
	t.Helper()
	x := lexindex.New()
	err := st.ScanChunks(ctx, func(c recall.StoredChunk) error {
		x.Add(c.ID, c.Source, c.Hash, textindex.Terms(textindex.TitleText(c.Source.Title, c.Source.Date)), textindex.Terms(c.Text))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// apply follows a write as the search engine does.
func apply(t *testing.T, st recall.Store, x *lexindex.Index, res recall.WriteResult) {
	t.Helper()
	x.Remove(res.Removed...)
	var ids []int64
	for _, c := range res.Added {
		ids = append(ids, c.ID)
	}
	chunks, err := st.ChunksByID(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		x.Add(c.ID, c.Source, c.Hash, textindex.Terms(textindex.TitleText(c.Source.Title, c.Source.Date)), textindex.Terms(c.Text))
	}
}

// TestAgreesWithFTS5 ranks random queries with the index and with the
// store's FTS5 bm25() over the same chunks (a corpus small enough that the
// store ranks every match, some texts held by several sources): the same
// chunks in the same order with the same scores, before and after replacing
// and deleting sources (dead chunks, compaction), with and without filters.
func TestAgreesWithFTS5(t *testing.T) {
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(7, 8))
	ids, _ := corpus(t, st, r, 300, 0)
	x := load(t, st)

	queryWords := strings.Fields(`tea mint garden river runs running generalizations café naive 薄荷 東京 budget the
		knee marathon flour absentword letter code quiet`)
	check := func(stage string) {
		t.Helper()
		filters := []recall.Filter{{}, {OwnerScoped: true, Owner: "alice"}, {Kinds: []recall.Kind{recall.KindMemory}}, {SourcePrefix: "g1/"}}
		for q := range 150 {
			ws := make([]string, 1+r.IntN(4))
			for i := range ws {
				ws[i] = queryWords[r.IntN(len(queryWords))]
			}
			query := strings.Join(ws, " ")
			f := filters[q%len(filters)]
			want, err := st.Lexical(ctx, recall.LexicalQuery{Text: query, Filter: f, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			terms, ok := lexindex.QueryTerms(textindex.ParseQuery(query))
			if !ok {
				t.Fatalf("%q: not a plain-word query", query)
			}
			got := x.Search(terms, 20, f.Matcher())
			if len(got) != len(want) {
				t.Fatalf("%s: %q %+v: %d results; FTS5 %d", stage, query, f, len(got), len(want))
			}
			for i := range got {
				if math.Abs(got[i].Score-want[i].Score) > 1e-9*math.Abs(want[i].Score) {
					t.Fatalf("%s: %q %+v: result %d scores %v; FTS5 %v", stage, query, f, i, got[i].Score, want[i].Score)
				}
				// Equal scores may come in either order.
				if got[i].ChunkID != want[i].ChunkID && got[i].Score != want[i].Score {
					t.Fatalf("%s: %q: result %d is chunk %d; FTS5 %d", stage, query, i, got[i].ChunkID, want[i].ChunkID)
				}
			}
		}
	}
	check("loaded")

	// Replace a third of the sources with new text, delete another third,
	// add new ones: the index follows the write results.
	var replace []recall.Document
	for i, id := range ids {
		if i%3 != 0 {
			continue
		}
		body := fmt.Sprintf("replaced tea passage %d about running", i)
		d := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, Title: "new title", ChunkCount: 1}}
		if strings.HasPrefix(id, "memory:") {
			d.Source.Kind, d.Source.Owner = recall.KindMemory, strings.Split(id, ":")[1]
		}
		d.Chunks = []recall.Chunk{{Text: body, Hash: recall.TextHash(body)}}
		replace = append(replace, d)
	}
	res, err := st.Write(ctx, replace, nil)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, st, x, res)
	var del []string
	for i, id := range ids {
		if i%3 == 1 {
			del = append(del, id)
		}
	}
	_, res, err = st.Delete(ctx, del...)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, st, x, res)
	_, res = corpus(t, st, r, 50, 1)
	apply(t, st, x, res)
	if fresh := load(t, st); x.Len() != fresh.Len() {
		t.Fatalf("followed index holds %d chunks; a fresh load %d", x.Len(), fresh.Len())
	}
	check("after replace, delete and add")
}

// TestSearchCountsTextOnce: of the chunks holding one text, only the best
// ranked is a result (of equal ones, the newest), so copies of a passage
// never fill k; a copy that drops out leaves the text to the next best.
func TestSearchCountsTextOnce(t *testing.T) {
	x := lexindex.New()
	shared := textindex.Terms("lanterns along the river at dusk")
	hash := recall.TextHash("lanterns along the river at dusk")
	for i := range 20 {
		var title []string
		if i == 7 {
			title = textindex.Terms("lanterns")
		}
		x.Add(int64(i+1), recall.SourceMeta{ID: fmt.Sprintf("dup/%02d.md", i)}, hash, title, shared)
	}
	for i := range 3 {
		text := fmt.Sprintf("paper lanterns for the party, list %d of many lists", i)
		x.Add(int64(100+i), recall.SourceMeta{ID: fmt.Sprintf("own/%d.md", i)}, recall.TextHash(text), nil, textindex.Terms(text))
	}
	ids := func(k int) []int64 {
		var out []int64
		for _, c := range x.Search([]string{textindex.Term("lanterns")}, k, nil) {
			out = append(out, c.ChunkID)
		}
		return out
	}
	if got := ids(4); len(got) != 4 || got[0] != 8 || !slices.Contains(got, 100) || !slices.Contains(got, 101) || !slices.Contains(got, 102) {
		t.Errorf("k=4: chunks %v; want 8 (the titled copy) first, then 100, 101 and 102", got)
	}
	x.Remove(8)
	if got := ids(1); !slices.Equal(got, []int64{20}) {
		t.Errorf("without the titled copy, k=1: chunks %v; want [20], the newest of the equal copies", got)
	}
}
