package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// fakeOllama stands in for a remote Ollama server: /api/embed answers with
// deterministic vectors whose size depends on the model, and can be told to
// fail.
func fakeOllama(t *testing.T, down *atomic.Bool) *httptest.Server {
	dims := map[string]int{"model-a": 16, "model-b": 24}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" {
			http.NotFound(w, r)
			return
		}
		if down.Load() {
			http.Error(w, "model runner crashed", http.StatusInternalServerError)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		dim, ok := dims[req.Model]
		if !ok {
			w.WriteHeader(404)
			json.NewEncoder(w).Encode(map[string]string{"error": "model '" + req.Model + "' not found"})
			return
		}
		out := make([][]float32, len(req.Input))
		for i, s := range req.Input {
			out[i] = embedtest.Vector(s, dim)
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": out})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSwitchModelsWithoutDowntime(t *testing.T) {
	var down atomic.Bool
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "ollama"
	env["RECALL_MODEL"] = "model-a"
	env["RECALL_OLLAMA_URL"] = srv.URL

	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	search := func() recall.SearchResponse {
		t.Helper()
		out, errs, code := run(t, env, "search", "--json", "revive a sourdough starter")
		if code != 0 {
			t.Fatalf("search: %s", errs)
		}
		var r recall.SearchResponse
		json.Unmarshal([]byte(out), &r)
		if len(r.Results) == 0 || r.Results[0].Source != "2025/09/sourdough.md" {
			t.Fatalf("search during the switch: %+v", r)
		}
		return r
	}
	if r := search(); r.Mode != recall.ModeHybrid {
		t.Fatalf("mode %s: %s", r.Mode, r.Note)
	}

	// A new space alongside; reads stay on the old one until it is complete.
	if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-b", "space", "create", "b"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "space", "use", "b"); code == 0 || !strings.Contains(errs, "repair") {
		t.Fatalf("using an incomplete space: exit %d %s", code, errs)
	}
	search()
	if _, errs, code := run(t, env, "repair", "--space", "b", "--limit", "3"); code != 0 {
		t.Fatal(errs)
	}
	search()
	if out, errs, code := run(t, env, "repair", "--space", "b"); code != 0 || !strings.Contains(out, "complete") {
		t.Fatalf("repair: %s %s", out, errs)
	}
	if _, errs, code := run(t, env, "space", "use", "b"); code != 0 {
		t.Fatal(errs)
	}
	// Queries now use model-b (the read space's model), whatever is configured.
	if r := search(); r.Mode != recall.ModeHybrid {
		t.Fatalf("after the switch: %s %s", r.Mode, r.Note)
	}
	out, _, _ := run(t, env, "space", "list", "--json")
	var spaces []recall.SpaceStats
	json.Unmarshal([]byte(out), &spaces)
	if len(spaces) != 2 {
		t.Fatalf("spaces: %s", out)
	}
	for _, s := range spaces {
		if s.Name == "b" && (!s.Read || s.Dim != 24 || s.Coverage != 1) {
			t.Fatalf("space b: %+v", s)
		}
	}
	if _, errs, code := run(t, env, "space", "drop", "b"); code == 0 {
		t.Fatalf("dropping the read space must be refused: %s", errs)
	}
	for _, s := range spaces {
		if s.Name != "b" {
			if _, errs, code := run(t, env, "space", "drop", s.Name); code != 0 {
				t.Fatalf("drop %s: %s", s.Name, errs)
			}
		}
	}
	search()
}

// TestEmbedderFailureDuringSweep: chunks are stored and searchable by text
// when the embedder fails; repair completes them once it is back.
func TestEmbedderFailureDuringSweep(t *testing.T) {
	var down atomic.Bool
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "ollama"
	env["RECALL_MODEL"] = "model-a"
	env["RECALL_OLLAMA_URL"] = srv.URL
	// Create the space while the server is up, then let it fail.
	if _, errs, code := run(t, env, "memory", "save", "note_probe", "a probe"); code != 0 {
		t.Fatal(errs)
	}
	down.Store(true)
	out, errs, code := run(t, env, "sweep", sampleVault)
	if code != 0 || !strings.Contains(out, "no vector yet") {
		t.Fatalf("sweep with a failing embedder: exit %d\n%s\n%s", code, out, errs)
	}
	out, _, _ = run(t, env, "search", "--json", "--mode", "lexical", "sourdough")
	if !strings.Contains(out, "sourdough.md") {
		t.Fatalf("text search after embedder failure: %s", out)
	}
	out, _, _ = run(t, env, "stats", "--json")
	var st recall.Stats
	json.Unmarshal([]byte(out), &st)
	if len(st.Spaces) != 1 || st.Spaces[0].Missing == 0 {
		t.Fatalf("stats: %s", out)
	}
	if _, _, code := run(t, env, "repair"); code == 0 {
		t.Fatal("repair with the embedder still down should fail")
	}
	down.Store(false)
	if out, errs, code := run(t, env, "repair"); code != 0 || !strings.Contains(out, "complete") {
		t.Fatalf("repair: %s %s", out, errs)
	}
	out, _, _ = run(t, env, "stats", "--json")
	json.Unmarshal([]byte(out), &st)
	if st.Spaces[0].Missing != 0 || st.Spaces[0].Coverage != 1 {
		t.Fatalf("after repair: %+v", st.Spaces[0])
	}
}
