package pgtest

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy stands between a test's clients and the database server: it
// counts round trips (a client sending after the server has answered it),
// and can delay what each side sends, as a server across a network does.
type Proxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	trips  atomic.Int64
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn // closed with the proxy
}

// NewProxy returns a proxy to the server of dsn (a URL Server or Shared
// made) and dsn through it. Each message is held for delay in each
// direction, so a round trip costs 2×delay more; it is closed when tb
// ends.
func NewProxy(tb testing.TB, dsn string, delay time.Duration) (*Proxy, string) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, delay: delay}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	u.Host = ln.Addr().String()
	return p, u.String()
}

// RoundTrips is how many times a client has sent something after the
// server's answer (or as a connection's first message) so far.
func (p *Proxy) RoundTrips() int64 { return p.trips.Load() }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		// answered: the client's next message starts a round trip.
		var mu sync.Mutex
		answered := true
		turn := func(fromClient bool) {
			mu.Lock()
			if fromClient && answered {
				p.trips.Add(1)
			}
			answered = !fromClient
			mu.Unlock()
		}
		p.wg.Add(2)
		go p.pipe(server, client, func() { turn(true) })
		go p.pipe(client, server, func() { turn(false) })
	}
}

// pipe copies src to dst, each read held for the proxy's delay from when
// it was read (so pieces keep their order and spacing), calling seen as it
// is read; it closes both connections when either side ends.
func (p *Proxy) pipe(dst, src net.Conn, seen func()) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	type piece struct {
		b  []byte
		at time.Time
	}
	pieces := make(chan piece, 64)
	go func() {
		defer close(pieces)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				seen()
				pieces <- piece{b[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for pc := range pieces {
		if wait := time.Until(pc.at); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(pc.b); err != nil {
			src.Close()
			for range pieces { // let the reader end
			}
			return
		}
	}
}
