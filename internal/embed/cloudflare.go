package embed

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
)

// DefaultCloudflareURL is the root of Cloudflare's REST API.
const DefaultCloudflareURL = "https://api.cloudflare.com/client/v4"

// CloudflareConfig configures a Workers AI embedder.
type CloudflareConfig struct {
	AccountID string // required
	APIToken  string // required: a token allowed to run Workers AI
	Model     string // required: @cf/baai/bge-m3, @cf/qwen/qwen3-embedding-0.6b, ...
	// BaseURL is the API root ("" means DefaultCloudflareURL), or an AI
	// Gateway's Workers AI endpoint, whose path ends in /workers-ai
	// (https://gateway.ai.cloudflare.com/v1/{account}/{gateway}/workers-ai).
	BaseURL string
	// Dim is the expected vector dimension; 0 learns it from the first answer.
	Dim int
	// Prefixes overrides the query and document prefixes. nil means
	// KnownPrefixes(Model), except for models that take queries and
	// documents in separate fields and mark them themselves.
	Prefixes   *Prefixes
	HTTPClient *http.Client // nil means a client of this package's own
	Limits
}

// Cloudflare embeds through Workers AI's POST /accounts/{id}/ai/run/{model},
// or an AI Gateway's POST .../workers-ai/{model}.
type Cloudflare struct{ engine }

var _ recall.Embedder = (*Cloudflare)(nil)

// Workers AI takes at most 100 texts per embedding request.
var cloudflareDefaults = Limits{
	MaxBatch:      100,
	MaxInputChars: 8000,
	MaxBatchChars: 200_000,
	Concurrency:   4,
	Timeout:       time.Minute,
}

var accountID = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// NewCloudflare returns a Workers AI embedder. It makes no request.
func NewCloudflare(cfg CloudflareConfig) (*Cloudflare, error) {
	if !accountID.MatchString(cfg.AccountID) {
		return nil, recall.Errorf(recall.EINVALID, "cloudflare: the account id must be the letters and digits shown in the dashboard")
	}
	if cfg.APIToken == "" {
		return nil, recall.Errorf(recall.EINVALID, "cloudflare: no API token configured")
	}
	if strings.ContainsAny(cfg.Model, "?#%\\ ") || strings.Contains(cfg.Model, "..") {
		return nil, recall.Errorf(recall.EINVALID, "cloudflare: model %q is not a Workers AI model name", cfg.Model)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultCloudflareURL
	}
	w := cloudflareWire{
		// Qwen3 on Workers AI takes "queries" and "documents" and adds the
		// query instruction itself; the other models take "text".
		separate: strings.Contains(family(cfg.Model), "qwen3-embedding"),
		// BGE models accept truncate_inputs: without it one long text
		// fails its whole batch.
		truncate: strings.HasPrefix(family(cfg.Model), "bge-"),
	}
	prefixes := KnownPrefixes(cfg.Model)
	if w.separate {
		prefixes = Prefixes{}
	}
	if cfg.Prefixes != nil {
		prefixes = *cfg.Prefixes
	}
	c := &Cloudflare{}
	err := c.init(engineConfig{
		provider: "cloudflare",
		model:    cfg.Model,
		endpoint: cloudflareEndpoint(base, cfg.AccountID, cfg.Model),
		secret:   cfg.APIToken,
		dim:      cfg.Dim,
		client:   cfg.HTTPClient,
		limits:   cfg.Limits,
		defaults: cloudflareDefaults,
		prefixes: prefixes,
		wire:     w,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// cloudflareEndpoint is the URL a model runs at. An AI Gateway names the
// account and the gateway in its own path and takes the model after
// /workers-ai; the API root takes /accounts/{id}/ai/run/{model}.
func cloudflareEndpoint(base, account, model string) string {
	model = strings.TrimLeft(model, "/")
	if u, err := url.Parse(base); err == nil && strings.HasSuffix(u.Path, "/workers-ai") {
		return base + "/" + model
	}
	return base + "/accounts/" + account + "/ai/run/" + model
}

type cloudflareWire struct {
	separate bool
	truncate bool
}

type cloudflareRequest struct {
	Text           []string `json:"text,omitempty"`
	Queries        []string `json:"queries,omitempty"`
	Documents      []string `json:"documents,omitempty"`
	TruncateInputs bool     `json:"truncate_inputs,omitempty"`
}

func (w cloudflareWire) body(kind recall.InputKind, texts []string) any {
	switch {
	case !w.separate:
		return cloudflareRequest{Text: texts, TruncateInputs: w.truncate}
	case kind == recall.InputQuery:
		return cloudflareRequest{Queries: texts}
	}
	return cloudflareRequest{Documents: texts}
}

func (cloudflareWire) decode(body []byte, _ int) ([][]float32, error) {
	var r struct {
		Result *struct {
			Shape []int    `json:"shape"`
			Data  []vector `json:"data"`
		} `json:"result"`
		Success bool `json:"success"`
		Errors  []struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if !r.Success {
		msgs := make([]string, len(r.Errors))
		for i, e := range r.Errors {
			msgs[i] = e.Message
		}
		return nil, &reportedFailure{message: strings.Join(msgs, "; ")}
	}
	if r.Result == nil || r.Result.Data == nil {
		return nil, errors.New(`no "result.data" field`)
	}
	data := r.Result.Data
	if s := r.Result.Shape; len(s) == 2 && (s[0] != len(data) || (len(data) > 0 && s[1] != len(data[0]))) {
		return nil, recall.Errorf(recall.EUNAVAILABLE, "cloudflare returned data that disagrees with its shape %v", s)
	}
	return floats(data), nil
}
