package search_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/quality"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sweptEngine sweeps the sample vault into a fresh store, embedding with the
// deterministic test embedder, and returns an engine over it.
func sweptEngine(t *testing.T, fusion string) *search.Engine {
	return sweptEngineWith(t, search.Options{Fusion: fusion})
}

func sweptEngineWith(t *testing.T, opt search.Options) *search.Engine {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "g.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb := embedtest.New(64)
	info := emb.Info()
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 64, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	opt.Embedder = emb
	eng := search.New(st, opt)
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Sweep(ctx, st, eng, "../../examples/vault", ingest.Options{Embedder: emb, Space: "t"}); err != nil {
		t.Fatal(err)
	}
	return eng
}

// goldenQueries reads the golden ranking queries.
func goldenQueries(t *testing.T) []quality.Query {
	t.Helper()
	f, err := os.Open("testdata/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := quality.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestGoldenRankings writes each query's top results as readable text plus a
// stats line per mode, so any ranking change shows up in review. Regenerate
// with `go test ./internal/search -run TestGoldenRankings -update`.
func TestGoldenRankings(t *testing.T) {
	qs := goldenQueries(t)
	for _, c := range []struct{ name, mode, fusion string }{
		{"lexical", recall.ModeLexical, ""},
		{"hybrid-rrf", recall.ModeHybrid, search.FusionRRF},
		{"hybrid-weighted", recall.ModeHybrid, search.FusionWeighted},
		{"hybrid-convex", recall.ModeHybrid, search.FusionConvex},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := sweptEngine(t, c.fusion)
			var buf bytes.Buffer
			var outs []quality.Outcome
			for _, q := range qs {
				resp, err := eng.Search(context.Background(), recall.SearchRequest{Query: q.Query, Mode: c.mode, Limit: 5})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Mode != c.mode {
					t.Fatalf("mode %s ran as %s (%s)", c.mode, resp.Mode, resp.Note)
				}
				o := quality.Score(q, resp.Results, 5)
				outs = append(outs, o)
				fmt.Fprintf(&buf, "## %s\n", q.Query)
				for i, h := range resp.Results {
					mark := " "
					for _, r := range o.Found {
						if r == i+1 {
							mark = "*"
						}
					}
					fmt.Fprintf(&buf, "%s %d. %s #%d [%s] %s\n", mark, i+1, h.Source, h.ChunkIndex, strings.Join(h.Match, ","), snippet(h.Text))
				}
			}
			rep := quality.Aggregate(c.mode, outs)
			fmt.Fprintf(&buf, "\nstats: n=%d R@1=%.3f R@5=%.3f MRR=%.3f\n", rep.Overall.N, rep.Overall.Recall[1], rep.Overall.Recall[5], rep.Overall.MRR)
			golden := filepath.Join("testdata", "golden-"+c.name+".txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("rankings changed; review and run with -update:\n%s", buf.String())
			}
		})
	}
}

func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 70 {
		return string(r[:70]) + "…"
	}
	return s
}
