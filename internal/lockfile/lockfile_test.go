package lockfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Two locks of one file in one process exclude each other, as two
// processes' do, and the second is told the first's note.
func TestTryLockInProcess(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	a, _, err := TryLock(p, "first holder", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, holder, err := TryLock(p, "second", 0o600); !errors.Is(err, ErrLocked) || holder != "first holder" {
		t.Fatalf("second lock while held: holder %q, err %v", holder, err)
	}
	other, _, err := TryLock(filepath.Join(filepath.Dir(p), "y.lock"), "other", 0o600)
	if err != nil {
		t.Fatalf("another file: %v", err)
	}
	other.Unlock()
	a.Unlock()
	a.Unlock() // harmless
	b, _, err := TryLock(p, "second", 0o600)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	b.Unlock()
}

// holderEnv names the lock file a child process (this test binary, run
// as TestHolderProcess) locks.
const holderEnv = "LOCKFILE_TEST_HOLD"

// TestHolderProcess is the child of TestLockDiesWithProcess: it takes the
// lock, says so, and waits to be killed.
func TestHolderProcess(t *testing.T) {
	p := os.Getenv(holderEnv)
	if p == "" {
		t.Skip("run by TestLockDiesWithProcess")
	}
	if _, _, err := TryLock(p, fmt.Sprintf("process %d", os.Getpid()), 0o600); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	// Not select {}: with nothing else to wake it the runtime takes that
	// for a deadlock and ends the process at once, releasing the lock.
	time.Sleep(time.Hour)
}

// A lock held by another process excludes this one, names that process,
// and is released when the process is killed (SIGKILL: no chance to clean
// up).
func TestLockDiesWithProcess(t *testing.T) {
	if CrashLeavesLock {
		t.Skip("no system file lock here: a crashed holder leaves its lock")
	}
	p := filepath.Join(t.TempDir(), "x.lock")
	cmd := startChild(t, "TestHolderProcess", holderEnv+"="+p, "locked")
	want := fmt.Sprintf("process %d", cmd.Process.Pid)
	if _, holder, err := TryLock(p, "parent", 0o600); !errors.Is(err, ErrLocked) || holder != want {
		t.Fatalf("lock held by a child: holder %q, err %v; want %q", holder, err, want)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	l, _, err := TryLock(p, "parent", 0o600)
	if err != nil {
		t.Fatalf("lock of a killed process: %v", err)
	}
	l.Unlock()
}

// startChild runs this test binary's test named test in a child process
// with env added to this one's, and waits for it to print ready; the child
// is killed when the test ends, if it has not been already.
func startChild(t *testing.T, test, env, ready string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != ready+"\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	return cmd
}
