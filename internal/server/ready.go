package server

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// How /readyz asks the store: a ping bounded by readyTimeout, whose answer
// serves every request for readyFresh after it ends, and one ping at a
// time, so a load balancer polling often, or many polling at once, cost
// the database at most one trivial statement a second.
const (
	readyTimeout = time.Second
	readyFresh   = time.Second
)

// readiness is what the last ping of the store found, for /readyz.
type readiness struct {
	mu      sync.Mutex
	at      time.Time     // when the last ping ended (zero: none has)
	ok      bool          // whether it succeeded
	failing bool          // the last ping failed, and that was logged
	pinging chan struct{} // closed when the ping in flight ends (nil: none is)
}

// ready reports whether the store answers, from a ping that ended less
// than readyFresh ago, or else the one in flight, starting one if none is.
// A caller that leaves stops waiting; the ping goes on within its own
// bound, and its answer serves the next callers.
func (s *Server) ready(ctx context.Context) bool {
	r := &s.readiness
	r.mu.Lock()
	if !r.at.IsZero() && s.opt.Now().Sub(r.at) < readyFresh {
		ok := r.ok
		r.mu.Unlock()
		return ok
	}
	if r.pinging == nil {
		r.pinging = make(chan struct{})
		go s.ping(r.pinging)
	}
	done := r.pinging
	r.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok
}

// ping asks the store and records the answer, closing done. The store's
// error, and its end, are logged once each: only the operator sees why.
func (s *Server) ping(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	err := s.st.Ping(ctx)
	cancel()
	r := &s.readiness
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at, r.ok, r.pinging = s.opt.Now(), err == nil, nil
	switch {
	case err != nil && !r.failing:
		r.failing = true
		s.log.Warn("not ready: the database does not answer", "err", err)
	case err == nil && r.failing:
		r.failing = false
		s.log.Info("ready: the database answers again")
	}
	close(done)
}

// serveReady answers /readyz: 200 "ok" while the store answers, else 503
// "unavailable", as tersely as /healthz and with no reason, since anyone
// who can reach the port may ask.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !s.ready(r.Context()) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("unavailable\n"))
		return
	}
	w.Write([]byte("ok\n"))
}
