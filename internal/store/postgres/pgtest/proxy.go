package pgtest

import (
	"encoding/binary"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy stands between a test's clients and the database server: it
// counts round trips, and can delay what each side sends, as a server
// across a network does.
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
// made) and dsn through it, without TLS (the proxy reads the server's
// messages). Each message is held for delay in each direction, so a round
// trip costs 2×delay more; it is closed when tb ends.
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
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return p, u.String()
}

// RoundTrips is how many times so far a client has waited for the server
// to finish what it sent: the server's ReadyForQuery messages, which end
// every answer to a query, a pipeline of statements (pgx's batches, one
// Sync) or a COPY, and the connection's start.
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
		var msgs messages
		p.wg.Add(2)
		go p.pipe(server, client, nil)
		go p.pipe(client, server, func(b []byte) { p.trips.Add(msgs.readyForQuery(b)) })
	}
}

// pipe copies src to dst, each read held for the proxy's delay from when
// it was read (so pieces keep their order and spacing), showing it to
// seen (when not nil) as it is read; it closes both connections when
// either side ends.
func (p *Proxy) pipe(dst, src net.Conn, seen func([]byte)) {
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
				if seen != nil {
					seen(b[:n])
				}
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

// messages follows the server's side of a connection, message by message
// (a type byte and a length that counts itself), across reads.
type messages struct {
	header [5]byte
	have   int // bytes of header read
	skip   int // bytes of the current message's body still to come
}

// readyForQuery reads b and returns how many ReadyForQuery ('Z') messages
// it began.
func (m *messages) readyForQuery(b []byte) int64 {
	var n int64
	for len(b) > 0 {
		if m.skip > 0 {
			k := min(m.skip, len(b))
			m.skip -= k
			b = b[k:]
			continue
		}
		k := copy(m.header[m.have:], b)
		m.have += k
		b = b[k:]
		if m.have < len(m.header) {
			break
		}
		if m.header[0] == 'Z' {
			n++
		}
		m.skip = int(binary.BigEndian.Uint32(m.header[1:])) - 4
		m.have = 0
	}
	return n
}
