package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/remote"
)

// Clients using identical JSON-RPC ids at the same time each get their own
// answer: eight sessions (two per token), every request with id 1.
func TestIdenticalIDsDoNotCrossTalk(t *testing.T) {
	f := newFixture(t, nil)
	tokens := []string{aliceTok, bobTok, plainTok, adminTok}
	type client struct {
		token, sid, word string
	}
	var clients []client
	for i := range 8 {
		tok := tokens[i%len(tokens)]
		word := fmt.Sprintf("zebra%dquokka", i)
		f.save(map[string]string{aliceTok: "alice", bobTok: "bob"}[tok], fmt.Sprintf("note_%d", i), "the "+word+" lives here")
		clients = append(clients, client{tok, f.rawSession(tok), word})
	}
	rounds := 15
	if testing.Short() {
		rounds = 4
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(clients)*rounds)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_archive","arguments":{"query":%q,"mode":"lexical"}}}`, c.word)
				req, _ := http.NewRequest("POST", f.hs.URL+"/mcp", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+c.token)
				req.Header.Set("Mcp-Session-Id", c.sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				raw := make([]byte, 1<<20)
				n, _ := readAll(resp, raw)
				payload := sseData(string(raw[:n]))
				var msg struct {
					ID     int `json:"id"`
					Result struct {
						Structured struct {
							Query string `json:"query"`
						} `json:"structuredContent"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(payload), &msg); err != nil || msg.ID != 1 || msg.Result.Structured.Query != c.word {
					errs <- fmt.Sprintf("client %s got %s", c.word, payload)
					return
				}
				if strings.Count(payload, "quokka") != strings.Count(payload, c.word) {
					errs <- fmt.Sprintf("client %s saw another client's text: %s", c.word, payload)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func readAll(resp *http.Response, buf []byte) (int, error) {
	defer resp.Body.Close()
	n := 0
	for n < len(buf) {
		m, err := resp.Body.Read(buf[n:])
		n += m
		if err != nil {
			return n, nil
		}
	}
	return n, nil
}

// Clients that vanish mid-request neither crash nor wedge the server, and
// leave no goroutines behind.
func TestAbruptDisconnects(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("a.md", "A", "", "some searchable text about lanterns")
	sid := f.rawSession(plainTok)
	base := runtime.NumGoroutine()
	addr := strings.TrimPrefix(f.hs.URL, "http://")
	send := func(raw string, readFirst bool) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(raw))
		if readFirst {
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			c.Read(make([]byte, 10))
		}
		c.Close()
	}
	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_archive","arguments":{"query":"lanterns"}}}`
	head := func(body string, length int) string {
		return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\n"+
			"Mcp-Protocol-Version: 2025-11-25\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Content-Length: %d\r\n\r\n%s", plainTok, sid, length, body)
	}
	f.emb.Delay = 100 * time.Millisecond // the search is still running when the client goes; set before any concurrent use
	for range 5 {
		send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le", false)     // headers cut short
		send(head(call[:20], len(call)), false)                                // body cut short
		send(head(call, len(call)), false)                                     // gone before the answer
		send(head(call, len(call)), true)                                      // gone while the answer streams
		send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+ // event stream dropped
			plainTok+"\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+sid+"\r\n\r\n", true)
	}
	if status, body := f.rawCall(plainTok, sid, strings.Replace(call, `"id":9`, `"id":10`, 1)); status != 200 || !strings.Contains(body, "lanterns") {
		t.Fatalf("the server stopped answering: %d %s", status, body)
	}
	// The abandoned calls finish and release their request id. (The
	// limits only bound a wedged server's test: on a busy machine under the
	// race detector they may take seconds, and are waited for.)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, body := f.rawCall(plainTok, sid, call)
		if status == 200 && strings.Contains(body, "lanterns") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("abandoned requests never finished: %d %s", status, body)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base+8 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+8 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines, %d before the disconnects:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// Stored text cannot change what the server tells clients about its tools.
func TestToolsListUnchangedByStoredText(t *testing.T) {
	f := newFixture(t, nil)
	list := `{"jsonrpc":"2.0","id":42,"method":"tools/list"}`
	sid := f.rawSession(plainTok)
	_, before := f.rawCall(plainTok, sid, list)
	injection, err := os.ReadFile("testdata/injection.md")
	if err != nil {
		t.Fatal(err)
	}
	var chunks []remote.IngestChunk
	for i, part := range strings.Split(string(injection), "\n\n") {
		chunks = append(chunks, remote.IngestChunk{SourceFile: fmt.Sprintf("evil/%d.md", i), TotalChunks: 1, Content: part})
	}
	if status, out, body := f.ingest(plainTok, chunks...); status != 200 || out.Sources[0].Status != remote.StatusWritten {
		t.Fatalf("ingest: %d %s", status, body)
	}
	f.save("", "note_injection", strings.SplitN(string(injection), "\n\n", 2)[0])
	_, after := f.rawCall(plainTok, sid, list)
	if before != after || !strings.Contains(before, "search_archive") {
		t.Errorf("tools/list changed:\nbefore %s\nafter  %s", before, after)
	}
	// And the injected text comes back escaped and quoted.
	out, res := mustCall[struct {
		Results []struct{ Text string } `json:"results"`
	}](t, f.connect(plainTok), "search_archive", map[string]any{"query": "ignore previous instructions", "limit": 20})
	if len(out.Results) == 0 {
		t.Fatal("the injected text was not found")
	}
	for _, h := range out.Results {
		if strings.ContainsAny(h.Text, "\u202e\u200b\x1b\U000E0041") {
			t.Errorf("structured output carries a hidden character: %q", h.Text)
		}
	}
	text := resultText(res)
	if strings.ContainsAny(text, "\u202e\u200b\x1b\U000E0041") || !strings.Contains(text, `\u202e`) {
		t.Errorf("readable output is not escaped:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		for _, stored := range []string{"SYSTEM NOTICE", "trusted.md", "pretends to be", "Assistant:", "terminal escapes"} {
			if strings.Contains(line, stored) && !strings.HasPrefix(line, passagePrefix) {
				t.Errorf("stored text outside a quoted line: %q", line)
			}
		}
	}
}

// fileSum is the sha256 of the database and its write-ahead log.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// settledSum is fileSum once the background checkpoint of the writes
// before it has run: a checkpoint copies pages from the log into the
// database file at most every half second after a commit (see the sqlite
// store's checkpointer), changing the files' bytes but not their content.
func settledSum(t *testing.T, path string) string {
	t.Helper()
	sum := fileSum(t, path)
	for range 20 {
		time.Sleep(700 * time.Millisecond)
		next := fileSum(t, path)
		if next == sum {
			return sum
		}
		sum = next
	}
	t.Fatal("the database files never settled")
	return ""
}

// Read-only tools and endpoints change nothing on disk.
func TestReadOnlyToolsChangeNothing(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("r.md", "Read", "2025-03", "a passage about copper kettles", "and another about tin cups")
	f.save("alice", "note_r", "alice's note about copper")
	if _, err := f.mem.WriteDiary(t.Context(), "a diary line about copper", "2025-03-02", "", false, memoryScope("alice")); err != nil {
		t.Fatal(err)
	}
	before := settledSum(t, f.st.Path())
	admin, alice := f.connect(adminTok), f.connect(aliceTok)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"search_archive", map[string]any{"query": "copper"}},
		{"search_archive", map[string]any{"query": "copper", "mode": "semantic"}},
		{"get_context", map[string]any{"source": "r.md", "chunk_index": 0, "radius": 3}},
		{"get_archive_stats", map[string]any{}},
		{"read_memory", map[string]any{"key": "note_r"}},
		{"find_memories", map[string]any{"prefix": "note_"}},
		{"read_diary", map[string]any{"date": "2025-03-02"}},
		{"recent_diary", map[string]any{"days": 30}},
		{"list_memories", map[string]any{}},
		{"memory_index_status", map[string]any{}},
	} {
		cs := alice
		if isAdminTool(tc.tool) {
			cs = admin
		}
		if res := call(t, cs, tc.tool, tc.args); res.IsError {
			t.Errorf("%s: %s", tc.tool, resultText(res))
		}
	}
	for _, p := range []string{"/api/stats", "/api/memories/note_r", "/api/memories?prefix=note_", "/api/diary?days=30", "/metrics"} {
		tok := aliceTok
		if p == "/metrics" { // refused to a bound token
			tok = plainTok
		}
		if resp, body := f.do("GET", p, tok, ""); resp.StatusCode != 200 {
			t.Errorf("GET %s: %d %s", p, resp.StatusCode, body)
		}
	}
	if after := settledSum(t, f.st.Path()); after != before {
		t.Errorf("read-only calls changed the database: %s -> %s", before, after)
	}
	// The check can fail: a write does change the checksum.
	f.save("alice", "note_w", "written")
	if fileSum(t, f.st.Path()) == before {
		t.Error("a write left the checksum unchanged: the check is blind")
	}
}

// FuzzMCP posts arbitrary bodies to /mcp, with and without a session: the
// server answers every one without a 5xx (other than the session cap) and
// stays usable.
func FuzzMCP(f *testing.F) {
	for _, s := range []string{
		initBody,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"search_archive","arguments":{"query":"a"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"save_memory","arguments":{"key":"k","value":"v"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"repair_archive","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"get_context","arguments":{"source":"","chunk_index":-1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"1.0","id":{},"method":7}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{`, ``, `null`, `"str"`, `{"id":1e999}`,
	} {
		f.Add(s)
	}
	fx := newFixture(f, nil)
	sid := fx.rawSession(plainTok)
	f.Fuzz(func(t *testing.T, body string) {
		for _, withSession := range []bool{false, true} {
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
			req.Host = "127.0.0.1"
			req.Header.Set("Authorization", "Bearer "+plainTok)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if withSession {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			}
			rec := httptest.NewRecorder()
			fx.srv.ServeHTTP(rec, req)
			if rec.Code >= 500 && !strings.Contains(rec.Body.String(), "too many open MCP sessions") {
				t.Fatalf("%q (session %v): %d %s", body, withSession, rec.Code, rec.Body.String())
			}
		}
	})
}

// A path that is not clean ("x/./y", "a//b") is refused, not redirected:
// a client following the mux's redirect keeps the method, so a PUT or
// DELETE naming one memory would reach another.
func TestUncleanPathsAreRefused(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if _, err := f.mem.Save(ctx, memory.SaveRequest{Key: "x/y", Value: "the other memory"}, memory.Scope{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/memories/x/./y", `{"value": "meant for x/./y"}`},
		{"PUT", "/api/memories/x//y", `{"value": "meant for x//y"}`},
		{"DELETE", "/api/memories/x/./y?confirm=true", ""},
		{"DELETE", "/api/memories/z/../x/y?confirm=true", ""},
		{"GET", "/api//stats", ""},
	} {
		resp, body := f.do(c.method, c.path, plainTok, c.body)
		if resp.StatusCode != http.StatusBadRequest || resp.Request.URL.Path != strings.Split(c.path, "?")[0] {
			t.Errorf("%s %s: %d at %s %s; want 400, not redirected", c.method, c.path, resp.StatusCode, resp.Request.URL.Path, body)
		}
	}
	if m, err := f.mem.Read(ctx, "x/y", "", memory.Scope{}); err != nil || m.Value != "the other memory" {
		t.Errorf("memory x/y after requests naming other paths: %+v %v", m, err)
	}
	if resp, body := f.do("GET", "/api/memories/x/y", plainTok, ""); resp.StatusCode != 200 {
		t.Errorf("a clean path: %d %s", resp.StatusCode, body)
	}
}

// Messages the SDK would misread or answer with its Go types' names are
// refused at the front door, briefly, and the session goes on.
func TestMalformedMCPMessages(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.rawSession(plainTok)
	for _, c := range []struct{ body, want string }{
		{`"x"`, "not a JSON-RPC message"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "the id must be a string or an integer"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "the id must be a string or an integer"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":"str"}`, "params must be an object"},
	} {
		status, body := f.rawCall(plainTok, sid, c.body)
		if !strings.Contains(body, c.want) || strings.Contains(body, "Go value") || strings.Contains(body, "map[") {
			t.Errorf("%s: %d %s; want %q", c.body, status, body, c.want)
		}
	}
	if status, body := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != 200 || !strings.Contains(body, `"id":9`) {
		t.Errorf("the session after the refusals: %d %s", status, body)
	}
}

// A search whose query cannot be embedded answers from full text with a
// note that gives no reason (it may name the embedder's address); the
// server's log gives it, and never the query.
func TestEmbedFailureIsLogged(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("a.md", "A", "2025-01-01", "the lighthouse keeper's log")
	f.emb.FailOn(0, embedtest.FaultError)
	resp, body := f.do("POST", "/api/search", plainTok, `{"query": "lighthouse keeper"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "searched full text only") {
		t.Fatalf("search: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(body, "injected failure") {
		t.Errorf("the client is told the embedder's error: %s", body)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "the query could not be embedded") || !strings.Contains(logs, "injected failure") {
		t.Errorf("the log does not say why the query could not be embedded:\n%s", logs)
	}
	if strings.Contains(logs, "lighthouse keeper") {
		t.Errorf("the log holds the query:\n%s", logs)
	}
}
