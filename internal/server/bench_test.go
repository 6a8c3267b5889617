package server

import (
	"context"
	"fmt"
	"golang.org/x/time/rate"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/repair"
)

// benchCorpus writes n archive chunks of Zipf-distributed words and embeds them.
func benchCorpus(b *testing.B, f *fixture, n int) {
	b.Helper()
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	var docs []recall.Document
	for d := 0; d < n/10; d++ {
		doc := recall.Document{Source: recall.Source{ID: fmt.Sprintf("bench/%04d.md", d), Kind: recall.KindArchive,
			Title: fmt.Sprintf("doc %d", d), ChunkCount: 10, IndexState: recall.IndexOK}}
		for c := range 10 {
			words := make([]string, 40)
			for i := range words {
				words[i] = vocab[zipf.Uint64()]
			}
			text := strings.Join(words, " ")
			doc.Chunks = append(doc.Chunks, recall.Chunk{Index: c, Text: text, Hash: recall.TextHash(text)})
		}
		doc.Source.ContentHash = recall.TextHash(doc.Source.ID)
		docs = append(docs, doc)
	}
	ctx := context.Background()
	if _, err := f.eng.Write(ctx, docs, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := repair.Run(ctx, f.st, f.eng, testSpace, f.emb, repair.Options{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSearchMCP is search_archive over Streamable HTTP on loopback
// with the Go SDK client, 2,000 chunks, the test embedder.
func BenchmarkSearchMCP(b *testing.B) {
	// Unlimited rate: parallel clients pass 1,000 requests a second.
	f := newFixture(b, func(o *Options) { o.Rate = rate.Inf })
	benchCorpus(b, f, 2000)
	for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid} {
		b.Run(mode, func(b *testing.B) {
			cs := f.connect(plainTok)
			args := map[string]any{"query": "w3x w17x w250x", "mode": mode}
			b.ResetTimer()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_archive", Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, resultText(res))
				}
			}
		})
		b.Run(mode+"-parallel", func(b *testing.B) {
			var n atomic.Int32
			b.RunParallel(func(pb *testing.PB) {
				cs, err := f.dial(plainTok, f.hs.URL+"/mcp")
				if err != nil {
					b.Error(err)
					return
				}
				defer cs.Close()
				args := map[string]any{"query": fmt.Sprintf("w%dx w17x", n.Add(1)), "mode": mode}
				for pb.Next() {
					if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_archive", Arguments: args}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkSearchREST is POST /api/search on loopback.
func BenchmarkSearchREST(b *testing.B) {
	f := newFixture(b, nil)
	benchCorpus(b, f, 2000)
	client := &http.Client{}
	for b.Loop() {
		req, _ := http.NewRequest("POST", f.hs.URL+"/api/search", strings.NewReader(`{"query":"w3x w17x w250x","mode":"hybrid"}`))
		req.Header.Set("Authorization", "Bearer "+plainTok)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// BenchmarkFrontDoor is the per-request cost of the checks before any
// route: Host, token hash and constant-time comparison, rate limiter.
func BenchmarkFrontDoor(b *testing.B) {
	f := newFixture(b, nil)
	client := &http.Client{}
	for b.Loop() {
		req, _ := http.NewRequest("GET", f.hs.URL+"/no-such-route", nil)
		req.Header.Set("Authorization", "Bearer "+plainTok)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

func BenchmarkEscape(b *testing.B) {
	clean := strings.Repeat("An ordinary sentence of archived chat, nothing hidden. ", 40)
	dirty := strings.Repeat("An \u202eordinary\u202c sentence with \x1b[0m escapes\u200b. ", 40)
	for _, tc := range []struct{ name, text string }{{"clean", clean}, {"dirty", dirty}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				escapeBlock(tc.text)
			}
		})
	}
}
