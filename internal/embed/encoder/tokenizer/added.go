package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedTokenSpec is one entry of tokenizer.json's added_tokens.
type addedTokenSpec struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedVocab finds added tokens ([CLS], <mask>, ...) in text the way
// Hugging Face's AddedVocabulary does: tokens marked normalized=false match
// the raw text before normalization, the others match the normalized text;
// among matches the leftmost wins, then the longest; the text between matches
// goes through the model.
type addedVocab struct {
	raw, normalized []addedToken
}

type addedToken struct {
	content                    string
	id                         int32
	singleWord, lstrip, rstrip bool
}

// newAddedVocab sorts the specs into the two sets. normalize is the
// tokenizer's normalizer: normalized tokens are matched in their normalized
// form, as the reference does.
func newAddedVocab(specs []addedTokenSpec, normalize func(string) string) addedVocab {
	var a addedVocab
	for _, s := range specs {
		if s.Content == "" {
			continue
		}
		t := addedToken{content: s.Content, id: s.ID, singleWord: s.SingleWord, lstrip: s.LStrip, rstrip: s.RStrip}
		if s.Normalized && normalize != nil {
			t.content = normalize(s.Content)
			if t.content == "" {
				continue
			}
			a.normalized = append(a.normalized, t)
		} else {
			a.raw = append(a.raw, t)
		}
	}
	return a
}

// split calls fn for each piece of s in order: an added token with its id, or
// a run of plain text with id -1. fn returns false to stop.
func split(s string, tokens []addedToken, fn func(piece string, id int32) bool) bool {
	if len(tokens) == 0 {
		return s == "" || fn(s, -1)
	}
	done := 0 // s[:done] has been handed to fn
	pos := 0  // where the search for the next match starts
	for pos < len(s) {
		start, t := leftmostLongest(s, pos, tokens)
		if t == nil {
			break
		}
		stop := start + len(t.content)
		if t.singleWord && !(isWordBoundaryBefore(s, start) && isWordBoundaryAfter(s, stop)) {
			// The reference matcher has consumed this match and resumes
			// after it, so it does not look for another one inside it.
			pos = stop
			continue
		}
		if t.lstrip {
			start = max(done, len(strings.TrimRightFunc(s[:start], unicode.IsSpace)))
		}
		if t.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if done < start && !fn(s[done:start], -1) {
			return false
		}
		if !fn(s[start:stop], t.id) {
			return false
		}
		done, pos = stop, stop
	}
	if done < len(s) {
		return fn(s[done:], -1)
	}
	return true
}

// leftmostLongest returns the earliest match at or after pos, the longest
// among those starting there.
func leftmostLongest(s string, pos int, tokens []addedToken) (int, *addedToken) {
	best := -1
	var tok *addedToken
	for i := range tokens {
		t := &tokens[i]
		j := strings.Index(s[pos:], t.content)
		if j < 0 {
			continue
		}
		j += pos
		if best < 0 || j < best || (j == best && len(t.content) > len(tok.content)) {
			best, tok = j, t
		}
	}
	return best, tok
}

// isWordChar is the reference's regex \w: Alphabetic, marks, decimal
// digits, connector punctuation and the joiners.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) ||
		unicode.In(r, unicode.Nl, unicode.Pc, unicode.Join_Control, unicode.Other_Alphabetic)
}

func isWordBoundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !isWordChar(r)
}

func isWordBoundaryAfter(s string, i int) bool {
	if i == len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isWordChar(r)
}
