package schedule

import (
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
)

// AllocationState is what a node reports about an allocation.
type AllocationState uint8

// Reported allocation states (api.md §4).
const (
	AllocRunning AllocationState = iota
	AllocCompleted
	AllocFailed
	AllocAborted
)

// AllocationReport is one allocation in a heartbeat.
type AllocationReport struct {
	ID    uint64
	State AllocationState
}

// NodeHeartbeat is a node's heartbeat (api.md §4). The scheduler does not
// retain it or its slices.
type NodeHeartbeat struct {
	Node        string
	Limits      resource.Vec
	Tags        []string
	Allocations []AllocationReport
}

// StartDecision tells the node to start an allocation.
type StartDecision struct {
	Allocation uint64
	Operation  string
	Task       int
	Resources  resource.Vec
}

// AbortReason says why an allocation must stop at once.
type AbortReason uint8

// Abort reasons.
const (
	AbortUnknownAllocation AbortReason = iota
	AbortOperationFinished
	AbortPreemptionTimedOut
	AbortNodeOvercommit

	// AbortReasonCount is the number of abort reasons (for tables indexed
	// by reason).
	AbortReasonCount = int(iota)
)

func (r AbortReason) String() string {
	switch r {
	case AbortOperationFinished:
		return "operation finished"
	case AbortPreemptionTimedOut:
		return "preempted allocation outlived its preemption timeout"
	case AbortNodeOvercommit:
		return "node resources overcommitted"
	}
	return "unknown allocation"
}

// AbortDecision tells the node to abort an allocation.
type AbortDecision struct {
	Allocation uint64
	Reason     AbortReason
	Operation  string // the allocation's operation, when known
	// OperationState is the operation's final state when Reason is
	// AbortOperationFinished.
	OperationState OperationState
}

// PreemptReason says why an allocation is preempted (spec.md §5.4–5.6, §7).
type PreemptReason uint8

// Preemption reasons. The first three name why the operation an
// allocation made room for was allowed to preempt: it starves itself, it
// starves aggressively, or an ancestor pool starves (spec.md §3.5 scope
// operation_and_ancestors).
const (
	PreemptForStarving PreemptReason = iota
	PreemptForAggressivelyStarving
	PreemptForStarvingAncestor
	// PreemptLimitViolated: the allocation's operation or an ancestor pool
	// uses more than its specified resource limits.
	PreemptLimitViolated
	// PreemptGraceful: a graceful operation sheds an allocation above its
	// fair share (spec.md §7).
	PreemptGraceful
	// PreemptNodeOvercommit: the node's usage exceeds its limits and the
	// preemptive stage started nothing (spec.md §5.5).
	PreemptNodeOvercommit

	// PreemptReasonCount is the number of preemption reasons (for tables
	// indexed by reason).
	PreemptReasonCount = int(iota)
)

func (r PreemptReason) String() string {
	switch r {
	case PreemptForAggressivelyStarving:
		return "aggressively starving"
	case PreemptForStarvingAncestor:
		return "ancestor pool starving"
	case PreemptLimitViolated:
		return "resource limits violated"
	case PreemptGraceful:
		return "graceful preemption"
	case PreemptNodeOvercommit:
		return "node resources overcommitted"
	}
	return "starving"
}

// PreemptDecision tells the node to stop an allocation within Timeout
// seconds; ForAllocation and ForOperation name what it made room for (zero
// for graceful, overcommit and pure limit-violation preemptions). Status is
// the allocation's preemption status when it was preempted.
type PreemptDecision struct {
	Allocation    uint64
	Operation     string
	Reason        PreemptReason
	Timeout       clock.Duration
	ForAllocation uint64
	ForOperation  string
	Status        PreemptionStatus
}

// Response is a heartbeat's answer. It is owned by the caller and reused:
// Heartbeat appends to it after Reset.
type Response struct {
	Start   []StartDecision
	Preempt []PreemptDecision
	Abort   []AbortDecision
}

// Reset empties the response, keeping its storage.
func (r *Response) Reset() {
	r.Start, r.Preempt, r.Abort = r.Start[:0], r.Preempt[:0], r.Abort[:0]
}

// Heartbeat processes a node heartbeat at virtual time now and appends the
// decisions to resp (spec.md §5.1):
//
//  1. reported allocations are settled: completed jobs count once; failed
//     and aborted jobs return to pending; unknown allocations, allocations
//     of finished operations and preempted allocations past their deadline
//     are told to abort;
//  2. graceful preemption (spec.md §7);
//  3. the regular stage starts allocations on the node's free resources,
//     least satisfied operation first (§5.2–5.3);
//  4. at most every Config.PreemptiveSchedulingBackoff seconds per node,
//     the preemptive stages (§5.4–5.5) start at most one allocation using
//     the resources of preemptible allocations and preempt those;
//  5. a node whose limits no longer hold its allocations aborts the most
//     preemptible ones (§5.6).
//
// A heartbeat that reports an allocation of another node is rejected with
// an *apierr.Error (code foreign_allocation) before anything changes.
//
// Heartbeats of one node's shard are serialised; others run in parallel.
// In steady state (a registered node, a Response reused, the shard's
// scratch grown) a heartbeat does not allocate, whether it changes
// nothing or starts, completes and preempts allocations; registering a
// node, the first search after a snapshot with more operations and
// rejected heartbeats do.
func (s *Scheduler) Heartbeat(now clock.Time, hb *NodeHeartbeat, resp *Response) error {
	sh := s.shardOf(hb.Node)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes[hb.Node]
	for i, rep := range hb.Allocations {
		owner := allocationNode(rep.ID)
		if (n == nil || owner != n.index) && rep.ID != 0 {
			if other, ok := s.registry.name(owner); ok && other != hb.Node {
				return errorf(CodeForeignAllocation, "allocations["+strconv.Itoa(i)+"].id", "cannot accept allocation %d from node %q: it belongs to node %q", rep.ID, hb.Node, other)
			}
		}
	}
	if n == nil {
		n = &node{name: hb.Node}
		n.index = s.registry.add(hb.Node)
		sh.nodes[hb.Node] = n
	}
	n.setLimits(hb.Limits)
	n.lastHeartbeat = now
	n.setTags(hb.Tags)

	for _, rep := range hb.Allocations {
		a := n.find(rep.ID)
		if a == nil {
			if rep.State == AllocRunning {
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: rep.ID, Reason: AbortUnknownAllocation})
			}
			continue
		}
		switch rep.State {
		case AllocCompleted:
			s.release(sh, n, a, true)
		case AllocFailed, AllocAborted:
			s.release(sh, n, a, false)
		default:
			switch st := a.op.State(); {
			case st.Final():
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortOperationFinished, Operation: a.op.id, OperationState: st})
				s.release(sh, n, a, false)
			case a.preempted && now >= a.deadline:
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortPreemptionTimedOut, Operation: a.op.id})
				s.release(sh, n, a, false)
			}
		}
	}

	if snap := s.snap.Load(); !snap.Total.IsZero() {
		s.preemptGracefully(now, sh, n, resp)
		started := s.scheduleRegular(now, sh, n, snap, resp)
		if !n.hadPreemptive || now.Sub(n.lastPreemptive) > s.cfg.PreemptiveSchedulingBackoff {
			n.hadPreemptive, n.lastPreemptive = true, now
			s.schedulePreemptive(now, sh, n, snap, started, resp)
		}
	}
	s.abortOvercommitted(now, sh, n, resp)
	if invariants.Enabled {
		checkNode(n)
	}
	return nil
}

// checkNode asserts, under -race and the invariants tag, that the node's
// usage is the sum of its allocations, that it exceeds the limits only by
// preempted allocations (or within the allowed overcommit duration), and
// that its preemption index holds exactly the not preempted allocations,
// and that ids mirrors allocs in increasing order.
func checkNode(n *node) {
	var u, pu resource.Vec
	preempted := 0
	invariants.Check(len(n.ids) == len(n.allocs), "node %s: %d ids for %d allocations", n.name, len(n.ids), len(n.allocs))
	for i, a := range n.allocs {
		if n.ids[i] != a.id || i > 0 && n.ids[i-1] >= a.id {
			invariants.Check(false, "node %s: ids[%d] = %d, allocation %d", n.name, i, n.ids[i], a.id)
		}
		u = u.Add(a.resources)
		if a.preempted {
			pu = pu.Add(a.resources)
			preempted++
		}
	}
	invariants.Check(u == n.usage && pu == n.preemptedUsage, "node %s: usage %v and preempted %v, its allocations say %v and %v", n.name, n.usage, n.preemptedUsage, u, pu)
	invariants.Check(n.overcommitted || n.limits.Dominates(u.Sub(pu)), "node %s: usage %v less preempted %v exceeds limits %v", n.name, u, pu, n.limits)
	n.idxMu.Lock()
	indexed := n.bucketN[0] + n.bucketN[1] + n.bucketN[2]
	n.idxMu.Unlock()
	invariants.Check(indexed == len(n.allocs)-preempted, "node %s: %d allocations indexed, %d not preempted", n.name, indexed, len(n.allocs)-preempted)
}

// release settles allocation a of node n: its resources return to the node,
// the operation and its limited ancestors; a completed job counts as done,
// any other job returns to pending unless its operation has finished. The
// allocation is recycled. Shard mutex held.
func (s *Scheduler) release(sh *shard, n *node, a *allocation, completed bool) {
	o := a.op
	n.usage = n.usage.Sub(a.resources)
	if a.preempted {
		// Already out of the status lists and the limit counters.
		n.preemptedUsage = n.preemptedUsage.Sub(a.resources)
		for r, x := range a.resources {
			if x != 0 {
				o.preempted[r].Add(-x)
			}
		}
		o.preemptedCount.Add(-1)
	} else {
		o.pre.mu.Lock()
		o.pre.remove(a)
		o.pre.mu.Unlock()
		o.uncharge(a.resources)
	}
	o.addUsage(a.resources, -1)
	o.running.Add(-1)
	t := &o.tasks[a.task]
	t.running.Add(-1)
	if completed {
		t.completed.Add(1)
		if o.unfinished.Add(-1) == 0 && o.state.CompareAndSwap(uint32(StateRunning), uint32(StateCompleted)) {
			s.operationFinishedByHeartbeat(o)
		}
	} else if !o.State().Final() {
		t.pending.Add(1)
	}
	if o.graceful() {
		n.graceful--
	}
	n.removeAlloc(a)
	sh.recycle(a)
	sh.ops.touch(o)
}
