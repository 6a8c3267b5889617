package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A database an older recall wrote (here: schema versions 6 and 7 taken
// off, which rebuild from what is stored) is left as it is by check and
// backup, whose copy is the way back to that recall; a dry run, which
// cannot upgrade it, says what does; the first other command upgrades it,
// saying so on stderr once.
func TestUpgradeOfAnOlderDatabase(t *testing.T) {
	env := testEnv(t)
	path := env["RECALL_DB"]
	if _, errs, code := run(t, env, "memory", "save", "note_log", "the lighthouse keeper's log"); code != 0 {
		t.Fatal(errs)
	}
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// As a recall at version 5 left it: 8 added a column, 9 vector keys
	// (and renamed the vectors' key column; there are none: no embedder),
	// whose index 10 dropped.
	for _, q := range []string{`DELETE FROM schema_migrations WHERE version >= 6`, `ALTER TABLE sources DROP COLUMN reading`, `ALTER TABLE sources DROP COLUMN zone`,
		`ALTER TABLE vectors RENAME COLUMN vkey TO hash`, `ALTER TABLE chunks DROP COLUMN vkey`, `DROP TABLE refusals`} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	// What check says of a file at version 5 it leaves as it is.
	older := func(db string) bool {
		t.Helper()
		out, errs, code := run(t, env, "--db", db, "check")
		if code != 0 || !strings.HasPrefix(out, "ok: ") || errs != "" {
			t.Fatalf("check of %s: exit %d %q %q", db, code, out, errs)
		}
		return strings.Contains(out, "\nnote: schema version 5 of ") && strings.Contains(out, ", as an older recall wrote it")
	}

	if !older(path) {
		t.Error("check of an older database: no note of its version")
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, errs, code := run(t, env, "backup", backup); code != 0 || !strings.Contains(errs, "the copy is at schema version 5 of ") {
		t.Errorf("backup of an older database: exit %d %q", code, errs)
	}
	if !older(backup) {
		t.Error("the backup of an older database is not at its version, 5")
	}
	if _, errs, code := run(t, env, "sweep", "--dry-run", sampleVault); code != exitFailure || !strings.Contains(errs, "run a command that writes (a sweep without --dry-run) once to upgrade it") {
		t.Errorf("dry run on an older database: exit %d %q", code, errs)
	}
	if !older(path) {
		t.Fatal("check, backup and a dry run upgraded the database")
	}

	want := fmt.Sprintf("recall: upgrading %s from schema version 5 to ", path)
	if out, errs, code := run(t, env, "memory", "get", "note_log"); code != 0 || !strings.Contains(out, "lighthouse") || !strings.Contains(errs, want) ||
		!strings.Contains(errs, "(older versions of recall cannot open it afterwards)") {
		t.Errorf("the first command after the upgrade: exit %d %q %q; want the memory, and stderr to say %q…", code, out, errs, want)
	}
	if older(path) {
		t.Error("the first command did not upgrade the database")
	}
	if _, errs, code := run(t, env, "stats"); code != 0 || strings.Contains(errs, "upgrading") {
		t.Errorf("a command after the upgrade: exit %d %q; want no word of upgrading", code, errs)
	}
	if out, errs, code := run(t, env, "--db", backup, "memory", "get", "note_log"); code != 0 || !strings.Contains(out, "lighthouse") {
		t.Errorf("the backup's memory: exit %d %q %q", code, out, errs)
	}
}

// A database whose first open stopped part-way through its migrations
// (each commits on its own; here the last one fails on a table in its way,
// which leaves what a kill before its commit leaves) is at an older
// version no older recall wrote: check and backup say its upgrade was
// interrupted and that the next command that writes completes it, not
// that an older recall wrote it; that command does.
func TestCheckSaysAnUpgradeWasInterrupted(t *testing.T) {
	env := testEnv(t)
	path := env["RECALL_DB"]
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The last migration creates refusals.
	for _, q := range []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`,
		`CREATE TABLE refusals (x)`} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code := run(t, env, "memory", "save", "note_log", "the lighthouse keeper's log"); code == 0 || !strings.Contains(errs, "_refusals") {
		t.Fatalf("the first command with the last migration's table in its way: exit %d %q; want its migration to fail", code, errs)
	}
	if _, err := conn.Exec(`DROP TABLE refusals`); err != nil {
		t.Fatal(err)
	}

	const said = ": the last upgrade was interrupted (a first open or an upgrade stopped part-way), and the next command that writes completes it"
	out, errs, code := run(t, env, "check")
	if code != 0 || !strings.Contains(out, "\nnote: schema version ") || !strings.Contains(out, said) || strings.Contains(out, "older recall") {
		t.Errorf("check of a database whose first open stopped part-way: exit %d %q %q; want a note saying %q", code, out, errs, said)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, errs, code := run(t, env, "backup", backup); code != 0 || !strings.Contains(errs, "where an interrupted upgrade left the database") {
		t.Errorf("backup of a database whose first open stopped part-way: exit %d %q", code, errs)
	}
	if out, _, _ := run(t, env, "--db", backup, "check"); !strings.Contains(out, said) {
		t.Errorf("check of its backup: %q; want %q", out, said)
	}
	_, errs, code = run(t, env, "memory", "save", "note_log", "the lighthouse keeper's log")
	if code != 0 {
		t.Fatalf("the next command that writes: exit %d %q", code, errs)
	}
	if !strings.Contains(errs, "recall: completing the interrupted upgrade of "+path) || strings.Contains(errs, "older versions of recall") {
		t.Errorf("the next command that writes said %q; want it to say it completes the interrupted upgrade, not that it upgrades an older file", errs)
	}
	if out, errs, code := run(t, env, "check"); code != 0 || strings.Contains(out, "note:") {
		t.Errorf("check after that command: exit %d %q %q; want no note", code, out, errs)
	}
}
