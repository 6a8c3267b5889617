package tokenizer

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/recall-mcp/recall"
)

// charsmap is SentencePiece's precompiled normalization map (tokenizers'
// Precompiled normalizer): a darts-clone double-array trie from UTF-8 keys to
// offsets in a pool of NUL-terminated replacement strings.
//
// Blob layout: a little-endian uint32 with the trie's size in bytes, the trie
// as little-endian uint32 units, then the string pool.
type charsmap struct {
	units []uint32
	pool  string
	// ascii caches the rule of each single-byte key (ok=false: none), since
	// most text is ASCII and each byte would otherwise walk the trie.
	ascii [128]struct {
		rep string
		ok  bool
	}
}

func parseCharsmap(blob []byte) (*charsmap, error) {
	if len(blob) < 4 {
		return nil, recall.Errorf(recall.EINVALID, "precompiled_charsmap is %d bytes, too short for its header", len(blob))
	}
	size := binary.LittleEndian.Uint32(blob)
	if size%4 != 0 || uint64(size) > uint64(len(blob)-4) {
		return nil, recall.Errorf(recall.EINVALID, "precompiled_charsmap trie size %d does not fit its %d bytes", size, len(blob))
	}
	c := &charsmap{units: make([]uint32, size/4)}
	for i := range c.units {
		c.units[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	pool := blob[4+size:]
	if !utf8.Valid(pool) {
		return nil, recall.Errorf(recall.EINVALID, "precompiled_charsmap replacement strings are not valid UTF-8")
	}
	c.pool = string(pool)
	for b := 1; b < 128; b++ {
		c.ascii[b].rep, c.ascii[b].ok = c.lookup(string(rune(b)))
	}
	return c, nil
}

// Double-array unit fields, as darts-clone packs them.
func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xff) }
func unitHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func unitValue(u uint32) uint32  { return u & (1<<31 - 1) }

// lookup returns the replacement of the shortest key that is a prefix of s.
// Shortest, not longest: tokenizers takes the first common-prefix result,
// and matching it is the point.
func (c *charsmap) lookup(s string) (string, bool) {
	units := c.units
	if len(units) == 0 {
		return "", false
	}
	pos := unitOffset(units[0])
	for i := 0; i < len(s); i++ {
		b := uint32(s[i])
		if b == 0 {
			return "", false
		}
		pos ^= b
		if pos >= uint32(len(units)) {
			return "", false
		}
		u := units[pos]
		if unitLabel(u) != b {
			return "", false
		}
		pos ^= unitOffset(u)
		if unitHasLeaf(u) {
			if pos >= uint32(len(units)) {
				return "", false
			}
			return c.replacement(unitValue(units[pos]))
		}
	}
	return "", false
}

func (c *charsmap) replacement(off uint32) (string, bool) {
	if int(off) > len(c.pool) {
		return "", false
	}
	rest := c.pool[off:]
	if i := strings.IndexByte(rest, 0); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// normalize applies the map the way tokenizers' Precompiled does: each
// extended grapheme cluster shorter than 6 bytes is looked up whole (and,
// when a rule matches a prefix of it, the whole cluster is replaced); other
// clusters, and clusters with no rule, are looked up one character at a time.
func (c *charsmap) normalize(s string) string {
	var b strings.Builder
	changed := false
	start := 0 // s[start:i] is unchanged input not yet written
	state := -1
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf && (i+1 == len(s) || (s[i+1] < utf8.RuneSelf && !(s[i] == '\r' && s[i+1] == '\n'))) {
			// A lone ASCII character followed by ASCII is a cluster of its
			// own (CR LF aside), so the segmenter can be skipped.
			if r := c.ascii[s[i]]; r.ok {
				if !changed {
					b.Grow(len(s) + 8)
					changed = true
				}
				b.WriteString(s[start:i])
				b.WriteString(r.rep)
				start = i + 1
			}
			i++
			state = -1
			continue
		}
		g, _, _, next := uniseg.FirstGraphemeClusterInString(s[i:], state)
		state = next
		end := i + len(g)
		if len(g) < 6 {
			if rep, ok := c.lookup(g); ok {
				if !changed {
					b.Grow(len(s) + 8)
					changed = true
				}
				b.WriteString(s[start:i])
				b.WriteString(rep)
				start, i = end, end
				continue
			}
		}
		for j := i; j < end; {
			_, n := utf8.DecodeRuneInString(s[j:])
			if rep, ok := c.lookup(s[j : j+n]); ok {
				if !changed {
					b.Grow(len(s) + 8)
					changed = true
				}
				b.WriteString(s[start:j])
				b.WriteString(rep)
				start = j + n
			}
			j += n
		}
		i = end
	}
	if !changed {
		return s
	}
	b.WriteString(s[start:])
	return b.String()
}
