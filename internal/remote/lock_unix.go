//go:build unix

package remote

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on p, which the system releases when
// the process ends, however it ends: a crashed run leaves no stale lock.
// The file stays; it holds the id of the last process to lock it.
func lockFile(p string) (unlock func(), holder string, err error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 64))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, holderOf(b), errLocked
		}
		return nil, "", err
	}
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(pidLine()), 0) // only informative
	}
	return func() { f.Close() }, "", nil
}

func staleHint(string) string { return "" }
