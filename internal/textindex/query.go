package textindex

import (
	"slices"
	"strings"
)

// Unit is what a query looks for in one place: tokens that must appear next
// to each other, in this order. A plain word is one token; a quoted phrase, a
// word the tokenizer splits ("e-mail", "iPhone很好用") or a CJK run gives
// several.
type Unit struct {
	Tokens []string
	// Prefix makes the last token match every indexed token that begins with
	// it: a lone CJK character matches the bigrams it starts and the unigram
	// that ends a run.
	Prefix bool
	// Stopword marks a unit made only of stopwords ("the", "don't").
	Stopword bool
}

// MaxQueryUnits is how many distinct words (units) of a query a full-text
// index searches: past a few dozen words a query is a pasted text, and each
// word costs ranking time on every candidate.
const MaxQueryUnits = 64

// Query is a user's query as the index understands it. Everything in it is a
// literal: no character of the input is an operator except the double quotes
// that delimit phrases.
type Query struct {
	// Phrases are the parts of the query between double quotes: each one is
	// required.
	Phrases []Unit
	// Terms are the other words. Any of them may match; stopwords have been
	// dropped unless the query has nothing but stopwords.
	Terms []Unit
}

// Empty reports whether the query has nothing to look for (it was empty or
// only punctuation).
func (q Query) Empty() bool { return len(q.Phrases) == 0 && len(q.Terms) == 0 }

// ParseQuery reads a user query. Text between a pair of double quotes
// (straight or curly) is a phrase; an unpaired quote is ignored. Every other
// word is a term. Duplicate terms are dropped, since repeating a word in a
// query should not count it twice.
func ParseQuery(s string) Query {
	s = Fold(s)
	var q Query
	var terms []Unit
	parts := splitQuotes(s)
	for i, part := range parts {
		if i%2 == 1 {
			if u, ok := unitOf(part); ok {
				q.Phrases = append(q.Phrases, u)
			}
			continue
		}
		for _, field := range strings.Fields(part) {
			for _, w := range splitSentences(field) {
				u, ok := unitOf(w)
				if !ok {
					continue
				}
				u.Stopword = isStopUnit(w, u)
				if !slices.ContainsFunc(terms, u.equal) {
					terms = append(terms, u)
				}
			}
		}
	}
	allStop := len(q.Phrases) == 0
	for _, u := range terms {
		allStop = allStop && u.Stopword
	}
	for _, u := range terms {
		if allStop || !u.Stopword {
			q.Terms = append(q.Terms, u)
		}
	}
	return q
}

func (u Unit) equal(v Unit) bool {
	return u.Prefix == v.Prefix && slices.Equal(u.Tokens, v.Tokens)
}

// splitQuotes splits s at quotes (IsQuote) into outside, inside, outside, ...
// parts. A quote without a partner is dropped, so what follows it is read as
// ordinary words.
func splitQuotes(s string) []string {
	var parts []string
	var cur strings.Builder
	quotes := 0
	for _, r := range s {
		if IsQuote(r) {
			quotes++
		}
	}
	paired := quotes - quotes%2
	seen := 0
	for _, r := range s {
		if IsQuote(r) {
			seen++
			if seen <= paired {
				parts = append(parts, cur.String())
				cur.Reset()
				continue
			}
			r = ' '
		}
		cur.WriteRune(r)
	}
	return append(parts, cur.String())
}

// IsQuote reports whether r opens or closes a quoted phrase in a query:
// the ASCII double quote, the typographic ones smart-quote keyboards and
// Chinese input methods type (“ ” „), and the Japanese corner brackets
// (「」『』).
func IsQuote(r rune) bool {
	switch r {
	case '"', '\u201C', '\u201D', '\u201E', '「', '」', '『', '』':
		return true
	}
	return false
}

// QuotedPhrases returns the quoted phrases of a query, as ParseQuery reads
// them (a quote without a partner is dropped), trimmed, empty ones left out.
func QuotedPhrases(s string) []string {
	var out []string
	parts := splitQuotes(s)
	for i := 1; i < len(parts); i += 2 {
		if p := strings.TrimSpace(parts[i]); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// unitOf tokenizes one word or phrase. Each CJK run gives its bigrams; a run
// that other tokens follow also gives its last character, as the index holds
// it there; a lone CJK character at the end becomes a prefix.
func unitOf(s string) (Unit, bool) {
	type piece struct {
		text string
		cjk  bool
	}
	var pieces []piece
	var run []rune
	flushRun := func() {
		if len(run) > 0 {
			pieces = append(pieces, piece{string(run), true})
			run = run[:0]
		}
	}
	start := -1
	flushWord := func(end int) {
		if start >= 0 {
			pieces = append(pieces, piece{s[start:end], false})
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case IsCJK(r):
			flushWord(i)
			run = append(run, r)
		case isTokenRune(r):
			flushRun()
			if start < 0 {
				start = i
			}
		default:
			flushWord(i)
			flushRun()
		}
	}
	flushWord(len(s))
	flushRun()

	var u Unit
	for i, p := range pieces {
		if !p.cjk {
			u.Tokens = append(u.Tokens, p.text)
			continue
		}
		rs := []rune(p.text)
		last := i == len(pieces)-1
		if len(rs) == 1 {
			u.Tokens = append(u.Tokens, p.text)
			u.Prefix = last
			continue
		}
		for j := 0; j+1 < len(rs); j++ {
			u.Tokens = append(u.Tokens, string(rs[j:j+2]))
		}
		if !last {
			u.Tokens = append(u.Tokens, string(rs[len(rs)-1]))
		}
	}
	return u, len(u.Tokens) > 0
}

// isStopUnit reports whether a word is a stopword as a whole ("won't") or
// consists only of stopword tokens ("i'm" → "i", "m").
func isStopUnit(word string, u Unit) bool {
	w := strings.TrimFunc(word, func(r rune) bool { return !isTokenRune(r) })
	if stopwords[strings.ReplaceAll(w, "\u2019", "'")] {
		return true
	}
	if u.Prefix {
		return false
	}
	for _, t := range u.Tokens {
		if !stopwords[t] {
			return false
		}
	}
	return true
}

// IsStopword reports whether a folded token is on the English stopword list.
func IsStopword(tok string) bool { return stopwords[tok] }

// maxCJKWord is the longest unquoted CJK run read as one word (a required
// phrase of its bigrams). Chinese and Japanese put no spaces between words,
// so a longer run is a sentence or a clause: requiring it verbatim would
// match almost nothing, so it is read as its overlapping bigrams instead,
// each an ordinary term that BM25 ranks by.
const maxCJKWord = 4

// splitSentences splits the CJK runs of a query word longer than
// maxCJKWord into their overlapping two-character pieces; everything else
// stays as it is.
func splitSentences(w string) []string {
	rs := []rune(w)
	long := false
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && IsCJK(rs[j]) {
			j++
		}
		if j-i > maxCJKWord {
			long = true
			break
		}
		i = j + 1
	}
	if !long {
		return []string{w}
	}
	var out []string
	for i := 0; i < len(rs); {
		if !IsCJK(rs[i]) {
			j := i
			for j < len(rs) && !IsCJK(rs[j]) {
				j++
			}
			out = append(out, string(rs[i:j]))
			i = j
			continue
		}
		j := i
		for j < len(rs) && IsCJK(rs[j]) {
			j++
		}
		if j-i <= maxCJKWord {
			out = append(out, string(rs[i:j]))
		} else {
			for k := i; k+1 < j; k++ {
				out = append(out, string(rs[k:k+2]))
			}
		}
		i = j
	}
	return out
}
