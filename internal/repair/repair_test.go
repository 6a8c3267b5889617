package repair_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// fakeOllama answers like Ollama: 500 for a batch holding an input its
// model makes NaN of ("POISON" here), or for everything while down.
func fakeOllama(t *testing.T, down *atomic.Bool, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		for _, s := range req.Input {
			if down.Load() || strings.Contains(s, "POISON") {
				w.WriteHeader(500)
				w.Write([]byte(`{"error":"failed to encode response: json: unsupported value: NaN"}`))
				return
			}
		}
		out := make([][]float32, len(req.Input))
		for i := range out {
			out[i] = []float32{1, float32(i + 1), 3, 4}
		}
		json.NewEncoder(w).Encode(map[string]any{"embeddings": out})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A text the embedder always fails on does not hold up the texts after it;
// an embedder that fails on everything stops the run where it was.
func TestRepairPassesRefusedTexts(t *testing.T) {
	var down atomic.Bool
	var calls atomic.Int32
	srv := fakeOllama(t, &down, &calls)
	emb, err := embed.NewOllama(embed.OllamaConfig{BaseURL: srv.URL, Model: "m", Dim: 4,
		Limits: embed.Limits{MaxAttempts: 1, BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "ollama", Model: "m", Dim: 4, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	eng := search.New(st, search.Options{})
	texts := []string{"alpha one", "POISON two", "beta three", "POISON four"}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("later text %d", i))
	}
	doc := recall.Document{Source: recall.Source{ID: "src", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash(strings.Join(texts, "\n")), ChunkCount: len(texts), IndexState: recall.IndexOK}}
	for i, s := range texts {
		doc.Chunks = append(doc.Chunks, recall.Chunk{Index: i, Text: s, Header: "t", Hash: recall.TextHash(s)})
	}
	if _, err := eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}

	down.Store(true)
	p, err := repair.Run(ctx, st, eng, "s", emb, repair.Options{})
	if err == nil || p.Embedded != 0 || p.Cursor != 0 || calls.Load() > 3 {
		t.Fatalf("embedder down: %+v, %v after %d calls; want an error at once, where it started", p, err, calls.Load())
	}

	down.Store(false)
	p, err = repair.Run(ctx, st, eng, "s", emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != len(texts)-2 || p.Missing != 2 || p.Refused == 0 {
		t.Fatalf("two texts refused: %+v, %v; want the other %d embedded and the run done", p, err, len(texts)-2)
	}
}
