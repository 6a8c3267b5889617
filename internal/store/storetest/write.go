package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

func testRoundTrip(t *testing.T, s recall.Store) {
	created := time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)
	d := doc("2025/07/tea.md", recall.KindArchive, "first passage about mint", "second passage", "third")
	d.Source.Vault = "/vaults/main"
	d.Source.Title = "Tea talk"
	d.Source.Date = "2025-07-14"
	d.Source.MTime = 1752480000000000000
	d.Source.CreatedAt = created
	d.Chunks[1].Header = "Tea talk, 2025-07-14"
	d.Chunks[2].MidWord = true
	res := write(t, s, d)
	if len(res.Added) != 3 || len(res.Removed) != 0 {
		t.Fatalf("first write: %d added, %d removed; want 3, 0", len(res.Added), len(res.Removed))
	}
	for i, c := range res.Added {
		want := recall.SourceMeta{ID: d.Source.ID, Kind: recall.KindArchive, Title: "Tea talk", Date: "2025-07-14"}
		if c.Hash != d.Chunks[i].Hash || c.VectorKey != d.Chunks[i].VectorKey() || c.Source != want {
			t.Errorf("Added[%d] = %+v; want hash %s, vector key %s and source %+v", i, c, d.Chunks[i].Hash, d.Chunks[i].VectorKey(), want)
		}
	}

	got, err := s.Source(ctx, d.Source.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := d.Source
	want.ChunkCount = 3
	if !sameTime(got.CreatedAt, created) {
		t.Errorf("CreatedAt = %v; want %v", got.CreatedAt, created)
	}
	if got.UpdatedAt.IsZero() {
		t.Error("UpdatedAt is zero; the store sets it when the writer does not")
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want {
		t.Errorf("Source = %+v\nwant %+v", got, want)
	}

	chunks, err := s.Chunks(ctx, d.Source.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 3 {
		t.Fatalf("Chunks: %d; want 3", len(chunks))
	}
	for i, c := range chunks {
		if c.Chunk != d.Chunks[i] {
			t.Errorf("chunk %d = %+v; want %+v", i, c.Chunk, d.Chunks[i])
		}
		if c.ID != res.Added[i].ID || c.Source.ID != d.Source.ID || c.Source.Title != "Tea talk" {
			t.Errorf("chunk %d: id %d source %+v; want id %d of %s", i, c.ID, c.Source, res.Added[i].ID, d.Source.ID)
		}
	}
	mid, err := s.Chunks(ctx, d.Source.ID, 1, 1)
	if err != nil || len(mid) != 1 || mid[0].Index != 1 {
		t.Errorf("Chunks(1, 1) = %+v, %v; want chunk 1 only", mid, err)
	}

	// ChunksByID keeps the order asked for and leaves out unknown ids.
	ids := []int64{chunks[2].ID, 999999, chunks[0].ID}
	byID, err := s.ChunksByID(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != 2 || byID[0].ID != chunks[2].ID || byID[1].ID != chunks[0].ID || byID[0].Text != "third" {
		t.Errorf("ChunksByID(%v) = %+v", ids, byID)
	}

	// A memory keeps its body verbatim, and its owner and category.
	m := doc("tea-preference", recall.KindMemory, "prefers mint tea, no sugar")
	m.Source.Body = "prefers mint tea, no sugar\n"
	m.Source.Owner, m.Source.Category = "alice", "preference"
	write(t, s, m)
	gm, err := s.Source(ctx, m.Source.ID)
	if err != nil {
		t.Fatal(err)
	}
	if gm.Body != m.Source.Body || gm.Owner != "alice" || gm.Category != "preference" || gm.Kind != recall.KindMemory {
		t.Errorf("memory = %+v", gm)
	}

	// A source may have no chunks at all.
	empty := doc("empty-memory", recall.KindMemory)
	write(t, s, empty)
	if got, err := s.Source(ctx, "empty-memory"); err != nil || got.ChunkCount != 0 {
		t.Errorf("empty source: %+v, %v", got, err)
	}
	if cs, err := s.Chunks(ctx, "empty-memory", 0, 10); err != nil || len(cs) != 0 {
		t.Errorf("Chunks of an empty source = %v, %v; want none", cs, err)
	}
}

func testValidation(t *testing.T, s recall.Store) {
	good := doc("a.md", recall.KindArchive, "text")
	cases := []struct {
		name string
		d    recall.Document
	}{
		{"unclean archive id", doc("x//a.md", recall.KindArchive, "text")},
		{"absolute archive id", doc("/etc/passwd", recall.KindArchive, "text")},
		{"escaping archive id", doc("../a.md", recall.KindArchive, "text")},
		{"empty memory id", doc("", recall.KindMemory, "text")},
		{"unknown kind", doc("x", "note", "text")},
		{"bad date", withSource(good, func(s *recall.Source) { s.Date = "2025-13" })},
		{"bad date form", withSource(good, func(s *recall.Source) { s.Date = "July 2025" })},
		{"bad index state", withSource(good, func(s *recall.Source) { s.IndexState = "done" })},
		{"hash mismatch", func() recall.Document {
			d := doc("a.md", recall.KindArchive, "text")
			d.Chunks[0].Hash = recall.TextHash("other")
			return d
		}()},
		{"index gap", func() recall.Document {
			d := doc("a.md", recall.KindArchive, "one", "two")
			d.Chunks[1].Index = 2
			return d
		}()},
		{"index order", func() recall.Document {
			d := doc("a.md", recall.KindArchive, "one", "two")
			d.Chunks[0], d.Chunks[1] = d.Chunks[1], d.Chunks[0]
			return d
		}()},
	}
	for _, c := range cases {
		_, err := s.Write(ctx, []recall.Document{c.d}, nil)
		wantCode(t, err, recall.EINVALID, c.name)
	}
	_, err := s.Write(ctx, []recall.Document{good, good}, nil)
	wantCode(t, err, recall.EINVALID, "same id twice in one write")
	if st, err := s.Stats(ctx); err != nil || st.Chunks != 0 {
		t.Errorf("after refused writes: %d chunks, %v; want 0", st.Chunks, err)
	}
}

func testWriteIsAtomic(t *testing.T, s recall.Store) {
	first := doc("a.md", recall.KindArchive, "valid text")
	bad := doc("b.md", recall.KindArchive, "text")
	bad.Chunks[0].Hash = "0000"
	if _, err := s.Write(ctx, []recall.Document{first, bad}, nil); err == nil {
		t.Fatal("Write with an invalid document succeeded")
	}
	if _, err := s.Source(ctx, "a.md"); !recall.IsNotFound(err) {
		t.Errorf("valid document of a failed write: %v; want not found", err)
	}

	// A failure inside the transaction (a vector for a missing space) also
	// leaves nothing behind.
	_, err := s.Write(ctx, []recall.Document{first},
		[]recall.Vector{{Space: "nope", Key: first.Chunks[0].Hash, Vec: []float32{1}}})
	if err == nil {
		t.Fatal("Write with a vector for a missing space succeeded")
	}
	if _, err := s.Source(ctx, "a.md"); !recall.IsNotFound(err) {
		t.Errorf("document of a failed write: %v; want not found", err)
	}
	if got := search(t, s, "valid", recall.Filter{}); len(got) != 0 {
		t.Errorf("full-text index holds a failed write: %v", got)
	}
}

func testReplaceShrinkAndGrow(t *testing.T, s recall.Store) {
	id := "notes.md"
	write(t, s, doc(id, recall.KindArchive, "alpha apple", "beta banana", "gamma grape", "delta date"))
	before := snapshot(t, s)
	res := write(t, s, doc(id, recall.KindArchive, "alpha apple", "beta banana"))
	checkResult(t, before, snapshot(t, s), res)
	if len(res.Removed) != 2 || len(res.Added) != 0 {
		t.Errorf("shrink: removed %v, added %d; want 2 removed, none added", res.Removed, len(res.Added))
	}
	chunks, err := s.Chunks(ctx, id, 0, 100)
	if err != nil || len(chunks) != 2 {
		t.Fatalf("after shrink: %d chunks, %v; want 2", len(chunks), err)
	}
	for _, word := range []string{"grape", "date", "gamma"} {
		if got := search(t, s, word, recall.Filter{}); len(got) != 0 {
			t.Errorf("%q, only in a removed chunk, still matches %v", word, got)
		}
	}
	if got := search(t, s, "banana", recall.Filter{}); len(got) != 1 {
		t.Errorf("banana matches %v; want the kept chunk", got)
	}
	if src, _ := s.Source(ctx, id); src.ChunkCount != 2 {
		t.Errorf("ChunkCount = %d; want 2", src.ChunkCount)
	}

	before = snapshot(t, s)
	res = write(t, s, doc(id, recall.KindArchive, "alpha apple", "beta banana", "epsilon elderberry", "zeta zucchini", "eta eggplant"))
	checkResult(t, before, snapshot(t, s), res)
	if len(res.Added) != 3 || len(res.Removed) != 0 {
		t.Errorf("grow: added %d, removed %v; want 3, none", len(res.Added), res.Removed)
	}
	if got := search(t, s, "zucchini", recall.Filter{}); len(got) != 1 {
		t.Errorf("zucchini matches %v; want the new chunk", got)
	}
	if got := search(t, s, "grape", recall.Filter{}); len(got) != 0 {
		t.Errorf("grape matches %v after regrowing", got)
	}
}

func testUnchangedChunksKeepIDs(t *testing.T, s recall.Store) {
	d := doc("chat.md", recall.KindArchive, "one fish", "two fish", "red fish", "blue fish")
	first := write(t, s, d)

	// The same content again (a touched file): nothing changes for indexes.
	again := d
	again.Source.MTime = 42
	again.Source.Size = 99
	before := snapshot(t, s)
	res := write(t, s, again)
	checkResult(t, before, snapshot(t, s), res)
	if len(res.Added) != 0 || len(res.Removed) != 0 {
		t.Errorf("rewriting identical chunks: %+v; want an empty result", res)
	}
	if src, _ := s.Source(ctx, "chat.md"); src.MTime != 42 || src.Size != 99 {
		t.Errorf("metadata not updated: mtime %d size %d", src.MTime, src.Size)
	}

	// One chunk edited: only it is replaced; the others keep their ids.
	edited := doc("chat.md", recall.KindArchive, "one fish", "two fish", "old fish", "blue fish")
	before = snapshot(t, s)
	res = write(t, s, edited)
	after := snapshot(t, s)
	checkResult(t, before, after, res)
	if len(res.Removed) != 1 || res.Removed[0] != first.Added[2].ID {
		t.Errorf("Removed = %v; want [%d]", res.Removed, first.Added[2].ID)
	}
	if len(res.Added) != 1 || res.Added[0].Hash != recall.TextHash("old fish") {
		t.Errorf("Added = %+v; want the new text of chunk 2", res.Added)
	}
	for _, i := range []int{0, 1, 3} {
		if _, ok := after[first.Added[i].ID]; !ok {
			t.Errorf("unchanged chunk %d lost its id %d", i, first.Added[i].ID)
		}
	}

	// A mid-word flag may change without a new id.
	edited.Chunks[1].MidWord = true
	before = snapshot(t, s)
	res = write(t, s, edited)
	checkResult(t, before, snapshot(t, s), res)
	chunks, _ := s.Chunks(ctx, "chat.md", 0, 1)
	if len(res.Added) != 0 || len(res.Removed) != 0 || len(chunks) != 2 || !chunks[1].MidWord {
		t.Errorf("mid-word flag changed: %+v, chunks %+v; want the flag updated in place", res, chunks)
	}

	// A new header is a new vector key, since the header is embedded with
	// the text: the chunk gets a new id, so that an index learns its key
	// (checkResult), and the vector of its old key goes with it.
	space := createSpace(t, s, "sp", 2)
	putVecs(t, s, space, "one fish")
	edited.Chunks[0].Header = "new header"
	before = snapshot(t, s)
	res = write(t, s, edited)
	checkResult(t, before, snapshot(t, s), res)
	key := recall.VectorKey("new header", recall.TextHash("one fish"))
	if len(res.Removed) != 1 || res.Removed[0] != first.Added[0].ID || len(res.Added) != 1 || res.Added[0].VectorKey != key {
		t.Errorf("new header: %+v; want chunk %d replaced by one of key %s", res, first.Added[0].ID, key)
	}
	if chunks, _ := s.Chunks(ctx, "chat.md", 0, 0); len(chunks) != 1 || chunks[0].Header != "new header" {
		t.Errorf("header not updated: %+v", chunks)
	}
	if vecs, err := s.VectorsByKey(ctx, space, []string{recall.TextHash("one fish"), key}); err != nil || len(vecs) != 0 {
		t.Errorf("vectors after a new header: %v, %v; want none (the old key's is gone, the new one is not made)", vecs, err)
	}
}

func testMetadataChangeRenewsChunks(t *testing.T, s recall.Store) {
	m := doc("project-x", recall.KindMemory, "the launch is in march")
	m.Source.Owner, m.Source.Category = "alice", "project"
	write(t, s, m)
	for _, edit := range []func(*recall.Source){
		func(s *recall.Source) { s.Category = "work" },
		func(s *recall.Source) { s.Owner = "bob" },
		func(s *recall.Source) { s.Title = "Project X" },
		func(s *recall.Source) { s.Date = "2025-03" },
	} {
		edit(&m.Source)
		before := snapshot(t, s)
		res := write(t, s, m)
		// checkResult requires the index to learn the new attributes.
		checkResult(t, before, snapshot(t, s), res)
	}
	if got := search(t, s, "Project X", recall.Filter{}); len(got) != 1 {
		t.Errorf("the new title does not match: %v", got)
	}
}

func testKindCannotChange(t *testing.T, s recall.Store) {
	write(t, s, doc("shared-name", recall.KindArchive, "archived text"))
	_, err := s.Write(ctx, []recall.Document{doc("shared-name", recall.KindMemory, "memory text")}, nil)
	wantCode(t, err, recall.ECONFLICT, "writing a memory over an archive source")
	if src, _ := s.Source(ctx, "shared-name"); src.Kind != recall.KindArchive {
		t.Errorf("kind = %s; want archive kept", src.Kind)
	}
}

func testDelete(t *testing.T, s recall.Store) {
	space := createSpace(t, s, "sp", 2)
	a := doc("a.md", recall.KindArchive, "shared passage", "only in alpha")
	b := doc("b.md", recall.KindArchive, "shared passage", "only in beta")
	write(t, s, a, b)
	putVecs(t, s, space, "shared passage", "only in alpha", "only in beta")

	before := snapshot(t, s)
	n, res, err := s.Delete(ctx, "a.md", "missing.md")
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, before, snapshot(t, s), res)
	if n != 1 || len(res.Removed) != 2 || len(res.Added) != 0 {
		t.Errorf("Delete = %d, %+v; want 1 source and its 2 chunks", n, res)
	}
	checkAlphaGone(t, s, space, "a.md", "b.md")
	if n, _, err := s.Delete(ctx, "a.md"); err != nil || n != 0 {
		t.Errorf("deleting again = %d, %v; want 0, nil", n, err)
	}
}

// A write that also removes sources (a sweep's last piece of an export
// and the conversations the export no longer holds) does both in its one
// transaction: all or nothing, and a vector a removed chunk shared with a
// chunk written beside it stays.
func testWriteRemoves(t *testing.T, s recall.Store) {
	space := createSpace(t, s, "sp", 2)
	a := doc("e.json/a", recall.KindArchive, "shared passage", "only in alpha")
	b := doc("e.json/b", recall.KindArchive, "only in beta")
	write(t, s, a, b)
	putVecs(t, s, space, "shared passage", "only in alpha", "only in beta")
	c := doc("e.json/c", recall.KindArchive, "shared passage", "only in gamma")

	// Refused: an id both written and removed, and a failure inside the
	// transaction (a vector for a missing space) removes nothing.
	before := snapshot(t, s)
	_, err := s.Write(ctx, []recall.Document{c}, nil, "e.json/a", "e.json/c")
	wantCode(t, err, recall.EINVALID, "a source written and removed in one write")
	if _, err := s.Write(ctx, []recall.Document{c},
		[]recall.Vector{{Space: "nope", Key: c.Chunks[1].Hash, Vec: []float32{1, 0}}}, "e.json/a"); err == nil {
		t.Fatal("Write with a vector for a missing space succeeded")
	}
	if after := snapshot(t, s); len(after) != len(before) {
		t.Fatalf("refused writes left %d chunks; want the %d before", len(after), len(before))
	}
	if _, err := s.Source(ctx, "e.json/a"); err != nil {
		t.Fatalf("a source a failed write was to remove: %v", err)
	}

	res, err := s.Write(ctx, []recall.Document{c}, nil, "e.json/a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, before, snapshot(t, s), res)
	if len(res.Removed) != 2 || len(res.Added) != 2 {
		t.Errorf("Write = %+v; want a's 2 chunks removed and c's 2 added", res)
	}
	checkAlphaGone(t, s, space, "e.json/a", "e.json/c")
	if m, err := s.Manifest(ctx, recall.KindArchive, ""); err != nil || len(m) != 2 {
		t.Errorf("manifest %v, %v; want e.json/b and e.json/c", m, err)
	}
	// Removing alone is a write too.
	if res, err := s.Write(ctx, nil, nil, "e.json/b"); err != nil || len(res.Removed) != 1 {
		t.Errorf("a write that only removes = %+v, %v; want b's chunk removed", res, err)
	}
	if _, err := s.Source(ctx, "e.json/b"); !recall.IsNotFound(err) {
		t.Errorf("removed source: %v; want not found", err)
	}
}

// checkAlphaGone checks that the source gone, which held "shared passage"
// and "only in alpha", is gone with its text and its vector, while holder
// holds the shared passage and keeps its vector, as "only in beta" keeps
// its own.
func checkAlphaGone(t *testing.T, s recall.Store, space, gone, holder string) {
	t.Helper()
	if _, err := s.Source(ctx, gone); !recall.IsNotFound(err) {
		t.Errorf("removed source: %v; want not found", err)
	}
	if got := search(t, s, "alpha", recall.Filter{}); len(got) != 0 {
		t.Errorf("removed text still matches: %v", got)
	}
	if got := search(t, s, "shared", recall.Filter{}); !sameSet(got, []string{holder}) {
		t.Errorf("shared text matches %v; want %s", got, holder)
	}
	vecs, err := s.VectorsByKey(ctx, space, hashes("shared passage", "only in alpha", "only in beta"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vecs[recall.TextHash("only in alpha")]; ok {
		t.Error("the removed text's vector survived")
	}
	if len(vecs) != 2 {
		t.Errorf("%d vectors left; want the shared one and beta's", len(vecs))
	}
}

func testUpdateConcurrentAppends(t *testing.T, s recall.Store) {
	const workers, appends = 6, 5
	id := "diary/2025-07-14"
	var wg sync.WaitGroup
	errs := make(chan error, workers*appends)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appends {
				_, err := s.Update(ctx, id, func(cur *recall.Document) (*recall.Document, error) {
					lines := []string{}
					if cur != nil {
						lines = strings.Split(cur.Source.Body, "\n")
					}
					lines = append(lines, fmt.Sprintf("entry w%d-%d", w, i))
					d := doc(id, recall.KindDiary, lines...)
					d.Source.Body = strings.Join(lines, "\n")
					d.Source.Date = "2025-07-14"
					return &d, nil
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Update: %v", err)
	}
	src, err := s.Source(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(src.Body, "\n"); len(lines) != workers*appends {
		t.Errorf("diary holds %d entries; want %d (an update was lost)", len(lines), workers*appends)
	}
	if src.ChunkCount != workers*appends {
		t.Errorf("ChunkCount = %d; want %d", src.ChunkCount, workers*appends)
	}
}

func testUpdateAbort(t *testing.T, s recall.Store) {
	write(t, s, doc("k", recall.KindMemory, "original value"))
	boom := errors.New("boom")
	if _, err := s.Update(ctx, "k", func(cur *recall.Document) (*recall.Document, error) {
		if cur == nil || cur.Source.Body != "original value" || len(cur.Chunks) != 1 {
			t.Errorf("Update sees %+v; want the stored document", cur)
		}
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Errorf("Update returned %v; want fn's error", err)
	}
	res, err := s.Update(ctx, "k", func(cur *recall.Document) (*recall.Document, error) { return nil, nil })
	if err != nil || len(res.Added)+len(res.Removed) != 0 {
		t.Errorf("no-op Update = %+v, %v", res, err)
	}
	if _, err := s.Update(ctx, "k", func(cur *recall.Document) (*recall.Document, error) {
		d := doc("other", recall.KindMemory, "x")
		return &d, nil
	}); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("Update returning another id: %v; want EINVALID", err)
	}
	if src, _ := s.Source(ctx, "k"); src.Body != "original value" {
		t.Errorf("body = %q after aborted updates", src.Body)
	}
	var sawNil bool
	if _, err := s.Update(ctx, "new-key", func(cur *recall.Document) (*recall.Document, error) {
		sawNil = cur == nil
		d := doc("new-key", recall.KindMemory, "created by update")
		return &d, nil
	}); err != nil || !sawNil {
		t.Errorf("Update of a missing id: err %v, saw nil %t", err, sawNil)
	}
	if _, err := s.Source(ctx, "new-key"); err != nil {
		t.Errorf("source created by Update: %v", err)
	}
}

func testSourceNotFound(t *testing.T, s recall.Store) {
	_, err := s.Source(ctx, "missing")
	wantCode(t, err, recall.ENOTFOUND, "Source of a missing id")
	_, err = s.Chunks(ctx, "missing", 0, 10)
	wantCode(t, err, recall.ENOTFOUND, "Chunks of a missing id")
	// An id no source can have (a NUL or invalid UTF-8, as a request may
	// hold) is missing too, not a database error, and deleting it deletes
	// nothing.
	write(t, s, doc("a.md", recall.KindArchive, "mint tea"))
	for _, id := range []string{"a\x00.md", "a\xff.md"} {
		_, err = s.Source(ctx, id)
		wantCode(t, err, recall.ENOTFOUND, fmt.Sprintf("Source(%q)", id))
		_, err = s.Chunks(ctx, id, 0, 10)
		wantCode(t, err, recall.ENOTFOUND, fmt.Sprintf("Chunks(%q)", id))
	}
	if n, _, err := s.Delete(ctx, "a\x00.md", "a\xff.md", "a.md"); n != 1 || err != nil {
		t.Errorf("Delete of two ids no source can have and a.md = %d, %v; want 1", n, err)
	}
}

func testManifest(t *testing.T, s recall.Store) {
	a := doc("a.md", recall.KindArchive, "a")
	a.Source.Vault, a.Source.MTime, a.Source.Reading, a.Source.Zone = "/v1", 11, 3, "zone-1"
	a.Source.UpdatedAt = time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)
	b := doc("b.md", recall.KindArchive, "b")
	b.Source.Vault = "/v2"
	m := doc("mem", recall.KindMemory, "m")
	write(t, s, a, b, m)
	got, err := s.Manifest(ctx, recall.KindArchive, "/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := recall.SourceState{Size: a.Source.Size, MTime: 11, ContentHash: a.Source.ContentHash, Reading: 3, Zone: "zone-1", Chunks: 1,
		UpdatedAt: a.Source.UpdatedAt}
	if len(got) != 1 || got["a.md"] != want {
		t.Errorf("Manifest = %+v; want a.md %+v only", got, want)
	}
	// A sweep compares the reading a file was made with to its own.
	if src, err := s.Source(ctx, "a.md"); err != nil || src.Reading != 3 {
		t.Errorf("Source(a.md).Reading = %d, %v; want 3", src.Reading, err)
	}
	// And the zone its date was made in (recall.Source.Zone).
	if src, err := s.Source(ctx, "a.md"); err != nil || src.Zone != "zone-1" {
		t.Errorf("Source(a.md).Zone = %q, %v; want zone-1", src.Zone, err)
	}
	a.Source.Reading, a.Source.Zone = 4, ""
	write(t, s, a)
	if got, _ := s.Manifest(ctx, recall.KindArchive, "/v1"); got["a.md"].Reading != 4 || got["a.md"].Zone != "" {
		t.Errorf("Manifest after a rewrite at reading 4 with no zone = %+v", got["a.md"])
	}
	c := doc("c.md", recall.KindArchive, "c") // through /ingest: no vault
	write(t, s, c)
	vaults, err := s.Vaults(ctx, recall.KindArchive)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vaults, []string{"", "/v1", "/v2"}) {
		t.Errorf("Vaults = %q; want \"\", /v1 and /v2", vaults)
	}
	if vaults, _ := s.Vaults(ctx, recall.KindDiary); len(vaults) != 0 {
		t.Errorf("Vaults of a kind with no sources = %q", vaults)
	}
}

// testFileWithoutConversation: an archive source without chunks, which a
// sweep writes for a vault file that holds no conversation so that the
// next sweep can skip the file while it is unchanged, is in the manifest
// alone: Source, Chunks, ListSources, Stats, Export and a write guard see
// no source there. Written over with chunks it is a source like any
// other, and written over a source it hides it, chunks and all.
func testFileWithoutConversation(t *testing.T, s recall.Store) {
	empty := recall.Document{Source: recall.Source{ID: "notes/empty.md", Kind: recall.KindArchive, Vault: "/v",
		Size: 2, MTime: 7, Reading: 3, IndexState: recall.IndexOK, UpdatedAt: time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)}}
	a := doc("notes/a.md", recall.KindArchive, "quince jam sets in twenty minutes")
	a.Source.Vault = "/v"
	mem := doc("empty-memory", recall.KindMemory) // not archive: shown, chunks or not
	write(t, s, empty, a, mem)

	m, err := s.Manifest(ctx, recall.KindArchive, "/v")
	if err != nil {
		t.Fatal(err)
	}
	want := recall.SourceState{Size: 2, MTime: 7, Reading: 3, UpdatedAt: empty.Source.UpdatedAt}
	if len(m) != 2 || m["notes/empty.md"] != want || m["notes/a.md"].Chunks != 1 {
		t.Errorf("Manifest = %+v; want notes/empty.md %+v and notes/a.md with 1 chunk", m, want)
	}
	shown := func(what string, wantIDs ...string) {
		t.Helper()
		_, err := s.Source(ctx, "notes/empty.md")
		wantCode(t, err, recall.ENOTFOUND, what+": Source of the file without a conversation")
		_, err = s.Chunks(ctx, "notes/empty.md", 0, 10)
		wantCode(t, err, recall.ENOTFOUND, what+": Chunks of the file without a conversation")
		for _, f := range []recall.Filter{{}, {SourcePrefix: "notes/"}, {Kinds: []recall.Kind{recall.KindArchive}}} {
			page, _, err := s.ListSources(ctx, recall.ListOptions{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, src := range page {
				if src.Kind == recall.KindArchive {
					ids = append(ids, src.ID)
				}
			}
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("%s: ListSources(%+v) lists the archive sources %q; want %q", what, f, ids, wantIDs)
			}
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Sources[recall.KindArchive] != len(wantIDs) || st.Sources[recall.KindMemory] != 1 {
			t.Errorf("%s: Stats counts %v sources; want %d archive, 1 memory", what, st.Sources, len(wantIDs))
		}
		var exported []string
		if err := s.Export(ctx, func(d recall.Document) error {
			if d.Source.Kind == recall.KindArchive {
				exported = append(exported, d.Source.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(exported, wantIDs) {
			t.Errorf("%s: Export holds the archive sources %q; want %q", what, exported, wantIDs)
		}
	}
	shown("written", "notes/a.md")

	// A write guard (import --keep-newer) is told the store holds nothing
	// under the id: there is no conversation to keep.
	var told []*recall.Source
	gctx := recall.WithWriteGuard(ctx, func(stored *recall.Source, d *recall.Document) bool {
		told = append(told, stored)
		return false
	})
	if _, err := s.Write(gctx, []recall.Document{doc("notes/empty.md", recall.KindArchive, "x")}, nil); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] != nil {
		t.Errorf("the guard was told %+v; want nil, no source", told)
	}

	// The file gains a conversation: it is a source.
	e := doc("notes/empty.md", recall.KindArchive, "now it holds a line")
	e.Source.Vault = "/v"
	write(t, s, e)
	if src, err := s.Source(ctx, "notes/empty.md"); err != nil || src.ChunkCount != 1 {
		t.Errorf("Source once it holds a conversation: %+v, %v", src, err)
	}
	page, _, _ := s.ListSources(ctx, recall.ListOptions{Filter: recall.Filter{SourcePrefix: "notes/"}})
	if len(page) != 2 {
		t.Errorf("ListSources once the file holds a conversation: %+v; want both notes", page)
	}

	// And loses it: its chunks go, and it is hidden again.
	a.Source.Size, a.Source.ContentHash, a.Chunks = 0, "", nil
	write(t, s, a)
	if cands, err := s.Lexical(ctx, recall.LexicalQuery{Text: "quince", Limit: 5}); err != nil || len(cands) != 0 {
		t.Errorf("full text of a source written over without chunks: %v, %v; want nothing", cands, err)
	}
	if _, err := s.Source(ctx, "notes/a.md"); recall.ErrorCode(err) != recall.ENOTFOUND {
		t.Errorf("Source of a source written over without chunks: %v; want not found", err)
	}
	if m, _ := s.Manifest(ctx, recall.KindArchive, "/v"); m["notes/a.md"].Chunks != 0 || len(m) != 2 {
		t.Errorf("Manifest after notes/a.md lost its conversation: %+v", m)
	}

	// Delete removes it, as a sweep does once its file is gone.
	if n, _, err := s.Delete(ctx, "notes/a.md"); err != nil || n != 1 {
		t.Errorf("Delete = %d, %v; want 1", n, err)
	}
	if m, _ := s.Manifest(ctx, recall.KindArchive, "/v"); len(m) != 1 {
		t.Errorf("Manifest after the delete: %+v; want notes/empty.md alone", m)
	}
}
