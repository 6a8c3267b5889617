//go:build unix

package sqlite

import (
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
