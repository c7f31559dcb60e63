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
	n.limits = hb.Limits
	n.lastHeartbeat = now
	n.tags = append(n.tags[:0], hb.Tags...)

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

// canStartMore is CanStartMoreAllocations (spec.md §5.1): the node keeps at
// least the minimum spare resources after usage less discount.
func (s *Scheduler) canStartMore(n *node, usage, discount resource.Vec, started int) bool {
	if m := s.cfg.MaxStartedAllocationsPerHeartbeat; m > 0 && started >= m {
		return false
	}
	return n.limits.Add(discount).Dominates(usage.Add(s.cfg.MinSpareAllocationResources))
}

// scheduleRegular is the regular (non-preemptive) stage (spec.md §5.3):
// while the node has room, start one job of the least satisfied operation
// that has a pending job fitting the node, found with the shard's index.
// Preempted allocations still hold their resources here: the node has not
// stopped them yet. It returns the number of allocations it started.
func (s *Scheduler) scheduleRegular(now clock.Time, sh *shard, n *node, snap *Snapshot, resp *Response) int {
	if !s.canStartMore(n, n.usage, resource.Vec{}, 0) {
		return 0
	}
	h := &sh.ops
	h.sync(snap)
	started := 0
	for s.canStartMore(n, n.usage, resource.Vec{}, started) {
		free := n.limits.Sub(n.usage)
		idx, t := h.best(free)
		if idx < 0 {
			break
		}
		if s.start(now, sh, n, snap.ops[idx].op, t, resp) == nil {
			// Lost a race for the job or a limit: not again in this stage.
			h.skip(idx)
			continue
		}
		started++
	}
	h.restore()
	return started
}

// bestTarget returns the operation of the given preemption priority with
// the least satisfaction that has a pending job fitting free, and that
// job's task (spec.md §5.2; with composite satisfaction the minimum over
// children, descending the tree by least satisfaction reaches the least
// satisfied active operation). The preemptive stages use it: only their
// target operations are active, usually few, so it scans them.
func bestTarget(snap *Snapshot, free resource.Vec, target PreemptionPriority) (*opView, int) {
	var best *opView
	bestTask := -1
	bestSat := 0.0
	for _, i := range snap.targets[target] {
		v := &snap.ops[i]
		o := v.op
		if o.State() != StateRunning {
			continue
		}
		if o.graceful() && !v.belowFairShare {
			continue
		}
		t, _ := o.fittingTask(free)
		if t < 0 {
			continue
		}
		sat := satisfaction(v, snap.Total)
		if best == nil || sat < bestSat {
			best, bestTask, bestSat = v, t, sat
		}
	}
	return best, bestTask
}

// start claims one pending job of task t and starts it on n; it returns the
// new allocation, or nil when the job or a limit was lost to a race.
func (s *Scheduler) start(now clock.Time, sh *shard, n *node, o *operation, t int, resp *Response) *allocation {
	tk := &o.tasks[t]
	for {
		p := tk.pending.Load()
		if p <= 0 {
			return nil
		}
		if tk.pending.CompareAndSwap(p, p-1) {
			break
		}
	}
	res := tk.spec.Resources
	if !o.charge(res) {
		tk.pending.Add(1)
		return nil
	}
	if o.State() != StateRunning {
		o.uncharge(res)
		tk.pending.Add(1)
		return nil
	}
	n.seq++
	a := sh.newAllocation()
	a.id = uint64(n.index)<<32 | uint64(n.seq)
	a.op, a.node, a.task, a.resources, a.start = o, n, int32(t), res, now
	o.addUsage(res, 1)
	o.running.Add(1)
	tk.running.Add(1)
	n.usage = n.usage.Add(res)
	n.addAlloc(a)
	if o.graceful() {
		n.graceful++
	}
	o.pre.mu.Lock()
	o.pre.add(a)
	o.pre.mu.Unlock()
	sh.ops.touch(o)
	resp.Start = append(resp.Start, StartDecision{Allocation: a.id, Operation: o.id, Task: t, Resources: res})
	return a
}
