package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// testKey is the API key tests use; no error may ever contain it.
const testKey = "sk-test-4f9c2a7e1b8d"

// fast keeps retries quick: tests must not wait for real backoff.
var fast = Limits{
	BaseDelay:   time.Millisecond,
	MaxDelay:    4 * time.Millisecond,
	MaxAttempts: 3,
	Timeout:     5 * time.Second,
}

// fakeVec is what the fake servers embed a text as: deterministic, not unit
// length (so tests see the client normalise), never zero.
func fakeVec(text string, dim int) []float32 {
	v := make([]float32, dim)
	for j := range v {
		h := fnv.New32a()
		fmt.Fprintf(h, "%d:%s", j, text)
		v[j] = float32(h.Sum32()%1000)/100 + 0.5
	}
	return v
}

func unit(v []float32) []float32 {
	out := append([]float32(nil), v...)
	Normalize(out)
	return out
}

// request is one request a fake server received.
type request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// decodeBody decodes a recorded JSON body into a generic map.
func (r request) fields(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, r.Body)
	}
	return m
}

// inputs returns the texts of a recorded request, whatever field holds them.
func (r request) inputs(t *testing.T) []string {
	t.Helper()
	var m struct {
		Input     []string `json:"input"`
		Text      []string `json:"text"`
		Queries   []string `json:"queries"`
		Documents []string `json:"documents"`
	}
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body: %v", err)
	}
	for _, s := range [][]string{m.Input, m.Text, m.Queries, m.Documents} {
		if s != nil {
			return s
		}
	}
	t.Fatalf("request carries no texts: %s", r.Body)
	return nil
}

// handler answers the call-th request (1-based).
type handler func(w http.ResponseWriter, r *http.Request, call int, req request)

// fakeServer records requests and counts how many are in flight at once.
type fakeServer struct {
	*httptest.Server
	mu          sync.Mutex
	reqs        []request
	inflight    atomic.Int32
	maxInflight atomic.Int32
}

func newServer(t *testing.T, h handler) *fakeServer {
	t.Helper()
	s := &fakeServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for {
			m := s.maxInflight.Load()
			if n <= m || s.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		body, _ := io.ReadAll(r.Body)
		req := request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		call := len(s.reqs)
		s.mu.Unlock()
		h(w, r, call, req)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func vecs(texts []string, dim int) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVec(t, dim)
	}
	return out
}

func ollamaOK(w http.ResponseWriter, texts []string, dim int) {
	writeJSON(w, 200, map[string]any{"model": "m", "embeddings": vecs(texts, dim)})
}

func openAIOK(w http.ResponseWriter, texts []string, dim int) {
	data := make([]map[string]any, len(texts))
	for i, v := range vecs(texts, dim) {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": data, "model": "m",
		"usage": map[string]int{"prompt_tokens": 3, "total_tokens": 3}})
}

func cloudflareOK(w http.ResponseWriter, texts []string, dim int) {
	writeJSON(w, 200, map[string]any{
		"result":   map[string]any{"shape": []int{len(texts), dim}, "data": vecs(texts, dim), "pooling": "cls"},
		"success":  true,
		"errors":   []any{},
		"messages": []any{},
	})
}

// openAIServer answers every request well, in dim dimensions.
func openAIServer(t *testing.T, dim int) *fakeServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		openAIOK(w, req.inputs(t), dim)
	})
}

func newTestOpenAI(t *testing.T, url string, l Limits) *OpenAI {
	t.Helper()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: url, Model: "text-embedding-3-small", APIKey: testKey, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// wantCode fails unless err carries code and its text never shows the key.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := recall.ErrorCode(err); got != code {
		t.Fatalf("error code %q, want %q: %v", got, code, err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("error shows the API key: %v", err)
	}
}

func assertVectors(t *testing.T, got [][]float32, texts []string, dim int) {
	t.Helper()
	if len(got) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(got), len(texts))
	}
	for i, text := range texts {
		want := unit(fakeVec(text, dim))
		if len(got[i]) != dim {
			t.Fatalf("vector %d has dimension %d, want %d", i, len(got[i]), dim)
		}
		for j := range want {
			if math.Abs(float64(got[i][j]-want[j])) > 1e-6 {
				t.Fatalf("vector %d (%q) differs at %d: %v, want %v", i, text, j, got[i][j], want[j])
			}
		}
	}
}

// waitsRecorder replaces an engine's sleep, recording the waits asked for.
type waitsRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitsRecorder) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.waits = append(w.waits, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waitsRecorder) get() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
