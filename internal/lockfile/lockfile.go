// Package lockfile takes exclusive locks on files, released by the
// operating system when the holder ends, however it ends: a process that
// crashed or was killed never leaves a lock behind (except where the
// system offers no file lock; see CrashLeavesLock). A lock file holds a
// note from its holder (who it is), which the next one to try is told.
package lockfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrLocked is TryLock's answer when another holder has the lock.
var ErrLocked = errors.New("locked")

// CrashLeavesLock is true where the system offers no file lock that dies
// with its process (neither Unix nor Windows): a lock is then the file's
// existence, and a holder that crashed leaves it until the file is
// deleted.
const CrashLeavesLock = crashLeavesLock

// Lock is a held lock.
type Lock struct {
	path    string
	release func()
	once    sync.Once
}

// held is the lock files this process holds. The systems' locks belong to
// an open file (flock, LockFileEx), so two opens in one process exclude
// each other as two processes do; but where flock is emulated with
// per-process record locks they would not, and the answer should not
// depend on the system: a second lock in the process is refused here.
var held = struct {
	sync.Mutex
	paths map[string]bool
}{paths: map[string]bool{}}

// TryLock takes the lock on the file at path, creating it with permissions
// perm (beyond the umask, as SQLite gives a database's -wal and -shm files
// the database's own: every user who may write the database must be able
// to take its locks), and writes note into it. When another holder, in
// this process or another, has the lock, it returns ErrLocked and that
// holder's note ("" when unknown).
func TryLock(path, note string, perm os.FileMode) (*Lock, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	held.Lock()
	if held.paths[abs] {
		held.Unlock()
		return nil, noteOf(abs), ErrLocked
	}
	held.paths[abs] = true
	held.Unlock()
	release, holder, err := lock(abs, note, perm)
	if err != nil {
		forget(abs)
		return nil, holder, err
	}
	return &Lock{path: abs, release: release}, "", nil
}

// Busy words a refusal to run while another holder has the lock at path,
// whose note is its process id: who holds it (" (process 123)", or "" when
// unknown) and, where a holder that crashed leaves the lock behind, how to
// clear it (", or delete PATH if no <what> is running").
func Busy(path, holder, what string) (who, stale string) {
	if holder != "" {
		who = " (process " + holder + ")"
	}
	if CrashLeavesLock {
		stale = ", or delete " + path + " if no " + what + " is running"
	}
	return who, stale
}

// Unlock releases the lock; only its first call does anything. The file
// stays: deleting it could let two holders lock two different files of
// one name.
func (l *Lock) Unlock() {
	l.once.Do(func() {
		l.release()
		forget(l.path)
	})
}

func forget(path string) {
	held.Lock()
	delete(held.paths, path)
	held.Unlock()
}

// noteOf reads the note of the lock file at path.
func noteOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return readNote(f)
}

func readNote(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 256))
	return strings.TrimSpace(string(b))
}
