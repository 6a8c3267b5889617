package tokenizer

import (
	"encoding/json"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/recall-mcp/recall"
)

// bertNormalizer is tokenizers' BertNormalizer. Its steps run in the
// reference's order: clean text, space out Chinese characters, strip accents
// (NFD, then drop nonspacing marks), lowercase.
type bertNormalizer struct {
	cleanText    bool
	chineseChars bool
	stripAccents bool
	lowercase    bool
}

func parseBertNormalizer(raw json.RawMessage) (*bertNormalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		Type               string `json:"type"`
		CleanText          *bool  `json:"clean_text"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          *bool  `json:"lowercase"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer normalizer is malformed")
	}
	if c.Type != "BertNormalizer" {
		return nil, recall.Errorf(recall.EINVALID, "tokenizer normalizer %q is not supported with WordPiece", c.Type)
	}
	orTrue := func(b *bool) bool { return b == nil || *b }
	n := &bertNormalizer{
		cleanText:    orTrue(c.CleanText),
		chineseChars: orTrue(c.HandleChineseChars),
		lowercase:    orTrue(c.Lowercase),
	}
	// strip_accents: null means "follow lowercase", as in BERT's original
	// uncased models.
	n.stripAccents = n.lowercase
	if c.StripAccents != nil {
		n.stripAccents = *c.StripAccents
	}
	return n, nil
}

// scratch holds the buffers normalization reuses between texts.
type scratch struct {
	out, clean, nfd []byte
}

// normalizeString is the normalizer as a string function, for added tokens
// that match normalized text.
func (n *bertNormalizer) normalizeString(s string) string {
	return n.normalize(new(scratch), s)
}

// normalize returns the normalized s, built in sc's buffers.
func (n *bertNormalizer) normalize(sc *scratch, s string) string {
	if isASCII(s) {
		sc.out = n.appendASCII(sc.out[:0], s)
		return string(sc.out)
	}
	buf := sc.clean[:0]
	for _, r := range s {
		switch {
		case n.cleanText && (r == 0 || r == utf8.RuneError || isControl(r)):
			continue
		case n.cleanText && isWhitespace(r):
			buf = append(buf, ' ')
		case n.chineseChars && isChineseChar(r):
			buf = append(buf, ' ')
			buf = utf8.AppendRune(buf, r)
			buf = append(buf, ' ')
		default:
			buf = utf8.AppendRune(buf, r)
		}
	}
	sc.clean = buf
	if n.stripAccents {
		sc.nfd = appendNFD(sc.nfd[:0], buf)
		buf = buf[:0]
		for _, r := range string(sc.nfd) {
			if !unicode.Is(bertMn, r) {
				buf = utf8.AppendRune(buf, r)
			}
		}
	}
	if !n.lowercase {
		return string(buf)
	}
	out := sc.out[:0]
	for _, r := range string(buf) {
		out = appendLower(out, r)
	}
	sc.out = out
	return string(out)
}

func (n *bertNormalizer) appendASCII(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\t' || c == '\n' || c == '\r':
			if n.cleanText {
				c = ' '
			}
		case c < 0x20 || c == 0x7f:
			if n.cleanText {
				continue
			}
		case n.lowercase && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// appendLower lowercases one character as the reference does (Rust's
// char::to_lowercase), which differs from unicode.ToLower where the lowercase
// form is longer than one character or newer than Go's Unicode tables.
func appendLower(dst []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(dst, byte(r))
	}
	if s, ok := lowerExceptions[r]; ok {
		return append(dst, s...)
	}
	return utf8.AppendRune(dst, unicode.ToLower(r))
}

// appendNFD appends the canonical decomposition of s, leaving whole the few
// characters the reference does not decompose. Those have combining class 0,
// so decomposing the text between them gives the same result as the whole.
func appendNFD(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		if r >= utf8.RuneSelf && unicode.Is(nfdKeep, r) {
			dst = norm.NFD.Append(dst, s[start:i]...)
			dst = append(dst, s[i:i+size]...)
			start = i + size
		}
		i += size
	}
	return norm.NFD.Append(dst, s[start:]...)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isWhitespace is BertNormalizer's whitespace: tab, newline and carriage
// return count although they are control characters.
func isWhitespace(r rune) bool {
	return unicode.IsSpace(r) // includes tab, newline and carriage return
}

// isControl is BertNormalizer's control class (its "other" categories in
// the reference's Unicode tables), which excludes tab, newline and carriage
// return.
func isControl(r rune) bool {
	return unicode.Is(bertOther, r)
}

// isChineseChar is the CJK Unified Ideographs block set BERT spaces out: the
// blocks, not the Han script, exactly as the reference lists them.
func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// isBertPunct is BertPreTokenizer's punctuation: all of ASCII's punctuation
// (which includes symbols such as $, + and ^) and Unicode's P categories.
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= '!' && r <= '/') || (r >= ':' && r <= '@') || (r >= '[' && r <= '`') || (r >= '{' && r <= '~')
	}
	return unicode.Is(bertPunct, r)
}

// bertWords calls fn for each word of s as BertPreTokenizer splits it:
// whitespace separates words and is dropped, each punctuation character is a
// word of its own. fn returns false to stop.
func bertWords(s string, fn func(word string) bool) bool {
	start := -1
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		space := unicode.IsSpace(r)
		if !space && !isBertPunct(r) {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if start >= 0 {
			if !fn(s[start:i]) {
				return false
			}
			start = -1
		}
		if !space && !fn(s[i:i+size]) {
			return false
		}
		i += size
	}
	if start >= 0 {
		return fn(s[start:])
	}
	return true
}
