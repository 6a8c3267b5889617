package server

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/recall-mcp/recall"
)

// Errors on /mcp are JSON-RPC error objects, not the REST shape
// ({"error": {"code", "message"}}), whatever refuses the request: the
// front door (Host, Origin, token, rate limit, body size), serveMCP, or
// the SDK (which answers with plain text).
//
// Streamable HTTP (MCP 2025-06-18 and 2025-11-25, Transports) has a
// server that cannot accept a message answer with an HTTP error status,
// whose body "MAY comprise a JSON-RPC error response that has no id", and
// 404 for a session id it does not know. What clients make of such an
// answer: the Python SDK's client (python-sdk PR #2047) turns every status
// of 400 and over into "Server returned an error response" (404 into
// "Session terminated", 401 into its OAuth flow), reading no body; the
// TypeScript SDK's puts the body's text into its error ("Error POSTing to
// endpoint (HTTP 4xx): <body>"); the Rust SDK's parses a JSON-RPC error
// out of a 4xx body sent as application/json (rust-sdk #724, PR #748), as
// the Go SDK's does. A JSON-RPC error is therefore what every one of them
// can show; the status and the WWW-Authenticate and Retry-After headers
// stay as they were, for the clients that act on them.

// isMCPPath reports whether p is the MCP endpoint (or /mcp/<token>).
func isMCPPath(p string) bool {
	return p == "/mcp" || strings.HasPrefix(p, "/mcp/")
}

// JSON-RPC error codes of recall's refusals, beside JSON-RPC's own
// (-32700 parse error, -32600 invalid request, -32603 internal error), in
// the range JSON-RPC leaves to servers.
const (
	rpcUnavailable  = -32000
	rpcUnauthorized = -32001
	rpcNotFound     = -32002
	rpcForbidden    = -32003 // also an admin tool called with a user token (serveMCP)
	rpcRateLimited  = -32029
)

// rpcCode is the JSON-RPC error code of a recall error code.
func rpcCode(code string) int {
	switch code {
	case recall.EINVALID, recall.ETOOLARGE, recall.ECONFLICT, "method_not_allowed":
		return -32600
	case recall.EUNAUTHORIZED:
		return rpcUnauthorized
	case recall.EFORBIDDEN:
		return rpcForbidden
	case recall.ENOTFOUND:
		return rpcNotFound
	case recall.ERATELIMIT:
		return rpcRateLimited
	case recall.EUNAVAILABLE, recall.ECANCELED:
		return rpcUnavailable
	}
	return -32603
}

// writeRPCError answers a request to /mcp with a JSON-RPC error: id is
// the message's, or nil when it is not known; data carries recall's error
// code, as the REST API names it.
func writeRPCError(w http.ResponseWriter, status int, id any, rpc int, code, msg string) {
	writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": rpc, "message": shorten(msg), "data": map[string]string{"code": code}}})
}

// sdkErrorWriter stands between the SDK and the client: an error the SDK
// answers with as plain text (http.Error) is held back and answered as a
// JSON-RPC error by finish, with the same status. Everything else (event
// streams, JSON answers, the SDK's own JSON-RPC errors) goes through.
type sdkErrorWriter struct {
	http.ResponseWriter
	status int // the held error's status; 0 when none is held
	text   bytes.Buffer
}

func (w *sdkErrorWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sdkErrorWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		if w.text.Len() < 1024 {
			w.text.Write(p)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *sdkErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

func (w *sdkErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the error held back, if any, saying what went wrong and
// what to do, and records its code for the audit log.
func (w *sdkErrorWriter) finish(ri *reqInfo, id any) {
	if w.status == 0 {
		return
	}
	text := strings.TrimSpace(w.text.String())
	code := recall.EINVALID
	switch {
	case w.status == http.StatusNotFound:
		code, text = recall.ENOTFOUND, "the Mcp-Session-Id names no open session (it was ended, was idle for 30 minutes, or the server restarted): send initialize without the header to open a new one"
	case w.status == http.StatusForbidden && text == "session user mismatch":
		code, text = recall.EFORBIDDEN, "this session was opened with another token: send the token that opened it, or initialize a new session"
	case w.status == http.StatusForbidden:
		code = recall.EFORBIDDEN
	case w.status == http.StatusMethodNotAllowed:
		text = "use POST to send a message, GET for the session's event stream and DELETE to end the session"
	case w.status == http.StatusRequestEntityTooLarge:
		code = recall.ETOOLARGE
	case w.status >= 500:
		code = recall.EINTERNAL
	}
	if ri != nil {
		ri.set(func(ri *reqInfo) { ri.errCode = code })
	}
	w.Header().Del("Content-Length")
	writeRPCError(w.ResponseWriter, w.status, id, rpcCode(code), code, text)
}
