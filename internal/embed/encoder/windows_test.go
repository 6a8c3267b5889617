package encoder

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

// longText is 46 tokens with the tiny vocabulary: far over its 16-token window.
var longText = strings.Repeat("the quick brown fox jumps over the lazy dog . ", 4) + "recall memory search vector text"

func TestSplitWindows(t *testing.T) {
	tests := []struct {
		name        string
		opts        Options
		prefix      bool
		wantOverlap int
	}{
		{"default overlap", Options{}, false, 14 / 8},
		{"overlap 4", Options{Overlap: 4}, false, 4},
		{"no overlap", Options{Overlap: -1}, false, 0},
		{"window 8", Options{MaxTokens: 8, Overlap: 2}, false, 2},
		{"with prefix", Options{Prefixes: &Prefixes{Document: "passage: "}, Overlap: 3}, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := loadTiny(t, defaultTiny(), tt.opts)
			full := m.tok.Encode(m.prefixes.Document+longText, 0).IDs
			content := full[1 : len(full)-1]
			var prefix []int32
			if tt.prefix {
				prefix = m.tok.Encode(m.prefixes.Document, 0).IDs[1:]
				prefix = prefix[:len(prefix)-1]
				if len(prefix) == 0 || !slices.Equal(content[:len(prefix)], prefix) {
					t.Fatalf("prefix tokens %v do not start %v", prefix, content)
				}
				content = content[len(prefix):]
			}
			wins := m.split(recall.InputDocument, longText)
			if len(wins) < 3 {
				t.Fatalf("%d windows for %d tokens; want several", len(wins), len(full))
			}
			var rebuilt []int32
			for i, w := range wins {
				ids := w.seq.ids
				if len(ids) > m.Info().MaxTokens || ids[0] != 2 || ids[len(ids)-1] != 3 {
					t.Fatalf("window %d = %v: longer than %d or not wrapped in [CLS] ... [SEP]", i, ids, m.Info().MaxTokens)
				}
				body := ids[1 : len(ids)-1]
				if !slices.Equal(body[:len(prefix)], prefix) {
					t.Fatalf("window %d does not start with the prefix", i)
				}
				body = body[len(prefix):]
				if w.tokens != len(body) {
					t.Fatalf("window %d counts %d tokens, holds %d", i, w.tokens, len(body))
				}
				if i > 0 {
					// Each window repeats the end of the one before it.
					if !slices.Equal(body[:tt.wantOverlap], rebuilt[len(rebuilt)-tt.wantOverlap:]) {
						t.Fatalf("window %d does not overlap the previous one by %d tokens", i, tt.wantOverlap)
					}
					body = body[tt.wantOverlap:]
				}
				rebuilt = append(rebuilt, body...)
			}
			if !slices.Equal(rebuilt, content) {
				t.Fatalf("windows rebuild %v, want %v", rebuilt, content)
			}
		})
	}
}

// TestEmbedWindows checks each window's vector against the naive forward
// pass and the combination of windows into one vector.
func TestEmbedWindows(t *testing.T) {
	s := defaultTiny()
	m, w := loadTiny(t, s, Options{})
	perText, err := m.EmbedWindows(context.Background(), recall.InputDocument, []string{longText, "the dog"})
	if err != nil {
		t.Fatal(err)
	}
	if len(perText) != 2 || len(perText[1]) != 1 {
		t.Fatalf("windows per text: %d texts, short text %d windows", len(perText), len(perText[1]))
	}
	wins := m.split(recall.InputDocument, longText)
	if len(perText[0]) != len(wins) {
		t.Fatalf("%d window vectors for %d windows", len(perText[0]), len(wins))
	}
	var ids [][]int32
	for _, win := range wins {
		ids = append(ids, win.seq.ids)
	}
	want := naiveEmbed(w, s, ids, false, true)
	combined := make([]float64, s.hidden)
	total := 0
	for i, win := range perText[0] {
		if d := maxDiff(win.Vec, want[i]); d > 2e-5 {
			t.Fatalf("window %d: max difference %g from the naive forward pass", i, d)
		}
		if win.Tokens != wins[i].tokens {
			t.Fatalf("window %d: %d tokens, want %d", i, win.Tokens, wins[i].tokens)
		}
		total += win.Tokens
		for j, v := range want[i] {
			combined[j] += float64(win.Tokens) * v
		}
	}
	var ss float64
	for _, v := range combined {
		ss += v * v
	}
	for j := range combined {
		combined[j] /= math.Sqrt(ss)
	}
	got := embed(t, m, recall.InputDocument, longText)[0]
	if d := maxDiff(got, combined); d > 2e-5 {
		t.Fatalf("combined vector differs from the token-weighted average of windows by %g", d)
	}

	first, _ := loadTiny(t, s, Options{Windows: WindowsFirst})
	truncated := first.tok.Encode(longText, 16).IDs
	wantFirst := naiveEmbed(w, s, [][]int32{truncated}, false, true)[0]
	if d := maxDiff(embed(t, first, recall.InputDocument, longText)[0], wantFirst); d > 2e-5 {
		t.Fatalf("WindowsFirst differs from the truncated text by %g", d)
	}
}
