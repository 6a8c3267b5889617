package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

type route struct {
	method, path, body string
	admin              bool
	mcp                bool
}

// routes is every endpoint behind authentication.
var allRoutes = []route{
	{"POST", "/mcp", initBody, false, true},
	{"GET", "/metrics", "", false, false},
	{"POST", "/ingest", `{"chunks":[{"source_file":"a.md","chunk_index":0,"total_chunks":1,"content":"hello"}]}`, false, false},
	{"POST", "/api/search", `{"query":"hello"}`, false, false},
	{"POST", "/api/context", `{"source":"a.md","chunk_index":0}`, false, false},
	{"GET", "/api/stats", "", false, false},
	{"PUT", "/api/memories/note_k", `{"value":"v"}`, false, false},
	{"GET", "/api/memories/note_k", "", false, false},
	{"GET", "/api/memories?prefix=note_", "", false, false},
	{"DELETE", "/api/memories/note_k?confirm=true", "", false, false},
	{"POST", "/api/diary", `{"text":"t","date":"2025-01-01"}`, false, false},
	{"GET", "/api/diary/2025-01-01", "", false, false},
	{"GET", "/api/diary?days=3", "", false, false},
	{"GET", "/admin/memories", "", true, false},
	{"POST", "/admin/reindex", `{"key":"note_k"}`, true, false},
	{"GET", "/admin/index-status", "", true, false},
	{"POST", "/admin/repair", `{"max_texts":1}`, true, false},
}

func (r route) headers() []string {
	if r.mcp {
		return mcpHeaders
	}
	return nil
}

// TestAuthMatrix sends every route every kind of credential.
func TestAuthMatrix(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.CORSOrigins = []string{"https://app.example"} })
	for _, rt := range allRoutes {
		name := rt.method + " " + rt.path
		for _, tc := range []struct {
			name    string
			token   string
			headers []string
			want    int // 0: neither 401 nor 403
		}{
			{"no token", "", nil, 401},
			{"wrong token", wrongTok, nil, 401},
			{"short token", "short", nil, 401},
			{"basic auth", "", []string{"Authorization: Basic dXNlcjpwYXNz"}, 401},
			{"user", plainTok, nil, map[bool]int{true: 403, false: 0}[rt.admin]},
			{"bound user", aliceTok, nil, map[bool]int{true: 403, false: 0}[rt.admin || rt.path == "/ingest" || rt.path == "/metrics"]},
			{"admin", adminTok, nil, 0},
			{"foreign origin", adminTok, []string{"Origin: https://evil.example"}, 403},
			{"null origin", adminTok, []string{"Origin: null"}, 403},
			{"allowed origin", adminTok, []string{"Origin: https://app.example"}, 0},
			{"rebinding host", adminTok, []string{"Host: evil.example:8787"}, 403},
			{"query token", "", []string{}, 401},
		} {
			path := rt.path
			if tc.name == "query token" {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				path += sep + "access_token=" + adminTok
			}
			resp, body := f.do(rt.method, path, tc.token, rt.body, append(rt.headers(), tc.headers...)...)
			got := resp.StatusCode
			switch {
			case tc.want == 0 && (got == 401 || got == 403 || got >= 500):
				t.Errorf("%s with %s: %d %s", name, tc.name, got, body)
			case tc.want != 0 && got != tc.want:
				t.Errorf("%s with %s: %d, want %d (%s)", name, tc.name, got, tc.want, body)
			}
			if got == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s with %s: 401 without WWW-Authenticate: Bearer", name, tc.name)
			}
			acao := resp.Header.Get("Access-Control-Allow-Origin")
			switch {
			case tc.name == "allowed origin" && acao != "https://app.example":
				t.Errorf("%s: allowed origin got Access-Control-Allow-Origin %q", name, acao)
			case tc.name != "allowed origin" && acao != "":
				t.Errorf("%s with %s: Access-Control-Allow-Origin %q", name, tc.name, acao)
			}
			if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Errorf("%s: credentials mode must not be enabled", name)
			}
		}
	}
}

func TestHealthzNeedsNoTokenAndSaysNothing(t *testing.T) {
	f := newFixture(t, nil)
	resp, body := f.do("GET", "/healthz", "", "")
	if resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
	if resp, _ := f.do("GET", "/healthz", "", "", "Host: evil.example"); resp.StatusCode != 403 {
		t.Errorf("healthz with a rebinding Host: %d", resp.StatusCode)
	}
}

func TestPreflight(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.CORSOrigins = []string{"https://app.example"} })
	resp, _ := f.do("OPTIONS", "/mcp", "", "", "Origin: https://app.example", "Access-Control-Request-Method: POST")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = f.do("OPTIONS", "/mcp", "", "", "Origin: https://evil.example", "Access-Control-Request-Method: POST")
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := New(Options{Engine: f.eng, Memory: f.mem, Store: f.st, CORSOrigins: []string{"*"}}); err == nil {
		t.Error("a * CORS origin was accepted")
	}
}

// The Origin and Host checks come first on the routes TestAuthMatrix does
// not walk: a session's event stream (GET /mcp) and its end (DELETE
// /mcp), the token-in-path route, /ingest/remove and /ingest/sources, and
// /healthz and /readyz, which need no token. A refused DELETE leaves the
// session open.
func TestOriginAndHostOnEveryRoute(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AllowPathToken = true })
	sid := f.rawSession(plainTok)
	stream := []string{"Accept: text/event-stream", "Mcp-Session-Id: " + sid}
	routes := []struct {
		method, path, token, body string
		headers                   []string
	}{
		{"GET", "/mcp", plainTok, "", stream},
		{"DELETE", "/mcp", plainTok, "", []string{"Mcp-Session-Id: " + sid}},
		{"POST", "/mcp/" + plainTok, "", initBody, mcpHeaders},
		{"POST", "/ingest/remove", plainTok, `{"sources":["a.md"]}`, nil},
		{"POST", "/ingest/sources", plainTok, `{"file":"a.md"}`, nil},
		{"GET", "/healthz", "", "", nil},
		{"GET", "/readyz", "", "", nil},
	}
	for _, rt := range routes {
		for _, bad := range []string{"Origin: https://evil.example", "Origin: null", "Host: evil.example", "Host: 0.0.0.0:8787", "Host: 127.0.0.1.evil.example"} {
			// The answer's head alone: an event stream let through would
			// not end.
			req, _ := http.NewRequest(rt.method, f.hs.URL+rt.path, strings.NewReader(rt.body))
			if rt.token != "" {
				req.Header.Set("Authorization", "Bearer "+rt.token)
			}
			for _, h := range append(slices.Clone(rt.headers), bad) {
				k, v, _ := strings.Cut(h, ": ")
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s %.12s with %s: %d %v", rt.method, rt.path, bad, resp.StatusCode, resp.Header)
			}
		}
	}
	if status, _ := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusOK {
		t.Errorf("the session after refused requests for its stream and its end: %d", status)
	}
}

// Every tool, called by every role: admin tools refuse user tokens even
// when called without being listed; user tools serve both roles.
func TestToolAuthMatrix(t *testing.T) {
	f := newFixture(t, nil)
	args := map[string]string{
		"search_archive": `{"query":"x"}`, "get_context": `{"source":"a.md","chunk_index":0}`, "get_archive_stats": `{}`,
		"save_memory": `{"key":"note_k","value":"v"}`, "read_memory": `{"key":"note_k"}`,
		"delete_memory": `{"key":"note_k","confirm":true}`, "find_memories": `{"prefix":"note_"}`,
		"write_diary": `{"text":"t"}`, "read_diary": `{"date":"2025-01-01"}`, "recent_diary": `{}`,
		"repair_archive": `{"max_texts":1}`, "list_memories": `{}`, "reindex_memory": `{"key":"note_k"}`, "memory_index_status": `{}`,
	}
	if len(args) != len(userTools)+len(adminTools) {
		t.Fatalf("the matrix covers %d tools; there are %d", len(args), len(userTools)+len(adminTools))
	}
	user, admin := f.rawSession(plainTok), f.rawSession(adminTok)
	for tool, a := range args {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, a)
		status, payload := f.rawCall(plainTok, user, body)
		if isAdminTool(tool) {
			if status != http.StatusForbidden || !strings.Contains(payload, "needs the admin token") || !strings.Contains(payload, `"id":7`) {
				t.Errorf("user calling %s: %d %s", tool, status, payload)
			}
		} else if status != 200 || !strings.Contains(payload, `"result"`) {
			t.Errorf("user calling %s: %d %s", tool, status, payload)
		}
		if status, payload := f.rawCall(adminTok, admin, body); status != 200 || !strings.Contains(payload, `"result"`) {
			t.Errorf("admin calling %s: %d %s", tool, status, payload)
		}
	}
}

// The front door reads a tool call's name as the SDK does, by its exact
// key: a case variant beside it neither hides an admin tool from the check
// nor names another tool in the audit.
func TestAdminCheckReadsTheNameTheSDKReads(t *testing.T) {
	f := newFixture(t, nil)
	user := f.rawSession(plainTok)
	body := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_memories","Name":"search_archive","arguments":{}}}`
	if status, payload := f.rawCall(plainTok, user, body); status != http.StatusForbidden || !strings.Contains(payload, "list_memories needs the admin token") {
		t.Errorf("an admin tool named beside a case variant: %d %s", status, payload)
	}
	body = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"NAME":"list_memories","name":"search_archive","arguments":{"query":"x"}}}`
	if status, payload := f.rawCall(plainTok, user, body); status != 200 || !strings.Contains(payload, `"result"`) {
		t.Errorf("a user tool named beside a case variant of an admin one: %d %s", status, payload)
	}
}

// A session id never stands in for a token.
func TestSessionBoundToToken(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.rawSession(aliceTok)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if status, _ := f.rawCall(aliceTok, sid, list); status != 200 {
		t.Fatalf("owner of the session: %d", status)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{bobTok, 403}, {adminTok, 403}, {plainTok, 403}, {"", 401}, {wrongTok, 401}} {
		if status, body := f.rawCall(tc.token, sid, list); status != tc.want {
			t.Errorf("session of alice with token %.5q: %d, want %d (%s)", tc.token, status, tc.want, body)
		}
	}
}

func TestPathToken(t *testing.T) {
	off := newFixture(t, nil)
	resp, body := off.do("POST", "/mcp/"+plainTok, "", initBody, mcpHeaders...)
	if resp.StatusCode != 401 || !strings.Contains(body, "--allow-path-token") {
		t.Errorf("path token while disabled: %d %s", resp.StatusCode, body)
	}

	on := newFixture(t, func(o *Options) { o.AllowPathToken = true })
	if _, err := on.dial("", on.hs.URL+"/mcp/"+plainTok); err != nil {
		t.Errorf("path token while enabled: %v", err)
	}
	if resp, _ := on.do("POST", "/mcp/"+wrongTok, "", initBody, mcpHeaders...); resp.StatusCode != 401 {
		t.Errorf("wrong path token: %d", resp.StatusCode)
	}
	if resp, _ := on.do("POST", "/mcp/"+plainTok, plainTok, initBody, mcpHeaders...); resp.StatusCode != 401 {
		t.Errorf("token in path and header: %d", resp.StatusCode)
	}
	for _, logs := range []string{off.logs.String(), on.logs.String(), off.audit.String(), on.audit.String()} {
		for _, tok := range []string{plainTok, wrongTok} {
			if strings.Contains(logs, tok) {
				t.Fatalf("a path token reached the logs:\n%s", logs)
			}
		}
	}
}

func TestOpenModeOnLoopback(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Tokens = nil })
	if !f.srv.Open() {
		t.Fatal("no user token configured, but the server is not open")
	}
	if resp, body := f.do("POST", "/api/search", "", `{"query":"x"}`); resp.StatusCode != 200 {
		t.Errorf("token-less search: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.do("POST", "/api/search", wrongTok, `{"query":"x"}`); resp.StatusCode != 401 {
		t.Errorf("a wrong token in open mode: %d", resp.StatusCode)
	}
	if resp, _ := f.do("GET", "/admin/index-status", "", ""); resp.StatusCode != 403 {
		t.Errorf("admin endpoint without the admin token: %d", resp.StatusCode)
	}
	if resp, _ := f.do("GET", "/admin/index-status", adminTok, ""); resp.StatusCode != 200 {
		t.Errorf("admin endpoint with the admin token: %d", resp.StatusCode)
	}
	if names := toolNames(t, f.connect("")); len(names) != len(userTools) {
		t.Errorf("open mode lists %v", names)
	}
	if _, err := f.srv.Listen("0.0.0.0:0"); err == nil {
		t.Error("listening on all interfaces with no token configured was allowed")
	}
	ln, err := f.srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("loopback listen: %v", err)
	}
	ln.Close()
}

// A proxy on this machine that passes requests on to a server with no
// user token (nginx's proxy_pass names Host 127.0.0.1:8787, and tunnels
// such as ngrok or cloudflared name localhost) would hand the archive to
// whoever reaches the proxy: a token-less request carrying a header such a
// proxy adds is refused. A token (the admin's) is still accepted through
// one, and a server with user tokens takes proxied requests as any other.
func TestOpenModeRefusesProxiedRequests(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Tokens = nil })
	for _, h := range []string{"X-Forwarded-For: 203.0.113.9", "Forwarded: for=203.0.113.9", "X-Real-IP: 203.0.113.9",
		"X-Forwarded-Host: recall.example.com", "X-Forwarded-Proto: https", "Via: 1.1 proxy"} {
		resp, body := f.do("POST", "/api/search", "", `{"query":"x"}`, h)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "proxy") {
			t.Errorf("open mode, token-less request with %q: %d %s", h, resp.StatusCode, body)
		}
		if resp, body := f.do("GET", "/admin/index-status", adminTok, "", h); resp.StatusCode != 200 {
			t.Errorf("open mode, admin token with %q: %d %s", h, resp.StatusCode, body)
		}
	}
	if resp, body := f.do("POST", "/api/search", "", `{"query":"x"}`); resp.StatusCode != 200 {
		t.Errorf("open mode, token-less request without proxy headers: %d %s", resp.StatusCode, body)
	}
	g := newFixture(t, nil)
	if resp, body := g.do("POST", "/api/search", plainTok, `{"query":"x"}`, "X-Forwarded-For: 203.0.113.9"); resp.StatusCode != 200 {
		t.Errorf("a user token through a proxy: %d %s", resp.StatusCode, body)
	}
}

// With no user token, requests need none because they come from this
// machine; a reverse proxy's host name, or a token in the path (for that
// proxy's clients), would open the archive to whoever reaches the proxy:
// both are refused, by New and by CheckAccess before a store is opened.
// The admin token alone does not close the server.
func TestOpenModeRefusesAProxy(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		name, want string
		mod        func(*Options)
	}{
		{"allowed host", "--allowed-host", func(o *Options) { o.AllowedHosts = []string{"recall.example.com"} }},
		{"path token", "--allow-path-token", func(o *Options) { o.AllowPathToken = true }},
		{"CORS origin of another site", "--cors-origin", func(o *Options) { o.CORSOrigins = []string{"https://app.example"} }},
		{"CORS origin naming localhost under another site", "--cors-origin", func(o *Options) { o.CORSOrigins = []string{"https://localhost.example"} }},
	} {
		opt := Options{Engine: f.eng, Memory: f.mem, Store: f.st, AdminToken: adminTok}
		c.mod(&opt)
		if _, err := New(opt); recall.ErrorCode(err) != recall.EINVALID || !strings.Contains(recall.ErrorMessage(err), c.want) {
			t.Errorf("%s, no user token: New gave %v", c.name, err)
		}
		if err := CheckAccess(opt, "127.0.0.1:0"); recall.ErrorCode(err) != recall.EINVALID || !strings.Contains(recall.ErrorMessage(err), c.want) {
			t.Errorf("%s, no user token: CheckAccess gave %v", c.name, err)
		}
		opt.Tokens = []Token{{Name: "plain", Secret: plainTok}}
		if err := CheckAccess(opt, "127.0.0.1:0"); err != nil {
			t.Errorf("%s with a user token: %v", c.name, err)
		}
		srv, err := New(opt)
		if err != nil {
			t.Errorf("%s with a user token: %v", c.name, err)
		} else if srv.Open() {
			t.Errorf("%s with a user token: open", c.name)
		}
	}
	// A page this machine serves may call an open server.
	for _, o := range []string{"http://localhost:3000", "http://127.0.0.1:6274", "http://[::1]:8080"} {
		opt := Options{Engine: f.eng, Memory: f.mem, Store: f.st, CORSOrigins: []string{o}}
		if err := CheckAccess(opt, "127.0.0.1:0"); err != nil {
			t.Errorf("loopback origin %s, no user token: %v", o, err)
		}
	}
}

func TestTokenConfiguration(t *testing.T) {
	f := newFixture(t, nil)
	base := Options{Engine: f.eng, Memory: f.mem, Store: f.st}
	for _, tc := range []struct {
		name   string
		tokens []Token
		admin  string
	}{
		{"short", []Token{{Name: "a", Secret: "too-short"}}, ""},
		{"admin equals user", []Token{{Name: "a", Secret: plainTok}}, plainTok},
		{"short admin", nil, "short"},
		{"duplicate name", []Token{{Name: "a", Secret: plainTok}, {Name: "a", Secret: aliceTok}}, ""},
		{"duplicate secret", []Token{{Name: "a", Secret: plainTok}, {Name: "b", Secret: plainTok}}, ""},
		{"bad owner", []Token{{Name: "a", Secret: plainTok, Owner: "o w"}}, ""},
	} {
		o := base
		o.Tokens, o.AdminToken = tc.tokens, tc.admin
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", tc.name)
		} else if strings.Contains(err.Error(), plainTok) {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
}
