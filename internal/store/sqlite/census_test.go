package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// TestCensusSeesAnotherConnection writes through a second handle on the same
// file, as another process would, and checks that the first handle's census
// follows each write, while a census with no write in between is served
// from the last one.
func TestCensusSeesAnotherConnection(t *testing.T) {
	a, b := openTwo(t)

	c0, err := a.Census(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if c0.Chunks != 0 {
		t.Fatalf("empty store: %+v", c0)
	}
	doc := recall.Document{Source: recall.Source{ID: "x.md", Kind: recall.KindArchive, ContentHash: "h"},
		Chunks: []recall.Chunk{{Text: "one", Hash: recall.TextHash("one")}, {Index: 1, Text: "two", Hash: recall.TextHash("two")}}}
	if _, err := b.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	c1, err := a.Census(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if c1.Chunks != 2 || c1.MaxChunkID == 0 {
		t.Fatalf("after another connection wrote 2 chunks: %+v", c1)
	}
	genBefore := a.gen.Load()
	if again, err := a.Census(ctx, ""); err != nil || again != c1 {
		t.Fatalf("census without writes: %+v, %v; want %+v", again, err, c1)
	}
	if a.gen.Load() != genBefore {
		t.Error("a census with no commit in between invalidated the document-frequency cache")
	}
	if _, _, err := b.Delete(ctx, "x.md"); err != nil {
		t.Fatal(err)
	}
	c2, err := a.Census(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if c2.Chunks != 0 || a.gen.Load() == genBefore {
		t.Errorf("after another connection deleted everything: %+v (cache generation moved: %v)", c2, a.gen.Load() != genBefore)
	}
}

// TestCensusAfterClose: a closed store refuses a census rather than open a
// connection of its own again.
func TestCensusAfterClose(t *testing.T) {
	db := openTest(t, Options{})
	if _, err := db.Census(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Census(ctx, ""); err == nil {
		t.Error("Census after Close succeeded")
	}
	if db.watch.db != nil || db.watch.conn != nil {
		t.Error("Census after Close opened a connection")
	}
}

// TestPanicInUpdateRollsBack: an Update whose function panics leaves no
// transaction open on the one write connection; the next write works.
func TestPanicInUpdateRollsBack(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	func() {
		defer func() { recover() }()
		db.Update(ctx, "m/k", func(*recall.Document) (*recall.Document, error) { panic("boom") })
	}()
	doc := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, ContentHash: "h"},
		Chunks: []recall.Chunk{{Text: "one", Hash: recall.TextHash("one")}}}
	done := make(chan error, 1)
	go func() { _, err := db.Write(ctx, []recall.Document{doc}, nil); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after a panicking Update: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a write after a panicking Update hung: the write connection is still inside its transaction")
	}
}

// TestWriterBusyTimeoutSurvivesReconnect: a canceled statement can make
// database/sql replace the write connection with a new one, opened with the
// DSN's busy timeout; writes set theirs back to 0 (they poll, see begin).
func TestWriterBusyTimeoutSurvivesReconnect(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	db.rw.ExecContext(cctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000) SELECT count(*) FROM n`)
	doc := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, ContentHash: "h"},
		Chunks: []recall.Chunk{{Text: "one", Hash: recall.TextHash("one")}}}
	if _, err := db.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	var ms int
	if err := db.rw.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	if ms != 0 {
		t.Errorf("the write connection's busy timeout is %d ms after a canceled statement and a write; want 0", ms)
	}
}
