package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// unkPenalty is how much worse than the rarest piece an unknown character
// scores (SentencePiece's kUnkPenalty).
const unkPenalty = 10.0

// unigramModel segments a word into the vocabulary pieces whose summed log
// probabilities are highest (Viterbi), exactly as tokenizers' Unigram does,
// ties included.
type unigramModel struct {
	trie         pieceTrie
	scores       []float64 // by id
	unk          int32
	unkScore     float64
	byteFallback bool
	byteIDs      [256]int32 // <0xXX> pieces, -1 when absent
}

// newUnigramModel builds the model from tokenizer.json's vocabulary (id =
// position). A piece listed twice resolves to its last id, as in the
// reference's token map.
func newUnigramModel(vocab []unigramPiece, unk int32, byteFallback bool) (*unigramModel, error) {
	m := &unigramModel{scores: make([]float64, len(vocab)), unk: unk, byteFallback: byteFallback}
	minScore := math.Inf(1)
	ids := make(map[string]int32, len(vocab))
	for i, p := range vocab {
		m.scores[i] = p.score
		minScore = min(minScore, p.score)
		if p.piece != "" {
			ids[p.piece] = int32(i)
		}
	}
	m.unkScore = minScore - unkPenalty
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	m.trie = buildPieceTrie(ids)
	return m, nil
}

type unigramPiece struct {
	piece string
	score float64
}

// lattice is the Viterbi table of one word, reused across calls.
type lattice struct {
	nodes []latticeNode
	path  []int32 // piece ids of the best path, last piece first
	ends  []int32 // where each piece of path ends
}

// latticeNode is the best path ending at a byte offset.
type latticeNode struct {
	score float64
	start int32 // -1: no path ends here yet
	id    int32
}

var latticePool = sync.Pool{New: func() any { return new(lattice) }}

// appendIDs appends the ids of word's best segmentation.
func (m *unigramModel) appendIDs(ids []int32, word string) []int32 {
	if word == "" {
		return ids
	}
	lt := latticePool.Get().(*lattice)
	defer latticePool.Put(lt)
	n := len(word)
	lt.nodes = slices.Grow(lt.nodes[:0], n+1)[:n+1]
	nodes := lt.nodes
	nodes[0] = latticeNode{start: -1}
	for i := 1; i <= n; i++ {
		nodes[i] = latticeNode{start: -1}
	}
	for start := 0; start < n; {
		base := nodes[start].score
		_, charLen := utf8.DecodeRuneInString(word[start:])
		single := false
		m.trie.prefixes(word, start, func(end int, id int32) {
			cand := m.scores[id] + base
			if t := &nodes[end]; t.start < 0 || cand > t.score {
				*t = latticeNode{score: cand, start: int32(start), id: id}
			}
			if end-start == charLen {
				single = true
			}
		})
		if !single {
			cand := m.unkScore + base
			if t := &nodes[start+charLen]; t.start < 0 || cand > t.score {
				*t = latticeNode{score: cand, start: int32(start), id: m.unk}
			}
		}
		start += charLen
	}

	// Walk back from the end. Runs of unknown characters become one piece
	// (the reference's fuse_unk).
	lt.path, lt.ends = lt.path[:0], lt.ends[:0]
	for end := n; end > 0; {
		nd := nodes[end]
		if nd.id == m.unk && len(lt.path) > 0 && lt.path[len(lt.path)-1] == m.unk {
			// Extend the fused run leftwards: its end stays.
		} else {
			lt.path = append(lt.path, nd.id)
			lt.ends = append(lt.ends, int32(end))
		}
		end = int(nd.start)
	}
	for i := len(lt.path) - 1; i >= 0; i-- {
		id := lt.path[i]
		if id != m.unk {
			ids = append(ids, id)
			continue
		}
		start := 0
		if i+1 < len(lt.path) {
			start = int(lt.ends[i+1])
		}
		ids = m.appendUnknown(ids, word[start:lt.ends[i]])
	}
	return ids
}

// appendUnknown appends the id of a run of characters no piece covers: the
// run's own id if it happens to be a piece, its bytes as <0xXX> pieces when
// the model falls back to bytes, else the unknown id.
func (m *unigramModel) appendUnknown(ids []int32, s string) []int32 {
	if id, ok := m.trie.get(s); ok {
		return append(ids, id)
	}
	if m.byteFallback {
		ok := true
		for i := 0; i < len(s) && ok; i++ {
			ok = m.byteIDs[s[i]] >= 0
		}
		if ok {
			for i := 0; i < len(s); i++ {
				ids = append(ids, m.byteIDs[s[i]])
			}
			return ids
		}
	}
	return append(ids, m.unk)
}

// pieceTrie is a byte trie over the vocabulary laid out breadth first, so
// that a node's children are consecutive nodes and the whole trie is five
// flat slices: a few bytes per node instead of a map per node.
type pieceTrie struct {
	first []int32 // index of the node's first child
	count []uint16
	label []byte  // the byte on the edge into the node
	value []int32 // piece id ending at the node, -1 when none
	// root indexes the root's children by byte: every search starts there
	// and the root has the most children.
	root [256]int32
}

func buildPieceTrie(ids map[string]int32) pieceTrie {
	type entry struct {
		key string
		id  int32
	}
	entries := make([]entry, 0, len(ids))
	size := 1 // nodes: at most one per key byte, plus the root
	for k, id := range ids {
		entries = append(entries, entry{k, id})
		size += len(k)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	t := pieceTrie{
		first: make([]int32, 0, size),
		count: make([]uint16, 0, size),
		label: make([]byte, 0, size),
		value: make([]int32, 0, size),
	}
	t.add(0, -1)
	type span struct {
		node, lo, hi, depth int
	}
	// Breadth first, so that each node's children are appended together.
	queue := make([]span, 1, size)
	queue[0] = span{0, 0, len(entries), 0}
	for q := 0; q < len(queue); q++ {
		sp := queue[q]
		lo := sp.lo
		if lo < sp.hi && len(entries[lo].key) == sp.depth {
			t.value[sp.node] = entries[lo].id
			lo++
		}
		t.first[sp.node] = int32(len(t.label))
		for lo < sp.hi {
			b := entries[lo].key[sp.depth]
			hi := lo + 1
			for hi < sp.hi && entries[hi].key[sp.depth] == b {
				hi++
			}
			child := len(t.label)
			t.add(b, -1)
			t.count[sp.node]++
			queue = append(queue, span{child, lo, hi, sp.depth + 1})
			lo = hi
		}
	}
	for b := range t.root {
		t.root[b] = -1
	}
	for c := t.first[0]; c < t.first[0]+int32(t.count[0]); c++ {
		t.root[t.label[c]] = c
	}
	return t
}

func (t *pieceTrie) add(label byte, value int32) {
	t.first = append(t.first, 0)
	t.count = append(t.count, 0)
	t.label = append(t.label, label)
	t.value = append(t.value, value)
}

// child returns the child of node along byte b, or -1.
func (t *pieceTrie) child(node int32, b byte) int32 {
	lo, hi := int(t.first[node]), int(t.first[node])+int(t.count[node])
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch l := t.label[mid]; {
		case l == b:
			return int32(mid)
		case l < b:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// prefixes calls fn for every piece that starts s[start:], shortest first.
func (t *pieceTrie) prefixes(s string, start int, fn func(end int, id int32)) {
	if start >= len(s) {
		return
	}
	node := t.root[s[start]]
	for i := start; ; {
		if node < 0 {
			return
		}
		if id := t.value[node]; id >= 0 {
			fn(i+1, id)
		}
		if i++; i == len(s) {
			return
		}
		node = t.child(node, s[i])
	}
}

// get returns the id of piece s.
func (t *pieceTrie) get(s string) (int32, bool) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		if node = t.child(node, s[i]); node < 0 {
			return 0, false
		}
	}
	id := t.value[node]
	return id, id >= 0 && s != ""
}

// metaspace is tokenizers' Metaspace pre-tokenizer: spaces become the
// replacement character ("▁"), which is prepended to the word when the
// scheme asks for it, and the text is split before each run of them.
type metaspace struct {
	replacement string
	prepend     string // "always", "first" or "never"
	split       bool
}

// words calls fn for each piece of s. atStart tells whether s begins at the
// start of the input ("first" prepends only there).
func (p metaspace) words(s string, atStart bool, fn func(word string, atStart bool) bool) bool {
	s = strings.ReplaceAll(s, " ", p.replacement)
	if (p.prepend == "always" || (p.prepend == "first" && atStart)) && !strings.HasPrefix(s, p.replacement) {
		s = p.replacement + s
	}
	if !p.split {
		return s == "" || fn(s, atStart)
	}
	// The reference splits with MergedWithNext: a run of replacements opens
	// a new piece that runs up to the next run.
	start := 0
	prevMatch := false
	for i := 0; i < len(s); {
		match := strings.HasPrefix(s[i:], p.replacement)
		if match && !prevMatch && i > start {
			if !fn(s[start:i], atStart && start == 0) {
				return false
			}
			start = i
		}
		prevMatch = match
		if match {
			i += len(p.replacement)
		} else {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
	if start < len(s) {
		return fn(s[start:], atStart && start == 0)
	}
	return true
}
