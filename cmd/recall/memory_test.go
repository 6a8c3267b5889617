package main

import (
	"strings"
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
