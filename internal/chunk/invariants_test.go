package chunk

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/recall-mcp/recall"
)

// checkSplit runs Split and SplitSpans on messages and fails t unless every
// promise of the package holds. It returns the chunks for further checks.
func checkSplit(t testing.TB, messages []string, opt Options) []recall.Chunk {
	t.Helper()
	chunks := Split(messages, opt)
	spans := SplitSpans(messages, opt)
	text := Join(messages)
	o := opt.withDefaults()

	if len(chunks) != len(spans) {
		t.Fatalf("Split made %d chunks, SplitSpans %d spans", len(chunks), len(spans))
	}
	if strings.TrimFunc(text, isSpace) == "" {
		if len(chunks) != 0 {
			t.Fatalf("blank text gave %d chunks", len(chunks))
		}
		return chunks
	}
	if len(chunks) == 0 {
		t.Fatalf("text with content gave no chunks")
	}
	bounds := graphemeBounds(text)
	prev := Span{}
	for i, c := range chunks {
		sp := spans[i]
		if c.Index != i {
			t.Errorf("chunk %d has index %d", i, c.Index)
		}
		if sp.Start < 0 || sp.End > len(text) || sp.Start >= sp.End {
			t.Fatalf("chunk %d has span %v in text of %d bytes", i, sp, len(text))
		}
		if c.Text != text[sp.Start:sp.End] {
			t.Fatalf("chunk %d text %q is not the text at its span %v", i, c.Text, sp)
		}
		if c.Hash != recall.TextHash(c.Text) {
			t.Errorf("chunk %d hash is wrong", i)
		}
		if !utf8.ValidString(c.Text) {
			t.Errorf("chunk %d is not valid UTF-8: %q", i, c.Text)
		}
		if n := utf8.RuneCountInString(c.Text); n > o.Size {
			t.Errorf("chunk %d has %d characters, more than %d", i, n, o.Size)
		}
		if strings.TrimFunc(c.Text, isSpace) == "" {
			t.Errorf("chunk %d is blank: %q", i, c.Text)
		}
		for _, at := range []int{sp.Start, sp.End} {
			if n, inside := bounds.inside(at); inside && n <= o.Size {
				t.Errorf("chunk %d span %v cuts a grapheme cluster of %d characters at %d", i, sp, n, at)
			}
		}
		if c.MidWord != midWordAt(text, sp.Start) {
			t.Errorf("chunk %d MidWord = %v, want %v", i, c.MidWord, !c.MidWord)
		}

		// Coverage: only whitespace lies outside every chunk.
		if i == 0 {
			if gap := text[:sp.Start]; strings.TrimFunc(gap, isSpace) != "" {
				t.Errorf("text before chunk 0 is lost: %q", gap)
			}
		} else {
			if sp.End <= prev.End || sp.Start <= prev.Start {
				t.Errorf("chunk %d span %v adds nothing after %v", i, sp, prev)
			}
			if sp.Start >= prev.End {
				if gap := text[prev.End:sp.Start]; strings.TrimFunc(gap, isSpace) != "" {
					t.Errorf("text between chunks %d and %d is lost: %q", i-1, i, gap)
				}
			} else {
				tail := text[sp.Start:prev.End]
				if o.Overlap == 0 {
					t.Errorf("chunk %d overlaps the previous one with overlap off: %q", i, tail)
				}
				if n := utf8.RuneCountInString(tail); n > o.Overlap {
					t.Errorf("chunk %d repeats %d characters, more than %d", i, n, o.Overlap)
				}
				if startKind(text, sp.Start) < levelWord {
					t.Errorf("chunk %d overlap does not start at a word: %q", i, tail)
				}
			}
		}
		prev = sp
	}
	if rest := text[prev.End:]; strings.TrimFunc(rest, isSpace) != "" {
		t.Errorf("text after the last chunk is lost: %q", rest)
	}

	// A message that fits in a chunk is never cut. Spans ascend in both
	// start and end, so one pass over them serves all messages.
	at, k := 0, 0
	for _, m := range sanitize(messages) {
		body := strings.TrimFunc(m, isSpace)
		a := at + len(m) - len(strings.TrimLeftFunc(m, isSpace))
		b := a + len(body)
		at += len(m) + len(separator)
		if body == "" || utf8.RuneCountInString(body)+2 > o.Size {
			continue
		}
		for k < len(spans) && spans[k].End < b {
			k++
		}
		if k == len(spans) || spans[k].Start > a {
			t.Errorf("message %.80q fits in a chunk but was cut", body)
		}
	}
	return chunks
}

// clusters records the grapheme clusters of a text.
type clusters struct {
	start []int // byte offset of each cluster
	runes []int // characters in each cluster
	size  int   // bytes in the text
}

func graphemeBounds(text string) clusters {
	c := clusters{size: len(text)}
	g := uniseg.NewGraphemes(text)
	for g.Next() {
		from, _ := g.Positions()
		c.start = append(c.start, from)
		c.runes = append(c.runes, len(g.Runes()))
	}
	return c
}

// inside reports whether byte offset b falls inside a cluster rather than
// between two, and if so how many characters that cluster has.
func (c clusters) inside(b int) (int, bool) {
	if b <= 0 || b >= c.size {
		return 0, false
	}
	lo, hi := 0, len(c.start)
	for lo < hi {
		m := (lo + hi) / 2
		if c.start[m] <= b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if c.start[lo-1] == b {
		return 0, false
	}
	return c.runes[lo-1], true
}
