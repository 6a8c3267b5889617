package postgres

import (
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// TestConnectionsCutWhileIdle: once the server has ended the pool's
// connections (pg_terminate_backend, as an administrator, a pooler or a
// restart does), the next reads and writes succeed at the first try on new
// connections, rather than one request per dead connection failing with
// "the database is not reachable".
func TestConnectionsCutWhileIdle(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{MaxConns: 4})
	defer db.Close()
	write := func(n int) error {
		text := fmt.Sprintf("memory %d: tea with oat milk", n)
		_, err := db.Write(ctx, []recall.Document{{Source: recall.Source{ID: fmt.Sprintf("m/%d", n), Kind: recall.KindMemory},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}}, nil)
		return err
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	// Reads side by side, so that the pool holds several connections.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := db.Census(ctx, ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	held := db.pool.Stat().TotalConns()
	if held < 2 {
		t.Fatalf("the pool holds %d connections, want at least 2", held)
	}

	// A connection of its own, not the store's, ends every other one to
	// the database and waits until each is gone.
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var cut int
	// (CASE, as SQL does not promise to test the pid before terminating.)
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND CASE WHEN pid <> pg_backend_pid() THEN pg_terminate_backend(pid, 10000) ELSE false END`).Scan(&cut); err != nil {
		t.Fatal(err)
	}
	if cut < int(held) {
		t.Fatalf("ended %d backends, want the pool's %d", cut, held)
	}

	for i := range held {
		if _, err := db.Census(ctx, ""); err != nil {
			t.Fatalf("read %d after the connections were cut: %v", i+1, err)
		}
	}
	if err := write(1); err != nil {
		t.Fatalf("write after the connections were cut: %v", err)
	}
	// The write went in once.
	if c, err := db.Census(ctx, ""); err != nil || c.Chunks != 2 {
		t.Fatalf("census %+v, %v: want 2 chunks", c, err)
	}
}
