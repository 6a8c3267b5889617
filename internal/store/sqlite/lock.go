package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lockfile"
	"github.com/recall-mcp/recall/internal/store"
)

// LockVault takes the vault's sweep lock: a system file lock (see
// lockfile) on a file beside the database, named by the database and a
// hash of the vault, which every process opening this database file finds
// and which the system releases with the process that held it. The file
// holds the holder's name and stays when released.
//
// The file is named after the database file itself, its symbolic links
// resolved as SQLite resolves them, so that a process that opened the
// database through a link finds the same lock; and it has the database
// file's permissions, so that every user who may write the database may
// take it.
func (db *DB) LockVault(ctx context.Context, vault string, wait func(busy error)) (func(), error) {
	file := db.path
	if p, err := filepath.EvalSymlinks(file); err == nil {
		file = p
	}
	perm := os.FileMode(0o600)
	if fi, err := os.Stat(file); err == nil {
		perm = fi.Mode().Perm()
	}
	sum := sha256.Sum256([]byte(vault))
	path := file + "-sweep-" + hex.EncodeToString(sum[:8]) + ".lock"
	// Made while the database file was read-only, the lock file was too,
	// and would refuse every sweep once the file was writable again.
	matchMode(path, perm)
	for {
		l, holder, err := lockfile.TryLock(path, store.LockHolder(), perm)
		if err == nil {
			return db.hold(ctx, vault, l.Unlock), nil
		}
		if !errors.Is(err, lockfile.ErrLocked) {
			return nil, fmt.Errorf("lock vault %s: %w", vault, err)
		}
		busy := store.VaultBusy(vault, holder)
		if wait == nil {
			return nil, busy
		}
		wait(busy)
		wait = func(error) {}
		t := time.NewTimer(store.VaultLockRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// hold records the lock of vault, taken with ctx, under the context's
// mark (recall.WithVaultLock), and returns its unlock, which forgets it.
// A file lock is held until unlock, so a write under the mark finds it
// unless the holder has let go.
func (db *DB) hold(ctx context.Context, vault string, unlock func()) func() {
	mark := recall.VaultLockOf(ctx)
	if mark == nil || mark.Vault != vault {
		return unlock
	}
	db.locksMu.Lock()
	if db.locks == nil {
		db.locks = map[*recall.VaultLockMark]bool{}
	}
	db.locks[mark] = true
	db.locksMu.Unlock()
	return func() {
		db.locksMu.Lock()
		delete(db.locks, mark)
		db.locksMu.Unlock()
		unlock()
	}
}

// checkVaultLock fails a write made under recall.WithVaultLock when this
// handle does not hold the sweep lock taken with that context.
func (db *DB) checkVaultLock(ctx context.Context) error {
	mark := recall.VaultLockOf(ctx)
	if mark == nil {
		return nil
	}
	db.locksMu.Lock()
	held := db.locks[mark]
	db.locksMu.Unlock()
	if !held {
		return store.VaultLockLost(mark.Vault)
	}
	return nil
}
