package store

import "sync"

// Committer groups concurrent Commits into backend transactions. It is safe
// for concurrent use.
type Committer struct {
	b Backend
	// maxWrites and maxBytes bound one transaction (Limiter; 0: unbounded).
	maxWrites, maxBytes int

	mu      sync.Mutex
	queue   []*commit
	failed  error         // the first failed transaction's error (sticky)
	wake    chan struct{} // cap 1: the writer has work
	stopped chan struct{} // closed when the writer exits
	closing bool

	// Groups and Commits count the backend transactions and the Commits
	// they carried (for metrics and tests); read them with Stats.
	groups, commits uint64
}

type commit struct {
	ws   []Write
	err  error         // set before done is closed
	done chan struct{} // closed when the writes are durable or failed
}

// NewCommitter starts a Committer writing to b. Close stops it.
func NewCommitter(b Backend) *Committer {
	c := &Committer{b: b, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	if l, ok := b.(Limiter); ok {
		c.maxWrites, c.maxBytes = l.Limits()
	}
	go c.writer()
	return c
}

// Commit makes ws durable, together with the Commits queued at the same
// time, and returns when they are (or with the error, wrapped in
// ErrUnavailable, when the transaction failed or an earlier one had). The
// writes of Commits that returned nil are durable in the order the Commits
// were called.
func (c *Committer) Commit(ws ...Write) error { return c.Submit(ws...).Wait() }

// Pending is a submitted Commit. Its zero value is a Commit of nothing.
type Pending struct {
	c   *commit
	err error
}

// Wait returns when the Commit's writes are durable, or with its error. It
// may be called any number of times, from any goroutine.
func (p Pending) Wait() error {
	if p.c == nil {
		return p.err
	}
	<-p.c.done
	return p.c.err
}

// Submit queues ws to be written, in the order Submit is called, and
// returns at once; Wait on the result returns when they are durable. A
// caller that changes state under a lock submits under that lock and waits
// after releasing it: the store then sees the changes in the order they
// were made, and concurrent callers still share transactions.
func (c *Committer) Submit(ws ...Write) Pending {
	if len(ws) == 0 {
		return Pending{err: c.Err()}
	}
	cm := &commit{ws: ws, done: make(chan struct{})}
	c.mu.Lock()
	if c.failed != nil {
		err := c.failed
		c.mu.Unlock()
		return Pending{err: err}
	}
	if c.closing {
		c.mu.Unlock()
		return Pending{err: unavailable(errClosed)}
	}
	c.queue = append(c.queue, cm)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the writer has been woken already
	}
	return Pending{c: cm}
}

// Err is the error every Commit answers after a failed transaction (nil
// while the store is healthy).
func (c *Committer) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Stats returns how many transactions were written and how many Commits
// they carried.
func (c *Committer) Stats() (groups, commits uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups, c.commits
}

// Close waits for the queued Commits and stops the writer; later Commits
// fail. It does not close the backend.
func (c *Committer) Close() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.stopped
}

var errClosed = errorString("the committer is closed")

type errorString string

func (e errorString) Error() string { return string(e) }

// writer writes one group per wake-up: everything queued since the last
// transaction began.
func (c *Committer) writer() {
	defer close(c.stopped)
	var ws []Write
	for range c.wake {
		for {
			c.mu.Lock()
			group := c.queue
			if n := c.fits(group); n < len(group) {
				group, c.queue = group[:n:n], group[n:]
			} else {
				c.queue = nil
			}
			closing := c.closing
			failed := c.failed
			c.mu.Unlock()
			if len(group) == 0 {
				if closing {
					return
				}
				break
			}
			if failed != nil {
				for _, cm := range group {
					cm.err = failed
					close(cm.done)
				}
				continue
			}
			ws = ws[:0]
			for _, cm := range group {
				ws = append(ws, cm.ws...)
			}
			err := c.b.Apply(ws)
			c.mu.Lock()
			c.groups++
			c.commits += uint64(len(group))
			if err != nil {
				err = unavailable(err)
				c.failed = err
			}
			c.mu.Unlock()
			for _, cm := range group {
				cm.err = err
				close(cm.done)
			}
		}
	}
}

// fits returns how many of the queued commits, from the first, one
// transaction takes: all of them without a Limiter, else as many as stay
// within its limits, and at least one (a Commit larger than the limits
// alone is the backend's to refuse).
// SubmitChunked is Submit for writes that need not be one transaction (a
// checkpoint's): they are submitted, in order, in pieces that fit the
// backend's limits (Limiter). Wait on the result returns when every piece
// is durable: the pieces are written in order, and a failed one fails
// every later one.
func (c *Committer) SubmitChunked(ws ...Write) Pending {
	if c.maxWrites <= 0 && c.maxBytes <= 0 {
		return c.Submit(ws...)
	}
	p := Pending{err: c.Err()}
	for len(ws) > 0 {
		n, bytes := 0, 0
		for n < len(ws) {
			b := len(ws[n].Bucket) + len(ws[n].Key) + len(ws[n].Value)
			if n > 0 && (c.maxWrites > 0 && n+1 > c.maxWrites || c.maxBytes > 0 && bytes+b > c.maxBytes) {
				break
			}
			bytes += b
			n++
		}
		p = c.Submit(ws[:n]...)
		ws = ws[n:]
	}
	return p
}

func (c *Committer) fits(queue []*commit) int {
	if c.maxWrites <= 0 && c.maxBytes <= 0 {
		return len(queue)
	}
	writes, bytes := 0, 0
	for i, cm := range queue {
		for _, w := range cm.ws {
			writes++
			bytes += len(w.Bucket) + len(w.Key) + len(w.Value)
		}
		if i > 0 && (c.maxWrites > 0 && writes > c.maxWrites || c.maxBytes > 0 && bytes > c.maxBytes) {
			return i
		}
	}
	return len(queue)
}
