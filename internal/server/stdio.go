package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainTransport serves a stream whose end means "no more requests", not
// "stop answering": `printf '...' | recall mcp` gets an answer to every
// request it sent. The SDK ends a session as soon as its input ends, and
// calls still running then lose their responses; so when the input ends,
// the connection's Read waits until every call read so far has been
// answered (or ctx ends) before it reports the end.
type drainTransport struct{ inner mcp.Transport }

func (t drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	d := &drainConn{Connection: c, open: map[any]bool{}}
	d.idle = sync.NewCond(&d.mu)
	return d, nil
}

type drainConn struct {
	mcp.Connection
	mu     sync.Mutex
	idle   *sync.Cond // broadcast when open empties or the connection closes
	open   map[any]bool
	closed bool
}

func (d *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := d.Connection.Read(ctx)
	if err == nil {
		if r, ok := msg.(*jsonrpc.Request); ok && r.ID.IsValid() {
			d.mu.Lock()
			d.open[r.ID.Raw()] = true
			d.mu.Unlock()
		}
		return msg, nil
	}
	if err != io.EOF {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.idle.Broadcast()
	})
	defer stop()
	d.mu.Lock()
	for len(d.open) > 0 && !d.closed && ctx.Err() == nil {
		d.idle.Wait()
	}
	d.mu.Unlock()
	return nil, err
}

func (d *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := d.Connection.Write(ctx, msg)
	if r, ok := msg.(*jsonrpc.Response); ok && r.ID.IsValid() {
		d.mu.Lock()
		delete(d.open, r.ID.Raw())
		if len(d.open) == 0 {
			d.idle.Broadcast()
		}
		d.mu.Unlock()
	}
	return err
}

func (d *drainConn) Close() error {
	d.mu.Lock()
	d.closed = true
	d.idle.Broadcast()
	d.mu.Unlock()
	return d.Connection.Close()
}

// gateStdio hands the SDK only the lines of r that are JSON-RPC messages
// it answers as they ask, and answers every other line itself with a
// JSON-RPC error: the SDK's reader ends the session at the first line it
// cannot decode, and the answers owed to earlier requests with it. The
// error carries the line's id where one can be read (a client waits for
// the answer to that id, for ever if it has no timeout) and null where
// none can. A line over maxCallBody is refused the same way, without
// being held whole. Blank lines are skipped.
func gateStdio(r io.Reader, w io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, long, err := readLine(br, maxCallBody)
			if trimmed := bytes.TrimSpace(line); long != nil || len(trimmed) > 0 {
				switch {
				case long != nil:
					refuseLine(w, &rpcRefusal{long.id(), jsonrpc.CodeInvalidRequest, "the message is over the 2 MiB limit"})
				case trimmed[0] == '[':
					refuseLine(w, &rpcRefusal{nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line"})
				default:
					if rf := gateLine(trimmed); rf != nil {
						refuseLine(w, rf)
						break
					}
					if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
						return // the session has ended
					}
				}
			}
			if err != nil {
				if err == io.EOF {
					pw.Close()
				} else {
					pw.CloseWithError(err)
				}
				return
			}
		}
	}()
	return pr
}

// gateLine says why a line is not handed to the SDK, or nil: it is no
// JSON-RPC message, or one the HTTP front door refuses too (mcpPeek).
func gateLine(line []byte) *rpcRefusal {
	var p mcpPeek
	if json.Unmarshal(line, &p) != nil {
		if !json.Valid(line) {
			return &rpcRefusal{nil, jsonrpc.CodeParseError, "the line is not a JSON-RPC message"}
		}
		return &rpcRefusal{nil, jsonrpc.CodeInvalidRequest, "the line is not a JSON-RPC message"}
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		rf := &rpcRefusal{code: jsonrpc.CodeInvalidRequest, msg: "the line is not a JSON-RPC message"}
		if validRPCID(p.ID) {
			rf.id = p.ID
		}
		return rf
	}
	return p.refusal()
}

// readLine reads one line (without its newline) of at most max bytes.
// The rest of a longer one is read and dropped, and long, which is
// then non-nil, holds what was found of the message's id.
func readLine(br *bufio.Reader, max int) (line []byte, long *idScan, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case long != nil:
			long.scan(frag)
		case len(line)+len(frag) > max+1:
			long = &idScan{}
			long.scan(line)
			long.scan(frag)
			line = nil
		default:
			line = append(line, frag...)
		}
		if err != bufio.ErrBufferFull {
			return bytes.TrimSuffix(line, []byte("\n")), long, err
		}
	}
}

// idScan finds the top-level "id" member of a JSON object read a piece at
// a time, holding no more of it than the id: the line it reads may be of
// any size. A line that is no JSON object yields no id.
type idScan struct {
	depth    int
	inString bool
	escaped  bool
	wantKey  bool   // at depth 1, the next string is a key
	afterKey bool   // at depth 1, between a key's ':' and its value
	inKey    bool   // reading a key at depth 1
	key      []byte // that key, or the last one read (raw, quotes included)
	keyLong  bool   // it is too long to be "id", however escaped
	inValue  bool   // reading the id's value
	value    []byte // that value, as read so far (raw)
	found    []byte // the id's whole raw value
	broken   bool   // not an object, or an id value too long to be one
}

// maxScannedID bounds the id value idScan keeps; validRPCID takes none
// longer.
const maxScannedID = 256

func (s *idScan) scan(b []byte) {
	for _, c := range b {
		if s.broken || s.found != nil {
			return
		}
		s.step(c)
	}
}

func (s *idScan) step(c byte) {
	if s.inString {
		switch {
		case s.inKey && len(s.key) < 32:
			s.key = append(s.key, c)
		case s.inKey:
			s.keyLong = true
		case s.inValue:
			s.keep(c)
		}
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString, s.inKey = false, false
			if s.inValue {
				s.inValue, s.found = false, s.value
			}
		}
		return
	}
	if s.inValue { // a number, or another literal, ends at a delimiter
		switch c {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			s.inValue, s.found = false, s.value
		default:
			s.keep(c)
		}
		return
	}
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		return
	case s.depth == 0 && c != '{':
		s.broken = true
		return
	case s.depth == 1 && s.afterKey:
		s.afterKey = false
		if s.keyIsID() {
			s.inValue, s.inString, s.value = true, c == '"', []byte{c}
			return
		}
	}
	switch c {
	case '"':
		s.inString = true
		if s.depth == 1 && s.wantKey {
			s.inKey, s.wantKey, s.keyLong, s.key = true, false, false, append(s.key[:0], c)
		}
	case '{', '[':
		if s.depth++; s.depth == 1 {
			s.wantKey = true
		}
	case '}', ']':
		s.depth--
	case ':':
		s.afterKey = s.depth == 1
	case ',':
		s.wantKey = s.depth == 1
	}
}

func (s *idScan) keep(c byte) {
	if s.value = append(s.value, c); len(s.value) > maxScannedID {
		s.broken = true
	}
}

func (s *idScan) keyIsID() bool {
	var k string
	return !s.keyLong && json.Unmarshal(s.key, &k) == nil && k == "id"
}

// id returns the id found, when it is one the protocol allows, or nil.
func (s *idScan) id() any {
	if s.broken || s.found == nil {
		return nil
	}
	var v any
	if json.Unmarshal(s.found, &v) != nil || v == nil || !validRPCID(v) {
		return nil
	}
	return v
}

// refuseLine answers a line the SDK is not given.
func refuseLine(w io.Writer, rf *rpcRefusal) {
	b, _ := json.Marshal(rf.message())
	w.Write(append(b, '\n'))
}

// lockedWriter serialises whole writes: the SDK's answers and refuseLine's
// share the output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
