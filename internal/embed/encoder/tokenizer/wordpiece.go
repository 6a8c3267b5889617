package tokenizer

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// wordPiece is the tokenizer of BERT-family models: BertNormalizer,
// BertPreTokenizer and greedy longest-match-first WordPiece.
type wordPiece struct {
	norm  *bertNormalizer // nil: text is used as is
	added addedVocab
	split bool // BertPreTokenizer; false when tokenizer.json has none
	tmpl  template

	// Word-initial pieces and continuation pieces are kept apart, the latter
	// without their "##" prefix, so that a lookup is a map access on a
	// substring of the word and never builds a string.
	start, cont map[string]int32
	unk         int32
	maxChars    int
}

type wordPieceSpec struct {
	Vocab                   map[string]int32 `json:"vocab"`
	UnkToken                string           `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	MaxInputCharsPerWord    *int             `json:"max_input_chars_per_word"`
}

func newWordPiece(s *spec) (Tokenizer, error) {
	var m wordPieceSpec
	if err := json.Unmarshal(s.Model, &m); err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer WordPiece model is malformed")
	}
	if len(m.Vocab) == 0 {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer WordPiece vocabulary is empty")
	}
	unk, ok := m.Vocab[m.UnkToken]
	if !ok {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer WordPiece unk_token %q is not in the vocabulary", m.UnkToken)
	}
	prefix := "##"
	if m.ContinuingSubwordPrefix != nil {
		prefix = *m.ContinuingSubwordPrefix
	}
	w := &wordPiece{
		start:    make(map[string]int32, len(m.Vocab)),
		cont:     make(map[string]int32),
		unk:      unk,
		maxChars: 100,
	}
	if m.MaxInputCharsPerWord != nil {
		w.maxChars = *m.MaxInputCharsPerWord
	}
	for piece, id := range m.Vocab {
		w.start[piece] = id
		if rest, ok := strings.CutPrefix(piece, prefix); ok {
			w.cont[rest] = id
		}
	}

	var err error
	if w.norm, err = parseBertNormalizer(s.Normalizer); err != nil {
		return nil, err
	}
	if !isNull(s.PreTokenizer) {
		typ, err := componentType(s.PreTokenizer)
		if err != nil {
			return nil, recall.WrapError(recall.EINVALID, err, "tokenizer pre_tokenizer is malformed")
		}
		if typ != "BertPreTokenizer" {
			return nil, recall.Errorf(recall.EINVALID, "tokenizer pre_tokenizer %q is not supported with WordPiece", typ)
		}
		w.split = true
	}
	if w.tmpl, err = parseTemplate(s.PostProcessor); err != nil {
		return nil, err
	}
	var normalize func(string) string
	if w.norm != nil {
		normalize = w.norm.normalizeString
	}
	w.added = newAddedVocab(s.AddedTokens, normalize)
	return w, nil
}

// scratch buffers for normalization, reused across calls: Encode runs once
// per text, often from several goroutines.
var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Encode implements Tokenizer.
func (w *wordPiece) Encode(text string, maxLen int) Encoding {
	room := w.tmpl.room(maxLen)
	capacity := len(text)/3 + 4
	if room >= 0 {
		capacity = min(capacity, room+1)
	}
	ids := make([]int32, 0, capacity)
	full := func() bool { return room >= 0 && len(ids) >= room }

	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)

	split(text, w.added.raw, func(piece string, id int32) bool {
		if id >= 0 {
			ids = append(ids, id)
			return !full()
		}
		normalized := piece
		if w.norm != nil {
			normalized = w.norm.normalize(sc, piece)
		}
		return split(normalized, w.added.normalized, func(piece string, id int32) bool {
			if id >= 0 {
				ids = append(ids, id)
				return !full()
			}
			if !w.split {
				ids = w.appendWord(ids, piece)
				return !full()
			}
			return bertWords(piece, func(word string) bool {
				ids = w.appendWord(ids, word)
				return !full()
			})
		})
	})
	if room >= 0 && len(ids) > room {
		ids = ids[:room]
	}
	return w.tmpl.wrap(ids)
}

// Specials implements Tokenizer.
func (w *wordPiece) Specials() (head, tail int) {
	return len(w.tmpl.head), len(w.tmpl.tail)
}

// appendWord appends the WordPiece ids of one word: the longest vocabulary
// piece from the start, then the longest continuation piece, and so on; a
// word with a part no piece covers, or longer than maxChars, is one [UNK].
func (w *wordPiece) appendWord(ids []int32, word string) []int32 {
	if word == "" {
		return ids
	}
	if len(word) > w.maxChars && utf8.RuneCountInString(word) > w.maxChars {
		return append(ids, w.unk)
	}
	mark := len(ids)
	for start := 0; start < len(word); {
		vocab := w.cont
		if start == 0 {
			vocab = w.start
		}
		end := len(word)
		for ; end > start; end = prevBoundary(word, start, end) {
			if id, ok := vocab[word[start:end]]; ok {
				ids = append(ids, id)
				break
			}
		}
		if end == start {
			return append(ids[:mark], w.unk)
		}
		start = end
	}
	return ids
}

// prevBoundary returns the start of the last character of word[start:end].
func prevBoundary(word string, start, end int) int {
	_, size := utf8.DecodeLastRuneInString(word[start:end])
	return end - size
}
