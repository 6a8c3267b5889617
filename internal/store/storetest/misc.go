package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

func testListSourcesPaging(t *testing.T, s recall.Store) {
	var docs []recall.Document
	var want []string
	for i := range 23 {
		id := fmt.Sprintf("s/%02d.md", i)
		docs = append(docs, doc(id, recall.KindArchive, "text "+id))
		want = append(want, id)
	}
	write(t, s, docs...)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page, next, err := s.ListSources(ctx, recall.ListOptions{Cursor: cursor, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 5 {
			t.Fatalf("page of %d; limit 5", len(page))
		}
		for _, src := range page {
			got = append(got, src.ID)
		}
		// A source written between pages, before the cursor, does not
		// shift the rest.
		if pages == 1 {
			write(t, s, doc("s/00a.md", recall.KindArchive, "late"))
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged ids = %v\nwant %v (each source once, in order)", got, want)
	}
	_, _, err := s.ListSources(ctx, recall.ListOptions{Cursor: "%%%not a cursor"})
	wantCode(t, err, recall.EINVALID, "ListSources with a bad cursor")
}

func testByHash(t *testing.T, s recall.Store) {
	a := doc("a.md", recall.KindArchive, "common passage", "a only")
	m := doc("mem", recall.KindMemory, "common passage")
	m.Source.Owner = "alice"
	// The same passage under a header: the same text, another vector key.
	c := doc("c.md", recall.KindArchive, "common passage")
	c.Chunks[0].Header = "A chat (2024-01)"
	write(t, s, a, m, doc("b.md", recall.KindArchive, "common passage"), c)
	h := recall.TextHash("common passage")
	got, err := s.SourcesByHash(ctx, []string{h, recall.TextHash("a only"), recall.TextHash("absent")}, recall.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[h], []string{"a.md", "b.md", "c.md", "mem"}) || !slices.Equal(got[recall.TextHash("a only")], []string{"a.md"}) || len(got) != 2 {
		t.Errorf("SourcesByHash = %v", got)
	}
	scoped, err := s.SourcesByHash(ctx, []string{h}, recall.Filter{OwnerScoped: true, Owner: "bob"})
	if err != nil || !slices.Equal(scoped[h], []string{"a.md", "b.md", "c.md"}) {
		t.Errorf("SourcesByHash for bob = %v, %v; want the archive sources only", scoped, err)
	}
	chunks, err := s.ChunksByVectorKey(ctx, []string{h})
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, c := range chunks {
		if c.Hash != h || c.VectorKey != h {
			t.Errorf("ChunksByVectorKey returned hash %s, key %s", c.Hash, c.VectorKey)
		}
		srcs = append(srcs, c.Source.ID)
	}
	if !sameSet(srcs, []string{"a.md", "b.md", "mem"}) || len(chunks) != 3 {
		t.Errorf("ChunksByVectorKey sources = %v", srcs)
	}
	k := recall.VectorKey("A chat (2024-01)", h)
	if chunks, err := s.ChunksByVectorKey(ctx, []string{k}); err != nil || len(chunks) != 1 ||
		chunks[0].Source.ID != "c.md" || chunks[0].Hash != h || chunks[0].VectorKey != k {
		t.Errorf("ChunksByVectorKey of the passage under its header = %+v, %v; want c.md's chunk", chunks, err)
	}
	if c, err := s.ChunksByVectorKey(ctx, nil); err != nil || len(c) != 0 {
		t.Errorf("ChunksByVectorKey(nil) = %v, %v", c, err)
	}
	// Many hashes at once (more than any fixed parameter list).
	many := make([]string, 5000)
	for i := range many {
		many[i] = recall.TextHash(fmt.Sprint(i))
	}
	many = append(many, h)
	if got, err := s.SourcesByHash(ctx, many, recall.Filter{}); err != nil || len(got) != 1 {
		t.Errorf("SourcesByHash of 5001 hashes = %d entries, %v", len(got), err)
	}
}

func testExportImport(t *testing.T, s recall.Store, open func(t *testing.T) recall.Store) {
	created := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	a := doc("2024/a.md", recall.KindArchive, "first", "second", "third")
	a.Source.Vault, a.Source.Title, a.Source.Date, a.Source.MTime = "/v", "A chat", "2024-01", 77
	a.Chunks[1].Header = "A chat (2024-01)"
	a.Chunks[2].MidWord = true
	a.Source.CreatedAt, a.Source.UpdatedAt = created, created.Add(time.Hour)
	m := doc("key", recall.KindMemory, "value text")
	m.Source.Owner, m.Source.Category, m.Source.IndexState = "alice", "person", recall.IndexOK
	d := doc("diary/2024-01-02", recall.KindDiary, "09:00 coffee", "12:00 lunch")
	d.Source.Date = "2024-01-02"
	empty := doc("nothing", recall.KindMemory)
	write(t, s, a, m, d, empty)

	exported := exportAll(t, s)
	if len(exported) != 4 {
		t.Fatalf("exported %d documents; want 4", len(exported))
	}
	ids := make([]string, len(exported))
	for i, e := range exported {
		ids[i] = e.Source.ID
	}
	if !slices.IsSorted(ids) {
		t.Errorf("export order %v; want ordered by id", ids)
	}

	fresh := open(t)
	defer fresh.Close()
	if _, err := fresh.Write(ctx, exported, nil); err != nil {
		t.Fatalf("import: %v", err)
	}
	reimported := exportAll(t, fresh)
	if len(reimported) != len(exported) {
		t.Fatalf("reimported %d documents; want %d", len(reimported), len(exported))
	}
	for i := range exported {
		e, r := exported[i], reimported[i]
		if describeDoc(e) != describeDoc(r) || !sameTime(e.Source.CreatedAt, r.Source.CreatedAt) ||
			!sameTime(e.Source.UpdatedAt, r.Source.UpdatedAt) {
			t.Errorf("document %d differs after export and import:\n%s (%v, %v)\n%s (%v, %v)", i,
				describeDoc(e), e.Source.CreatedAt, e.Source.UpdatedAt, describeDoc(r), r.Source.CreatedAt, r.Source.UpdatedAt)
		}
	}
	if got := exported[0]; got.Source.ID != "2024/a.md" || !sameTime(got.Source.CreatedAt, created) {
		t.Errorf("first exported = %s created %v; want 2024/a.md created %v", got.Source.ID, got.Source.CreatedAt, created)
	}
	if got := search(t, fresh, "lunch", recall.Filter{}); !slices.Equal(got, []string{"diary/2024-01-02"}) {
		t.Errorf("imported store finds lunch in %v", got)
	}
}

// A Write under a guard (recall.WithWriteGuard) asks it about each
// document with the source stored under its id, in the write's transaction,
// and leaves out those it refuses: their stored sources stay as they were,
// and the WriteResult names no chunk of theirs. Update ignores it.
func testWriteGuard(t *testing.T, s recall.Store) {
	then := time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)
	a := doc("a.md", recall.KindArchive, "alpha")
	b := doc("memory::b", recall.KindMemory, "bravo")
	a.Source.UpdatedAt, b.Source.UpdatedAt = then, then
	write(t, s, a, b)
	before := exportAll(t, s)

	a2 := doc("a.md", recall.KindArchive, "alpha two")
	b2 := doc("memory::b", recall.KindMemory, "bravo two")
	c := doc("c.md", recall.KindArchive, "charlie")
	// ChunkCount as the store records it.
	a2.Source.ChunkCount, c.Source.ChunkCount = 1, 1
	seen := map[string]string{} // what the guard was shown, by document
	guard := func(stored *recall.Source, d *recall.Document) bool {
		seen[d.Source.ID] = "none"
		if stored != nil {
			seen[d.Source.ID] = fmt.Sprintf("%s %s %s", stored.ID, stored.ContentHash[:8], stored.UpdatedAt.Format(time.RFC3339Nano))
		}
		return d.Source.ID != "memory::b"
	}
	res, err := s.Write(recall.WithWriteGuard(ctx, guard), []recall.Document{a2, b2, c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a.md":      "a.md " + a.Source.ContentHash[:8] + " " + then.Format(time.RFC3339Nano),
		"memory::b": "memory::b " + b.Source.ContentHash[:8] + " " + then.Format(time.RFC3339Nano),
		"c.md":      "none",
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("the guard was shown %v; want %v", seen, want)
	}
	after := exportAll(t, s)
	if len(after) != 3 {
		t.Fatalf("%d sources after the guarded write; want 3", len(after))
	}
	if got := describeDoc(after[0]); got != describeDoc(a2) {
		t.Errorf("a.md, which the guard let through:\n%s\nwant\n%s", got, describeDoc(a2))
	}
	if got := describeDoc(after[1]); got != describeDoc(c) {
		t.Errorf("c.md, which the guard let through:\n%s\nwant\n%s", got, describeDoc(c))
	}
	if got, was := after[2], before[1]; describeDoc(got) != describeDoc(was) || !sameTime(got.Source.UpdatedAt, then) {
		t.Errorf("the refused memory changed:\n%s (%v)\nwas\n%s (%v)", describeDoc(got), got.Source.UpdatedAt, describeDoc(was), then)
	}
	added := map[string]int{}
	for _, ch := range res.Added {
		added[ch.Source.ID]++
	}
	if fmt.Sprint(added) != "map[a.md:1 c.md:1]" || len(res.Removed) != 1 {
		t.Errorf("WriteResult added %v and removed %v; want a chunk each of a.md and c.md added, a.md's old one removed", added, res.Removed)
	}
	if got := search(t, s, "two", recall.Filter{}); !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("the texts written are found in %v; want a.md alone (the refused memory's is not written)", got)
	}

	_, err = s.Update(recall.WithWriteGuard(ctx, func(*recall.Source, *recall.Document) bool { return false }), "memory::b",
		func(*recall.Document) (*recall.Document, error) { return &b2, nil })
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Source(ctx, "memory::b"); err != nil || got.ContentHash != b2.Source.ContentHash {
		t.Errorf("an Update under a guard that refuses everything did not write: %+v %v", got, err)
	}
}

func exportAll(t *testing.T, s recall.Store) []recall.Document {
	t.Helper()
	var docs []recall.Document
	if err := s.Export(ctx, func(d recall.Document) error {
		docs = append(docs, d)
		return nil
	}); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return docs
}

func testStats(t *testing.T, s recall.Store) {
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Chunks != 0 || len(st.Spaces) != 0 || st.LastSweep != nil || st.MidWordShare != 0 {
		t.Errorf("empty store stats = %+v", st)
	}

	a := doc("a.md", recall.KindArchive, "one", "two", "three", "four")
	a.Chunks[1].MidWord = true
	b := doc("b.md", recall.KindArchive, "one")
	m1 := doc("m1", recall.KindMemory, "memory one")
	m1.Source.IndexState = recall.IndexOK
	m2 := doc("m2", recall.KindMemory, "memory two")
	dy := doc("diary/2025-01-01", recall.KindDiary, "entry")
	write(t, s, a, b, m1, m2, dy)
	space := createSpace(t, s, "sp", 2)
	createSpace(t, s, "empty", 2)
	// m1 is ok by its vector in the read space, not by the state it was
	// written with: the first space settled every source against itself.
	putVecs(t, s, space, "one", "two", "memory one")
	started := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	for i, outcome := range []string{"failures", "ok"} {
		if err := s.RecordSweep(ctx, recall.SweepRecord{Vault: "/v", Started: started.Add(time.Duration(i) * time.Hour),
			Finished: started.Add(time.Duration(i)*time.Hour + time.Minute), FilesSeen: 10 + i, FilesChanged: 2,
			FilesSkipped: 8, ChunksWritten: 5, Bytes: 1234, VectorsMissing: 3, Outcome: outcome}); err != nil {
			t.Fatal(err)
		}
	}

	st, err = s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantSources := map[recall.Kind]int{recall.KindArchive: 2, recall.KindMemory: 2, recall.KindDiary: 1}
	if fmt.Sprint(st.Sources) != fmt.Sprint(wantSources) {
		t.Errorf("Sources = %v; want %v", st.Sources, wantSources)
	}
	if st.Chunks != 8 {
		t.Errorf("Chunks = %d; want 8", st.Chunks)
	}
	wantBytes := a.Source.Size + b.Source.Size + m1.Source.Size + m2.Source.Size + dy.Source.Size
	if st.Bytes != wantBytes {
		t.Errorf("Bytes = %d; want %d", st.Bytes, wantBytes)
	}
	if math.Abs(st.MidWordShare-1.0/8) > 1e-9 {
		t.Errorf("MidWordShare = %v; want 0.125", st.MidWordShare)
	}
	wantStates := map[string]int{recall.IndexOK: 1, recall.IndexPending: 2}
	if fmt.Sprint(st.IndexStates) != fmt.Sprint(wantStates) {
		t.Errorf("IndexStates = %v; want %v (memory and diary only)", st.IndexStates, wantStates)
	}
	wantKindChunks := map[recall.Kind]int{recall.KindArchive: 5, recall.KindMemory: 2, recall.KindDiary: 1}
	wantKindBytes := map[recall.Kind]int64{recall.KindArchive: a.Source.Size + b.Source.Size,
		recall.KindMemory: m1.Source.Size + m2.Source.Size, recall.KindDiary: dy.Source.Size}
	if fmt.Sprint(st.KindChunks) != fmt.Sprint(wantKindChunks) || fmt.Sprint(st.KindBytes) != fmt.Sprint(wantKindBytes) {
		t.Errorf("KindChunks = %v, KindBytes = %v; want %v, %v", st.KindChunks, st.KindBytes, wantKindChunks, wantKindBytes)
	}
	if st.DBBytes < 0 {
		t.Errorf("DBBytes = %d", st.DBBytes)
	}
	// Distinct texts: one, two, three, four, memory one, memory two, entry.
	wantSpaces := map[string][3]float64{"sp": {3, 4, 3.0 / 7}, "empty": {0, 7, 0}}
	if len(st.Spaces) != 2 {
		t.Fatalf("Spaces = %+v; want 2", st.Spaces)
	}
	for _, sp := range st.Spaces {
		w := wantSpaces[sp.Name]
		if float64(sp.Vectors) != w[0] || float64(sp.Missing) != w[1] || math.Abs(sp.Coverage-w[2]) > 1e-9 {
			t.Errorf("space %s: vectors %d missing %d coverage %v; want %v", sp.Name, sp.Vectors, sp.Missing, sp.Coverage, w)
		}
	}
	if st.LastSweep == nil || st.LastSweep.Outcome != "ok" || st.LastSweep.FilesSeen != 11 ||
		!st.LastSweep.Started.Equal(started.Add(time.Hour)) || st.LastSweep.Bytes != 1234 {
		t.Errorf("LastSweep = %+v; want the second sweep", st.LastSweep)
	}

	// With nothing to embed, coverage is complete.
	if _, _, err := s.Delete(ctx, "a.md", "b.md", "m1", "m2", "diary/2025-01-01"); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Stats(ctx)
	for _, sp := range st.Spaces {
		if sp.Vectors != 0 || sp.Missing != 0 || sp.Coverage != 1 {
			t.Errorf("empty store, space %s: %+v; want 0 vectors, 0 missing, coverage 1", sp.Name, sp)
		}
	}
}

func testOwnerStats(t *testing.T, s recall.Store) {
	owned := func(id string, kind recall.Kind, owner, state string, texts ...string) recall.Document {
		return withSource(doc(id, kind, texts...), func(s *recall.Source) { s.Owner, s.IndexState = owner, state })
	}
	write(t, s, doc("a.md", recall.KindArchive, "archive one", "archive two"),
		owned("ann/k1", recall.KindMemory, "ann", recall.IndexOK, "ann's first"),
		owned("ann/k2", recall.KindMemory, "ann", recall.IndexPending, "ann's second", "and more"),
		owned("ann/diary/2025-01-01", recall.KindDiary, "ann", recall.IndexOK, "ann's day"),
		owned("bob/k1", recall.KindMemory, "bob", recall.IndexSkipped, "bob's"),
		owned("k1", recall.KindMemory, "", recall.IndexPending, "nobody's"))
	for _, c := range []struct {
		owner   string
		sources map[recall.Kind]int
		chunks  int
		bytes   int64
		states  map[string]int
	}{
		{"ann", map[recall.Kind]int{recall.KindMemory: 2, recall.KindDiary: 1}, 4,
			int64(len("ann's first") + len("ann's second") + len("and more") + len("ann's day")),
			map[string]int{recall.IndexOK: 2, recall.IndexPending: 1}},
		{"bob", map[recall.Kind]int{recall.KindMemory: 1}, 1, int64(len("bob's")), map[string]int{recall.IndexSkipped: 1}},
		{"", map[recall.Kind]int{recall.KindMemory: 1}, 1, int64(len("nobody's")), map[string]int{recall.IndexPending: 1}},
		{"carol", map[recall.Kind]int{}, 0, 0, map[string]int{}},
	} {
		st, err := s.OwnerStats(ctx, c.owner)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(st.Sources) != fmt.Sprint(c.sources) || st.Chunks != c.chunks || st.Bytes != c.bytes ||
			fmt.Sprint(st.IndexStates) != fmt.Sprint(c.states) {
			t.Errorf("OwnerStats(%q) = sources %v, chunks %d, bytes %d, states %v; want %v, %d, %d, %v",
				c.owner, st.Sources, st.Chunks, st.Bytes, st.IndexStates, c.sources, c.chunks, c.bytes, c.states)
		}
	}
}

func testCanceled(t *testing.T, s recall.Store) {
	write(t, s, doc("a.md", recall.KindArchive, "text"))
	c, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Write(c, []recall.Document{doc("b.md", recall.KindArchive, "more")}, nil)
	wantCode(t, err, recall.ECANCELED, "Write with a canceled context")
	_, err = s.Lexical(c, recall.LexicalQuery{Text: "text"})
	wantCode(t, err, recall.ECANCELED, "Lexical with a canceled context")
	if _, err := s.Source(ctx, "b.md"); !recall.IsNotFound(err) {
		t.Errorf("canceled write was stored: %v", err)
	}
}

func testScanChunks(t *testing.T, s recall.Store) {
	a := withSource(doc("a.md", recall.KindArchive, "first passage", "second passage"), func(s *recall.Source) { s.Title = "A" })
	m := doc("mem", recall.KindMemory, "a memory")
	m.Source.Owner = "alice"
	write(t, s, a, m)
	// Replacing a.md renews its last chunk: the old one must not be scanned.
	write(t, s, withSource(doc("a.md", recall.KindArchive, "first passage", "changed passage"), func(s *recall.Source) { s.Title = "A" }))
	var got []string
	last := int64(-1)
	err := s.ScanChunks(ctx, func(c recall.StoredChunk) error {
		if c.ID <= last {
			t.Errorf("chunk %d after %d: not in id order", c.ID, last)
		}
		last = c.ID
		got = append(got, fmt.Sprintf("%s#%d %s %q (%s)", c.Source.ID, c.Index, c.Source.Title, c.Text, c.Source.Owner))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`a.md#0 A "first passage" ()`, `mem#0  "a memory" (alice)`, `a.md#1 A "changed passage" ()`}
	if !slices.Equal(got, want) {
		t.Errorf("ScanChunks = %q; want %q", got, want)
	}
	stop := fmt.Errorf("stop")
	n := 0
	if err := s.ScanChunks(ctx, func(recall.StoredChunk) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("ScanChunks with fn failing: %v after %d chunks; want fn's error after 1", err, n)
	}
}

// A Delete, and a Write's removals, under a delete guard
// (recall.WithDeleteGuard) ask it about each source they would remove,
// archive sources without chunks included, in their transaction: a source
// it refuses stays as it was and is not counted; an id the store lacks is
// not asked about.
func testDeleteGuard(t *testing.T, s recall.Store) {
	then := time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)
	a := doc("a.md", recall.KindArchive, "alpha")
	b := doc("b.md", recall.KindArchive, "bravo")
	empty := recall.Document{Source: recall.Source{ID: "empty.md", Kind: recall.KindArchive, Vault: "/v",
		Size: 2, MTime: 7, IndexState: recall.IndexOK}}
	c := doc("c.md", recall.KindArchive, "charlie")
	d := doc("d.md", recall.KindArchive, "delta")
	for _, x := range []*recall.Document{&a, &b, &c, &d} {
		x.Source.UpdatedAt = then
	}
	write(t, s, a, b, empty, c, d)

	var seen []string
	guard := func(stored *recall.Source) bool {
		seen = append(seen, fmt.Sprintf("%s %d %s", stored.ID, stored.ChunkCount, stored.UpdatedAt.Format(time.RFC3339Nano)))
		return stored.ID != "b.md"
	}
	n, res, err := s.Delete(recall.WithDeleteGuard(ctx, guard), "a.md", "b.md", "empty.md", "missing.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	at := then.Format(time.RFC3339Nano)
	if len(seen) != 3 || seen[0] != "a.md 1 "+at || seen[1] != "b.md 1 "+at || !strings.HasPrefix(seen[2], "empty.md 0 ") {
		t.Errorf("the guard was shown %q; want a.md and b.md at %s and the empty file's record", seen, at)
	}
	if n != 1+1 || len(res.Removed) != 1 {
		t.Errorf("Delete = %d, %d chunks removed; want 2 sources (a.md and the empty record), a.md's chunk", n, len(res.Removed))
	}
	if got, err := s.Source(ctx, "b.md"); err != nil || got.ContentHash != b.Source.ContentHash {
		t.Errorf("b.md, which the guard refused, is %+v, %v", got, err)
	}
	if got := search(t, s, "bravo", recall.Filter{}); !slices.Equal(got, []string{"b.md"}) {
		t.Errorf("bravo is found in %v; want b.md, kept with its chunks", got)
	}
	m, err := s.Manifest(ctx, recall.KindArchive, "/v")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 0 {
		t.Errorf("Manifest of /v = %+v; the empty file's record, let go, is kept", m)
	}

	// A Write's removals ask it too; the documents are written as usual.
	e := doc("e.md", recall.KindArchive, "echo")
	_, err = s.Write(recall.WithDeleteGuard(ctx, func(stored *recall.Source) bool { return stored.ID == "d.md" }),
		[]recall.Document{e}, nil, "c.md", "d.md")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range exportAll(t, s) {
		ids = append(ids, x.Source.ID)
	}
	if !slices.Equal(ids, []string{"b.md", "c.md", "e.md"}) {
		t.Errorf("after a guarded Write that removes c.md and d.md, refusing c.md: %q; want b.md, c.md and e.md", ids)
	}
}

// testWriteGuardRefusedVectors: the vectors a guarded Write carries for a
// document its guard refuses are left out with it. They were written all
// the same: a vector the refused copy brought for a text the kept copy
// holds replaced the stored vector of that text and settled the kept
// source from pending to ok, though a refused document leaves the stored
// source exactly as it was, index state included.
func testWriteGuardRefusedVectors(t *testing.T, s recall.Store) {
	sp := createSpace(t, s, "g", 3)
	kept := doc("memory::k", recall.KindMemory, "alpha", "beta")
	write(t, s, kept)
	// "alpha" has a vector already; "beta" has none: memory::k is pending.
	old := recall.Vector{Space: sp, Key: recall.TextHash("alpha"), Vec: []float32{1, 0, 0}}
	if err := s.PutVectors(ctx, []recall.Vector{old}); err != nil {
		t.Fatal(err)
	}
	if got := indexState(t, s, "memory::k"); got != recall.IndexPending {
		t.Fatalf("memory::k is %q before the guarded write; want pending", got)
	}

	refused := doc("memory::k", recall.KindMemory, "alpha", "beta")
	refused.Source.Title = "an older title"
	vecs := []recall.Vector{
		{Space: sp, Key: recall.TextHash("alpha"), Vec: []float32{0, 1, 0}},
		{Space: sp, Key: recall.TextHash("beta"), Vec: []float32{0, 0, 1}},
	}
	guard := func(*recall.Source, *recall.Document) bool { return false }
	res, err := s.Write(recall.WithWriteGuard(ctx, guard), []recall.Document{refused}, vecs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Added)+len(res.Removed) != 0 {
		t.Errorf("the refused write's result names chunks: %+v", res)
	}
	if got := indexState(t, s, "memory::k"); got != recall.IndexPending {
		t.Errorf("the refused document changed the kept source's index state to %q; want pending, as it was", got)
	}
	got, err := s.VectorsByKey(ctx, sp, hashes("alpha", "beta"))
	if err != nil {
		t.Fatal(err)
	}
	if v := got[recall.TextHash("alpha")]; !slices.Equal(v, old.Vec) {
		t.Errorf("the refused document replaced the stored vector of \"alpha\": %v; was %v", v, old.Vec)
	}
	if v, ok := got[recall.TextHash("beta")]; ok {
		t.Errorf("the refused document stored a vector for \"beta\": %v", v)
	}
}

// testPing: an open store answers a ping; a ping whose caller left fails
// as cancelled, not as a store that is down.
func testPing(t *testing.T, s recall.Store) {
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	wantCode(t, s.Ping(c), recall.ECANCELED, "Ping with a canceled context")
}
