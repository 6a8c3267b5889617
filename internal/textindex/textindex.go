// Package textindex turns text into what recall's full-text indexes hold, and
// user queries into what they look up. Both sides go through the same folding
// and the same CJK bigrams, so a query matches the text it was typed from.
// The functions are pure and shared by every store backend.
//
// Chinese and Japanese are written without spaces, and a word tokenizer such
// as SQLite's unicode61 would make a whole run of ideographs one token, which
// no query shorter than the run can match. So every run of Han, Hiragana and
// Katakana is indexed as its overlapping bigrams plus the run's last character
// ("我喜欢薄荷茶" → "我喜 喜欢 欢薄 薄荷 荷茶 茶"); a query run of two or more
// characters becomes the phrase of its bigrams, and a single character a
// prefix that matches every bigram starting with it and the trailing unigram.
// Hangul is written with spaces and is left to the word tokenizer.
//
// The index stems English words as SQLite's FTS5 porter tokenizer over
// unicode61 with remove_diacritics 2 does, byte for byte (a test runs both),
// so its vocabulary holds "run" for "running" and "cafe" for "café". The
// stemming happens here: IndexText gives the index its terms, separated by
// spaces, and Term gives the term for a query token; the index's own
// tokenizer (FTS5 "ascii") only splits on the spaces.
package textindex

//go:generate go run porter_gen.go

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

var folder = cases.Fold()

// Fold returns s as exact-match checks should compare it: NFKC (so
// full-width "ＡＢＣ" and half-width "ｶﾀｶﾅ" become "ABC" and "カタカナ"),
// Unicode case folding (so "ÄÖ" matches "äö", "ΣΟΦΟΣ" matches "σοφος" and
// "Straße" matches "STRASSE"), and every run of white space reduced to one
// space, so that a passage still matches across a line break.
// strings.Contains(Fold(text), Fold(query)) is the exact-substring test.
func Fold(s string) string {
	if isASCII(s) {
		return foldASCII(s)
	}
	return collapseSpace(foldCase(s))
}

// foldASCII is Fold for ASCII text, in one pass over its bytes: a search
// folds every candidate's text to look for the query verbatim.
func foldASCII(s string) string {
	b := make([]byte, 0, len(s))
	pending := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || '\t' <= c && c <= '\r':
			pending = len(b) > 0
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if pending {
			b = append(b, ' ')
			pending = false
		}
		b = append(b, c)
	}
	return string(b)
}

// Phrases finds folded phrases (Fold's output) in texts as whole words:
// InAll(text) reports whether Fold(text) holds every phrase at a place where
// it neither starts nor ends inside a word, diacritics left out on both
// sides as the full-text index leaves them out (unicode61's
// remove_diacritics: "cafe" is found in "Café", and "café" in "cafe", so a
// quoted phrase is exact in every search mode alike), so "heat" is not found in
// "theatre" nor "kayak" in "kayaks". A phrase end in a script written
// without spaces (Chinese, Japanese) needs no boundary: 薄荷 is found inside
// 薄荷糖. A search asks it of every candidate, for the query verbatim, so
// the ASCII case streams the text through a Knuth-Morris-Pratt matcher,
// folding as it goes, without making a new string.
type Phrases struct {
	folded []string
	fail   [][]int  // per phrase: the longest proper border of each prefix
	ring   [][]byte // per phrase: the last len+1 folded bytes (ASCII matching)
}

// NewPhrases prepares folded phrases for matching. A Phrases is for one
// goroutine at a time.
func NewPhrases(folded []string) *Phrases {
	folded = slices.Clone(folded)
	for i, p := range folded {
		folded[i] = stripDiacritics(p)
	}
	m := &Phrases{folded: folded, fail: make([][]int, len(folded)), ring: make([][]byte, len(folded))}
	for i, p := range folded {
		f := make([]int, len(p))
		for j, k := 1, 0; j < len(p); j++ {
			for k > 0 && p[j] != p[k] {
				k = f[k-1]
			}
			if p[j] == p[k] {
				k++
			}
			f[j] = k
		}
		m.fail[i] = f
		m.ring[i] = make([]byte, len(p)+1)
	}
	return m
}

// inWord reports whether r is part of a word in a script that separates
// words with spaces: a phrase that starts or ends with such a rune must not
// continue into a neighbouring one.
func inWord(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)) && !IsCJK(r)
}

// InAll reports whether Fold(text) holds every phrase as whole words;
// false when there are none.
func (m *Phrases) InAll(text string) bool {
	if len(m.folded) == 0 {
		return false
	}
	if !isASCII(text) {
		f := stripDiacritics(Fold(text))
		for _, p := range m.folded {
			if !containsWords(f, p) {
				return false
			}
		}
		return true
	}
	for i := range m.folded {
		if !m.inASCII(text, i) {
			return false
		}
	}
	return true
}

// containsWords reports whether s holds p where p starts and ends at word
// boundaries (see inWord).
func containsWords(s, p string) bool {
	if p == "" {
		return true
	}
	first, _ := utf8.DecodeRuneInString(p)
	last, _ := utf8.DecodeLastRuneInString(p)
	needStart, needEnd := inWord(first), inWord(last)
	for off := 0; off <= len(s)-len(p); {
		i := strings.Index(s[off:], p)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(p):])
		if (!needStart || i == 0 || !inWord(before)) && (!needEnd || i+len(p) == len(s) || !inWord(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		off = i + size
	}
	return false
}

// inASCII reports whether foldASCII(s) holds phrase i as whole words,
// reading s once.
func (m *Phrases) inASCII(s string, i int) bool {
	p, fail, ring := m.folded[i], m.fail[i], m.ring[i]
	if p == "" {
		return true
	}
	if !isASCII(p) {
		return false // the fold of ASCII text is ASCII
	}
	needStart, needEnd := inWord(rune(p[0])), inWord(rune(p[len(p)-1]))
	k, n := 0, 0      // bytes of p matched so far; folded bytes read
	endCheck := false // a match waits for the next byte to end a word
	feed := func(c byte) bool {
		if endCheck {
			endCheck = false
			if !inWord(rune(c)) {
				return true
			}
		}
		ring[n%len(ring)] = c
		n++
		for k > 0 && (k == len(p) || p[k] != c) {
			k = fail[k-1]
		}
		if p[k] == c {
			k++
		}
		if k == len(p) && (!needStart || n == len(p) || !inWord(rune(ring[(n-len(p)-1)%len(ring)]))) {
			if !needEnd {
				return true
			}
			endCheck = true
		}
		return false
	}
	pending, started := false, false
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case c == ' ' || '\t' <= c && c <= '\r':
			pending = started
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if pending {
			if feed(' ') {
				return true
			}
			pending = false
		}
		started = true
		if feed(c) {
			return true
		}
	}
	return endCheck // the text ended right after a match
}

// foldCase is Fold without the white-space step.
func foldCase(s string) string {
	if isASCII(s) {
		return asciiLower(s)
	}
	s = norm.NFKC.String(s)
	s = folder.String(s)
	// Folding can take a string out of normal form (it may produce a base
	// letter and a combining mark that compose); recompose for stable bytes.
	return norm.NFC.String(s)
}

// Normalize returns s as a word tokenizer should see it: folded as by Fold,
// with every CJK run rewritten as its bigrams and last character, set apart
// by spaces from the text around it. White space is left as it is: a
// tokenizer splits on every kind of it, so collapsing runs would change no
// token. Tokens of Normalize(s) are the words of s; Term of each is what
// the index holds for it.
func Normalize(s string) string {
	s = foldCase(s)
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) * 2)
	var run []rune
	flush := func() {
		if len(run) == 0 {
			return
		}
		b.WriteByte(' ')
		for i := 0; i+1 < len(run); i++ {
			b.WriteRune(run[i])
			b.WriteRune(run[i+1])
			b.WriteByte(' ')
		}
		b.WriteRune(run[len(run)-1])
		b.WriteByte(' ')
		run = run[:0]
	}
	for _, r := range s {
		if IsCJK(r) {
			run = append(run, r)
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String()
}

// IsCJK reports whether r belongs to a script written without spaces that
// the index splits into bigrams: Han, Hiragana or Katakana, including the
// prolonged sound mark "ー" that Unicode counts as common to both kana.
func IsCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		r == 0x30FC || r == 0xFF70
}

// isTokenRune reports whether r belongs to a word as SQLite's unicode61
// tokenizer sees it with its default categories (letters, numbers and
// private-use characters, by the Unicode version SQLite's tables follow,
// and code points unassigned there) and remove_diacritics, which keeps the
// combining marks it strips inside a word; every other character separates
// tokens.
func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIWordByte(byte(r))
	}
	return !unicode.Is(unicode61Separators, r)
}

// Tokens splits text that went through Normalize into the tokens a unicode61
// tokenizer finds in it, as written (before that tokenizer strips
// diacritics and the porter tokenizer stems them; see Term).
func Tokens(s string) []string {
	var toks []string
	eachToken(s, func(tok string) { toks = append(toks, tok) })
	return toks
}

// maxTermLen is FTS5's longest term (FTS5_MAX_TOKEN_SIZE): the index and
// queries alike cut longer tokens to it.
const maxTermLen = 32768

// Term returns the term that recall's full-text index holds for a token as
// Tokens or ParseQuery give it: the token with the diacritics unicode61
// removes removed ("café" -> "cafe", a lone combining mark -> nothing),
// stemmed by Stem, and cut to FTS5's longest term. It is "" for a token
// FTS5 drops entirely. Terms of a query's tokens are what to look up in the
// index's vocabulary and to write into MATCH expressions: the index's
// tokenizer only splits on the spaces between terms, so query text must be
// given as terms too.
func Term(tok string) string {
	t := Stem(stripDiacritics(tok))
	if len(t) > maxTermLen {
		t = t[:maxTermLen]
	}
	return t
}

// Terms returns the terms recall's full-text index holds for text s, in
// order: Term of every token of Normalize(s), without empty ones.
func Terms(s string) []string {
	var out []string
	eachTerm(s, func(t string) { out = append(out, t) })
	return out
}

// IndexText returns what the full-text index is given for text s: its Terms
// separated by single spaces. The index's tokenizer (FTS5 "ascii") splits
// on the spaces and changes nothing else, so it holds exactly these terms:
// the folding, CJK bigrams and stemming all happen here, in Go, where a
// sweep runs them on every core instead of inside the single write
// transaction.
func IndexText(s string) string {
	if isASCII(s) {
		return indexASCII(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	eachTerm(s, func(t string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	})
	return b.String()
}

// indexASCII is IndexText for ASCII text in one pass over its bytes: a
// token is a run of letters and digits, lowered as it is copied and, when
// the stemmer takes it, stemmed in a buffer. It is most of a sweep's text.
func indexASCII(s string) string {
	out := make([]byte, 0, len(s))
	var buf [maxStemLen + 1]byte
	for i := 0; i < len(s); {
		if !isASCIIWordByte(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isASCIIWordByte(s[j]) {
			j++
		}
		if len(out) > 0 {
			out = append(out, ' ')
		}
		if n := j - i; n >= minStemLen && n <= maxStemLen {
			w := word(buf[:n])
			for k := range n {
				w[k] = lowerASCII(s[i+k])
			}
			out = append(out, stemWord(w)...)
		} else {
			for _, c := range []byte(s[i:min(j, i+maxTermLen)]) {
				out = append(out, lowerASCII(c))
			}
		}
		i = j
	}
	return string(out)
}

func isASCIIWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// eachTerm calls f with each term of s, in order.
func eachTerm(s string, f func(string)) {
	eachToken(Normalize(s), func(tok string) {
		if t := Term(tok); t != "" {
			f(t)
		}
	})
}

// eachToken calls f with each token of normalized text, as Tokens splits it.
func eachToken(s string, f func(string)) {
	start := -1
	for i := 0; i < len(s); {
		c := s[i]
		var tokenRune bool
		size := 1
		if c < utf8.RuneSelf {
			tokenRune = isASCIIWordByte(c)
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			tokenRune = isTokenRune(r)
		}
		if tokenRune {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			f(s[start:i])
			start = -1
		}
		i += size
	}
	if start >= 0 {
		f(s[start:])
	}
}

// stripDiacritics applies unicode61's folding of the characters inside a
// token (see unicode61Folds) and lowers ASCII letters, as unicode61 does.
func stripDiacritics(tok string) string {
	changes := false
	if isASCII(tok) {
		for i := 0; i < len(tok); i++ {
			if 'A' <= tok[i] && tok[i] <= 'Z' {
				return strings.ToLower(tok)
			}
		}
		return tok
	}
	for _, r := range tok {
		if _, ok := unicode61Folds[r]; ok || 'A' <= r && r <= 'Z' {
			changes = true
			break
		}
	}
	if !changes {
		return tok
	}
	var b strings.Builder
	b.Grow(len(tok))
	for i, r := range tok {
		switch f, ok := unicode61Folds[r]; {
		case ok && f != 0:
			b.WriteRune(f)
		case ok:
		case 'A' <= r && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		default:
			// The bytes as they are, even where they are not UTF-8.
			_, n := utf8.DecodeRuneInString(tok[i:])
			b.WriteString(tok[i : i+n])
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// collapseSpace trims s and reduces each run of white space to one space,
// returning s itself, without copying, when it is already so.
func collapseSpace(s string) string {
	clean := true
	prevSpace := true
	for _, r := range s {
		sp := unicode.IsSpace(r)
		if sp && (prevSpace || r != ' ') {
			clean = false
			break
		}
		prevSpace = sp
	}
	if clean && !prevSpace {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pending := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			pending = b.Len() > 0
			continue
		}
		if pending {
			b.WriteByte(' ')
			pending = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June",
	"July", "August", "September", "October", "November", "December"}

// TitleText returns what the full-text index holds as a chunk's title: its
// source's title followed by the source's date written out ("13 October
// 2023" for "2023-10-13", "October 2023" for "2023-10"), so every chunk of a
// conversation is found by the day it was held as people write it ("what
// did we say on October 13, 2023?"), not only the chunk that holds the
// transcript's date line. date is "YYYY-MM-DD", "YYYY-MM", "YYYY" or "".
func TitleText(title, date string) string {
	w := dateWords(date)
	if w == "" {
		return title
	}
	if title == "" {
		return w
	}
	return title + " " + w
}

func dateWords(date string) string {
	var y, m, d int
	switch n, _ := fmt.Sscanf(date, "%4d-%2d-%2d", &y, &m, &d); {
	case len(date) == 10 && n == 3 && m >= 1 && m <= 12 && d >= 1 && d <= 31:
		return fmt.Sprintf("%d %s %d", d, monthNames[m-1], y)
	case len(date) == 7 && n >= 2 && m >= 1 && m <= 12:
		return fmt.Sprintf("%s %d", monthNames[m-1], y)
	case len(date) == 4 && n >= 1:
		return date
	}
	return ""
}
