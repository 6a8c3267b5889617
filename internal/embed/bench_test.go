package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// openAIBody is a realistic response: n vectors of dim floats as servers
// print them (full float32 precision).
func openAIBody(b *testing.B, n, dim int) []byte {
	b.Helper()
	data := make([]map[string]any, n)
	for i := range data {
		data[i] = map[string]any{"index": i, "embedding": unit(fakeVec(fmt.Sprint(i), dim))}
	}
	body, err := json.Marshal(map[string]any{"data": data, "model": "m"})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkDecodeOpenAI(b *testing.B) {
	body := openAIBody(b, 64, 1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (openAIWire{}).decode(body, 64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalize1024(b *testing.B) {
	v := fakeVec("x", 1024)
	for b.Loop() {
		Normalize(v)
	}
}

func BenchmarkValidate64x1024(b *testing.B) {
	vs := vecs(make([]string, 64), 1024)
	for b.Loop() {
		if err := Validate(vs, 64, 1024); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmbedRoundTrip measures the client's whole path for one batch of
// 32 texts against a local server that answers at once.
func BenchmarkEmbedRoundTrip(b *testing.B) {
	body := openAIBody(b, 32, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", Limits: Limits{MaxBatch: 32}})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = fmt.Sprintf("a passage of a conversation, number %d, of typical chunk length ......", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Embed(context.Background(), recall.InputDocument, texts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryCacheHit(b *testing.B) {
	c := WithQueryCache(embedtest.New(1024), 1024, time.Hour)
	q := []string{"what did we decide about the garden"}
	if _, err := c.Embed(context.Background(), recall.InputQuery, q); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Embed(context.Background(), recall.InputQuery, q); err != nil {
			b.Fatal(err)
		}
	}
}
