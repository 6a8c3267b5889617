package tokenizer

import (
	"encoding/json"
	"strconv"

	"github.com/recall-mcp/recall"
)

// parseUnigramVocab reads the model's vocabulary, a JSON array of
// [piece, score] pairs. Multilingual vocabularies hold a quarter of a
// million pairs, and decoding each through encoding/json takes seconds at
// every start, so the array is scanned here; only pieces with escapes go
// through the JSON decoder. The document was validated by the caller's
// json.Unmarshal, so the scanner checks shape, not every JSON rule.
func parseUnigramVocab(raw json.RawMessage) ([]unigramPiece, error) {
	sc := vocabScanner{data: raw}
	var out []unigramPiece
	if !sc.consume('[') {
		return nil, sc.fail()
	}
	if sc.consume(']') {
		return out, nil
	}
	out = make([]unigramPiece, 0, len(raw)/24)
	for {
		var p unigramPiece
		if !sc.consume('[') {
			return nil, sc.fail()
		}
		var ok bool
		if p.piece, ok = sc.str(); !ok || !sc.consume(',') {
			return nil, sc.fail()
		}
		if p.score, ok = sc.number(); !ok || !sc.consume(']') {
			return nil, sc.fail()
		}
		out = append(out, p)
		if sc.consume(']') {
			return out, nil
		}
		if !sc.consume(',') {
			return nil, sc.fail()
		}
	}
}

type vocabScanner struct {
	data []byte
	pos  int
}

func (s *vocabScanner) fail() error {
	return recall.Errorf(recall.EINVALID, "tokenizer Unigram vocabulary is malformed near byte %d: want [[piece, score], ...]", s.pos)
}

func (s *vocabScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *vocabScanner) consume(c byte) bool {
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

func (s *vocabScanner) str() (string, bool) {
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return "", false
	}
	start := s.pos
	escaped := false
	for i := start + 1; i < len(s.data); i++ {
		switch s.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			s.pos = i + 1
			if !escaped {
				return string(s.data[start+1 : i]), true
			}
			var v string
			if err := json.Unmarshal(s.data[start:i+1], &v); err != nil {
				return "", false
			}
			return v, true
		}
	}
	return "", false
}

func (s *vocabScanner) number() (float64, bool) {
	s.skipSpace()
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		s.pos++
	}
	f, err := strconv.ParseFloat(string(s.data[start:s.pos]), 64)
	return f, err == nil
}
