// Package embedtest provides a deterministic embedder for the tests of other
// packages. It exists only for tests: its vectors know nothing of meaning,
// only of shared words, and it must never be wired into the product.
//
// A text's vector is built by feature hashing: each word (Unicode letters and
// digits, NFC-normalised and lower-cased) adds ±1 to one dimension chosen by
// its hash, with the sign taken from another bit of the hash, and the result
// is scaled to unit length. Texts that share words therefore point in similar
// directions, texts that share none are close to orthogonal, and the same
// text always gets the same vector, on every machine.
package embedtest

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/recall-mcp/recall"
)

// DefaultDim is the dimension New uses when given 0.
const DefaultDim = 64

// Fault is a failure an Embedder can be told to produce.
type Fault int

const (
	// FaultError makes the call return an EUNAVAILABLE error.
	FaultError Fault = iota + 1
	// FaultNaN makes the call return vectors whose first component is NaN.
	FaultNaN
	// FaultWrongDim makes the call return vectors one dimension too long.
	FaultWrongDim
)

// Embedder is a deterministic recall.Embedder for tests. It is safe for
// concurrent use and counts what it is asked.
type Embedder struct {
	dim int

	// Delay, when set before use, makes every call wait that long (or until
	// its context ends), for tests of timeouts and cancellation.
	Delay time.Duration

	mu      sync.Mutex
	calls   int
	texts   int
	queries int
	faults  map[int]Fault // by 1-based call number
	always  Fault
}

var _ recall.Embedder = (*Embedder)(nil)

// New returns an Embedder of the given dimension (0 means DefaultDim).
func New(dim int) *Embedder {
	if dim <= 0 {
		dim = DefaultDim
	}
	return &Embedder{dim: dim, faults: map[int]Fault{}}
}

// FailOn makes call number n (1-based, counting every call made so far and
// to come) produce fault f. n <= 0 makes every later call produce it; a zero
// Fault clears it.
func (e *Embedder) FailOn(n int, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n <= 0 {
		e.always = f
		return
	}
	if f == 0 {
		delete(e.faults, n)
		return
	}
	e.faults[n] = f
}

// Calls returns how many times Embed was called, failed calls included.
func (e *Embedder) Calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// Texts returns how many texts Embed was asked to embed, in all calls.
func (e *Embedder) Texts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.texts
}

// Queries returns how many of those texts were queries.
func (e *Embedder) Queries() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queries
}

// Info describes the embedder: provider "embedtest", unit vectors.
func (e *Embedder) Info() recall.EmbedderInfo {
	return recall.EmbedderInfo{Provider: "embedtest", Model: "word-hash", Dim: e.dim, Normalized: true}
}

// Embed returns Vector(text, dim) for each text, unless a fault was set for
// this call. Queries and documents get the same vectors.
func (e *Embedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	call := e.calls
	e.texts += len(texts)
	if kind == recall.InputQuery {
		e.queries += len(texts)
	}
	fault := e.always
	if f, ok := e.faults[call]; ok {
		fault = f
	}
	e.mu.Unlock()

	if e.Delay > 0 {
		t := time.NewTimer(e.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fault == FaultError {
		return nil, recall.Errorf(recall.EUNAVAILABLE, "embedtest: injected failure on call %d", call)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := Vector(t, e.dim)
		switch fault {
		case FaultNaN:
			v[0] = float32(math.NaN())
		case FaultWrongDim:
			v = append(v, 0)
		}
		out[i] = v
	}
	return out, nil
}

// Vector is the unit vector the Embedder gives text in dim dimensions. A
// text without words (empty, or only punctuation) still gets a fixed
// non-zero vector, as real embedders give one.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	words := Words(text)
	if len(words) == 0 {
		v[0] = 1
		return v
	}
	for _, w := range words {
		h := fnv.New64a()
		h.Write([]byte(w))
		sum := h.Sum64()
		i := int(sum % uint64(dim))
		if sum>>63 == 1 {
			v[i]--
		} else {
			v[i]++
		}
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		// Words whose signs cancelled out exactly: rare, but never zero.
		v[0] = 1
		return v
	}
	inv := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// Words splits text the way Vector sees it: runs of Unicode letters, marks
// and digits, NFC-normalised and lower-cased.
func Words(text string) []string {
	text = strings.ToLower(norm.NFC.String(text))
	return strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}
