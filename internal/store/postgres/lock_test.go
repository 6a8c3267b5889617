package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// terminateLockSession ends the session holding a sweep lock of db's
// database from another connection, as a server restart, a cut connection
// or an administrator would, and waits until the server has let its locks
// go.
func terminateLockSession(db *DB) error {
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE $1`, holderPrefix+"%").Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("terminated %d sweep lock sessions, want 1", n)
	}
	for range 200 {
		var left int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&left); err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the terminated session still holds its sweep lock after 10 s")
}

// TestVaultLockLostFailsWrites: a sweep lock lost with its session (here
// its backend terminated) fails the holder's next write under it, whether
// or not another sweep has taken the lock since, and keeps what it wrote
// before. It was lost silently: the sweep went on writing beside the next.
func TestVaultLockLostFailsWrites(t *testing.T) {
	const vault = "/vaults/lost"
	dsn := pgtest.Server(t)
	a, b := openTest(t, dsn, Options{}), openTest(t, dsn, Options{})
	defer a.Close()
	defer b.Close()
	held := recall.WithVaultLock(ctx, vault)
	unlock, err := a.LockVault(held, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := a.Write(held, []recall.Document{textDoc("first.md", "written under the lock")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := terminateLockSession(a); err != nil {
		t.Fatal(err)
	}
	wantLost := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, store.ErrVaultLockLost) || recall.ErrorCode(err) != recall.EUNAVAILABLE {
			t.Errorf("%s: error %v (%s), want an unavailable one wrapping ErrVaultLockLost", what, err, recall.ErrorCode(err))
		}
	}
	_, err = a.Write(held, []recall.Document{textDoc("second.md", "written after the loss")}, nil)
	wantLost(err, "a write once the lock was lost")

	unlockB, err := b.LockVault(recall.WithVaultLock(ctx, vault), vault, nil)
	if err != nil {
		t.Fatalf("another sweep taking the lost lock: %v", err)
	}
	defer unlockB()
	_, err = a.Write(held, []recall.Document{textDoc("third.md", "written beside the other sweep")}, nil)
	wantLost(err, "a write once another took the lock")
	_, _, err = a.Delete(held, "first.md")
	wantLost(err, "a delete once another took the lock")
	for id, want := range map[string]bool{"first.md": true, "second.md": false, "third.md": false} {
		if _, err := a.Source(ctx, id); (err == nil) != want {
			t.Errorf("%s stored: %v, want %v", id, err == nil, want)
		}
	}
}

// lockKiller is a sweep's writer that ends the sweep lock's session before
// its second write and lets another handle take the lock, as another
// sweep would once the first lost it.
type lockKiller struct {
	db     *DB
	other  *DB
	vault  string
	writes int
	unlock func()
}

func (k *lockKiller) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	k.writes++
	if k.writes == 2 {
		if err := terminateLockSession(k.db); err != nil {
			return recall.WriteResult{}, err
		}
		unlock, err := k.other.LockVault(context.Background(), k.vault, nil)
		if err != nil {
			return recall.WriteResult{}, fmt.Errorf("another sweep taking the lost lock: %w", err)
		}
		k.unlock = unlock
	}
	return k.db.Write(ctx, docs, vecs, remove...)
}

func (k *lockKiller) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	return k.db.Delete(ctx, ids...)
}

// TestSweepStopsWhenLockLost: a sweep whose lock is lost mid-sweep stops
// at its next write with the lock's error, keeping the transactions it
// committed before, instead of sweeping on beside the sweep that took the
// lock.
func TestSweepStopsWhenLockLost(t *testing.T) {
	dsn := pgtest.Server(t)
	a, b := openTest(t, dsn, Options{}), openTest(t, dsn, Options{})
	defer a.Close()
	defer b.Close()
	root := t.TempDir()
	for _, name := range []string{"a.md", "b.md", "c.md", "d.md"} {
		text := "User: what is in " + name + "\n\nAssistant: the conversation of " + name + ".\n"
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vault, err := ingest.VaultPath(root)
	if err != nil {
		t.Fatal(err)
	}
	k := &lockKiller{db: a, other: b, vault: vault}
	_, err = ingest.Sweep(ctx, a, k, root, ingest.Options{Workers: 1, Batch: ingest.BatchLimits{Docs: 1}})
	if k.unlock != nil {
		defer k.unlock()
	}
	if !errors.Is(err, store.ErrVaultLockLost) {
		t.Fatalf("sweep: %v, want its lock's loss", err)
	}
	m, err := a.Manifest(ctx, recall.KindArchive, vault)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || k.writes != 2 {
		t.Errorf("%d sources stored in %d writes, want the first write's alone, and no write after the failed one", len(m), k.writes)
	}
}
