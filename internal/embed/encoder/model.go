// Package encoder runs BERT-family sentence encoders (all-MiniLM-L6-v2,
// bge-small-en-v1.5, E5 and others of the same architecture) in process, in
// pure Go. It loads a model directory in the Hugging Face layout: config.json,
// model.safetensors, tokenizer.json and the sentence-transformers files that
// say how token vectors are pooled and whether they are normalized.
//
// Texts longer than the model's window are embedded in overlapping windows
// whose vectors are combined, never silently cut.
//
// A batch is run packed: the windows' tokens are laid one after another
// without padding, every step but attention works on all of them as one
// matrix (kernel.MatMulT uses all cores), and attention runs per window and
// head in parallel. Results therefore do not depend on what else is in the
// batch. Correctness is checked against sentence-transformers' PyTorch
// models (testdata/README.md).
package encoder

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/encoder/tokenizer"
)

// WindowMode says how the windows of a long text become one vector.
type WindowMode int

const (
	// WindowsAverage averages the window vectors, weighted by their token
	// counts, then normalizes the result (when the model normalizes).
	WindowsAverage WindowMode = iota
	// WindowsFirst embeds the first window only: the text is truncated, as
	// sentence-transformers does.
	WindowsFirst
)

// Options tune a loaded model. The zero value gives the model's own settings.
type Options struct {
	// Name is the model name Info reports; default: the directory's name.
	Name string
	// Prefixes overrides the query and document prefixes; nil picks them from
	// config_sentence_transformers.json or the model family (E5, BGE).
	Prefixes *Prefixes
	// MaxTokens is the window length in tokens, special tokens included;
	// default and upper bound: the model's max_seq_length, itself at most
	// max_position_embeddings.
	MaxTokens int
	// Overlap is how many tokens consecutive windows share; 0 means an
	// eighth of the window, a negative value none.
	Overlap int
	// Windows says how windows are combined.
	Windows WindowMode
	// BatchTokens bounds the tokens run through the model at once, which
	// bounds memory (15 KiB per token for MiniLM, twice that for base-sized
	// models) and how long a cancellation can wait; default 2048.
	BatchTokens int
}

// Model is a loaded encoder. It implements recall.Embedder and is safe for
// concurrent use.
type Model struct {
	info      recall.EmbedderInfo
	net       *bert
	tok       tokenizer.Tokenizer
	pool      pooling
	lowercase bool
	prefixes  Prefixes
	// prefixTokens holds each kind's prefix as tokens, without special
	// tokens, to repeat at the start of every window.
	prefixTokens [2][]int32
	overlap      int
	windows      WindowMode
	batch        int
	free         chan *workspace // idle workspaces, kept for the next Embed
}

var _ recall.Embedder = (*Model)(nil)

// Load reads the model in dir.
func Load(dir string, opts Options) (*Model, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	stc, err := readSTConfig(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.LoadTokenizer(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	st, err := openSafetensors(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	net, err := loadBERT(st, cfg)
	if err != nil {
		return nil, err
	}

	window := cfg.MaxPositionEmbeddings
	if stc.maxSeqLen > 0 {
		window = min(window, stc.maxSeqLen)
	}
	head, tail := tok.Specials()
	if opts.MaxTokens > 0 {
		window = min(window, opts.MaxTokens)
	}
	if window <= head+tail {
		return nil, recall.Errorf(recall.EINVALID, "a window of %d tokens leaves no room for text", window)
	}
	room := window - head - tail
	overlap := opts.Overlap
	switch {
	case overlap == 0:
		overlap = room / 8
	case overlap < 0:
		overlap = 0
	}
	if overlap >= room {
		return nil, recall.Errorf(recall.EINVALID, "window overlap %d must be less than the %d text tokens of a window", overlap, room)
	}

	name := opts.Name
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	prefixes := defaultPrefixes([]string{filepath.Base(filepath.Clean(dir)), opts.Name, cfg.NameOrPath}, stc.prompts)
	if opts.Prefixes != nil {
		prefixes = *opts.Prefixes
	}
	batch := opts.BatchTokens
	if batch <= 0 {
		batch = 2048
	}
	m := &Model{
		info: recall.EmbedderInfo{
			Provider:   "builtin",
			Model:      name,
			Dim:        cfg.HiddenSize,
			MaxTokens:  window,
			Normalized: stc.normalize,
		},
		net:       net,
		tok:       tok,
		pool:      stc.pooling,
		lowercase: stc.lowercase,
		prefixes:  prefixes,
		overlap:   overlap,
		windows:   opts.Windows,
		batch:     batch,
		free:      make(chan *workspace, 2),
	}
	for _, kind := range []recall.InputKind{recall.InputQuery, recall.InputDocument} {
		// Without its trailing space: SentencePiece tokenizers turn a final
		// space into a token of its own that the prefixed text lacks.
		if p := strings.TrimRight(m.prefixFor(kind), " "); p != "" {
			enc := tok.Encode(m.prepare(p), 0)
			m.prefixTokens[kind] = enc.IDs[head : enc.Len()-tail]
		}
	}
	return m, nil
}

// Info implements recall.Embedder.
func (m *Model) Info() recall.EmbedderInfo { return m.info }

// Prefixes returns the query and document prefixes the model applies.
func (m *Model) Prefixes() Prefixes { return m.prefixes }

// Embed implements recall.Embedder: one vector per text, of Info().Dim
// values. It checks ctx between batches.
func (m *Model) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	perText, err := m.EmbedWindows(ctx, kind, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, wins := range perText {
		out[i] = m.combine(wins)
	}
	return out, nil
}

// Window is the vector of one window of a text.
type Window struct {
	Vec    []float32
	Tokens int // text tokens in the window: special tokens and the prefix excluded
}

// EmbedWindows embeds each text's windows separately: one window for a text
// that fits the model, several for a longer one (only the first with
// WindowsFirst). Each vector is normalized when the model normalizes. This
// lets a caller score windows on their own, e.g. by the best-matching one.
func (m *Model) EmbedWindows(ctx context.Context, kind recall.InputKind, texts []string) ([][]Window, error) {
	if kind != recall.InputQuery && kind != recall.InputDocument {
		return nil, recall.Errorf(recall.EINVALID, "unknown input kind %d", kind)
	}
	type job struct {
		text, window int
		seq          sequence
	}
	var jobs []job
	out := make([][]Window, len(texts))
	for i, text := range texts {
		for j, w := range m.split(kind, text) {
			jobs = append(jobs, job{text: i, window: j, seq: w.seq})
			out[i] = append(out[i], Window{Tokens: w.tokens})
		}
	}
	// Windows of similar length run together; long ones first, so the last
	// batch is the cheap one.
	slices.SortStableFunc(jobs, func(a, b job) int { return len(b.seq.ids) - len(a.seq.ids) })

	ws := m.getWorkspace()
	defer m.putWorkspace(ws)
	dim := m.info.Dim
	seqs := make([]sequence, 0, len(jobs))
	for start := 0; start < len(jobs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seqs = seqs[:0]
		end, tokens := start, 0
		for end < len(jobs) && (end == start || tokens+len(jobs[end].seq.ids) <= m.batch) {
			tokens += len(jobs[end].seq.ids)
			seqs = append(seqs, jobs[end].seq)
			end++
		}
		if err := m.net.checkIDs(seqs); err != nil {
			return nil, err
		}
		vecs := make([]float32, len(seqs)*dim)
		m.net.forward(ws, seqs, m.pool, vecs)
		for i, j := range jobs[start:end] {
			v := vecs[i*dim : (i+1)*dim : (i+1)*dim]
			if m.info.Normalized {
				normalize(v)
			}
			out[j.text][j.window].Vec = v
		}
		start = end
	}
	return out, nil
}

func (m *Model) getWorkspace() *workspace {
	select {
	case ws := <-m.free:
		return ws
	default:
		return new(workspace)
	}
}

func (m *Model) putWorkspace(ws *workspace) {
	select {
	case m.free <- ws:
	default: // enough are kept; let this one go
	}
}

type window struct {
	seq    sequence
	tokens int
}

// split tokenizes prefix+text and cuts it into windows of at most MaxTokens
// tokens, each wrapped in the special tokens and sharing overlap tokens with
// the previous one. Every window starts with the prefix, since the model
// expects it on all it embeds; the first window is exactly what a truncating
// reference would embed.
func (m *Model) split(kind recall.InputKind, text string) []window {
	text = m.prepare(m.prefixFor(kind) + text)
	size := m.info.MaxTokens
	head, tail := m.tok.Specials()
	maxLen := 0 // the whole text, to cut into windows
	if m.windows == WindowsFirst {
		maxLen = size
	}
	enc := m.tok.Encode(text, maxLen)
	content := enc.Len() - head - tail
	p := len(m.prefixTokens[kind])
	if p > content || !slices.Equal(enc.IDs[head:head+p], m.prefixTokens[kind]) {
		p = 0 // the prefix merged with the text's first word: repeat nothing
	}
	if enc.Len() <= size {
		return []window{{seq: sequence{enc.IDs, enc.TypeIDs}, tokens: content - p}}
	}
	room := size - head - tail - p
	if room < 1 {
		p, room = 0, size-head-tail
	}
	overlap := m.overlap
	if overlap >= room {
		overlap = room / 8
	}
	var out []window
	for start := p; ; start += room - overlap {
		end := min(start+room, content)
		n := head + p + (end - start) + tail
		ids, types := make([]int32, 0, n), make([]int32, 0, n)
		for _, r := range [][2]int{{0, head + p}, {head + start, head + end}, {enc.Len() - tail, enc.Len()}} {
			ids = append(ids, enc.IDs[r[0]:r[1]]...)
			types = append(types, enc.TypeIDs[r[0]:r[1]]...)
		}
		out = append(out, window{seq: sequence{ids, types}, tokens: end - start})
		if end == content {
			return out
		}
	}
}

// prepare applies the model's own lowercasing, when it has one.
func (m *Model) prepare(text string) string {
	if m.lowercase {
		// sentence-transformers lowercases with Python's str.lower; Go's
		// simple case mapping differs from it only on a handful of letters.
		return strings.ToLower(text)
	}
	return text
}

func (m *Model) prefixFor(kind recall.InputKind) string {
	if kind == recall.InputQuery {
		return m.prefixes.Query
	}
	return m.prefixes.Document
}

// combine turns a text's window vectors into one.
func (m *Model) combine(wins []Window) []float32 {
	if len(wins) == 1 {
		return wins[0].Vec
	}
	out := make([]float32, m.info.Dim)
	total := 0
	for _, w := range wins {
		total += w.Tokens
	}
	for _, w := range wins {
		weight := float32(w.Tokens) / float32(max(total, 1))
		for i, v := range w.Vec {
			out[i] += weight * v
		}
	}
	if m.info.Normalized {
		normalize(out)
	}
	return out
}

// normalize scales v to unit length; a zero vector stays zero.
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}

// String describes the model for logs.
func (m *Model) String() string {
	return fmt.Sprintf("builtin %s (dim %d, window %d)", m.info.Model, m.info.Dim, m.info.MaxTokens)
}
