package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rivo/uniseg"
)

// memory find lines its columns up on a terminal whatever the keys'
// script: a Chinese or Japanese character takes two columns.
func TestMemoryFindColumnsLineUp(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "none"
	for _, kv := range [][2]string{{"note_ascii", "plain"}, {"note_全角", "wide"}, {"人物_王芳", "王芳是医生。"}} {
		if _, errs, code := run(t, env, "memory", "save", kv[0], kv[1]); code != 0 {
			t.Fatal(errs)
		}
	}
	out, errs, code := run(t, env, "memory", "find")
	if code != 0 {
		t.Fatal(errs)
	}
	columnsLineUp(t, out, 3, "20") // the date
}

// A space named in Chinese or Japanese lines up with the others in `space
// list`, as memory keys do in `memory find`.
func TestSpaceListColumnsLineUp(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "note_a", "a"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-b", "space", "create", "模型乙"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := run(t, env, "space", "list")
	if code != 0 {
		t.Fatal(errs)
	}
	columnsLineUp(t, out, 2, "ollama/")
}

// columnsLineUp checks that out has n lines and that marker starts at the
// same terminal column in each (a Chinese or Japanese character takes two).
func columnsLineUp(t *testing.T, out string, n int, marker string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != n {
		t.Fatalf("want %d lines: %q", n, out)
	}
	col := -1
	for _, l := range lines {
		i := strings.Index(l, marker)
		if i < 0 {
			t.Fatalf("no %q in %q", marker, l)
		}
		c := uniseg.StringWidth(l[:i])
		if col >= 0 && c != col {
			t.Errorf("%q starts at column %d in %q, %d in the line before:\n%s", marker, c, l, col, out)
		}
		col = c
	}
}

// A memory or diary day stored without its vectors says why on stderr:
// "index pending" alone reads the same for a wrong key, an embedder down
// and a model missing.
func TestIndexPendingSaysWhy(t *testing.T) {
	var down atomic.Bool
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "model-a", srv.URL
	if out, errs, code := run(t, env, "memory", "save", "note_a", "while it works"); code != 0 || !strings.Contains(out, "index ok") || errs != "" {
		t.Fatalf("embedder up: exit %d, %q, stderr %q", code, out, errs)
	}
	down.Store(true)
	const why = "ollama failed (HTTP 500"
	for _, args := range [][]string{{"memory", "save", "note_b", "while it is down"}, {"diary", "write", "a day while it is down"}} {
		out, errs, code := run(t, env, args...)
		if code != 0 || !strings.Contains(out, "index pending") || !strings.Contains(errs, why) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want pending, and why: %s", args, code, out, errs, why)
		}
	}
	// With no embedder at all, in a database that has a vector space.
	out, errs, code := run(t, env, "--embedder", "none", "memory", "save", "note_c", "with no embedder")
	if code != 0 || !strings.Contains(out, "index pending") || !strings.Contains(errs, "no embedder is configured here") {
		t.Errorf("--embedder none: exit %d, stdout %q, stderr %q; want pending, and why", code, out, errs)
	}
}

// A listing with nothing in it says so, as search says "no results": memory
// find, diary recent and space list printed nothing and exited 0, which read
// as a command that did nothing. --json is unchanged (an empty list).
func TestEmptyListingsSaySo(t *testing.T) {
	env := testEnv(t) // embedder none: no vector space
	if _, errs, code := run(t, env, "memory", "save", "note_a", "a value"); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct{ args, want string }{
		{"memory find --prefix zzz", "no memories match\n"},
		{"diary recent", "no diary entries in the last 7 days\n"},
		{"diary recent --days 1", "no diary entries in the last 1 day\n"},
		{"space list", "no vector spaces: a sweep, memory save or diary write with an embedding model makes the first\n"},
		{"memory find --prefix zzz --json", "{\n  \"items\": []\n}\n"},
		{"space list --json", "[]\n"},
	} {
		out, errs, code := run(t, env, strings.Fields(c.args)...)
		if code != 0 || out != c.want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, errs, c.want)
		}
	}
}
