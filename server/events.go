package server

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// Sizes of the preemption log: the operations it remembers and the
// preemptions it keeps per operation (the most recent ones).
const (
	preemptionLogOps    = 1024
	preemptionsPerOp    = 8
	preemptionLogBucket = 2 * preemptionLogOps // open-addressing table, half full at most
)

// preemptionLog keeps the recent preemptions of each operation, as the
// heartbeats decided them, for GET /api/v1/orchid/operations/{id}
// (recent_preemptions): per operation a ring of the last preemptionsPerOp,
// for the last preemptionLogOps operations that had one (when all slots are
// taken, the slot handed out longest ago is reused).
//
// # Allocation and concurrency
//
// Everything is allocated by newPreemptionLog: observe, on the heartbeat
// path, copies decisions into preallocated rings and allocates nothing (the
// strings it keeps, operation and node names, are the core's and the
// interner's). A heartbeat without preemptions returns before taking the
// mutex; one with preemptions holds it while it copies them. The index is
// an open-addressing table of slot numbers probed linearly and deleted by
// backward shift, so it never rehashes.
type preemptionLog struct {
	// log receives a line per preemption (nil: none).
	log   *slog.Logger
	mu    sync.Mutex
	seed  maphash.Seed
	table [preemptionLogBucket]int32 // slot+1; 0: empty
	slots []preemptionRing
	free  []int32 // slots not in use
	next  int32   // the slot to reuse when none is free (round robin)
}

// preemptionRing is the recent preemptions of one operation.
type preemptionRing struct {
	op     string // "": the slot is free
	n      uint64 // preemptions recorded in all
	events [preemptionsPerOp]PreemptionEvent
}

// PreemptionEvent is one preemption: when, on which node, and the core's
// decision (whose reason sentence is written when the event is read).
type PreemptionEvent struct {
	Time     clock.Time
	Node     string
	Decision schedule.PreemptDecision
}

// PreemptionsPerOperation is how many recent preemptions of an operation
// RecentPreemptions keeps.
const PreemptionsPerOperation = preemptionsPerOp

// RecentPreemptions appends operation id's recent preemptions to dst, the
// most recent first (at most PreemptionsPerOperation).
func (s *Server) RecentPreemptions(dst []PreemptionEvent, id string) []PreemptionEvent {
	return s.preemptions.recent(dst, id)
}

func newPreemptionLog(log *slog.Logger) *preemptionLog {
	l := &preemptionLog{log: log, seed: maphash.MakeSeed(), slots: make([]preemptionRing, preemptionLogOps),
		free: make([]int32, 0, preemptionLogOps)}
	for i := preemptionLogOps - 1; i >= 0; i-- {
		l.free = append(l.free, int32(i))
	}
	return l
}

// observe records the preemptions of a heartbeat's response: node was told
// to stop them now, on c, which it reads only when there are some. It
// allocates nothing.
func (l *preemptionLog) observe(c clock.Clock, node string, r *schedule.Response) {
	if len(r.Preempt) > 0 {
		l.observeAt(c.Now(), node, r)
	}
}

// observeAt is observe at a time the caller read (a batch's).
func (l *preemptionLog) observeAt(now clock.Time, node string, r *schedule.Response) {
	if len(r.Preempt) == 0 {
		return
	}
	l.mu.Lock()
	for i := range r.Preempt {
		d := &r.Preempt[i]
		if d.Operation == "" {
			continue
		}
		ring := &l.slots[l.slot(d.Operation)]
		ring.events[ring.n%preemptionsPerOp] = PreemptionEvent{Time: now, Node: node, Decision: *d}
		ring.n++
	}
	l.mu.Unlock()
	if l.log != nil && l.log.Enabled(context.Background(), slog.LevelInfo) {
		// One line per preemption: they are rare next to heartbeats, and
		// each is a decision an operator may be asked about.
		for i := range r.Preempt {
			d := &r.Preempt[i]
			l.log.Info("allocation preempted", "node", node, "allocation", d.Allocation, "operation", d.Operation,
				"reason", string(wire.AppendPreemptReason(nil, d)), "timeout_s", d.Timeout.Seconds())
		}
	}
}

// home is the table position where op's probe starts.
func (l *preemptionLog) home(op string) int {
	return int(maphash.String(l.seed, op) % preemptionLogBucket)
}

// find returns the table position of op, or -1.
func (l *preemptionLog) find(op string) int {
	for i := l.home(op); ; i = (i + 1) % preemptionLogBucket {
		s := l.table[i]
		if s == 0 {
			return -1
		}
		if l.slots[s-1].op == op {
			return i
		}
	}
}

// slot returns op's slot, taking one (a free one, else the next in round
// robin, whose operation is forgotten) when op has none. l.mu is held.
func (l *preemptionLog) slot(op string) int32 {
	if i := l.find(op); i >= 0 {
		return l.table[i] - 1
	}
	var s int32
	if n := len(l.free); n > 0 {
		s, l.free = l.free[n-1], l.free[:n-1]
	} else {
		s = l.next
		l.next = (l.next + 1) % preemptionLogOps
		l.remove(l.find(l.slots[s].op))
	}
	l.slots[s] = preemptionRing{op: op}
	i := l.home(op)
	for l.table[i] != 0 {
		i = (i + 1) % preemptionLogBucket
	}
	l.table[i] = s + 1
	return s
}

// remove empties table position i and shifts back the entries after it
// whose probe passes through i, so that lookups need no tombstones.
func (l *preemptionLog) remove(i int) {
	if i < 0 {
		return
	}
	l.table[i] = 0
	for j := (i + 1) % preemptionLogBucket; l.table[j] != 0; j = (j + 1) % preemptionLogBucket {
		h := l.home(l.slots[l.table[j]-1].op)
		// Move j's entry to i unless its home lies cyclically in (i, j].
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			l.table[i], l.table[j] = l.table[j], 0
			i = j
		}
	}
}

// forget drops an operation's preemptions (the operation was forgotten:
// its id may be used again).
func (l *preemptionLog) forget(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.find(op)
	if i < 0 {
		return
	}
	s := l.table[i] - 1
	l.remove(i)
	l.slots[s] = preemptionRing{}
	l.free = append(l.free, s)
}

// recent appends op's recent preemptions to dst, the most recent first.
func (l *preemptionLog) recent(dst []PreemptionEvent, op string) []PreemptionEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.find(op)
	if i < 0 {
		return dst
	}
	ring := &l.slots[l.table[i]-1]
	for k := uint64(0); k < min(ring.n, preemptionsPerOp); k++ {
		dst = append(dst, ring.events[(ring.n-1-k)%preemptionsPerOp])
	}
	return dst
}
