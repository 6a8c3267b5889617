package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One-off commands that read check the pages they read, not the whole file
// (a search of a large store would first read all of it); damage met is
// reported, the file is not written, and `recall check`, like every
// command that writes, checks the whole file. A server checks it in the
// background.
func TestOneOffReadsCheckWhatTheyRead(t *testing.T) {
	env := testEnv(t)
	vault := t.TempDir()
	for i := range 300 {
		text := fmt.Sprintf("# Talk %d\n\n**User:** what about topic %d?\n\n**Assistant:** %s\n", i, i, strings.Repeat("a fairly long answer about gardens and tomatoes. ", 20))
		if err := os.WriteFile(filepath.Join(vault, fmt.Sprintf("t%03d.md", i)), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatalf("sweep: exit %d %s", code, errs)
	}
	if out, errs, code := run(t, env, "check"); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("check of a sound database: exit %d %q %s", code, out, errs)
	}
	backups := t.TempDir()
	backup := filepath.Join(backups, "backup.jsonl")
	if _, errs, code := run(t, env, "export", "--out", backup); code != 0 {
		t.Fatalf("export: exit %d %s", code, errs)
	}
	saved, _ := os.ReadFile(backup)
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 || len(saved) == 0 {
		t.Fatalf("export file: %v, %v", fi, err)
	}
	// Through a symbolic link, the file it names is replaced; the link stays.
	real := filepath.Join(t.TempDir(), "real.jsonl")
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, env, "export", "--out", link); code != 0 {
		t.Fatalf("export through a link: exit %d %s", code, errs)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, saved) {
		t.Errorf("the linked file holds %d bytes, want the export's %d", len(b), len(saved))
	}

	path := env["RECALL_DB"]
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var pageSize int64
	var pages []int64
	if err := conn.QueryRow(`SELECT page_size FROM pragma_page_size()`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(`SELECT pageno FROM dbstat WHERE name = 'chunk_texts' AND pagetype = 'leaf'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p int64
		rows.Scan(&p)
		pages = append(pages, p)
	}
	rows.Close()
	conn.Close()
	if len(pages) < 5 {
		t.Fatalf("%d leaf pages of text: too few to damage", len(pages))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, int(pageSize)/4)
	for _, p := range pages {
		f.WriteAt(junk, (p-1)*pageSize)
	}
	f.Close()
	damaged, _ := os.ReadFile(path)

	if out, errs, code := run(t, env, "stats"); code != 0 || !strings.Contains(out, "chunks:") {
		t.Errorf("stats, which reads no text: exit %d %q %s", code, out, errs)
	}
	for _, c := range [][]string{
		{"search", "--mode", "lexical", "tomatoes"},
		{"check"},
		{"sweep", vault},
		{"export", "--out", backup},
	} {
		out, errs, code := run(t, env, c...)
		if code == 0 || !strings.Contains(errs, "database is corrupt") || !strings.Contains(errs, "restore a backup") {
			t.Errorf("%v on damaged text: exit %d, stdout %q, stderr %q", c, code, out, errs)
		}
		// Each points to `recall check`, which lists the damage, but that
		// one itself.
		if points := strings.Contains(errs, "`recall check`"); points != (c[0] != "check") {
			t.Errorf("%v on damaged text: stderr %q; pointing to recall check: %v", c, errs, points)
		}
	}
	out, _, code := run(t, env, "check", "--json")
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitFailure || res.OK || !strings.Contains(res.Error, "database is corrupt") {
		t.Errorf("check --json of a damaged file: exit %d, %q", code, out)
	}
	if now, _ := os.ReadFile(backup); !bytes.Equal(now, saved) {
		t.Errorf("a failed export changed the previous one")
	}
	if left, _ := os.ReadDir(backups); len(left) != 1 {
		t.Errorf("export left files beside its output: %v", left)
	}

	// A server starts at once and checks the whole file in the background:
	// it says what it found, answers reads, and refuses writes.
	env["RECALL_TOKEN"] = serveToken
	url, stderr, stop := startServe(t, env)
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "database check") }, "the server's check")
	if code, body := get(t, url+"/api/stats", serveToken); code != 200 || !strings.Contains(body, `"sources"`) {
		t.Errorf("stats from a server on a damaged file: %d %s", code, body)
	}
	// Damage is its own error: retrying cannot help (not 503), and the
	// client is told so (not a bare internal error), without the path.
	if code, body := send(t, "PUT", url+"/api/memories/note_x", serveToken, `{"value":"a value"}`); code != 500 || !strings.Contains(body, `"code":"damaged"`) || !strings.Contains(body, "restore a backup") || strings.Contains(body, path) {
		t.Errorf("a memory saved to a damaged file: %d %s", code, body)
	}
	if code, body := send(t, "POST", url+"/api/search", serveToken, `{"query":"tomatoes","mode":"lexical"}`); code != 500 || !strings.Contains(body, `"code":"damaged"`) || strings.Contains(body, path) {
		t.Errorf("a search that reads damaged text: %d %s", code, body)
	}
	stop()
	if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
		t.Errorf("the damaged file was written to")
	}
}
