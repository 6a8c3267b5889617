package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
)

// emptyStore is a test environment with a database, empty, so that a
// command that reads it gets past opening it.
func emptyStore(t *testing.T) map[string]string {
	t.Helper()
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", t.TempDir()); code != 0 {
		t.Fatal(errs)
	}
	return env
}

// A count flag whose value makes no sense is a usage error naming the
// flag: `repair --limit -1` embedded nothing and said it stopped at the
// limit, `serve --burst 0` took the default, and context's --radius and
// chunk index were refused only once the database was open, exit 1.
func TestNonsenseCountFlagsAreUsageErrors(t *testing.T) {
	env := emptyStore(t)
	for _, c := range []struct{ args, want string }{
		{"repair --limit -1", "--limit must be 0 (all) or more, got -1"},
		{"serve --addr 127.0.0.1:0 --burst 0", "--burst must be 1 or more, got 0"},
		{"serve --addr 127.0.0.1:0 --burst -3", "--burst must be 1 or more, got -3"},
		{"serve --addr 8787", `--addr "8787": use host:port`},
		{"context --radius -1 a.md 0", "--radius must be between 0 and 3, got -1"},
		{"context --radius 4 a.md 0", "--radius must be between 0 and 3, got 4"},
		{"context -- a.md -1", `chunk index "-1" is not a number of 0 or more`},
	} {
		// Ended before it starts: a serve that took its flags would run
		// until it is stopped.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out, errs, code := runCtx(t, ctx, env, strings.Fields(c.args)...)
		if code != exitUsage || !strings.Contains(errs, c.want) || out != "" || strings.Contains(errs, "s3cret") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errs, c.want)
		}
	}
}

// A repair whose limit was exactly what was missing leaves nothing
// missing: it is complete, not "stopped at the limit; 0 still missing,
// run again to continue".
func TestRepairToTheLastTextIsComplete(t *testing.T) {
	env := ollamaEnv(t)
	none := maps.Clone(env)
	none["RECALL_EMBEDDER"] = "none"
	if _, errs, code := run(t, none, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "space", "create", "a", "--embedder", "ollama", "--model", "model-a"); code != 0 {
		t.Fatal(errs)
	}
	out, _, _ := run(t, env, "space", "list", "--json")
	var spaces []recall.SpaceStats
	if err := json.Unmarshal([]byte(out), &spaces); err != nil || len(spaces) != 1 || spaces[0].Missing == 0 {
		t.Fatalf("spaces: %s", out)
	}
	n := spaces[0].Missing
	out, errs, code := run(t, env, "repair", "--limit", fmt.Sprint(n))
	want := fmt.Sprintf("space a: embedded %d texts in ", n)
	if code != 0 || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "s, complete\n") {
		t.Errorf("repair --limit %d: exit %d, %q %s; want %q…complete", n, code, out, errs, want)
	}
}

// A bad embedder or fusion from a flag or the environment is refused by
// every command, as the config file's is: `recall --embedder bogus stats`
// exited 0, and so did RECALL_EMBEDDER=bogus, while search refused them.
func TestBadSettingsAreRefusedByEveryCommand(t *testing.T) {
	base := emptyStore(t)
	for _, c := range []struct {
		env  map[string]string
		args string
		want string
	}{
		{nil, "--embedder bogus stats", `--embedder: unknown embedder "bogus"`},
		{nil, "stats --embedder bogus", `--embedder: unknown embedder "bogus"`},
		{nil, "--embedder bogus memory find --prefix a", `--embedder: unknown embedder "bogus"`},
		{map[string]string{"RECALL_EMBEDDER": "bogus"}, "stats", `RECALL_EMBEDDER: unknown embedder "bogus"`},
		{map[string]string{"RECALL_EMBEDDER": "bogus"}, "diary recent", `RECALL_EMBEDDER: unknown embedder "bogus"`},
		{map[string]string{"RECALL_FUSION": "bogus"}, "stats", `RECALL_FUSION: unknown fusion "bogus"`},
		{map[string]string{"RECALL_TIMEZONE": "Mars/Base"}, "stats", "RECALL_TIMEZONE: unknown time zone"},
		{map[string]string{"RECALL_DIMENSIONS": "-8"}, "stats", "RECALL_DIMENSIONS: must be a positive number"},
		{nil, "search --fusion bogus q", `--fusion: unknown fusion "bogus"`},
		// A malformed PostgreSQL URL is a mistake in the setting, found
		// before any connection; the password is not shown.
		{map[string]string{"RECALL_DB": "postgres://us er:s3cret@[bad/x"}, "stats", "invalid postgres DSN"},
		{map[string]string{"RECALL_DB": "postgres://user:s3cret@127.0.0.1:1/x?sslmode=bogus"}, "memory get k", "invalid postgres DSN"},
		// The Cloudflare settings missing are named, each with every place
		// it is read from (CLOUDFLARE_* as Cloudflare's own tools set them).
		{map[string]string{"RECALL_EMBEDDER": "cloudflare"}, "memory save k v",
			"needs cloudflare_account_id (RECALL_CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_ACCOUNT_ID or the config file) and cloudflare_api_token (RECALL_CLOUDFLARE_API_TOKEN, CLOUDFLARE_API_TOKEN or the config file)"},
		{map[string]string{"RECALL_EMBEDDER": "cloudflare", "CLOUDFLARE_ACCOUNT_ID": "acct"}, "memory save k v",
			"the cloudflare embedder needs cloudflare_api_token (RECALL_CLOUDFLARE_API_TOKEN, CLOUDFLARE_API_TOKEN or the config file)\n"},
	} {
		env := maps.Clone(base)
		maps.Copy(env, c.env)
		out, errs, code := run(t, env, strings.Fields(c.args)...)
		if code != exitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v %s: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.env, c.args, code, out, errs, c.want)
		}
	}
	// Names the providers take in any case still pass.
	env := maps.Clone(base)
	env["RECALL_EMBEDDER"] = "NONE"
	if _, errs, code := run(t, env, "stats"); code != 0 {
		t.Errorf("RECALL_EMBEDDER=NONE: exit %d %s", code, errs)
	}
}

// A config line that is not a setting names its key when it looks like
// one ("…:1: not a setting" left the reader to find it), and says what
// the key should be when it is written as the environment variable; a
// line that does not look like a key is still not repeated.
func TestConfigUnknownSettingIsNamed(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	for _, c := range []struct {
		text    string
		want    []string
		notWant string
	}{
		{"bogus = 1\n", []string{":1: bogus is not a setting (settings: admin_token, "}, ""},
		{"# db\nRECALL_DB = x.db\n", []string{":2: recall_db is not a setting: write db, without the RECALL_"}, ""},
		{"token SECRET = x\n", []string{":1: not a setting (settings: "}, "secret"},
	} {
		if err := os.WriteFile(cfg, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"RECALL_CONFIG": cfg, "HOME": dir}
		_, errs, code := run(t, env, "stats")
		for _, w := range c.want {
			if code != exitUsage || !strings.Contains(errs, "config "+cfg+w) {
				t.Errorf("%q: exit %d %q, want %q", c.text, code, errs, w)
			}
		}
		if c.notWant != "" && strings.Contains(strings.ToLower(errs), c.notWant) {
			t.Errorf("%q: the error repeats %q: %s", c.text, c.notWant, errs)
		}
	}
}

// What the command line gives a command that the command cannot take (a
// query or key over its limit, a value too large, a missing --confirm) is
// a usage error, exit 2, as a bad flag is: a query of 501 characters
// exited 1.
func TestInputLimitsAreUsageErrors(t *testing.T) {
	env := emptyStore(t)
	if _, errs, code := run(t, env, "memory", "save", "note_a", "kept"); code != 0 {
		t.Fatal(errs)
	}
	long := strings.Repeat("é", recall.MaxQueryLen+1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"search", long}, "query is 501 characters; the limit is 500"},
		{[]string{"search", "  "}, "query is empty"},
		{[]string{"memory", "save", strings.Repeat("k", 201), "v"}, "key is 201 characters; the limit is 200"},
		{[]string{"memory", "save", "note_b", strings.Repeat("v", 100_001)}, "value is 100001 characters; the limit is 100000"},
		{[]string{"memory", "save", "note_b", " "}, "value is empty"},
		{[]string{"memory", "get", "a b"}, `key contains ' '`},
		{[]string{"memory", "delete", "note_a"}, "run again with --confirm"},
		{[]string{"memory", "find", "--owner", strings.Repeat("o", 65), "--prefix", "n"}, "owner must be at most 64"},
		{[]string{"diary", "write", "--date", "2025-02-30", "text"}, "not a day of the calendar"},
		{[]string{"diary", "read", "yesterday"}, `date "yesterday" is not YYYY-MM-DD`},
	} {
		out, errs, code := run(t, env, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%.40q: exit %d, stdout %q, stderr %.200q; want exit 2 saying %q", c.args, code, out, errs, c.want)
		}
	}
	// What is not there is not a mistake in the command line.
	if _, errs, code := run(t, env, "memory", "get", "note_none"); code != exitFailure {
		t.Errorf("memory get of a missing key: exit %d %s", code, errs)
	}
	if out, _, _ := run(t, env, "memory", "get", "note_a"); out != "kept\n" {
		t.Errorf("the refused delete lost the memory: %q", out)
	}
}

// Arguments that cannot do what they say are usage errors, exit 2, found
// before anything is opened or sent: --prune-empty without --prune did
// nothing (the sweep exited 0 and kept the sources of the files gone), and
// `model pull` of a name no known model has exited 1 as if a download had
// failed.
func TestArgumentsThatCannotWorkAreUsageErrors(t *testing.T) {
	env := testEnv(t)
	vault := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--prune-empty", vault}, "--prune-empty works only with --prune"},
		{[]string{"sweep", "--remote", "http://127.0.0.1:1", "--prune-empty", vault}, "--prune-empty works only with --prune"},
		{[]string{"model", "pull", "all-MiniLM-L6"}, `unknown model "all-MiniLM-L6"`},
	} {
		out, errs, code := run(t, env, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errs, c.want)
		}
	}
	if _, err := os.Stat(env["RECALL_DB"]); !os.IsNotExist(err) {
		t.Errorf("a refused command made the database: %v", err)
	}
}

// Counts in messages agree with their nouns: "1 chunks", "1 entries",
// "has 1 chunks; there is no chunk 5".
func TestMessagesAgreeWithTheirCounts(t *testing.T) {
	env := emptyStore(t)
	for _, c := range []struct {
		args []string
		out  string
		errs string
	}{
		{[]string{"memory", "save", "note_a", "short"}, "saved note_a: 1 chunk, index ", ""},
		{[]string{"diary", "write", "--date", "2025-01-02", "a day"}, "diary/2025-01-02 now holds 1 entry (index ", ""},
		{[]string{"diary", "write", "--date", "2025-01-02", "more"}, "now holds 2 entries (index ", ""},
		{[]string{"context", "note_a", "5"}, "", `source "note_a" has no chunk 5: its chunk count is 1 (numbered from 0)`},
	} {
		out, errs, _ := run(t, env, c.args...)
		if !strings.Contains(out, c.out) || !strings.Contains(errs, c.errs) {
			t.Errorf("%q: stdout %q, stderr %q; want %q / %q", c.args, out, errs, c.out, c.errs)
		}
	}
}

// A sweep of an export that dropped one conversation, and of a vault that
// lost one file, says so in the singular; a dry run of it, in the
// conditional.
func TestSweepSummaryAgreesWithItsCounts(t *testing.T) {
	env := testEnv(t)
	vault := t.TempDir()
	export := func(n int) {
		var convs []string
		for i := range n {
			convs = append(convs, fmt.Sprintf(`{"uuid": "conv-%d", "name": "Conv %d", "created_at": "2025-08-14T09:30:00Z", "chat_messages": [`+
				`{"uuid": "m1", "sender": "human", "text": "question %d about tides", "created_at": "2025-08-14T09:30:00Z"}, `+
				`{"uuid": "m2", "sender": "assistant", "text": "an answer", "created_at": "2025-08-14T09:31:00Z"}]}`, i, i, i))
		}
		if err := os.WriteFile(filepath.Join(vault, "conversations.json"), []byte("["+strings.Join(convs, ", ")+"]"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	export(2)
	note := filepath.Join(vault, "note.md")
	if err := os.WriteFile(note, []byte("**User:** hi\n\n**Assistant:** hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatal(errs)
	}
	export(1)
	os.Remove(note)
	// A dry run removes nothing, and says what a sweep would remove.
	out, errs, code := run(t, env, "sweep", "--dry-run", vault)
	if want := "1 conversation no longer in its export would be removed with it\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("--dry-run: exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
	}
	out, errs, code = run(t, env, "sweep", vault)
	for _, want := range []string{
		"ingested 1 of 1 file (0 unchanged, 0 failed), 0 chunks,",
		"1 file is gone from the vault (run with --prune to remove it):\n  note.md\n",
		"1 conversation no longer in its export was removed with it\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
		}
	}
}

// --chunk-size and --overlap do not rechunk unchanged files, and the store
// does not record what they were chunked with: a sweep given them says
// so, with the way to rechunk everything, instead of silently ingesting
// 0 of 300 files.
func TestSweepSaysChunkFlagsSkipUnchangedFiles(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		args []string
		want string // "" for no note
	}{
		{[]string{"sweep", "--chunk-size", "500", sampleVault}, "recall: --chunk-size applies only to new and changed files: the "},
		{[]string{"sweep", "--overlap", "-1", "--chunk-size", "800", "--json", sampleVault}, "recall: --chunk-size and --overlap apply only to new and changed files: the "},
		{[]string{"sweep", sampleVault}, ""},
	} {
		_, errs, code := run(t, env, c.args...)
		if code != 0 {
			t.Fatalf("%q: exit %d %s", c.args, code, errs)
		}
		if c.want == "" {
			if strings.Contains(errs, "--full") {
				t.Errorf("%q: a note without chunk flags: %s", c.args, errs)
			}
			continue
		}
		if !strings.Contains(errs, c.want) || !strings.Contains(errs, " unchanged files keep their chunks; run with --full to chunk every file again\n") {
			t.Errorf("%q: stderr %q, want %q…--full", c.args, errs, c.want)
		}
	}
	// --full rechunks every file: nothing to say.
	if _, errs, code := run(t, env, "sweep", "--full", "--chunk-size", "500", sampleVault); code != 0 || strings.Contains(errs, "applies only") {
		t.Errorf("sweep --full --chunk-size: exit %d %s", code, errs)
	}
}

// Two spaces of one model and size hold the same vectors: `space create`
// refuses a second one, naming the first, unless given --force (it made
// one silently, and repair embedded everything again).
func TestSpaceCreateRefusesADuplicate(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	count := func() int {
		t.Helper()
		out, _, _ := run(t, env, "space", "list", "--json")
		var spaces []recall.SpaceStats
		if err := json.Unmarshal([]byte(out), &spaces); err != nil {
			t.Fatal(err)
		}
		return len(spaces)
	}
	_, errs, code := run(t, env, "space", "create", "again", "--embedder", "ollama", "--model", "model-a")
	if code != exitFailure || !strings.Contains(errs, "space ollama-model-a already holds ollama/model-a vectors of 16 dimensions") ||
		!strings.Contains(errs, "--force") || count() != 1 {
		t.Errorf("a duplicate space: exit %d %q, %d spaces", code, errs, count())
	}
	// The space's own name again is no duplicate: it is the space.
	if _, errs, code := run(t, env, "space", "create", "ollama-model-a", "--embedder", "ollama", "--model", "model-a"); code != 0 || count() != 1 {
		t.Errorf("create of the existing space: exit %d %s", code, errs)
	}
	if _, errs, code := run(t, env, "space", "create", "again", "--embedder", "ollama", "--model", "model-a", "--force"); code != 0 || count() != 2 {
		t.Errorf("create --force: exit %d %s, %d spaces", code, errs, count())
	}
}

// diary read and recent --json print what the REST API and the MCP tools
// answer: a day, and {"days": [...]}, so one parser reads both.
func TestDiaryJSONAsTheAPI(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "diary", "write", "--date", time.Now().AddDate(0, 0, -60).Format("2006-01-02"), "long ago"); code != 0 {
		t.Fatalf("diary write: %s", errs)
	}
	if out, errs, code := run(t, env, "diary", "recent", "--json"); code != 0 || strings.Join(strings.Fields(out), "") != `{"days":[]}` {
		t.Fatalf("diary recent --json with no recent day: %q %s (exit %d); want {\"days\": []}", out, errs, code)
	}
	today := time.Now().Format("2006-01-02")
	if _, errs, code := run(t, env, "diary", "write", "--date", today, "walked to the lake"); code != 0 {
		t.Fatalf("diary write: %s", errs)
	}
	out, errs, code := run(t, env, "diary", "read", today, "--json")
	var day memory.Day
	if code != 0 || json.Unmarshal([]byte(out), &day) != nil || day.Date != today || len(day.Entries) != 1 {
		t.Errorf("diary read --json: %q %s (exit %d); want one day object with its entry", out, errs, code)
	}
	out, errs, code = run(t, env, "diary", "recent", "--json")
	var recent struct {
		Days []memory.Day `json:"days"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &recent) != nil || len(recent.Days) != 1 || recent.Days[0].Entries[0].Text != "walked to the lake" {
		t.Errorf("diary recent --json: %q %s (exit %d); want {\"days\": [the day]}", out, errs, code)
	}
}

// sweptBeforeTheReading makes every source of env's database look made by
// a recall from before the reading was recorded (ingest.ReadingVersion).
func sweptBeforeTheReading(t *testing.T, env map[string]string) {
	t.Helper()
	conn, err := sql.Open("sqlite", env["RECALL_DB"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`UPDATE sources SET reading = 0`); err != nil {
		t.Fatal(err)
	}
}

// A vault last swept by a recall that read files differently (here, one
// from before the reading was recorded) is read again whole, once, and the
// sweep says why; a dry run says it would.
func TestSweepSaysItRereadsAnOlderReading(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	sweptBeforeTheReading(t, env)
	const note = "recall: this recall reads some files differently from the one that last swept this vault: "
	out, errs, code := run(t, env, "sweep", "--dry-run", sampleVault)
	if code != 0 || strings.Count(errs, note) != 1 || !strings.Contains(errs, note+"a sweep would read ") || !strings.HasPrefix(out, "would ingest ") ||
		!strings.Contains(out, " of the files read again read as before and would be kept as stored\n") {
		t.Errorf("dry run: exit %d %q %q", code, out, errs)
	}
	out, errs, code = run(t, env, "sweep", sampleVault)
	// Each file reads as before: its chunks are kept, and said so, not
	// counted among the chunks ingested.
	if code != 0 || strings.Count(errs, note) != 1 || !strings.Contains(errs, " unchanged files again (text that reads the same keeps its vectors)\n") || !strings.Contains(out, " (0 unchanged, 0 failed), 0 chunks,") ||
		!strings.Contains(out, " chunks of the files read again read as before and were kept as stored\n") {
		t.Errorf("sweep: exit %d %q %q", code, out, errs)
	}
	if out, errs, code = run(t, env, "sweep", sampleVault); code != 0 || strings.Contains(errs, note) || !strings.HasPrefix(out, "ingested 0 of ") {
		t.Errorf("the sweep after: exit %d %q %q; want every file skipped, without a note", code, out, errs)
	}
}

// A file that fails on its re-read keeps the older reading's source, so
// every sweep reads it again: each `recall sweep` says why (a server's
// --vault rounds say it once, TestBackgroundSweepSaysARereadOnce).
func TestSweepSaysARereadEachRun(t *testing.T) {
	env := testEnv(t)
	vault := t.TempDir()
	p := filepath.Join(vault, "a.md")
	text := "**User:** why does rye dough stick?\n\n**Assistant:** it holds more water.\n"
	writeOld(t, p, text)
	if _, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatal(errs)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// Swept by an older recall, and read now as something that fails.
	if err := os.WriteFile(p, []byte("\x00"+text[1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	sweptBeforeTheReading(t, env)
	const note = "recall: this recall reads some files differently from the one that last swept this vault: reading 1 unchanged file again"
	for i := range 2 {
		if _, errs, code := run(t, env, "sweep", vault); code == 0 || strings.Count(errs, note) != 1 {
			t.Errorf("sweep %d: exit %d %q; want the file failed and the note once", i+1, code, errs)
		}
	}
}

// Once searches read a second space of the configured model (`space create
// --force`, `space use`), a command embeds into that space: it wrote into
// the model's first space, so a memory saved by a server started after the
// switch, or by the command line, stayed pending and out of semantic
// searches although its embedder worked.
func TestWritesGoToTheReadSpaceOfTheirModel(t *testing.T) {
	env := ollamaEnv(t)
	for _, args := range [][]string{
		{"sweep", sampleVault},
		{"space", "create", "second", "--embedder", "ollama", "--model", "model-a", "--force"},
		{"repair", "--space", "second"},
		{"space", "use", "second"},
		{"memory", "save", "note_after", "written once searches read the second space"},
	} {
		if _, errs, code := run(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
	}
	out, errs, code := run(t, env, "space", "list", "--json")
	if code != 0 {
		t.Fatal(errs)
	}
	var spaces []recall.SpaceStats
	if err := json.Unmarshal([]byte(out), &spaces); err != nil {
		t.Fatal(err)
	}
	for _, s := range spaces {
		if s.Name == "second" && (!s.Read || s.Missing != 0) {
			t.Errorf("the read space lacks what was written after the switch: %+v", s)
		}
	}
	if out, _, _ := run(t, env, "memory", "get", "--json", "note_after"); !strings.Contains(out, `"index": "ok"`) {
		t.Errorf("the memory is not indexed in the read space: %s", out)
	}
}

// `recall --version` prints the version, as most tools do: it was refused
// as an unknown flag, followed by the whole usage. Given with a command it
// is a mistake, not ignored.
func TestVersionFlag(t *testing.T) {
	env := testEnv(t)
	want, _, _ := run(t, env, "version")
	for _, args := range [][]string{{"--version"}, {"-version"}} {
		out, errs, code := run(t, env, args...)
		if code != 0 || out != want || !strings.HasPrefix(out, "recall ") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0 and %q", args, code, out, errs, want)
		}
	}
	out, errs, code := run(t, env, "--version", "stats")
	if code != exitUsage || out != "" || !strings.Contains(errs, "use `recall version`") || strings.Contains(errs, "usage:") {
		t.Errorf("--version stats: exit %d, stdout %q, stderr %q; want exit 2 with one line", code, out, errs)
	}
}

// A command's -h shows the defaults of the global flags: where the
// database is when nothing names one (it said "under the user's data
// directory", and a new user had to read README to find the file), the
// embedder and the model. serve -h names the token settings, which are not
// flags: it named none, so its help never said how to require a token.
func TestHelpShowsDefaultsAndTokenSettings(t *testing.T) {
	env := testEnv(t)
	data := t.TempDir()
	env["XDG_DATA_HOME"] = data
	out, _, code := run(t, env, "search", "-h")
	for _, want := range []string{
		"default " + filepath.Join(data, "recall", "recall.db") + ")",
		"(env RECALL_EMBEDDER; default builtin)",
		"default all-MiniLM-L6-v2 for builtin",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("search -h: exit %d, want %q in\n%s", code, want, out)
		}
	}
	out, _, code = run(t, env, "serve", "-h")
	for _, want := range []string{"RECALL_TOKEN ", "RECALL_TOKENS_FILE ", "RECALL_ADMIN_TOKEN ", "recall token new", "flags:\n  --addr address\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("serve -h: exit %d, want %q in\n%s", code, want, out)
		}
	}
}

// Every command's -h writes its flags --name, as its usage line, its
// errors and README do: the flag package wrote -name, two spellings of one
// flag on one screen. Defaults are shown as the flag package shows them.
func TestHelpWritesFlagsWithTwoDashes(t *testing.T) {
	env := testEnv(t)
	for _, args := range []string{"sweep -h", "search -h", "serve -h", "memory save -h", "memory find -h", "diary write -h", "diary recent -h",
		"space create -h", "export -h", "eval -h", "context -h", "repair -h"} {
		out, _, code := run(t, env, strings.Fields(args)...)
		if code != 0 || !strings.Contains(out, "\n  --db path\n") {
			t.Errorf("%s: exit %d, no --db line:\n%s", args, code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("%s: %q has one dash", args, line)
			}
			// A value is named for what it is (--owner OWNER, as the
			// usage lines say), not by its Go type.
			if strings.HasPrefix(line, "  --") && strings.HasSuffix(line, " string") {
				t.Errorf("%s: %q names its value \"string\"", args, line)
			}
		}
	}
	out, _, _ := run(t, env, "serve", "-h")
	for _, want := range []string{`(default "127.0.0.1:8787")`, "(default 60)", "(default 10m0s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve -h lacks %q:\n%s", want, out)
		}
	}
}

// A sweep of a folder that does not exist, or of a file, says which it is
// in one line: "cannot read vault /no/such: lstat /no: no such file or
// directory" named a parent, and "is not a directory" did not say what to
// give instead. Nothing is created: no database, no sweep.log.
func TestSweepOfAMissingFolderOrAFile(t *testing.T) {
	env := testEnv(t)
	missing := filepath.Join(t.TempDir(), "no", "such")
	file := filepath.Join(sampleVault, "2025", "07", "hard-week.md")
	for _, c := range []struct{ vault, want string }{
		{missing, "recall: vault " + missing + " does not exist: give the folder that holds your conversations\n"},
		{file, "recall: vault " + file + " is a file, not a folder: give the folder that holds it (" + filepath.Dir(file) + ")\n"},
	} {
		for _, args := range [][]string{{"sweep", c.vault}, {"sweep", "--dry-run", c.vault}} {
			out, errs, code := run(t, env, args...)
			if code != exitFailure || errs != c.want || out != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errs, c.want)
			}
		}
	}
	if _, err := os.Stat(env["RECALL_DB"]); !os.IsNotExist(err) {
		t.Errorf("a sweep of no folder made the database (stat: %v)", err)
	}
}

// A mistyped command names the one probably meant, and a command's flag
// given before the command says where it goes; the usage line follows,
// on stderr.
func TestMistakesBeforeTheCommandSayWhatWasMeant(t *testing.T) {
	env := testEnv(t)
	for _, c := range []struct{ args, want string }{
		{"serach q", `recall: unknown command "serach" (did you mean search?)` + "\n"},
		{"stat", `recall: unknown command "stat" (did you mean stats?)` + "\n"},
		{"ingest dir", `recall: unknown command "ingest" (did you mean sweep?)` + "\n"},
		{"bogus", `recall: unknown command "bogus"` + "\n"},
		{"--json stats", "recall: unknown flag --json: only the global flags go before the command, its own after it (recall <command> -h lists them)\n"},
	} {
		out, errs, code := run(t, env, strings.Fields(c.args)...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, c.want) || !strings.Contains(errs, "usage: recall") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 beginning %q", c.args, code, out, errs, c.want)
		}
	}
}

// `recall help memory save` shows memory save's help, as `recall memory
// save -h` does: it showed memory's list of subcommands.
func TestHelpOfASubcommand(t *testing.T) {
	env := testEnv(t)
	for _, c := range []struct{ args, want string }{
		{"help memory save", "usage: recall memory save KEY [flags] (VALUE | -)\n"},
		{"help space create", "usage: recall space create NAME --embedder"},
		{"help search", "usage: recall search [flags] QUERY"},
	} {
		out, errs, code := run(t, env, strings.Fields(c.args)...)
		if code != 0 || !strings.HasPrefix(out, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want it to begin %q", c.args, code, out, errs, c.want)
		}
	}
}
