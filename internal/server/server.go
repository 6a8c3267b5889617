// Package server serves recall over HTTP and stdio: MCP (Streamable HTTP at
// /mcp, or newline-delimited JSON on stdio) through the official Go SDK, a
// JSON REST API under /api/ and /admin/, POST /ingest for remote sweeps,
// /healthz (the process answers), /readyz (and so does its database) and
// Prometheus /metrics.
//
// Every HTTP request passes one front door (ServeHTTP) in this order: Host
// check (DNS rebinding), Origin check and CORS, /healthz and /readyz, a path that is
// not clean (refused, where the mux would redirect), body limit, token
// (header, or /mcp/<token> when enabled; never the query string), throttling
// of bad tokens per client address, the per-token rate limit, then the route.
// Refusals happen before any body is parsed.
//
// Decisions worth knowing:
//   - With no user token configured the server is a local single-user
//     service: it accepts requests without a token, but only on a loopback
//     address (Listen refuses anything else), and admin tools and endpoints
//     still need RECALL_ADMIN_TOKEN. A wrong token is refused even then, and
//     so is a token-less request with a header a proxy adds (proxyHeader).
//   - Text sent to MCP clients has control, ANSI, zero-width, bidi and tag
//     characters escaped, in the readable text and the structured output
//     alike; the REST API returns stored text verbatim, such characters
//     sent as JSON \u escapes (see escape.go).
//   - MCP sessions are bound to the credential that opened them: a session
//     id presented with another token gets 403.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/remote"
	"github.com/recall-mcp/recall/internal/search"
)

// DefaultMaxBody bounds a request body to /ingest, which carries a batch
// of a sweep's chunks.
const DefaultMaxBody = remote.MaxBody

// maxCallBody bounds every other request's body: the largest input a tool
// takes, a value of 100,000 characters, is 1.2 MB as JSON at worst (each
// character escaped as a surrogate pair). The server holds a body a few
// times over while it decodes it, so this bounds what one request costs.
const maxCallBody = 2 << 20

// Options configure a Server. Engine, Memory and Store are required.
type Options struct {
	Engine *search.Engine
	Memory *memory.Service
	Store  recall.Store
	// Embedder and Space are what repair embeds missing vectors with (nil
	// and "": lexical only, no repair).
	Embedder recall.Embedder
	Space    string

	Tokens         []Token // user tokens
	AdminToken     string  // "" disables admin tools and endpoints
	AllowPathToken bool    // accept /mcp/<token>, for clients of the replaced system
	CORSOrigins    []string
	AllowedHosts   []string // extra Host names accepted (a reverse proxy's name)

	Rate     rate.Limit // requests per second per token (0: DefaultRate; rate.Inf: unlimited)
	Burst    int        // bucket size (0: DefaultBurst)
	MaxBody  int64      // bytes (0: DefaultMaxBody)
	Sessions int        // concurrent MCP sessions (0: 1000)
	// SessionsPerToken bounds one token's share of them (0: a tenth of
	// Sessions, at least 10), so one client cannot hold every slot.
	SessionsPerToken int
	// Wrong tokens per client address: a bucket of BadTokenBurst (0: 10)
	// refilled at BadTokenRate (0: one every 10 seconds). An empty bucket
	// refuses that address's authenticated requests with 429.
	BadTokenRate  rate.Limit
	BadTokenBurst int

	Audit   io.Writer // one JSON line per request (nil: no audit log)
	Logger  *slog.Logger
	Version string
	Now     func() time.Time

	RepairPage  int           // texts per background repair page (0: 256)
	RepairPause time.Duration // pause between pages (0: 250ms)
	// FollowEvery is how often the server looks for writes another
	// process made to the store (0: 2s; negative: never). See
	// search.Engine.Follow.
	FollowEvery time.Duration
	// Vaults are folders of conversations the server sweeps itself: at
	// start and then every SweepEvery (0: only at start). Sweeps store
	// chunks without vectors and leave embedding to the background repair,
	// which paces itself, so searches keep their speed; they never prune.
	Vaults     []string
	SweepEvery time.Duration
	Zone       *time.Location // the user's time zone, that sweeps date conversations in (ingest.Options.Zone)
	SweepLog   io.Writer      // failed files, one line each, and a summary per sweep (nil: discarded)
	StageTTL   time.Duration  // how long partial /ingest sources wait (0: 15 minutes)
	StageBytes int64          // staged chunk text bound (0: 64 MiB)
	// Grace is how long a stopping Serve lets requests in flight finish
	// before it closes their connections (0: DefaultGrace). Event streams
	// are not waited for: see Serve.
	Grace time.Duration
}

// DefaultGrace is Options.Grace's default.
const DefaultGrace = 5 * time.Second

// Rate limit defaults: enough for an assistant's bursts of tool calls.
const (
	DefaultRate  = 20
	DefaultBurst = 60
)

// Server is safe for concurrent use.
type Server struct {
	opt     Options
	eng     *search.Engine
	st      recall.Store
	mem     *memory.Service
	keys    *keyring
	local   *identity // the identity of token-less requests when no user token is configured
	log     *slog.Logger
	metrics *metrics
	audit   *auditLog
	bad     *badTokens
	stage   *staging
	bg      *background

	users, admins *mcp.Server
	mcpHTTP       *mcp.StreamableHTTPHandler
	mux           *http.ServeMux

	bgOnce     sync.Once
	statsCache statsCache
	readiness  readiness // what /readyz last found
	embedLog   embedFailures
	schemas    map[string]*jsonschema.Schema // tools' input schemas by name (invalidArgs)
	searching  sync.Map                      // identity key → chan of its searches running (searchTurn)

	// cut ends when Hurry is called: a shutdown stops waiting.
	cut    context.Context
	cutNow context.CancelFunc

	sessMu      sync.Mutex
	sessions    map[string]*sessionUse // MCP session id → who opened it, and its use
	sessTick    uint64                 // orders the sessions' uses
	sessPending map[string]int         // identity key → initialize requests in flight
}

// New checks the configuration and builds the server. Nothing runs until
// Start (background work) and Serve or RunStdio.
func New(opt Options) (*Server, error) {
	if opt.Engine == nil || opt.Memory == nil || opt.Store == nil {
		return nil, errors.New("server: Engine, Memory and Store are required")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Rate == 0 {
		opt.Rate = DefaultRate
	}
	if opt.Burst <= 0 {
		opt.Burst = DefaultBurst
	}
	if opt.MaxBody <= 0 {
		opt.MaxBody = DefaultMaxBody
	}
	if opt.Sessions <= 0 {
		opt.Sessions = 1000
	}
	if opt.SessionsPerToken <= 0 {
		opt.SessionsPerToken = max(10, opt.Sessions/10)
	}
	if opt.BadTokenRate <= 0 {
		opt.BadTokenRate = rate.Every(10 * time.Second)
	}
	if opt.BadTokenBurst <= 0 {
		opt.BadTokenBurst = 10
	}
	if opt.Grace <= 0 {
		opt.Grace = DefaultGrace
	}
	newLimiter := func() *rate.Limiter {
		if opt.Rate == rate.Inf {
			return nil
		}
		return rate.NewLimiter(opt.Rate, opt.Burst)
	}
	keys, err := checkAccess(opt, newLimiter)
	if err != nil {
		return nil, err
	}
	// From here on only the hashes in the keyring remain.
	opt.Tokens, opt.AdminToken = nil, ""
	s := &Server{opt: opt, eng: opt.Engine, st: opt.Store, mem: opt.Memory, keys: keys, log: opt.Logger, schemas: map[string]*jsonschema.Schema{},
		metrics: newMetrics(), bad: newBadTokens(opt.BadTokenRate, opt.BadTokenBurst, 10_000, opt.Now),
		stage: newStaging(opt.StageTTL, opt.StageBytes, opt.Now)}
	s.cut, s.cutNow = context.WithCancel(context.Background())
	if opt.Audit != nil {
		s.audit = &auditLog{w: opt.Audit}
	}
	if !keys.hasUsers() {
		s.local = &identity{name: "local", key: "local", lim: newLimiter()}
	}
	s.bg = newBackground(opt.Engine, opt.Store, opt.Embedder, opt.Space, s.metrics, s.log, opt.Now, opt.RepairPage, opt.RepairPause)
	s.bg.followEvery = opt.FollowEvery
	s.bg.switched = opt.Memory.SetSpace
	s.bg.vaults, s.bg.sweepEvery, s.bg.sweepLog, s.bg.zone, s.bg.hurry = opt.Vaults, opt.SweepEvery, opt.SweepLog, opt.Zone, s.cut.Done()
	s.users = s.newMCPServer(false, nil)
	s.admins = s.newMCPServer(true, nil)
	s.mcpHTTP = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if id := identityFrom(r.Context()); id != nil && id.admin {
			return s.admins
		}
		return s.users
	}, &mcp.StreamableHTTPOptions{
		Logger:              s.log,
		SessionTimeout:      30 * time.Minute,
		MaxRequestBodyBytes: opt.MaxBody,
		// The front door checks Host itself, honouring AllowedHosts (the
		// SDK's check would refuse a reverse proxy's name).
		DisableLocalhostProtection: true,
	})
	s.routes()
	return s, nil
}

// Start runs the background work (vector index load, repair) until ctx
// ends. It returns at once; calling it again does nothing.
func (s *Server) Start(ctx context.Context) {
	s.bgOnce.Do(func() {
		s.bg.wg.Add(1)
		go func() { defer s.bg.wg.Done(); s.bg.run(ctx) }()
	})
}

// Wait waits, at most d and until Hurry, for the background work Start
// began to end once its context is done: a sweep records how far it got
// before the store closes. It reports whether everything ended.
func (s *Server) Wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { s.bg.wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-s.cut.Done():
	}
	return false
}

// Hurry cuts a shutdown short (a second interrupt): Serve closes the
// connections still open, ending their requests' contexts, and returns,
// and Wait stops waiting. Nothing acknowledged is lost: a request is
// answered only once its writes have committed.
func (s *Server) Hurry() { s.cutNow() }

// Open reports whether requests without a token are accepted (no user
// token is configured).
func (s *Server) Open() bool { return s.local != nil }

// CheckAccess refuses what New and Listen would refuse in opt's tokens and
// CORS origins, and in listening on addr with them, without a store: a
// command checks its configuration with it before it opens (and so
// creates or upgrades) the database.
func CheckAccess(opt Options, addr string) error {
	keys, err := checkAccess(opt, func() *rate.Limiter { return nil })
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return errAddress(addr)
	}
	if !keys.hasUsers() && !loopbackName(host) {
		return errOpenNonLoopback(addr)
	}
	return nil
}

// checkAccess checks opt's origins and tokens and returns the keyring of
// the tokens. With no user token, requests need none, which is safe only
// because they come from this machine: a reverse proxy's host name
// (AllowedHosts) would let the proxy pass on anyone's, and a token in the
// path (AllowPathToken) is for such a proxy's clients, so either is
// refused; and so is a CORS origin other than this machine's, whose
// pages (any script on that site) would read everything.
func checkAccess(opt Options, lim func() *rate.Limiter) (*keyring, error) {
	if err := checkOrigins(opt.CORSOrigins); err != nil {
		return nil, err
	}
	keys, err := newKeyring(opt.Tokens, opt.AdminToken, lim)
	if err != nil {
		return nil, err
	}
	if !keys.hasUsers() {
		switch {
		case len(opt.AllowedHosts) > 0:
			return nil, recall.Errorf(recall.EINVALID, "--allowed-host names a reverse proxy, which passes on requests from other machines, and with no token configured they would need none: set RECALL_TOKEN or a tokens file")
		case opt.AllowPathToken:
			return nil, recall.Errorf(recall.EINVALID, "--allow-path-token accepts a token in the path, and no token is configured: set RECALL_TOKEN or a tokens file")
		}
		for _, o := range opt.CORSOrigins {
			if u, err := url.Parse(o); err != nil || !isLoopbackHost(u.Hostname()) {
				return nil, recall.Errorf(recall.EINVALID, "--cors-origin %s lets that site's pages call this server from a browser, and with no token configured they would need none: set RECALL_TOKEN or a tokens file (a page served from this machine, http://localhost:PORT, may be allowed without)", o)
			}
		}
	}
	return keys, nil
}

func checkOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" || o == "null" || !strings.Contains(o, "://") {
			return recall.Errorf(recall.EINVALID, "CORS origin %q must be a full origin such as https://app.example (never * or null)", o)
		}
	}
	return nil
}

func errAddress(addr string) error {
	return recall.Errorf(recall.EINVALID, "address %q: use host:port, e.g. 127.0.0.1:8787", addr)
}

func errOpenNonLoopback(addr string) error {
	return recall.Errorf(recall.EINVALID, "refusing to listen on %s with no token configured: set RECALL_TOKEN or a tokens file, or listen on 127.0.0.1", addr)
}

// Listen opens a TCP listener on addr. It refuses a non-loopback address
// when no user token is configured, before binding anything.
func (s *Server) Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errAddress(addr)
	}
	if s.Open() && !loopbackName(host) {
		return nil, errOpenNonLoopback(addr)
	}
	ln, err := net.Listen("tcp", addr)
	if addrInUse(err) {
		return nil, recall.Errorf(recall.EUNAVAILABLE, "%s is in use, perhaps by another recall serve: stop it, or pass --addr with another port (port 0 picks a free one)", addr)
	}
	if err != nil {
		return nil, err
	}
	if s.Open() && !isLoopbackHost(splitHost(ln.Addr().String())) {
		ln.Close()
		return nil, recall.Errorf(recall.EINVALID, "refusing to listen on %s with no token configured", ln.Addr())
	}
	return ln, nil
}

// loopbackName reports whether every address a listen host stands for is
// loopback ("" and 0.0.0.0 stand for all interfaces).
func loopbackName(host string) bool {
	if isLoopbackHost(host) {
		return true
	}
	if host == "" || strings.Contains(host, ":") || net.ParseIP(host) != nil {
		return false
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// Serve answers HTTP on ln until ctx ends, then shuts down: event streams
// end at once (they end only when their clients go, so waiting for them
// would always take the whole grace), requests in flight are given
// Options.Grace to finish, and the connections still open after it, or
// at Hurry, are closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base := context.WithValue(s.cut, stoppingKey{}, ctx)
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(s.cut, s.opt.Grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stoppingKey holds, in the context of a request Serve answers, the
// context whose end stops Serve.
type stoppingKey struct{}

// untilStopping returns r with a context that also ends when the server
// begins to stop, and the function releasing it.
func untilStopping(r *http.Request) (*http.Request, func()) {
	stopping, ok := r.Context().Value(stoppingKey{}).(context.Context)
	if !ok {
		return r, func() {}
	}
	ctx, cancel := context.WithCancel(r.Context())
	unhook := context.AfterFunc(stopping, cancel)
	return r.WithContext(ctx), func() { unhook(); cancel() }
}

// RunStdio serves MCP over r and w (newline-delimited JSON) until the
// client disconnects or ctx ends. The caller is the local user: unbound,
// and an administrator only when admin is set.
func (s *Server) RunStdio(ctx context.Context, r io.Reader, w io.Writer, admin bool) error {
	id := &identity{name: "stdio", key: "stdio", admin: admin}
	ms := s.newMCPServer(admin, id)
	lw := &lockedWriter{w: w}
	return ms.Run(ctx, drainTransport{&mcp.IOTransport{Reader: gateStdio(r, lw), Writer: nopWriteCloser{lw}, MaxLineLength: -1}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// identity and request info travel in the request context and, for MCP
// tool handlers, in the SDK's TokenInfo.
type idKey struct{}

const (
	extraIdentity    = "recall.identity"
	extraRequest     = "recall.request"
	extraHTTPContext = "recall.context" // the context of the POST that carried the message (untilClientGone)
)

func identityFrom(ctx context.Context) *identity {
	id, _ := ctx.Value(idKey{}).(*identity)
	return id
}

func itoa(n int) string { return strconv.Itoa(n) }

// ServeHTTP is the front door every request passes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.opt.Now()
	ri := &reqInfo{id: newRequestID(), remote: clientIP(r), route: "unmatched", mcp: isMCPPath(r.URL.Path)}
	// A client has bodyTimeout to send its body, from the start: a request
	// refused before its body is read (no token, a bad Host) is followed by
	// net/http discarding the body, which without a deadline waits for a
	// client that never sends it, holding the connection. readBody lifts
	// the deadline once the body is in.
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout)) // the real clock: the network keeps real time
	sw := &statusWriter{ResponseWriter: w}
	defer s.finish(ri, sw, start)
	w = sw
	w.Header().Set("X-Request-Id", ri.id)
	defer func() {
		// A panic in one request must not take the server down; net/http
		// would recover it too, but without the error body and audit line.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic", "id", ri.id, "panic", fmt.Sprint(v))
			if sw.status == 0 {
				s.writeError(w, r, recall.Errorf(recall.EINTERNAL, "internal error"))
			}
		}
	}()

	if !s.hostAllowed(r) {
		s.refuse(w, ri, http.StatusForbidden, recall.EFORBIDDEN, "the Host header names a host this server does not serve")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !s.originAllowed(origin) {
			s.refuse(w, ri, http.StatusForbidden, recall.EFORBIDDEN, "requests from this Origin are not allowed")
			return
		}
		corsHeaders(w.Header(), origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			ri.route = "preflight"
			preflight(w)
			return
		}
	}
	if r.URL.Path == "/healthz" {
		ri.route = "/healthz"
		closeIfBodyUnread(w, r)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	}
	if r.URL.Path == "/readyz" {
		ri.route = "/readyz"
		closeIfBodyUnread(w, r)
		s.serveReady(w, r)
		return
	}
	if p := r.URL.Path; p != cleanPath(p) {
		// The mux would redirect to the clean path, and a client that
		// follows it keeps the method: a PUT or DELETE of memory
		// "x/./y" would reach memory "x/y". (The path is not echoed: it
		// may hold a token.)
		s.refuse(w, ri, http.StatusBadRequest, recall.EINVALID, "the request path has an empty, . or .. segment; nothing was done")
		return
	}
	if limit := s.bodyLimit(r); r.ContentLength > limit {
		s.refuse(w, ri, http.StatusRequestEntityTooLarge, recall.ETOOLARGE,
			fmt.Sprintf("the request body is over the %d byte limit", limit))
		return
	}
	// Name the route before authenticating, so refusals are audited by route.
	if _, pattern := s.mux.Handler(r); pattern != "" && pattern != "/" {
		ri.set(func(ri *reqInfo) { ri.route = pattern })
	}
	id, ok := s.authenticate(w, r, ri)
	if !ok {
		return
	}
	if id.lim != nil && !id.lim.Allow() {
		setRetryAfter(w, retryAfter(id.lim))
		s.refuse(w, ri, http.StatusTooManyRequests, recall.ERATELIMIT, "too many requests for this token; retry after the number of seconds in Retry-After")
		return
	}
	if err := s.readBody(w, r); err != nil {
		s.refuse(w, ri, httpStatus(recall.ErrorCode(err)), recall.ErrorCode(err), recall.ErrorMessage(err))
		return
	}
	ctx := context.WithValue(withReqInfo(r.Context(), ri), idKey{}, id)
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

// bodyTimeout bounds how long a client may take to send its body, so a
// trickling client cannot hold a request open.
const bodyTimeout = 30 * time.Second

// readBody reads the (authenticated) request's body into memory, at most
// MaxBody bytes, within the bodyTimeout ServeHTTP set. Handlers then read it
// from memory, and the read deadline is lifted before they run: a deadline
// left on the connection would cancel a long request (an event stream)
// once it passed. A body that failed to arrive leaves the deadline, and the
// connection is closed after the answer, not read further.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) error {
	rc := http.NewResponseController(w)
	if r.Body == nil || r.Body == http.NoBody {
		rc.SetReadDeadline(time.Time{})
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.bodyLimit(r)))
	if err != nil {
		endConn(w)
		return bodyError(err)
	}
	rc.SetReadDeadline(time.Time{})
	r.Body = &readBodyBuf{Reader: bytes.NewReader(body), b: body}
	return nil
}

// bodyLimit is the most a request's body may hold: Options.MaxBody for
// /ingest, maxCallBody (or MaxBody, if lower) for everything else.
func (s *Server) bodyLimit(r *http.Request) int64 {
	if r.URL.Path == "/ingest" {
		return s.opt.MaxBody
	}
	return min(s.opt.MaxBody, maxCallBody)
}

// readBodyBuf is a body readBody read: handlers that want the bytes
// whole take them (bodyBytes) instead of copying them again.
type readBodyBuf struct {
	*bytes.Reader
	b []byte
}

func (*readBodyBuf) Close() error { return nil }

// bodyBytes returns r's body whole.
func bodyBytes(r *http.Request) ([]byte, error) {
	if rb, ok := r.Body.(*readBodyBuf); ok && rb.Len() == len(rb.b) {
		return rb.b, nil
	}
	return io.ReadAll(r.Body)
}

// closeIfBodyUnread asks net/http to close the connection after an answer
// given without reading the request's body, rather than read and discard
// what the client may be slow to send, or never send.
func closeIfBodyUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		endConn(w)
	}
}

// endConn closes the connection after this answer. net/http sends the
// answer, then reads what is left of the body (up to 256 KiB) before it
// closes, even with Connection: close: the read is given a second, for a
// body already on its way, not the client's pace.
func endConn(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Second))
}

// authenticate resolves the caller. It writes the refusal itself.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, ri *reqInfo) (*identity, bool) {
	q := r.URL.Query()
	for _, name := range []string{"token", "access_token", "api_key", "apikey"} {
		if q.Has(name) {
			s.unauthorized(w, ri, "tokens are never accepted in the query string; send an Authorization: Bearer header")
			return nil, false
		}
	}
	token, present := "", false
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, value, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(value) == "" {
			s.unauthorized(w, ri, "the Authorization header must be `Bearer <token>`")
			return nil, false
		}
		token, present = strings.TrimSpace(value), true
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/mcp/"); ok && rest != "" {
		ri.set(func(ri *reqInfo) { ri.route = "/mcp/{token}" })
		if !s.opt.AllowPathToken {
			s.unauthorized(w, ri, "tokens in the URL path are disabled; send an Authorization: Bearer header (or start the server with --allow-path-token)")
			return nil, false
		}
		if present || strings.Contains(rest, "/") {
			s.unauthorized(w, ri, "give the token either in the path or in the Authorization header, once")
			return nil, false
		}
		token, present = rest, true
		r.URL.Path, r.URL.RawPath = "/mcp", ""
	}
	ip := clientIP(r)
	if !present {
		if s.local != nil {
			if h := proxyHeader(r.Header); h != "" {
				s.refuse(w, ri, http.StatusForbidden, recall.EFORBIDDEN, "the request came through a proxy (its "+h+
					" header says so), and with no token configured it would need none: set RECALL_TOKEN or a tokens file")
				return nil, false
			}
			ri.set(func(ri *reqInfo) { ri.token = s.local.name })
			return s.local, true
		}
		s.unauthorized(w, ri, "this server needs a token: send an Authorization: Bearer header")
		return nil, false
	}
	// A valid token is looked up before the address's wrong-token limit
	// applies: behind a reverse proxy every client shares one address, and
	// one client's bad token must not lock the others out. Guessing stays
	// throttled, and a guess is hopeless anyway (tokens are random and at
	// least 24 characters; lookup is constant-time).
	id := s.keys.lookup(token)
	if id == nil {
		if secs, blocked := s.bad.blocked(ip); blocked {
			setRetryAfter(w, secs)
			s.refuse(w, ri, http.StatusTooManyRequests, recall.ERATELIMIT, "too many wrong tokens from this address; retry after the number of seconds in Retry-After")
			return nil, false
		}
		s.bad.fail(ip)
		s.unauthorized(w, ri, "the token is not valid")
		return nil, false
	}
	ri.set(func(ri *reqInfo) { ri.token = id.name })
	return id, true
}

func (s *Server) unauthorized(w http.ResponseWriter, ri *reqInfo, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="recall"`)
	s.refuse(w, ri, http.StatusUnauthorized, recall.EUNAUTHORIZED, msg)
}

// refuse answers before routing, in the REST error shape (a JSON-RPC
// error on /mcp).
func (s *Server) refuse(w http.ResponseWriter, ri *reqInfo, status int, code, msg string) {
	ri.set(func(ri *reqInfo) { ri.errCode = code })
	// Most refusals come before the body is read: see closeIfBodyUnread.
	// (After a refusal, a connection's next request is rare enough.)
	endConn(w)
	if ri.mcp {
		writeRPCError(w, status, nil, rpcCode(code), code, msg)
		return
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: shorten(msg)}})
}

// routes registers every route behind the front door.
func (s *Server) routes() {
	mux := http.NewServeMux()
	handle := func(pattern string, admin bool, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			reqInfoFrom(r.Context()).set(func(ri *reqInfo) { ri.route = pattern })
			if admin && !identityFrom(r.Context()).admin {
				s.writeError(w, r, recall.Errorf(recall.EFORBIDDEN, "this endpoint needs the admin token"))
				return
			}
			h(w, r)
		})
	}
	handle("/mcp", false, s.serveMCP)
	handle("GET /metrics", false, s.serveMetrics)
	handle("POST /ingest", false, archiveRoute(s, "ingesting into", s.ingest,
		func(r remote.IngestResponse) int { return len(r.Sources) }))
	handle("POST "+remote.RemovePath, false, archiveRoute(s, "removing sources of", s.removeSources,
		func(r remote.RemoveResponse) int { return r.Removed }))
	handle("POST "+remote.SourcesPath, false, archiveRoute(s, "listing sources of", s.listSources,
		func(r remote.SourcesResponse) int { return len(r.Sources) }))
	s.restRoutes(handle)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The catch-all hides the router's own 405: tell a wrong method on
		// a known path from an unknown path.
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			r2 := r.Clone(r.Context())
			r2.Method = m
			if _, pattern := mux.Handler(r2); pattern != "/" && pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.refuse(w, reqInfoFrom(r.Context()), http.StatusMethodNotAllowed, "method_not_allowed",
				r.Method+" is not allowed here; use "+strings.Join(allow, " or "))
			return
		}
		s.writeError(w, r, recall.Errorf(recall.ENOTFOUND, "no such endpoint"))
	})
	s.mux = mux
}

// cleanPath is the path the mux would redirect p to: path.Clean's, with a
// final slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
