package encoder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/recall-mcp/recall"
)

// bertConfig is the part of a Hugging Face config.json the forward pass needs.
type bertConfig struct {
	NameOrPath            string  `json:"_name_or_path"`
	ModelType             string  `json:"model_type"`
	VocabSize             int     `json:"vocab_size"`
	HiddenSize            int     `json:"hidden_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	IntermediateSize      int     `json:"intermediate_size"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	TypeVocabSize         int     `json:"type_vocab_size"`
	LayerNormEps          float64 `json:"layer_norm_eps"`
	HiddenAct             string  `json:"hidden_act"`
	PositionEmbeddingType string  `json:"position_embedding_type"`
}

func readConfig(dir string) (bertConfig, error) {
	var c bertConfig
	path := filepath.Join(dir, "config.json")
	if err := readJSON(path, &c); err != nil {
		return c, err
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12 // BertConfig's default
	}
	if c.TypeVocabSize == 0 {
		c.TypeVocabSize = 2
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "gelu"
	}
	bad := func(format string, args ...any) error {
		return recall.Errorf(recall.EINVALID, "%s: %s", path, fmt.Sprintf(format, args...))
	}
	switch {
	case c.ModelType != "" && c.ModelType != "bert":
		// RoBERTa-style models number positions from the padding index and
		// need a different embedding step: refuse rather than embed wrongly.
		return c, bad("model_type %q is not supported; the built-in encoder runs BERT models", c.ModelType)
	case c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute":
		return c, bad("position_embedding_type %q is not supported", c.PositionEmbeddingType)
	case c.HiddenAct != "gelu":
		return c, bad("hidden_act %q is not supported; only the exact \"gelu\" is", c.HiddenAct)
	case c.VocabSize <= 0 || c.HiddenSize <= 0 || c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 ||
		c.IntermediateSize <= 0 || c.MaxPositionEmbeddings <= 0:
		return c, bad("vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and max_position_embeddings must all be positive")
	case c.HiddenSize%c.NumAttentionHeads != 0:
		return c, bad("hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	case c.LayerNormEps < 0:
		return c, bad("layer_norm_eps is negative")
	}
	return c, nil
}

// pooling says how token vectors become one text vector.
type pooling int

const (
	poolMean pooling = iota // average of the text's token vectors
	poolCLS                 // the first ([CLS]) token's vector
)

// stConfig is what the sentence-transformers files of a model directory
// say: pooling, normalization, input window, lowercasing and prompts. Both
// the layout of sentence-transformers 2-5 and that of 6 are read.
type stConfig struct {
	pooling   pooling
	normalize bool
	maxSeqLen int // 0 when sentence_bert_config.json does not say
	lowercase bool
	prompts   map[string]string
}

// readSTConfig reads modules.json, the pooling module's config,
// sentence_bert_config.json and config_sentence_transformers.json, each
// optional. A plain Hugging Face directory gets mean pooling and
// normalization: what recall's cosine search expects.
func readSTConfig(dir string) (stConfig, error) {
	st := stConfig{pooling: poolMean, normalize: true}
	poolingDir := "1_Pooling"

	var modules []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	switch err := readJSON(filepath.Join(dir, "modules.json"), &modules); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, err
	default:
		st.normalize = false
		for _, m := range modules {
			switch kind := m.Type[strings.LastIndex(m.Type, ".")+1:]; kind {
			case "Transformer", "BertModel":
			case "Pooling":
				poolingDir = m.Path
			case "Normalize":
				st.normalize = true
			default:
				return st, recall.Errorf(recall.EINVALID, "%s: module %s is not supported by the built-in encoder", filepath.Join(dir, "modules.json"), m.Type)
			}
		}
	}

	var pool struct {
		Mode      string `json:"pooling_mode"`
		CLS       bool   `json:"pooling_mode_cls_token"`
		Mean      bool   `json:"pooling_mode_mean_tokens"`
		Max       bool   `json:"pooling_mode_max_tokens"`
		MeanSqrt  bool   `json:"pooling_mode_mean_sqrt_len_tokens"`
		Weighted  bool   `json:"pooling_mode_weightedmean_tokens"`
		LastToken bool   `json:"pooling_mode_lasttoken"`
	}
	poolPath := filepath.Join(dir, filepath.FromSlash(poolingDir), "config.json")
	switch err := readJSON(poolPath, &pool); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, err
	default:
		switch {
		case pool.Mode == "cls" || (pool.Mode == "" && pool.CLS && !pool.Mean && !pool.Max && !pool.MeanSqrt && !pool.Weighted && !pool.LastToken):
			st.pooling = poolCLS
		case pool.Mode == "mean" || (pool.Mode == "" && pool.Mean && !pool.CLS && !pool.Max && !pool.MeanSqrt && !pool.Weighted && !pool.LastToken):
			st.pooling = poolMean
		default:
			return st, recall.Errorf(recall.EINVALID, "%s: only CLS or mean pooling is supported", poolPath)
		}
	}

	var sb struct {
		MaxSeqLength int  `json:"max_seq_length"`
		DoLowerCase  bool `json:"do_lower_case"`
	}
	switch err := readJSON(filepath.Join(dir, "sentence_bert_config.json"), &sb); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, err
	default:
		st.maxSeqLen, st.lowercase = sb.MaxSeqLength, sb.DoLowerCase
	}

	if st.maxSeqLen == 0 {
		// sentence-transformers 6 keeps the window in the tokenizer's config.
		var tc struct {
			ModelMaxLength float64 `json:"model_max_length"`
		}
		switch err := readJSON(filepath.Join(dir, "tokenizer_config.json"), &tc); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return st, err
		case tc.ModelMaxLength > 0 && tc.ModelMaxLength < 1<<20: // "unbounded" is saved as 1e30
			st.maxSeqLen = int(tc.ModelMaxLength)
		}
	}

	var cst struct {
		Prompts map[string]string `json:"prompts"`
	}
	switch err := readJSON(filepath.Join(dir, "config_sentence_transformers.json"), &cst); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, err
	default:
		st.prompts = cst.Prompts
	}
	return st, nil
}

// Prefixes are prepended to texts before tokenizing, as some model cards
// require: E5 wants "query: " and "passage: ", BGE an instruction before
// queries only.
type Prefixes struct {
	Query    string
	Document string
}

// bgeQueryInstruction is the query instruction of BAAI's English BGE models.
const bgeQueryInstruction = "Represent this sentence for searching relevant passages: "

// bgeZhQueryInstruction is the one of their Chinese models.
const bgeZhQueryInstruction = "为这个句子生成表示以用于检索相关文章："

// defaultPrefixes picks prefixes for a model: from the prompts in
// config_sentence_transformers.json when it names them, else by family,
// recognised from the directory name or config's _name_or_path.
//
// Empty prompts count as none: sentence-transformers saves them empty when
// the model's author set none, and BGE's query instruction, for one, lives
// only in its model card.
func defaultPrefixes(names []string, prompts map[string]string) Prefixes {
	var p Prefixes
	p.Query = prompts["query"]
	for _, k := range []string{"document", "passage", "corpus"} {
		if d := prompts[k]; d != "" {
			p.Document = d
			break
		}
	}
	if p != (Prefixes{}) {
		return p
	}
	for _, name := range names {
		words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		})
		has := func(w string) bool {
			for _, x := range words {
				if x == w {
					return true
				}
			}
			return false
		}
		switch {
		case has("e5"):
			return Prefixes{Query: "query: ", Document: "passage: "}
		case has("bge") && has("zh"):
			return Prefixes{Query: bgeZhQueryInstruction}
		case has("bge"):
			return Prefixes{Query: bgeQueryInstruction}
		}
	}
	return Prefixes{}
}

// readJSON decodes a file; a missing file gives an error matching
// fs.ErrNotExist.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return recall.WrapError(recall.EUNAVAILABLE, err, "%s is missing", path)
		}
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return recall.WrapError(recall.EINVALID, err, "%s is not valid JSON", path)
	}
	return nil
}
