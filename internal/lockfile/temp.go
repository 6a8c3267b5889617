package lockfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
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

// LegacyAge is how long a file RemoveUnlocked recognises must have gone
// unmodified to be taken as abandoned: a writer rewrites its file as it
// goes, so one untouched for a day is no longer written.
const LegacyAge = 24 * time.Hour

// RemoveUnlocked removes from dir what writers killed before CreateTemp
// existed left there: files they made with os.CreateTemp's pattern
// "."+name+".<digits>"+suffix and no lock, which nothing can tell from a
// file still being written but its age. It removes only such a file that
// has no lock file beside it (CreateTemp's, held or not: RemoveAbandoned's
// to judge), was last modified at least age ago, and whose first bytes
// ours recognises as what the caller writes (an empty file, as a writer
// killed before its first write left it, only when named after base, the
// file the caller writes now), with the files named by adding one of also
// to its name. Failures are not reported, as in RemoveAbandoned.
func RemoveUnlocked(dir, base, suffix string, age time.Duration, ours func(head []byte) bool, also ...string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := legacyName(e.Name(), suffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		tmp := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(tmp + tempLock); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < age {
			continue
		}
		if fi.Size() == 0 && name != base || fi.Size() > 0 && !ours(head(tmp)) {
			continue
		}
		os.Remove(tmp)
		for _, a := range also {
			os.Remove(tmp + a)
		}
	}
}

// legacyName reports whether file is named as os.CreateTemp names a file
// made with the pattern "."+name+".*"+suffix (the * a decimal number), and
// returns name.
func legacyName(file, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(file, ".")
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, suffix); !ok {
		return "", false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot < 1 {
		return "", false
	}
	digits := rest[dot+1:]
	if digits == "" || len(digits) > 20 || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	return rest[:dot], true
}

// head returns the first bytes of the file at path (at most 64), nil
// when it cannot be read.
func head(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 64)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}
