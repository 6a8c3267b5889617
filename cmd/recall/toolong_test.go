package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// A text the model refused as too long during a sweep is recorded: `recall
// repair` does not send it again (each run did), says why it stays without
// a vector, `recall stats` counts it, and `recall repair --retry-refused`
// sends it once more.
func TestRepairLeavesTextsRefusedAsTooLong(t *testing.T) {
	srv := embedtest.NewServer(t, 16, func(s string) bool { return strings.Contains(s, "zzlong") })
	env := sweepRefused(t, srv.URL, "zzlong")
	before := srv.Requests()
	out, errs, code := run(t, env, "repair")
	if code != 0 || !strings.Contains(out, "1 text refused for its size by the model or its service (openai refused a text as too long for the model") || !strings.Contains(out, "not sent to it again") {
		t.Fatalf("repair: exit %d, %s %s", code, out, errs)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("repair sent %d requests; want none (the sweep's refusal is recorded)", n)
	}
	if out, errs, code := run(t, env, "stats"); code != 0 || !strings.Contains(out, "1 missing (1 refused for its size by the model or its service)") {
		t.Errorf("stats: exit %d, %s %s", code, out, errs)
	}
	before = srv.Requests()
	if out, errs, code := run(t, env, "repair", "--retry-refused"); code != 0 || !strings.Contains(out, "1 text refused for its size") {
		t.Errorf("repair --retry-refused: exit %d, %s %s", code, out, errs)
	}
	if n := srv.Requests() - before; n != 1 {
		t.Errorf("repair --retry-refused sent %d requests; want 1, the refused text", n)
	}
}

// A text refused for its size alone in its request by a proxy's body limit
// (HTTP 413 with an HTML page, no words about a model's window) is
// recorded as a text too long for the model is, and counted in the same
// too_long; but what the commands say of it names no model's window:
// `recall stats` said "refused by the model as too long for it".
func TestSizeRefusalsAreNotCalledTooLong(t *testing.T) {
	var requests atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		data := make([]map[string]any, len(req.Input))
		for i, text := range req.Input {
			if strings.Contains(text, "zzbig") {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				w.Write([]byte("<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>"))
				return
			}
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": embedtest.Vector(text, 16)}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(proxy.Close)
	env := sweepRefused(t, proxy.URL, "zzbig")
	out, errs, code := run(t, env, "stats")
	if code != 0 || !strings.Contains(out, "1 missing (1 refused for its size by the model or its service)") {
		t.Errorf("stats: exit %d, %s %s", code, out, errs)
	}
	jsonOut, errs, code := run(t, env, "stats", "--json")
	if code != 0 || !strings.Contains(jsonOut, `"too_long":1`) {
		t.Errorf("stats --json: exit %d, %s %s; want the count kept in too_long", code, jsonOut, errs)
	}
	before := requests.Load()
	rep, errs, code := run(t, env, "repair")
	if code != 0 || !strings.Contains(rep, "1 text refused for its size by the model or its service (openai refused a text as too large (HTTP 413") {
		t.Errorf("repair: exit %d, %s %s", code, rep, errs)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("repair sent %d requests; want none (the sweep's refusal is recorded)", n)
	}
	for _, s := range []string{out, rep} {
		if strings.Contains(s, "too long") {
			t.Errorf("a refusal for size alone is called too long: %s", s)
		}
	}
}

// sweepRefused sweeps, with the OpenAI-compatible service at url, a vault
// of two files, one holding word (which the service refuses) and one
// fine, and returns the environment of the database it swept into.
func sweepRefused(t *testing.T, url, word string) map[string]string {
	t.Helper()
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "openai"
	env["RECALL_MODEL"] = "m"
	env["RECALL_OPENAI_URL"] = url
	env["RECALL_OPENAI_API_KEY"] = "test-key-0123456789abcdef"
	vault := t.TempDir()
	for name, body := range map[string]string{
		"refused.md": "**User:** " + word + " " + strings.Repeat("crumb ", 40),
		"fine.md":    "**User:** how do I feed a starter?\n\n**Assistant:** flour and water, daily",
	} {
		if err := os.WriteFile(filepath.Join(vault, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatalf("sweep: %s", errs)
	}
	return env
}
