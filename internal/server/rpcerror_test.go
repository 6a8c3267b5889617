package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// rpcError is a JSON-RPC error answer, read strictly.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
}

func readRPCError(t *testing.T, what, body string) rpcError {
	t.Helper()
	var e rpcError
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.JSONRPC != "2.0" || e.Error.Code == 0 || e.Error.Message == "" || e.ID == nil {
		t.Fatalf("%s: body %s is no JSON-RPC error (%v)", what, body, err)
	}
	return e
}

// Every refusal of a request to /mcp is a JSON-RPC error, with the status
// and headers the refusal had: whoever refuses it (the front door,
// serveMCP or the SDK).
func TestMCPRefusalsAreJSONRPCErrors(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.rawSession(plainTok)
	inSession := append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-11-25")
	list := `{"jsonrpc":"2.0","id":41,"method":"tools/list"}`
	for _, c := range []struct {
		name, method, token, body string
		headers                   []string
		status                    int
		id                        string // the answer's id, as JSON
		rpc                       int
		code, says, header        string // header must be set
	}{
		{"no token", "POST", "", list, mcpHeaders, 401, "null", rpcUnauthorized, "unauthorized", "needs a token", "WWW-Authenticate"},
		{"wrong token", "POST", wrongTok, list, mcpHeaders, 401, "null", rpcUnauthorized, "unauthorized", "not valid", "WWW-Authenticate"},
		{"bad origin", "POST", plainTok, list, append(mcpHeaders, "Origin: https://evil.example"), 403, "null", rpcForbidden, "forbidden", "Origin", ""},
		{"too large", "POST", plainTok, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", maxCallBody) + `"}}`, mcpHeaders, 413, "null", -32600, "too_large", "byte limit", ""},
		{"unknown session", "POST", plainTok, list, append(mcpHeaders, "Mcp-Session-Id: NOSUCHSESSION", "Mcp-Protocol-Version: 2025-11-25"), 404, "41", rpcNotFound, "not_found", "initialize", ""},
		{"another token's session", "POST", aliceTok, list, inSession, 403, "41", rpcForbidden, "forbidden", "another token", ""},
		{"bad protocol version", "POST", plainTok, list, append(mcpHeaders, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 1999-01-01"), 400, "null", -32600, "invalid", "MCP-Protocol-Version", ""},
		{"not JSON", "POST", plainTok, `{"jsonrpc":`, inSession, 400, "null", -32700, "invalid", "JSON object", ""},
		{"batch", "POST", plainTok, "[" + list + "]", inSession, 400, "null", -32600, "invalid", "batches", ""},
		{"get without session", "GET", plainTok, "", []string{"Accept: text/event-stream"}, 400, "null", -32600, "invalid", "Mcp-Session-Id", ""},
	} {
		resp, body := f.do(c.method, "/mcp", c.token, c.body, c.headers...)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d; want %d (%s)", c.name, resp.StatusCode, c.status, body)
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q; want application/json", c.name, ct)
		}
		e := readRPCError(t, c.name, body)
		if string(e.ID) != c.id || e.Error.Code != c.rpc || e.Error.Data.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%s: id %s, code %d, data %q, message %q; want id %s, code %d, data %q, a message saying %q", c.name, e.ID, e.Error.Code, e.Error.Data.Code, e.Error.Message, c.id, c.rpc, c.code, c.says)
		}
		if c.header != "" && resp.Header.Get(c.header) == "" {
			t.Errorf("%s: no %s header", c.name, c.header)
		}
	}
	// The session goes on after them.
	if status, body := f.rawCall(plainTok, sid, list); status != 200 || !strings.Contains(body, "search_archive") {
		t.Fatalf("the session after the refusals: %d %s", status, body)
	}
	// The REST API keeps its own shape.
	resp, body := f.do("POST", "/api/search", "", `{"query":"x"}`)
	var rest errorBody
	if resp.StatusCode != 401 || json.Unmarshal([]byte(body), &rest) != nil || rest.Error.Code != "unauthorized" {
		t.Errorf("REST refusal: %d %s; want 401 in the REST shape", resp.StatusCode, body)
	}
}

// The rate limit's refusal on /mcp is a JSON-RPC error with its
// Retry-After header.
func TestMCPRateLimitIsJSONRPCError(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Rate, o.Burst = rate.Every(time.Hour), 1 })
	f.do("POST", "/mcp", plainTok, initBody, mcpHeaders...)
	resp, body := f.do("POST", "/mcp", plainTok, initBody, mcpHeaders...)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the rate: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if e := readRPCError(t, "rate limit", body); e.Error.Code != rpcRateLimited || !strings.Contains(e.Error.Message, "Retry-After") {
		t.Errorf("rate limit: %+v; want code %d and a message saying to wait Retry-After", e.Error, rpcRateLimited)
	}
}

// The Go SDK's client shows what the server said when the refusal names
// its request: a session the server no longer has is reported in its
// words. (A refusal before the body is read, such as a wrong token, has id
// null, as Streamable HTTP allows; the Go client then shows the status.)
func TestMCPClientSeesRefusalMessages(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(plainTok)
	f.srv.closeSession(cs.ID())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_archive_stats", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "send initialize without the header to open a new one") {
		t.Errorf("a call in a session the server closed: %v; want the server's message", err)
	}
}
