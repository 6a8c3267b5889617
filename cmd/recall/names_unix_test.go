//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file whose name cannot be a source id (bytes that are not UTF-8, a
// tab) fails with a log line that says to rename it: "source id is not
// valid UTF-8" spoke of an id the user never chose. The other files are
// swept.
func TestFileNamesThatCannotBeStoredSayToRename(t *testing.T) {
	env := testEnv(t)
	vault := t.TempDir()
	for _, name := range []string{"caf\xe9.md", "tab\there.md", "fine.md"} {
		if err := os.WriteFile(filepath.Join(vault, name), []byte("**User:** hi\n\n**Assistant:** hello\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, errs, code := run(t, env, "sweep", vault)
	if code != exitFailure {
		t.Fatalf("sweep: exit %d, want 1: %s", code, errs)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(env["RECALL_DB"]), "sweep.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\"caf\\xe9.md\"\tits name cannot be stored (source id is not valid UTF-8): rename the file\n",
		"\"tab\\there.md\"\tits name cannot be stored (source id contains the control character U+0009): rename the file\n",
		"changed=1 ",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("sweep.log lacks %q:\n%s", want, log)
		}
	}
}
