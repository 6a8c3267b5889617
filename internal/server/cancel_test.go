package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/remote"
	"github.com/recall-mcp/recall/internal/search"
)

// hangingEmbedder is a remote embedding service (Ollama's API) that
// never answers: each request is announced on arrived and, once the
// embedder gives it up (its connection closed), on gone. The embedder
// sends one request at a time, so a second query reaches the service only
// once the first one's slot is free.
type hangingEmbedder struct {
	arrived, gone chan string // the query text of each request
}

func newHangingEmbedder(t *testing.T) (*hangingEmbedder, *embed.Ollama) {
	t.Helper()
	h := &hangingEmbedder{arrived: make(chan string, 8), gone: make(chan string, 8)}
	quit := make(chan struct{}) // a failed test ends the requests still held
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		q := strings.Join(req.Input, " ")
		h.arrived <- q
		select {
		case <-r.Context().Done():
			h.gone <- q
		case <-quit:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(quit) })
	emb, err := embed.NewOllama(embed.OllamaConfig{BaseURL: srv.URL, Model: "hang", Dim: 64,
		Prefixes: &embed.Prefixes{}, Limits: embed.Limits{Concurrency: 1, MaxAttempts: 1, Timeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	return h, emb
}

// hangingFixture is a server whose searches embed their queries with a
// hanging embedder, within budgets longer than any test: only a client
// going away ends them. Its full text is the store's, so every search
// takes one of its credential's turns (searchTurn).
func hangingFixture(t *testing.T) (*fixture, *hangingEmbedder) {
	t.Helper()
	h, emb := newHangingEmbedder(t)
	f := newFixture(t, func(o *Options) {
		eng := search.New(o.Store, search.Options{Embedder: emb, EmbedBudget: time.Hour, Budget: time.Hour})
		if err := eng.LoadIndex(context.Background()); err != nil {
			t.Fatal(err)
		}
		o.Engine = eng
	})
	return f, h
}

// await returns what ch brings. Every test here waits for something the
// server must do once a client went away, which nothing else would bring
// about (the budgets are an hour): when it never comes, the test fails
// shortly before go test's own deadline would end the whole run.
func await(t *testing.T, ch chan string, what string) string {
	t.Helper()
	limit := 5 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = max(time.Until(d)-5*time.Second, time.Second)
	}
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("%s never happened", what)
		return ""
	}
}

// post sends a POST in the background under ctx; its outcome (status or
// error) arrives on the returned channel.
func (f *fixture) post(ctx context.Context, path, token, body string, headers ...string) chan string {
	out := make(chan string, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.hs.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return out
}

func searchCall(id, query string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search_archive","arguments":{"query":%q,"mode":"semantic"}}}`, id, query)
}

// slotFreed checks that the embedder's one slot is free: a REST search of
// another query reaches the service, and is then given up in turn; and
// that the search gone gave back its credential's turn: while that one
// waits, another search of the token still runs (with two held it would
// wait for a turn, and be refused with 429).
func slotFreed(t *testing.T, f *fixture, h *hangingEmbedder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := f.post(ctx, "/api/search", plainTok, `{"query":"second query","mode":"semantic"}`)
	if q := await(t, h.arrived, "the next search's embedding reaching the service"); q != "second query" {
		t.Fatalf("the service got %q; want the next search's query", q)
	}
	if resp, body := f.do("POST", "/api/search", plainTok, `{"query":"third query","mode":"lexical"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("a search beside the next one: %d %s; want its turn", resp.StatusCode, body)
	}
	cancel()
	<-done
	await(t, h.gone, "the next search's embedding given up")
}

// A REST client that closes its connection mid-search stops the search's
// query embedding: the service sees its request end and the embedder's
// slot is free for the next search.
func TestRESTClientGoneStopsEmbedding(t *testing.T) {
	f, h := hangingFixture(t)
	leaveMidSearch(t, f, h, "/api/search", `{"query":"first query","mode":"semantic"}`)
	slotFreed(t, f, h)
}

// leaveMidSearch posts body to path, closes the connection once its
// search's embedding reached the service, and checks the service sees
// that request end.
func leaveMidSearch(t *testing.T, f *fixture, h *hangingEmbedder, path, body string, headers ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := f.post(ctx, path, plainTok, body, headers...)
	await(t, h.arrived, "the search's embedding reaching the service")
	cancel()
	<-done
	if q := await(t, h.gone, "the embedding given up"); q != "first query" {
		t.Fatalf("the service lost %q; want the first query", q)
	}
}

// An MCP client over HTTP that closes its connection mid-call stops the
// call's work, although the SDK runs it on the session's context.
func TestMCPClientGoneStopsEmbedding(t *testing.T) {
	f, h := hangingFixture(t)
	sid := f.rawSession(plainTok)
	hdr := append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-11-25")
	leaveMidSearch(t, f, h, "/mcp", searchCall("7", "first query"), hdr...)
	slotFreed(t, f, h)
	// The session goes on.
	if status, body := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); status != 200 || !strings.Contains(body, "search_archive") {
		t.Fatalf("the session after a call was cut off: %d %s", status, body)
	}
}

// notifications/cancelled for a tools/call over HTTP stops its work while
// its POST stays open.
func TestMCPCancelledNotificationStopsEmbedding(t *testing.T) {
	f, h := hangingFixture(t)
	sid := f.rawSession(plainTok)
	hdr := append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := f.post(ctx, "/mcp", plainTok, searchCall(`"call-1"`, "first query"), hdr...)
	await(t, h.arrived, "the call's embedding reaching the service")
	if status, body := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1","reason":"user gave up"}}`); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", status, body)
	}
	if q := await(t, h.gone, "the embedding given up"); q != "first query" {
		t.Fatalf("the service lost %q; want the first query", q)
	}
	slotFreed(t, f, h)
	cancel()
	<-done
}

// notifications/cancelled over stdio stops the call's work.
func TestStdioCancelledNotificationStopsEmbedding(t *testing.T) {
	f, h := hangingFixture(t)
	inR, inW := io.Pipe()
	var out syncBuffer
	ended := make(chan error, 1)
	go func() { ended <- f.srv.RunStdio(context.Background(), inR, &out, false) }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		searchCall("2", "first query"),
	} {
		io.WriteString(inW, line+"\n")
	}
	await(t, h.arrived, "the call's embedding reaching the service")
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`+"\n")
	if q := await(t, h.gone, "the embedding given up"); q != "first query" {
		t.Fatalf("the service lost %q; want the first query", q)
	}
	inW.Close()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

// An /ingest upload cut off mid-body is refused and applies nothing: the
// front door reads the whole body before the handler runs, so neither a
// source nor any staged chunk of it is written; the same body sent whole
// is written.
func TestIngestCutOffMidBodyAppliesNothing(t *testing.T) {
	f := newFixture(t, nil)
	b, _ := json.Marshal(remote.IngestRequest{Chunks: []remote.IngestChunk{
		chunkOf("cut.md", 0, 2, "first half of the upload"), chunkOf("cut.md", 1, 2, "second half of the upload")}})
	conn, err := net.Dial("tcp", f.hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		plainTok, len(b), b[:len(b)-20])
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a cut-off upload: %d %s; want 400", resp.StatusCode, body)
	}
	if _, err := f.st.Source(context.Background(), "cut.md"); !recall.IsNotFound(err) {
		t.Fatalf("a cut-off upload wrote its source: %v", err)
	}
	if status, out, body := f.ingest(plainTok, chunkOf("cut.md", 0, 2, "first half of the upload"), chunkOf("cut.md", 1, 2, "second half of the upload")); status != 200 || out.Sources[0].Status != remote.StatusWritten {
		t.Fatalf("the whole upload: %d %s", status, body)
	}
}
