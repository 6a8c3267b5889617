package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/recall-mcp/recall/internal/lockfile"
	"github.com/recall-mcp/recall/internal/store"
)

// waitEvery is how often a waiting LockVault tries again: a file lock
// costs a system call, and nothing tells a waiter when one is released.
const waitEvery = 250 * time.Millisecond

// LockVault takes the vault's sweep lock: a system file lock (see
// lockfile) on a file beside the database, named by the database and a
// hash of the vault, which every process opening this database file finds
// and which the system releases with the process that held it. The file
// holds the holder's name and stays when released.
func (db *DB) LockVault(ctx context.Context, vault string, wait func(busy error)) (func(), error) {
	sum := sha256.Sum256([]byte(vault))
	path := db.path + "-sweep-" + hex.EncodeToString(sum[:8]) + ".lock"
	for {
		l, holder, err := lockfile.TryLock(path, store.LockHolder())
		if err == nil {
			return l.Unlock, nil
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
		t := time.NewTimer(waitEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
