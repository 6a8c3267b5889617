package tokenizer

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// unigram is the tokenizer of SentencePiece Unigram models converted to
// tokenizer.json (XLM-RoBERTa, multilingual-e5, bge-m3, ...): added tokens,
// a normalizer (usually the model's precompiled SentencePiece map),
// Metaspace pre-tokenization, Viterbi segmentation and the <s> ... </s>
// template.
type unigram struct {
	norm  textNormalizer // nil: text is used as is
	pre   []preTokenizer // applied in order; empty: the whole text is one word
	added addedVocab
	tmpl  template
	model *unigramModel
}

// preTokenizer is one step of pre-tokenization: it calls fn for each word of
// s, with whether the word begins at the start of the input.
type preTokenizer interface {
	words(s string, atStart bool, fn func(word string, atStart bool) bool) bool
}

type unigramSpec struct {
	Vocab        json.RawMessage `json:"vocab"`
	UnkID        *int32          `json:"unk_id"`
	ByteFallback bool            `json:"byte_fallback"`
}

func newUnigram(s *spec) (Tokenizer, error) {
	var m unigramSpec
	if err := json.Unmarshal(s.Model, &m); err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer Unigram model is malformed")
	}
	vocab, err := parseUnigramVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	if len(vocab) == 0 {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer Unigram vocabulary is empty")
	}
	// Without an unknown piece the reference fails on any character the
	// vocabulary lacks; refusing up front beats failing on some texts.
	if m.UnkID == nil || *m.UnkID < 0 || int(*m.UnkID) >= len(vocab) {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer Unigram model needs an unk_id within its vocabulary")
	}
	model, err := newUnigramModel(vocab, *m.UnkID, m.ByteFallback)
	if err != nil {
		return nil, err
	}
	u := &unigram{model: model}
	if u.norm, err = parseTextNormalizer(s.Normalizer); err != nil {
		return nil, err
	}
	if u.pre, err = parsePreTokenizer(s.PreTokenizer); err != nil {
		return nil, err
	}
	if u.tmpl, err = parseTemplate(s.PostProcessor); err != nil {
		return nil, err
	}
	var normalize func(string) string
	if u.norm != nil {
		normalize = func(s string) string {
			out, _ := u.norm.normalize(s, true)
			return out
		}
	}
	u.added = newAddedVocab(s.AddedTokens, normalize)
	return u, nil
}

func parsePreTokenizer(raw json.RawMessage) ([]preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer pre_tokenizer is malformed")
	}
	switch typ {
	case "Sequence":
		var c struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, recall.WrapError(recall.EINVALID, err, "tokenizer pre_tokenizer sequence is malformed")
		}
		var steps []preTokenizer
		for _, r := range c.PreTokenizers {
			s, err := parsePreTokenizer(r)
			if err != nil {
				return nil, err
			}
			steps = append(steps, s...)
		}
		return steps, nil
	case "WhitespaceSplit":
		return []preTokenizer{whitespaceSplit{}}, nil
	case "Metaspace":
		var c struct {
			Replacement    string  `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			Split          *bool   `json:"split"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, recall.WrapError(recall.EINVALID, err, "tokenizer Metaspace is malformed")
		}
		if utf8.RuneCountInString(c.Replacement) != 1 {
			return nil, recall.Errorf(recall.EINVALID, "tokenizer Metaspace replacement %q is not one character", c.Replacement)
		}
		p := metaspace{replacement: c.Replacement, prepend: "always", split: c.Split == nil || *c.Split}
		if c.PrependScheme != nil {
			p.prepend = *c.PrependScheme
		}
		// Files written before prepend_scheme existed say add_prefix_space;
		// the reference reads false as "never" whatever else is there.
		if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			p.prepend = "never"
		}
		if p.prepend != "always" && p.prepend != "first" && p.prepend != "never" {
			return nil, recall.Errorf(recall.EINVALID, "tokenizer Metaspace prepend_scheme %q is not supported", p.prepend)
		}
		return []preTokenizer{p}, nil
	}
	return nil, recall.Errorf(recall.EINVALID, "tokenizer pre_tokenizer %q is not supported with Unigram", typ)
}

// whitespaceSplit is tokenizers' WhitespaceSplit: words are the runs of
// non-whitespace characters.
type whitespaceSplit struct{}

func (whitespaceSplit) words(s string, atStart bool, fn func(word string, atStart bool) bool) bool {
	for i := 0; i < len(s); {
		j := strings.IndexFunc(s[i:], unicode.IsSpace)
		if j < 0 {
			return fn(s[i:], atStart && i == 0)
		}
		if j > 0 && !fn(s[i:i+j], atStart && i == 0) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[i+j:])
		i += j + n
	}
	return true
}

// Encode implements Tokenizer.
func (u *unigram) Encode(text string, maxLen int) Encoding {
	text = strings.ToValidUTF8(text, "\uFFFD")
	room := u.tmpl.room(maxLen)
	capacity := len(text)/2 + 4
	if room >= 0 {
		capacity = min(capacity, room+1)
	}
	ids := make([]int32, 0, capacity)
	full := func() bool { return room >= 0 && len(ids) >= room }
	word := func(w string, _ bool) bool {
		ids = u.model.appendIDs(ids, w)
		return !full()
	}

	offset := 0 // bytes of text handed out so far
	split(text, u.added.raw, func(piece string, id int32) bool {
		atStart := offset == 0
		offset += len(piece)
		if id >= 0 {
			ids = append(ids, id)
			return !full()
		}
		normalized := piece
		if u.norm != nil {
			normalized, atStart = u.norm.normalize(piece, atStart)
		}
		nOffset := 0
		return split(normalized, u.added.normalized, func(piece string, id int32) bool {
			first := atStart && nOffset == 0
			nOffset += len(piece)
			if id >= 0 {
				ids = append(ids, id)
				return !full()
			}
			return u.words(0, piece, first, word)
		})
	})
	if room >= 0 && len(ids) > room {
		ids = ids[:room]
	}
	return u.tmpl.wrap(ids)
}

// words runs pre-tokenization steps from step on, handing the final words
// to fn.
func (u *unigram) words(step int, s string, atStart bool, fn func(word string, atStart bool) bool) bool {
	if step == len(u.pre) {
		return s == "" || fn(s, atStart)
	}
	return u.pre[step].words(s, atStart, func(w string, atStart bool) bool {
		return u.words(step+1, w, atStart, fn)
	})
}

// Specials implements Tokenizer.
func (u *unigram) Specials() (head, tail int) {
	return len(u.tmpl.head), len(u.tmpl.tail)
}
