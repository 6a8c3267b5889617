package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestServeSecondInterrupt: at the first interrupt a server gives the
// requests in flight their grace (here an hour); at the second it stops
// waiting for them. The store then closes cleanly, with what was
// acknowledged in it. (That event streams end at the first is
// TestShutdownEndsEventStreams in internal/server.)
func TestServeSecondInterrupt(t *testing.T) {
	// An Ollama that holds, until its client gives up, any text with "HOLD".
	held := make(chan struct{})
	var once sync.Once
	var down atomic.Bool
	ollama := ollamaHandler(&down)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("HOLD")) {
			once.Do(func() { close(held) })
			<-r.Context().Done()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ollama.ServeHTTP(w, r)
	}))
	defer fake.Close()
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "model-a", fake.URL
	env["RECALL_TOKEN"] = serveToken

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hurry := make(chan struct{})
	m := NewMain()
	m.Getenv = func(k string) string { return env[k] }
	m.Hurry, m.grace = hurry, time.Hour
	url, stderr, done := serveWith(t, ctx, cancel, m)

	if code, body := send(t, "PUT", url+"/api/memories/kept", serveToken, `{"value":"the spare key is under the blue pot"}`); code != 200 {
		t.Fatalf("save: %d %s", code, body)
	}
	saved := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("PUT", url+"/api/memories/held", strings.NewReader(`{"value":"HOLD the door"}`))
		req.Header.Set("Authorization", "Bearer "+serveToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			saved <- 0
			return
		}
		resp.Body.Close()
		saved <- resp.StatusCode
	}()
	<-held // the save is in flight, waiting for its embedding

	cancel()     // the first interrupt: the save has its grace, an hour
	close(hurry) // the second
	if code := <-done; code != 0 {
		t.Errorf("serve exited with %d: %s", code, stderr.String())
	}
	if code := <-saved; code == 200 {
		t.Errorf("the save in flight at the second interrupt was waited for (answered %d)", code)
	}
	if out, errs, code := run(t, env, "memory", "get", "kept"); code != 0 || !strings.Contains(out, "blue pot") {
		t.Errorf("the memory saved before the stop: %d %s %s", code, out, errs)
	}
	if out, errs, code := run(t, env, "check"); code != 0 {
		t.Errorf("check after the stop: %d %s %s", code, out, errs)
	}
}
