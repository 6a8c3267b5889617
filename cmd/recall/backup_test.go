package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `recall backup FILE` writes a database that opens as it is (vectors
// included, unlike an export), refuses to replace a file, and needs FILE.
func TestBackupCommand(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "note_a", "the lighthouse keeper's log"); code != 0 {
		t.Fatal(errs)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if _, errs, code := run(t, env, "backup", path); code != 0 || !strings.HasPrefix(errs, "backed up to "+path) {
		t.Fatalf("backup: exit %d %q", code, errs)
	}
	if out, errs, code := run(t, env, "--db", path, "memory", "get", "note_a"); code != 0 || !strings.Contains(out, "lighthouse") {
		t.Errorf("the backup's memory: exit %d %q %q", code, out, errs)
	}
	if out, errs, code := run(t, env, "--db", path, "stats"); code != 0 || !strings.Contains(out, "1 vector, 0 missing") {
		t.Errorf("the backup's vectors: exit %d %q %q", code, out, errs)
	}
	if _, errs, code := run(t, env, "backup", path); code != exitFailure || !strings.Contains(errs, "exists: a backup never replaces a file") {
		t.Errorf("a backup onto an existing file: exit %d %q", code, errs)
	}
	if _, errs, code := run(t, env, "backup"); code != exitUsage || !strings.Contains(errs, "backup takes the FILE") {
		t.Errorf("backup without FILE: exit %d %q", code, errs)
	}
}
