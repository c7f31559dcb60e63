package facade

import (
	"io"
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
	// linger: the server answers a request it could not read whole (a
	// header over the read buffer, a body over the limit) and closes; Close
	// then half-closes and drains what the client still sends (lingerClose).
	linger atomic.Bool
}

// The bounds of lingerClose: how long it waits for the client to close,
// and how many bytes it reads meanwhile.
const (
	lingerTimeout = time.Second
	lingerBytes   = 4 << 20
)

// lingerOnClose marks the connection of ctx to close without a reset
// (lingerClose): NewHTTPServer's error handler calls it, as the request it
// answers was not read whole.
func lingerOnClose(ctx *fasthttp.RequestCtx) {
	if c, ok := ctx.Conn().(*trackedConn); ok {
		c.linger.Store(true)
	}
}

// lingerClose closes a connection whose request was not read whole without
// resetting it. Closing a socket with unread bytes makes the kernel send a
// reset, which also discards the answer the client has not read yet: a
// client that writes its whole request before it reads (Python's
// http.client) then sees ECONNRESET instead of the 431. So the answer is
// followed by a half-close (FIN), and what the client still sends is read
// and dropped until it closes, lingerBytes were read or lingerTimeout
// passed, whichever comes first.
func (c *trackedConn) lingerClose() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return c.Conn.Close()
	}
	// NB: c.Conn's own deadline, not c.SetReadDeadline: a stopping server
	// still lets the client read its answer.
	if c.Conn.SetReadDeadline(time.Now().Add(lingerTimeout)) == nil {
		_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
	}
	return c.Conn.Close()
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
	if c.linger.Load() {
		return c.lingerClose()
	}
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
