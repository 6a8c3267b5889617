package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// failReading makes the sweeps of the rest of the test fail to read the
// folder rel of root, as they would if it were unreadable: running as root,
// as CI does, permissions cannot make it so.
func failReading(t *testing.T, root, rel string) {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(rel))
	t.Cleanup(func() { walkDir = filepath.WalkDir })
	walkDir = func(r string, fn fs.WalkDirFunc) error {
		return filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path != dir {
				return fn(path, d, err)
			}
			// filepath.WalkDir calls fn on entering a folder, then again
			// with the error when the folder cannot be listed.
			if err := fn(path, d, nil); err != nil {
				return err
			}
			return fn(path, d, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission})
		})
	}
}

// A folder the sweep cannot read is a failure, never a folder whose files
// are all gone: --prune must keep their sources, and still remove what is
// really gone.
func TestSweepUnreadableFolderIsNotPruned(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "keep.md", convA)
	write(t, root, "deleted.md", convB)
	write(t, root, "locked/a.md", convA+"\nlocked a")
	write(t, root, "locked/deep/b.txt", convB+"\nlocked b")
	write(t, root, "locked/claude.json", export)
	sweep(t, st, root, Options{})
	before := sourceIDs(t, st, root)

	os.Remove(filepath.Join(root, "deleted.md"))
	failReading(t, root, "locked")
	res, log := sweep(t, st, root, Options{Prune: true})
	if res.FilesFailed != 1 || !strings.Contains(log, "\tfailed\tlocked\tpermission denied: recall cannot read it (give the user") {
		t.Errorf("the unreadable folder is not reported, with what to do: %+v %q", res, log)
	}
	if strings.Contains(log, root) {
		t.Errorf("the log repeats the folder's absolute path: %q", log)
	}
	if res.FilesRemoved != 1 || res.Removed[0] != "deleted.md" {
		t.Errorf("removed %v, want only deleted.md", res.Removed)
	}
	var want []string
	for _, id := range before {
		if id != "deleted.md" {
			want = append(want, id)
		}
	}
	if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sources after pruning with an unreadable folder: %v, want %v", got, want)
	}
}

// The same with real permissions, where the test can drop them.
func TestSweepPermissionDeniedFolderIsNotPruned(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("permissions do not stop this user reading a folder (TestSweepUnreadableFolderIsNotPruned covers it)")
	}
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "locked/a.md", convA)
	sweep(t, st, root, Options{})
	locked := filepath.Join(root, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	res, _ := sweep(t, st, root, Options{Prune: true})
	if res.FilesFailed != 1 || res.FilesRemoved != 0 || len(sourceIDs(t, st, root)) != 1 {
		t.Errorf("unreadable folder: %+v, sources %v", res, sourceIDs(t, st, root))
	}
}

// Files whose names make one source id are each a failure; the rest of the
// vault is swept, and a source they share keeps what it had.
func TestSweepFilesWithOneSourceID(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip(`a file name cannot hold \ on Windows`)
	}
	colliding := func(t *testing.T, root string) {
		write(t, root, `a\b.md`, convB+"\nbackslash")
		write(t, root, "cafe\u0301.md", convB+"\nnfd")
	}
	check := func(t *testing.T, res Result, log string, changed int) {
		t.Helper()
		if res.FilesFailed != 4 || res.FilesChanged != changed || res.FilesRemoved != 0 {
			t.Errorf("%+v", res)
		}
		for _, name := range []string{`"a\\b.md"`, `"a/b.md"`, `"caf\u00e9.md"`, `"cafe\u0301.md"`} {
			if !strings.Contains(log, name) {
				t.Errorf("the failure log does not name %s: %s", name, log)
			}
		}
	}

	t.Run("new", func(t *testing.T) {
		st := openStore(t)
		root := t.TempDir()
		write(t, root, "a/b.md", convA)
		write(t, root, "café.md", convA+"\nnfc")
		colliding(t, root)
		write(t, root, "other.md", convB)
		res, log := sweep(t, st, root, Options{})
		check(t, res, log, 1)
		if got := sourceIDs(t, st, root); strings.Join(got, ",") != "other.md" {
			t.Errorf("sources %v, want other.md alone", got)
		}
	})

	t.Run("stored", func(t *testing.T) {
		st := openStore(t)
		root := t.TempDir()
		write(t, root, "a/b.md", convA)
		write(t, root, "café.md", convA+"\nnfc")
		sweep(t, st, root, Options{})
		colliding(t, root)
		for range 2 {
			res, log := sweep(t, st, root, Options{Prune: true})
			check(t, res, log, 0)
		}
		want := []string{"a/b.md", "café.md"}
		if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("sources %v, want %v", got, want)
		}
		if got := content(t, st); strings.Contains(got, "backslash") || strings.Contains(got, "nfd") {
			t.Errorf("a colliding file was written over the source:\n%s", got)
		}
	})
}

// A colon in a file name is no drive letter: such files are swept like
// any other.
func TestSweepColonInFileName(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a file name cannot hold : on Windows")
	}
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "1:1 with Bob.md", convA)
	write(t, root, "Q:A session.md", convB)
	write(t, root, "t/C:.md", convB+"\nc")
	if res, log := sweep(t, st, root, Options{}); res.FilesChanged != 3 || res.FilesFailed != 0 {
		t.Fatalf("%+v %s", res, log)
	}
	want := []string{"1:1 with Bob.md", "Q:A session.md", "t/C:.md"}
	if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sources %v, want %v", got, want)
	}
}

// A failure is one line of the log, whatever the file's name holds: a line
// break in it forged a second record, and bytes that are not UTF-8 were
// written as they were. Such a name is quoted.
func TestSweepFailureLogOneLinePerFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a file name cannot hold a line break on Windows")
	}
	st := openStore(t)
	root := t.TempDir()
	forged := "bad\n2099-01-01T00:00:00Z\tsummary\tforged.md"
	latin1 := "caf\xe9.md"
	write(t, root, forged, "hi\n")
	write(t, root, latin1, "hi\n")
	_, log := sweep(t, st, root, Options{})
	if n := strings.Count(log, "\n"); n != 2 || !utf8.ValidString(log) {
		t.Errorf("two failures gave %d lines (valid UTF-8: %v):\n%s", n, utf8.ValidString(log), log)
	}
	for _, name := range []string{forged, latin1} {
		if !strings.Contains(log, "\tfailed\t"+strconv.Quote(name)+"\t") {
			t.Errorf("the log does not name %q quoted:\n%s", name, log)
		}
	}
}

// A failure's reason leaves out the name its log line gives already.
func TestFailureReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "read", Path: "/home/ann/vault/a.md", Err: errors.New("input/output error")}, "read: input/output error"},
		{fmt.Errorf("a.md: line 3: malformed JSON"), "line 3: malformed JSON"},
		{fmt.Errorf("b.md: line 3"), "b.md: line 3"},
		{fmt.Errorf("walk: %w", &fs.PathError{Op: "open", Path: "/v/a.md", Err: fs.ErrPermission}), "permission denied: recall cannot read it (give the user recall runs as read access to it, or move it out of the vault)"},
	} {
		if got := FailureReason("a.md", c.err); got != c.want {
			t.Errorf("FailureReason(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A vault that holds no file at all (a disk not mounted, a mistyped
// folder) is not pruned: the sweep fails and every source stays, until
// PruneEmpty says it was emptied on purpose. A vault with one file left
// is pruned as always.
func TestPruneRefusesAnEmptyVault(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "a.md", convA)
	write(t, root, "b/c.md", convB)
	sweep(t, st, root, Options{})
	before := sourceIDs(t, st, root)
	os.RemoveAll(filepath.Join(root, "a.md"))
	os.RemoveAll(filepath.Join(root, "b"))
	// A dry run says what the sweep would say: it had listed the files
	// as "--prune would remove them".
	for _, dry := range []bool{true, false} {
		_, err := Sweep(context.Background(), st, st, root, Options{Prune: true, DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "holds no files now, but 2 files were swept from it before") {
			t.Fatalf("an empty vault pruned (dry run %v): %v", dry, err)
		}
	}
	if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Errorf("the refused prune removed sources: %v, want %v", got, before)
	}
	if res, _ := sweep(t, st, root, Options{Prune: true, PruneEmpty: true}); res.FilesRemoved != 2 || len(sourceIDs(t, st, root)) != 0 {
		t.Errorf("with PruneEmpty: %+v, left %v", res, sourceIDs(t, st, root))
	}
}
