//go:build !unix && !windows

package lockfile

import (
	"errors"
	"io/fs"
	"os"
)

const crashLeavesLock = true

// lock creates the file exclusively: without a system lock, the file's
// existence is the lock, and a holder that crashed leaves it behind.
func lock(path, note string, perm os.FileMode) (release func(), holder string, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return nil, noteOf(path), ErrLocked
	}
	if err != nil {
		return nil, "", err
	}
	_, werr := f.WriteString(note + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(path)
		return nil, "", err
	}
	return func() { os.Remove(path) }, "", nil
}
