package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// vaultLockClass is the first key of every vault's sweep lock. Sweep locks
// use advisory locks' two-key form, a key space apart from the one-key
// locks of writes and migrations (writerLock, migrateLock), so no vault
// can ever hash onto those.
const vaultLockClass int32 = 0x7265_6361 // "reca"

// holderPrefix starts the application_name of a sweep lock's session, so
// that another process finding the lock held can name its holder.
const holderPrefix = "recall sweep, "

// vaultLockKey is the second key of a vault's sweep lock: 31 bits of a
// hash of its path (positive, as pg_locks shows keys as oids). Two vaults
// of one store whose hashes collide would only be swept one at a time.
func vaultLockKey(vault string) int32 {
	sum := sha256.Sum256([]byte(vault))
	return int32(binary.BigEndian.Uint32(sum[:4]) & 0x7fff_ffff)
}

// LockVault takes the vault's sweep lock: a session-level advisory lock
// on a connection of its own, outside the pool, held until unlock. The
// server releases it when that session ends, so with a holder that was
// killed at once, and with one whose machine or network failed once TCP
// keepalives give up on it (about 2.5 minutes, asked for here rather than
// the system's usual 2 hours). A holder whose session ends mid-sweep (a
// server restart, a cut connection, its backend terminated) loses the
// lock, and another sweep may take it: the holder's writes made under
// recall.WithVaultLock then fail (checkVaultLock), so it stops before its
// next write instead of writing beside the other.
func (db *DB) LockVault(ctx context.Context, vault string, wait func(busy error)) (func(), error) {
	cfg := db.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = holderPrefix + store.LockHolder()
	// No statement or lock timeout configured for the role applies to
	// the lock's statements.
	cfg.RuntimeParams["statement_timeout"] = "0"
	cfg.RuntimeParams["lock_timeout"] = "0"
	cfg.RuntimeParams["tcp_keepalives_idle"] = "60"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "10"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectErr(ctx, db.where, err, "", cfg.Password)
	}
	closeConn := func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(c)
	}
	// Nor an idle session timeout: the session idles while the sweep
	// parses and embeds, and ending it would let the lock go. Set by
	// statement, as a server before PostgreSQL 14 has no
	// idle_session_timeout and refuses a connection that names it.
	if _, err := conn.Exec(ctx, `SELECT set_config(name, '0', false) FROM pg_settings
		WHERE name IN ('idle_session_timeout', 'idle_in_transaction_session_timeout')`); err != nil {
		closeConn()
		return nil, db.fail(ctx, err, "lock vault %s", vault)
	}
	key := vaultLockKey(vault)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, vaultLockClass, key).Scan(&ok); err != nil {
		closeConn()
		return nil, db.fail(ctx, err, "lock vault %s", vault)
	}
	if !ok {
		busy := store.VaultBusy(vault, vaultHolder(ctx, conn, key))
		if wait == nil {
			closeConn()
			return nil, busy
		}
		wait(busy)
		// Tried again and again rather than waited for in one statement:
		// a client interrupted while the server blocked in
		// pg_advisory_lock left its session queued there.
		t := time.NewTicker(store.VaultLockRetry)
		defer t.Stop()
		for !ok {
			select {
			case <-ctx.Done():
				closeConn()
				return nil, ctx.Err()
			case <-t.C:
			}
			if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, vaultLockClass, key).Scan(&ok); err != nil {
				closeConn()
				return nil, db.fail(ctx, err, "wait for the sweep lock of %s", vault)
			}
		}
	}
	mark := recall.VaultLockOf(ctx)
	if mark != nil && mark.Vault != vault {
		mark = nil // a mark for another vault's lock
	}
	if mark != nil {
		// The session holding the lock, as writes under the mark check
		// it: by process id and start, as a later session may be given
		// the same process id.
		held := heldLock{key: key}
		if err := conn.QueryRow(ctx, `SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()`).
			Scan(&held.pid, &held.start); err != nil {
			closeConn()
			return nil, db.fail(ctx, err, "lock vault %s", vault)
		}
		db.locksMu.Lock()
		db.locks[mark] = held
		db.locksMu.Unlock()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			db.locksMu.Lock()
			delete(db.locks, mark)
			db.locksMu.Unlock()
			// Unlocked before the session ends: the server ends a session
			// after its client has gone, and the next holder should not find
			// the lock still held meanwhile.
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn.Exec(c, `SELECT pg_advisory_unlock($1, $2)`, vaultLockClass, key)
			closeConn()
		})
	}, nil
}

// heldLock is a sweep lock a DB holds: its key and the session holding it.
type heldLock struct {
	key   int32
	pid   int32
	start time.Time
}

// checkVaultLock fails a write made under recall.WithVaultLock when this
// handle no longer holds the sweep lock taken with that context: released,
// or lost with its session, which nothing tells the holder of (the
// session idles while the sweep parses and embeds). It runs in the
// write's transaction right before the commit, under the writer lock: a
// sweep that took the lock since writes after this write commits, as it
// would had the lock been lost a moment later.
func (db *DB) checkVaultLock(ctx context.Context, tx pgx.Tx) error {
	mark := recall.VaultLockOf(ctx)
	if mark == nil {
		return nil
	}
	vault := mark.Vault
	db.locksMu.Lock()
	held, ok := db.locks[mark]
	db.locksMu.Unlock()
	if !ok {
		return store.VaultLockLost(vault)
	}
	err := tx.QueryRow(ctx, `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = $1::int8::oid AND l.objid = $2::int8::oid AND l.objsubid = 2 AND l.granted
		  AND l.pid = $3 AND a.backend_start = $4`, int64(vaultLockClass), int64(held.key), held.pid, held.start).Scan(new(int))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.VaultLockLost(vault)
	}
	if err != nil {
		return fmt.Errorf("check the sweep lock of %s: %w", vault, err)
	}
	return nil
}

// vaultHolder names the process holding the sweep lock of key in this
// database, from its session's application_name ("" when unknown: the
// holder is not recall, or let go meanwhile).
func vaultHolder(ctx context.Context, conn *pgx.Conn, key int32) string {
	var name string
	err := conn.QueryRow(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = $1::int8::oid AND l.objid = $2::int8::oid AND l.objsubid = 2 AND l.granted
		LIMIT 1`, int64(vaultLockClass), int64(key)).Scan(&name)
	if err != nil || !strings.HasPrefix(name, holderPrefix) {
		return ""
	}
	return strings.TrimPrefix(name, holderPrefix)
}
