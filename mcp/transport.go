package mcp

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// answering wraps a transport so that the end of the client's input does
// not drop the calls already read: the server keeps answering them (a
// mutation that was decided gets its result) and ends once every one has
// its response, or when the connection is closed (`loopx mcp` on SIGTERM).
// A client that writes its requests and closes its end, as
// `printf ... | loopx mcp` does, gets every answer.
type answering struct{ sdk.Transport }

func (t answering) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, open: map[any]bool{}, closed: make(chan struct{})}, nil
}

type answeringConn struct {
	sdk.Connection
	mu     sync.Mutex
	open   map[any]bool  // ids of the calls read and not answered yet
	idle   chan struct{} // closed when open becomes empty; nil while it is
	once   sync.Once
	closed chan struct{}
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.waitAnswered(ctx)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		if len(c.open) == 0 {
			c.idle = make(chan struct{})
		}
		c.open[req.ID.Raw()] = true
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if c.open[resp.ID.Raw()] {
			delete(c.open, resp.ID.Raw())
			if len(c.open) == 0 {
				close(c.idle)
				c.idle = nil
			}
		}
		c.mu.Unlock()
	}
	return err
}

func (c *answeringConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// waitAnswered waits until every call read has its response.
func (c *answeringConn) waitAnswered(ctx context.Context) {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-c.closed:
	case <-ctx.Done():
	}
}
