package embed

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// UnitChars bounds the passages a chunk is embedded as. A question is
// usually about one message, and one vector for a 2000-character chunk of
// ten messages blurs it; so each chunk gets one vector per unit — its
// paragraphs, consecutive short ones grouped up to UnitChars characters —
// and a chunk scores as its best unit. Measured on the development set
// (BENCHMARKS.md): semantic R@5 0.54 with one vector per chunk, 0.78 with
// units of 300 characters.
const UnitChars = 300

// Units splits a chunk's text into the passages embedded separately, each
// with the chunk's context header in front (see recall.EmbedInput).
func Units(header, text string) []string {
	var units []string
	var cur strings.Builder
	n := 0
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			units = append(units, recall.EmbedInput(header, s))
		}
		cur.Reset()
		n = 0
	}
	for _, part := range strings.Split(text, "\n\n") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		pn := utf8.RuneCountInString(part)
		if n > 0 && n+pn > UnitChars {
			flush()
		}
		if n > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(part)
		n += pn
	}
	flush()
	if len(units) == 0 {
		units = append(units, recall.EmbedInput(header, text))
	}
	return units
}

// ChunkText is a chunk's text and context header, to embed.
type ChunkText struct {
	Header, Text string
}

// EmbedChunks embeds chunks as documents: every unit of every chunk in one
// call to e (which batches as its provider needs), returning for each chunk
// its unit vectors concatenated: a recall.Vector's Vec. Every unit must
// have dim values (the space's dimension; 0 skips the check): a store
// cannot tell one 768-value vector from two 384-value units, so a model of
// the wrong size is caught here, never written. A chunk with a unit the
// embedder refused (*Refused: too long for the model) is refused whole,
// and the error is then a *Refused by chunk index, holding the other
// chunks' vectors.
func EmbedChunks(ctx context.Context, e recall.Embedder, dim int, chunks []ChunkText) ([][]float32, error) {
	var inputs []string
	counts := make([]int, len(chunks))
	for i, c := range chunks {
		us := Units(c.Header, c.Text)
		counts[i] = len(us)
		inputs = append(inputs, us...)
	}
	vecs, refused, err := Partial(e.Embed(ctx, recall.InputDocument, inputs))
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(inputs) {
		return nil, recall.Errorf(recall.EINTERNAL, "embedder returned %d vectors for %d texts", len(vecs), len(inputs))
	}
	for _, v := range vecs {
		if v != nil && dim > 0 && len(v) != dim {
			return nil, recall.Errorf(recall.ECONFLICT, "the embedder returned %d-dimensional vectors for a %d-dimensional space: use the space's model, or create a new space for this one", len(v), dim)
		}
	}
	out := make([][]float32, len(chunks))
	why := make([]*recall.Error, len(chunks))
	k := 0
	for i, n := range counts {
		for j := k; j < k+n && why[i] == nil; j++ {
			why[i] = refused[j] // a unit refused refuses its chunk
		}
		if why[i] != nil {
			k += n
			continue
		}
		dim := len(vecs[k])
		flat := make([]float32, 0, n*dim)
		for j := 0; j < n; j++ {
			if len(vecs[k+j]) != dim {
				return nil, recall.Errorf(recall.ECONFLICT, "embedder returned vectors of %d and %d dimensions", dim, len(vecs[k+j]))
			}
			flat = append(flat, vecs[k+j]...)
		}
		out[i] = flat
		k += n
	}
	return refusals(out, why)
}
