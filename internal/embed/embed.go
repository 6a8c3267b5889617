// Package embed turns texts into vectors through external embedding services
// (Ollama, OpenAI-compatible servers, Cloudflare Workers AI), and holds the
// helpers every embedder shares: vector validation and normalisation, and a
// short-lived cache for query embeddings.
//
// Every provider returns unit-length vectors and says so in Info: the vector
// index ranks by dot product, which equals cosine similarity only for unit
// vectors, and some services (OpenAI-compatible servers in particular) do not
// promise normalised output. Normalising here costs one pass per vector and
// lets the index skip a division per comparison for the life of the data.
package embed

import (
	"context"
	"math"

	"github.com/recall-mcp/recall"
)

// Normalize scales v in place to unit Euclidean length. It reports false, and
// leaves v unchanged, when v cannot be normalised: empty, all zero, or holding
// NaN or ±Inf (including a norm that overflows).
func Normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		sum += f * f
	}
	if sum == 0 || math.IsInf(sum, 0) {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return true
}

// Validate checks what an embedder got back for n texts: exactly n vectors,
// each non-empty, finite and not all zero, and all of length dim (when dim is
// 0, all of the length of the first). A wrong dimension is ECONFLICT, since
// storing it would mix vector spaces; anything else is EUNAVAILABLE, since the
// embedder, not the caller, is at fault.
func Validate(vecs [][]float32, n, dim int) error {
	if len(vecs) != n {
		return recall.Errorf(recall.EUNAVAILABLE, "the embedder returned %d vectors for %d texts", len(vecs), n)
	}
	for i, v := range vecs {
		if len(v) == 0 {
			return recall.Errorf(recall.EUNAVAILABLE, "the embedder returned an empty vector for text %d", i)
		}
		if dim == 0 {
			dim = len(v)
		}
		if len(v) != dim {
			return recall.Errorf(recall.ECONFLICT, "the embedder returned a vector of dimension %d for text %d, expected %d", len(v), i, dim)
		}
		zero := true
		for _, x := range v {
			f := float64(x)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return recall.Errorf(recall.EUNAVAILABLE, "the embedder returned a vector holding NaN or Inf for text %d", i)
			}
			if x != 0 {
				zero = false
			}
		}
		if zero {
			return recall.Errorf(recall.EUNAVAILABLE, "the embedder returned an all-zero vector for text %d", i)
		}
	}
	return nil
}

// Prefixes are prepended to texts before embedding. Many retrieval models were
// trained with distinct markers for queries and documents and lose quality
// without them (nomic-embed-text's "search_query: " and "search_document: ").
type Prefixes struct {
	Query    string
	Document string
}

// For returns the prefix for the given kind of input.
func (p Prefixes) For(kind recall.InputKind) string {
	if kind == recall.InputQuery {
		return p.Query
	}
	return p.Document
}

// truncate cuts s to at most max characters (runes), never inside a UTF-8
// sequence; max <= 0 means no limit.
func truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

// ProbeText is a text every embedding model takes: it learns a model's
// vector size (Dim) and tells an outage from texts a model refuses (repair).
const ProbeText = "dimension probe"

// Dim returns the size of emb's vectors: its own word when it has one,
// else that of a vector it makes for ProbeText (a remote model says only
// by answering).
func Dim(ctx context.Context, emb recall.Embedder) (int, error) {
	if d := emb.Info().Dim; d != 0 {
		return d, nil
	}
	v, err := emb.Embed(ctx, recall.InputDocument, []string{ProbeText})
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, recall.Errorf(recall.EUNAVAILABLE, "the embedder returned %d vectors for one text", len(v))
	}
	return len(v[0]), nil
}
