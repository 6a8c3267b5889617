//go:build unix || windows

package lockfile

import (
	"errors"
	"os"
)

const crashLeavesLock = false

// lock takes the system's exclusive lock on the file (tryLock), which it
// releases when the file is closed, and so when the process ends.
func lock(path, note string, perm os.FileMode) (release func(), holder string, err error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, "", err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		f.Chmod(perm) // the umask took some away; only the creator may, and need, give them back
	}
	if err := tryLock(f); err != nil {
		holder := readNote(f)
		f.Close()
		if errors.Is(err, errHeld) {
			return nil, holder, ErrLocked
		}
		return nil, "", err
	}
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(note+"\n"), 0) // only informative
	}
	return func() {
		unlock(f)
		f.Close()
	}, "", nil
}
