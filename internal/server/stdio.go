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
// and answers every other line itself, with a JSON-RPC error whose id is
// null: the SDK's reader ends the session at the first line it cannot
// decode, and the answers owed to earlier requests with it. A line over
// maxCallBody is refused the same way, without being held whole. Blank
// lines are skipped.
func gateStdio(r io.Reader, w io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := readLine(br, maxCallBody)
			if trimmed := bytes.TrimSpace(line); tooLong || len(trimmed) > 0 {
				switch {
				case tooLong:
					refuseLine(w, jsonrpc.CodeInvalidRequest, "the message is over the 2 MiB limit")
				case trimmed[0] == '[':
					refuseLine(w, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
				default:
					if _, derr := jsonrpc.DecodeMessage(trimmed); derr != nil {
						code := jsonrpc.CodeInvalidRequest
						if !json.Valid(trimmed) {
							code = jsonrpc.CodeParseError
						}
						refuseLine(w, code, "the line is not a JSON-RPC message")
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

// readLine reads one line (without its newline) of at most max bytes;
// the rest of a longer one is read and dropped, and tooLong is set.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if err != bufio.ErrBufferFull {
			return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
		}
	}
}

// refuseLine answers a line that is no request the SDK could read.
func refuseLine(w io.Writer, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
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
