package server

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Stored text reaches a model through MCP, and a model reads whatever it is
// shown. Characters that are invisible or that change how text is displayed
// (terminal escape sequences, zero-width and bidi controls, Unicode tag
// characters used to smuggle hidden instructions) let an archived page pose
// as something other than quoted data. escapeText makes every such character
// visible as a literal escape such as `\u202e`, so what the model sees is
// exactly what a person reviewing the output would see.
//
// The escape is deliberately not reversible (a backslash in the source stays
// a single backslash): reversibility would mean doubling every backslash in
// code and paths, and exact bytes are available through the REST API, which
// returns stored text verbatim. Both the readable text and the structured
// output of MCP tools carry the escaped text, so no MCP consumer ever gets the
// raw form by accident.

// escapeBlock escapes text that may span lines: newlines and tabs stay.
func escapeBlock(s string) string { return escape(s, false) }

// escapeLine escapes a value shown on one line (titles, source names):
// line breaks are escaped too, so it cannot start a line of its own.
func escapeLine(s string) string { return escape(s, true) }

// EscapeBlock and EscapeLine are escapeBlock and escapeLine for other
// renderings of stored text, such as the command line's plain output.
func EscapeBlock(s string) string { return escapeBlock(s) }

// EscapeLine: see EscapeBlock.
func EscapeLine(s string) string { return escapeLine(s) }

func escape(s string, oneLine bool) string {
	if !needsEscape(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Invalid UTF-8 cannot be shown faithfully; name the byte.
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			continue
		}
		if hidden(r, oneLine) {
			writeEscape(&b, r)
		} else {
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, oneLine bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if hidden(rune(c), oneLine) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r, oneLine) {
			return true
		}
		i += size
	}
	return false
}

func writeEscape(b *strings.Builder, r rune) {
	if r > 0xFFFF {
		fmt.Fprintf(b, `\U%08x`, r)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}

// hidden reports whether r must be shown as an escape: control characters
// (C0 except newline and tab, DEL, C1, which includes NEL), format
// characters (Unicode category Cf: zero-width space and joiners, bidi
// embeddings, overrides and isolates, the Arabic letter mark, soft hyphen,
// byte order mark, tag characters), the line and paragraph separators, and
// the supplementary variation selectors, which render as nothing and are
// used to hide data in otherwise ordinary text.
func hidden(r rune, oneLine bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return oneLine
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f: // C1 controls
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	case r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// escapeJSONHidden rewrites the hidden characters (hidden) that encoding/json
// leaves raw in encoded JSON (DEL, C1 controls, format characters, variation
// selectors) as \u escapes, surrogate pairs beyond the BMP. JSON holds such
// characters only inside strings, where an escape decodes to the same
// character, so the value a client decodes is unchanged. encoding/json
// already escapes C0 controls and U+2028/U+2029 and replaces invalid UTF-8.
func escapeJSONHidden(b []byte) []byte {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf && c != 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != '\n' && hidden(r, false) {
			break
		}
		i += size
	}
	if i == len(b) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 32)
	out.Write(b[:i])
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == '\n' || !hidden(r, false):
			out.Write(b[i : i+size])
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
		i += size
	}
	return out.Bytes()
}
