package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// recall's own Ollama client gets, through the stand-in, exactly the
// vectors embedtest gives.
func TestOllamaClientRoundTrip(t *testing.T) {
	var n counts
	hs := httptest.NewServer(handler(48, &n))
	defer hs.Close()
	o, err := embed.NewOllama(embed.OllamaConfig{BaseURL: hs.URL, Model: "bench-standin"})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"the night train to Vienna", "soup recipes", "the night train to Vienna"}
	vecs, err := o.Embed(context.Background(), recall.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if want := embedtest.Vector(texts[i], 48); !slices.Equal(v, want) {
			t.Errorf("text %d: vector differs from embedtest's", i)
		}
	}
	if got := o.Info().Dim; got != 48 {
		t.Errorf("the client learned dimension %d, want 48", got)
	}
	if n.requests.Load() == 0 || n.texts.Load() != int64(len(texts)) {
		t.Errorf("counted %d requests, %d texts", n.requests.Load(), n.texts.Load())
	}
}

func TestRefusesMalformedRequests(t *testing.T) {
	hs := httptest.NewServer(handler(8, &counts{}))
	defer hs.Close()
	for _, tc := range []struct {
		method, body string
		want         int
	}{
		{"POST", `{"model":"m","input":[]}`, http.StatusBadRequest},
		{"POST", `not json`, http.StatusBadRequest},
		{"GET", ``, http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, hs.URL+"/api/embed", strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %q: %d, want %d", tc.method, tc.body, resp.StatusCode, tc.want)
		}
	}
}
