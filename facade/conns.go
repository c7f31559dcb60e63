package facade

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// ConnTracker keeps a server's open connections, so that Shutdown can
// end the ones that are not inside a request: fasthttp's own shutdown
// waits for a connection that never sends a byte until its read timeout
// (issue 14: SIGTERM with one silent client took the whole grace period and
// exited 1). A connection is busy from the moment its request is handled
// until its answer is written (fasthttp's StateIdle); Shutdown ends every
// read of the others at once, and of the busy ones once their answer is
// out, so that a request that was read is still answered.
type ConnTracker struct {
	mu       sync.Mutex
	conns    map[*trackedConn]struct{}
	stopping atomic.Bool
}

// trackedConn is a connection of the tracker.
type trackedConn struct {
	net.Conn
	t    *ConnTracker
	busy atomic.Bool
	once sync.Once
}

// Listener returns ln with its connections tracked.
func (t *ConnTracker) Listener(ln net.Listener) net.Listener { return &trackingListener{ln, t} }

type trackingListener struct {
	net.Listener
	t *ConnTracker
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: l.t}
	l.t.mu.Lock()
	if l.t.conns == nil {
		l.t.conns = map[*trackedConn]struct{}{}
	}
	l.t.conns[tc] = struct{}{}
	l.t.mu.Unlock()
	if l.t.stopping.Load() {
		tc.Conn.SetReadDeadline(time.Now())
	}
	return tc, nil
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}

// SetReadDeadline is the connection's, except that once the server stops
// no read waits: fasthttp sets a deadline before it reads each request.
func (c *trackedConn) SetReadDeadline(d time.Time) error {
	if c.t.stopping.Load() {
		d = time.Now()
	}
	return c.Conn.SetReadDeadline(d)
}

func (c *trackedConn) SetDeadline(d time.Time) error {
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return err
	}
	return c.SetReadDeadline(d)
}

// Handling marks the connection of ctx busy (Server.Handle calls it).
func (t *ConnTracker) Handling(ctx *fasthttp.RequestCtx) {
	if c, ok := ctx.Conn().(*trackedConn); ok {
		c.busy.Store(true)
	}
}

// State is fasthttp's ConnState hook: an answered request leaves its
// connection idle, and a stopping server ends its reads.
func (t *ConnTracker) State(nc net.Conn, st fasthttp.ConnState) {
	c, ok := nc.(*trackedConn)
	if !ok || st != fasthttp.StateIdle && st != fasthttp.StateClosed {
		return
	}
	c.busy.Store(false)
	if t.stopping.Load() {
		c.Conn.SetReadDeadline(time.Now())
	}
}

// StopReading ends every read of the connections not inside a request,
// now and from now on.
func (t *ConnTracker) StopReading() {
	t.stopping.Store(true)
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		if !c.busy.Load() {
			c.Conn.SetReadDeadline(time.Now())
		}
	}
}
