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
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines: %q", out)
	}
	col := -1 // where the date starts, in columns
	for _, l := range lines {
		i := strings.Index(l, "20")
		if i < 0 {
			t.Fatalf("no date in %q", l)
		}
		c := uniseg.StringWidth(l[:i])
		if col >= 0 && c != col {
			t.Errorf("the date starts at column %d in %q, %d in the line before:\n%s", c, l, col, out)
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
}
