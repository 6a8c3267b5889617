package lockfile

import (
	"os"
	"path/filepath"
	"strings"
)

// tempLock is the ending of the lock file beside a file CreateTemp made.
const tempLock = ".lock"

// CreateTemp makes a new file in dir named "."+base+".<random>"+suffix,
// hidden, for the caller to write and then rename or link into place, and
// holds a lock on a file beside it (its name and ".lock") until release,
// which removes the lock file (the caller removes the file itself, or
// renames it). The system releases the lock with its holder, so a process
// killed while it wrote (kill -9, a crash, a power cut) is told from one
// still writing, and RemoveAbandoned, which callers run first, removes
// what it left.
func CreateTemp(dir, base, suffix string) (f *os.File, release func(), err error) {
	f, err = os.CreateTemp(dir, "."+base+".*"+suffix)
	if err != nil {
		return nil, nil, err
	}
	lock, _, err := TryLock(f.Name()+tempLock, "", 0o600)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, nil, err
	}
	lockPath := f.Name() + tempLock
	return f, func() {
		lock.Unlock()
		os.Remove(lockPath)
	}, nil
}

// RemoveAbandoned removes from dir the files CreateTemp made there with
// suffix whose writers ended before they renamed them (their lock files
// held by no process), each with the files named by adding one of also to
// its name (a journal SQLite writes beside it), and their lock files. A
// file still being written, its lock held, is left alone. Failures are not
// reported: the files are only clutter, removed by a later call.
func RemoveAbandoned(dir, suffix string, also ...string) {
	entries, err := os.ReadDir(dir) // not Glob: dir may hold its metacharacters
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, suffix+tempLock) || !e.Type().IsRegular() {
			continue
		}
		l := filepath.Join(dir, name)
		lock, _, err := TryLock(l, "", 0o600)
		if err != nil {
			continue // held: a file being written now
		}
		tmp := strings.TrimSuffix(l, tempLock)
		os.Remove(tmp)
		for _, a := range also {
			os.Remove(tmp + a)
		}
		lock.Unlock()
		os.Remove(l)
	}
}
