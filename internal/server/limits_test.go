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
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
)

func TestBodyLimit(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxBody = 1 << 20 })
	big := `{"query":"` + strings.Repeat("x", 2<<20) + `"}`
	for _, path := range []string{"/api/search", "/ingest", "/mcp", "/api/diary"} {
		resp, body := f.do("POST", path, plainTok, big, mcpHeaders...)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "too_large") {
			t.Errorf("%s with a 2 MiB body: %d %.200s", path, resp.StatusCode, body)
		}
	}
	// Without a Content-Length the limit applies while reading.
	for _, path := range []string{"/api/search", "/mcp"} {
		req, _ := http.NewRequest("POST", f.hs.URL+path, io.MultiReader(strings.NewReader(big)))
		req.ContentLength = -1
		req.Header.Set("Authorization", "Bearer "+plainTok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked %s: %d", path, resp.StatusCode)
		}
	}
}

// Only /ingest takes bodies up to MaxBody: every other route's largest
// input is far smaller, and a body is held a few times over while it is
// decoded, so they stop at maxCallBody.
func TestBodyLimitByRoute(t *testing.T) {
	f := newFixture(t, nil)
	big := `{"query":"` + strings.Repeat("x", maxCallBody) + `"}`
	for _, path := range []string{"/api/search", "/mcp", "/api/diary", "/ingest/remove", "/ingest/sources"} {
		if resp, body := f.do("POST", path, plainTok, big, mcpHeaders...); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s with a body over %d bytes: %d %.200s", path, maxCallBody, resp.StatusCode, body)
		}
	}
	if resp, body := f.do("POST", "/ingest", plainTok, big); resp.StatusCode == http.StatusRequestEntityTooLarge {
		t.Errorf("/ingest with a body under MaxBody: %d %.200s", resp.StatusCode, body)
	}
	// The largest value a memory takes, every character escaped as a
	// surrogate pair, fits.
	value := strings.Repeat(`\ud83d\ude00`, 100_000)
	if resp, body := f.do("PUT", "/api/memories/note_big", plainTok, `{"value":"`+value+`"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("the largest value, escaped: %d %.200s", resp.StatusCode, body)
	}
}

func TestInputLimitsOverREST(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/api/search", `{"query":"` + strings.Repeat("q", 501) + `"}`, 400, "the limit is 500"},
		{"POST", "/api/search", `{"query":"x","limit":21}`, 400, "limit must be between 1 and 20"},
		{"POST", "/api/search", `{"query":"x","limit":"five"}`, 400, "field limit must be a number"},
		{"POST", "/api/search", `{"query":"x","limit":1e20}`, 400, "field limit must be a whole number in range, not 1e20"},
		{"POST", "/api/context", `{"source":"a.md","chunk_index":1.5}`, 400, "field chunk_index must be a whole number in range, not 1.5"},
		{"POST", "/api/search", `{"query":"x","category":"` + strings.Repeat("c", 65) + `"}`, 400, "category is 65 characters"},
		{"POST", "/api/search", `{"query":"x","source_prefix":"` + strings.Repeat("p", 1025) + `"}`, 400, "source prefix is 1025 bytes"},
		{"POST", "/api/search", `{"query":"x","unknown":true}`, 400, "unknown field"},
		{"POST", "/api/search", ``, 400, "body is empty"},
		{"PUT", "/api/memories/k", `{"value":"` + strings.Repeat("v", 100_001) + `"}`, 413, "the limit is 100000"},
		{"PUT", "/api/memories/" + strings.Repeat("k", 201), `{"value":"v"}`, 400, "the limit is 200"},
		{"GET", "/api/memories?prefix=a&limit=21", "", 400, "limit must be between 1 and 20"},
		{"GET", "/api/memories?prefix=a&limit=x", "", 400, "must be a whole number"},
		{"GET", "/api/memories?prefix=a&sort=desc", "", 400, `unknown query parameter \"sort\"`},
		{"GET", "/api/diary?days=31", "", 400, "days must be between 1 and 30"},
		{"DELETE", "/api/memories/k", "", 400, "confirm set to true"},
		{"GET", "/api/memories/nothing", "", 404, "no memory with key"},
		{"GET", "/no/such/route", "", 404, "no such endpoint"},
	} {
		path := tc.path
		resp, body := f.do(tc.method, path, plainTok, tc.body)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %.60s: %d %.300s, want %d mentioning %q", tc.method, path, resp.StatusCode, body, tc.status, tc.want)
		}
		var eb errorBody
		if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Errorf("%s %.60s: error body %q is not {error:{code,message}}", tc.method, path, body)
		}
	}
}

// An empty body is {} where every field is optional (POST /admin/repair),
// and refused where the endpoint needs a field.
func TestEmptyBody(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("a.md", "A", "", "the kettle whistles")
	for _, body := range []string{"", " \n", "{}"} {
		resp, raw := f.do("POST", "/admin/repair", adminTok, body)
		var out RepairOutput
		if err := json.Unmarshal([]byte(raw), &out); resp.StatusCode != 200 || err != nil || out.Space != testSpace || !out.Done {
			t.Errorf("POST /admin/repair with body %q: %d %s; want a repair with the defaults", body, resp.StatusCode, raw)
		}
	}
	for _, route := range []struct{ method, path, token string }{
		{"POST", "/api/search", plainTok},
		{"POST", "/api/context", plainTok},
		{"PUT", "/api/memories/note_a", plainTok},
		{"POST", "/api/diary", plainTok},
		{"POST", "/admin/reindex", adminTok},
		{"POST", "/ingest", plainTok},
		{"POST", "/ingest/remove", plainTok},
		{"POST", "/ingest/sources", plainTok},
	} {
		if resp, raw := f.do(route.method, route.path, route.token, ""); resp.StatusCode != 400 || !strings.Contains(raw, "the request body is empty") {
			t.Errorf("%s %s with no body: %d %s; want it refused as empty", route.method, route.path, resp.StatusCode, raw)
		}
	}
}

// Hostile search strings are searched as literals: never a 500, never SQL.
func TestHostileQueries(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("h.md", "Hostile", "", `He wrote ') OR 1=1 -- and NEAR( and "quotes" and * and ^ in one line.`)
	for _, q := range []string{`"`, `NEAR(`, `*`, `^`, `') OR 1=1 --`, `a AND OR NOT b`, `"unbalanced`, `col:value`, "\x00", `\`} {
		body, _ := json.Marshal(map[string]any{"query": q, "mode": "lexical"})
		resp, raw := f.do("POST", "/api/search", plainTok, string(body))
		if resp.StatusCode != 200 && resp.StatusCode != 400 {
			t.Errorf("query %q: %d %s", q, resp.StatusCode, raw)
		}
	}
	resp, raw := f.do("POST", "/api/search", plainTok, `{"query":"') OR 1=1 --","mode":"lexical"}`)
	if resp.StatusCode != 200 || !strings.Contains(raw, `"source":"h.md"`) {
		t.Errorf("the literal text was not found: %d %s", resp.StatusCode, raw)
	}
}

func TestRateLimitPerToken(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Rate = rate.Every(time.Hour); o.Burst = 3 })
	for i := range 3 {
		if resp, _ := f.do("GET", "/api/stats", plainTok, ""); resp.StatusCode != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, resp.StatusCode)
		}
	}
	resp, body := f.do("GET", "/api/stats", plainTok, "")
	if resp.StatusCode != 429 || !strings.Contains(body, "rate_limited") {
		t.Fatalf("burst+1: %d %s", resp.StatusCode, body)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Errorf("Retry-After %q is not a positive integer", resp.Header.Get("Retry-After"))
	}
	for _, tok := range []string{aliceTok, adminTok} {
		if resp, _ := f.do("GET", "/api/stats", tok, ""); resp.StatusCode != 200 {
			t.Errorf("another token was limited too: %d", resp.StatusCode)
		}
	}
	// MCP requests count against the same bucket.
	if _, err := f.dial(plainTok, f.hs.URL+"/mcp"); err == nil {
		t.Error("an MCP session opened past the rate limit")
	}
}

func TestBadTokensThrottled(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.BadTokenBurst = 5 })
	for i := range 5 {
		if resp, _ := f.do("GET", "/api/stats", fmt.Sprintf("%s-%d", wrongTok, i), ""); resp.StatusCode != 401 {
			t.Fatalf("wrong token %d: %d", i, resp.StatusCode)
		}
	}
	resp, _ := f.do("GET", "/api/stats", wrongTok, "")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("sixth wrong token: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Valid tokens from the same address (every client behind a reverse
	// proxy) are not locked out by someone else's wrong ones.
	for _, tok := range []string{plainTok, aliceTok, adminTok} {
		if resp, body := f.do("GET", "/api/stats", tok, ""); resp.StatusCode != 200 {
			t.Errorf("valid token after the address's wrong ones: %d %s", resp.StatusCode, body)
		}
	}
	if resp, _ := f.do("GET", "/api/stats", wrongTok, ""); resp.StatusCode != 429 {
		t.Errorf("wrong token after valid ones: %d, still throttled", resp.StatusCode)
	}
	// Ordinary traffic gets the normal limit: 1000 a second in the fixture.
	g := newFixture(t, nil)
	for i := range 20 {
		if resp, _ := g.do("GET", "/api/stats", plainTok, ""); resp.StatusCode != 200 {
			t.Fatalf("good request %d: %d", i, resp.StatusCode)
		}
	}
}

func TestBadTokenMemoryIsBounded(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBadTokens(rate.Every(time.Second), 2, 3, func() time.Time { return now })
	for i := range 100 {
		b.fail(fmt.Sprintf("10.0.0.%d", i))
	}
	if n := b.size(); n > 3 {
		t.Errorf("%d addresses tracked, cap 3", n)
	}
	// Past the cap, new addresses share one bucket, which they drained.
	if _, blocked := b.blocked("10.9.9.9"); !blocked {
		t.Error("an untracked address escaped the shared bucket")
	}
	now = now.Add(time.Hour)
	b.fail("10.1.1.1") // triggers a sweep of idle entries
	if n := b.size(); n != 1 {
		t.Errorf("after an hour %d addresses remain, want 1", n)
	}
	if _, blocked := b.blocked("10.0.0.1"); blocked {
		t.Error("a forgotten address is still blocked")
	}
}

// An IPv6 client holds a /64 and may send each guess from another address
// in it: its wrong tokens drain one bucket. IPv4 addresses (plain or
// mapped) keep one each.
func TestBadTokensShareAnIPv6Block(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBadTokens(rate.Every(time.Hour), 3, 100, func() time.Time { return now })
	for i := range 3 {
		b.fail(fmt.Sprintf("2001:db8:1:2::%x", i+1))
	}
	if _, blocked := b.blocked("2001:db8:1:2:ffff::9"); !blocked {
		t.Error("another address of the /64 that used up its wrong tokens is not throttled")
	}
	if _, blocked := b.blocked("2001:db8:1:3::1"); blocked {
		t.Error("an address of another /64 is throttled")
	}
	for i := range 3 {
		b.fail(fmt.Sprintf("192.0.2.%d", i+1))
	}
	if _, blocked := b.blocked("192.0.2.9"); blocked {
		t.Error("an IPv4 neighbour is throttled")
	}
	if _, blocked := b.blocked("::ffff:192.0.2.9"); blocked {
		t.Error("a mapped IPv4 neighbour is throttled")
	}
}

func TestMCPProtocolChecks(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.rawSession(plainTok)
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	resp, _ := f.do("POST", "/mcp", plainTok, list, append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 1999-01-01")...)
	if resp.StatusCode != 400 {
		t.Errorf("bad MCP-Protocol-Version: %d", resp.StatusCode)
	}
	resp, _ = f.do("GET", "/mcp", plainTok, "", "Accept: text/event-stream", "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: garbage")
	if resp.StatusCode != 400 {
		t.Errorf("bad MCP-Protocol-Version on GET: %d", resp.StatusCode)
	}
	resp, body := f.do("POST", "/mcp", plainTok, "  ["+list+"]", append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-11-25")...)
	if resp.StatusCode != 400 || !strings.Contains(body, "batches") {
		t.Errorf("batch: %d %s", resp.StatusCode, body)
	}
	resp, _ = f.do("POST", "/mcp", plainTok, "[]", mcpHeaders...)
	if resp.StatusCode != 400 {
		t.Errorf("empty batch without a session: %d", resp.StatusCode)
	}
	if status, body := f.rawCall(plainTok, sid, list); status != 200 || !strings.Contains(body, "search_archive") {
		t.Errorf("a valid call after the refusals: %d %s", status, body)
	}
}

// A search that runs out of its time budget is stopped, and the server
// answers other requests meanwhile.
func TestSearchTimeBudget(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("b.md", "B", "", "budget text")
	// serve returns a poster to a server whose engine's search budget is
	// 2 s, over an embedder that never answers (it waits until its caller
	// gives up), and a fresh breaker. The budget bounds the full-text
	// searches too: at 100 ms, a busy machine (race detector, one core)
	// ran the lexical one out of time.
	serve := func() func(body string) (int, string, time.Duration) {
		slow := embedtest.New(64)
		slow.Delay = time.Hour
		eng := search.New(f.st, search.Options{Embedder: slow, Budget: 2 * time.Second})
		if err := eng.LoadIndex(context.Background()); err != nil {
			t.Fatal(err)
		}
		srv, err := New(Options{Engine: eng, Memory: f.mem, Store: f.st, Tokens: []Token{{Name: "p", Secret: plainTok}}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		return func(body string) (int, string, time.Duration) {
			start := time.Now()
			req, _ := http.NewRequest("POST", hs.URL+"/api/search", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+plainTok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), time.Since(start)
		}
	}
	post := serve()
	done := make(chan string)
	go func() {
		status, body, took := post(`{"query":"budget","mode":"semantic"}`)
		done <- fmt.Sprintf("%d %s %v", status, body, took)
	}()
	status, body, took := post(`{"query":"budget","mode":"lexical"}`)
	if status != 200 || !strings.Contains(body, "b.md") {
		t.Errorf("lexical search during a slow one: %d %s in %v", status, body, took)
	}
	if got := <-done; !strings.HasPrefix(got, "503 ") || !strings.Contains(got, "semantic search is unavailable: the query embedder did not answer in time") {
		t.Errorf("semantic search past its budget: %s", got)
	}
	// Hybrid, the embedder tried afresh, stops waiting for it before the
	// budget runs out and answers from full text in the time it kept
	// (waiting to the end left it none, and the client an error).
	status, body, _ = serve()(`{"query":"budget"}`)
	var r recall.SearchResponse
	if err := json.Unmarshal([]byte(body), &r); status != 200 || err != nil || r.Mode != recall.ModeLexical || len(r.Results) != 1 || r.Results[0].Source != "b.md" {
		t.Errorf("hybrid search past its budget: %d %s; want full text, b.md", status, body)
	}
}

// A refused input is not echoed back whole: the SDK's validation message
// quotes the value, here 100,000 characters of it.
func TestToolErrorsAreShort(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(aliceTok)
	long := strings.Repeat("é", 50000)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"search_archive", map[string]any{"query": long}},
		{"save_memory", map[string]any{"key": long, "value": "v"}},
		{"get_context", map[string]any{"source": long, "chunk_index": 0}},
	} {
		res := call(t, cs, tc.tool, tc.args)
		text := resultText(res)
		if !res.IsError || len(text) > 600 || !utf8.ValidString(text) {
			t.Errorf("%s: error %v, %d bytes, valid UTF-8 %v", tc.tool, res.IsError, len(text), utf8.ValidString(text))
		}
	}
	// An unknown tool is a JSON-RPC error (the SDK answers it with a nil
	// result, which must not crash the server), also cut short.
	for _, name := range []string{"no_such_tool", strings.Repeat("n", 100000)} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil || len(err.Error()) > 700 {
			t.Errorf("unknown tool %.20s: %v", name, err)
		}
	}
	if res := call(t, cs, "search_archive", map[string]any{"query": "still answering"}); res.IsError {
		t.Errorf("the server stopped answering: %s", resultText(res))
	}
}

// A panic while handling one request becomes that request's internal error:
// the SDK's goroutines would otherwise take the whole process down.
func TestPanicInRequestIsContained(t *testing.T) {
	f := newFixture(t, nil)
	h := f.srv.recoverPanics(func(context.Context, string, mcp.Request) (mcp.Result, error) { panic("boom") })
	res, err := h(t.Context(), "tools/call", nil)
	if res != nil || err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("got %v, %v", res, err)
	}
	if !strings.Contains(f.logs.String(), "boom") {
		t.Error("the panic was not logged")
	}
}

// One token runs at most searchesPerToken searches at once, so that a
// client firing costly searches in parallel cannot hold every read
// connection of the store: a further search of that token waits for a turn,
// and another token's search does not wait at all.
func TestSearchesPerToken(t *testing.T) {
	f := newFixture(t, nil)
	a := caller{id: &identity{name: "a", key: "key-a"}}
	b := caller{id: &identity{name: "b", key: "key-b"}}
	var ends []func()
	for range searchesPerToken {
		end, err := f.srv.searchTurn(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.srv.searchTurn(ctx, a); err == nil {
		t.Fatalf("token a got a turn beyond %d searches at once", searchesPerToken)
	}
	endB, err := f.srv.searchTurn(t.Context(), b)
	if err != nil {
		t.Fatalf("token b waited behind token a: %v", err)
	}
	endB()
	got := make(chan error, 1)
	go func() {
		end, err := f.srv.searchTurn(t.Context(), a)
		if err == nil {
			end()
		}
		got <- err
	}()
	ends[0]()
	if err := <-got; err != nil {
		t.Errorf("token a's waiting search did not get the turn one gave back: %v", err)
	}
	ends[1]()
}

// Searches on the store's full text (a quoted phrase) take their turn:
// while a token's turns are all taken, its next one waits, and answers once
// a turn is given back.
func TestSearchWaitsForItsTurn(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("a.md", "A", "2025-01", "the heron stood in the shallows")
	id := f.srv.keys.lookup(plainTok)
	if id == nil {
		t.Fatal("no identity for the plain token")
	}
	var ends []func()
	for range searchesPerToken {
		end, err := f.srv.searchTurn(t.Context(), caller{id: id})
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	done := make(chan int, 1)
	go func() {
		resp, _ := f.do("POST", "/api/search", plainTok, `{"query":"\"heron stood\""}`)
		done <- resp.StatusCode
	}()
	select {
	case code := <-done:
		t.Fatalf("the search answered %d while its token had no turn", code)
	case <-time.After(200 * time.Millisecond):
	}
	for _, end := range ends {
		end()
	}
	if code := <-done; code != 200 {
		t.Errorf("the search answered %d once it had its turn", code)
	}
}

// A request whose declared body never arrives is answered, and its
// connection let go, whether it is refused before its body is read (no
// token: net/http would wait to discard the body) or times out reading it.
func TestUnsentBodiesDoNotHoldConnections(t *testing.T) {
	f := newFixture(t, nil)
	ln, err := f.srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.srv.Serve(ctx, ln)
	for _, c := range []struct {
		name, head string
		status     int
	}{
		{"refused before the body", "POST /api/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"q", http.StatusUnauthorized},
		{"health check with a body", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nab", http.StatusOK},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(c.head))
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", c.name, err)
		}
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
		io.Copy(io.Discard, resp.Body)
		// The server closes the connection rather than wait for the rest.
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: the connection stays open after the answer (%v)", c.name, err)
		}
		conn.Close()
	}
}

// A message other than initialize (or ping, which may precede it) that
// comes without a session id gets 400 Bad Request with a JSON-RPC error naming it, as Streamable HTTP asks
// of a server that requires session ids; the SDK opened a session for the
// message alone and answered 200 with an error of code 0. The requests of
// the revision without sessions are still answered by the SDK, whose
// answers clients fall back to initialize on.
func TestMCPMessagesWithoutASession(t *testing.T) {
	f := newFixture(t, nil)
	type rpcErr struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, tc := range []struct {
		body   string
		wantID any
	}{
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, 3.0},
		{`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"search_archive","arguments":{"query":"x"}}}`, "c"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
		{`{"jsonrpc":"2.0","id":"s1","result":{}}`, nil},
	} {
		for _, version := range []string{"", "2025-11-25", "2024-11-05"} {
			headers := mcpHeaders
			if version != "" {
				headers = append(headers, "Mcp-Protocol-Version: "+version)
			}
			resp, body := f.do("POST", "/mcp", plainTok, tc.body, headers...)
			var e rpcErr
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil ||
				e.ID != tc.wantID || e.Error.Code != -32600 || !strings.Contains(e.Error.Message, "Mcp-Session-Id") {
				t.Errorf("%s (version %q) without a session: %d %s; want 400, id %v, code -32600", tc.body, version, resp.StatusCode, body, tc.wantID)
			}
		}
	}
	// ping may come before initialize, so without a session: it is
	// answered, and leaves none open.
	resp, body := f.do("POST", "/mcp", plainTok, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, mcpHeaders...)
	if resp.StatusCode != 200 || !strings.Contains(sseData(body), `"result":{}`) {
		t.Errorf("ping without a session: %d %s", resp.StatusCode, body)
	}
	if n := f.srv.sessionCount(); n != 0 {
		t.Errorf("%d sessions open after the refusals", n)
	}

	// initialize opens a session as before.
	sid := f.rawSession(plainTok)
	if status, body := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); status != 200 || !strings.Contains(body, `"result":{}`) {
		t.Errorf("ping in the session: %d %s", status, body)
	}

	// server/discover, the probe of protocol 2026-07-28, is answered: it
	// lists the revisions this server speaks over HTTP.
	modern := append(mcpHeaders, "Mcp-Protocol-Version: 2026-07-28")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	resp, body = f.do("POST", "/mcp", plainTok, `{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{`+meta+`}}`,
		append(modern, "Mcp-Method: server/discover")...)
	if resp.StatusCode != 200 || !strings.Contains(sseData(body), `"supportedVersions":["2025-11-25"`) {
		t.Errorf("server/discover: %d %s", resp.StatusCode, body)
	}
	// A request of that revision is refused with the code that makes a
	// client fall back to initialize, and the versions it may use.
	resp, body = f.do("POST", "/mcp", plainTok, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{`+meta+`}}`,
		append(modern, "Mcp-Method: tools/list")...)
	var e rpcErr
	if json.Unmarshal([]byte(sseData(body)), &e) != nil || e.Error.Code != -32022 {
		t.Errorf("tools/list as 2026-07-28: %d %s; want error -32022", resp.StatusCode, body)
	}
}
