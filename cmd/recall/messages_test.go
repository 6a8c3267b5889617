package main

import (
	"path/filepath"
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
