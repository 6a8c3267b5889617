package tokenizer

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/recall-mcp/recall"
)

// textNormalizer is one of tokenizers' generic normalizers (the ones
// SentencePiece-converted tokenizers use). Besides the text it tracks whether
// the first character still comes from the first character of the input:
// Metaspace's prepend_scheme "first" depends on it.
type textNormalizer interface {
	normalize(s string, atStart bool) (string, bool)
}

func parseTextNormalizer(raw json.RawMessage) (textNormalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "tokenizer normalizer is malformed")
	}
	bad := func(err error) error {
		return recall.WrapError(recall.EINVALID, err, "tokenizer normalizer %s is malformed", typ)
	}
	switch typ {
	case "Sequence":
		var c struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, bad(err)
		}
		var seq normSequence
		for _, r := range c.Normalizers {
			n, err := parseTextNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "Precompiled":
		var c struct {
			Charsmap *string `json:"precompiled_charsmap"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, bad(err)
		}
		if c.Charsmap == nil || *c.Charsmap == "" {
			// Some converted models carry an empty map: it changes nothing.
			return normSequence(nil), nil
		}
		blob, err := base64.StdEncoding.DecodeString(*c.Charsmap)
		if err != nil {
			return nil, bad(err)
		}
		cm, err := parseCharsmap(blob)
		if err != nil {
			return nil, err
		}
		return normCharsmap{cm}, nil
	case "Replace":
		var c struct {
			Pattern struct {
				String *string `json:"String"`
				Regex  *string `json:"Regex"`
			} `json:"pattern"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, bad(err)
		}
		switch {
		case c.Pattern.String != nil:
			return normReplace{literal: *c.Pattern.String, content: c.Content}, nil
		case c.Pattern.Regex != nil:
			re, err := regexp.Compile(*c.Pattern.Regex)
			if err != nil {
				return nil, recall.WrapError(recall.EINVALID, err, "tokenizer Replace pattern %q is not supported", *c.Pattern.Regex)
			}
			return normReplace{re: re, content: c.Content}, nil
		}
		return nil, recall.Errorf(recall.EINVALID, "tokenizer Replace normalizer has no pattern")
	case "Strip":
		var c struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, bad(err)
		}
		return normStrip{left: c.Left, right: c.Right}, nil
	case "Prepend":
		var c struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, bad(err)
		}
		return normPrepend(c.Prepend), nil
	case "NFC":
		return normForm{norm.NFC}, nil
	case "NFD":
		return normForm{norm.NFD}, nil
	case "NFKC":
		return normForm{norm.NFKC}, nil
	case "NFKD":
		return normForm{norm.NFKD}, nil
	case "Lowercase":
		return normLowercase{}, nil
	case "StripAccents":
		return normStripAccents{}, nil
	}
	return nil, recall.Errorf(recall.EINVALID, "tokenizer normalizer %q is not supported with Unigram", typ)
}

type normSequence []textNormalizer

func (q normSequence) normalize(s string, atStart bool) (string, bool) {
	for _, n := range q {
		s, atStart = n.normalize(s, atStart)
	}
	return s, atStart
}

// normCharsmap never moves the start: the reference loses track of
// characters it deletes at the front and keeps the first one's position.
type normCharsmap struct{ cm *charsmap }

func (n normCharsmap) normalize(s string, atStart bool) (string, bool) {
	return n.cm.normalize(s), atStart
}

type normReplace struct {
	literal string
	re      *regexp.Regexp
	content string
}

func (n normReplace) normalize(s string, atStart bool) (string, bool) {
	var loc []int
	if n.re != nil {
		loc = n.re.FindStringIndex(s)
	} else if n.literal != "" && strings.HasPrefix(s, n.literal) {
		loc = []int{0, len(n.literal)}
	}
	// The reference gives a replacement the position of the last character
	// it replaces: a match at the front keeps the start only when it is one
	// character replaced by something.
	if loc != nil && loc[0] == 0 && loc[1] > 0 {
		_, size := utf8.DecodeRuneInString(s)
		if loc[1] != size || n.content == "" {
			atStart = false
		}
	}
	if n.re != nil {
		return n.re.ReplaceAllLiteralString(s, n.content), atStart
	}
	if n.literal == "" {
		return s, atStart
	}
	return strings.ReplaceAll(s, n.literal, n.content), atStart
}

type normStrip struct{ left, right bool }

func (n normStrip) normalize(s string, atStart bool) (string, bool) {
	if n.left {
		t := strings.TrimLeftFunc(s, unicode.IsSpace)
		if len(t) != len(s) {
			atStart = false
		}
		s = t
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s, atStart
}

type normPrepend string

func (n normPrepend) normalize(s string, atStart bool) (string, bool) {
	if s == "" {
		return s, atStart
	}
	return string(n) + s, atStart
}

type normForm struct{ form norm.Form }

func (n normForm) normalize(s string, atStart bool) (string, bool) {
	return n.form.String(s), atStart
}

// normLowercase lowercases character by character with Unicode's full
// mapping, as Rust's char::to_lowercase does: İ is the one character whose
// lowercase is two characters.
type normLowercase struct{}

func (normLowercase) normalize(s string, atStart bool) (string, bool) {
	return strings.Map(unicode.ToLower, strings.ReplaceAll(s, "\u0130", "i\u0307")), atStart
}

// normStripAccents drops combining marks (usually after NFD).
type normStripAccents struct{}

func isMark(r rune) bool { return unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me) }

func (normStripAccents) normalize(s string, atStart bool) (string, bool) {
	if r, _ := utf8.DecodeRuneInString(s); s != "" && isMark(r) {
		// A mark dropped at the front moves the start.
		atStart = false
	}
	return strings.Map(func(r rune) rune {
		if isMark(r) {
			return -1
		}
		return r
	}, s), atStart
}
