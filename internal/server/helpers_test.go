package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// Test credentials. Each is long enough to be accepted.
const (
	aliceTok = "alice-0123456789-abcdefghij-KLMNOP"
	bobTok   = "bob-0123456789-abcdefghij-KLMNOPQ"
	plainTok = "plain-0123456789-abcdefghij-KLMNO"
	adminTok = "admin-0123456789-abcdefghij-KLMNO"
	wrongTok = "wrong-0123456789-abcdefghij-KLMNO"
)

const testSpace = "embedtest-word-hash"

// syncBuffer collects log or audit output written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	t     testing.TB
	st    *sqlite.DB
	eng   *search.Engine
	emb   *embedtest.Embedder
	mem   *memory.Service
	srv   *Server
	hs    *httptest.Server
	logs  *syncBuffer
	audit *syncBuffer
}

// newFixture builds a server over a real SQLite store in a temp dir, with
// the deterministic test embedder, alice and bob bound to their owners, an
// unbound token and an admin token, and serves it on 127.0.0.1.
func newFixture(t testing.TB, mod func(*Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "recall.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb := embedtest.New(64)
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: testSpace, Provider: "embedtest", Model: "word-hash", Dim: 64, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	// As recall serve builds it: with the in-memory full-text index.
	eng := search.New(st, search.Options{Embedder: emb, MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	mem := memory.New(st, eng, memory.Options{Embedder: emb, Space: testSpace})
	f := &fixture{t: t, st: st, eng: eng, emb: emb, mem: mem, logs: &syncBuffer{}, audit: &syncBuffer{}}
	opt := Options{Engine: eng, Memory: mem, Store: st, Embedder: emb, Space: testSpace,
		Tokens: []Token{
			{Name: "alice", Secret: aliceTok, Owner: "alice"},
			{Name: "bob", Secret: bobTok, Owner: "bob"},
			{Name: "plain", Secret: plainTok},
		},
		AdminToken: adminTok, Rate: 1000, Burst: 1000, BadTokenBurst: 1000, Audit: f.audit, Version: "test",
		Logger: slog.New(slog.NewTextHandler(RedactWriter(f.logs), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&opt)
	}
	srv, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.hs = httptest.NewServer(srv)
	t.Cleanup(f.hs.Close)
	return f
}

// archive stores an archive source with one chunk per text and embeds it.
func (f *fixture) archive(id, title, date string, texts ...string) {
	f.t.Helper()
	ctx := context.Background()
	doc := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, Title: title, Date: date,
		ContentHash: recall.TextHash(strings.Join(texts, "\n")), ChunkCount: len(texts), IndexState: recall.IndexOK}}
	for i, t := range texts {
		doc.Chunks = append(doc.Chunks, recall.Chunk{Index: i, Text: t, Header: title, Hash: recall.TextHash(t)})
	}
	if _, err := f.eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
		f.t.Fatal(err)
	}
	if _, err := repair.Run(ctx, f.st, f.eng, testSpace, f.emb, repair.Options{}); err != nil {
		f.t.Fatal(err)
	}
}

// save stores a memory as the given owner (bound).
func (f *fixture) save(owner, key, value string) {
	f.t.Helper()
	if _, err := f.mem.Save(context.Background(), memory.SaveRequest{Key: key, Value: value},
		memory.Scope{Owner: owner, Bound: owner != ""}); err != nil {
		f.t.Fatal(err)
	}
}

type bearer struct {
	token string
	extra http.Header
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	for k, v := range b.extra {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session with the Go SDK client.
func (f *fixture) connect(token string) *mcp.ClientSession {
	f.t.Helper()
	cs, err := f.dial(token, f.hs.URL+"/mcp")
	if err != nil {
		f.t.Fatalf("connect: %v", err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

func (f *fixture) dial(token, endpoint string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token: token}, Timeout: 20 * time.Second}}
	c := mcp.NewClient(&mcp.Implementation{Name: "recall-test", Version: "1"}, nil)
	return c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// call runs a tool and returns its result (tool errors included).
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// mustCall runs a tool that must succeed and decodes its structured output.
func mustCall[T any](t *testing.T, cs *mcp.ClientSession, tool string, args any) (T, *mcp.CallToolResult) {
	t.Helper()
	res := call(t, cs, tool, args)
	var out T
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: decode %s: %v", tool, b, err)
	}
	return out, res
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// do sends a raw HTTP request; headers are given as "Name: value" pairs.
func (f *fixture) do(method, path, token, body string, headers ...string) (*http.Response, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.hs.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// mcpHeaders are what a Streamable HTTP client sends with a POST.
var mcpHeaders = []string{"Accept: application/json, text/event-stream", "Content-Type: application/json"}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawSession initializes an MCP session by hand and returns its id.
func (f *fixture) rawSession(token string) string {
	f.t.Helper()
	resp, body := f.do("POST", "/mcp", token, initBody, mcpHeaders...)
	if resp.StatusCode != 200 {
		f.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		f.t.Fatal("initialize gave no session id")
	}
	r, b := f.do("POST", "/mcp", token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-11-25")...)
	if r.StatusCode != http.StatusAccepted {
		f.t.Fatalf("initialized: %d %s", r.StatusCode, b)
	}
	return sid
}

// rawCall posts one JSON-RPC message in a session and returns the status
// and the JSON-RPC payload (unwrapped from the event stream).
func (f *fixture) rawCall(token, sid, body string) (int, string) {
	f.t.Helper()
	resp, b := f.do("POST", "/mcp", token, body, append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-11-25")...)
	return resp.StatusCode, sseData(b)
}

// sseData returns the data of the last message event, or the body itself
// when it is not an event stream.
func sseData(body string) string {
	var last string
	found := false
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last, found = d, true
		}
	}
	if !found {
		return body
	}
	return last
}

func memoryScope(owner string) memory.Scope { return memory.Scope{Owner: owner, Bound: true} }
