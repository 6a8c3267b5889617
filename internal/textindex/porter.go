package textindex

// The full-text index stems with SQLite FTS5's "porter" tokenizer, and the
// query planner looks words up in the index's vocabulary, so Stem must give
// byte for byte what FTS5 stores, quirks included. FTS5's stemmer is the
// classic Porter (1980) algorithm with these differences, all established
// by running words through the real tokenizer:
//
//   - Tokens shorter than 3 or longer than 64 bytes (after unicode61 folding
//     and diacritic removal) are left alone.
//   - It works on bytes: only a, e, i, o, u (and y, by position) are vowels;
//     every other byte, including each byte of a non-ASCII character, is a
//     consonant. A rule may therefore end a stem inside a multi-byte
//     character (the "double consonant" rule of step 1b), and FTS5 stores
//     that invalid UTF-8 as it is.
//   - A suffix rule applies only when something precedes the suffix, so
//     "ies" becomes "ie" (by the "s" rule) where Porter gives "i", and
//     "eed" loses "ed" where Porter keeps it.
//   - In each step the first rule whose suffix matches is the only one
//     tried, as in Porter; the rules and their order are Porter's revised
//     set ("bli" -> "ble", "logi" -> "log").
//   - In step 1b a final "yy" counts as a double consonant, and in *v* ("the
//     stem holds a vowel") y is a vowel anywhere but at the start.

// Bounds, in bytes, of the tokens FTS5's porter tokenizer stems.
const (
	minStemLen = 3
	maxStemLen = 64
)

// Stem returns the stem SQLite FTS5's porter tokenizer gives a token that
// unicode61 produced (lower case, diacritics removed). Tokens outside 3..64
// bytes are returned unchanged.
func Stem(tok string) string {
	if len(tok) < minStemLen || len(tok) > maxStemLen {
		return tok
	}
	var buf [maxStemLen + 1]byte // step 1b may add an "e"
	w := stemWord(word(append(buf[:0], tok...)))
	if string(w) == tok {
		return tok
	}
	return string(w)
}

// stemWord stems w (3..64 bytes) in place; w must have room for one more
// byte.
func stemWord(w word) word {
	w = w.step1a()
	if stem, ok := w.step1b(); ok {
		w = stem.step1bTidy()
	} else {
		w = stem
	}
	w = w.step1c()
	w, _ = w.apply(step2)
	w, _ = w.apply(step3)
	w, _ = w.apply(step4)
	return w.step5()
}

// word is a token being stemmed, as bytes.
type word []byte

func isVowel(c byte, yIsVowel bool) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	case 'y':
		return yIsVowel
	}
	return false
}

// measure returns Porter's m of w: the number of vowel-consonant sequences
// in [C](VC)^m[V], where y is a vowel after a consonant and a consonant
// otherwise. Only m > 1 is ever asked, so it stops counting at 2.
func (w word) measure() int {
	m := 0
	prevCons := false
	inVowels := false
	for i, c := range w {
		cons := !isVowel(c, i > 0 && prevCons)
		if cons && inVowels {
			m++
			if m == 2 {
				return m
			}
		}
		inVowels = !cons
		prevCons = cons
	}
	return m
}

// hasVowel is Porter's *v*. FTS5 counts y as a vowel at any position but
// the first; it agrees with Porter on every stem, since a y preceded by a
// vowel is only reached once a vowel has been seen.
func (w word) hasVowel() bool {
	for i, c := range w {
		if isVowel(c, i > 0) {
			return true
		}
	}
	return false
}

// endsCVC is Porter's *o: w ends consonant-vowel-consonant and the last
// consonant is not w, x or y.
func (w word) endsCVC() bool {
	n := len(w)
	if n < 3 {
		return false
	}
	switch w[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	var pattern uint // the consonant flags of the last three bytes
	prevCons := false
	for i, c := range w {
		cons := !isVowel(c, i > 0 && prevCons)
		pattern <<= 1
		if cons {
			pattern |= 1
		}
		prevCons = cons
	}
	return pattern&0b111 == 0b101
}

func (w word) hasSuffix(s string) bool {
	return len(w) > len(s) && string(w[len(w)-len(s):]) == s
}

// step1a: sses -> ss, ies -> i, ss -> ss, s -> "".
func (w word) step1a() word {
	n := len(w)
	switch {
	case w[n-1] != 's':
		return w
	case w[n-2] == 'e' && (w.hasSuffix("sses") || w.hasSuffix("ies")):
		return w[:n-2]
	case w[n-2] == 's':
		return w
	}
	return w[:n-1]
}

// step1b: (m>0) eed -> ee, (*v*) ed -> "", (*v*) ing -> "". It reports
// whether "ed" or "ing" went, after which step1bTidy runs.
func (w word) step1b() (word, bool) {
	n := len(w)
	switch {
	case w.hasSuffix("eed"):
		if w[:n-3].measure() > 0 {
			return w[:n-1], false
		}
	case w.hasSuffix("ed"):
		if w[:n-2].hasVowel() {
			return w[:n-2], true
		}
	case w.hasSuffix("ing"):
		if w[:n-3].hasVowel() {
			return w[:n-3], true
		}
	}
	return w, false
}

// step1bTidy: at -> ate, bl -> ble, iz -> ize; else a double consonant
// other than l, s, z loses one; else (m=1 and *o) adds an e.
func (w word) step1bTidy() word {
	if w, ok := w.apply(step1bTidy); ok {
		return w
	}
	n := len(w)
	if c := w[n-1]; n >= 2 && !isVowel(c, false) && c != 'l' && c != 's' && c != 'z' && c == w[n-2] {
		return w[:n-1]
	}
	if w.measure() == 1 && w.endsCVC() {
		return append(w, 'e')
	}
	return w
}

// step1c: (*v*) y -> i.
func (w word) step1c() word {
	n := len(w)
	if w[n-1] == 'y' && w[:n-1].hasVowel() {
		w[n-1] = 'i'
	}
	return w
}

// step5: (m>1) e -> "", (m=1 and not *o) e -> "", then (m>1) ll -> l.
func (w word) step5() word {
	n := len(w)
	if w[n-1] == 'e' {
		stem := w[:n-1]
		if m := stem.measure(); m > 1 || m == 1 && !stem.endsCVC() {
			w = stem
		}
	}
	n = len(w)
	if n > 1 && w[n-1] == 'l' && w[n-2] == 'l' && w[:n-1].measure() > 1 {
		w = w[:n-1]
	}
	return w
}

// rule replaces suffix by repl when the stem before it passes cond.
type rule struct {
	suffix, repl string
	cond         func(stem word) bool
}

// rules is a step's rules in the order they are tried, grouped by the last
// byte of their suffix: a rule can only match a word that ends in that
// byte, so the first rule that matches is the first of its group that does.
type rules [256][]rule

func byLastByte(list ...rule) *rules {
	var rs rules
	for _, r := range list {
		c := r.suffix[len(r.suffix)-1]
		rs[c] = append(rs[c], r)
	}
	return &rs
}

// apply tries the first rule whose suffix w ends with (and only that one,
// as Porter does), and reports whether it matched and its condition held.
func (w word) apply(rs *rules) (word, bool) {
	if len(w) == 0 {
		return w, false
	}
	for _, r := range rs[w[len(w)-1]] {
		if !w.hasSuffix(r.suffix) {
			continue
		}
		stem := w[:len(w)-len(r.suffix)]
		if r.cond != nil && !r.cond(stem) {
			return w, false
		}
		return append(stem, r.repl...), true
	}
	return w, false
}

func mGt0(w word) bool { return w.measure() > 0 }
func mGt1(w word) bool { return w.measure() > 1 }

// mGt1ST is the condition of step 4's "ion": m>1 and the stem ends in s or t.
func mGt1ST(w word) bool {
	c := w[len(w)-1]
	return (c == 's' || c == 't') && w.measure() > 1
}

// Suffix rules in the order they are tried. Within a step no suffix is a
// suffix of an earlier one unless it is meant to be shadowed by it.
var (
	step1bTidy = byLastByte(rule{"at", "ate", nil}, rule{"bl", "ble", nil}, rule{"iz", "ize", nil})

	step2 = byLastByte([]rule{
		{"ational", "ate", mGt0}, {"tional", "tion", mGt0},
		{"enci", "ence", mGt0}, {"anci", "ance", mGt0},
		{"izer", "ize", mGt0},
		{"logi", "log", mGt0},
		{"bli", "ble", mGt0}, {"alli", "al", mGt0}, {"entli", "ent", mGt0}, {"eli", "e", mGt0}, {"ousli", "ous", mGt0},
		{"ization", "ize", mGt0}, {"ation", "ate", mGt0}, {"ator", "ate", mGt0},
		{"alism", "al", mGt0}, {"iveness", "ive", mGt0}, {"fulness", "ful", mGt0}, {"ousness", "ous", mGt0},
		{"aliti", "al", mGt0}, {"iviti", "ive", mGt0}, {"biliti", "ble", mGt0},
	}...)

	step3 = byLastByte([]rule{
		{"ical", "ic", mGt0},
		{"ness", "", mGt0},
		{"icate", "ic", mGt0}, {"iciti", "ic", mGt0},
		{"ful", "", mGt0},
		{"ative", "", mGt0},
		{"alize", "al", mGt0},
	}...)

	step4 = byLastByte([]rule{
		{"al", "", mGt1},
		{"ance", "", mGt1}, {"ence", "", mGt1},
		{"er", "", mGt1},
		{"ic", "", mGt1},
		{"able", "", mGt1}, {"ible", "", mGt1},
		{"ant", "", mGt1}, {"ement", "", mGt1}, {"ment", "", mGt1}, {"ent", "", mGt1},
		{"ion", "", mGt1ST}, {"ou", "", mGt1},
		{"ism", "", mGt1},
		{"ate", "", mGt1}, {"iti", "", mGt1},
		{"ous", "", mGt1},
		{"ive", "", mGt1},
		{"ize", "", mGt1},
	}...)
)
