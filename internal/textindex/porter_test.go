package textindex

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The expected stems are what SQLite's FTS5 porter tokenizer writes; the
// same words (and many more) are checked against the real tokenizer by
// TestTermsAgreeWithFTS5 in internal/store/sqlite.
func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		// Examples of Porter's paper, step by step.
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"}, {"cats", "cat"},
		{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"}, {"bled", "bled"},
		{"motoring", "motor"}, {"sing", "sing"},
		{"conflated", "conflat"}, {"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"},
		{"tanned", "tan"}, {"falling", "fall"}, {"hissing", "hiss"}, {"fizzed", "fizz"},
		{"failing", "fail"}, {"filing", "file"},
		{"happy", "happi"}, {"sky", "sky"},
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
		{"valenci", "valenc"}, {"hesitanci", "hesit"}, {"digitizer", "digit"},
		{"conformabli", "conform"}, {"radicalli", "radic"}, {"differentli", "differ"},
		{"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"},
		{"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"},
		{"decisiveness", "decis"}, {"hopefulness", "hope"}, {"callousness", "callous"},
		{"formaliti", "formal"}, {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"},
		{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"},
		{"electriciti", "electr"}, {"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
		{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"}, {"airliner", "airlin"},
		{"gyroscopic", "gyroscop"}, {"adjustable", "adjust"}, {"defensible", "defens"},
		{"irritant", "irrit"}, {"replacement", "replac"}, {"adjustment", "adjust"},
		{"dependent", "depend"}, {"adoption", "adopt"}, {"homologou", "homolog"},
		{"communism", "commun"}, {"activate", "activ"}, {"angulariti", "angular"},
		{"homologous", "homolog"}, {"effective", "effect"}, {"bowdlerize", "bowdler"},
		{"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"},
		{"controll", "control"}, {"roll", "roll"},
		{"generalizations", "gener"}, {"oscillators", "oscil"},
		// FTS5's departures from the paper.
		{"ies", "ie"},        // a suffix rule needs something before the suffix
		{"eed", "e"},         // "eed" is too short for its rule, so "ed" goes
		{"yying", "y"},       // "yy" is a double consonant to step 1b
		{"ational", "ation"}, // too short for its rule; "tional" leaves no measure, "al" goes
		// Too short, too long, or no letters it knows.
		{"is", "is"}, {"as", "as"}, {"a", "a"}, {"", ""},
		{"2024", "2024"}, {"mp3s", "mp3"},
		{"привет", "привет"}, {"薄荷", "薄荷"},
		{strings.Repeat("a", 61) + "ing", strings.Repeat("a", 61)},
		{strings.Repeat("a", 62) + "ing", strings.Repeat("a", 62) + "ing"},
	}
	for _, tt := range tests {
		if got := Stem(tt.in); got != tt.want {
			t.Errorf("Stem(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestStemBytes covers the byte-wise rules on non-ASCII text: a double
// consonant made of the two equal trailing bytes of a character loses one,
// leaving invalid UTF-8, as FTS5 stores it.
func TestStemBytes(t *testing.T) {
	c := string(rune(0xB28A)) // Hangul 늊: EB 8A 8A
	if got, want := Stem("a"+c+"ed"), "a\xeb\x8a"; got != want {
		t.Errorf("Stem(%q) = %q; want %q", "a"+c+"ed", got, want)
	}
	if got := Stem("ü" + "ing"); got != "üing" {
		t.Errorf("Stem(%q) = %q; non-ASCII letters are not vowels", "üing", got)
	}
}

func TestTerm(t *testing.T) {
	tests := []struct{ in, want string }{
		{"running", "run"},
		{"café", "cafe"},
		{"naïvely", "naiv"},
		{"résumés", "resum"},
		{"x\u0301y", "xy"},
		{"\u0301", ""},
		{"Running", "run"},
		{"σοφία", "σοφία"}, // unicode61 keeps Greek accents
		{"ø", "ø"},         // no diacritic to remove: a letter of its own
		{strings.Repeat("é", 32) + "ing", strings.Repeat("e", 32)},         // 35 bytes after folding: stemmed
		{strings.Repeat("é", 62) + "ing", strings.Repeat("e", 62) + "ing"}, // 65 bytes: not
		{strings.Repeat("b", 40000), strings.Repeat("b", maxTermLen)},
	}
	for _, tt := range tests {
		if got := Term(tt.in); got != tt.want {
			t.Errorf("Term(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestTerms(t *testing.T) {
	got := Terms("Generalizations about CAFÉS \u0301 and 薄荷茶")
	want := []string{"gener", "about", "cafe", "and", "薄荷", "荷茶", "茶"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Terms = %q; want %q", got, want)
	}
}

func FuzzStem(f *testing.F) {
	for _, s := range []string{"generalizations", "ies", "yying", "a\uB28Aed", "\xff\xfe", strings.Repeat("ing", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Stem(s)
		if len(s) < minStemLen || len(s) > maxStemLen {
			if got != s {
				t.Fatalf("Stem(%q) = %q; outside 3..64 bytes it must not change", s, got)
			}
			return
		}
		if got == "" || len(got) > len(s) {
			t.Fatalf("Stem(%q) = %q: empty or longer", s, got)
		}
		// Rules cut the token and write ASCII: every other byte stays
		// where it was.
		for i := range len(got) {
			if got[i] >= utf8.RuneSelf && got[i] != s[i] {
				t.Fatalf("Stem(%q) = %q: byte %d changed", s, got, i)
			}
		}
	})
}

func BenchmarkStem(b *testing.B) {
	words := strings.Fields("generalizations running agreed happy conditional caresses hopefulness the tea " +
		"replacement electrical motoring sky probate 薄荷 café")
	for i := 0; b.Loop(); i++ {
		Stem(words[i%len(words)])
	}
}
