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
// not leave a stub of a chunk while a sentence end further on would do;
// only a word end may come earlier.
func (s *splitter) cut(p pos, limit int, end pos) (int, level) {
	t := s.text
	lim := ahead(t, p.b, limit-p.r, end.b)
	half := p.b + (lim-p.b)/2
	for half > p.b && !utf8.RuneStart(t[half]) {
		half--
	}
	from := half
	for from > p.b {
		r, n := utf8.DecodeLastRuneInString(t[:from])
		if !isSpace(r) {
			break
		}
		from -= n
	}
	best := scanCuts(t, from, lim, end.b)
	for _, l := range [...]level{levelParagraph, levelSentence, levelLine} {
		if best[l] >= half && best[l] > p.b {
			return best[l], l
		}
	}
	if e := best[levelWord]; e > p.b {
		return e, levelWord
	}
	// No space in the second half. In a script written without spaces a
	// cut between two of its characters there beats a word end early on:
	// after "**User:** " and a long run of Chinese, that word end would
	// leave a chunk of the speaker's name alone.
	c, l := s.charCut(p, lim, end)
	if l == levelSymbol && c >= half && unspacedBefore(t, c) {
		return c, l
	}
	if e := lastWordEnd(t, p.b, from); e > p.b {
		return e, levelWord
	}
	return c, l
}

// unspacedBefore reports whether the character before byte offset b of t
// (past any marks) is of a script written without spaces.
func unspacedBefore(t string, b int) bool {
	for b > 0 {
		r, n := utf8.DecodeLastRuneInString(t[:b])
		if !unicode.Is(unicode.M, r) {
			return unicode.In(r, unspaced...)
		}
		b -= n
	}
	return false
}

// scanCuts returns, for each level from word to paragraph, the last place
// in [from, lim] where a chunk could end at that level, or 0. from is not
// inside a run of whitespace, nor preceded by one; end bounds the text the
// cut lies in.
func scanCuts(t string, from, lim, end int) [levelMessage]int {
	var best [levelMessage]int
	stop := min(lim+1, end)
	for i := from; i < stop; {
		for i < stop && plain[t[i]] {
			i++
		}
		if i >= stop {
			break
		}
		c := t[i]
		if c == '.' {
			i++
			if i < stop && closesSentence(t, i) && pairBreaks(t, i) {
				best[levelSentence] = i
			}
			continue
		}
		r, n := rune(c), 1
		if c >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(t[i:])
		}
		if !isSpace(r) {
			i += n
			if i < end && i <= lim && isCloser(r) && closesSentence(t, i) && pairBreaks(t, i) {
				best[levelSentence] = i
			}
			continue
		}
		j, lines := spaceRun(t, i, end)
		if t[i-1] < utf8.RuneSelf || pairBreaks(t, i) {
			best[levelWord] = i
			if lines > 0 {
				best[levelLine] = i
			}
			if lines > 1 {
				best[levelParagraph] = i
			}
			if endsSentence(t[:i]) {
				best[levelSentence] = i
			}
		}
		i = j
	}
	return best
}

// lastWordEnd returns the last place in (lo, hi) where non-space text is
// followed by whitespace, or 0.
func lastWordEnd(t string, lo, hi int) int {
	for e := hi; e > lo; {
		r, n := utf8.DecodeLastRuneInString(t[:e])
		if !isSpace(r) {
			e -= n
			continue
		}
		for e > lo {
			r, n := utf8.DecodeLastRuneInString(t[:e])
			if !isSpace(r) {
				break
			}
			e -= n
		}
		if e > lo && pairBreaks(t, e) {
			return e
		}
	}
	return 0
}

// isCloser reports whether r ends a sentence without needing a space after it.
func isCloser(r rune) bool {
	return r == '。' || r == '！' || r == '？' || r == '…'
}

// charCut ends a chunk in text with no whitespace before lim: at the last
// grapheme boundary that does not split a word if there is one, else at the
// last grapheme boundary, else (a single cluster longer than the chunk) at
// the last character that fits.
func (s *splitter) charCut(p pos, lim int, end pos) (int, level) {
	t := s.text
	// Walk back from lim while the two characters around each place tell
	// on their own whether it is a grapheme boundary (see pairExact): the
	// last boundary that splits no word is usually a few characters away.
	anyB, b := 0, lim
	for b > p.b {
		if x, y := t[b-1], t[b]; x < utf8.RuneSelf && y < utf8.RuneSelf {
			// ASCII on both sides: a boundary unless inside "\r\n".
			switch {
			case !asciiWord[x] || !asciiWord[y]:
				if x != '\r' || y != '\n' {
					return b, levelSymbol
				}
			case anyB == 0:
				anyB = b
			}
			b--
			continue
		}
		x, n := utf8.DecodeLastRuneInString(t[:b])
		if !pairExact(x) {
			break
		}
		if pairBreaks(t, b) {
			if !midWordAt(t, b) {
				return b, levelSymbol
			}
			if anyB == 0 {
				anyB = b
			}
		}
		b -= n
	}
	if b == p.b {
		if anyB > 0 {
			return anyB, levelGrapheme
		}
		return lim, levelRune
	}
	// The segmenter sees one character past lim, all it needs to tell
	// whether lim is a boundary, so a cluster of a million combining marks
	// costs one pass, not one per chunk.
	anyB, symB := 0, 0
	rest, state, b := t[p.b:min(nextRune(t, lim), end.b)], -1, p.b
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
		return symB, levelSymbol
	case anyB > 0:
		return anyB, levelGrapheme
	}
	return lim, levelRune
}

// spaceRun returns the end of the run of whitespace starting at i (not past
// end) and how many line breaks it holds, a paragraph separator counting two.
func spaceRun(t string, i, end int) (int, int) {
	lines := 0
	for i < end {
		c := t[i]
		if c < utf8.RuneSelf {
			if !asciiSpace[c] {
				break
			}
			if c == '\n' {
				lines++
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(t[i:])
		if !isSpace(r) {
			break
		}
		switch r {
		case '\u2028': // line separator
			lines++
		case '\u2029': // paragraph separator
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
	if len(s) == 0 {
		return false
	}
	if c := s[len(s)-1]; c < utf8.RuneSelf && (c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9') {
		return false // the common case: a word ends here
	}
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
		return asciiSpace[r]
	}
	return r != '\u00a0' && r != '\u2007' && r != '\u202f' && unicode.IsSpace(r)
}

var asciiWord = func() (w [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		w[c] = wordChar(rune(c))
	}
	return w
}()

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// plain marks the bytes scanCuts can step over: ASCII that is neither
// whitespace nor a full stop.
var plain = func() (p [256]bool) {
	for c := range utf8.RuneSelf {
		p[c] = !asciiSpace[c] && c != '.'
	}
	return p
}()

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

// pairExact reports whether, with x just before a place, pairBreaks is
// exact there. The grapheme rules that look further back than one
// character apply only after a zero-width joiner (emoji sequences), a
// regional indicator (flags) or, since Unicode 15.1, an extending mark or
// virama in an Indic conjunct. No letter, number or punctuation is one of
// those except the two halfwidth kana voicing marks, which are extending.
func pairExact(x rune) bool {
	if x < utf8.RuneSelf {
		return true
	}
	return (unicode.IsLetter(x) || unicode.IsNumber(x) || unicode.IsPunct(x)) && x != '\uff9e' && x != '\uff9f'
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
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar,
}
