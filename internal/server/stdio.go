package server

import (
	"context"
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
