//go:build unix

package lockfile

import (
	"os"
	"syscall"
)

// errHeld is tryLock's error when another holder has the lock.
const errHeld = syscall.EWOULDBLOCK

// tryLock takes an exclusive flock, which belongs to the open file: two
// opens exclude each other, in one process too.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlock does nothing: closing the file releases its flock at once.
func unlock(*os.File) {}
