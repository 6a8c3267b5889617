package chunk

import (
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// level ranks places to end a chunk, worst first.
type level int

const (
	levelNone      level = iota // no place fits
	levelRune                   // inside a grapheme cluster longer than a chunk
	levelGrapheme               // between grapheme clusters of one word
	levelSymbol                 // between grapheme clusters, not inside a word: after "/" in a URL, between ideographs
	levelWord                   // at a space
	levelLine                   // at a line break
	levelSentence               // after a sentence end
	levelParagraph              // at a blank line
	levelMessage                // between messages
)

// cut returns where to end a chunk whose new text starts at p, inside a
// message that ends at end and does not fit: the chunk may hold at most
// limit-p.r more characters. Paragraph, sentence and line ends are taken
// only in the second half of the room, so that a blank line early on does
// not leave a stub of a chunk while a sentence end further on would do.
func (s *splitter) cut(p pos, limit int, end pos) (pos, level) {
	t := s.text
	lim := p.b
	for n := limit - p.r; n > 0 && lim < end.b; n-- {
		lim = nextRune(t, lim)
	}
	half := p.b + (lim-p.b)/2
	var best [levelMessage]int
	note := func(e int, l level) {
		if e > p.b && e <= lim {
			best[l] = e
		}
	}
	for i := p.b; i <= lim && i < end.b; {
		c := t[i]
		r, n := rune(c), 1
		if c >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(t[i:])
		}
		if isSpace(r) {
			j, lines := spaceRun(t, i, end.b)
			if i > p.b && pairBreaks(t, i) {
				note(i, levelWord)
				if lines > 0 {
					note(i, levelLine)
				}
				if lines > 1 {
					note(i, levelParagraph)
				}
				if endsSentence(t[:i]) {
					note(i, levelSentence)
				}
			}
			i = j
			continue
		}
		i += n
		if i < end.b && closesSentence(t, i) && pairBreaks(t, i) {
			note(i, levelSentence)
		}
	}
	for _, l := range [...]level{levelParagraph, levelSentence, levelLine} {
		if best[l] >= half && best[l] > p.b {
			return s.forwardTo(p, best[l]), l
		}
	}
	if best[levelWord] > 0 {
		return s.forwardTo(p, best[levelWord]), levelWord
	}
	return s.charCut(p, lim, end)
}

// charCut ends a chunk in text with no whitespace before lim: at the last
// grapheme boundary that does not split a word if there is one, else at the
// last grapheme boundary, else (a single cluster longer than the chunk) at
// the last character that fits.
func (s *splitter) charCut(p pos, lim int, end pos) (pos, level) {
	t := s.text
	anyB, symB := 0, 0
	rest, state, b := t[p.b:end.b], -1, p.b
	for len(rest) > 0 {
		var cl string
		cl, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if b+len(cl) > lim {
			break
		}
		b += len(cl)
		if b < end.b {
			anyB = b
			if !midWordAt(t, b) {
				symB = b
			}
		}
	}
	switch {
	case symB > 0:
		return s.forwardTo(p, symB), levelSymbol
	case anyB > 0:
		return s.forwardTo(p, anyB), levelGrapheme
	}
	return s.forwardTo(p, lim), levelRune
}

// spaceRun returns the end of the run of whitespace starting at i (not past
// end) and how many line breaks it holds, a paragraph separator counting two.
func spaceRun(t string, i, end int) (int, int) {
	lines := 0
	for i < end {
		r, n := rune(t[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(t[i:])
		}
		if !isSpace(r) {
			break
		}
		switch r {
		case '\n', '\u2028':
			lines++
		case '\u2029':
			lines += 2
		}
		i += n
	}
	return i, lines
}

// startKind tells what kind of start byte offset b of t is: the start of
// non-space text after a line break, a sentence end or a space, or none.
func startKind(t string, b int) level {
	if b <= 0 || b >= len(t) {
		return levelNone
	}
	if r, _ := utf8.DecodeRuneInString(t[b:]); isSpace(r) {
		return levelNone
	}
	prev, _ := utf8.DecodeLastRuneInString(t[:b])
	if !isSpace(prev) {
		if closesSentence(t, b) {
			return levelSentence
		}
		return levelNone
	}
	a, lines := b, 0
	for a > 0 {
		r, n := utf8.DecodeLastRuneInString(t[:a])
		if !isSpace(r) {
			break
		}
		if r == '\n' || r == '\u2028' || r == '\u2029' {
			lines++
		}
		a -= n
	}
	switch {
	case lines > 0 || a == 0:
		return levelLine
	case endsSentence(t[:a]):
		return levelSentence
	}
	return levelWord
}

// closesSentence reports whether byte offset b of t directly follows a
// sentence end that needs no space after it: "。！？", "…" or "..."
// (but not in the middle of a run of dots).
func closesSentence(t string, b int) bool {
	next, _ := utf8.DecodeRuneInString(t[b:])
	if next == '.' || next == '…' || isSpace(next) {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(t[:b])
	switch r {
	case '。', '！', '？', '…':
		return true
	case '.':
		return b >= 3 && t[b-3:b] == "..."
	}
	return false
}

// endsSentence reports whether s ends with sentence-ending punctuation,
// perhaps followed by closing quotes or brackets. A number before a full
// stop ("1." opening a list item) does not end a sentence.
func endsSentence(s string) bool {
	for i := 0; i < 3 && len(s) > 0; i++ {
		r, n := utf8.DecodeLastRuneInString(s)
		switch r {
		case '"', '\'', ')', ']', '}', '”', '’', '»', '」', '』', '）':
			s = s[:len(s)-n]
			continue
		case '!', '?', '。', '！', '？', '…':
			return true
		case '.':
			return !listNumber(s[:len(s)-n])
		}
		return false
	}
	return false
}

// listNumber reports whether s ends with a number of one to three digits
// standing alone, as in "1." or "12." opening a list item.
func listNumber(s string) bool {
	d := 0
	for d < len(s) && d < 4 && s[len(s)-1-d] >= '0' && s[len(s)-1-d] <= '9' {
		d++
	}
	if d == 0 || d > 3 {
		return false
	}
	if d == len(s) {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:len(s)-d])
	return isSpace(r)
}

// isSpace reports whether r is whitespace a chunk may be cut at. No-break
// spaces hold their words together, so they are not.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	switch r {
	case '\u00a0', '\u2007', '\u202f':
		return false
	}
	return unicode.IsSpace(r)
}

// pairBreaks reports whether there is a grapheme cluster boundary at byte
// offset b of t judging by the two characters around it. That is exact when
// either of them is whitespace, a sentence end or an ASCII character
// (none of them continues an emoji, flag or conjunct sequence), which is
// where the chunker asks.
func pairBreaks(t string, b int) bool {
	if b <= 0 || b >= len(t) {
		return true
	}
	x, y := t[b-1], t[b]
	if x < utf8.RuneSelf && y < utf8.RuneSelf {
		return x != '\r' || y != '\n'
	}
	_, n1 := utf8.DecodeLastRuneInString(t[:b])
	_, n2 := utf8.DecodeRuneInString(t[b:])
	cl, _, _, _ := uniseg.FirstGraphemeClusterInString(t[b-n1:b+n2], -1)
	return len(cl) == n1
}

// midWordAt reports whether byte offset b of t lies between two letters or
// digits of a word, which is what recall.Chunk.MidWord records. Characters
// of scripts written without spaces do not count (see unspaced). Marks
// before b are skipped to find the letter they belong to.
func midWordAt(t string, b int) bool {
	if b <= 0 || b >= len(t) {
		return false
	}
	next, _ := utf8.DecodeRuneInString(t[b:])
	if !wordChar(next) {
		return false
	}
	for a := b; a > 0; {
		r, n := utf8.DecodeLastRuneInString(t[:a])
		if unicode.Is(unicode.M, r) || r == '\u200d' {
			a -= n
			continue
		}
		return wordChar(r)
	}
	return false
}

// wordChar reports whether r is a letter or digit of a script that separates
// words with spaces.
func wordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !unicode.In(r, unspaced...)
}

// unspaced are scripts written without spaces between words: a cut between
// two of their characters is as good as a cut gets without a dictionary.
var unspaced = []*unicode.RangeTable{
	unicode.Han, unicode.Hiragana, unicode.Katakana,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar, unicode.Tibetan,
}
