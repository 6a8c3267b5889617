package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/recall-mcp/recall"
)

// ErrVaultBusy is wrapped by LockVault's error when another holder has
// the vault's sweep lock, so that a caller can tell that conflict from
// others (recall sweep --no-wait exits with a status of its own).
var ErrVaultBusy = errors.New("the vault's sweep lock is held")

// VaultBusy is LockVault's error for a vault whose sweep lock is held by
// holder (as LockHolder named it; "" when unknown).
func VaultBusy(vault, holder string) error {
	if holder != "" {
		holder = " (" + holder + ")"
	}
	return recall.WrapError(recall.ECONFLICT, ErrVaultBusy, "another sweep of %s into this database is running%s", vault, holder)
}

// ErrVaultLockLost is wrapped by the error of a write made under
// recall.WithVaultLock once the store no longer holds that vault's sweep
// lock.
var ErrVaultLockLost = errors.New("the vault's sweep lock was lost")

// VaultLockLost is the error of a write made under the sweep lock of vault
// once the store no longer holds it: the write stored nothing, and the
// sweep stops there, as another may be sweeping the vault by now.
func VaultLockLost(vault string) error {
	return recall.WrapError(recall.EUNAVAILABLE, ErrVaultLockLost,
		"the sweep lock of %s is no longer held (the database session holding it ended: a server restart, a lost connection, a terminated backend), so another sweep may hold it: the sweep stopped before its next write, keeping what it had committed; sweep again", vault)
}

// LockHolder names this process to another that finds a lock it holds:
// "process 1234 on hostname". The host matters on PostgreSQL, whose
// clients may be on several machines.
func LockHolder() string {
	host, err := os.Hostname()
	if err != nil {
		host = "an unknown host"
	}
	return fmt.Sprintf("process %d on %s", os.Getpid(), host)
}

// VaultLockRetry is how often a LockVault that waits tries the lock again.
// Trying costs a system call or a statement; a wait blocked in the lock
// instead (pg_advisory_lock) outlived a client interrupted meanwhile, its
// session left queued on the server holding a connection slot.
const VaultLockRetry = 250 * time.Millisecond
