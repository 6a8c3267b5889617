package embed

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
)

// DefaultOllamaURL is where a local Ollama listens.
const DefaultOllamaURL = "http://127.0.0.1:11434"

// OllamaConfig configures an Ollama embedder.
type OllamaConfig struct {
	BaseURL string // "" means DefaultOllamaURL
	Model   string // required: bge-m3, nomic-embed-text, qwen3-embedding, ...
	// APIKey is sent as a bearer token, for Ollama behind an authenticating
	// proxy; a local Ollama needs none.
	APIKey string
	// Dim is the expected vector dimension; 0 learns it from the first answer.
	Dim int
	// Prefixes overrides the query and document prefixes; nil means
	// KnownPrefixes(Model).
	Prefixes   *Prefixes
	HTTPClient *http.Client // nil means a client of this package's own
	Limits
}

// Ollama embeds through Ollama's /api/embed, or, on an Ollama older than
// 0.3 (which answers /api/embed with a bare 404), its /api/embeddings.
type Ollama struct{ engine }

var _ recall.Embedder = (*Ollama)(nil)

// Ollama runs one model at a time on local hardware: a few requests in flight
// keep it busy, and a cold model can take a minute to load on CPU.
var ollamaDefaults = Limits{
	MaxBatch:      32,
	MaxInputChars: 16384,
	MaxBatchChars: 256 << 10,
	Concurrency:   2,
	Timeout:       2 * time.Minute,
}

// NewOllama returns an Ollama embedder. It makes no request: a missing model
// or server shows on the first Embed.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultOllamaURL
	}
	prefixes := KnownPrefixes(cfg.Model)
	if cfg.Prefixes != nil {
		prefixes = *cfg.Prefixes
	}
	base = strings.TrimRight(base, "/")
	o := &Ollama{}
	err := o.init(engineConfig{
		provider: "ollama",
		model:    cfg.Model,
		endpoint: base + "/api/embed",
		older:    &route{endpoint: base + "/api/embeddings", wire: ollamaLegacyWire{model: cfg.Model, dim: cfg.Dim}, single: true},
		secret:   cfg.APIKey,
		dim:      cfg.Dim,
		client:   cfg.HTTPClient,
		limits:   cfg.Limits,
		defaults: ollamaDefaults,
		prefixes: prefixes,
		wire:     ollamaWire{model: cfg.Model, dim: cfg.Dim},
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

type ollamaWire struct {
	model string
	dim   int // requested vector size (RECALL_DIMENSIONS); 0: the model's own
}

type ollamaRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
	// Truncate lets Ollama cut input to the model's window rather than fail
	// the batch; MaxInputChars only approximates the window in characters.
	Truncate bool `json:"truncate"`
	// Dimensions asks a Matryoshka model (qwen3-embedding,
	// nomic-embed-text) for shorter vectors, truncated and normalised by
	// Ollama 0.12 and later; older ones ignore it, and the client cuts
	// them as those do (truncateTo).
	Dimensions int `json:"dimensions,omitempty"`
}

func (w ollamaWire) body(_ recall.InputKind, texts []string) any {
	return ollamaRequest{Model: w.model, Input: texts, Truncate: true, Dimensions: w.dim}
}

func (w ollamaWire) decode(body []byte, _ int) ([][]float32, error) {
	var r struct {
		Embeddings []vector `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if r.Embeddings == nil {
		return nil, errors.New(`no "embeddings" field`)
	}
	return truncateTo(floats(r.Embeddings), w.dim), nil
}

// truncateTo cuts vectors longer than dim (> 0) to their first dim
// components, as Ollama does for "dimensions" since 0.12 (PR 12242, after
// sentence-transformers' truncate_dim; the engine normalises them after):
// an Ollama older than that, or its /api/embeddings, ignores the
// parameter and sends the model's full vectors. Shorter ones are left for
// the size check to refuse.
func truncateTo(vecs [][]float32, dim int) [][]float32 {
	if dim <= 0 {
		return vecs
	}
	for i, v := range vecs {
		if len(v) > dim {
			vecs[i] = v[:dim]
		}
	}
	return vecs
}

// ollamaLegacyWire is Ollama's /api/embeddings, the only embedding
// endpoint before 0.3: one text per request, in "prompt", and one vector
// back, in "embedding". It has no dimensions parameter (the client cuts
// the vectors: truncateTo) and truncates input to the model's window by
// itself.
type ollamaLegacyWire struct {
	model string
	dim   int
}

type ollamaLegacyRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
}

func (w ollamaLegacyWire) body(_ recall.InputKind, texts []string) any {
	return ollamaLegacyRequest{Model: w.model, Prompt: texts[0]}
}

func (w ollamaLegacyWire) decode(body []byte, _ int) ([][]float32, error) {
	var r struct {
		Embedding vector `json:"embedding"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if r.Embedding == nil {
		return nil, errors.New(`no "embedding" field`)
	}
	return truncateTo([][]float32{r.Embedding}, w.dim), nil
}
