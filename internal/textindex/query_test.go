package textindex

import (
	"strings"
	"testing"
)

// describe renders a query compactly for comparison: phrases as +[a b],
// terms as [a b], a prefix with a trailing *.
func describe(q Query) string {
	var parts []string
	unit := func(sign string, u Unit) string {
		s := sign + "[" + strings.Join(u.Tokens, " ") + "]"
		if u.Prefix {
			s += "*"
		}
		return s
	}
	for _, u := range q.Phrases {
		parts = append(parts, unit("+", u))
	}
	for _, u := range q.Terms {
		parts = append(parts, unit("", u))
	}
	return strings.Join(parts, " ")
}

func TestParseQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"mint tea", "[mint] [tea]"},
		{"When did Caroline go to the support group?", "[caroline] [go] [support] [group]"},
		{"what is it", "[what] [is] [it]"}, // only stopwords: keep them
		{`"the mint tea" recipe`, "+[the mint tea] [recipe]"},
		{`"the" of`, "+[the]"},
		{`the "mint`, "[mint]"}, // unpaired quote is ignored
		{`"a" "b" "c`, "+[a] +[b] [c]"},
		{"\u201Cmint tea\u201D", "+[mint tea]"},
		{"「薄荷茶」の作り方", "+[薄荷 荷茶] [の作 作り り方]"},
		{"『mint tea』 recipe", "+[mint tea] [recipe]"},
		{"e-mail", "[e mail]"},
		{"Tea tea TEA", "[tea]"},
		{"I'm won't don't", "[i m] [won t] [don t]"},
		{"I'm fine", "[fine]"},
		{"she won the prize", "[won] [prize]"},
		{"NEAR(a b) OR c* ^d -e f:g", "[near a] [b] [c] [e] [f g]"}, // "or" and "d" are stopwords
		{`') OR 1=1 --`, "[1 1]"},
		{"!!! ... ???", ""},
		{"", ""},
		{"   ", ""},
		{"薄荷茶", "[薄荷 荷茶]"},
		{"薄荷", "[薄荷]"},
		{"茶", "[茶]*"},
		{"茶 coffee", "[茶]* [coffee]"},
		{"茶x", "[茶 x]"},
		{"iPhone很好用", "[iphone 很好 好用]"},
		{`"喜欢 薄荷"`, "+[喜欢 欢 薄荷]"},
		{`"茶 tea"`, "+[茶 tea]"},
		{"ミント", "[ミン ント]"},
		{"한국어", "[한국어]"},
		{"ÄÖ", "[äö]"},
	}
	for _, tt := range tests {
		if got := describe(ParseQuery(tt.in)); got != tt.want {
			t.Errorf("ParseQuery(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestParseQueryKeepsLiterals(t *testing.T) {
	// No input character may reach a token except as part of a word: tokens
	// hold only letters, digits and CJK, so nothing in them is an operator.
	for _, in := range []string{`"`, `""`, `"""`, `NEAR(`, `*`, `^`, `-`, `:`, `(`, `)`, `a AND b`, `x OR y`, `NOT z`, `{a b}`, `a + b`} {
		q := ParseQuery(in)
		for _, u := range append(q.Phrases, q.Terms...) {
			for _, tok := range u.Tokens {
				for _, r := range tok {
					if !isTokenRune(r) {
						t.Errorf("ParseQuery(%q) gave token %q with %q", in, tok, r)
					}
				}
			}
		}
	}
}

func TestIsStopword(t *testing.T) {
	for _, w := range []string{"the", "and", "ll"} {
		if !IsStopword(w) {
			t.Errorf("IsStopword(%q) = false", w)
		}
	}
	for _, w := range []string{"tea", "won", "caroline"} {
		if IsStopword(w) {
			t.Errorf("IsStopword(%q) = true", w)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{`"mint tea" recipe`, `"`, `NEAR(a b)`, "茶", "iPhone很好用", `"喜欢 薄荷`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := ParseQuery(s)
		for _, u := range append(q.Phrases, q.Terms...) {
			if len(u.Tokens) == 0 {
				t.Fatalf("ParseQuery(%q): empty unit", s)
			}
			for _, tok := range u.Tokens {
				if tok == "" || strings.ContainsAny(tok, "\" *^():-") {
					t.Fatalf("ParseQuery(%q): token %q", s, tok)
				}
			}
		}
	})
}

func TestLongCJKRunsBecomeBigramTerms(t *testing.T) {
	q := ParseQuery("我上次在阳台上种的薄荷")
	if len(q.Phrases) != 0 || len(q.Terms) < 5 {
		t.Fatalf("a Chinese sentence should give bigram terms: %+v", q)
	}
	for _, u := range q.Terms {
		if len(u.Tokens) != 1 || len([]rune(u.Tokens[0])) != 2 {
			t.Fatalf("term %+v is not one bigram", u)
		}
	}
	// Short runs stay words: one required-adjacency unit each.
	for _, w := range []string{"薄荷", "薄荷茶", "搬家公司"} {
		q := ParseQuery(w)
		if len(q.Terms) != 1 {
			t.Fatalf("%s: %+v", w, q)
		}
	}
	// Quoted text is a phrase whatever its length.
	if q := ParseQuery(`"我上次在阳台上种的薄荷"`); len(q.Phrases) != 1 || len(q.Terms) != 0 {
		t.Fatalf("quoted sentence: %+v", q)
	}
}
