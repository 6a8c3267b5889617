package encoder

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Tiny random-weight BERT models, written from Go into a temporary directory
// in the Hugging Face layout, let the loader, the forward pass and the
// windowing be tested without any downloaded model.

var tinyVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
	"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "recall",
	"memory", "search", "vector", "text", "a", "b", "c", "un", "##s", "##ing",
	"##ed", "##able", ",", ".", "!", "?", "中", "文", "query", ":", "passage",
}

type tinySpec struct {
	hidden, heads, layers, inter, maxPos int
	maxSeqLen                            int    // sentence_bert_config.json; 0: no file
	pooling                              string // "mean", "cls" or "" for no pooling config
	normalize                            bool   // a Normalize module in modules.json
	noModules                            bool   // no modules.json at all
	prefix                               string // tensor name prefix, e.g. "bert."
	dtype                                string // F32 (default), F16 or BF16
	nameOrPath                           string
	seed                                 uint64
}

func defaultTiny() tinySpec {
	return tinySpec{hidden: 16, heads: 4, layers: 2, inter: 32, maxPos: 64, maxSeqLen: 16, pooling: "mean", normalize: true, seed: 1}
}

type tensor struct {
	shape []int
	data  []float32
}

// tinyWeights returns random weights for s, named as BertModel names them.
func tinyWeights(s tinySpec) map[string]tensor {
	rng := rand.New(rand.NewPCG(s.seed, 7))
	w := map[string]tensor{}
	rnd := func(name string, scale float64, offset float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = offset + float32(rng.NormFloat64()*scale)
		}
		w[name] = tensor{shape, data}
	}
	h, in := s.hidden, s.inter
	rnd("embeddings.word_embeddings.weight", 0.5, 0, len(tinyVocab), h)
	rnd("embeddings.position_embeddings.weight", 0.5, 0, s.maxPos, h)
	rnd("embeddings.token_type_embeddings.weight", 0.5, 0, 2, h)
	rnd("embeddings.LayerNorm.weight", 0.1, 1, h)
	rnd("embeddings.LayerNorm.bias", 0.1, 0, h)
	for i := 0; i < s.layers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		for _, n := range []string{"query", "key", "value"} {
			rnd(p+"attention.self."+n+".weight", 0.3, 0, h, h)
			rnd(p+"attention.self."+n+".bias", 0.1, 0, h)
		}
		rnd(p+"attention.output.dense.weight", 0.3, 0, h, h)
		rnd(p+"attention.output.dense.bias", 0.1, 0, h)
		rnd(p+"attention.output.LayerNorm.weight", 0.1, 1, h)
		rnd(p+"attention.output.LayerNorm.bias", 0.1, 0, h)
		rnd(p+"intermediate.dense.weight", 0.3, 0, in, h)
		rnd(p+"intermediate.dense.bias", 0.1, 0, in)
		rnd(p+"output.dense.weight", 0.3, 0, h, in)
		rnd(p+"output.dense.bias", 0.1, 0, h)
		rnd(p+"output.LayerNorm.weight", 0.1, 1, h)
		rnd(p+"output.LayerNorm.bias", 0.1, 0, h)
	}
	if s.dtype == "F16" || s.dtype == "BF16" {
		// Round to what the file can hold, so the naive reference computes
		// with the very values the model loads.
		for _, t := range w {
			for i, v := range t.data {
				t.data[i] = roundTo(s.dtype, v)
			}
		}
	}
	return w
}

// writeTiny writes a complete model directory and returns its weights.
func writeTiny(t testing.TB, dir string, s tinySpec) map[string]tensor {
	t.Helper()
	weights := tinyWeights(s)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	named := map[string]tensor{}
	for k, v := range weights {
		named[s.prefix+k] = v
	}
	dtype := s.dtype
	if dtype == "" {
		dtype = "F32"
	}
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), named, dtype)
	writeJSON(t, filepath.Join(dir, "config.json"), map[string]any{
		"_name_or_path":           s.nameOrPath,
		"architectures":           []string{"BertModel"},
		"model_type":              "bert",
		"vocab_size":              len(tinyVocab),
		"hidden_size":             s.hidden,
		"num_hidden_layers":       s.layers,
		"num_attention_heads":     s.heads,
		"intermediate_size":       s.inter,
		"max_position_embeddings": s.maxPos,
		"type_vocab_size":         2,
		"layer_norm_eps":          1e-12,
		"hidden_act":              "gelu",
	})
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), tinyTokenizer())
	if !s.noModules {
		modules := []map[string]any{
			{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
			{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		}
		if s.normalize {
			modules = append(modules, map[string]any{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
		}
		writeJSON(t, filepath.Join(dir, "modules.json"), modules)
	}
	if s.pooling != "" {
		writeJSON(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{
			"word_embedding_dimension": s.hidden,
			"pooling_mode_cls_token":   s.pooling == "cls",
			"pooling_mode_mean_tokens": s.pooling == "mean",
			"pooling_mode_max_tokens":  s.pooling == "max",
		})
	}
	if s.maxSeqLen > 0 {
		writeJSON(t, filepath.Join(dir, "sentence_bert_config.json"), map[string]any{"max_seq_length": s.maxSeqLen, "do_lower_case": false})
	}
	return weights
}

func tinyTokenizer() map[string]any {
	vocab := map[string]int{}
	for i, w := range tinyVocab {
		vocab[w] = i
	}
	var added []map[string]any
	for i, w := range tinyVocab[:5] {
		added = append(added, map[string]any{"id": i, "content": w, "special": true, "normalized": false})
	}
	return map[string]any{
		"version":       "1.0",
		"added_tokens":  added,
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{2}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{3}, "tokens": []string{"[SEP]"}},
			},
		},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSafetensors writes tensors in the given dtype, in name order.
func writeSafetensors(t testing.TB, path string, tensors map[string]tensor, dtype string) {
	t.Helper()
	names := make([]string, 0, len(tensors))
	for k := range tensors {
		names = append(names, k)
	}
	slices.Sort(names)
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, name := range names {
		tn := tensors[name]
		begin := len(data)
		for _, v := range tn.data {
			data = appendValue(data, dtype, v)
		}
		header[name] = map[string]any{"dtype": dtype, "shape": tn.shape, "data_offsets": []int{begin, len(data)}}
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendValue(b []byte, dtype string, v float32) []byte {
	switch dtype {
	case "F16":
		return binary.LittleEndian.AppendUint16(b, toF16(v))
	case "BF16":
		return binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(v)>>16))
	case "F64":
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
	}
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

// toF16 converts a float32 that is exactly representable in half precision
// (normal or subnormal) or that rounds toward zero acceptably; tests only
// write values they first passed through roundTo.
func toF16(v float32) uint16 {
	bits := math.Float32bits(v)
	sign := uint16(bits>>16) & 0x8000
	a := math.Abs(float64(v))
	switch {
	case a == 0:
		return sign
	case a < 1.0/(1<<14): // subnormal half
		return sign | uint16(math.Round(a*(1<<24)))
	}
	exp := int(bits>>23&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16(bits>>13&0x3ff)
}

// roundTo truncates v to the precision of the dtype (toward zero), keeping
// it in the normal range.
func roundTo(dtype string, v float32) float32 {
	switch dtype {
	case "BF16":
		return math.Float32frombits(math.Float32bits(v) &^ 0xffff)
	case "F16":
		if math.Abs(float64(v)) < 1.0/(1<<14) {
			return float32(math.Round(float64(v)*(1<<24)) / (1 << 24))
		}
		return math.Float32frombits(math.Float32bits(v) &^ 0x1fff)
	}
	return v
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// truncate cuts a file to n bytes, or by -n bytes when n is negative.
func truncate(t *testing.T, dir, name string, n int64) {
	t.Helper()
	path := filepath.Join(dir, name)
	if n < 0 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	if err := os.Truncate(path, n); err != nil {
		t.Fatal(err)
	}
}

// patchConfig changes one field of config.json.
func patchConfig(t *testing.T, dir, key string, value any) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	c[key] = value
	writeJSON(t, path, c)
}

// corruptOffsets rewrites the weights with two tensors sharing bytes.
func corruptOffsets(t *testing.T, dir string) {
	t.Helper()
	header := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	out = append(out, make([]byte, 12)...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}
