package convo

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// textEncoding is how Parse reads text: as UTF-8, as Windows-1252, or not
// at all.
type textEncoding int

const (
	// encUTF8 is valid UTF-8, or UTF-8 with a few damaged bytes, which
	// are replaced by U+FFFD.
	encUTF8 textEncoding = iota
	// encWindows1252 is Western European text in Windows-1252 (or its
	// subset ISO 8859-1), as older Windows tools save it.
	encWindows1252
	// encUnknown is text in another legacy encoding (Windows-1251, GBK,
	// Shift-JIS ...), which cannot be told apart reliably.
	encUnknown
)

// sniffEncoding tells the encoding of text that may not be UTF-8. When
// cut, b is the head of a longer file and may end inside a character, which
// is then ignored.
//
// A character cut short (a lead byte and some of its continuation bytes) is
// damage, and counts for neither: ASCII text holding one is UTF-8. Text
// with valid multi-byte UTF-8 sequences at least as often as invalid
// bytes is UTF-8 with damage; so is text with any valid one whose invalid
// bytes each stand alone between ASCII ("Café" and three stray bytes stay
// "Café"): a Western code page almost never forms a valid sequence by
// chance, and the multi-byte encodings that do (GBK) put their invalid
// bytes beside other high bytes. Otherwise text whose non-ASCII bytes stand
// alone or in pairs between ASCII (the accented letters of Western
// European words: "caf\xe9", "Gr\xf6\xdfe") is Windows-1252, unless it holds
// a byte Windows-1252 leaves undefined. Anything else, in practice runs of
// high bytes (a Cyrillic word in Windows-1251, a Chinese phrase in GBK), is
// unknown: every single-byte code page decodes it without error, to
// mojibake no search would ever match, and a clear error that asks for a
// conversion is better than that.
func sniffEncoding(b []byte, cut bool) textEncoding {
	var multi, invalid, isolated, short, run int
	end := func() {
		if run > 0 && run <= 2 {
			short += run
		}
		run = 0
	}
	undefined := false
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			end()
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			end()
			multi++
			i += size
			continue
		}
		if cut && !utf8.FullRune(b[i:]) {
			break // a character cut off by the end of b
		}
		if n := cutShort(b[i:]); n > 0 {
			// A character that lost its last bytes (an emoji whose end was
			// cut) is UTF-8 damage, not evidence of a legacy encoding.
			end()
			i += n
			continue
		}
		invalid++
		if (i == 0 || b[i-1] < utf8.RuneSelf) && (i+1 == len(b) || b[i+1] < utf8.RuneSelf) {
			isolated++
		}
		run++
		switch c {
		case 0x81, 0x8D, 0x8F, 0x90, 0x9D:
			undefined = true
		}
		i++
	}
	end()
	switch {
	case invalid == 0 || multi >= invalid || multi > 0 && isolated == invalid:
		return encUTF8
	case !undefined && short*10 >= invalid*9:
		return encWindows1252
	}
	return encUnknown
}

// cutShort returns the length of the UTF-8 sequence b starts with when it
// is cut short: a lead byte and at least one continuation byte that could
// begin a character, then a byte that cannot go on with it (or the end);
// else 0. A lead byte alone proves nothing: Windows-1252 letters are such
// bytes ("caf\xe9").
func cutShort(b []byte) int {
	n := 1
	for n < len(b) && n < utf8.UTFMax && b[n]&0xC0 == 0x80 {
		n++
	}
	if n == 1 || utf8.FullRune(b[:n]) {
		return 0 // utf8.FullRune holds for an invalid sequence too
	}
	return n
}

// decodeWindows1252 decodes Windows-1252 text; every byte sniffEncoding
// accepts as such has a character.
func decodeWindows1252(b []byte) string {
	s, err := charmap.Windows1252.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(s)
}

// legacyError is the error for text in an encoding sniffEncoding cannot
// tell.
func legacyError(name string) error {
	return invalidf(name, "not UTF-8 text (a legacy encoding such as Windows-1251, GBK or Shift-JIS?): convert it to UTF-8 from the encoding it is in, e.g. iconv -f GBK -t UTF-8")
}
