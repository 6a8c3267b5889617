package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fullXLMR loads the tokenizer.json that testdata/unigram/gen_xlmr_full.py
// rebuilds with XLM-R's real 250,002-piece vocabulary (too large to
// commit), named by RECALL_XLMR_TOKENIZER.
func fullXLMR(tb testing.TB) (Tokenizer, string) {
	tb.Helper()
	path := os.Getenv("RECALL_XLMR_TOKENIZER")
	if path == "" {
		tb.Skip("RECALL_XLMR_TOKENIZER is not set; build the file with: " +
			"python3 testdata/unigram/gen_xlmr_full.py /tmp/recall-xlmr && " +
			"RECALL_XLMR_TOKENIZER=/tmp/recall-xlmr/tokenizer.json go test -run FullXLMR")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(data)
	tok, err := Parse(data)
	if err != nil {
		tb.Fatal(err)
	}
	return tok, hex.EncodeToString(sum[:])
}

func TestUnigramFullXLMRVocab(t *testing.T) {
	tok, digest := fullXLMR(t)
	var g struct {
		TokenizerSHA256 string `json:"tokenizer_sha256"`
		Cases           []struct {
			Text   string   `json:"text"`
			MaxLen int      `json:"max_len"`
			IDs    []int32  `json:"ids"`
			Tokens []string `json:"tokens"`
		} `json:"cases"`
	}
	readJSON(t, "golden_xlmr_full.json", &g)
	if digest != g.TokenizerSHA256 {
		t.Fatalf("%s has sha256 %s; the golden ids were made from %s", os.Getenv("RECALL_XLMR_TOKENIZER"), digest, g.TokenizerSHA256)
	}
	for _, c := range g.Cases {
		if got := tok.Encode(c.Text, c.MaxLen).IDs; !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q, %d)\n got %v\nwant %v %q", c.Text, c.MaxLen, got, c.IDs, c.Tokens)
		}
	}
}

func BenchmarkUnigramFullXLMR(b *testing.B) {
	tok, _ := fullXLMR(b)
	corpus, err := os.ReadFile(filepath.Join("testdata", "unigram", "corpus.txt"))
	if err != nil {
		b.Fatal(err)
	}
	text := string([]rune(string(corpus))[:2000])
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, 0)
	}
}

func BenchmarkUnigramFullXLMRLoad(b *testing.B) {
	path := os.Getenv("RECALL_XLMR_TOKENIZER")
	if path == "" {
		b.Skip("RECALL_XLMR_TOKENIZER is not set (see TestUnigramFullXLMRVocab)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
