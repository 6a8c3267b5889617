package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/recall-mcp/recall"
)

// mcpPeek is what the front door reads of a JSON-RPC body before the SDK:
// enough to refuse batches and admin tools, and to name the call in the
// audit log.
type mcpPeek struct {
	ID     any        `json:"id"`
	Method string     `json:"method"`
	Params peekParams `json:"params"`
}

// validRPCID reports whether a decoded JSON-RPC id is one the protocol
// allows and the SDK answers as sent: absent (a notification), a string,
// or an integer.
func validRPCID(id any) bool {
	switch v := id.(type) {
	case nil, string:
		return true
	case float64:
		return v == math.Trunc(v) && math.Abs(v) < 1<<53
	}
	return false
}

// rpcRefusal is a JSON-RPC error the server answers itself, without the
// SDK: its id is nil when the message's own could not be read.
type rpcRefusal struct {
	id   any
	code int
	msg  string
}

func (rf *rpcRefusal) message() map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": rf.id, "error": map[string]any{"code": rf.code, "message": rf.msg}}
}

// refusal says why a message is refused before the SDK sees it, or nil.
// The SDK quotes a bad method or params whole in its error, naming its Go
// types, and answers an id of 1.5 as 1: those are refused here, briefly,
// on every transport.
func (p *mcpPeek) refusal() *rpcRefusal {
	switch {
	case !validRPCID(p.ID):
		return &rpcRefusal{nil, -32600, "the id must be a string or an integer"}
	case len(p.Method) > 128:
		return &rpcRefusal{p.ID, -32601, "method not found"}
	case p.Params.kind != 0 && p.Params.kind != '{' && p.Params.kind != 'n':
		return &rpcRefusal{p.ID, -32602, "params must be an object"}
	}
	return nil
}

// peekParams reads of a request's params the kind of JSON value they are
// and a tool call's name, without copying them (a value of a tool's
// arguments may be a megabyte).
type peekParams struct {
	kind byte // the value's first byte: '{', 'n' (null), '[', …; 0 when absent
	Name string
}

func (p *peekParams) UnmarshalJSON(b []byte) error {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return nil
	}
	p.kind = b[0]
	if p.kind == '{' {
		// By exact key, as the SDK reads it: a struct field would also
		// take "Name" or "NAME", and a call the SDK runs as one tool would
		// be checked and audited as another.
		var v map[string]shortString
		if json.Unmarshal(b, &v) == nil {
			p.Name = string(v["name"])
		}
	}
	return nil
}

// shortString is a JSON string of at most 256 bytes; any other value
// reads as "" without being copied.
type shortString string

func (s *shortString) UnmarshalJSON(b []byte) error {
	if len(b) <= 256+2 && len(b) > 0 && b[0] == '"' {
		var v string
		if json.Unmarshal(b, &v) == nil {
			*s = shortString(v)
		}
	}
	return nil
}

var mcpMethods = []string{"initialize", "notifications/initialized", "ping", "tools/list", "tools/call",
	"notifications/cancelled", "resources/list", "prompts/list", "logging/setLevel", "server/discover", "completion/complete"}

// serveMCP hands a request to the SDK after the checks it does not make.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	ri := reqInfoFrom(r.Context())
	id := identityFrom(r.Context())
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(supportedProtocolVersions, v) {
		s.writeError(w, r, recall.Errorf(recall.EINVALID, "unsupported MCP-Protocol-Version %q", v))
		return
	}
	if r.Method == http.MethodPost {
		body, err := bodyBytes(r)
		if err != nil {
			s.writeError(w, r, bodyError(err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
			s.writeError(w, r, recall.Errorf(recall.EINVALID, "JSON-RPC batches are not supported: send one message per request"))
			return
		}
		var p mcpPeek
		if json.Unmarshal(body, &p) != nil {
			// The SDK's own error names its Go types.
			ri.set(func(ri *reqInfo) { ri.errCode = recall.EINVALID })
			writeRPCError(w, http.StatusBadRequest, nil, -32700, recall.EINVALID, "the body is not a JSON-RPC message (one JSON object): send one request, notification or response as a JSON object")
			return
		}
		if rf := p.refusal(); rf != nil {
			writeJSON(w, http.StatusOK, rf.message())
			return
		}
		ri.set(func(ri *reqInfo) { ri.rpcID = p.ID })
		method := "other"
		if slices.Contains(mcpMethods, p.Method) {
			method = p.Method
		}
		ri.set(func(ri *reqInfo) { ri.route = "mcp " + method })
		if p.Method == "tools/call" && knownTool(p.Params.Name) {
			ri.set(func(ri *reqInfo) { ri.tool = p.Params.Name })
			if isAdminTool(p.Params.Name) && !id.admin {
				ri.set(func(ri *reqInfo) { ri.errCode = recall.EFORBIDDEN })
				writeJSON(w, http.StatusForbidden, map[string]any{"jsonrpc": "2.0", "id": p.ID,
					"error": map[string]any{"code": rpcForbidden, "message": p.Params.Name + " needs the admin token"}})
				return
			}
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			if !needsNoSession(p.Method, r.Header.Get("Mcp-Protocol-Version")) {
				// The SDK would open a session for this message alone and
				// answer 200 with an error of code 0; the transport says 400.
				rf := rpcRefusal{nil, -32600, "no Mcp-Session-Id header: begin with initialize, then send the session id it answers with on every request"}
				if p.Method != "" {
					rf.id = p.ID
				}
				writeJSON(w, http.StatusBadRequest, rf.message())
				return
			}
			if err := s.reserveSession(id.key); err != nil {
				s.writeError(w, r, err)
				return
			}
			defer s.noteSession(w, id.key)
		}
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		defer s.useSession(sid, id.key)()
	}
	if r.Method != http.MethodPost {
		// The route names a metric series: never a client-chosen string.
		method := "other"
		switch r.Method {
		case http.MethodGet, http.MethodDelete, http.MethodOptions:
			method = strings.ToLower(r.Method)
		}
		ri.set(func(ri *reqInfo) { ri.route = "mcp " + method })
		if r.Method == http.MethodGet {
			// A GET holds the session's event stream open for as long
			// as its client likes: it ends when the server stops.
			var release func()
			r, release = untilStopping(r)
			defer release()
		}
	}
	// The SDK binds a session to TokenInfo.UserID and refuses it to any
	// other; the header it reads is replaced by a fixed value so the real
	// token never travels further than this function.
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer verified")
	verify := func(ctx context.Context, _ string, req *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: id.key, Extra: map[string]any{extraIdentity: id, extraRequest: ri, extraHTTPContext: req.Context()}}, nil
	}
	// Our tokens do not expire; rotation is by the tokens file.
	sw := &sdkErrorWriter{ResponseWriter: w}
	auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(s.mcpHTTP).ServeHTTP(sw, r2)
	var rpcID any
	ri.set(func(ri *reqInfo) { rpcID = ri.rpcID })
	sw.finish(ri, rpcID)
}

// needsNoSession reports whether a message may come without a session id:
// initialize, which opens one; ping, which a client may send before it
// (the SDK answers it without keeping a session); and the requests of
// protocol revisions without sessions (server/discover, and anything sent
// as 2026-07-28 or later), which the SDK answers so that clients fall back
// to initialize. Streamable HTTP asks a server that requires a session id
// to answer anything else with 400 Bad Request.
func needsNoSession(method, version string) bool {
	switch method {
	case "initialize", "ping", "server/discover":
		return true
	}
	return version >= "2026-07-28"
}

// supportedProtocolVersions are the MCP revisions the SDK speaks.
var supportedProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
