package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// pingStore is a store whose Ping the test controls: it counts the pings,
// fails while down, and, while hold is set, waits for hold to close
// (telling entered, when set, that a ping began).
type pingStore struct {
	recall.Store
	mu      sync.Mutex
	pings   int
	down    bool
	hold    chan struct{}
	entered chan struct{}
}

func (p *pingStore) Ping(ctx context.Context) error {
	p.mu.Lock()
	p.pings++
	hold, entered, down := p.hold, p.entered, p.down
	p.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	if down {
		return recall.Errorf(recall.EUNAVAILABLE, "ping: dial tcp 10.0.0.7:5432: connection refused")
	}
	return p.Store.Ping(ctx)
}

func (p *pingStore) set(fn func(p *pingStore)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func (p *pingStore) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pings
}

// /readyz answers 200 while the store answers a ping and 503 while it
// does not (where /healthz, the process's liveness, stays ok), without a
// token and without saying why; a ping's answer serves a second, so
// polling costs the database one ping a second at most.
func TestReadyzFollowsTheStore(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	var ps *pingStore
	f := newFixture(t, func(o *Options) { ps = &pingStore{Store: o.Store}; o.Store = ps; o.Now = clock })
	ready := func(want int, wantBody string, when string) {
		t.Helper()
		resp, body := f.do("GET", "/readyz", "", "")
		if resp.StatusCode != want || body != wantBody {
			t.Errorf("%s: readyz %d %q; want %d %q", when, resp.StatusCode, body, want, wantBody)
		}
	}
	ready(200, "ok\n", "the store answers")
	ps.set(func(p *pingStore) { p.down = true })
	ready(200, "ok\n", "within a second of the last ping")
	if n := ps.count(); n != 1 {
		t.Errorf("%d pings for two polls within a second; want 1", n)
	}
	tick(time.Second)
	ready(503, "unavailable\n", "the store is down")
	ready(503, "unavailable\n", "the store is down, asked again")
	tick(time.Second)
	ready(503, "unavailable\n", "the store is still down")
	if resp, body := f.do("GET", "/healthz", "", ""); resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("healthz while the store is down: %d %q; want the process's liveness, ok", resp.StatusCode, body)
	}
	ps.set(func(p *pingStore) { p.down = false })
	tick(time.Second)
	ready(200, "ok\n", "the store is back")
	if n := ps.count(); n != 4 {
		t.Errorf("%d pings for three polls more than a second apart and one within; want 4", n)
	}
	if resp, _ := f.do("GET", "/readyz", "", "", "Host: evil.example"); resp.StatusCode != 403 {
		t.Errorf("readyz with a rebinding Host: %d", resp.StatusCode)
	}
	logs := f.logs.String()
	if strings.Count(logs, "not ready") != 1 || strings.Count(logs, "ready: the database answers again") != 1 || !strings.Contains(logs, "connection refused") {
		t.Errorf("an outage over two pings is not logged once with its reason, and its end once:\n%s", logs)
	}
}

// Callers that come while a ping is in flight wait for it rather than
// send their own (a load balancer's checks pile up while the database
// hangs), and one that leaves stops waiting, not ready.
func TestReadyzPingsOnceAtATime(t *testing.T) {
	var ps *pingStore
	f := newFixture(t, func(o *Options) { ps = &pingStore{Store: o.Store}; o.Store = ps })
	ps.set(func(p *pingStore) { p.hold, p.entered = make(chan struct{}), make(chan struct{}, 1) })
	first := make(chan bool)
	go func() { first <- f.srv.ready(context.Background()) }()
	<-ps.entered
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 5 {
		if f.srv.ready(gone) {
			t.Error("a caller who left was told ready")
		}
	}
	ps.set(func(p *pingStore) { close(p.hold) })
	if !<-first {
		t.Error("the store answered, but readiness says no")
	}
	if n := ps.count(); n != 1 {
		t.Errorf("%d pings for six callers during one; want 1", n)
	}
}
