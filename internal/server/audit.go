package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
)

// reqInfo follows one HTTP request from the front door to the audit line.
// Handlers, including MCP tool handlers that run on the SDK's goroutines,
// fill in what they learn; the lock makes that safe.
type reqInfo struct {
	id     string
	remote string
	mcp    bool // a request to /mcp: errors are JSON-RPC errors (rpcerror.go)

	mu      sync.Mutex
	route   string // route pattern, or "mcp <method>"
	tool    string
	token   string // token name; "" before authentication
	results int
	counted bool
	errCode string
	rpcID   any // the JSON-RPC message's id, once serveMCP read it
}

func (ri *reqInfo) set(fn func(ri *reqInfo)) {
	ri.mu.Lock()
	fn(ri)
	ri.mu.Unlock()
}

type reqKey struct{}

func withReqInfo(ctx context.Context, ri *reqInfo) context.Context {
	return context.WithValue(ctx, reqKey{}, ri)
}

func reqInfoFrom(ctx context.Context) *reqInfo {
	ri, _ := ctx.Value(reqKey{}).(*reqInfo)
	return ri
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// auditLine is one request in the audit log. It names the credential but
// never holds it, and holds counts, never content: no query text, memory
// value, archive text, key or URL.
type auditLine struct {
	Time      string `json:"time"`
	RequestID string `json:"request_id"`
	Token     string `json:"token"` // token name, "-" when none was accepted
	Remote    string `json:"remote"`
	Route     string `json:"route"`
	Tool      string `json:"tool,omitempty"`
	Status    int    `json:"status"`
	Outcome   string `json:"outcome"` // ok, unauthorized, forbidden, rate_limited, error, ...
	Results   *int   `json:"results,omitempty"`
	Millis    int64  `json:"ms"`
}

// auditLog appends JSON lines to w, one write per line.
type auditLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (a *auditLog) write(l auditLine) {
	if a == nil || a.w == nil {
		return
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	a.w.Write(b)
}

// LocalEvent appends to w the audit line of an operation run from the
// command line rather than over HTTP (export, import, delete), in the shape
// of a request's: who is the local user's name, the address is "local",
// route names the command, and the outcome is "ok" or err's error code.
func LocalEvent(w io.Writer, who, route string, start time.Time, results int, err error) {
	status, code := http.StatusOK, ""
	if err != nil {
		code = recall.ErrorCode(err)
		status = httpStatus(code) // the status the same error has over HTTP
	}
	(&auditLog{w: w}).write(auditLine{Time: start.UTC().Format(time.RFC3339Nano), RequestID: newRequestID(),
		Token: who, Remote: "local", Route: route, Status: status, Outcome: outcome(status, code),
		Results: &results, Millis: time.Since(start).Milliseconds()})
}

func outcome(status int, errCode string) string {
	switch {
	case errCode != "":
		return errCode
	case status == http.StatusUnauthorized:
		return "unauthorized"
	case status == http.StatusForbidden:
		return "forbidden"
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status == http.StatusRequestEntityTooLarge:
		return "too_large"
	case status >= 500:
		return "error"
	case status >= 400:
		return "invalid"
	}
	return "ok"
}

// RedactWriter wraps a log destination so that no line written through it
// carries a credential, whatever logged it (this package, the MCP SDK or
// net/http): a token in a /mcp/<token> path and the value of a Bearer
// header are replaced by [REDACTED]. The server never logs URLs or headers
// itself; this is the second line of defence.
func RedactWriter(w io.Writer) io.Writer { return redactWriter{w} }

type redactWriter struct{ w io.Writer }

// A secret is any printable ASCII but space (validSecret), so a Bearer
// value runs to the next space, and a path token to the end of the path
// segment (a token holding / ? or # cannot be sent in the path).
var redactRE = regexp.MustCompile(`(/mcp/)[^\s/?#]+|((?i:bearer)\s+)\S+`)

func (r redactWriter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("/mcp/")) && !bytes.Contains(bytes.ToLower(p), []byte("bearer")) {
		return r.w.Write(p)
	}
	out := redactRE.ReplaceAll(p, []byte("${1}${2}[REDACTED]"))
	if _, err := r.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// statusWriter records the status a handler sent. It unwraps for
// http.ResponseController, which the MCP SDK flushes event streams through.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// finish records a completed request in metrics, the log and the audit trail.
func (s *Server) finish(ri *reqInfo, w *statusWriter, start time.Time) {
	d := s.opt.Now().Sub(start)
	ri.mu.Lock()
	route, tool, token, errCode := ri.route, ri.tool, ri.token, ri.errCode
	var results *int
	if ri.counted {
		n := ri.results
		results = &n
	}
	ri.mu.Unlock()
	status := w.code()
	s.metrics.requests.add(1, route, itoa(status))
	s.metrics.latency.observe(d, route)
	if token == "" {
		token = "-"
	}
	s.log.Info("request", "id", ri.id, "route", route, "tool", tool, "status", status,
		"ms", d.Milliseconds(), "token", token)
	s.audit.write(auditLine{Time: start.UTC().Format(time.RFC3339Nano), RequestID: ri.id, Token: token,
		Remote: ri.remote, Route: route, Tool: tool, Status: status, Outcome: outcome(status, errCode),
		Results: results, Millis: d.Milliseconds()})
}
