package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// A text the model refused as too long during a sweep is recorded: `recall
// repair` does not send it again (each run did), says why it stays without
// a vector, `recall stats` counts it, and `recall repair --retry-refused`
// sends it once more.
func TestRepairLeavesTextsRefusedAsTooLong(t *testing.T) {
	srv := embedtest.NewServer(t, 16, func(s string) bool { return strings.Contains(s, "zzlong") })
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "openai"
	env["RECALL_MODEL"] = "m"
	env["RECALL_OPENAI_URL"] = srv.URL
	env["RECALL_OPENAI_API_KEY"] = "test-key-0123456789abcdef"
	vault := t.TempDir()
	for name, body := range map[string]string{
		"long.md": "**User:** zzlong " + strings.Repeat("crumb ", 40),
		"fine.md": "**User:** how do I feed a starter?\n\n**Assistant:** flour and water, daily",
	} {
		if err := os.WriteFile(filepath.Join(vault, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatalf("sweep: %s", errs)
	}
	before := srv.Requests()
	out, errs, code := run(t, env, "repair")
	if code != 0 || !strings.Contains(out, "the model refused 1 text as too long for it") || !strings.Contains(out, "not sent to it again") {
		t.Fatalf("repair: exit %d, %s %s", code, out, errs)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("repair sent %d requests; want none (the sweep's refusal is recorded)", n)
	}
	if out, errs, code := run(t, env, "stats"); code != 0 || !strings.Contains(out, "1 missing (1 refused by the model as too long for it)") {
		t.Errorf("stats: exit %d, %s %s", code, out, errs)
	}
	before = srv.Requests()
	if out, errs, code := run(t, env, "repair", "--retry-refused"); code != 0 || !strings.Contains(out, "refused 1 text as too long") {
		t.Errorf("repair --retry-refused: exit %d, %s %s", code, out, errs)
	}
	if n := srv.Requests() - before; n != 1 {
		t.Errorf("repair --retry-refused sent %d requests; want 1, the refused text", n)
	}
}
