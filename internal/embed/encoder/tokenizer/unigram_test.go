package tokenizer

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fixtures and golden encodings in testdata/unigram come from Hugging
// Face tokenizers (see testdata/unigram/gen.py, which says how each fixture
// was made).

type unigramGolden struct {
	Tokenizers []struct {
		Tokenizer string `json:"tokenizer"`
		Cases     []struct {
			Text          string   `json:"text"`
			MaxLen        int      `json:"max_len"`
			IDs           []int32  `json:"ids"`
			TypeIDs       []int32  `json:"type_ids"`
			AttentionMask []int32  `json:"attention_mask"`
			Tokens        []string `json:"tokens"`
		} `json:"cases"`
	} `json:"tokenizers"`
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "unigram", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestUnigramGolden(t *testing.T) {
	var g unigramGolden
	readJSON(t, "golden.json", &g)
	if len(g.Tokenizers) != 5 {
		t.Fatalf("golden.json has %d tokenizers, want 5", len(g.Tokenizers))
	}
	for _, gt := range g.Tokenizers {
		t.Run(gt.Tokenizer, func(t *testing.T) {
			tok, err := LoadTokenizer(filepath.Join("testdata", "unigram", gt.Tokenizer))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tok.(*unigram); !ok {
				t.Fatalf("LoadTokenizer returned %T, want *unigram", tok)
			}
			texts := map[string]bool{}
			for _, c := range gt.Cases {
				texts[c.Text] = true
				got := tok.Encode(c.Text, c.MaxLen)
				if !slices.Equal(got.IDs, c.IDs) || !slices.Equal(got.TypeIDs, c.TypeIDs) || !slices.Equal(got.AttentionMask, c.AttentionMask) {
					t.Errorf("Encode(%q, %d)\n got ids %v types %v mask %v\nwant ids %v types %v mask %v\nwant tokens %q",
						c.Text, c.MaxLen, got.IDs, got.TypeIDs, got.AttentionMask, c.IDs, c.TypeIDs, c.AttentionMask, c.Tokens)
				}
			}
			if len(texts) < 40 {
				t.Errorf("only %d distinct golden texts, want at least 40", len(texts))
			}
		})
	}
}

// TestUnigramRandomGolden runs seeded random mixes of words, special
// tokens, added tokens, whitespace, marks and emoji through each fixture.
func TestUnigramRandomGolden(t *testing.T) {
	var g struct {
		Tokenizers []struct {
			Tokenizer string `json:"tokenizer"`
			Cases     []struct {
				Text string  `json:"text"`
				IDs  []int32 `json:"ids"`
			} `json:"cases"`
		} `json:"tokenizers"`
	}
	readJSON(t, "golden_random.json", &g)
	if len(g.Tokenizers) != 5 {
		t.Fatalf("golden_random.json has %d tokenizers, want 5", len(g.Tokenizers))
	}
	for _, gt := range g.Tokenizers {
		tok, err := LoadTokenizer(filepath.Join("testdata", "unigram", gt.Tokenizer))
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, c := range gt.Cases {
			if got := tok.Encode(c.Text, 0).IDs; !slices.Equal(got, c.IDs) {
				if bad++; bad <= 5 {
					t.Errorf("%s: Encode(%q)\n got %v\nwant %v", gt.Tokenizer, c.Text, got, c.IDs)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d texts differ", gt.Tokenizer, bad, len(gt.Cases))
		}
	}
}

type charsmapGolden struct {
	Charsmap string            `json:"charsmap"` // the tokenizer.json holding the map
	Changed  []json.RawMessage `json:"changed"`  // [code point, normalized]
	Strings  [][2]string       `json:"strings"`  // [input, normalized]
}

// TestCharsmapGolden checks the precompiled map against the reference on
// every code point it changes (and, by omission, on every one it keeps) and
// on strings whose grapheme clusters matter.
func TestCharsmapGolden(t *testing.T) {
	for _, name := range []string{"charsmap_nmt_nfkc.json", "charsmap_kyoto.json"} {
		t.Run(name, func(t *testing.T) {
			var g charsmapGolden
			readJSON(t, name, &g)
			cm := loadCharsmap(t, g.Charsmap)
			want := make(map[rune]string, len(g.Changed))
			for _, raw := range g.Changed {
				var pair [2]any
				if err := json.Unmarshal(raw, &pair); err != nil {
					t.Fatal(err)
				}
				want[rune(pair[0].(float64))] = pair[1].(string)
			}
			if len(want) < 1000 {
				t.Fatalf("golden lists %d changed code points; the map has thousands", len(want))
			}
			bad := 0
			for r := rune(0); r <= utf8.MaxRune; r++ {
				if !utf8.ValidRune(r) {
					continue
				}
				s := string(r)
				w, ok := want[r]
				if !ok {
					w = s
				}
				if got := cm.normalize(s); got != w {
					if bad++; bad <= 20 {
						t.Errorf("U+%04X %q: got %q, want %q", r, s, got, w)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d code points normalize differently", bad)
			}
			for _, c := range g.Strings {
				if got := cm.normalize(c[0]); got != c[1] {
					t.Errorf("normalize(%q) = %q, want %q", c[0], got, c[1])
				}
			}
		})
	}
}

func loadCharsmap(t testing.TB, tokenizerFile string) *charsmap {
	t.Helper()
	var doc struct {
		Normalizer struct {
			Type     string `json:"type"`
			Charsmap string `json:"precompiled_charsmap"`
		} `json:"normalizer"`
	}
	readJSON(t, tokenizerFile, &doc)
	if doc.Normalizer.Type != "Precompiled" {
		t.Fatalf("%s: normalizer is %q, want Precompiled", tokenizerFile, doc.Normalizer.Type)
	}
	blob, err := base64.StdEncoding.DecodeString(doc.Normalizer.Charsmap)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := parseCharsmap(blob)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func TestParseCharsmapRejectsBadBlobs(t *testing.T) {
	tests := []struct {
		name string
		blob []byte
	}{
		{"empty", nil},
		{"short header", []byte{1, 0}},
		{"trie larger than blob", []byte{8, 0, 0, 0, 1, 2, 3, 4}},
		{"trie size not whole units", []byte{3, 0, 0, 0, 1, 2, 3}},
		{"pool not UTF-8", []byte{4, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseCharsmap(tt.blob); err == nil {
				t.Errorf("parseCharsmap accepted %v", tt.blob)
			}
		})
	}
}

// A trie whose offsets point outside itself must not crash normalization.
func TestCharsmapCorruptTrieDoesNotPanic(t *testing.T) {
	blob := []byte{8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x41, 0xff, 0xff, 0xff, 'x', 0}
	cm, err := parseCharsmap(blob)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"A", "hello", "é", "日本", "\x00"} {
		_ = cm.normalize(s)
	}
}

// miniUnigram writes a small Unigram tokenizer.json with the given vocabulary
// and returns it loaded.
func miniUnigram(t *testing.T, vocab [][2]any, extra map[string]any) Tokenizer {
	t.Helper()
	doc := map[string]any{
		"model": map[string]any{"type": "Unigram", "unk_id": 0, "vocab": vocab},
		"pre_tokenizer": map[string]any{
			"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true,
		},
	}
	for k, v := range extra {
		doc[k] = v
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestUnigramViterbi checks segmentations worked out by hand.
func TestUnigramViterbi(t *testing.T) {
	vocab := [][2]any{
		{"<unk>", 0}, {"▁", -2}, {"a", -3}, {"b", -3}, {"ab", -4}, {"▁ab", -1},
		{"▁a", -5}, {"c", -2}, {"abc", -10}, {"<0x78>", -1},
	}
	tok := miniUnigram(t, vocab, nil)
	tests := []struct {
		text string
		want []int32
	}{
		{"ab", []int32{5}},               // ▁ab (-1) beats ▁ a b (-8) and ▁a b (-8)
		{"abc", []int32{5, 7}},           // ▁ab c (-3)
		{"ba", []int32{1, 3, 2}},         // ▁ b a
		{"xyz", []int32{1, 0}},           // unknown characters fuse into one <unk>
		{"axya", []int32{6, 0, 2}},       // ▁a <unk> a
		{"a b", []int32{6, 1, 3}},        // words split before ▁
		{"日本", []int32{1, 0}},            // multi-byte unknowns fuse too
		{"", nil},                        // nothing at all
		{"c  c", []int32{1, 7, 1, 1, 7}}, // ▁c ▁▁c: a run of ▁ opens one piece
	}
	for _, tt := range tests {
		got := tok.Encode(tt.text, 0)
		if !slices.Equal(got.IDs, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.text, got.IDs, tt.want)
		}
	}
}

// Equal scores: the reference keeps the first path to reach a position,
// which is the one whose last piece starts earliest.
func TestUnigramTieKeepsFirstPath(t *testing.T) {
	vocab := [][2]any{{"<unk>", 0}, {"x", -1}, {"y", -1}, {"xy", -2}, {"▁", -1}}
	tok := miniUnigram(t, vocab, map[string]any{"pre_tokenizer": nil})
	if got := tok.Encode("xy", 0).IDs; !slices.Equal(got, []int32{3}) {
		t.Errorf("Encode(xy) = %v, want [3] (xy reaches the end before x y)", got)
	}
}

func TestUnigramByteFallback(t *testing.T) {
	vocab := [][2]any{{"<unk>", 0}, {"▁", -1}, {"a", -1}}
	for b := 0; b < 256; b++ {
		vocab = append(vocab, [2]any{"<0x" + strings.ToUpper(hex2(b)) + ">", 0})
	}
	doc := map[string]any{"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": true}
	tok := miniUnigram(t, vocab, map[string]any{"model": doc})
	got := tok.Encode("aé", 0).IDs
	want := []int32{1, 2, 3 + 0xC3, 3 + 0xA9}
	if !slices.Equal(got, want) {
		t.Errorf("Encode(aé) = %v, want %v", got, want)
	}
}

func hex2(b int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

func TestUnigramLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		model string
	}{
		{"empty vocab", `{"type":"Unigram","unk_id":0,"vocab":[]}`},
		{"no unk", `{"type":"Unigram","vocab":[["a",-1]]}`},
		{"unk out of range", `{"type":"Unigram","unk_id":4,"vocab":[["a",-1]]}`},
		{"score not a number", `{"type":"Unigram","unk_id":0,"vocab":[["a","x"]]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(`{"model":` + tt.model + `}`)); err == nil {
				t.Error("Parse accepted it")
			}
		})
	}
	others := []struct{ name, doc string }{
		{"unknown normalizer", `"normalizer":{"type":"Nope"}`},
		{"bad regex", `"normalizer":{"type":"Replace","pattern":{"Regex":"(?<=a)b"},"content":""}`},
		{"bad charsmap", `"normalizer":{"type":"Precompiled","precompiled_charsmap":"AQ=="}`},
		{"unknown pre-tokenizer", `"pre_tokenizer":{"type":"ByteLevel"}`},
		{"bad prepend scheme", `"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"sometimes"}`},
	}
	for _, tt := range others {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0]]},` + tt.doc + `}`
			if _, err := Parse([]byte(doc)); err == nil {
				t.Error("Parse accepted it")
			}
		})
	}
}

// Invalid UTF-8 must not break segmentation (Rust strings cannot hold it;
// Go strings can).
func TestUnigramInvalidUTF8(t *testing.T) {
	tok := miniUnigram(t, [][2]any{{"<unk>", 0}, {"▁", -1}, {"a", -1}}, nil)
	got := tok.Encode("a\xffa\xc3", 0).IDs
	if !slices.Equal(got, []int32{1, 2, 0, 2, 0}) {
		t.Errorf("Encode = %v", got)
	}
}

func FuzzUnigramEncode(f *testing.F) {
	f.Add("Hello world", 8)
	f.Add("東京は日本の首都です。 <mask> ｶﾞ", 0)
	f.Add("\u0301\u0301 e\u0301 \r\n 👨‍👩‍👧", 3)
	tok, err := LoadTokenizer(filepath.Join("testdata", "unigram", "xlmr.json"))
	if err != nil {
		f.Fatal(err)
	}
	head, tail := tok.Specials()
	f.Fuzz(func(t *testing.T, text string, maxLen int) {
		e := tok.Encode(text, maxLen)
		if len(e.IDs) != len(e.TypeIDs) || len(e.IDs) != len(e.AttentionMask) {
			t.Fatalf("lengths differ: %d %d %d", len(e.IDs), len(e.TypeIDs), len(e.AttentionMask))
		}
		if maxLen > head+tail && len(e.IDs) > maxLen {
			t.Fatalf("%d tokens exceed maxLen %d", len(e.IDs), maxLen)
		}
		for _, id := range e.IDs {
			if id < 0 || id > 2001 {
				t.Fatalf("id %d out of the vocabulary", id)
			}
		}
	})
}

func BenchmarkUnigramEncode(b *testing.B) {
	tok, err := LoadTokenizer(filepath.Join("testdata", "unigram", "xlmr.json"))
	if err != nil {
		b.Fatal(err)
	}
	corpus, err := os.ReadFile(filepath.Join("testdata", "unigram", "corpus.txt"))
	if err != nil {
		b.Fatal(err)
	}
	text := string(corpus)[:2000]
	text = strings.ToValidUTF8(text, "")
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, 0)
	}
}

func TestParseUnigramVocab(t *testing.T) {
	got, err := parseUnigramVocab(json.RawMessage(` [ ["<unk>", 0], ["\u2581a\"b\\", -1.5e0] ,["日本",-12.25]] `))
	if err != nil {
		t.Fatal(err)
	}
	want := []unigramPiece{{"<unk>", 0}, {"▁a\"b\\", -1.5}, {"日本", -12.25}}
	if !slices.Equal(got, want) {
		t.Errorf("parseUnigramVocab = %v, want %v", got, want)
	}
	if got, err := parseUnigramVocab(json.RawMessage(`[]`)); err != nil || len(got) != 0 {
		t.Errorf("empty vocab: %v, %v", got, err)
	}
	for _, bad := range []string{``, `{}`, `[["a"]]`, `[["a",-1]`, `[["a","b"]]`, `[[1,2]]`, `[["a",-1],]`, `[["a" -1]]`} {
		if _, err := parseUnigramVocab(json.RawMessage(bad)); err == nil {
			t.Errorf("parseUnigramVocab(%s) accepted it", bad)
		}
	}
}
