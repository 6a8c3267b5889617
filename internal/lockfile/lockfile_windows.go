//go:build windows

package lockfile

import (
	"os"

	"golang.org/x/sys/windows"
)

// errHeld is tryLock's error when another holder has the lock.
const errHeld = windows.ERROR_LOCK_VIOLATION

// lockAt is where the locked byte lies: past any note, since a locked
// range cannot be read by others on Windows, and the note must be.
var lockAt = windows.Overlapped{OffsetHigh: 1}

// tryLock takes an exclusive LockFileEx lock on one byte of the file.
func tryLock(f *os.File) error {
	ol := lockAt
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

// unlock releases the lock before the file is closed: closing alone
// releases it only "when resources allow", and the next holder should
// have it at once.
func unlock(f *os.File) {
	ol := lockAt
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
