package postgres

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// TestKeyPostings: a write's postings go to COPY in key order (term, then
// chunk id), every one once, with each term's count of chunks and each
// chunk's terms as makeTermDoc made them.
func TestKeyPostings(t *testing.T) {
	texts := []string{"the cat sat on the mat", "a dog and a cat", "mat dog zebra", "naïve café 東京タワー", "cat"}
	docs := make([]termDoc, len(texts))
	ids := make([]int64, len(texts))
	for i, text := range texts {
		docs[i] = makeTermDoc("a title", &recall.Chunk{Text: text})
		ids[i] = int64(10 + 3*i)
	}
	k := keyPostings(docs, ids)

	var want []posting
	df := map[string]int32{}
	for i := range docs {
		if len(k.chunkTerms[i]) != len(docs[i].terms) {
			t.Fatalf("chunk %d: %d terms for its row, want %d", i, len(k.chunkTerms[i]), len(docs[i].terms))
		}
		for j := range docs[i].terms {
			p := &docs[i].terms[j]
			if string(k.chunkTerms[i][j]) != p.term {
				t.Errorf("chunk %d term %d: %q for its row, want %q", i, j, k.chunkTerms[i][j], p.term)
			}
			want = append(want, posting{[]byte(p.term), ids[i], p})
			df[p.term]++
		}
	}
	slices.SortFunc(want, func(a, b posting) int {
		return cmp.Or(bytes.Compare(a.term, b.term), cmp.Compare(a.chunkID, b.chunkID))
	})
	if len(k.posts) != len(want) {
		t.Fatalf("%d postings, want %d", len(k.posts), len(want))
	}
	for i := range want {
		if g, w := k.posts[i], want[i]; !bytes.Equal(g.term, w.term) || g.chunkID != w.chunkID || g.termPosting != w.termPosting {
			t.Errorf("posting %d: %q in %d, want %q in %d", i, g.term, g.chunkID, w.term, w.chunkID)
		}
	}
	if len(k.terms) != len(df) || !slices.IsSortedFunc(k.terms, bytes.Compare) {
		t.Errorf("terms %q: want the %d distinct terms in order", k.terms, len(df))
	}
	for i, term := range k.terms {
		if k.df[i] != df[string(term)] {
			t.Errorf("%q: df %d, want %d", term, k.df[i], df[string(term)])
		}
	}
}

// TestVectorsExact: vectors go to the server by COPY in pgvector's binary
// format (encodeUnits) and come back bit for bit, units in order, with the
// values a text encoding could round (the smallest subnormal, the largest
// float32, negative zero).
func TestVectorsExact(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: 3}); err != nil {
		t.Fatal(err)
	}
	d := textDoc("a.md", "one text", "another text")
	vec := []float32{math.SmallestNonzeroFloat32, math.MaxFloat32, float32(math.Copysign(0, -1)), 1.0 / 3, -2.5e-38, 7}
	if _, err := db.Write(ctx, []recall.Document{d}, []recall.Vector{
		{Space: "s", Key: d.Chunks[0].VectorKey(), Vec: []float32{1, 2, 3}},
		{Space: "s", Key: d.Chunks[0].VectorKey(), Vec: vec}, // the last of a key wins
		{Space: "s", Key: d.Chunks[1].VectorKey(), Vec: vec[:3]},
		{Space: "s", Key: recall.TextHash("no chunk holds it"), Vec: vec[:3]},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.VectorsByKey(ctx, "s", []string{d.Chunks[0].VectorKey(), d.Chunks[1].VectorKey(), recall.TextHash("no chunk holds it")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d vectors stored, want the 2 whose keys a chunk holds", len(got))
	}
	for key, want := range map[string][]float32{d.Chunks[0].VectorKey(): vec, d.Chunks[1].VectorKey(): vec[:3]} {
		g := got[key]
		if len(g) != len(want) {
			t.Fatalf("%s: %v, want %v", key, g, want)
		}
		for i := range want {
			if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s value %d: %v (%#x), want %v (%#x)", key, i, g[i], math.Float32bits(g[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil { // the space's count of vectors among others
		t.Fatal(err)
	}
}

// TestWriteRoundTrips: a write's round trips to the server do not grow with
// its documents, new or replacing stored ones, nor a deletion's with its
// sources: across a network each costs its latency (BenchmarkWriteRemote).
// Each document had cost two (reading its stored source, writing it) or
// more (its stored chunks, a statement per changed chunk), and each
// deleted source four.
func TestWriteRoundTrips(t *testing.T) {
	proxy, dsn := pgtest.NewProxy(t, pgtest.Server(t), 0)
	db := openTest(t, dsn, Options{MaxConns: 1}) // one connection: statements prepared once
	defer db.Close()
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	// n documents of three chunks; version 1 changes the second chunk's
	// text and the first one's mid-word mark, and keeps the third.
	docs := func(prefix string, n, version int) ([]recall.Document, []recall.Vector) {
		var ds []recall.Document
		var vs []recall.Vector
		for i := range n {
			d := textDoc(fmt.Sprintf("%s/%02d.md", prefix, i),
				fmt.Sprintf("first passage of %s %d", prefix, i),
				fmt.Sprintf("second passage of %s %d, version %d", prefix, i, version),
				fmt.Sprintf("third passage of %s %d", prefix, i))
			d.Chunks[0].MidWord = version == 1
			for _, c := range d.Chunks {
				vs = append(vs, recall.Vector{Space: "s", Key: c.VectorKey(), Vec: []float32{1, float32(i)}})
			}
			ds = append(ds, d)
		}
		return ds, vs
	}
	trips := func(what string, f func() error) int64 {
		t.Helper()
		before := proxy.RoundTrips()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return proxy.RoundTrips() - before
	}
	write := func(prefix string, n, version int) int64 {
		ds, vs := docs(prefix, n, version)
		return trips(fmt.Sprintf("write %d to %s", n, prefix), func() error { _, err := db.Write(ctx, ds, vs); return err })
	}
	remove := func(prefix string, n int) int64 {
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("%s/%02d.md", prefix, i))
		}
		return trips(fmt.Sprintf("delete %d from %s", n, prefix), func() error {
			got, _, err := db.Delete(ctx, ids...)
			if err == nil && got != n {
				err = fmt.Errorf("deleted %d sources, want %d", got, n)
			}
			return err
		})
	}
	// Every statement once, so that each is prepared before counting.
	write("warm", 2, 0)
	write("warm", 2, 1)
	remove("warm", 2)

	for _, c := range []struct {
		what      string
		one, many int64
	}{
		{"new documents", write("one", 1, 0), write("many", 20, 0)},
		{"changed documents", write("one", 1, 1), write("many", 20, 1)},
		{"deleted sources", remove("one", 1), remove("many", 20)},
	} {
		// The proxy counts the server's ReadyForQuery messages: one per
		// query, pipeline or COPY the client waits on, however the
		// machine's load interleaves the two sides' messages.
		t.Logf("%s: %d round trips for one, %d for 20", c.what, c.one, c.many)
		if c.many != c.one {
			t.Errorf("%s: %d round trips for 20, %d for one; want as many", c.what, c.many, c.one)
		}
	}
}
