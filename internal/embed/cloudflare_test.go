package embed

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

func newTestCloudflare(t *testing.T, url, model string) *Cloudflare {
	t.Helper()
	c, err := NewCloudflare(CloudflareConfig{AccountID: "0123abcd", APIToken: testKey, Model: model,
		BaseURL: url + "/client/v4", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCloudflareBGEM3(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		cloudflareOK(w, req.inputs(t), 8)
	})
	c := newTestCloudflare(t, srv.URL, "@cf/baai/bge-m3")
	texts := []string{"an orange cloud", "a llama"}
	for _, kind := range []recall.InputKind{recall.InputDocument, recall.InputQuery} {
		got, err := c.Embed(context.Background(), kind, texts)
		if err != nil {
			t.Fatal(err)
		}
		assertVectors(t, got, texts, 8) // bge-m3 takes no prefixes
	}
	for _, r := range srv.requests() {
		if r.Method != http.MethodPost || r.Path != "/client/v4/accounts/0123abcd/ai/run/@cf/baai/bge-m3" {
			t.Errorf("request %s %s", r.Method, r.Path)
		}
		if a := r.Header.Get("Authorization"); a != "Bearer "+testKey {
			t.Errorf("Authorization %q", a)
		}
		f := r.fields(t)
		if f["truncate_inputs"] != true {
			t.Errorf("body %s: want truncate_inputs:true for a BGE model", r.Body)
		}
		if _, ok := f["queries"]; ok {
			t.Errorf("body %s: bge-m3 takes text, not queries", r.Body)
		}
		if !slices.Equal(r.inputs(t), texts) {
			t.Errorf("text %q, want %q", r.inputs(t), texts)
		}
	}
	if info := c.Info(); info.Provider != "cloudflare" || info.Dim != 8 || info.MaxTokens != 8192 {
		t.Errorf("Info = %+v", info)
	}
}

// An AI Gateway's Workers AI endpoint takes the model after /workers-ai,
// its path naming the account and gateway itself; the API root is still
// given /accounts/{id}/ai/run/{model}.
func TestCloudflareThroughAIGateway(t *testing.T) {
	for base, want := range map[string]string{
		"/v1/0123abcd/my-gateway/workers-ai":  "/v1/0123abcd/my-gateway/workers-ai/@cf/baai/bge-m3",
		"/v1/0123abcd/my-gateway/workers-ai/": "/v1/0123abcd/my-gateway/workers-ai/@cf/baai/bge-m3",
		"/client/v4":                          "/client/v4/accounts/0123abcd/ai/run/@cf/baai/bge-m3",
	} {
		t.Run(base, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				cloudflareOK(w, req.inputs(t), 8)
			})
			c, err := NewCloudflare(CloudflareConfig{AccountID: "0123abcd", APIToken: testKey, Model: "@cf/baai/bge-m3",
				BaseURL: srv.URL + base, Limits: fast})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Embed(context.Background(), recall.InputDocument, []string{"an orange cloud"}); err != nil {
				t.Fatal(err)
			}
			if r := srv.requests(); len(r) != 1 || r[0].Path != want {
				t.Errorf("requests %v, want one to %s", r, want)
			}
		})
	}
}

func TestCloudflareQwen3SeparatesQueriesAndDocuments(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		cloudflareOK(w, req.inputs(t), 4)
	})
	c := newTestCloudflare(t, srv.URL, "@cf/qwen/qwen3-embedding-0.6b")
	if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"where is the llama"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), recall.InputDocument, []string{"the llama is here"}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	q, d := reqs[0].fields(t), reqs[1].fields(t)
	if _, ok := q["queries"]; !ok || q["text"] != nil || q["truncate_inputs"] != nil {
		t.Errorf("query body %s, want only queries", reqs[0].Body)
	}
	if _, ok := d["documents"]; !ok || d["text"] != nil {
		t.Errorf("document body %s, want only documents", reqs[1].Body)
	}
	if in := reqs[0].inputs(t); in[0] != "where is the llama" {
		t.Errorf("query sent as %q: Workers AI adds Qwen's instruction itself", in[0])
	}
}

func TestCloudflareFailures(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		code     string
		contains string
	}{
		{"auth", 401, `{"result":null,"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[]}`,
			recall.EUNAUTHORIZED, "cloudflare rejected the API key"},
		{"unknown model", 400, `{"result":null,"success":false,"errors":[{"code":5007,"message":"No such model @cf/baai/bge-m3 or task"}],"messages":[]}`,
			recall.EINVALID, `does not know the model "@cf/baai/bge-m3"`},
		{"failure in a 200", 200, `{"result":null,"success":false,"errors":[{"code":3040,"message":"Capacity temporarily exceeded"}],"messages":[]}`,
			recall.EUNAVAILABLE, "Capacity temporarily exceeded"},
		{"shape disagrees", 200, `{"result":{"shape":[2,3],"data":[[1,2,3]]},"success":true,"errors":[],"messages":[]}`,
			recall.EUNAVAILABLE, "shape"},
		{"no result", 200, `{"success":true,"errors":[],"messages":[]}`,
			recall.EUNAVAILABLE, "malformed"},
		{"bad input", 400, `{"result":null,"success":false,"errors":[{"code":5006,"message":"Error: required properties at '/' are 'text'"}],"messages":[]}`,
			recall.EINVALID, "required properties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, tt.status, tt.body)
			})
			c := newTestCloudflare(t, srv.URL, "@cf/baai/bge-m3")
			_, err := c.Embed(context.Background(), recall.InputDocument, []string{"a", "b"})
			wantCode(t, err, tt.code)
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q should contain %q", err, tt.contains)
			}
		})
	}
}

func TestCloudflareConfig(t *testing.T) {
	good := CloudflareConfig{AccountID: "0123abcd", APIToken: "t", Model: "@cf/baai/bge-m3"}
	tests := []struct {
		name string
		edit func(*CloudflareConfig)
	}{
		{"no account", func(c *CloudflareConfig) { c.AccountID = "" }},
		{"account with a slash", func(c *CloudflareConfig) { c.AccountID = "abc/../x" }},
		{"no token", func(c *CloudflareConfig) { c.APIToken = "" }},
		{"no model", func(c *CloudflareConfig) { c.Model = "" }},
		{"model with a query", func(c *CloudflareConfig) { c.Model = "@cf/x?y=1" }},
		{"model climbing", func(c *CloudflareConfig) { c.Model = "../../tokens" }},
	}
	if _, err := NewCloudflare(good); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, err := NewCloudflare(cfg)
			if recall.ErrorCode(err) != recall.EINVALID {
				t.Fatalf("got %v, want EINVALID", err)
			}
		})
	}
}

// Workers AI answers both "out of capacity" (3040) and "daily free
// allocation used up" (3036) with 429; only the first passes with a wait.
func TestCloudflare429s(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		attempts int
		contains string
	}{
		{"out of capacity", `{"result":null,"success":false,"errors":[{"code":3040,"message":"Capacity temporarily exceeded, please try again."}],"messages":[]}`,
			3, "gave up after 3 attempts"},
		{"daily allocation used up", `{"result":null,"success":false,"errors":[{"code":3036,"message":"You have used up your daily free allocation of 10,000 neurons. Please upgrade to Cloudflare's Workers Paid plan if you would like to continue usage."}],"messages":[]}`,
			1, "retrying will not help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, http.StatusTooManyRequests, tt.body)
			})
			c := newTestCloudflare(t, srv.URL, "@cf/baai/bge-m3")
			_, err := c.Embed(context.Background(), recall.InputDocument, []string{"a"})
			wantCode(t, err, recall.ERATELIMIT)
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q should contain %q", err, tt.contains)
			}
			if n := len(srv.requests()); n != tt.attempts {
				t.Errorf("server saw %d requests, want %d", n, tt.attempts)
			}
		})
	}
}
