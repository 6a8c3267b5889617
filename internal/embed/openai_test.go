package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

func TestOpenAIRequest(t *testing.T) {
	tests := []struct {
		name     string
		base     string // appended to the server URL
		dim      int
		wantPath string
	}{
		{"root base", "", 0, "/v1/embeddings"},
		{"base ending in /v1", "/v1/", 0, "/v1/embeddings"},
		{"base with a path", "/proxy", 0, "/proxy/v1/embeddings"},
		{"dimensions set", "", 6, "/v1/embeddings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dim := tt.dim
			if dim == 0 {
				dim = 8
			}
			srv := openAIServer(t, dim)
			o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + tt.base, Model: "text-embedding-3-small",
				APIKey: testKey, Dim: tt.dim, Limits: fast})
			if err != nil {
				t.Fatal(err)
			}
			texts := []string{"alpha", "beta", "gamma"}
			got, err := o.Embed(context.Background(), recall.InputDocument, texts)
			if err != nil {
				t.Fatal(err)
			}
			assertVectors(t, got, texts, dim)

			r := srv.requests()[0]
			if r.Method != http.MethodPost || r.Path != tt.wantPath {
				t.Errorf("request %s %s, want POST %s", r.Method, r.Path, tt.wantPath)
			}
			if a := r.Header.Get("Authorization"); a != "Bearer "+testKey {
				t.Errorf("Authorization %q", a)
			}
			f := r.fields(t)
			if f["model"] != "text-embedding-3-small" || f["encoding_format"] != "float" {
				t.Errorf("body %s: want model and encoding_format float", r.Body)
			}
			if !slices.Equal(r.inputs(t), texts) {
				t.Errorf("input %q, want %q", r.inputs(t), texts)
			}
			d, sent := f["dimensions"]
			switch {
			case tt.dim == 0 && sent:
				t.Errorf("dimensions sent (%v) though not configured", d)
			case tt.dim != 0 && d != float64(tt.dim):
				t.Errorf("dimensions = %v, want %d", d, tt.dim)
			}
		})
	}
}

func TestOpenAIWithoutKeySendsNoAuthorization(t *testing.T) {
	srv := openAIServer(t, 4)
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "local", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), recall.InputQuery, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if a := srv.requests()[0].Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization %q sent without a key", a)
	}
}

func TestOpenAIOrdersByIndex(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		texts := req.inputs(t)
		data := make([]map[string]any, len(texts))
		for i := range texts {
			j := len(texts) - 1 - i
			data[i] = map[string]any{"index": j, "embedding": fakeVec(texts[j], 4)}
		}
		writeJSON(w, 200, map[string]any{"data": data})
	})
	o := newTestOpenAI(t, srv.URL, fast)
	texts := []string{"one", "two", "three", "four"}
	got, err := o.Embed(context.Background(), recall.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	assertVectors(t, got, texts, 4)
}

func TestOpenAIWithoutIndexKeepsOrder(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		var data []map[string]any
		for _, v := range vecs(req.inputs(t), 4) {
			data = append(data, map[string]any{"embedding": v})
		}
		writeJSON(w, 200, map[string]any{"data": data})
	})
	o := newTestOpenAI(t, srv.URL, fast)
	texts := []string{"one", "two"}
	got, err := o.Embed(context.Background(), recall.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	assertVectors(t, got, texts, 4)
}

// TestOpenAIFailures covers how each kind of bad answer is reported and
// whether it is retried (fast allows 3 attempts).
func TestOpenAIFailures(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		dim      int    // configured dimension
		code     string // expected error code
		attempts int    // requests the server should see
		contains string // in the error text
	}{
		{"malformed JSON", 200, `{"data":[{"index":0,"embedding":[0.1,` + testKey, 0, recall.EUNAVAILABLE, 1, "malformed"},
		{"no data", 200, `{"object":"list"}`, 0, recall.EUNAVAILABLE, 1, "malformed"},
		{"fewer vectors than texts", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "2 vectors for 3 texts"},
		{"repeated index", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "indexes"},
		{"index out of range", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2]},{"index":3,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "indexes"},
		{"wrong dimension", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 3, recall.ECONFLICT, 1, "dimension 2"},
		{"mixed dimensions", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2,3]},{"index":2,"embedding":[1,2]}]}`, 0, recall.ECONFLICT, 1, "dimension 3"},
		{"null component", 200, `{"data":[{"index":0,"embedding":[1,null]},{"index":1,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "not a finite number"},
		{"NaN as string", 200, `{"data":[{"index":0,"embedding":[1,"NaN"]},{"index":1,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "not a finite number"},
		{"all-zero vector", 200, `{"data":[{"index":0,"embedding":[0,0]},{"index":1,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "all-zero"},
		{"empty vector", 200, `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "empty vector"},
		{"null vector", 200, `{"data":[{"index":0,"embedding":null},{"index":1,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]}`, 0, recall.EUNAVAILABLE, 1, "empty vector"},
		{"auth failure", 401, `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`, 0, recall.EUNAUTHORIZED, 1, "openai rejected the API key"},
		{"forbidden", 403, `{"error":{"message":"no access"}}`, 0, recall.EUNAUTHORIZED, 1, "rejected the API key"},
		{"unknown model (OpenAI)", 404, `{"error":{"message":"The model 'text-embedding-3-small' does not exist","type":"invalid_request_error","code":"model_not_found"}}`, 0, recall.EINVALID, 1, `"text-embedding-3-small"`},
		{"unknown model (vLLM)", 404, "{\"object\":\"error\",\"message\":\"The model `text-embedding-3-small` does not exist.\",\"type\":\"NotFoundError\",\"code\":404}", 0, recall.EINVALID, 1, "does not know the model"},
		{"unknown model in a 400", 400, `{"error":{"message":"model not found"}}`, 0, recall.EINVALID, 1, "does not know the model"},
		{"wrong base URL", 404, `404 page not found`, 0, recall.EINVALID, 1, "check the base URL"},
		{"bad request", 400, `{"error":{"message":"input must not be empty, key ` + testKey + `"}}`, 0, recall.EINVALID, 1, "input must not be empty"},
		// TEI's /v1/embeddings error shape.
		{"unprocessable (TEI)", 422, `{"message":"Input validation error: tokenization failed","code":422,"type":"tokenizer"}`, 0, recall.EINVALID, 1, "Input validation error"},
		// 3 texts, then 1 (TestBatchRefusedAsTooLargeIsSplit), then the
		// probe, refused too (TestSizeRefusalOfEveryRequestFailsTheCall).
		{"too large", 413, `{"error":"payload too large"}`, 0, recall.ETOOLARGE, 3, "lower MaxInputChars"},
		{"server error every time", 500, `{"error":{"message":"boom ` + testKey + `"}}`, 0, recall.EUNAVAILABLE, 3, "gave up after 3 attempts"},
		{"bad gateway every time", 502, `<html>502 Bad Gateway</html>`, 0, recall.EUNAVAILABLE, 3, "502 Bad Gateway"},
		{"request timeout every time", 408, ``, 0, recall.EUNAVAILABLE, 3, "timed out"},
		{"rate limited every time", 429, `{"error":{"message":"slow down"}}`, 0, recall.ERATELIMIT, 3, "slow down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, tt.status, tt.body)
			})
			o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "text-embedding-3-small", APIKey: testKey, Dim: tt.dim, Limits: fast})
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.Embed(context.Background(), recall.InputDocument, []string{"a", "b", "c"})
			if got != nil {
				t.Errorf("returned vectors %v along with a failure", got)
			}
			wantCode(t, err, tt.code)
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q should contain %q", err, tt.contains)
			}
			if n := len(srv.requests()); n != tt.attempts {
				t.Errorf("server saw %d requests, want %d", n, tt.attempts)
			}
		})
	}
}

func TestOpenAILearnedDimensionConflict(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		openAIOK(w, req.inputs(t), 4+call) // a different dimension each time
	})
	o := newTestOpenAI(t, srv.URL, fast)
	if _, err := o.Embed(context.Background(), recall.InputDocument, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if d := o.Info().Dim; d != 5 {
		t.Fatalf("learned dimension %d, want 5", d)
	}
	_, err := o.Embed(context.Background(), recall.InputDocument, []string{"b"})
	wantCode(t, err, recall.ECONFLICT)
	if d := o.Info().Dim; d != 5 {
		t.Errorf("dimension changed to %d after a conflicting answer", d)
	}
}

// A 429 that says the account is out of quota or over a spending limit is
// not a rate limit: OpenAI documents that retrying does not help, so it
// fails after one request instead of spending the attempts.
func TestOpenAIQuotaExhaustedIsNotRetried(t *testing.T) {
	for name, body := range map[string]string{
		"insufficient_quota":           `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		"type only, code null":         `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":null}}`,
		"project spend limit exceeded": `{"error":{"message":"Project spend limit reached.","type":"insufficient_quota","param":null,"code":"project_spend_limit_exceeded"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, http.StatusTooManyRequests, body)
			})
			o := newTestOpenAI(t, srv.URL, fast)
			_, err := o.Embed(context.Background(), recall.InputDocument, []string{"a"})
			wantCode(t, err, recall.ERATELIMIT)
			if !strings.Contains(err.Error(), "quota") || !strings.Contains(err.Error(), "retrying will not help") {
				t.Errorf("error %q should say the quota is used up and retrying will not help", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

// OpenAI's 429s carry retry-after-ms (which its own SDKs read first) and
// x-ratelimit-* headers; a wait they name is used instead of a guess.
func TestOpenAIRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		lo, hi  time.Duration
	}{
		{"retry-after-ms", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"tokens used up", map[string]string{
			"X-Ratelimit-Remaining-Requests": "2999", "X-Ratelimit-Reset-Requests": "20ms",
			"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "2s"}, 2 * time.Second, 2 * time.Second},
		{"requests used up", map[string]string{
			"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "1.5s",
			"X-Ratelimit-Remaining-Tokens": "999000", "X-Ratelimit-Reset-Tokens": "6m0s"}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"reset beyond MaxRetryAfter is shortened", map[string]string{
			"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "6m0s"}, time.Minute, time.Minute},
		{"nothing used up", map[string]string{
			"X-Ratelimit-Remaining-Requests": "5", "X-Ratelimit-Reset-Requests": "30s"}, 0, fast.BaseDelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				if call == 1 {
					for k, v := range tt.headers {
						w.Header().Set(k, v)
					}
					writeRaw(w, http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached for text-embedding-3-small","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
					return
				}
				openAIOK(w, req.inputs(t), 4)
			})
			l := fast
			l.MaxRetryAfter = time.Minute
			o := newTestOpenAI(t, srv.URL, l)
			rec := &waitsRecorder{}
			o.sleep = rec.sleep
			if _, err := o.Embed(context.Background(), recall.InputDocument, []string{"x"}); err != nil {
				t.Fatal(err)
			}
			if waits := rec.get(); len(waits) != 1 || waits[0] < tt.lo || waits[0] > tt.hi {
				t.Fatalf("waits %v, want one within [%s, %s]", waits, tt.lo, tt.hi)
			}
		})
	}
}

// text-embeddings-inference answers a request with more inputs than its
// --max-client-batch-size (32 by default, below recall's default batch)
// with 413; the batch is split until it passes, and later batches are sent
// at the size that passed.
func TestBatchRefusedAsTooLargeIsSplit(t *testing.T) {
	const teiMax = 32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		in := req.inputs(t)
		if len(in) > teiMax {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{
				"message": fmt.Sprintf("batch size %d > maximum allowed batch size %d", len(in), teiMax),
				"code":    413, "type": "validation"})
			return
		}
		openAIOK(w, in, 4)
	})
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "BAAI/bge-small-en-v1.5", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d", i)
	}
	got, err := o.Embed(context.Background(), recall.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	assertVectors(t, got, texts, 4)
	var sizes []int
	for _, r := range srv.requests() {
		sizes = append(sizes, len(r.inputs(t)))
	}
	if want := []int{100, 50, 25, 25, 25, 25}; !slices.Equal(sizes, want) {
		t.Errorf("request sizes %v, want %v", sizes, want)
	}
	before := len(srv.requests())
	if got, err = o.Embed(context.Background(), recall.InputDocument, texts[:60]); err != nil {
		t.Fatal(err)
	}
	assertVectors(t, got, texts[:60], 4)
	for _, r := range srv.requests()[before:] {
		if n := len(r.inputs(t)); n > 25 {
			t.Errorf("a later request carried %d texts, more than the 25 that passed", n)
		}
	}
}

// A single text refused with a bare 413, which does not say the text is
// too long for the model, cannot be split; when the service refuses a
// probe text too (a proxy's body limit below any text), the call fails,
// naming the limit to lower.
func TestTextRefusedAsTooLarge(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		writeRaw(w, http.StatusRequestEntityTooLarge, `<html><center><h1>413 Request Entity Too Large</h1></center></html>`)
	})
	o := newTestOpenAI(t, srv.URL, fast)
	_, err := o.Embed(context.Background(), recall.InputDocument, []string{"a long text"})
	wantCode(t, err, recall.ETOOLARGE)
	var refused *Refused
	if errors.As(err, &refused) {
		t.Errorf("a bare 413 came back as a refused text: %v", err)
	}
	if !strings.Contains(err.Error(), "lower MaxInputChars") {
		t.Errorf("error %q should name MaxInputChars", err)
	}
	// The text, then the probe that tells a service refusing every request
	// from one refusing this text.
	if n := len(srv.requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}
