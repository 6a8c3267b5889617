// Package tokenizer turns text into the token ids a Hugging Face model
// expects, reading the model's tokenizer.json and reproducing what the
// reference `tokenizers` library does with it: added (special) tokens,
// normalizer, pre-tokenizer, model (WordPiece, Unigram) and the post-processor
// template that wraps a text in [CLS] ... [SEP] or <s> ... </s>.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/recall-mcp/recall"
)

// Encoding is one tokenized text, ready for a BERT-style model. The three
// slices have the same length.
type Encoding struct {
	IDs           []int32
	TypeIDs       []int32 // segment ids (token_type_ids); 0 for a single text
	AttentionMask []int32 // 1 for every token: encodings are never padded
}

// Len returns the number of tokens.
func (e Encoding) Len() int { return len(e.IDs) }

// Tokenizer encodes text. Implementations are safe for concurrent use.
type Tokenizer interface {
	// Encode tokenizes text and adds the model's special tokens. When
	// maxLen > 0 the content is cut from the right so that the encoding,
	// special tokens included, has at most maxLen tokens (Hugging Face's
	// truncation). maxLen <= 0 keeps every token.
	Encode(text string, maxLen int) Encoding
	// Specials returns how many special tokens Encode puts before and after
	// the content of a text, so that a caller can cut a long encoding into
	// windows and wrap each window the same way.
	Specials() (head, tail int)
}

// spec is the part of tokenizer.json every model type reads. Each model
// decodes the pieces it understands from the raw messages and refuses the
// ones it does not, so that a tokenizer is never silently approximated.
type spec struct {
	AddedTokens   []addedTokenSpec `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Model         json.RawMessage  `json:"model"`
}

// builders maps tokenizer.json's model.type to a constructor. A new model
// type is one entry here and its own file.
var builders = map[string]func(s *spec) (Tokenizer, error){
	"WordPiece": newWordPiece,
	"Unigram":   newUnigram,
}

// LoadTokenizer reads a tokenizer.json file and builds the tokenizer its
// model.type names.
func LoadTokenizer(path string) (Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, recall.WrapError(recall.EUNAVAILABLE, err, "tokenizer file %s is missing", path)
		}
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	tok, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return tok, nil
}

// Parse builds a tokenizer from the contents of a tokenizer.json file.
func Parse(data []byte) (Tokenizer, error) {
	var s spec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer.json is not valid JSON")
	}
	var m struct {
		Type string `json:"type"`
	}
	if len(s.Model) == 0 || string(s.Model) == "null" {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer.json has no model")
	}
	if err := json.Unmarshal(s.Model, &m); err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer.json model is malformed")
	}
	build, ok := builders[m.Type]
	if !ok {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer model type %q is not supported", m.Type)
	}
	return build(&s)
}

// isNull reports whether an optional tokenizer.json component is absent.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// componentType reads the "type" field of a tokenizer.json component.
func componentType(raw json.RawMessage) (string, error) {
	var c struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	return c.Type, nil
}
