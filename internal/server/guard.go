package server

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// isLoopbackHost reports whether host (a name or address, without port) is
// the local machine.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// splitHost drops the port from a Host header or address.
func splitHost(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// hostAllowed guards against DNS rebinding: a page on evil.example whose
// name is made to resolve to 127.0.0.1 reaches a loopback server with
// `Host: evil.example`. A request that arrived on a loopback address must
// name the local machine or one of the configured host names; on other
// addresses the configured names, when there are any, are the only ones
// accepted.
func (s *Server) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(splitHost(r.Host))
	for _, h := range s.opt.AllowedHosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	onLoopback := local == nil || isLoopbackHost(splitHost(local.String()))
	if onLoopback {
		return host != "" && isLoopbackHost(host)
	}
	return len(s.opt.AllowedHosts) == 0
}

// originAllowed reports whether a browser origin may call the server. A
// request without an Origin header does not come from a web page's script.
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.opt.CORSOrigins {
		if o == origin {
			return true
		}
	}
	return false
}

// corsHeaders grants an allowed origin access to the responses. The origin
// is echoed, never `*`, and credentials mode is not enabled: clients send
// their bearer token in a header, which needs no cookies.
func corsHeaders(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After, X-Request-Id")
}

func preflight(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// retryAfter is the whole number of seconds until lim allows an event.
func retryAfter(lim *rate.Limiter) int {
	r := lim.Reserve()
	d := r.Delay()
	r.Cancel()
	if d == rate.InfDuration {
		return 60
	}
	return max(1, int(math.Ceil(d.Seconds())))
}

func setRetryAfter(w http.ResponseWriter, secs int) {
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

// badTokens throttles clients that present wrong tokens: each client
// address has a small bucket that only failures drain, and an empty bucket
// refuses every request from that address (an IPv6 address's /64) needing
// authentication until it refills. Memory stays bounded: idle entries are swept, and beyond the cap
// new addresses share one bucket.
type badTokens struct {
	mu       sync.Mutex
	rate     rate.Limit
	burst    int
	max      int
	idle     time.Duration
	now      func() time.Time
	byIP     map[string]*badEntry
	overflow *rate.Limiter
	swept    time.Time
}

type badEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

func newBadTokens(r rate.Limit, burst, maxEntries int, now func() time.Time) *badTokens {
	return &badTokens{rate: r, burst: burst, max: maxEntries, idle: 10 * time.Minute, now: now,
		byIP: map[string]*badEntry{}, overflow: rate.NewLimiter(r, burst)}
}

// badTokenKey is the bucket an address's failures drain: the address
// itself, or for IPv6 its /64, the block one host or network is given, so
// that a client cannot earn a fresh bucket per guess by changing the low
// bits of its address.
func badTokenKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// blocked returns the seconds to wait when ip has used up its failures.
func (b *badTokens) blocked(ip string) (int, bool) {
	ip = badTokenKey(ip)
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.byIP[ip]
	lim := b.overflow
	if e != nil {
		lim = e.lim
	} else if len(b.byIP) < b.max {
		return 0, false
	}
	if lim.TokensAt(b.now()) >= 1 {
		return 0, false
	}
	return retryAfter(lim), true
}

// fail records a wrong token from ip.
func (b *badTokens) fail(ip string) {
	ip = badTokenKey(ip)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Sub(b.swept) > time.Minute || len(b.byIP) >= b.max {
		b.sweep(now)
	}
	e := b.byIP[ip]
	if e == nil {
		if len(b.byIP) >= b.max {
			b.overflow.AllowN(now, 1)
			return
		}
		e = &badEntry{lim: rate.NewLimiter(b.rate, b.burst)}
		b.byIP[ip] = e
	}
	e.seen = now
	e.lim.AllowN(now, 1)
}

// sweep forgets addresses that have been quiet long enough for their
// bucket to refill.
func (b *badTokens) sweep(now time.Time) {
	b.swept = now
	for ip, e := range b.byIP {
		if now.Sub(e.seen) > b.idle {
			delete(b.byIP, ip)
		}
	}
}

func (b *badTokens) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byIP)
}

// clientIP is the peer address of the connection. Forwarded-for headers are
// not trusted: anyone can send them.
func clientIP(r *http.Request) string {
	return splitHost(r.RemoteAddr)
}

// proxyHeaders are the headers a reverse proxy or tunnel (nginx, Caddy,
// ngrok, cloudflared, Tailscale serve) adds to what it passes on. Such a
// proxy may also name a loopback Host ("127.0.0.1:8787"), so the Host
// check alone does not tell its requests from this machine's.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Via"}

// proxyHeader names the first proxy header r has, or "". A server with no
// user token takes token-less requests because they come from this
// machine: one a proxy passed on may come from anyone who reaches it.
func proxyHeader(h http.Header) string {
	for _, name := range proxyHeaders {
		if _, ok := h[name]; ok {
			return name
		}
	}
	return ""
}
