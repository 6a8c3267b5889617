package embed

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/recall-mcp/recall"
)

// Refused is the error of a call in which the service refused some texts on
// their own, as too long for the model (or, alone in a request, as too
// large for the service), and embedded the others. No smaller request can
// help such a text and retrying it with the same model
// fails the same way, so callers keep the other vectors and leave it
// without one, saying why.
type Refused struct {
	// Vecs holds a vector for every text of the call, nil where it was
	// refused.
	Vecs [][]float32
	// Reasons says why, by the index of each refused text.
	Reasons map[int]*recall.Error
}

func (r *Refused) Error() string {
	i := r.first()
	if len(r.Reasons) == 1 {
		return r.Reasons[i].Error()
	}
	return fmt.Sprintf("%d of %d texts refused; text %d: %s", len(r.Reasons), len(r.Vecs), i, r.Reasons[i].Error())
}

// Unwrap gives the first text's reason, so that recall.ErrorCode and
// recall.ErrorMessage read as they would for a call of that text alone.
func (r *Refused) Unwrap() error { return r.Reasons[r.first()] }

func (r *Refused) first() int {
	keys := make([]int, 0, len(r.Reasons))
	for i := range r.Reasons {
		keys = append(keys, i)
	}
	return slices.Min(keys)
}

// Partial separates an Embed or EmbedChunks call's refusals from its
// failure: for a *Refused it returns the vectors the call made (nil at each
// refused index), the reasons by index and no error; for anything else,
// vecs and err as they came.
func Partial(vecs [][]float32, err error) ([][]float32, map[int]*recall.Error, error) {
	var r *Refused
	if errors.As(err, &r) {
		return r.Vecs, r.Reasons, nil
	}
	return vecs, nil, err
}

// refusals returns vecs, or a *Refused when why names a refused text.
func refusals(vecs [][]float32, why []*recall.Error) ([][]float32, error) {
	var r *Refused
	for i, w := range why {
		if w == nil {
			continue
		}
		if r == nil {
			r = &Refused{Vecs: vecs, Reasons: map[int]*recall.Error{}}
		}
		r.Reasons[i] = w
	}
	if r != nil {
		return nil, r
	}
	return vecs, nil
}

// inputTooLong recognises the ways services say one input is longer than
// the model takes, as distinct from a batch too big for the server (TEI's
// "batch size 100 > maximum allowed batch size 32") or a malformed request.
// The wordings are the services' own, from their issue trackers:
//   - OpenAI (400, type invalid_request_error; code context_length_exceeded
//     on newer models): "This model's maximum context length is 8192
//     tokens, however you requested 8610 tokens ..."
//     (pingcap/autoflow#265, microsoft/PubSec-Info-Assistant#755);
//   - vLLM (400): "This model's maximum context length is 512 tokens.
//     However, you requested 1451 tokens in the input for embedding
//     generation." (vllm-project/vllm#19798);
//   - text-embeddings-inference (413, also through its OpenAI route):
//     "Input validation error: `inputs` must have less than 512 tokens.
//     Given: 534", or "... less than 32000 characters"
//     (huggingface/text-embeddings-inference#356, #394);
//   - llama.cpp server (500): "input is too large to process. increase the
//     physical batch size" (ggml-org/llama.cpp#7389, #12295);
//   - LM Studio: "Input length 6491 exceeds context length 1500"
//     (lmstudio-ai/examples#29);
//   - Ollama (400) with truncate false, and since 0.13.5 even with truncate
//     true: "the input length exceeds the context length" or "input length
//     exceeds maximum context length" (ollama/ollama#14186, n8n-io/n8n#11144).
//
// Workers AI documents no code for an over-long text (its error table,
// developers.cloudflare.com/workers-ai/platform/errors, has 3006 "Request
// is too large", 413, which the size split handles); BGE models are sent
// truncate_inputs instead. A single text refused for its size (413, or
// 3006) is refused as such a text is, unless the service refuses a probe
// text as well or says the refusal is temporary (see embedBatch).
func inputTooLong(status int, msg string, body []byte) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge &&
		status != http.StatusUnprocessableEntity && status != http.StatusInternalServerError {
		return false
	}
	if errorCode(body) == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "maximum context length"),
		strings.Contains(m, "exceeds the context length"),
		strings.Contains(m, "exceeds context length"),
		strings.Contains(m, "too large to process"),
		strings.Contains(m, "must have less than") && (strings.Contains(m, "tokens") || strings.Contains(m, "characters")):
		return true
	}
	return false
}
