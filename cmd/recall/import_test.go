package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lockfile"
)

func TestImportKeepNewer(t *testing.T) { testImportKeepNewer(t, testEnv) }

// testImportKeepNewer restores last week's backup into a database that
// has worked on since (a memory saved again, a diary day appended to, a
// conversation swept with new text, a memory deleted): with --keep-newer
// the newer copies stay, each listed, what the backup alone holds comes
// back, and the same comes back unchanged; a database restored from that
// backup takes the newer work from a later export; a plain import still
// replaces whatever the database holds.
func testImportKeepNewer(t *testing.T, newEnv func(*testing.T) map[string]string) {
	env := newEnv(t)
	vault := t.TempDir()
	conversation := func(name, text string, mtime time.Time) {
		t.Helper()
		path := filepath.Join(vault, name)
		if err := os.WriteFile(path, []byte("## User\n\n"+text+"\n\n## Assistant\n\nNoted.\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	must := func(env map[string]string, args ...string) string {
		t.Helper()
		out, errs, code := run(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	day := "2026-01-05"
	conversation("a.md", "alpha, as it first was", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	conversation("b.md", "bravo", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	must(env, "sweep", vault)
	must(env, "memory", "save", "note_newer", "the plan as it was")
	must(env, "memory", "save", "note_same", "never changes")
	must(env, "memory", "save", "note_gone", "deleted after the backup")
	must(env, "diary", "write", "--date", day, "first entry")
	backup := filepath.Join(t.TempDir(), "backup.jsonl")
	must(env, "export", "--out", backup)

	// The database works on.
	must(env, "memory", "save", "note_newer", "the plan as it now is")
	must(env, "diary", "write", "--date", day, "second entry")
	conversation("a.md", "alpha, as it now is", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	must(env, "sweep", vault)
	must(env, "memory", "delete", "note_gone", "--confirm")

	sum := importJSON(t, env, "--keep-newer", backup)
	var skipped []string
	for _, s := range sum.Skipped {
		skipped = append(skipped, s.Source)
		if !s.Stored.After(s.File) {
			t.Errorf("%s was kept as newer, but its stored copy was written %v and the file's %v", s.Source, s.Stored, s.File)
		}
	}
	wantSkipped := []string{"a.md", "diary::" + day, "memory::note_newer"}
	if sum.Imported != 1 || sum.SkippedNewer != 3 || sum.Unchanged != 2 || !sum.KeepNewer || !slices.Equal(skipped, wantSkipped) {
		t.Errorf("import --keep-newer of the backup: %+v; want 1 imported (note_gone), 3 kept as newer %v, 2 unchanged", sum, wantSkipped)
	}
	if got := must(env, "memory", "get", "note_newer"); !strings.Contains(got, "as it now is") {
		t.Errorf("the memory saved after the backup was overwritten: %s", got)
	}
	if got := must(env, "diary", "read", day); !strings.Contains(got, "first entry") || !strings.Contains(got, "second entry") {
		t.Errorf("the diary day appended to after the backup lost an entry: %s", got)
	}
	if got := must(env, "export"); !strings.Contains(got, "alpha, as it now is") || strings.Contains(got, "as it first was") {
		t.Errorf("the conversation swept after the backup was overwritten")
	}
	if got := must(env, "memory", "get", "note_gone"); !strings.Contains(got, "deleted after the backup") {
		t.Errorf("the memory the backup alone holds did not come back: %s", got)
	}

	// Run again (as after a failure while writing), in text: nothing left
	// to write, and the newer copies named.
	_, errs, code := run(t, env, "import", "--keep-newer", backup)
	if code != 0 || !strings.Contains(errs, "imported 0 sources, kept 3 whose stored copy is newer, 3 unchanged") {
		t.Errorf("import --keep-newer again: exit %d: %s", code, errs)
	}
	for _, id := range wantSkipped {
		if !strings.Contains(errs, "  "+id+" (") {
			t.Errorf("the summary does not name %s: %s", id, errs)
		}
	}

	// A database restored from the backup takes the newer work from a
	// later export: the stored copies are the older ones now.
	later := filepath.Join(t.TempDir(), "later.jsonl")
	must(env, "export", "--out", later)
	env2 := newEnv(t)
	must(env2, "import", backup)
	sum = importJSON(t, env2, "--keep-newer", later)
	if sum.Imported != 3 || sum.SkippedNewer != 0 || sum.Unchanged != 3 || len(sum.Skipped) != 0 {
		t.Errorf("import --keep-newer of the later export over the backup: %+v; want 3 imported, 3 unchanged", sum)
	}
	if a, b := must(env, "export"), must(env2, "export"); a != b {
		t.Errorf("the restored database differs from the one the later export came from:\n%s\n%s", a, b)
	}

	// Without --keep-newer the file's copy replaces every stored one, as
	// the README says.
	sum = importJSON(t, env, backup)
	if sum.Imported != 6 || sum.SkippedNewer != 0 || sum.Unchanged != 0 || sum.KeepNewer {
		t.Errorf("plain import of the backup: %+v; want all 6 imported", sum)
	}
	if got := must(env, "memory", "get", "note_newer"); !strings.Contains(got, "as it was") {
		t.Errorf("a plain import kept the stored memory: %s", got)
	}
}

// importJSON runs import --json and returns its summary.
func importJSON(t *testing.T, env map[string]string, args ...string) importSummary {
	t.Helper()
	out, errs, code := run(t, env, append([]string{"import", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("import %v: exit %d: %s", args, code, errs)
	}
	var sum importSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("import %v: %v: %q", args, err, out)
	}
	return sum
}

// What --keep-newer makes of a record: the stored copy is left alone when
// it holds the same (whatever its age) or was written later; otherwise,
// and where the database holds none, the file's is written.
func TestKeepNewerDecision(t *testing.T) {
	early := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	late := early.Add(time.Nanosecond)
	src := func(value, category string, updated time.Time) *recall.Source {
		return &recall.Source{ID: "memory::k", Kind: recall.KindMemory, Title: "k", Category: category,
			ContentHash: recall.TextHash(value), Body: value, UpdatedAt: updated}
	}
	for _, c := range []struct {
		name         string
		stored, file *recall.Source
		want         string
	}{
		{"absent", nil, src("v", "", early), ""},
		{"same, stored later", src("v", "", late), src("v", "", early), skipSame},
		{"same, stored earlier", src("v", "", early), src("v", "", late), skipSame},
		{"stored later", src("v2", "", late), src("v1", "", early), skipNewer},
		{"stored earlier", src("v1", "", early), src("v2", "", late), ""},
		{"written at the same moment", src("v1", "", early), src("v2", "", early), ""},
		{"category changed since", src("v", "project", late), src("v", "person", early), skipNewer},
		{"category changed in the file", src("v", "project", early), src("v", "person", late), ""},
		{"file record without a time", src("v1", "", early), src("v2", "", time.Time{}), skipNewer},
		{"no hash on either side", &recall.Source{ID: "x.md", Kind: recall.KindArchive},
			&recall.Source{ID: "x.md", Kind: recall.KindArchive, UpdatedAt: late}, ""},
	} {
		got := keepNewerDecision(c.stored, c.file)
		if got.skip != c.want {
			t.Errorf("%s: skip %q; want %q", c.name, got.skip, c.want)
		}
		if got.skip == skipNewer && !got.stored.Equal(c.stored.UpdatedAt) {
			t.Errorf("%s: stored time %v; want %v", c.name, got.stored, c.stored.UpdatedAt)
		}
	}
}

// An export on standard input (import -) or in a pipe (import /dev/stdin,
// import <(…)) imports as the file does, with each flag: import reads its
// input twice, and keeps what it cannot read twice in a temporary file.
func TestImportFromStdinOrPipe(t *testing.T) {
	_, dump := sampleExport(t)
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	_, devFD := os.Stat("/dev/fd")
	for _, flags := range [][]string{nil, {"--json"}, {"--keep-newer"}, {"--no-end"}} {
		importAs := func(how string) (stdout, stderr string, code int, export string) {
			t.Helper()
			env := testEnv(t)
			stdin, name := io.Reader(strings.NewReader("")), dump
			switch how {
			case "stdin":
				stdin, name = bytes.NewReader(data), "-"
			case "pipe": // as the shell's <(cat dump) gives it
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close() // ends the write should import not read it
				go func() {
					w.Write(data)
					w.Close()
				}()
				name = fmt.Sprintf("/dev/fd/%d", r.Fd())
			}
			stdout, stderr, code = runInput(t, context.Background(), stdin, env, append(append([]string{"import"}, flags...), name)...)
			export, _, _ = run(t, env, "export")
			return stdout, stderr, code, export
		}
		fileOut, fileErrs, fileCode, _ := importAs("file")
		if fileCode != 0 {
			t.Fatalf("import %v of the file: exit %d: %s", flags, fileCode, fileErrs)
		}
		for _, how := range []string{"stdin", "pipe"} {
			if how == "pipe" && devFD != nil {
				continue // no /dev/fd to name a pipe by
			}
			out, errs, code, export := importAs(how)
			if code != 0 || out != fileOut || errs != fileErrs {
				t.Errorf("import %v from %s: exit %d: %q %q; want %q %q as from the file", flags, how, code, out, errs, fileOut, fileErrs)
			}
			if export != string(data) {
				t.Errorf("import %v from %s: the database's export differs from the export imported", flags, how)
			}
		}
	}
}

// An import from standard input, which it copies to a temporary file to
// read twice, leaves no copy behind when it is killed (kill -9): the copy
// has no name from its start, where the system allows (not on Windows).
// The copy is looked for in the temporary folder while import reads its
// input, as a kill would find it.
func TestImportFromStdinLeavesNoCopyToKill(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("an open file keeps its name on Windows")
	}
	_, dump := sampleExport(t)
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var seen []string
	stdin := &onRead{r: bytes.NewReader(data), f: func() {
		entries, _ := os.ReadDir(tmp)
		for _, e := range entries {
			seen = append(seen, e.Name())
		}
	}}
	if _, errs, code := runInput(t, context.Background(), stdin, testEnv(t), "import", "-"); code != 0 {
		t.Fatal(errs)
	}
	if len(seen) > 0 {
		t.Errorf("while import read standard input, the temporary folder held %q: a kill would leave it there", seen)
	}
}

// onRead is r, calling f at its first Read.
type onRead struct {
	r    io.Reader
	f    func()
	once sync.Once
}

func (o *onRead) Read(p []byte) (int, error) {
	o.once.Do(o.f)
	return o.r.Read(p)
}

// A file that is not a recall export, or a record edited wrong, is refused
// naming the line and what is wrong in the file's terms, not in Go's; and
// nothing is imported.
func TestImportErrorsSayWhatIsWrong(t *testing.T) {
	good := `{"source":"a.md","kind":"archive","chunks":[{"index":0,"text":"x"}]}` + "\n"
	chatApp := "line 1 is not a recall export line (a JSON array: a chat app's export, such as ChatGPT's conversations.json? `recall sweep` reads those)"
	dir := t.TempDir()
	for _, c := range []struct{ name, file, want string }{
		{"ChatGPT export", `[{"title":"t","mapping":{}}]`, chatApp},
		{"ChatGPT export, indented", "[\n  {\"title\": \"t\"}\n]\n", chatApp},
		{"chunk text a number", good + "\n" + `{"source":"b.md","kind":"archive","chunks":[{"index":0,"text":5}]}` + "\n",
			"line 3: chunks[0].text must be a string, not a number"},
		{"chunk not an object", `{"source":"b.md","kind":"archive","chunks":[{"index":0,"text":"x"},"y"]}`,
			"line 1: chunks[1] must be an object, not a string"},
		{"chunks not an array", `{"source":"b.md","kind":"archive","chunks":{}}`, "line 1: chunks must be an array, not an object"},
		{"size a string", `{"source":"b.md","kind":"archive","size":"10"}`, "line 1: size must be a whole number, not a string"},
		{"size a fraction", `{"source":"b.md","kind":"archive","size":1.5}`, "line 1: size must be a whole number, not 1.5"},
		{"time a word", `{"source":"b.md","kind":"archive","updated_at":"yesterday"}`, `line 1: updated_at must be a time such as "2026-01-02T15:04:05Z"`},
		{"end count a string", good + `{"end":{"sources":"1"}}`, "line 2: end.sources must be a whole number, not a string"},
		{"markdown", "# Notes\n", "line 1 is not a recall export line (not JSON: invalid character '#'"},
		{"a string", `"x"`, "line 1 is not a recall export line (a JSON string, not an object)"},
		{"no source", `{"uuid":"x","chat_messages":[]}`, `line 1 is not a recall export line (it names no "source")`},
		{"a directory", "", "the export file " + dir + " is a folder"},
	} {
		path := dir
		if c.file != "" {
			path = filepath.Join(t.TempDir(), "x.json")
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		env := testEnv(t)
		_, errs, code := run(t, env, "import", path)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d: %s; want %q", c.name, code, errs, c.want)
		}
		for _, goTerm := range []string{"Go ", "main.", "struct", "json:"} {
			if strings.Contains(errs, goTerm) {
				t.Errorf("%s: the error speaks Go (%q): %s", c.name, goTerm, errs)
			}
		}
		if _, err := os.Stat(env["RECALL_DB"]); err == nil {
			t.Errorf("%s: a refused import made a database", c.name)
		}
	}
}

// export --out FILE where FILE cannot be written names FILE and why, not
// the temporary file export writes beside it.
func TestExportOutErrorNamesTheFile(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "k", "v"); code != 0 {
		t.Fatal(errs)
	}
	out := filepath.Join(t.TempDir(), "missing", "backup.jsonl")
	_, errs, code := run(t, env, "export", "--out", out)
	want := "export: cannot write " + out + ": the directory " + filepath.Dir(out) + " does not exist"
	if code == 0 || !strings.Contains(errs, want) || strings.Contains(errs, ".backup.jsonl.") {
		t.Errorf("export --out into a missing directory: exit %d: %s; want %q", code, errs, want)
	}
}

// An export --out killed while it wrote (kill -9) left its temporary file,
// as large as the export, beside its target for good. The next export into
// the folder removes it, found by its lock file, which the system released
// with the killed process (lockfile.TestRemoveAbandoned kills a real one).
func TestExportRemovesWhatAKilledExportLeft(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "k", "v"); code != 0 {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	for _, f := range []string{".monday.jsonl.123.tmp", ".monday.jsonl.123.tmp.lock"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("what the killed export wrote"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code := run(t, env, "export", "--out", filepath.Join(dir, "tuesday.jsonl")); code != 0 {
		t.Fatal(errs)
	}
	names := folderNames(dir)
	if want := []string{"tuesday.jsonl"}; !slices.Equal(names, want) {
		t.Errorf("after an export the folder holds %q; want %q", names, want)
	}
}

// Exports of recall before 2026-12-03 wrote under the same hidden names
// with no lock: what one killed while it wrote left is removed by the next
// export into the folder once a day old, when it begins as an export does
// (or is empty and named after the file written now); a file of that name
// holding something else, or written lately, is left alone.
func TestExportRemovesWhatAnOlderKilledExportLeft(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "k", "v"); code != 0 {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	old := time.Now().Add(-lockfile.LegacyAge - time.Hour)
	for _, f := range []struct {
		name, content string
		at            time.Time
	}{
		{".monday.jsonl.123.tmp", `{"source":"memory::k","kind":"memory"`, old},
		{".tuesday.jsonl.9.tmp", "", old},
		{".monday.jsonl.456.tmp", `{"source":"an export of an older recall writing now"`, time.Now()},
		{".notes.txt.5.tmp", "an editor's", old},
		{".sunday.jsonl.7.tmp", "", old},
	} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.at, f.at); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code := run(t, env, "export", "--out", filepath.Join(dir, "tuesday.jsonl")); code != 0 {
		t.Fatal(errs)
	}
	names := folderNames(dir)
	if want := []string{".monday.jsonl.456.tmp", ".notes.txt.5.tmp", ".sunday.jsonl.7.tmp", "tuesday.jsonl"}; !slices.Equal(names, want) {
		t.Errorf("after an export the folder holds %q; want %q", names, want)
	}
}

// TestOneSourceSummaries: export and import say "1 source", not "1
// sources", in their summaries and in their errors.
func TestOneSourceSummaries(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "only", "the one memory"); code != 0 {
		t.Fatalf("memory save: exit %d: %s", code, errs)
	}
	backup := filepath.Join(t.TempDir(), "backup.jsonl")
	if _, errs, code := run(t, env, "export", "--out", backup); code != 0 || !strings.Contains(errs, "exported 1 source to ") {
		t.Errorf("export --out: exit %d: %q", code, errs)
	}
	if _, errs, code := run(t, testEnv(t), "import", backup); code != 0 || !strings.Contains(errs, "imported 1 source (") {
		t.Errorf("import into a new database: exit %d: %q", code, errs)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	first, _, _ := bytes.Cut(b, []byte("\n"))
	if err := os.WriteFile(cut, append(first, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, testEnv(t), "import", cut); code == 0 || !strings.Contains(errs, "ends after 1 source without") {
		t.Errorf("import of an export without its end line: exit %d: %q", code, errs)
	}
}

// folderNames lists the names of the files in dir, in order.
func folderNames(dir string) []string {
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
