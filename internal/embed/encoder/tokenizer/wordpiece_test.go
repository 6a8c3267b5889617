package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

// The golden data comes from Hugging Face tokenizers, written by
// scripts/golden_tokens.py; see that script to regenerate it.
const wordpieceDir = "testdata/wordpiece"

type goldenCase struct {
	Name    string  `json:"name"`
	Variant string  `json:"variant"`
	MaxLen  int     `json:"max_len"`
	Text    string  `json:"text"`
	IDs     []int32 `json:"ids"`
}

type goldenFile struct {
	Variants map[string]struct {
		Normalizer  map[string]any   `json:"normalizer"`
		AddedTokens []map[string]any `json:"added_tokens"`
	} `json:"variants"`
	Cases []goldenCase `json:"cases"`
}

func readGolden(t testing.TB) goldenFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(wordpieceDir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// variantTokenizer applies a golden variant's overrides to the MiniLM
// tokenizer.json, as the script did before asking the reference.
func variantTokenizer(t testing.TB, g goldenFile, variant string) Tokenizer {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(wordpieceDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	v, ok := g.Variants[variant]
	if !ok {
		t.Fatalf("unknown variant %q", variant)
	}
	normalizer := spec["normalizer"].(map[string]any)
	for k, val := range v.Normalizer {
		normalizer[k] = val
	}
	if v.AddedTokens != nil {
		spec["added_tokens"] = v.AddedTokens
	}
	data, err = json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatalf("variant %s: %v", variant, err)
	}
	return tok
}

func TestWordPieceGolden(t *testing.T) {
	g := readGolden(t)
	if len(g.Cases) < 40 {
		t.Fatalf("golden data has %d cases; expected the full set", len(g.Cases))
	}
	toks := map[string]Tokenizer{}
	for _, c := range g.Cases {
		tok, ok := toks[c.Variant]
		if !ok {
			tok = variantTokenizer(t, g, c.Variant)
			toks[c.Variant] = tok
		}
		t.Run(fmt.Sprintf("%s/%s/%d", c.Variant, c.Name, c.MaxLen), func(t *testing.T) {
			enc := tok.Encode(c.Text, c.MaxLen)
			if !slices.Equal(enc.IDs, c.IDs) {
				t.Fatalf("ids differ from the reference\ntext %+q\n got %v\nwant %v", c.Text, enc.IDs, c.IDs)
			}
			if len(enc.TypeIDs) != len(enc.IDs) || len(enc.AttentionMask) != len(enc.IDs) {
				t.Fatalf("lengths: ids %d, type ids %d, mask %d", len(enc.IDs), len(enc.TypeIDs), len(enc.AttentionMask))
			}
			for i := range enc.IDs {
				if enc.TypeIDs[i] != 0 || enc.AttentionMask[i] != 1 {
					t.Fatalf("token %d: type id %d, mask %d; want 0 and 1", i, enc.TypeIDs[i], enc.AttentionMask[i])
				}
			}
		})
	}
}

// TestNormalizerEveryCodePoint checks, for every code point c, what
// normalization and pre-tokenization make of "a"+c+"b" against the
// reference: this covers the Unicode tables the reference uses, which differ
// from Go's in places.
func TestNormalizerEveryCodePoint(t *testing.T) {
	f, err := os.Open(filepath.Join(wordpieceDir, "codepoints.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	g := readGolden(t)
	wp := variantTokenizer(t, g, "uncased").(*wordPiece)
	sc := new(scratch)
	words := func(r rune) string {
		var out []string
		bertWords(wp.norm.normalize(sc, "a"+string(r)+"b"), func(w string) bool {
			out = append(out, w)
			return true
		})
		return strings.Join(out, "|")
	}

	lines := bufio.NewScanner(zr)
	checked, failures := 0, 0
	next := rune(0)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		lo, err1 := strconv.ParseUint(fields[0], 16, 32)
		hi, err2 := strconv.ParseUint(fields[1], 16, 32)
		if err1 != nil || err2 != nil || len(fields) < 3 {
			t.Fatalf("bad line %q", lines.Text())
		}
		if next == 0xD800 {
			next = 0xE000 // surrogates cannot be encoded in UTF-8
		}
		if rune(lo) != next {
			t.Fatalf("code point runs skip from %x to %x", next, lo)
		}
		next = rune(hi) + 1
		for r := rune(lo); r <= rune(hi); r++ {
			c := string(r)
			var want string
			switch fields[2] {
			case "K":
				want = "a" + c + "b"
			case "D":
				want = "ab"
			case "S":
				want = "a|b"
			case "I":
				want = "a|" + c + "|b"
			case "M":
				var sb strings.Builder
				for _, h := range fields[3:] {
					if h == "|" {
						sb.WriteByte('|')
						continue
					}
					v, err := strconv.ParseUint(h, 16, 32)
					if err != nil {
						t.Fatalf("bad line %q", lines.Text())
					}
					sb.WriteRune(rune(v))
				}
				want = sb.String()
			default:
				t.Fatalf("bad kind in %q", lines.Text())
			}
			if got := words(r); got != want {
				failures++
				if failures <= 20 {
					t.Errorf("U+%04X: got %+q, want %+q", r, got, want)
				}
			}
			checked++
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if next != 0x110000 {
		t.Fatalf("code point runs end at %x", next)
	}
	if failures > 0 {
		t.Fatalf("%d of %d code points differ from the reference", failures, checked)
	}
}

func TestEncodeTruncates(t *testing.T) {
	tok := variantTokenizer(t, readGolden(t), "uncased")
	text := strings.Repeat("recall remembers conversations. ", 50)
	full := tok.Encode(text, 0)
	head, tail := tok.Specials()
	if head != 1 || tail != 1 {
		t.Fatalf("Specials() = %d, %d; want 1, 1 for BERT", head, tail)
	}
	for _, maxLen := range []int{2, 3, 10, 64, len(full.IDs) - 1, len(full.IDs), len(full.IDs) + 5} {
		enc := tok.Encode(text, maxLen)
		want := min(maxLen, len(full.IDs))
		if enc.Len() != want {
			t.Fatalf("maxLen %d: %d tokens, want %d", maxLen, enc.Len(), want)
		}
		// Truncation keeps the special tokens and cuts content from the right.
		if !slices.Equal(enc.IDs[:want-1], full.IDs[:want-1]) || enc.IDs[want-1] != full.IDs[len(full.IDs)-1] {
			t.Fatalf("maxLen %d: %v is not the start of %v closed by [SEP]", maxLen, enc.IDs, full.IDs[:want])
		}
	}
}

func TestLoadTokenizerErrors(t *testing.T) {
	minimal := func(model, extra string) string {
		return `{"added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null` + extra + `, "model": ` + model + `}`
	}
	wp := `{"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}}`
	tests := []struct {
		name string
		json string
		code string
		msg  string
	}{
		{"not json", `{"model": `, recall.EINVALID, "not valid JSON"},
		{"no model", `{"normalizer": null}`, recall.EINVALID, "no model"},
		{"unknown model", minimal(`{"type": "BPE"}`, ""), recall.EINVALID, `"BPE" is not supported`},
		{"empty vocab", minimal(`{"type": "WordPiece", "unk_token": "[UNK]", "vocab": {}}`, ""), recall.EINVALID, "vocabulary is empty"},
		{"unk not in vocab", minimal(`{"type": "WordPiece", "unk_token": "<unk>", "vocab": {"a": 0}}`, ""), recall.EINVALID, "unk_token"},
		{"unknown normalizer", strings.Replace(minimal(wp, ""), `"normalizer": null`, `"normalizer": {"type": "NFKC"}`, 1), recall.EINVALID, `normalizer "NFKC"`},
		{"unknown pre-tokenizer", strings.Replace(minimal(wp, ""), `"pre_tokenizer": null`, `"pre_tokenizer": {"type": "Metaspace"}`, 1), recall.EINVALID, `pre_tokenizer "Metaspace"`},
		{"unknown post-processor", strings.Replace(minimal(wp, ""), `"post_processor": null`, `"post_processor": {"type": "Weird"}`, 1), recall.EINVALID, `post_processor "Weird"`},
		{"template without sequence", strings.Replace(minimal(wp, ""), `"post_processor": null`,
			`"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}], "special_tokens": {"[CLS]": {"ids": [1]}}}`, 1),
			recall.EINVALID, "no sequence"},
		{"template unknown special", strings.Replace(minimal(wp, ""), `"post_processor": null`,
			`"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}}`, 1),
			recall.EINVALID, "unknown special token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json))
			if err == nil {
				t.Fatal("Parse succeeded; want an error")
			}
			if recall.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q (code %s); want code %s mentioning %q", err, recall.ErrorCode(err), tt.code, tt.msg)
			}
		})
	}

	_, err := LoadTokenizer(filepath.Join(t.TempDir(), "tokenizer.json"))
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing file: %v (code %s); want unavailable", err, recall.ErrorCode(err))
	}
}

// TestPostProcessors checks the older post-processor forms some
// tokenizer.json files still use.
func TestPostProcessors(t *testing.T) {
	vocab := `{"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3}}`
	tests := []struct {
		name, post string
		want       []int32
	}{
		{"none", `null`, []int32{3}},
		{"bert", `{"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}`, []int32{1, 3, 2}},
		{"roberta", `{"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1], "trim_offsets": true}`, []int32{1, 3, 2}},
		{"sequence", `{"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}]}`, []int32{1, 3, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := `{"normalizer": null, "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": ` + tt.post + `, "model": ` + vocab + `}`
			tok, err := Parse([]byte(js))
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode("hello", 0).IDs; !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzEncode checks invariants on arbitrary input, including invalid UTF-8,
// which the reference cannot even receive.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "中文 text", "\xff\xfe", "[MASK][SEP]", strings.Repeat("x", 300)} {
		f.Add(s, 8)
	}
	tok := variantTokenizer(f, readGolden(f), "added")
	f.Fuzz(func(t *testing.T, s string, maxLen int) {
		maxLen %= 600
		enc := tok.Encode(s, maxLen)
		if enc.Len() < 2 || enc.IDs[0] != 101 || enc.IDs[enc.Len()-1] != 102 {
			t.Fatalf("encoding %v is not wrapped in [CLS] ... [SEP]", enc.IDs)
		}
		if maxLen >= 2 && enc.Len() > maxLen {
			t.Fatalf("%d tokens for maxLen %d", enc.Len(), maxLen)
		}
		full := tok.Encode(s, 0)
		if !slices.Equal(enc.IDs[:enc.Len()-1], full.IDs[:enc.Len()-1]) {
			t.Fatalf("truncated encoding is not a prefix of the full one")
		}
	})
}

func BenchmarkEncode2000(b *testing.B) {
	g := readGolden(b)
	tok := variantTokenizer(b, g, "uncased")
	var text string
	for _, c := range g.Cases {
		if c.Name == "long english" {
			text = c.Text
		}
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, 0)
	}
}
