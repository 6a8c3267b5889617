package embed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

func TestRetryAfterIsHonoured(t *testing.T) {
	date := time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name   string
		status int
		header string
		lo, hi time.Duration // bounds of the wait asked for
	}{
		{"429 in seconds", 429, "3", 3 * time.Second, 3 * time.Second},
		{"503 in seconds", 503, "7", 7 * time.Second, 7 * time.Second},
		{"429 as an HTTP date", 429, date, 3 * time.Second, 5 * time.Second},
		{"429 without the header", 429, "", 0, fast.BaseDelay},
		{"502 in seconds", 502, "7", 7 * time.Second, 7 * time.Second},
		{"500 in seconds", 500, "9", 9 * time.Second, 9 * time.Second},
		{"504 in seconds", 504, "2", 2 * time.Second, 2 * time.Second},
		{"408 in seconds", 408, "4", 4 * time.Second, 4 * time.Second},
		{"500 without the header", 500, "", 0, fast.BaseDelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				if call == 1 {
					if tt.header != "" {
						w.Header().Set("Retry-After", tt.header)
					}
					writeRaw(w, tt.status, `{"error":"busy"}`)
					return
				}
				openAIOK(w, req.inputs(t), 4)
			})
			o := newTestOpenAI(t, srv.URL, fast)
			rec := &waitsRecorder{}
			o.sleep = rec.sleep
			if _, err := o.Embed(context.Background(), recall.InputDocument, []string{"x"}); err != nil {
				t.Fatal(err)
			}
			waits := rec.get()
			if len(waits) != 1 || waits[0] < tt.lo || waits[0] > tt.hi {
				t.Fatalf("waits %v, want one within [%s, %s]", waits, tt.lo, tt.hi)
			}
			if n := len(srv.requests()); n != 2 {
				t.Errorf("server saw %d requests, want 2", n)
			}
		})
	}
}

func TestRetryAfterTooLongFailsAtOnce(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		w.Header().Set("Retry-After", "3600")
		writeRaw(w, 429, `{"error":{"message":"quota exhausted"}}`)
	})
	o := newTestOpenAI(t, srv.URL, fast)
	rec := &waitsRecorder{}
	o.sleep = rec.sleep
	_, err := o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.ERATELIMIT)
	if !strings.Contains(err.Error(), "1h0m0s") {
		t.Errorf("error %q should say how long the service asked to wait", err)
	}
	if w := rec.get(); len(w) != 0 {
		t.Errorf("waited %v, want no wait", w)
	}
}

func TestRetryAfterBeyondDeadlineFailsAtOnce(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		w.Header().Set("Retry-After", "30")
		writeRaw(w, 503, `{"error":"loading model"}`)
	})
	o := newTestOpenAI(t, srv.URL, fast)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := o.Embed(ctx, recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EUNAVAILABLE)
	if !strings.Contains(err.Error(), "no time left") {
		t.Errorf("error %q should say there is no time left to retry", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s, want an immediate failure", d)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	tests := []struct {
		name  string
		first func(w http.ResponseWriter, r *http.Request)
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) { writeRaw(w, 500, `{"error":"oops"}`) }},
		{"502", func(w http.ResponseWriter, r *http.Request) { writeRaw(w, 502, `bad gateway`) }},
		{"408", func(w http.ResponseWriter, r *http.Request) { writeRaw(w, 408, ``) }},
		{"dropped connection", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}},
		{"truncated body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(200)
			w.Write([]byte(`{"data":[`))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				if call == 1 {
					tt.first(w, r)
					return
				}
				openAIOK(w, req.inputs(t), 4)
			})
			o := newTestOpenAI(t, srv.URL, fast)
			got, err := o.Embed(context.Background(), recall.InputDocument, []string{"x", "y"})
			if err != nil {
				t.Fatal(err)
			}
			assertVectors(t, got, []string{"x", "y"}, 4)
			if n := len(srv.requests()); n != 2 {
				t.Errorf("server saw %d requests, want 2", n)
			}
		})
	}
}

func TestPerRequestTimeoutIsRetried(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		if call == 1 {
			<-r.Context().Done() // hang until the client gives up
			return
		}
		openAIOK(w, req.inputs(t), 4)
	})
	l := fast
	l.Timeout = 50 * time.Millisecond
	o := newTestOpenAI(t, srv.URL, l)
	start := time.Now()
	if _, err := o.Embed(context.Background(), recall.InputDocument, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s, want about the 50ms timeout", d)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

func TestTimeoutEveryTime(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		<-r.Context().Done()
	})
	l := fast
	l.Timeout = 20 * time.Millisecond
	o := newTestOpenAI(t, srv.URL, l)
	_, err := o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EUNAVAILABLE)
	if !strings.Contains(err.Error(), "did not answer within 20ms") {
		t.Errorf("error %q should name the timeout", err)
	}
	if isCanceled(err) {
		t.Errorf("a per-request timeout was reported as the caller's cancellation: %v", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	srv := newServer(t, nil)
	url := srv.URL
	srv.Close()
	o, err := NewOllama(OllamaConfig{BaseURL: url, Model: "bge-m3", APIKey: testKey, Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EUNAVAILABLE)
	if msg := recall.ErrorMessage(err); !strings.Contains(msg, "cannot reach ollama") || !strings.Contains(msg, "3 attempts") {
		t.Errorf("message %q should say ollama cannot be reached, after 3 attempts", msg)
	}
	// What a command prints names the service and the reason, not Go's
	// chain of calls, and the error still says what happened underneath
	// (Windows words and numbers a refusal its own way).
	if runtime.GOOS == "windows" {
		return
	}
	if !strings.HasSuffix(err.Error(), ": "+url+": "+refusedText()) || strings.Contains(err.Error(), "dial tcp") || strings.Contains(err.Error(), "/api/embed") {
		t.Errorf("error %q should end %q", err, ": "+url+": "+refusedText())
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %q no longer unwraps to ECONNREFUSED", err)
	}
}

// refusedText is how the system words a refused connection.
func refusedText() string { return syscall.ECONNREFUSED.Error() }

// A service named by a host that does not resolve says so in a word.
func TestUnknownHost(t *testing.T) {
	o, err := NewOllama(OllamaConfig{BaseURL: "http://recall-no-such-host.invalid:11434", Model: "bge-m3", Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EUNAVAILABLE)
	var dns *net.DNSError
	if !errors.As(err, &dns) {
		t.Fatalf("error %q does not unwrap to a *net.DNSError", err)
	}
	if want := ": http://recall-no-such-host.invalid:11434: " + dns.Err; !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "lookup") {
		t.Errorf("error %q should end %q", err, want)
	}
}

func TestKeyInBaseURLIsRedacted(t *testing.T) {
	srv := newServer(t, nil)
	url := srv.URL
	srv.Close()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: url + "/" + testKey, Model: "m", APIKey: testKey, Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), recall.InputDocument, []string{"x"})
	wantCode(t, err, recall.EUNAVAILABLE)
}

// leakedKeyPart returns the longest piece (12 characters or more) of key
// that s holds, or "".
func leakedKeyPart(s, key string) string {
	for n := len(key); n >= 12; n-- {
		for i := 0; i+n <= len(key); i++ {
			if strings.Contains(s, key[i:i+n]) {
				return key[i : i+n]
			}
		}
	}
	return ""
}

// No piece of the API key reaches an error, however a failing or malformed
// response places it: after a run of whitespace the excerpt collapses (a
// cut there once kept most of the key), past the part of a body an excerpt
// reads, or where a vector should be (the decoder once quoted 24
// characters of the value).
func TestKeyNeverInErrors(t *testing.T) {
	const key = "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901Vwx"
	for name, tc := range map[string]struct {
		status int
		body   string
	}{
		"after whitespace": {500, `{"error":"proxy error` + strings.Repeat(" ", 769) + "Authorization: Bearer " + key + `"}`},
		"across the scan":  {500, `{"error":"x` + strings.Repeat(" ", excerptScan-21-len(`{"error":"`)) + key + ` tail"}`},
		"as a vector":      {200, `{"data":[{"index":0,"embedding":"` + key + `"}]}`},
		"as a component":   {200, `{"data":[{"index":0,"embedding":["` + key + `"]}]}`},
		"in a message":     {400, `{"error":{"message":"bad key ` + key + `"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, tc.status, tc.body)
			})
			o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", APIKey: key, Limits: fast})
			if err != nil {
				t.Fatal(err)
			}
			_, err = o.Embed(context.Background(), recall.InputDocument, []string{"a"})
			if err == nil {
				t.Fatal("no error")
			}
			if p := leakedKeyPart(err.Error(), key); p != "" {
				t.Errorf("the error holds %d characters of the key: %v", len(p), err)
			}
		})
	}
}

// The text sent for embedding (archive text, a memory's value) never
// reaches an error, which sweep.log and the server's log keep, however a
// service echoes it: FastAPI's 422 lists each invalid field with its
// "input"; a body of another shape, or not JSON, is not quoted at all.
func TestErrorsNeverQuoteTheTextSent(t *testing.T) {
	const text = "CANARY a private diary entry about my doctor"
	for name, tc := range map[string]struct {
		status int
		body   string
		want   string // what the error keeps of the service's message
	}{
		"FastAPI validation list": {422, `{"detail":[{"type":"string_too_long","loc":["body","input",0],"msg":"String should have at most 10 characters","input":"` + text + `","ctx":{"max_length":10,"value":"` + text + `"}}]}`,
			`body.input.0: String should have at most 10 characters (string_too_long)`},
		"unknown JSON shape":     {400, `{"problem":{"input":"` + text + `"}}`, "HTTP 400 Bad Request"},
		"plain text":             {500, "cannot embed: " + text, "HTTP 500 Internal Server Error"},
		"HTML page":              {502, "<html><title>502 Bad Gateway</title><body>" + text + "</body></html>", "HTTP 502 Bad Gateway"},
		"echoed by a 2xx":        {200, `{"json":{"input":["` + text + `"]}}`, `no "data" field`},
		"2xx that is not JSON":   {200, "ok " + text, "malformed"},
		"message field and list": {422, `{"message":"invalid request","detail":[{"msg":"bad","input":"` + text + `"}]}`, "invalid request; bad"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, tc.status, tc.body)
			})
			o := newTestOpenAI(t, srv.URL, fast)
			_, err := o.Embed(context.Background(), recall.InputDocument, []string{text})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Errorf("the error quotes the text sent: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should contain %q", err, tc.want)
			}
		})
	}
}

func TestConcurrencyLimit(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		time.Sleep(15 * time.Millisecond)
		openAIOK(w, req.inputs(t), 4)
	})
	l := fast
	l.Concurrency = 2
	l.MaxBatch = 1
	o := newTestOpenAI(t, srv.URL, l)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for c := range 3 {
		wg.Go(func() {
			texts := make([]string, 4)
			for i := range texts {
				texts[i] = fmt.Sprintf("caller %d text %d", c, i)
			}
			got, err := o.Embed(context.Background(), recall.InputDocument, texts)
			if err == nil && len(got) != len(texts) {
				err = fmt.Errorf("%d vectors for %d texts", len(got), len(texts))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.requests()); n != 12 {
		t.Errorf("server saw %d requests, want 12 (one per text)", n)
	}
	if m := srv.maxInflight.Load(); m != 2 {
		t.Errorf("at most %d requests were in flight at once, want exactly the limit of 2", m)
	}
}

func TestBatching(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		openAIOK(w, req.inputs(t), 4)
	})
	l := fast
	l.MaxBatch = 4
	o := newTestOpenAI(t, srv.URL, l)
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = fmt.Sprintf("text number %d", i)
	}
	got, err := o.Embed(context.Background(), recall.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	assertVectors(t, got, texts, 4)
	var sizes []int
	var sent []string
	for _, r := range srv.requests() {
		in := r.inputs(t)
		sizes = append(sizes, len(in))
		sent = append(sent, in...)
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{2, 4, 4}) {
		t.Errorf("batch sizes %v, want 4, 4 and 2", sizes)
	}
	slices.Sort(sent)
	want := slices.Sorted(slices.Values(texts))
	if !slices.Equal(sent, want) {
		t.Errorf("texts sent %q, want each once", sent)
	}
}

func TestBatchCharacterBudgetAndTruncation(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		openAIOK(w, req.inputs(t), 4)
	})
	l := fast
	l.MaxInputChars = 8
	l.MaxBatchChars = 16
	// Prefixes count toward MaxInputChars.
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", Prefixes: &Prefixes{Query: "q:", Document: "d:"}, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"héllo wörld", "日本語のテキストです", "short", "x"}
	if _, err := o.Embed(context.Background(), recall.InputDocument, texts); err != nil {
		t.Fatal(err)
	}
	var batches [][]string
	for _, r := range srv.requests() {
		batches = append(batches, r.inputs(t))
	}
	slices.SortFunc(batches, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	want := [][]string{{"d:héllo ", "d:日本語のテキ"}, {"d:short", "d:x"}}
	if !slices.EqualFunc(batches, want, slices.Equal) {
		t.Errorf("batches %q, want %q", batches, want)
	}
}

func TestEmptyInput(t *testing.T) {
	srv := openAIServer(t, 4)
	o := newTestOpenAI(t, srv.URL, fast)
	got, err := o.Embed(context.Background(), recall.InputQuery, nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want an empty result", got, err)
	}
	_, err = o.Embed(context.Background(), recall.InputQuery, []string{"fine", ""})
	wantCode(t, err, recall.EINVALID)
	if n := len(srv.requests()); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

func TestCancellation(t *testing.T) {
	tests := []struct {
		name    string
		handler handler
	}{
		{"while in flight", func(w http.ResponseWriter, r *http.Request, call int, req request) {
			<-r.Context().Done()
		}},
		{"while waiting out Retry-After", func(w http.ResponseWriter, r *http.Request, call int, req request) {
			w.Header().Set("Retry-After", "30")
			writeRaw(w, 429, `{}`)
		}},
		{"while waiting for a concurrency slot", func(w http.ResponseWriter, r *http.Request, call int, req request) {
			<-r.Context().Done()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handler)
			l := fast
			l.Concurrency = 1
			l.MaxBatch = 1
			o := newTestOpenAI(t, srv.URL, l)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			start := time.Now()
			_, err := o.Embed(ctx, recall.InputDocument, []string{"a", "b", "c"})
			if !errors.Is(err, context.Canceled) || recall.ErrorCode(err) != recall.ECANCELED {
				t.Fatalf("got %v (code %s), want the cancellation", err, recall.ErrorCode(err))
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s to notice the cancellation", d)
			}
		})
	}
}

func TestFailingBatchStopsTheOthers(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		if req.inputs(t)[0] == "bad" {
			writeRaw(w, 400, `{"error":{"message":"cannot embed this"}}`)
			return
		}
		<-r.Context().Done()
	})
	l := fast
	l.MaxBatch = 1
	o := newTestOpenAI(t, srv.URL, l)
	start := time.Now()
	_, err := o.Embed(context.Background(), recall.InputDocument, []string{"slow", "bad", "slow too"})
	wantCode(t, err, recall.EINVALID)
	if !strings.Contains(err.Error(), "cannot embed this") {
		t.Errorf("error %q should be the failing batch's", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s: the other batches were not stopped", d)
	}
}

func TestInvalidConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  OpenAIConfig
	}{
		{"no model", OpenAIConfig{}},
		{"relative URL", OpenAIConfig{Model: "m", BaseURL: "localhost:8080"}},
		{"ftp URL", OpenAIConfig{Model: "m", BaseURL: "ftp://host"}},
		{"negative dimension", OpenAIConfig{Model: "m", Dim: -1}},
		{"negative batch", OpenAIConfig{Model: "m", Limits: Limits{MaxBatch: -1}}},
		{"negative timeout", OpenAIConfig{Model: "m", Limits: Limits{Timeout: -time.Second}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewOpenAI(tt.cfg)
			if recall.ErrorCode(err) != recall.EINVALID {
				t.Fatalf("got %v, want EINVALID", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	o, err := NewOllama(OllamaConfig{Model: "bge-m3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.route.Load().endpoint != "http://127.0.0.1:11434/api/embed" || o.limits != withRetryDefaults(ollamaDefaults) {
		t.Errorf("ollama endpoint %s, limits %+v", o.route.Load().endpoint, o.limits)
	}
	a, err := NewOpenAI(OpenAIConfig{Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	if a.route.Load().endpoint != "https://api.openai.com/v1/embeddings" || a.limits != withRetryDefaults(openAIDefaults) {
		t.Errorf("openai endpoint %s, limits %+v", a.route.Load().endpoint, a.limits)
	}
	c, err := NewCloudflare(CloudflareConfig{AccountID: "abc", APIToken: "t", Model: "@cf/baai/bge-m3"})
	if err != nil {
		t.Fatal(err)
	}
	if c.route.Load().endpoint != "https://api.cloudflare.com/client/v4/accounts/abc/ai/run/@cf/baai/bge-m3" || c.limits.MaxBatch != 100 {
		t.Errorf("cloudflare endpoint %s, limits %+v", c.route.Load().endpoint, c.limits)
	}
	l := Limits{MaxBatch: 7, Timeout: time.Second}
	o, err = NewOllama(OllamaConfig{Model: "bge-m3", Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	if o.limits.MaxBatch != 7 || o.limits.Timeout != time.Second || o.limits.Concurrency != ollamaDefaults.Concurrency {
		t.Errorf("configured limits not kept over defaults: %+v", o.limits)
	}
}

func withRetryDefaults(l Limits) Limits {
	l.MaxAttempts, l.BaseDelay, l.MaxDelay, l.MaxRetryAfter =
		retryDefaults.MaxAttempts, retryDefaults.BaseDelay, retryDefaults.MaxDelay, retryDefaults.MaxRetryAfter
	return l
}
