// Package chunk splits one conversation into passages for search.
//
// Whole messages are packed into chunks up to a size limit; a message is cut
// only when it alone is longer than a chunk, and then at the cleanest place
// that fits: a blank line, a sentence end, a line break, a space, a
// character that does not split a word, and only as a last resort between
// two grapheme clusters inside a word. Each chunk after the first repeats a
// short tail of the previous one, starting at a line or sentence start, so a
// passage cut in two can still be found from either side. Every chunk is a
// verbatim substring of the conversation text.
package chunk

import (
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

const (
	// DefaultSize is the chunk size, in characters, when Options.Size is 0.
	DefaultSize = 2000
	// MinSize is the smallest chunk size accepted: below it a chunk holds
	// too little of a message to be worth a search hit.
	MinSize = 100
	// NoOverlap as Options.Overlap turns overlap off (0 means the default).
	NoOverlap = -1
)

// separator joins the messages of a conversation: a blank line, so that a
// conversation reads as it does in the files it is parsed from.
const separator = "\n\n"

// Options sets the chunk size. Sizes count characters (Unicode code points),
// not bytes, so CJK text gets chunks of the same reading length as English.
type Options struct {
	// Size is the most characters a chunk may hold, overlap included.
	// 0 means DefaultSize.
	Size int
	// Overlap is the most characters a chunk repeats from the end of the
	// previous one (counting the whitespace between them), at most Size/2.
	// 0 means Size/10 (200 for the default size); NoOverlap turns it off.
	Overlap int
}

func (o Options) withDefaults() Options {
	if o.Size == 0 {
		o.Size = DefaultSize
	}
	switch {
	case o.Overlap == 0:
		o.Overlap = o.Size / 10
	case o.Overlap == NoOverlap:
		o.Overlap = 0
	}
	return o
}

// Validate reports, with code EINVALID, options that Split would refuse.
func (o Options) Validate() error {
	n := o.withDefaults()
	switch {
	case n.Size < MinSize:
		return recall.Errorf(recall.EINVALID, "chunk size %d is too small: it must be at least %d characters", o.Size, MinSize)
	case o.Overlap < NoOverlap:
		return recall.Errorf(recall.EINVALID, "chunk overlap %d is negative: use 0 for the default or %d for none", o.Overlap, NoOverlap)
	case n.Overlap > n.Size/2:
		// More would store every passage three times or more, and let a
		// chunk add only a few characters to what the one before it holds.
		return recall.Errorf(recall.EINVALID, "chunk overlap %d is too large: it may be at most half the chunk size %d", n.Overlap, n.Size)
	}
	return nil
}

// Span is where a chunk lies in the text of its conversation (see Join):
// the byte offsets of its first byte and just past its last. Consecutive
// spans overlap when the later chunk repeats the tail of the earlier one.
type Span struct {
	Start, End int
}

// Join returns the text of a conversation as Split sees it: the messages
// separated by blank lines. Invalid UTF-8 is replaced by U+FFFD so that
// every chunk is valid text; valid input is kept byte for byte.
func Join(messages []string) string {
	return strings.Join(sanitize(messages), separator)
}

// Split cuts the messages of one conversation into chunks. messages are the
// conversation's blocks in order (speaker turns such as "**User:** hello",
// or paragraphs of an unmarked file). Each chunk's Text is the substring of
// Join(messages) at the span SplitSpans reports, without whitespace at
// either end; chunks are indexed 0..n-1, carry their Hash and MidWord, and
// leave Header to the caller. Whitespace-only input gives no chunks.
//
// Split panics if opt does not pass Validate: options come from
// configuration, which is validated once when it is loaded.
func Split(messages []string, opt Options) []recall.Chunk {
	s := newSplitter(messages, opt)
	spans := s.run()
	if len(spans) == 0 {
		return nil
	}
	chunks := make([]recall.Chunk, len(spans))
	for i, sp := range spans {
		text := s.text[sp.Start:sp.End]
		chunks[i] = recall.Chunk{
			Index:   i,
			Text:    text,
			Hash:    recall.TextHash(text),
			MidWord: midWordAt(s.text, sp.Start),
		}
	}
	return chunks
}

// Empty reports whether Split makes no chunk of messages (they hold only
// white space), without splitting them: a remote sweep names an export's
// sources before it chunks them.
func Empty(messages []string) bool { return len(newSplitter(messages, Options{}).msgs) == 0 }

// SplitSpans returns the spans of the chunks Split makes, as byte offsets
// into Join(messages).
func SplitSpans(messages []string, opt Options) []Span {
	return newSplitter(messages, opt).run()
}

// sanitize returns messages with invalid UTF-8 replaced, copying the slice
// only when something needs replacing.
func sanitize(messages []string) []string {
	out := messages
	for i, m := range messages {
		if utf8.ValidString(m) {
			continue
		}
		if len(out) > 0 && &out[0] == &messages[0] {
			out = append([]string(nil), messages...)
		}
		out[i] = strings.ToValidUTF8(m, "\uFFFD")
	}
	return out
}

// pos is a place in the text: its byte offset and its offset in characters.
type pos struct{ b, r int }

// message is the part of one message that is not surrounding whitespace.
type message struct{ start, end pos }

type splitter struct {
	text    string
	size    int
	overlap int
	msgs    []message
	cur     int   // index of the first message that ends after the current chunk's new text
	cands   []pos // scratch for overlap starts at lines and sentences
	words   []pos // scratch for overlap starts at words
}

func newSplitter(messages []string, opt Options) *splitter {
	if err := opt.Validate(); err != nil {
		panic("chunk: " + err.Error())
	}
	opt = opt.withDefaults()
	messages = sanitize(messages)
	s := &splitter{
		text:    strings.Join(messages, separator),
		size:    opt.Size,
		overlap: opt.Overlap,
		msgs:    make([]message, 0, len(messages)),
	}
	at := pos{}
	for i, m := range messages {
		if i > 0 {
			at = pos{at.b + len(separator), at.r + len(separator)}
		}
		end := at.b + len(m)
		start := s.skipSpace(at, end)
		if start.b < end {
			stop := s.trimSpace(start, end)
			s.msgs = append(s.msgs, message{start: start, end: stop})
			at = stop
		}
		at = s.forwardTo(at, end)
	}
	return s
}

// run returns the spans of all chunks.
func (s *splitter) run() []Span {
	if len(s.msgs) == 0 {
		return nil
	}
	spans := make([]Span, 0, 1+len(s.text)/s.size)
	var prevStart, prevEnd pos
	next := s.msgs[0].start
	for {
		start := next
		endB, best := s.fill(next, next)
		if len(spans) > 0 {
			start, endB = s.withOverlap(s.overlapStarts(prevStart, prevEnd, next), next, start, endB, best)
		}
		end := s.forwardTo(next, endB)
		spans = append(spans, Span{Start: start.b, End: end.b})
		prevStart, prevEnd = start, end
		next = s.skipSpace(end, len(s.text))
		if next.b >= len(s.text) {
			return spans
		}
	}
}

// withOverlap picks the longest of the overlap starts cands (longest
// first) that does not force a worse end than no overlap would: context is
// worth less than a clean boundary. The end gets worse as the overlap grows,
// so after trying the longest it searches for the point where it turns.
// start, end and best describe the chunk without overlap.
func (s *splitter) withOverlap(cands []pos, p, start pos, end int, best level) (pos, int) {
	if len(cands) == 0 {
		return start, end
	}
	if e, l := s.fill(cands[0], p); l >= best {
		return cands[0], e
	}
	lo, hi := 1, len(cands)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e, l := s.fill(cands[m], p); l >= best {
			start, end = cands[m], e
			hi = m
		} else {
			lo = m + 1
		}
	}
	return start, end
}

// fill returns where (the byte offset) a chunk that starts at start, with
// new text from p on, ends, and how clean that end is. Whole messages are
// packed while they fit; a message is cut only when it is longer than a
// chunk: the one at p when what is left of it does not fit, or the one
// after the messages packed (see below).
func (s *splitter) fill(start, p pos) (int, level) {
	limit := start.r + s.size
	if p.r >= limit {
		return p.b, levelNone
	}
	for s.msgs[s.cur].end.b <= p.b {
		s.cur++
	}
	i := s.cur
	if s.msgs[i].end.r > limit {
		return s.cut(p, limit, s.msgs[i].end)
	}
	end := s.msgs[i].end.b
	for i++; i < len(s.msgs) && s.msgs[i].end.r <= limit; i++ {
		end = s.msgs[i].end.b
	}
	// A message longer than a chunk is cut wherever it starts. Started in
	// the room the messages before it leave, rather than in a chunk of its
	// own, it does not leave them a chunk by themselves: a question before
	// a long answer stays with the answer's first part, where a search
	// finds both. Only where the room is worth it and the cut is as clean
	// as a sentence end; otherwise the chunk ends between messages. The
	// end counts as one between messages: it is as clean as that message
	// allows, and an overlap (withOverlap) must not buy its context by
	// cutting a message that fits in a chunk.
	if i < len(s.msgs) {
		if m := s.msgs[i]; m.end.r-m.start.r > s.size && limit-m.start.r >= s.size/4 {
			if e, l := s.cut(m.start, limit, m.end); l >= levelSentence {
				return e, levelMessage
			}
		}
	}
	return end, levelMessage
}

// overlapStarts returns where the next chunk may start within the tail of
// the previous one [prevStart, prevEnd), longest tail first, for a chunk
// whose new text begins at p. A tail is at most s.overlap characters up to
// p (so a long run of whitespace between chunks leaves no room for one) and
// never the whole previous chunk. Tails start at a line or sentence start;
// only when there is none do they start at a word.
func (s *splitter) overlapStarts(prevStart, prevEnd, p pos) []pos {
	if s.overlap == 0 {
		return nil
	}
	t := s.text
	w := behind(t, p.b, s.overlap, nextRune(t, prevStart.b))
	if w >= prevEnd.b {
		return nil
	}
	r := p.r - runeCount(t[w:p.b])
	good, words := s.cands[:0], s.words[:0]
	for b := w; b < prevEnd.b; b++ {
		c := t[b]
		if !utf8.RuneStart(c) {
			continue
		}
		r++
		// Starts follow whitespace or a sentence end: skip the rest cheaply.
		if x := t[b-1]; x < utf8.RuneSelf && !asciiSpace[x] && x != '.' || c < utf8.RuneSelf && asciiSpace[c] {
			continue
		}
		switch startKind(t, b) {
		case levelLine, levelSentence:
			if pairBreaks(t, b) {
				good = append(good, pos{b, r - 1})
			}
		case levelWord:
			if len(good) == 0 && pairBreaks(t, b) {
				words = append(words, pos{b, r - 1})
			}
		}
	}
	s.cands, s.words = good, words
	if len(good) > 0 {
		return good
	}
	return words
}

// skipSpace returns the first place at or after p, before end, where
// non-space text starts. If that text begins with a mark that combines with
// the space before it, the space is kept so no grapheme cluster is split.
func (s *splitter) skipSpace(p pos, end int) pos {
	t := s.text
	q := p
	for q.b < end {
		r, n := rune(t[q.b]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(t[q.b:])
		}
		if !isSpace(r) {
			break
		}
		q.b += n
		q.r++
	}
	if q.b > p.b && q.b < end && !pairBreaks(t, q.b) {
		q.b = backRune(t, q.b)
		q.r--
	}
	return q
}

// trimSpace returns the end of the non-space text that starts at start and
// is followed only by whitespace up to end. If the last character joins the
// space after it into one grapheme cluster (a prepended mark), that space is
// kept.
func (s *splitter) trimSpace(start pos, end int) pos {
	t := s.text
	e := end
	for e > start.b {
		r, n := utf8.DecodeLastRuneInString(t[:e])
		if !isSpace(r) {
			break
		}
		e -= n
	}
	if e < end && !pairBreaks(t, e) {
		e = nextRune(t, e)
	}
	return s.forwardTo(start, e)
}

// forwardTo returns the position of byte offset b, at or after p.
func (s *splitter) forwardTo(p pos, b int) pos {
	return pos{b, p.r + runeCount(s.text[p.b:b])}
}

// runeCount is utf8.RuneCountInString for valid UTF-8, eight bytes at a
// time: every byte but a continuation byte (10xxxxxx) starts a character.
func runeCount(s string) int {
	n, i := len(s), 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		n -= bits.OnesCount64(x &^ (x << 1) & 0x8080808080808080)
	}
	for ; i < len(s); i++ {
		if s[i]&0xc0 == 0x80 {
			n--
		}
	}
	return n
}

// ahead returns the byte offset n characters after b, or end if that is
// sooner. Runs of ASCII are skipped eight bytes at a time.
func ahead(t string, b, n, end int) int {
	for n > 0 && b < end {
		if n >= 8 && b+8 <= end && (t[b]|t[b+1]|t[b+2]|t[b+3]|t[b+4]|t[b+5]|t[b+6]|t[b+7]) < utf8.RuneSelf {
			b += 8
			n -= 8
			continue
		}
		b = nextRune(t, b)
		n--
	}
	return b
}

// behind returns the byte offset n characters before b, or start if that
// is later (start must be the start of a character).
func behind(t string, b, n, start int) int {
	for n > 0 && b > start {
		if n >= 8 && b-8 >= start && (t[b-1]|t[b-2]|t[b-3]|t[b-4]|t[b-5]|t[b-6]|t[b-7]|t[b-8]) < utf8.RuneSelf {
			b -= 8
			n -= 8
			continue
		}
		b = backRune(t, b)
		n--
	}
	return max(b, start)
}

func nextRune(t string, b int) int {
	for b++; b < len(t) && !utf8.RuneStart(t[b]); b++ {
	}
	return b
}

func backRune(t string, b int) int {
	for b--; b > 0 && !utf8.RuneStart(t[b]); b-- {
	}
	return b
}
