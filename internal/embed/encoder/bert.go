package encoder

import (
	"fmt"
	"github.com/recall-mcp/recall/internal/par"
	"math"
	"runtime"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/encoder/kernel"
)

// bert holds a BERT encoder's weights, all float32, in nn.Linear's
// out_features×in_features layout, which is what kernel.MatMulT takes.
type bert struct {
	hidden, heads, inter int
	vocab, types, maxPos int
	eps                  float32

	word, pos, typ []float32 // vocab×hidden, maxPos×hidden, types×hidden
	embG, embB     []float32
	layers         []bertLayer
}

type bertLayer struct {
	// Query, key and value are fused into one 3·hidden×hidden product: one
	// large MatMulT uses the cores better than three smaller ones.
	qkvW, qkvB     []float32
	outW, outB     []float32
	ln1G, ln1B     []float32
	interW, interB []float32 // inter×hidden
	ffnW, ffnB     []float32 // hidden×inter
	ln2G, ln2B     []float32
}

// loadBERT reads the weights named as transformers' BertModel names them,
// with or without the "bert." prefix of BertFor* checkpoints.
func loadBERT(st *safetensors, c bertConfig) (*bert, error) {
	m := &bert{
		hidden: c.HiddenSize, heads: c.NumAttentionHeads, inter: c.IntermediateSize,
		vocab: c.VocabSize, types: c.TypeVocabSize, maxPos: c.MaxPositionEmbeddings,
		eps: float32(c.LayerNormEps),
	}
	prefix := ""
	if _, ok := st.tensors["embeddings.word_embeddings.weight"]; !ok {
		if _, ok := st.tensors["bert.embeddings.word_embeddings.weight"]; ok {
			prefix = "bert."
		}
	}
	var err error
	get := func(name string, shape ...int) []float32 {
		if err != nil {
			return nil
		}
		var t []float32
		t, err = st.float32s(prefix+name, shape...)
		return t
	}
	// Checkpoints converted from TensorFlow name LayerNorm parameters gamma
	// and beta instead of weight and bias.
	layerNorm := func(name string) (g, b []float32) {
		if _, ok := st.tensors[prefix+name+".gamma"]; ok {
			return get(name+".gamma", m.hidden), get(name+".beta", m.hidden)
		}
		return get(name+".weight", m.hidden), get(name+".bias", m.hidden)
	}
	h, in := m.hidden, m.inter
	m.word = get("embeddings.word_embeddings.weight", m.vocab, h)
	m.pos = get("embeddings.position_embeddings.weight", m.maxPos, h)
	m.typ = get("embeddings.token_type_embeddings.weight", m.types, h)
	m.embG, m.embB = layerNorm("embeddings.LayerNorm")
	for i := 0; i < c.NumHiddenLayers && err == nil; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		var l bertLayer
		l.qkvW = concat(get(p+"attention.self.query.weight", h, h), get(p+"attention.self.key.weight", h, h), get(p+"attention.self.value.weight", h, h))
		l.qkvB = concat(get(p+"attention.self.query.bias", h), get(p+"attention.self.key.bias", h), get(p+"attention.self.value.bias", h))
		if err == nil {
			// Scaling queries by 1/sqrt(head size) here spares scaling every
			// attention score at run time.
			scale := float32(1 / math.Sqrt(float64(h/m.heads)))
			kernel.Scale(l.qkvW[:h*h], scale)
			kernel.Scale(l.qkvB[:h], scale)
		}
		l.outW, l.outB = get(p+"attention.output.dense.weight", h, h), get(p+"attention.output.dense.bias", h)
		l.ln1G, l.ln1B = layerNorm(p + "attention.output.LayerNorm")
		l.interW, l.interB = get(p+"intermediate.dense.weight", in, h), get(p+"intermediate.dense.bias", in)
		l.ffnW, l.ffnB = get(p+"output.dense.weight", h, in), get(p+"output.dense.bias", h)
		l.ln2G, l.ln2B = layerNorm(p + "output.LayerNorm")
		m.layers = append(m.layers, l)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func concat(parts ...[]float32) []float32 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]float32, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// sequence is one window of token ids to run through the model.
type sequence struct {
	ids, typeIDs []int32
}

// workspace holds every activation buffer of a forward pass, so that
// embedding a batch allocates nothing once the buffers have grown to size.
// A Model keeps a few for reuse rather than a sync.Pool: the buffers are
// tens of megabytes, so garbage collections come often enough to empty a
// pool between two batches.
type workspace struct {
	x, qkv, ctx, tmp, inter []float32
	offs                    []int
	scores                  [][]float32 // attention probabilities, one buffer per worker
}

func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// checkIDs makes sure the tokenizer and the weights agree before any ids are
// used as indexes.
func (m *bert) checkIDs(seqs []sequence) error {
	for _, s := range seqs {
		if len(s.ids) > m.maxPos {
			return recall.Errorf(recall.EINTERNAL, "a window of %d tokens exceeds the model's %d positions", len(s.ids), m.maxPos)
		}
		for i, id := range s.ids {
			if id < 0 || int(id) >= m.vocab || s.typeIDs[i] < 0 || int(s.typeIDs[i]) >= m.types {
				return recall.Errorf(recall.EINVALID, "token id %d (type %d) is outside the model's vocabulary of %d: tokenizer.json does not match the weights", id, s.typeIDs[i], m.vocab)
			}
		}
	}
	return nil
}

// forward runs the sequences through the encoder and writes each one's
// pooled hidden state to out (len(seqs)×hidden).
//
// The sequences are packed one after another without padding: every step
// but attention works row by row, and attention runs per sequence, so
// padding would only cost work. This is also why results cannot depend on
// what else is in the batch.
func (m *bert) forward(ws *workspace, seqs []sequence, pool pooling, out []float32) {
	h, in := m.hidden, m.inter
	ws.offs = ws.offs[:0]
	rows := 0
	for _, s := range seqs {
		ws.offs = append(ws.offs, rows)
		rows += len(s.ids)
	}
	ws.offs = append(ws.offs, rows)
	x := grow(ws.x, rows*h)
	qkv := grow(ws.qkv, rows*3*h)
	// The last layer of a CLS model works on one row per sequence, which is
	// more rows than tokens when sequences are empty.
	ctx := grow(ws.ctx, max(rows, len(seqs))*h)
	tmp := grow(ws.tmp, max(rows, len(seqs))*h)
	inter := grow(ws.inter, max(rows, len(seqs))*in)
	ws.x, ws.qkv, ws.ctx, ws.tmp, ws.inter = x, qkv, ctx, tmp, inter

	m.embed(x, seqs, ws.offs)
	for i := range m.layers {
		l := &m.layers[i]
		kernel.MatMulT(qkv, x, l.qkvW, l.qkvB, rows, h, 3*h)
		if pool == poolCLS && i == len(m.layers)-1 {
			m.lastLayerCLS(ws, l, seqs, out)
			return
		}
		m.attention(ws, qkv, ctx, ws.offs, false)
		m.finishLayer(l, x, ctx, tmp, inter, rows)
	}

	for b := range seqs {
		dst := out[b*h : (b+1)*h]
		start, end := ws.offs[b], ws.offs[b+1]
		clear(dst)
		if end == start {
			continue // a tokenizer without special tokens on empty text: a zero vector, not NaN
		}
		for r := start; r < end; r++ {
			kernel.Add(dst, x[r*h:(r+1)*h])
		}
		kernel.Scale(dst, 1/float32(end-start))
	}
}

// finishLayer runs what follows attention in a layer on rows of x, given
// the attention output in ctx: output projection, residual and LayerNorm,
// then the GELU feed-forward, residual and LayerNorm.
func (m *bert) finishLayer(l *bertLayer, x, ctx, tmp, inter []float32, rows int) {
	h, in := m.hidden, m.inter
	kernel.MatMulT(tmp, ctx, l.outW, l.outB, rows, h, h)
	addLayerNorm(x, tmp, l.ln1G, l.ln1B, rows, h, m.eps)
	kernel.MatMulT(inter, x, l.interW, l.interB, rows, h, in)
	inter = inter[:rows*in]
	parallelChunks(len(inter), 1<<14, func(lo, hi int) { kernel.GELU(inter[lo:hi]) })
	kernel.MatMulT(tmp, inter, l.ffnW, l.ffnB, rows, in, h)
	addLayerNorm(x, tmp, l.ln2G, l.ln2B, rows, h, m.eps)
}

// lastLayerCLS runs the last layer for CLS pooling, which reads only each
// sequence's first row: attention from that row alone (over all keys), and
// the rest of the layer on those rows only. It writes the pooled vectors.
func (m *bert) lastLayerCLS(ws *workspace, l *bertLayer, seqs []sequence, out []float32) {
	h := m.hidden
	nseq := len(seqs)
	m.attention(ws, ws.qkv, ws.ctx, ws.offs, true)
	cls := out[:nseq*h]
	for b := range seqs {
		if start := ws.offs[b]; ws.offs[b+1] > start {
			copy(cls[b*h:(b+1)*h], ws.x[start*h:(start+1)*h])
		}
	}
	m.finishLayer(l, cls, ws.ctx, ws.tmp, ws.inter, nseq)
	for b, s := range seqs {
		if len(s.ids) == 0 {
			clear(cls[b*h : (b+1)*h]) // a zero vector, not NaN, as for mean pooling
		}
	}
}

// embed writes word + position + token type embeddings, layer-normalized.
func (m *bert) embed(x []float32, seqs []sequence, offs []int) {
	h := m.hidden
	parallelFor(len(seqs), func(_, b int) {
		s := seqs[b]
		for p, id := range s.ids {
			row := x[(offs[b]+p)*h : (offs[b]+p+1)*h]
			copy(row, m.word[int(id)*h:])
			kernel.Add(row, m.pos[p*h:])
			kernel.Add(row, m.typ[int(s.typeIDs[p])*h:])
		}
		kernel.LayerNorm(x[offs[b]*h:offs[b+1]*h], m.embG, m.embB, len(s.ids), h, m.eps)
	})
}

// addLayerNorm computes x = LayerNorm(x + y) row by row, in parallel.
func addLayerNorm(x, y, gamma, beta []float32, rows, cols int, eps float32) {
	parallelChunks(rows, max(1, 4096/cols), func(lo, hi int) {
		xs, ys := x[lo*cols:hi*cols], y[lo*cols:hi*cols]
		kernel.Add(xs, ys)
		kernel.LayerNorm(xs, gamma, beta, hi-lo, cols, eps)
	})
}

// attention computes multi-head self-attention of each sequence over itself,
// reading each head's queries, keys and values in place from the fused rows
// and writing its output in place into ctx, where the heads sit side by side.
// Units of work are (sequence, head) pairs; the query weights were scaled by
// 1/sqrt(head size) at load, so the scores need no scaling here. With
// clsOnly, only each sequence's first row attends, and its output goes to row
// b of ctx for sequence b.
func (m *bert) attention(ws *workspace, qkv, ctx []float32, offs []int, clsOnly bool) {
	h, heads := m.hidden, m.heads
	d := h / heads
	nseq := len(offs) - 1
	maxLen := 0
	for b := 0; b < nseq; b++ {
		maxLen = max(maxLen, offs[b+1]-offs[b])
	}
	w := workers()
	for len(ws.scores) < w {
		ws.scores = append(ws.scores, nil)
	}
	for i := range ws.scores[:w] {
		ws.scores[i] = grow(ws.scores[i], maxLen*maxLen)
	}
	parallelFor(nseq*heads, func(worker, u int) {
		b, col := u/heads, (u%heads)*d
		start, n := offs[b], offs[b+1]-offs[b]
		if n == 0 {
			return
		}
		queries, dst := n, ctx[start*h+col:]
		if clsOnly {
			queries, dst = 1, ctx[b*h+col:]
		}
		rows := qkv[start*3*h:]
		scores := ws.scores[worker][:queries*n]
		kernel.MatMulTStrided(scores, rows[col:], rows[h+col:], nil, queries, d, n, 3*h, 3*h, n)
		kernel.SoftmaxRows(scores, queries, n)
		kernel.MatMulStrided(dst, scores, rows[2*h+col:], nil, queries, n, d, n, 3*h, h)
	})
}

// workers is how many goroutines a forward pass uses.
func workers() int { return runtime.GOMAXPROCS(0) }

// parallelFor calls f(worker, i) for i in [0, count), spread over the
// workers; worker identifies the goroutine so that f can use its own
// scratch buffers.
func parallelFor(count int, f func(worker, i int)) { par.For(workers(), count, f) }

// parallelChunks splits [0, n) into chunks of at least minChunk and calls
// f(lo, hi) for each, in parallel.
func parallelChunks(n, minChunk int, f func(lo, hi int)) {
	w := workers()
	chunk := max(minChunk, (n+4*w-1)/(4*w))
	count := (n + chunk - 1) / chunk
	parallelFor(count, func(_, i int) {
		f(i*chunk, min(n, (i+1)*chunk))
	})
}
