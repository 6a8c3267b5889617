package main

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A failure says what failed in the user's terms, once: the file they
// named, not the step that failed and the system call under it ("open
// sweep log: open sweep.log: permission denied", "config: open X: …") or
// a hidden file they never named ("back up to X: open DIR/.X.123.partial:
// …"), nor a driver's chain over several lines.
func TestFailuresNameWhatTheUserGave(t *testing.T) {
	env := emptyStore(t)
	// A folder that is not there, another for each command: one that
	// made it would hide the next one's failure.
	missing := func(name string) string { return filepath.Join(t.TempDir(), "no", "such", name) }
	vault := t.TempDir()
	sweepLog, remoteLog, cfg, backup := missing("sweep.log"), missing("sweep.log"), missing("config"), missing("copy.db")
	for _, c := range []struct {
		args []string
		errs string
		code int
	}{
		{[]string{"sweep", "--log", sweepLog, vault},
			"recall: cannot write the sweep's failure log " + sweepLog + ": no such file or directory (--log FILE puts it elsewhere)\n", exitFailure},
		{[]string{"sweep", "--remote", "http://127.0.0.1:1", "--log", remoteLog, vault},
			"recall: cannot write the sweep's failure log " + remoteLog + ": no such file or directory (--log FILE puts it elsewhere)\n", exitFailure},
		{[]string{"--config", cfg, "stats"}, "recall: config file " + cfg + ": no such file or directory\n", exitUsage},
		// pgx's error: a chain over three lines, the refusal said twice.
		{[]string{"--db", "postgres://u:s3cret@127.0.0.1:1/x", "stats"},
			"recall: cannot connect to PostgreSQL at 127.0.0.1:1/x: connection refused\n", exitFailure},
		{[]string{"backup", backup},
			"recall: back up to " + backup + ": the folder " + filepath.Dir(backup) + " does not exist (create it first)\n", exitFailure},
	} {
		out, errs, code := run(t, env, c.args...)
		if code != c.code || out != "" || errs != c.errs {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errs, c.code, c.errs)
		}
	}
}

// A model's failure and a queries file that cannot be read are said in
// the user's terms: repair said "embed: ollama failed …", space create
// "probe ollama/m: …" (and left an empty database behind), and eval
// --queries DIR "read DIR: is a directory".
func TestModelAndQueryFailuresSayWhatFailed(t *testing.T) {
	var down atomic.Bool
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "model-a", srv.URL

	// The service does not know the model: nothing is made.
	_, errs, code := run(t, env, "--embedder", "ollama", "--model", "nosuch", "space", "create", "b")
	if want := `recall: cannot use ollama/nosuch (asked for the size of its vectors): ollama does not know the model "nosuch"`; code != exitFailure ||
		!strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
		t.Errorf("space create: exit %d, stderr %q; want exit 1 and %q", code, errs, want)
	}
	if _, err := os.Stat(env["RECALL_DB"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("space create of a model the service does not know made the database (%v)", err)
	}

	if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-a", "space", "create", "a"); code != 0 {
		t.Fatal(errs)
	}
	noModel := map[string]string{}
	maps.Copy(noModel, env)
	noModel["RECALL_EMBEDDER"] = "none"
	if _, errs, code := run(t, noModel, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	down.Store(true)
	_, errs, code = run(t, env, "repair")
	if want := "recall: repair of space a stopped (the next run resumes at chunk 0): ollama/model-a could not embed the texts: ollama failed (HTTP 500"; code != exitFailure ||
		!strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
		t.Errorf("repair: exit %d, stderr %q; want exit 1 and %q", code, errs, want)
	}

	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "queries.jsonl")
	for _, c := range []struct{ queries, errs string }{
		{dir, "recall: the queries file " + dir + " is a folder: --queries takes a FILE.jsonl\n"},
		{missing, "recall: cannot read the queries file " + missing + ": no such file or directory\n"},
	} {
		for _, cmd := range []string{"eval", "search"} {
			out, errs, code := run(t, env, cmd, "--queries", c.queries)
			if code != exitFailure || out != "" || errs != c.errs {
				t.Errorf("%s --queries %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", cmd, c.queries, code, out, errs, c.errs)
			}
		}
	}
	for _, c := range []struct{ file, errs string }{
		{dir, "recall: the export file " + dir + " is a folder: give the file `recall export` wrote\n"},
		{missing, "recall: cannot read the export file " + missing + ": no such file or directory\n"},
	} {
		out, errs, code := run(t, env, "import", c.file)
		if code != exitFailure || out != "" || errs != c.errs {
			t.Errorf("import %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.file, code, out, errs, c.errs)
		}
	}
}
