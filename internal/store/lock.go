package store

import (
	"errors"
	"fmt"
	"os"

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
