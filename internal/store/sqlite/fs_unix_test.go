//go:build unix

package sqlite

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/recall-mcp/recall"
)

// A database on a disk with no room left cannot even be read: every
// connection maps a few kilobytes beside the file (its -shm index). Open
// says that the disk is full, where it said "disk I/O error (4874)". The
// full disk is a file size limit (RLIMIT_FSIZE) in a process of the test
// binary of its own: the -shm cannot grow past it, as on a full disk
// (SQLITE_IOERR_SHMSIZE); the database is written before, without it.
func TestOpenOnAFullDisk(t *testing.T) {
	if path := os.Getenv("RECALL_TEST_FULL_DISK_DB"); path != "" {
		lim := &syscall.Rlimit{Cur: 1024, Max: 1024}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, lim); err != nil {
			t.Fatal(err)
		}
		_, err := Open(ctx, path, Options{Check: CheckOnRead})
		t.Logf("open: %s %s", recall.ErrorCode(err), recall.ErrorMessage(err))
		if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(recall.ErrorMessage(err), "the disk holding the database is full") {
			t.Errorf("open on a full disk: %v; want the disk said to be full", err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note_a", "kept on a full disk")}, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenOnAFullDisk$", "-test.v")
	cmd.Env = append(os.Environ(), "RECALL_TEST_FULL_DISK_DB="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestOpenOnAFullDisk") {
		t.Errorf("the process with a full disk did not open as asked:\n%s", out)
	}
}

// A command run while the database file was read-only leaves the files
// SQLite and the sweep lock make beside it (-wal, -shm, the vault's lock)
// read-only too, since they are made with the file's mode; once the file
// was writable again, every write was still refused ("the database file
// may not be written") and every sweep could not open its lock. Opening
// the database, and taking the lock, give them the file's mode again.
// Root writes any file, so what is checked is the mode they are left with.
func TestFilesMadeWhileReadOnlyAreWritableAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	vault := t.TempDir()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	// What a command on the read-only file leaves: its readers cannot
	// remove the log and its index, and its sweep made the vault's lock.
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := ro.LockVault(ctx, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := ro.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := sql.Open("sqlite", ro.dsnMode("mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	locks, _ := filepath.Glob(path + "-sweep-*.lock")
	leftovers := append([]string{path + "-wal", path + "-shm"}, locks...)
	for _, f := range leftovers {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o444 {
			t.Fatalf("%s: %v %v; want it left read-only, as the file was", filepath.Base(f), fi, err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	unlock, err = db.LockVault(ctx, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for _, f := range leftovers {
		if fi, err := os.Stat(f); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v once the database file is writable again; want the file's, 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
	c.Close()
	ro.Close()
}
