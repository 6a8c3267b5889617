package embed

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
)

// DefaultOpenAIURL is OpenAI's API.
const DefaultOpenAIURL = "https://api.openai.com"

// OpenAIConfig configures an embedder for the OpenAI embeddings API and the
// servers that copy it (llama.cpp server, vLLM, LM Studio,
// text-embeddings-inference).
type OpenAIConfig struct {
	// BaseURL is the server root; the request goes to {BaseURL}/v1/embeddings,
	// or to {BaseURL}/embeddings when BaseURL already ends in /v1, as many
	// tools write it. "" means DefaultOpenAIURL.
	BaseURL string
	Model   string // required: text-embedding-3-small, or whatever the server serves
	APIKey  string // sent as a bearer token when set; local servers often need none
	// Dim, when set, is sent as the dimensions parameter (models that can
	// shorten their vectors, such as text-embedding-3) and enforced. Leave it
	// 0 for servers that refuse the parameter: the dimension is then learned
	// from the first answer.
	Dim int
	// Prefixes overrides the query and document prefixes; nil means
	// KnownPrefixes(Model).
	Prefixes   *Prefixes
	HTTPClient *http.Client // nil means a client of this package's own
	Limits
}

// OpenAI embeds through an OpenAI-compatible POST /v1/embeddings.
type OpenAI struct{ engine }

var _ recall.Embedder = (*OpenAI)(nil)

// OpenAI refuses inputs over 8191 tokens instead of truncating them; 8000
// characters stay under that for any text that is not mostly emoji. The
// per-request cap is 2048 inputs and 300k tokens.
var openAIDefaults = Limits{
	MaxBatch:      128,
	MaxInputChars: 8000,
	MaxBatchChars: 250_000,
	Concurrency:   4,
	Timeout:       time.Minute,
}

// NewOpenAI returns an OpenAI-compatible embedder. It makes no request.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultOpenAIURL
	}
	endpoint := base + "/v1/embeddings"
	if strings.HasSuffix(base, "/v1") {
		endpoint = base + "/embeddings"
	}
	prefixes := KnownPrefixes(cfg.Model)
	if cfg.Prefixes != nil {
		prefixes = *cfg.Prefixes
	}
	o := &OpenAI{}
	err := o.init(engineConfig{
		provider: "openai",
		model:    cfg.Model,
		endpoint: endpoint,
		secret:   cfg.APIKey,
		dim:      cfg.Dim,
		client:   cfg.HTTPClient,
		limits:   cfg.Limits,
		defaults: openAIDefaults,
		prefixes: prefixes,
		wire:     openAIWire{model: cfg.Model, dim: cfg.Dim},
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

type openAIWire struct {
	model string
	dim   int
}

type openAIRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

func (w openAIWire) body(_ recall.InputKind, texts []string) any {
	return openAIRequest{Model: w.model, Input: texts, Dimensions: w.dim, EncodingFormat: "float"}
}

// decode orders the vectors by their index: the API does not promise to
// answer in input order. A server that sends no index at all is taken to
// answer in order.
func (openAIWire) decode(body []byte, n int) ([][]float32, error) {
	var r struct {
		Data []struct {
			Index     *int   `json:"index"`
			Embedding vector `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if r.Data == nil {
		return nil, errors.New(`no "data" field`)
	}
	out := make([][]float32, len(r.Data))
	if len(r.Data) != n || r.Data[0].Index == nil {
		for i, d := range r.Data {
			out[i] = d.Embedding
		}
		return out, nil
	}
	for _, d := range r.Data {
		if d.Index == nil || *d.Index < 0 || *d.Index >= n || out[*d.Index] != nil {
			return nil, recall.Errorf(recall.EUNAVAILABLE, "openai returned embeddings whose indexes are not 0..%d each once", n-1)
		}
		out[*d.Index] = d.Embedding // never nil, so repeats show
	}
	return out, nil
}
