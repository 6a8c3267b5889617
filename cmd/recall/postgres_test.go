package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// TestMain stops the throwaway PostgreSQL server the PostgreSQL tests
// start (pgtest), if any did.
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m))
}

// pgEnv is ollamaEnv with the database on PostgreSQL: a URL carrying a
// password (the test server trusts local connections, so any password is
// accepted), which recall must never print.
func pgEnv(t *testing.T) map[string]string {
	env := ollamaEnv(t)
	env["RECALL_DB"] = withPassword(t, pgtest.Server(t), testPassword)
	return env
}

const testPassword = "hunter2-secret"

// withPassword gives a database URL a password unless it has one.
func withPassword(t *testing.T, dsn, password string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.User.Password(); !ok {
		u.User = url.UserPassword(u.User.Username(), password)
	}
	return u.String()
}

func searchJSON(t *testing.T, env map[string]string, args ...string) recall.SearchResponse {
	t.Helper()
	out, errs, code := run(t, env, append([]string{"search", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("search %v: exit %d: %s", args, code, errs)
	}
	var r recall.SearchResponse
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("search %v: %v: %s", args, err, out)
	}
	return r
}

func sources(r recall.SearchResponse) []string {
	var s []string
	for _, h := range r.Results {
		s = append(s, h.Source)
	}
	return s
}

// The commands work on PostgreSQL as on SQLite: a sweep (incremental the
// second time), hybrid search, context, memories and the diary, stats, and
// the files that accompany a database (sweep.log) in the data directory,
// since a URL has no folder.
func TestPostgresCommands(t *testing.T) {
	env := pgEnv(t)
	out, errs, code := run(t, env, "sweep", sampleVault)
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s %s", code, out, errs)
	}
	if out, _, _ := run(t, env, "sweep", "--json", sampleVault); !strings.Contains(out, `"files_changed":0`) {
		t.Errorf("a second sweep re-read files: %s", out)
	}
	r := searchJSON(t, env, "revive a sourdough starter")
	if r.Mode != recall.ModeHybrid || len(r.Results) == 0 || r.Results[0].Source != "2025/09/sourdough.md" {
		t.Fatalf("hybrid search: mode %s, %v, note %q", r.Mode, sources(r), r.Note)
	}
	if r := searchJSON(t, env, "--mode", "lexical", `"sourdough starter"`); len(r.Results) == 0 || r.Mode != recall.ModeLexical {
		t.Errorf("phrase search: %+v", r)
	}
	if r := searchJSON(t, env, "薄荷茶"); len(r.Results) == 0 {
		t.Errorf("CJK search found nothing")
	}
	if out, errs, code := run(t, env, "context", r.Results[0].Source, "0"); code != 0 || out == "" {
		t.Errorf("context: exit %d: %s", code, errs)
	}

	if _, errs, code := run(t, env, "memory", "save", "note_axolotl", "my axolotl regrew a gill"); code != 0 {
		t.Fatal(errs)
	}
	if out, _, code := run(t, env, "memory", "get", "note_axolotl"); code != 0 || !strings.Contains(out, "regrew a gill") {
		t.Errorf("memory get: %s", out)
	}
	if r := searchJSON(t, env, "--kind", "memory", "axolotl"); len(r.Results) != 1 || r.Results[0].Source != "note_axolotl" {
		t.Errorf("memory search: %v", sources(r))
	}
	if _, errs, code := run(t, env, "diary", "write", "walked to the lighthouse"); code != 0 {
		t.Fatal(errs)
	}

	out, errs, code = run(t, env, "stats")
	if code != 0 {
		t.Fatalf("stats: %s", errs)
	}
	if !strings.Contains(out, "postgres://") || strings.Contains(out, testPassword) {
		t.Errorf("stats should name the database without its password:\n%s", out)
	}
	if out, errs, code := run(t, env, "check"); code != 0 || !strings.HasPrefix(out, "ok: postgres://") || strings.Contains(out, testPassword) {
		t.Errorf("check: exit %d %q %s", code, out, errs)
	}
	// Every form a password can take in a connection string: the URL's
	// user part, its query, libpq's key=value form, and a URL whose
	// password holds an unescaped @ (which parsers read differently).
	u, _ := url.Parse(env["RECALL_DB"])
	q := u.Query()
	q.Set("password", "S3cretQ")
	bare := *u
	bare.User = url.User(u.User.Username())
	bare.RawQuery = q.Encode()
	port := u.Port()
	for _, dsn := range []string{
		bare.String(),
		fmt.Sprintf("host=%s port=%s user=%s password=S3cretQ dbname=%s sslmode=disable", u.Hostname(), port, u.User.Username(), strings.TrimPrefix(u.Path, "/")),
		strings.Replace(env["RECALL_DB"], ":"+testPassword+"@", ":p@S3cretQ#x@", 1),
		strings.Replace(env["RECALL_DB"], "postgres://", "POSTGRESQL://", 1),
	} {
		e := maps.Clone(env)
		e["RECALL_DB"] = dsn
		out, errs, _ := run(t, e, "stats")
		if strings.Contains(out+errs, "S3cretQ") || strings.Contains(out+errs, testPassword) {
			t.Errorf("stats with %s printed the password:\n%s%s", dsn, out, errs)
		}
	}
	if entries, _ := os.ReadDir("."); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.Contains(e.Name(), "S3cretQ") }) {
		t.Errorf("a connection string was taken for a SQLite file name")
	}

	// eval writes its outcomes to the data directory, made if need be.
	qf := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(qf, []byte(`{"query": "sourdough starter", "expect": [{"source": "2025/09/sourdough.md", "contains": "starter"}], "category": 1}`+"\n"), 0o600)
	e := maps.Clone(env)
	e["HOME"] = t.TempDir()
	if out, errs, code := run(t, e, "eval", "--queries", qf); code != 0 {
		t.Errorf("eval on a machine that never swept: exit %d: %s %s", code, out, errs)
	}
	if _, _, code := run(t, env, "sweep", "--json", "--dry-run", sampleVault); code != 0 {
		t.Errorf("dry run exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(env["HOME"], ".local", "share", "recall", "sweep.log")); err != nil {
		t.Errorf("sweep.log is not in the data directory: %v", err)
	}
}

// An export from SQLite imported into PostgreSQL (the way to move a
// database) answers searches with the same passages in the same order.
func TestPostgresImportFromSQLite(t *testing.T) {
	env, dump := sampleExport(t)
	pg := testEnv(t)
	pg["RECALL_DB"] = pgtest.Server(t)
	if _, errs, code := run(t, pg, "import", dump); code != 0 {
		t.Fatal(errs)
	}
	for _, q := range []string{"moments of vulnerability", "peppermint tea", "marathon knee", "SQLite backup", "薄荷茶", `"knee"`} {
		a := searchJSON(t, env, q)
		b := searchJSON(t, pg, q)
		if len(a.Results) == 0 || strings.Join(sources(a), "\n") != strings.Join(sources(b), "\n") {
			t.Errorf("query %q: SQLite %v, PostgreSQL %v", q, sources(a), sources(b))
		}
	}
	a, _, _ := run(t, env, "export")
	b, _, _ := run(t, pg, "export")
	if stripTimes(a) != stripTimes(b) {
		t.Errorf("PostgreSQL's export of the import differs from SQLite's export")
	}
}

// import --keep-newer keeps the newer copies on PostgreSQL as on SQLite.
func TestPostgresImportKeepNewer(t *testing.T) {
	testImportKeepNewer(t, func(t *testing.T) map[string]string {
		env := testEnv(t)
		env["RECALL_DB"] = pgtest.Server(t)
		return env
	})
}

// A server on PostgreSQL follows what another process writes to the same
// database (a CLI save here; another host's server in a deployment).
func TestPostgresServeFollowsOtherWriters(t *testing.T) {
	env := pgEnv(t)
	env["RECALL_TOKEN"] = serveToken
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	url, stderr, stop := startServeLoaded(t, env)
	defer stop()
	if strings.Contains(stderr.String(), testPassword) {
		t.Errorf("the server logged the database password:\n%s", stderr.String())
	}
	if _, errs, code := run(t, env, "memory", "save", "note_newt", "the newt hides under the mossy log"); code != 0 {
		t.Fatal(errs)
	}
	waitFor(t, func() bool {
		code, body := send(t, "POST", url+"/api/search", serveToken, `{"query": "newt mossy log", "mode": "semantic"}`)
		var r recall.SearchResponse
		return code == 200 && json.Unmarshal([]byte(body), &r) == nil && slices.Contains(sources(r), "note_newt")
	}, "the server to find another process's memory by its vector")
	if !strings.Contains(stderr.String(), "followed writes of another process") {
		t.Errorf("the server did not log what it followed:\n%s", stderr.String())
	}
}

// A server on PostgreSQL is not ready (/readyz 503) while its database
// is down, though alive (/healthz ok), and ready again once it is back,
// without a restart.
func TestPostgresServeReadiness(t *testing.T) {
	env := pgEnv(t)
	env["RECALL_TOKEN"] = serveToken
	url, stderr, stop := startServe(t, env)
	defer stop()
	if code, body := get(t, url+"/readyz", ""); code != 200 || body != "ok\n" {
		t.Fatalf("readyz: %d %q", code, body)
	}
	down, up := pgtest.Outage(t, env["RECALL_DB"])
	down()
	waitFor(t, func() bool {
		code, body := get(t, url+"/readyz", "")
		return code == 503 && body == "unavailable\n"
	}, "readyz to say unavailable while the database is down")
	if code, body := get(t, url+"/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("healthz while the database is down: %d %q", code, body)
	}
	up()
	waitFor(t, func() bool {
		code, body := get(t, url+"/readyz", "")
		return code == 200 && body == "ok\n"
	}, "readyz to say ok once the database is back")
	if !strings.Contains(stderr.String(), "not ready: the database does not answer") || strings.Contains(stderr.String(), testPassword) {
		t.Errorf("the outage is not logged, or its line holds the password:\n%s", stderr.String())
	}
}

// A server on a PostgreSQL role granted only SELECT serves searches, and
// its background repair, finding texts without vectors, says once that
// the database refuses its writes and stops; it backed off to 5 min and
// tried again for ever, a warning each round.
func TestPostgresServeOnAReadOnlyRole(t *testing.T) {
	env := pgEnv(t)
	env["RECALL_TOKEN"] = serveToken
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	if out, errs, code := run(t, env, "--embedder", "none", "memory", "save", "note_newt", "the newt hides under the mossy log"); code != 0 || !strings.Contains(out, "index pending") {
		t.Fatalf("a memory saved without its vector: exit %d, %q %s", code, out, errs)
	}
	env["RECALL_DB"] = withPassword(t, pgtest.ReadOnlyRole(t, env["RECALL_DB"]), testPassword)
	url, stderr, stop := startServeLoaded(t, env)
	defer stop()
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "background repair stopped") }, "background repair to stop")
	if code, body := send(t, "POST", url+"/api/search", serveToken, `{"query": "newt mossy log"}`); code != 200 || !strings.Contains(body, "note_newt") {
		t.Errorf("search on a read-only role: %d %s", code, body)
	}
	out := stderr.String()
	if n := strings.Count(out, "background repair"); n != 1 || !strings.Contains(out, "can only read") || strings.Contains(out, testPassword) {
		t.Errorf("the refusal is not said once, with why (and no password):\n%s", out)
	}
}

// check leaves a PostgreSQL database an older recall set up at its schema,
// as it leaves a SQLite file: it checks recall's invariants, which hold at
// every version, and notes the version; the next command that writes
// upgrades it, saying so. (It upgraded the database before it checked.)
func TestPostgresCheckLeavesAnOlderSchema(t *testing.T) {
	env := pgEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "note_log", "the lighthouse keeper's log"); code != 0 {
		t.Fatal(errs)
	}
	conn, err := pgx.Connect(context.Background(), env["RECALL_DB"])
	if err != nil {
		t.Fatal(err)
	}
	// As a recall at version 2 left it: 3 added a column, 4 vector keys
	// (and renamed the vectors' key column; the memory's vector is keyed by
	// its text's hash again).
	for _, q := range []string{`DELETE FROM recall_schema_migrations WHERE version > 2`, `ALTER TABLE sources DROP COLUMN reading`, `ALTER TABLE sources DROP COLUMN zone`,
		`UPDATE vectors v SET vkey = (SELECT c.hash FROM chunks c WHERE c.vkey = v.vkey LIMIT 1)`,
		`ALTER TABLE vectors RENAME COLUMN vkey TO hash`, `ALTER INDEX vectors_vkey RENAME TO vectors_hash`, `ALTER TABLE chunks DROP COLUMN vkey`, `DROP TABLE refusals`} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(context.Background())
	check := func() (note string) {
		t.Helper()
		out, errs, code := run(t, env, "check")
		if code != 0 || !strings.HasPrefix(out, "ok: ") || errs != "" {
			t.Fatalf("check: exit %d %q %q", code, out, errs)
		}
		_, note, _ = strings.Cut(out, "\nnote: ")
		return note
	}
	const said = ", as an older recall wrote it, left so: recall's invariants, which that version keeps too; the next command that writes upgrades it\n"
	for range 2 {
		if note := check(); !strings.HasPrefix(note, "schema version 2 of ") || !strings.HasSuffix(note, said) {
			t.Fatalf("check of an older database: note %q; want schema version 2 of …%q", note, said)
		}
	}
	if out, errs, code := run(t, env, "memory", "get", "note_log"); code != 0 || !strings.Contains(out, "lighthouse") || !strings.Contains(errs, "from schema version 2 to ") {
		t.Errorf("the first command after check: exit %d %q %q; want the memory, and stderr to say it upgrades from version 2", code, out, errs)
	}
	if note := check(); note != "" {
		t.Errorf("check after the upgrade: note %q; want none", note)
	}
}

// Commands that only read refuse a PostgreSQL database recall has not set
// up, as they refuse a missing SQLite file, and a dry run writes nothing:
// on such a database every file would be new; on a set-up one, it runs on
// read-only transactions.
func TestPostgresReadOnlyCommands(t *testing.T) {
	env := testEnv(t)
	env["RECALL_DB"] = pgtest.Server(t)
	_, errs, code := run(t, env, "search", "anything")
	if code != 1 || !strings.Contains(errs, "holds no recall data") {
		t.Errorf("search on a database recall has not set up: exit %d: %s", code, errs)
	}
	out, errs, code := run(t, env, "sweep", "--dry-run", sampleVault)
	if code != 0 || !strings.Contains(out, "would ingest") {
		t.Fatalf("dry run on a fresh database: exit %d: %s %s", code, out, errs)
	}
	if _, errs, code := run(t, env, "stats"); code != 1 || !strings.Contains(errs, "holds no recall data") {
		t.Errorf("the dry run set the database up: exit %d: %s", code, errs)
	}

	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	before, _, _ := run(t, env, "export")
	out, errs, code = run(t, env, "sweep", "--dry-run", "--full", sampleVault)
	if code != 0 || !strings.Contains(out, "would ingest") || strings.Contains(out, "would ingest 0 ") {
		t.Fatalf("dry run: exit %d: %s %s", code, out, errs)
	}
	if after, _, _ := run(t, env, "export"); after != before {
		t.Errorf("a dry run changed the database")
	}
	if _, errs, code := run(t, env, "backup", filepath.Join(t.TempDir(), "b.db")); code != 1 || !strings.Contains(errs, "back up PostgreSQL with pg_dump") {
		t.Errorf("backup of PostgreSQL: exit %d: %s", code, errs)
	}
}

// An export PostgreSQL cannot take whole (a memory holding a NUL
// character, which SQLite keeps) is refused before anything is written.
func TestPostgresImportIsAllOrNothing(t *testing.T) {
	env, _ := sampleExport(t)
	if _, errs, code := run(t, env, "memory", "save", "note_nul", "a\x00b"); code != 0 {
		t.Fatal(errs)
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if _, errs, code := run(t, env, "export", "--out", dump); code != 0 {
		t.Fatal(errs)
	}
	pg := testEnv(t)
	pg["RECALL_DB"] = pgtest.Server(t)
	_, errs, code := run(t, pg, "import", dump)
	if code != 1 || !strings.Contains(errs, "NUL") || !strings.Contains(errs, "nothing was imported") {
		t.Errorf("import of a record PostgreSQL cannot hold: exit %d: %s", code, errs)
	}
	if out, errs, code := run(t, pg, "export"); code == 0 && out != "" {
		t.Errorf("a refused import left sources behind: %s %s", out, errs)
	}
}

// TestCrashDuringSweepPostgres is TestCrashDuringSweep on PostgreSQL: sweeps
// killed at random moments leave a consistent store (counters, document
// frequencies, chunk counts), and a sweep after them converges on what an
// uninterrupted one stores.
func TestCrashDuringSweepPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs many sweeps")
	}
	bin := buildRecall(t, t.TempDir())
	vault := filepath.Join(t.TempDir(), "vault")
	genVault(t, vault, 300, 7)
	clean, crashed := pgtest.Server(t), pgtest.Server(t)
	env := []string{"HOME=" + t.TempDir()}
	sweepWith(t, bin, env, clean, vault)
	want := checkStore(t, clean)
	crashSweeps(t, bin, env, crashed, vault, 8, 600*time.Millisecond, nil)
	sweepWith(t, bin, env, crashed, vault)
	if got := checkStore(t, crashed); got != want {
		t.Fatalf("after crashes the store differs from an uninterrupted sweep")
	}
}

// TestCrashDuringWritesPostgres is TestCrashDuringWrites on PostgreSQL,
// with one kill of each command (each PostgreSQL database costs a second).
func TestCrashDuringWritesPostgres(t *testing.T) {
	testCrashDuringWrites(t, 1, func(t *testing.T) string { return pgtest.Server(t) })
}

// A NUL character in a chat export (JSON's \u0000), which PostgreSQL
// cannot store, does not stop a sweep: it is swept as U+FFFD, locally and
// through a server's /ingest, and every conversation is stored.
func TestPostgresSweepsExportWithNUL(t *testing.T) {
	vault := t.TempDir()
	var convs []string
	for i := range 3 {
		text := fmt.Sprintf("quokka%d question about databases", i)
		if i == 1 {
			text += ` with a nul \u0000 here`
		}
		convs = append(convs, fmt.Sprintf(`{"uuid": "conv-%d", "name": "Conv %d", "created_at": "2025-08-14T09:30:00Z", "chat_messages": [`+
			`{"uuid": "m1", "sender": "human", "text": "%s", "created_at": "2025-08-14T09:30:00Z"}, `+
			`{"uuid": "m2", "sender": "assistant", "text": "an answer", "created_at": "2025-08-14T09:31:00Z"}]}`, i, i, text))
	}
	os.MkdirAll(filepath.Join(vault, "exp"), 0o755)
	if err := os.WriteFile(filepath.Join(vault, "exp", "conversations.json"), []byte("["+strings.Join(convs, ", ")+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := pgEnv(t)
	if out, errs, code := run(t, env, "sweep", "--json", vault); code != 0 || !strings.Contains(out, `"files_failed":0`) {
		t.Fatalf("sweep: exit %d: %s %s", code, out, errs)
	}
	for i := range 3 {
		if r := searchJSON(t, env, "--mode", "lexical", fmt.Sprintf("quokka%d", i)); len(r.Results) != 1 {
			t.Errorf("quokka%d: %v", i, sources(r))
		}
	}

	senv := pgEnv(t)
	senv["RECALL_TOKEN"] = serveToken
	u, _, stop := startServe(t, senv)
	defer stop()
	cenv := testEnv(t)
	cenv["RECALL_TOKEN"] = serveToken
	if out, errs, code := run(t, cenv, "sweep", "--json", "--remote", u, vault); code != 0 || !strings.Contains(out, `"files_failed":0`) {
		t.Fatalf("remote sweep: exit %d: %s %s", code, out, errs)
	}
	if code, body := send(t, "POST", u+"/api/search", serveToken, `{"query": "quokka1", "mode": "lexical"}`); code != 200 || !strings.Contains(body, "conv-1") {
		t.Errorf("the server lacks the conversation with a NUL: %d %s", code, body)
	}
}
