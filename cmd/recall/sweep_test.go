package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/testvault"
)

// The overlap follows the chunk size unless given: a smaller --chunk-size
// alone is accepted, and the default sweep still carries 200 characters
// over, as with --overlap 200 (the search-quality figures depend on it).
func TestSweepChunkOverlapDefault(t *testing.T) {
	env := testEnv(t)
	if out, errs, code := run(t, env, "sweep", "--chunk-size", "300", sampleVault); code != 0 {
		t.Fatalf("--chunk-size 300: exit %d %s %s", code, out, errs)
	}
	// Also when sending to a server (none listens here: the options are
	// checked before any request).
	if _, errs, code := run(t, env, "sweep", "--remote", "http://127.0.0.1:1", "--chunk-size", "300", sampleVault); code == 2 || strings.Contains(errs, "overlap") {
		t.Fatalf("--remote --chunk-size 300: exit %d %s", code, errs)
	}

	dumps := make([]string, 2)
	for i, args := range [][]string{{"sweep", sampleVault}, {"sweep", "--overlap", "200", sampleVault}} {
		env := testEnv(t)
		if _, errs, code := run(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		dump := filepath.Join(t.TempDir(), "dump.jsonl")
		if _, errs, code := run(t, env, "export", "--out", dump); code != 0 {
			t.Fatal(errs)
		}
		b, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		dumps[i] = stripTimes(string(b))
	}
	if dumps[0] != dumps[1] {
		t.Errorf("the default sweep's chunks differ from --overlap 200's")
	}
}

// A dry run says what the sweep would do and leaves no trace: no database
// where there was none, nothing in sweep.log; a file touched with the same
// content is unchanged, a broken one failed (listed on stderr).
func TestSweepDryRun(t *testing.T) {
	env := testEnv(t)
	data := filepath.Dir(env["RECALL_DB"])
	vault := t.TempDir()
	os.WriteFile(filepath.Join(vault, "ok.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	os.WriteFile(filepath.Join(vault, "bad.json"), []byte("{garbage"), 0o644)

	out, errs, code := run(t, env, "sweep", "--dry-run", vault)
	if code != exitFailure || !strings.HasPrefix(out, "would ingest 1 of 2 files (0 unchanged, 1 failed)") ||
		!strings.Contains(errs, "bad.json") {
		t.Errorf("dry run of a new database: exit %d\n%s%s", code, out, errs)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("the dry run left %v in the data directory", entries)
	}

	run(t, env, "sweep", vault)
	before := dirNames(t, data)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(vault, "ok.md"), old, old)
	out, errs, _ = run(t, env, "sweep", "--dry-run", vault)
	if !strings.HasPrefix(out, "would ingest 0 of 2 files (1 unchanged, 1 failed)") {
		t.Errorf("dry run of a touched file: %s%s", out, errs)
	}
	// Not even the write-ahead log and its index (-wal, -shm) stay behind.
	if after := dirNames(t, data); !slices.Equal(after, before) {
		t.Errorf("the data directory held %v before the dry run and %v after", before, after)
	}
	log, err := os.ReadFile(filepath.Join(data, "sweep.log"))
	if err != nil || strings.Count(string(log), "\tsummary\t") != 1 {
		t.Errorf("sweep.log after a sweep and two dry runs (%v):\n%s", err, log)
	}
}

// dirNames returns the names of the entries of dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// An embedder that refuses a text and echoes it in its error (FastAPI's
// 422 lists the "input" it refused) puts no archive text into sweep.log or
// onto stderr: the failure is logged with the service's message alone.
func TestSweepLogHoldsNoTextAnEmbedderEchoes(t *testing.T) {
	refuse := new(atomic.Bool)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		if refuse.Load() {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{{
				"type": "string_too_long", "loc": []any{"body", "input", 0}, "msg": "too long", "input": req.Input[0]}}})
			return
		}
		data := []map[string]any{}
		for i, v := range vectorsOf(req.Input, 8) {
			data = append(data, map[string]any{"index": i, "embedding": v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OPENAI_URL"] = "openai", "m", srv.URL
	// A first write creates the space, so the sweep embeds.
	if _, errs, code := run(t, env, "memory", "save", "note_probe", "a probe"); code != 0 {
		t.Fatal(errs)
	}
	refuse.Store(true)
	vault := t.TempDir()
	os.WriteFile(filepath.Join(vault, "a.md"), []byte("**User:** CANARY my private diagnosis\n\n**Assistant:** ok"), 0o644)
	out, errs, _ := run(t, env, "sweep", vault)
	log, err := os.ReadFile(filepath.Join(filepath.Dir(env["RECALL_DB"]), "sweep.log"))
	if err != nil || !strings.Contains(string(log), "too long") {
		t.Fatalf("sweep.log should record the refusal (%v):\n%s", err, log)
	}
	if strings.Contains(string(log), "CANARY") || strings.Contains(out+errs, "CANARY") {
		t.Errorf("archive text reached the logs:\nsweep.log:\n%s\noutput:\n%s%s", log, out, errs)
	}
}

// An interrupted sweep commits the files it had finished embedding before
// it exits (its summary counts them, and stats shows them); a second
// interrupt (Main.Hurry, closed here from the start) skips that. Without
// --json it says on stderr what it kept and that a sweep goes on. The
// embedder stand-in interrupts the sweep during its fourth call: the first
// probes the dimension, the next two embed a file each.
func TestInterruptedSweepCommitsFinishedFiles(t *testing.T) {
	vault := t.TempDir()
	for i := range 6 {
		text := fmt.Sprintf("**User:** question %d about %s\n\n**Assistant:** answer %d", i, strings.Repeat("rye ", i+1), i)
		if err := os.WriteFile(filepath.Join(vault, fmt.Sprintf("f%d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		hurry  bool
		stored float64
		text   bool // the summary a person reads, not --json's
	}{{"first interrupt", false, 2, false}, {"second interrupt", true, 0, false}, {"first interrupt, text", false, 2, true}} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			interruptingOllama(t, env, cancel, func(call int32) bool { return call == 4 })
			var setup func(*Main)
			if tc.hurry {
				setup = func(m *Main) {
					hurry := make(chan struct{})
					close(hurry)
					m.Hurry = hurry
				}
			}
			if tc.text {
				// Not a bare "interrupted": what was kept, and that the next
				// run goes on from there.
				out, errs, code := runWith(t, ctx, strings.NewReader(""), env, setup, "sweep", vault)
				want := "recall: sweep interrupted: 2 of 6 files ingested and kept, 2 chunks; sweep again to go on from there\n"
				if code != exitInterrupted || errs != want {
					t.Fatalf("exit %d, stdout %q, stderr %q; want stderr %q", code, out, errs, want)
				}
			} else {
				out, errs, code := runWith(t, ctx, strings.NewReader(""), env, setup, "sweep", "--json", vault)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				var sum map[string]any
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || code != exitInterrupted {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
				}
				if sum["interrupted"] != true || sum["files_changed"] != tc.stored {
					t.Errorf("summary %v; want interrupted with %v files changed", sum, tc.stored)
				}
			}
			delete(env, "RECALL_OLLAMA_URL")
			env["RECALL_EMBEDDER"] = "none"
			statsOut, errs, _ := run(t, env, "stats", "--json")
			var st recall.Stats
			if err := json.Unmarshal([]byte(statsOut), &st); err != nil {
				t.Fatalf("stats: %v %s %s", err, statsOut, errs)
			}
			if float64(st.Sources[recall.KindArchive]) != tc.stored {
				t.Errorf("stats: %d sources; want %v", st.Sources[recall.KindArchive], tc.stored)
			}
		})
	}
}

// A symbolic link in the vault is not followed, and the summary says so,
// naming it: a sweep of a vault whose export is linked in had read
// "0 of 0 files" and exited 0 with no word of the export.
func TestSweepSaysLinksAreNotFollowed(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "none"
	vault, outside := t.TempDir(), t.TempDir()
	export := filepath.Join(outside, "conversations.json")
	if err := os.WriteFile(export, []byte(`[{"uuid": "c1", "name": "Tides", "chat_messages": [{"uuid": "m1", "sender": "human", "text": "tides"}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(export, filepath.Join(vault, "conversations.json")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	out, errs, code := run(t, env, "sweep", vault)
	want := "ingested 0 of 0 files (0 unchanged, 0 failed), 0 chunks, 0.0 MB in "
	note := "1 symbolic link in the vault was not followed (a sweep reads only what is inside the vault: copy in what it leads to, or sweep a linked folder as a vault of its own):\n  conversations.json\n"
	if code != 0 || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, note) {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q…%q", code, out, errs, want, note)
	}
}

// A conversation an export dates by a moment written in UTC is dated by
// that moment's day in the configured zone (RECALL_TIMEZONE, the diary's),
// by `recall sweep`, by `serve --vault` and by `sweep --remote`, whose
// client reads the files: 05:30 UTC on 6 March is the evening of 5 March
// in Los Angeles. A markdown date line is the day written. A sweep after
// the zone changes dates the unchanged files whose dates it made again,
// and says so; the note's date is the day written, and its file is not
// read again.
func TestSweepDatesConversationsInTheConfiguredZone(t *testing.T) {
	vault := t.TempDir()
	for name, text := range map[string]string{
		"conversations.json": `[{"uuid":"c1","name":"Late night tea","created_at":"2024-03-06T05:30:00.000Z",` +
			`"chat_messages":[{"sender":"human","text":"which oolong keeps best?"}]}]`,
		"note.md": "# Brewing\n\nDate: 2024-03-06 05:30\n\n**user:** how hot for green tea?\n",
	} {
		writeOld(t, filepath.Join(vault, name), text)
	}
	dates := func(env map[string]string) map[string]string {
		t.Helper()
		out, errs, code := run(t, env, "export")
		if code != 0 {
			t.Fatalf("export: %d %s", code, errs)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var s struct{ Source, Date string }
			if json.Unmarshal([]byte(line), &s) == nil && s.Source != "" {
				got[s.Source] = s.Date
			}
		}
		return got
	}
	want := func(how string, env map[string]string, export string) {
		t.Helper()
		if got := dates(env); got["conversations.json/c1"] != export || got["note.md"] != "2024-03-06" {
			t.Errorf("%s: dates %v; want the export on %s and the note on 2024-03-06, the day written", how, got, export)
		}
	}

	env := testEnv(t)
	env["RECALL_TIMEZONE"] = "America/Los_Angeles"
	if out, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatalf("sweep: %d %s %s", code, out, errs)
	}
	want("sweep in Los Angeles", env, "2024-03-05")
	env["RECALL_TIMEZONE"] = "UTC"
	out, errs, code := run(t, env, "sweep", vault)
	if code != 0 || !strings.HasPrefix(out, "ingested 1 of 2 files (1 unchanged, 0 failed)") ||
		!strings.Contains(out, "\n1 unchanged file was read again to date its conversations in this time zone\n") ||
		!strings.Contains(errs, "dated in another time zone than this one (UTC)") {
		t.Errorf("sweep in UTC of unchanged files: exit %d, stdout %q, stderr %q; want the export read again, and said", code, out, errs)
	}
	want("sweep in UTC of unchanged files", env, "2024-03-06")
	if out, _, _ := run(t, env, "sweep", vault); !strings.HasPrefix(out, "ingested 0 of 2 files (2 unchanged, 0 failed)") || strings.Contains(out, "time zone") {
		t.Errorf("the next sweep in UTC: %q; want every file unchanged, none dated again", out)
	}

	served := testEnv(t)
	served["RECALL_TOKEN"] = serveToken
	served["RECALL_TIMEZONE"] = "America/Los_Angeles"
	_, _, stop := startServe(t, served, "--vault", vault)
	waitFor(t, func() bool { return dates(served)["conversations.json/c1"] != "" }, "the server's sweep")
	want("serve --vault in Los Angeles", served, "2024-03-05")
	stop()

	server := testEnv(t)
	server["RECALL_TOKEN"] = serveToken
	url, _, stopServer := startServe(t, server)
	defer stopServer()
	client := testEnv(t)
	client["RECALL_TOKEN"] = serveToken
	client["RECALL_TIMEZONE"] = "America/Los_Angeles"
	if out, errs, code := run(t, client, "sweep", "--remote", url, vault); code != 0 {
		t.Fatalf("sweep --remote: %d %s %s", code, out, errs)
	}
	want("sweep --remote from Los Angeles", server, "2024-03-05")
}

// writeOld writes text to the vault file p with a settled mtime
// (testvault.Settled): one read within ingest.RacyWindow of its change is
// read again by the next sweep, which tests of what an unchanged file keeps
// leave aside.
func writeOld(t *testing.T, p, text string) {
	t.Helper()
	if err := testvault.WriteFile(p, text, testvault.Settled()); err != nil {
		t.Fatal(err)
	}
}
