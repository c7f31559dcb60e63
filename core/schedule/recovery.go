package schedule

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/clock"
)

// Work-preserving restart (docs/operations.md, "State and restarts"). A
// durable caller restores the operations, then calls BeginRecovery; nodes
// register through RegisterNode (Durable.ExternalNodeRegistry) with the
// index and the allocation id range it made durable, so that no id is
// handed out twice across restarts. The first heartbeat after a node's
// registration with Adopt set adopts the running allocations it reports
// with their origin (operation, task, resources) and an id an earlier
// process handed out: each is accounted exactly as a start (node,
// operation, task, limit counters, status lists), without the limit
// checks (an excess is a limit violation, trimmed by preemption once the
// recovery window is over). A reported allocation of an unknown operation
// is aborted as unknown, one of a finished operation as such, one of an
// operation that is not running or whose task has no job left for it as
// not adopted.
//
// During the recovery window heartbeats are only settled: nothing is
// started, preempted or aborted for overcommit. It ends when every
// expected node (those the caller saw alive before the stop) has
// registered, or at the deadline, whichever comes first.

// Durable is how a durable caller takes part in node registration and
// hears of completions (SetDurable).
type Durable struct {
	// ExternalNodeRegistry hands node registration to the caller: a
	// heartbeat of an unregistered node fails with ErrNodeNotRegistered,
	// and RegisterNode registers it with the index and allocation id range
	// the caller made durable. Without it a node's first heartbeat
	// registers it with the next index of this process.
	ExternalNodeRegistry bool
	// OnNodeSeqLow is called (under the node's shard mutex: it must only
	// queue work) when a node registered with RegisterNode reaches its
	// SeqLow, so that the caller can make a longer range durable and call
	// ExtendNode; a node whose range is used up starts nothing until then.
	OnNodeSeqLow func(node string, index, end uint32)
	// OnOperationCompleted is called (under a shard mutex: it must only
	// queue work) when an operation's last job completed in a heartbeat.
	OnOperationCompleted func(id string)
}

// SetDurable sets how the caller takes part in registration; call it before
// the first heartbeat.
func (s *Scheduler) SetDurable(d Durable) { s.dur = d }

// ErrNodeNotRegistered is returned by Heartbeat, with
// Durable.ExternalNodeRegistry, for a node that is not registered: nothing
// changed; the caller registers it (RegisterNode) and calls again.
var ErrNodeNotRegistered = errors.New("node not registered")

// NodeRegistration registers a node (Durable.ExternalNodeRegistry).
type NodeRegistration struct {
	Name string
	// Index is the high half of its allocation IDs: the caller keeps it
	// for the node's name for good.
	Index uint32
	// Seq is the low half of the last ID handed out before (the new ones
	// start above it), SeqEnd the last one it may hand out until
	// ExtendNode, SeqLow the one at which Durable.OnNodeSeqLow is called.
	Seq, SeqEnd, SeqLow uint32
	// Adopt lets its first heartbeat adopt running allocations with a seq
	// of at most Seq: set it on the node's first registration of the
	// process only (allocations the process itself handed out and
	// finished are never adopted again).
	Adopt bool
}

// recovery is the Scheduler's recovery state.
type recovery struct {
	// active: the window is open (heartbeats only settle).
	active atomic.Bool
	// ops are the operations allocations may be adopted into: those
	// restored before BeginRecovery (nil: none, adoption is over).
	ops atomic.Pointer[map[string]*operation]

	mu       sync.Mutex // leaf
	deadline clock.Time
	ended    clock.Time
	began    bool
	expected map[string]bool // nodes still to register
	total    int             // expected nodes at the start
	adopted  atomic.Int64
	refused  atomic.Int64
}

// RecoveryStatus is what Recovery reports.
type RecoveryStatus struct {
	// Active: the window is open.
	Active bool
	// Began: BeginRecovery was called (the server restarted with state).
	Began bool
	// Deadline is when the window closes at the latest; Ended when it did.
	Deadline, Ended clock.Time
	// ExpectedNodes were seen alive before the stop; ReportedNodes of them
	// registered since.
	ExpectedNodes, ReportedNodes int
	// Adopted counts the allocations adopted, Refused those reported with
	// an origin that were aborted instead.
	Adopted, Refused int64
}

// BeginRecovery opens the recovery window at now (for Config.RecoveryTimeout
// at most) and lets nodes adopt allocations of the operations started so
// far. expected names the nodes seen alive before the stop: the window
// closes once all of them registered. With no expected node or a zero
// timeout there is no window, but nodes still adopt.
func (s *Scheduler) BeginRecovery(now clock.Time, expected []string) {
	s.mu.Lock()
	ops := make(map[string]*operation, len(s.ops))
	for id, o := range s.ops {
		ops[id] = o
	}
	s.mu.Unlock()
	r := &s.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	r.began = true
	r.deadline = now.Add(s.cfg.RecoveryTimeout)
	r.expected = make(map[string]bool, len(expected))
	for _, name := range expected {
		r.expected[name] = true
	}
	r.total = len(r.expected)
	r.ops.Store(&ops)
	if r.total > 0 && s.cfg.RecoveryTimeout > 0 {
		r.active.Store(true)
	} else {
		r.ended = now
	}
}

// Recovery reports the recovery window's state at now, closing it when its
// deadline passed.
func (s *Scheduler) Recovery(now clock.Time) RecoveryStatus {
	s.recovering(now)
	r := &s.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	return RecoveryStatus{Active: r.active.Load(), Began: r.began, Deadline: r.deadline, Ended: r.ended,
		ExpectedNodes: r.total, ReportedNodes: r.total - len(r.expected),
		Adopted: r.adopted.Load(), Refused: r.refused.Load()}
}

// recovering reports whether the window is open at now, closing it at its
// deadline. One atomic load outside recovery.
func (s *Scheduler) recovering(now clock.Time) bool {
	if !s.rec.active.Load() {
		return false
	}
	return s.recoveringAt(now)
}

// recoveringAt is recovering's slow path (inlined, recovering costs a
// load on the heartbeat path).
func (s *Scheduler) recoveringAt(now clock.Time) bool {
	r := &s.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active.Load() && now >= r.deadline {
		r.end(now)
	}
	return r.active.Load()
}

// end closes the window. r.mu held.
func (r *recovery) end(now clock.Time) {
	if r.active.Load() {
		r.active.Store(false)
		r.ended = now
	}
}

// nodeReported notes that an expected node registered, closing the window
// when it was the last.
func (r *recovery) nodeReported(now clock.Time, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.expected[name] {
		return
	}
	delete(r.expected, name)
	if len(r.expected) == 0 {
		r.end(now)
	}
}

// endAdoption stops adoption once no node that was alive before the stop
// can still come back with allocations the scheduler would not have
// aborted: a node timeout after the window closed. Control plane.
func (s *Scheduler) endAdoption(now clock.Time) {
	r := &s.rec
	if r.ops.Load() == nil || r.active.Load() {
		return
	}
	r.mu.Lock()
	over := now.Sub(r.ended) > s.cfg.NodeHeartbeatTimeout
	r.mu.Unlock()
	if over {
		r.ops.Store(nil)
	}
}

// RegisterNode registers a node with a durable index and id range
// (Durable.ExternalNodeRegistry); it reports false, changing nothing, when
// the node is registered already.
func (s *Scheduler) RegisterNode(now clock.Time, reg NodeRegistration) bool {
	sh, hash := s.shardAndHash(reg.Name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.nodes.get(reg.Name, hash) != nil {
		return false
	}
	n := &node{name: reg.Name, heldOK: true, hash: hash, index: reg.Index,
		seq: reg.Seq, seqEnd: reg.SeqEnd, seqLow: reg.SeqLow, lastHeartbeat: now,
		adopting: reg.Adopt, adoptTo: reg.Seq}
	n.heldBase = reg.Seq + 1
	s.registry.set(reg.Index, reg.Name)
	sh.nodes.put(n, hash)
	return true
}

// NodeRegistered reports whether node name is registered.
func (s *Scheduler) NodeRegistered(name string) bool {
	sh, hash := s.shardAndHash(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.nodes.get(name, hash) != nil
}

// KnowNode records that index names node, for the allocation ownership
// check of heartbeats (the durable registry of earlier processes).
func (s *Scheduler) KnowNode(index uint32, name string) { s.registry.set(index, name) }

// ExtendNode lets a registered node hand out allocation ids up to seq end,
// calling Durable.OnNodeSeqLow again at seq low. It does nothing for a node
// that is not registered with index.
func (s *Scheduler) ExtendNode(name string, index, end, low uint32) {
	sh, hash := s.shardAndHash(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes.get(name, hash)
	if n == nil || n.index != index || end <= n.seqEnd {
		return
	}
	n.seqEnd, n.seqLow = end, low
}

// adopt adopts the running allocations node n's first heartbeat reports
// with an origin (see the package's recovery comment), before the reports
// are settled; answered reports are marked in skip (allocated here: once
// per node and process). Shard mutex held.
func (s *Scheduler) adopt(now clock.Time, sh *shard, n *node, hb *NodeHeartbeat, resp *Response) (skip []bool) {
	ops := s.rec.ops.Load()
	for i := range hb.Allocations {
		rep := &hb.Allocations[i]
		if rep.State != AllocRunning || !rep.HasOrigin || i >= len(hb.AllocationOrigins) {
			continue
		}
		seq := uint32(rep.ID)
		if allocationNode(rep.ID) != n.index || seq == 0 || seq > n.adoptTo {
			continue // handed out by this process, or not to this node: unknown
		}
		if _, ok := n.search(rep.ID); ok {
			continue // listed twice
		}
		org := &hb.AllocationOrigins[i]
		var o *operation
		if ops != nil {
			o = (*ops)[string(org.Operation)]
		}
		if o == nil {
			continue // unknown
		}
		d := AbortDecision{Allocation: rep.ID, Reason: AbortNotAdopted, Operation: o.id}
		if st := o.State(); st.Final() {
			d.Reason, d.OperationState = AbortOperationFinished, st
		} else if s.adoptOne(now, sh, n, o, rep.ID, org) {
			s.rec.adopted.Add(1)
			continue
		}
		if skip == nil {
			skip = make([]bool, len(hb.Allocations))
		}
		skip[i] = true
		resp.Abort = append(resp.Abort, d)
		s.rec.refused.Add(1)
	}
	return skip
}

// adoptOne accounts allocation id of o on n as a start (without the limit
// checks) and reports whether it could: o must be running and the task
// must have a pending job to claim.
func (s *Scheduler) adoptOne(now clock.Time, sh *shard, n *node, o *operation, id uint64, org *AllocationOrigin) bool {
	if o.State() != StateRunning || org.Task < 0 || org.Task >= len(o.tasks) {
		return false
	}
	if !o.tasks[org.Task].claim() {
		return false
	}
	o.recharge(org.Resources)
	s.place(now, sh, n, o, org.Task, id, org.Resources, true)
	return true
}

// noSeqLimit is the id range of a node registered by its first heartbeat.
const noSeqLimit = math.MaxUint32
