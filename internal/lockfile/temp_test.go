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

// What writers of recall before CreateTemp left when killed, the same
// names without a lock file, is removed once it is LegacyAge old and its
// contents are recognised (an empty file only when named after the file
// written now); anything else that looks like it is left alone.
func TestRemoveUnlocked(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-LegacyAge - time.Hour)
	leave := func(name, content string, at time.Time) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	leave(".monday.db.123.partial", "OURS and more", old)     // removed
	leave(".monday.db.123.partial-journal", "journal", old)   // removed with it
	leave(".friday.db.4294967295.partial", "OURS", old)       // removed
	leave(".today.db.77.partial", "", old)                    // empty, named after the file written now: removed
	leave(".tuesday.db.456.partial", "OURS", time.Now())      // written lately: kept
	leave(".wednesday.db.789.partial", "someone else's", old) // not recognised: kept
	leave(".thursday.db.12.partial", "", old)                 // empty, another name: kept
	leave(".held.db.5.partial", "OURS", old)                  // CreateTemp's (lock file beside it): kept
	leave(".held.db.5.partial.lock", "", old)                 //
	leave(".odd.db.12a.partial", "OURS", old)                 // not os.CreateTemp's number: kept
	leave("plain.db.123.partial", "OURS", old)                // not hidden: kept
	leave(".monday.db.123.tmp", "OURS", old)                  // another suffix: kept
	RemoveUnlocked(dir, "today.db", ".partial", LegacyAge, func(head []byte) bool {
		return string(head[:min(4, len(head))]) == "OURS"
	}, "-journal")
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{".held.db.5.partial", ".held.db.5.partial.lock", ".monday.db.123.tmp", ".odd.db.12a.partial",
		".thursday.db.12.partial", ".tuesday.db.456.partial", ".wednesday.db.789.partial", "plain.db.123.partial"}
	if !slices.Equal(names, want) {
		t.Errorf("left %q; want %q", names, want)
	}
}
