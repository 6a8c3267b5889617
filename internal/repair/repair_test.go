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

// refusals is a store with space "s" holding one source of texts, its
// engine, and an Ollama stand-in embedder that refuses texts holding
// "POISON", or everything while down is set; calls counts its requests.
type refusals struct {
	st    *sqlite.DB
	eng   *search.Engine
	emb   recall.Embedder
	down  *atomic.Bool
	calls *atomic.Int32
}

func newRefusals(t *testing.T, texts []string) refusals {
	t.Helper()
	r := refusals{down: new(atomic.Bool), calls: new(atomic.Int32)}
	srv := fakeOllama(t, r.down, r.calls)
	var err error
	if r.emb, err = embed.NewOllama(embed.OllamaConfig{BaseURL: srv.URL, Model: "m", Dim: 4,
		Limits: embed.Limits{MaxAttempts: 1, BaseDelay: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r.st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"), sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.st.Close() })
	if _, err := r.st.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "ollama", Model: "m", Dim: 4, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	r.eng = search.New(r.st, search.Options{})
	doc := recall.Document{Source: recall.Source{ID: "src", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash(strings.Join(texts, "\n")), ChunkCount: len(texts), IndexState: recall.IndexOK}}
	for i, s := range texts {
		doc.Chunks = append(doc.Chunks, recall.Chunk{Index: i, Text: s, Header: "t", Hash: recall.TextHash(s)})
	}
	if _, err := r.eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// Refused texts side by side at the start of a batch do not pass for an
// outage: the texts after them are embedded, on the first run.
func TestRepairPassesAdjacentRefusedTexts(t *testing.T) {
	texts := []string{"POISON one", "POISON two", "POISON three"}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("later text %d", i))
	}
	r := newRefusals(t, texts)
	p, err := repair.Run(context.Background(), r.st, r.eng, "s", r.emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != 40 || p.Refused != 3 {
		t.Fatalf("three refused texts first: %+v, %v; want the other 40 embedded and the run done", p, err)
	}
}

// A text the embedder always fails on does not hold up the texts after it;
// an embedder that fails on everything stops the run where it was.
func TestRepairPassesRefusedTexts(t *testing.T) {
	texts := []string{"alpha one", "POISON two", "beta three", "POISON four"}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("later text %d", i))
	}
	r := newRefusals(t, texts)
	ctx := context.Background()

	r.down.Store(true)
	p, err := repair.Run(ctx, r.st, r.eng, "s", r.emb, repair.Options{})
	if err == nil || p.Embedded != 0 || p.Cursor != 0 || r.calls.Load() > 5 { // the batch, then four texts alone
		t.Fatalf("embedder down: %+v, %v after %d calls; want an error at once, where it started", p, err, r.calls.Load())
	}

	r.down.Store(false)
	p, err = repair.Run(ctx, r.st, r.eng, "s", r.emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != len(texts)-2 || p.Missing != 2 || p.Refused == 0 {
		t.Fatalf("two texts refused: %+v, %v; want the other %d embedded and the run done", p, err, len(texts)-2)
	}
}
