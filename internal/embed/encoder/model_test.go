package encoder

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/recall-mcp/recall"
)

var tinyTexts = []string{
	"the quick brown fox",
	"",
	"recall searches memory, text and vectors!",
	"中文 query: a b c",
	"the lazy dog jumps over the quick brown fox .",
	"unknown zzz words",
}

func loadTiny(t testing.TB, s tinySpec, opts Options) (*Model, map[string]tensor) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny-model")
	w := writeTiny(t, dir, s)
	m, err := Load(dir, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return m, w
}

func embed(t testing.TB, m *Model, kind recall.InputKind, texts ...string) [][]float32 {
	t.Helper()
	vecs, err := m.Embed(context.Background(), kind, texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != m.Info().Dim {
			t.Fatalf("vector %d has %d values, want %d", i, len(v), m.Info().Dim)
		}
	}
	return vecs
}

func maxDiff(a []float32, b []float64) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-b[i]))
	}
	return d
}

// TestForwardMatchesNaive checks the packed float32 forward pass against a
// padded, masked float64 one, for each pooling and weight dtype.
func TestForwardMatchesNaive(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*tinySpec)
	}{
		{"mean normalized", func(s *tinySpec) {}},
		{"cls", func(s *tinySpec) { s.pooling = "cls" }},
		{"not normalized", func(s *tinySpec) { s.normalize = false }},
		{"bert prefix", func(s *tinySpec) { s.prefix = "bert." }},
		{"f16 weights", func(s *tinySpec) { s.dtype = "F16" }},
		{"bf16 weights", func(s *tinySpec) { s.dtype = "BF16" }},
		{"one head one layer", func(s *tinySpec) { s.heads, s.layers = 1, 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := defaultTiny()
			s.maxSeqLen = 0 // no windows: compare whole texts
			tt.modify(&s)
			m, w := loadTiny(t, s, Options{})
			var ids [][]int32
			for _, text := range tinyTexts {
				ids = append(ids, m.tok.Encode(text, 0).IDs)
			}
			want := naiveEmbed(w, s, ids, s.pooling == "cls", s.normalize)
			got := embed(t, m, recall.InputDocument, tinyTexts...)
			for i := range got {
				if d := maxDiff(got[i], want[i]); d > 2e-5 {
					t.Errorf("text %q: max difference %g from the naive forward pass", tinyTexts[i], d)
				}
			}
		})
	}
}

// TestBatchInvariance checks that a text's vector does not depend on the
// texts embedded with it or on how the work is cut into forward passes.
func TestBatchInvariance(t *testing.T) {
	for _, pool := range []string{"mean", "cls"} {
		s := defaultTiny()
		s.maxSeqLen, s.pooling = 0, pool
		m, _ := loadTiny(t, s, Options{})
		together := embed(t, m, recall.InputDocument, tinyTexts...)
		small, _ := loadTiny(t, s, Options{BatchTokens: 1})
		oneByOne := embed(t, small, recall.InputDocument, tinyTexts...)
		for i, text := range tinyTexts {
			alone := embed(t, m, recall.InputDocument, text)[0]
			for j := range alone {
				if math.Abs(float64(alone[j]-together[i][j])) > 1e-6 || math.Abs(float64(alone[j]-oneByOne[i][j])) > 1e-6 {
					t.Fatalf("%s pooling, text %q: vector differs between batch (%v), single (%v) and one-per-pass (%v)", pool, text, together[i][:4], alone[:4], oneByOne[i][:4])
				}
			}
		}
	}
}

func TestEmbedConcurrent(t *testing.T) {
	m, _ := loadTiny(t, defaultTiny(), Options{})
	want := embed(t, m, recall.InputDocument, tinyTexts...)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := m.Embed(context.Background(), recall.InputDocument, tinyTexts)
			if err != nil {
				errs <- err.Error()
				return
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					errs <- "concurrent Embed gave a different vector for " + tinyTexts[i]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestEmbedEmpty(t *testing.T) {
	m, _ := loadTiny(t, defaultTiny(), Options{})
	vecs, err := m.Embed(context.Background(), recall.InputQuery, nil)
	if err != nil || len(vecs) != 0 {
		t.Fatalf("Embed(nil) = %d vectors, %v; want none and no error", len(vecs), err)
	}
	if _, err := m.Embed(context.Background(), recall.InputKind(7), []string{"x"}); recall.ErrorCode(err) != recall.EINVALID {
		t.Fatalf("unknown input kind: %v; want invalid", err)
	}
}

func TestInfo(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*tinySpec)
		opts   Options
		want   recall.EmbedderInfo
	}{
		{"defaults", func(s *tinySpec) {}, Options{}, recall.EmbedderInfo{Provider: "builtin", Model: "tiny-model", Dim: 16, MaxTokens: 16, Normalized: true}},
		{"named", func(s *tinySpec) {}, Options{Name: "all-MiniLM-L6-v2"}, recall.EmbedderInfo{Provider: "builtin", Model: "all-MiniLM-L6-v2", Dim: 16, MaxTokens: 16, Normalized: true}},
		{"window from positions", func(s *tinySpec) { s.maxSeqLen = 0 }, Options{}, recall.EmbedderInfo{Provider: "builtin", Model: "tiny-model", Dim: 16, MaxTokens: 64, Normalized: true}},
		{"window capped by positions", func(s *tinySpec) { s.maxSeqLen = 1000 }, Options{}, recall.EmbedderInfo{Provider: "builtin", Model: "tiny-model", Dim: 16, MaxTokens: 64, Normalized: true}},
		{"smaller window", func(s *tinySpec) {}, Options{MaxTokens: 8}, recall.EmbedderInfo{Provider: "builtin", Model: "tiny-model", Dim: 16, MaxTokens: 8, Normalized: true}},
		{"no normalize module", func(s *tinySpec) { s.normalize = false }, Options{}, recall.EmbedderInfo{Provider: "builtin", Model: "tiny-model", Dim: 16, MaxTokens: 16}},
		{"no modules.json", func(s *tinySpec) { s.noModules, s.normalize = true, false }, Options{}, recall.EmbedderInfo{Provider: "builtin", Model: "tiny-model", Dim: 16, MaxTokens: 16, Normalized: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := defaultTiny()
			tt.modify(&s)
			m, _ := loadTiny(t, s, tt.opts)
			if got := m.Info(); got != tt.want {
				t.Fatalf("Info() = %+v, want %+v", got, tt.want)
			}
			v := embed(t, m, recall.InputDocument, "the quick brown fox")[0]
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			if tt.want.Normalized && math.Abs(math.Sqrt(ss)-1) > 1e-5 {
				t.Fatalf("norm %g; want 1", math.Sqrt(ss))
			}
			if !tt.want.Normalized && math.Abs(math.Sqrt(ss)-1) < 1e-3 {
				t.Fatalf("norm %g; an unnormalized model should not give unit vectors", math.Sqrt(ss))
			}
		})
	}
}

func TestPrefixes(t *testing.T) {
	e5 := Prefixes{Query: "query: ", Document: "passage: "}
	tests := []struct {
		names   []string
		prompts map[string]string
		want    Prefixes
	}{
		{[]string{"all-MiniLM-L6-v2"}, nil, Prefixes{}},
		{[]string{"multilingual-e5-small"}, nil, e5},
		{[]string{"model", "", "intfloat/e5-small-v2"}, nil, e5},
		{[]string{"bge-small-en-v1.5"}, nil, Prefixes{Query: bgeQueryInstruction}},
		{[]string{"BAAI/bge-small-zh-v1.5"}, nil, Prefixes{Query: bgeZhQueryInstruction}},
		{[]string{"resnet5-e50"}, nil, Prefixes{}},
		{[]string{"bge-small-en-v1.5"}, map[string]string{"query": "Q: ", "document": "D: "}, Prefixes{Query: "Q: ", Document: "D: "}},
		{[]string{"x"}, map[string]string{"query": "query: ", "passage": "passage: "}, e5},
		{[]string{"bge-small-en-v1.5"}, map[string]string{"query": "", "document": ""}, Prefixes{Query: bgeQueryInstruction}},
	}
	for _, tt := range tests {
		if got := defaultPrefixes(tt.names, tt.prompts); got != tt.want {
			t.Errorf("defaultPrefixes(%q, %v) = %+v, want %+v", tt.names, tt.prompts, got, tt.want)
		}
	}
}

// TestPrefixApplied checks that prefixes reach the model: with E5 prefixes
// a query and a document embed differently, and exactly like the prefixed
// text without prefixes.
func TestPrefixApplied(t *testing.T) {
	s := defaultTiny()
	s.nameOrPath = "intfloat/e5-tiny"
	m, _ := loadTiny(t, s, Options{})
	if got := m.Prefixes(); got != (Prefixes{Query: "query: ", Document: "passage: "}) {
		t.Fatalf("prefixes %+v; want E5's, detected from _name_or_path", got)
	}
	q := embed(t, m, recall.InputQuery, "the dog")[0]
	d := embed(t, m, recall.InputDocument, "the dog")[0]
	plain, _ := loadTiny(t, s, Options{Prefixes: &Prefixes{}})
	want := embed(t, plain, recall.InputQuery, "query: the dog", "passage: the dog")
	if !slices.Equal(q, want[0]) || !slices.Equal(d, want[1]) {
		t.Fatal("prefixed embeddings differ from embedding the prefixed texts")
	}
	if slices.Equal(q, d) {
		t.Fatal("query and document embed the same despite different prefixes")
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		code   string
		msg    string
	}{
		{"missing config", func(t *testing.T, dir string) { remove(t, dir, "config.json") }, recall.EUNAVAILABLE, "config.json is missing"},
		{"missing tokenizer", func(t *testing.T, dir string) { remove(t, dir, "tokenizer.json") }, recall.EUNAVAILABLE, "tokenizer file"},
		{"missing weights", func(t *testing.T, dir string) { remove(t, dir, "model.safetensors") }, recall.EUNAVAILABLE, "weights"},
		{"truncated weights", func(t *testing.T, dir string) { truncate(t, dir, "model.safetensors", -100) }, recall.EINVALID, "spans bytes"},
		{"truncated header", func(t *testing.T, dir string) { truncate(t, dir, "model.safetensors", 20) }, recall.EINVALID, "header length"},
		{"empty weights", func(t *testing.T, dir string) { truncate(t, dir, "model.safetensors", 3) }, recall.EINVALID, "8-byte header"},
		{"hidden size mismatch", func(t *testing.T, dir string) { patchConfig(t, dir, "hidden_size", 32) }, recall.EINVALID, "has shape [35 16]; the config implies [35 32]"},
		{"missing layer", func(t *testing.T, dir string) { patchConfig(t, dir, "num_hidden_layers", 3) }, recall.EINVALID, "lack tensor encoder.layer.2"},
		{"heads do not divide", func(t *testing.T, dir string) { patchConfig(t, dir, "num_attention_heads", 3) }, recall.EINVALID, "not a multiple"},
		{"activation", func(t *testing.T, dir string) { patchConfig(t, dir, "hidden_act", "relu") }, recall.EINVALID, `hidden_act "relu"`},
		{"model type", func(t *testing.T, dir string) { patchConfig(t, dir, "model_type", "xlm-roberta") }, recall.EINVALID, `model_type "xlm-roberta"`},
		{"zero layers", func(t *testing.T, dir string) { patchConfig(t, dir, "num_hidden_layers", 0) }, recall.EINVALID, "must all be positive"},
		{"vocab mismatch", func(t *testing.T, dir string) { patchConfig(t, dir, "vocab_size", 20) }, recall.EINVALID, "has shape [35 16]; the config implies [20 16]"},
		{"max pooling", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{"pooling_mode_max_tokens": true})
		}, recall.EINVALID, "only CLS or mean pooling"},
		{"unknown module", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, "modules.json"), []map[string]any{{"path": "", "type": "sentence_transformers.models.Transformer"}, {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}})
		}, recall.EINVALID, "models.Dense is not supported"},
		{"config not json", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "config.json"), "{") }, recall.EINVALID, "not valid JSON"},
		{"nan weight", func(t *testing.T, dir string) {
			w := tinyWeights(defaultTiny())
			w["embeddings.LayerNorm.bias"].data[3] = float32(math.NaN())
			writeSafetensors(t, filepath.Join(dir, "model.safetensors"), w, "F32")
		}, recall.EINVALID, "NaN or Inf"},
		{"overlapping tensors", func(t *testing.T, dir string) { corruptOffsets(t, dir) }, recall.EINVALID, "overlap"},
		{"overlap too large", func(t *testing.T, dir string) {}, recall.EINVALID, "overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			writeTiny(t, dir, defaultTiny())
			tt.break_(t, dir)
			opts := Options{}
			if tt.name == "overlap too large" {
				opts.Overlap = 14
			}
			_, err := Load(dir, opts)
			if err == nil {
				t.Fatal("Load succeeded; want an error")
			}
			if recall.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q (code %s); want code %s mentioning %q", err, recall.ErrorCode(err), tt.code, tt.msg)
			}
		})
	}
}

// cancelAfter is a context whose Err reports cancellation after n calls,
// to cancel Embed between two batches.
type cancelAfter struct {
	context.Context
	mu sync.Mutex
	n  int
}

func (c *cancelAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

func TestEmbedCancel(t *testing.T) {
	m, _ := loadTiny(t, defaultTiny(), Options{BatchTokens: 8})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, recall.InputDocument, tinyTexts); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
	// Cancel between batches: one batch runs, then Embed stops.
	c := &cancelAfter{Context: context.Background(), n: 1}
	_, err := m.Embed(c, recall.InputDocument, tinyTexts)
	if !errors.Is(err, context.Canceled) || recall.ErrorCode(err) != recall.ECANCELED {
		t.Fatalf("canceled between batches: %v", err)
	}
	if c.n != 0 {
		t.Fatalf("Embed checked the context %d times fewer than expected", c.n)
	}
}

// TestNoSpecialTokens covers tokenizers without a post-processor, where an
// empty text has no token at all: its vector must be zeros, not NaN.
func TestNoSpecialTokens(t *testing.T) {
	for _, pool := range []string{"mean", "cls"} {
		s := defaultTiny()
		s.pooling = pool
		dir := filepath.Join(t.TempDir(), "m")
		writeTiny(t, dir, s)
		tok := tinyTokenizer()
		tok["post_processor"] = nil
		writeJSON(t, filepath.Join(dir, "tokenizer.json"), tok)
		m, err := Load(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// More empty texts than tokens in the batch: the CLS path's last
		// layer then has more rows than the batch has tokens.
		texts := []string{"", "", "the dog", "", "", ""}
		vecs := embed(t, m, recall.InputDocument, texts...)
		alone := embed(t, m, recall.InputDocument, "the dog")[0]
		for i, vec := range vecs {
			for j, v := range vec {
				switch {
				case texts[i] == "" && v != 0:
					t.Fatalf("%s pooling: empty text %d gives %g at %d; want a zero vector", pool, i, v, j)
				case texts[i] != "" && math.Abs(float64(v-alone[j])) > 1e-6:
					t.Fatalf("%s pooling: %q embeds differently among empty texts", pool, texts[i])
				}
			}
		}
	}
}
