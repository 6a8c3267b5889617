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
	r.st, r.eng = seed(t, recall.VectorSpace{Name: "s", Provider: "ollama", Model: "m", Dim: 4, Normalized: true}, texts)
	return r
}

// seed returns a store with space sp and one source of texts, and its
// engine.
func seed(t *testing.T, sp recall.VectorSpace, texts []string) (*sqlite.DB, *search.Engine) {
	t.Helper()
	st, eng := seedAt(t, filepath.Join(t.TempDir(), "r.db"), texts, sp)
	t.Cleanup(func() { st.Close() })
	return st, eng
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
	if err == nil || p.Embedded != 0 || p.Cursor != 0 || r.calls.Load() > 6 { // the batch, four texts alone, the probe
		t.Fatalf("embedder down: %+v, %v after %d calls; want an error at once, where it started", p, err, r.calls.Load())
	}

	r.down.Store(false)
	p, err = repair.Run(ctx, r.st, r.eng, "s", r.emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != len(texts)-2 || p.Missing != 2 || p.Refused == 0 {
		t.Fatalf("two texts refused: %+v, %v; want the other %d embedded and the run done", p, err, len(texts)-2)
	}
}

// A refused text left alone in its batch (the 17th of a page, with batches
// of 16) is passed once the texts before it have vectors, so it holds up
// none of the texts written after it; while the embedder is down, the run
// still stops where it is.
func TestRepairPassesALoneRefusedText(t *testing.T) {
	var texts []string
	for i := range 16 {
		texts = append(texts, fmt.Sprintf("early text %d", i))
	}
	r := newRefusals(t, append(texts, "POISON alone"))
	ctx := context.Background()
	p, err := repair.Run(ctx, r.st, r.eng, "s", r.emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != 16 || p.Refused != 1 || p.Missing != 1 {
		t.Fatalf("the 17th text refused: %+v, %v; want the 16 others embedded and the run done", p, err)
	}

	later := recall.Document{Source: recall.Source{ID: "later", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash("later"), ChunkCount: 3, IndexState: recall.IndexOK}}
	for i := range 3 {
		s := fmt.Sprintf("written later %d", i)
		later.Chunks = append(later.Chunks, recall.Chunk{Index: i, Text: s, Header: "t", Hash: recall.TextHash(s)})
	}
	if _, err := r.eng.Write(ctx, []recall.Document{later}, nil); err != nil {
		t.Fatal(err)
	}
	r.down.Store(true)
	if p, err := repair.Run(ctx, r.st, r.eng, "s", r.emb, repair.Options{}); err == nil || p.Embedded != 0 {
		t.Fatalf("embedder down: %+v, %v; want an error", p, err)
	}
	r.down.Store(false)
	for run := 1; run <= 2; run++ {
		p, err := repair.Run(ctx, r.st, r.eng, "s", r.emb, repair.Options{})
		if err != nil || !p.Done || p.Missing != 1 {
			t.Fatalf("run %d after later writes: %+v, %v; want them embedded, only the refused text missing", run, p, err)
		}
	}
}

// A batch holding only refused texts (here all a store holds) is counted
// refused, and the run is done.
func TestRepairPassesABatchOfOnlyRefusedTexts(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		var texts []string
		for i := range n {
			texts = append(texts, fmt.Sprintf("POISON %d", i))
		}
		r := newRefusals(t, texts)
		p, err := repair.Run(context.Background(), r.st, r.eng, "s", r.emb, repair.Options{})
		if err != nil || !p.Done || p.Refused != n || p.Missing != n {
			t.Errorf("%d refused texts only: %+v, %v; want the run done with %d refused", n, p, err, n)
		}
	}
}
