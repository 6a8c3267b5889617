package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// wantBusy checks a LockVault error for a vault held by this process.
func wantBusy(t *testing.T, err error, what string) {
	t.Helper()
	wantCode(t, err, recall.ECONFLICT, what)
	if !errors.Is(err, store.ErrVaultBusy) {
		t.Errorf("%s: %v does not wrap ErrVaultBusy", what, err)
	}
	if pid := fmt.Sprintf("process %d ", os.Getpid()); !strings.Contains(recall.ErrorMessage(err), pid) {
		t.Errorf("%s: %q does not name the holder (%s)", what, recall.ErrorMessage(err), pid)
	}
}

// lockAfterWait takes the lock of vault on s with a wait that reports
// the busy error on waiting; the lock's unlock, or the error, comes on
// done.
func lockAfterWait(ctx context.Context, s recall.Store, vault string) (waiting chan error, done chan func(), failed chan error) {
	waiting, done, failed = make(chan error, 1), make(chan func(), 1), make(chan error, 1)
	go func() {
		unlock, err := s.LockVault(ctx, vault, func(busy error) { waiting <- busy })
		if err != nil {
			failed <- err
			return
		}
		done <- unlock
	}()
	return waiting, done, failed
}

// handOver checks that a waiter for vault's lock on s is told who holds
// it, and gets it once release frees it; it returns the waiter's unlock.
func handOver(t *testing.T, s recall.Store, vault string, release func()) func() {
	t.Helper()
	waiting, done, failed := lockAfterWait(ctx, s, vault)
	wantBusy(t, <-waiting, "the wait's error")
	release()
	select {
	case err := <-failed:
		t.Fatalf("waiting for a released lock: %v", err)
		return nil
	case unlock := <-done:
		return unlock
	}
}

// testVaultLock: one sweep lock per vault and store, refused to a second
// taker, which is told who holds it or waits for it.
func testVaultLock(t *testing.T, s recall.Store, open func(t *testing.T) recall.Store) {
	const one, two = "/vaults/one", "/vaults/två"
	unlock, err := s.LockVault(ctx, one, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.LockVault(ctx, one, nil)
	wantBusy(t, err, "second lock of a held vault")
	unlockTwo, err := s.LockVault(ctx, two, nil)
	if err != nil {
		t.Fatalf("another vault while one is held: %v", err)
	}
	other := open(t)
	defer other.Close()
	unlockOther, err := other.LockVault(ctx, one, nil)
	if err != nil {
		t.Fatalf("the same vault in another store: %v", err)
	}
	unlockOther()

	unlock = handOver(t, s, one, unlock)
	_, err = s.LockVault(ctx, one, nil)
	wantBusy(t, err, "a lock taken after a wait")
	unlock()
	unlock() // a second unlock changes nothing

	// A waiter that gives up neither holds nor keeps waiting.
	c, cancel := context.WithCancel(ctx)
	waiting, _, failed := lockAfterWait(c, s, two)
	<-waiting
	cancel()
	wantCode(t, <-failed, recall.ECANCELED, "a wait canceled")
	unlockTwo()
	unlockTwo, err = s.LockVault(ctx, two, nil)
	if err != nil {
		t.Fatalf("a vault whose waiter gave up: %v", err)
	}
	unlockTwo()
}

// VaultLockShared runs the sweep lock's contract on two handles of one
// store (two processes, or machines, sharing it): a lock taken through one
// is held against the other.
func VaultLockShared(t *testing.T, a, b recall.Store) {
	t.Helper()
	const vault = "/vaults/shared"
	unlock, err := a.LockVault(ctx, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.LockVault(ctx, vault, nil)
	wantBusy(t, err, "a vault held through another handle")
	unlock = handOver(t, b, vault, unlock)
	_, err = a.LockVault(ctx, vault, nil)
	wantBusy(t, err, "a vault taken over by the other handle")
	unlock()
	if unlock, err = a.LockVault(ctx, vault, nil); err != nil {
		t.Fatalf("after the other handle let go: %v", err)
	}
	unlock()
}

// testWritesUnderVaultLock: writes made with a sweep lock's context
// (recall.WithVaultLock) commit while the store holds the lock taken with
// it, and fail, writing nothing, when it does not: another taking's
// context, or the lock released. (A backend whose lock can be lost while
// held, PostgreSQL's with its session, tests that loss on its own.)
func testWritesUnderVaultLock(t *testing.T, s recall.Store) {
	const vault = "/vaults/held"
	held := recall.WithVaultLock(ctx, vault)
	unlock, err := s.LockVault(held, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(held, []recall.Document{doc("a.md", recall.KindArchive, "kept")}, nil); err != nil {
		t.Fatalf("a write under the lock held: %v", err)
	}
	present := func(id string) bool { _, err := s.Source(ctx, id); return err == nil }
	wantLost := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, store.ErrVaultLockLost) {
			t.Errorf("%s: error %v, want one wrapping ErrVaultLockLost", what, err)
		}
		wantCode(t, err, recall.EUNAVAILABLE, what)
	}
	_, err = s.Write(recall.WithVaultLock(ctx, vault), []recall.Document{doc("b.md", recall.KindArchive, "other")}, nil)
	wantLost(err, "a write under a lock never taken with its context")
	unlock()
	_, err = s.Write(held, []recall.Document{doc("c.md", recall.KindArchive, "late")}, nil)
	wantLost(err, "a write after unlock")
	_, _, err = s.Delete(held, "a.md")
	wantLost(err, "a delete after unlock")
	if !present("a.md") || present("b.md") || present("c.md") {
		t.Errorf("a.md, b.md, c.md present: %v %v %v, want only the write under the held lock", present("a.md"), present("b.md"), present("c.md"))
	}
	if _, err := s.Write(ctx, []recall.Document{doc("d.md", recall.KindArchive, "unlocked")}, nil); err != nil {
		t.Errorf("a write outside any lock: %v", err)
	}
}
