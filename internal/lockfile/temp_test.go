package lockfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// tempEnv names the folder a child process (this test binary, run as
// TestTempWriterProcess) makes a temporary file in.
const tempEnv = "LOCKFILE_TEST_TEMP"

// TestTempWriterProcess is the child of TestRemoveAbandoned: it makes a
// temporary file with a journal beside it, writes it, says so, and waits
// to be killed.
func TestTempWriterProcess(t *testing.T) {
	dir := os.Getenv(tempEnv)
	if dir == "" {
		t.Skip("run by TestRemoveAbandoned")
	}
	f, release, err := CreateTemp(dir, "backup.db", ".partial")
	if err == nil {
		// Kept reachable: the lock is its open file's, which the
		// garbage collector would close, as it would a writer's.
		defer release()
		_, err = f.WriteString("half a copy")
	}
	if err == nil {
		err = os.WriteFile(f.Name()+"-journal", []byte("its journal"), 0o600)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("writing")
	// Not select {}: with nothing else to wake it the runtime takes that
	// for a deadlock and ends the process at once, releasing the lock.
	time.Sleep(time.Hour)
}

// What a writer killed (SIGKILL) while it wrote a CreateTemp file left, the
// file, what was named after it and its lock file, is removed by
// RemoveAbandoned; a file still being written, by this process, is left
// alone, and so is a file of another suffix.
func TestRemoveAbandoned(t *testing.T) {
	if CrashLeavesLock {
		t.Skip("no system file lock here: a crashed holder leaves its lock")
	}
	dir := t.TempDir()
	cmd := startChild(t, "TestTempWriterProcess", tempEnv+"="+dir, "writing")
	live, release, err := CreateTemp(dir, "other.db", ".partial")
	if err != nil {
		t.Fatal(err)
	}
	live.Close()
	if err := os.WriteFile(filepath.Join(dir, ".export.jsonl.1.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".export.jsonl.1.tmp.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		var out []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	RemoveAbandoned(dir, ".partial", "-journal")
	if n := len(names()); n != 7 {
		t.Fatalf("a file being written was removed: %q", names())
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	RemoveAbandoned(dir, ".partial", "-journal")
	base := filepath.Base(live.Name())
	want := []string{".export.jsonl.1.tmp", ".export.jsonl.1.tmp.lock", base, base + ".lock"}
	if got := names(); !slices.Equal(got, want) {
		t.Errorf("after the writer was killed the folder holds %q; want %q", got, want)
	}
	release()
	os.Remove(live.Name())
	if got := names(); len(got) != 2 {
		t.Errorf("after release: %q", got)
	}
}
