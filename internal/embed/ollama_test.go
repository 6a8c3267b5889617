package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

func TestOllamaRequestAndResponse(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		ollamaOK(w, req.inputs(t), 8)
	})
	o, err := NewOllama(OllamaConfig{BaseURL: srv.URL + "/", Model: "nomic-embed-text:v1.5", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	if info := o.Info(); info.Dim != 0 || info.Provider != "ollama" || info.Model != "nomic-embed-text:v1.5" || info.MaxTokens != 8192 || !info.Normalized {
		t.Fatalf("Info before any call = %+v", info)
	}

	ctx := context.Background()
	docs := []string{"the cat sat", "on the mat"}
	got, err := o.Embed(ctx, recall.InputDocument, docs)
	if err != nil {
		t.Fatal(err)
	}
	assertVectors(t, got, []string{"search_document: the cat sat", "search_document: on the mat"}, 8)
	if _, err := o.Embed(ctx, recall.InputQuery, []string{"cats"}); err != nil {
		t.Fatal(err)
	}

	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/api/embed" {
		t.Errorf("request %s %s, want POST /api/embed", r.Method, r.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if a := r.Header.Get("Authorization"); a != "" {
		t.Errorf("sent Authorization %q without an API key configured", a)
	}
	f := r.fields(t)
	if f["model"] != "nomic-embed-text:v1.5" || f["truncate"] != true {
		t.Errorf("body %s: want model and truncate:true", r.Body)
	}
	if q := reqs[1].inputs(t); !slices.Equal(q, []string{"search_query: cats"}) {
		t.Errorf("query input %q, want the search_query prefix", q)
	}
	if info := o.Info(); info.Dim != 8 {
		t.Errorf("Info().Dim after a call = %d, want 8 learned", info.Dim)
	}
}

func TestOllamaAPIKeyAndPrefixOverride(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		ollamaOK(w, req.inputs(t), 4)
	})
	o, err := NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "nomic-embed-text", APIKey: testKey,
		Prefixes: &Prefixes{Query: "q: "}, Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), recall.InputQuery, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), recall.InputDocument, []string{"y"}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if a := reqs[0].Header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization %q, want the bearer key", a)
	}
	if in := reqs[0].inputs(t); in[0] != "q: x" {
		t.Errorf("query sent as %q, want the overriding prefix", in[0])
	}
	if in := reqs[1].inputs(t); in[0] != "y" {
		t.Errorf("document sent as %q, want no prefix (override has none)", in[0])
	}
}

func TestOllamaUnknownModel(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		writeRaw(w, 404, `{"error":"model \"nope\" not found, try pulling it first"}`)
	})
	o, err := NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "nope", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EINVALID)
	if msg := recall.ErrorMessage(err); !strings.Contains(msg, `"nope"`) || !strings.Contains(msg, "ollama") {
		t.Errorf("message %q should name the provider and the model", msg)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("unknown model was tried %d times, want once", n)
	}
}

func TestOllamaMalformed(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{"not JSON", `<html>bad gateway</html>`},
		{"no embeddings field", `{"model":"m"}`},
		{"embeddings not arrays", `{"embeddings":[1,2]}`},
		{"string component", `{"embeddings":[[0.1,"NaN"]]}`},
		{"null component", `{"embeddings":[[0.1,null]]}`},
		{"out of float32 range", `{"embeddings":[[0.1,1e39]]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, 200, tt.body)
			})
			o, err := NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "bge-m3", Limits: fast})
			if err != nil {
				t.Fatal(err)
			}
			_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x"})
			wantCode(t, err, recall.EUNAVAILABLE)
			if !strings.Contains(err.Error(), "malformed") {
				t.Errorf("error %q should say the response was malformed", err)
			}
		})
	}
}

// A configured vector size is asked of Ollama (Matryoshka models honour
// it), not only checked against what comes back.
func TestOllamaSendsDimensions(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		dim := 1024
		if d, ok := req.fields(t)["dimensions"].(float64); ok {
			dim = int(d)
		}
		ollamaOK(w, req.inputs(t), dim)
	})
	for _, want := range []int{256, 0} {
		o, err := NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "qwen3-embedding", Dim: want, Limits: fast})
		if err != nil {
			t.Fatal(err)
		}
		got, err := o.Embed(context.Background(), recall.InputDocument, []string{"a"})
		if err != nil {
			t.Fatalf("dimensions %d: %v", want, err)
		}
		if want == 0 {
			want = 1024 // none sent: the model's own
		}
		if len(got[0]) != want {
			t.Errorf("got %d dimensions, want %d", len(got[0]), want)
		}
	}
}

// oldOllama behaves as Ollama before 0.3 does: its router answers
// /api/embed with a bare "404 page not found", and /api/embeddings takes
// one "prompt" and answers one "embedding"; a model it lacks gets a JSON
// 404.
func oldOllama(t *testing.T, model string, dim int) *fakeServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		if r.URL.Path != "/api/embeddings" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "404 page not found")
			return
		}
		var in struct {
			Model  string  `json:"model"`
			Prompt *string `json:"prompt"`
		}
		if err := json.Unmarshal(req.Body, &in); err != nil || in.Prompt == nil {
			writeRaw(w, 400, `{"error":"invalid request"}`)
			return
		}
		if in.Model != model {
			writeRaw(w, 404, `{"error":"model '`+in.Model+`' not found, try pulling it first"}`)
			return
		}
		writeJSON(w, 200, map[string]any{"embedding": fakeVec(*in.Prompt, dim)})
	})
}

// An Ollama older than 0.3 is embedded through /api/embeddings, one text
// per request within the concurrency limit, once /api/embed answered a
// bare 404; the client remembers and never asks /api/embed again.
func TestOllamaOlderThan03FallsBackToEmbeddings(t *testing.T) {
	srv := oldOllama(t, "nomic-embed-text", 4)
	l := fast
	l.Concurrency = 2
	o, err := NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "nomic-embed-text", Prefixes: &Prefixes{}, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d", i)
	}
	for round := 0; round < 2; round++ {
		got, err := o.Embed(context.Background(), recall.InputDocument, texts)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		assertVectors(t, got, texts, 4)
	}
	paths := map[string]int{}
	for _, r := range srv.requests() {
		paths[r.Path]++
		if r.Path == "/api/embeddings" {
			if m := r.fields(t); m["model"] != "nomic-embed-text" || m["input"] != nil {
				t.Errorf("legacy request %s", r.Body)
			}
		}
	}
	if paths["/api/embed"] != 1 || paths["/api/embeddings"] != 20 {
		t.Errorf("requests by path %v, want /api/embed once and /api/embeddings once per text (20)", paths)
	}
	if m := srv.maxInflight.Load(); m > 2 {
		t.Errorf("%d requests in flight at once, over the limit of 2", m)
	}
}

// On an old Ollama, a model it lacks is still a clear model error, and a
// 404 that names the model on /api/embed (a current Ollama) does not send
// the client to /api/embeddings.
func TestOllamaOldAndMissingModel(t *testing.T) {
	srv := oldOllama(t, "nomic-embed-text", 4)
	o, err := NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "nope", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x", "y"})
	wantCode(t, err, recall.EINVALID)
	if msg := recall.ErrorMessage(err); !strings.Contains(msg, `does not know the model "nope"`) {
		t.Errorf("message %q should say the model is unknown", msg)
	}
	if n := len(srv.requests()); n > 3 {
		t.Errorf("%d requests for an unknown model, want at most 3 (one per route and text)", n)
	}

	cur := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		writeRaw(w, 404, `{"error":"model \"nope\" not found, try pulling it first"}`)
	})
	o, err = NewOllama(OllamaConfig{BaseURL: cur.URL, Model: "nope", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EINVALID)
	for _, r := range cur.requests() {
		if r.Path != "/api/embed" {
			t.Errorf("a model error on /api/embed sent the client to %s", r.Path)
		}
	}
}

// An Ollama that ignores "dimensions" (before 0.12 on /api/embed, and
// /api/embeddings always) sends the model's full vectors: the client cuts
// them to the size asked, as a newer Ollama does, and normalises them.
func TestOllamaCutsVectorsAnOlderServerSendsWhole(t *testing.T) {
	newer := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		ollamaOK(w, req.inputs(t), 8) // "dimensions" ignored
	})
	for name, url := range map[string]string{"/api/embed": newer.URL, "/api/embeddings": oldOllama(t, "nomic-embed-text", 8).URL} {
		o, err := NewOllama(OllamaConfig{BaseURL: url, Model: "nomic-embed-text", Dim: 4, Prefixes: &Prefixes{}, Limits: fast})
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{"alpha", "beta"}
		got, err := o.Embed(context.Background(), recall.InputDocument, texts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		assertVectors(t, got, texts, 4) // the first 4 of 8, normalised
	}
}
