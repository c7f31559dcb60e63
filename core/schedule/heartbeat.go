package schedule

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
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
}

// PreemptReason says why an allocation is preempted (spec.md §5.4–5.5, §7).
type PreemptReason uint8

// Preemption reasons.
const (
	PreemptForStarving PreemptReason = iota
	PreemptForAggressivelyStarving
	PreemptForStarvingAncestor
	PreemptLimitViolated
	PreemptGraceful
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
	}
	return "starving"
}

// PreemptDecision tells the node to stop an allocation within Timeout
// seconds; ForAllocation and ForOperation name what it made room for.
type PreemptDecision struct {
	Allocation    uint64
	Operation     string
	Reason        PreemptReason
	Timeout       float64
	ForAllocation uint64
	ForOperation  string
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
// decisions to resp (spec.md §5): reported allocations are settled first
// (completed jobs count once; failed and aborted jobs return to pending;
// unknown allocations are told to abort), then new allocations start on
// the node's free resources, least satisfied operation first.
//
// A heartbeat that reports an allocation of another node is rejected with
// a *Error (code foreign_allocation) before anything changes.
func (s *Scheduler) Heartbeat(now float64, hb *NodeHeartbeat, resp *Response) error {
	sh := s.shardOf(hb.Node)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes[hb.Node]
	for _, rep := range hb.Allocations {
		owner := allocationNode(rep.ID)
		if (n == nil || owner != n.index) && rep.ID != 0 {
			if other, ok := s.registry.name(owner); ok && other != hb.Node {
				return errorf(CodeForeignAllocation, "allocations", "cannot accept allocation %d from node %q: it belongs to node %q", rep.ID, hb.Node, other)
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
	if cap(n.tags) < len(hb.Tags) || len(n.tags) != len(hb.Tags) {
		n.tags = append(n.tags[:0], hb.Tags...)
	}

	for _, rep := range hb.Allocations {
		i := n.find(rep.ID)
		if i < 0 {
			if rep.State == AllocRunning {
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: rep.ID, Reason: AbortUnknownAllocation})
			}
			continue
		}
		a := &n.allocs[i]
		switch rep.State {
		case AllocCompleted:
			s.release(n, i, true)
		case AllocFailed, AllocAborted:
			s.release(n, i, false)
		default:
			switch {
			case a.op.State().Final():
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortOperationFinished, Operation: a.op.id})
				s.release(n, i, false)
			case a.preempted && now >= a.deadline:
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortPreemptionTimedOut, Operation: a.op.id})
				s.release(n, i, false)
			}
		}
	}

	snap := s.snap.Load()
	if snap.Total.IsZero() {
		return nil
	}
	s.scheduleRegular(now, n, snap, resp)
	return nil
}

// release settles allocation i of node n: its resources return to the node,
// the operation and its limited ancestors; a completed job counts as done,
// any other job returns to pending unless its operation has finished.
func (s *Scheduler) release(n *node, i int, completed bool) {
	a := n.allocs[i]
	o := a.op
	n.usage = n.usage.Sub(a.resources)
	o.addUsage(a.resources, -1)
	o.uncharge(a.resources)
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
	n.remove(i)
}

// canStartMore is CanStartMoreAllocations (spec.md §5.1): the node keeps at
// least the minimum spare resources after its usage.
func (s *Scheduler) canStartMore(n *node, started int) bool {
	if m := s.cfg.MaxStartedAllocationsPerHeartbeat; m > 0 && started >= m {
		return false
	}
	return n.limits.Dominates(n.usage.Add(s.cfg.MinSpareAllocationResources))
}

// scheduleRegular is the regular (non-preemptive) stage (spec.md §5.3):
// while the node has room, start one job of the least satisfied operation
// that has a pending job fitting the node.
func (s *Scheduler) scheduleRegular(now float64, n *node, snap *Snapshot, resp *Response) {
	started := 0
	for s.canStartMore(n, started) {
		free := n.limits.Sub(n.usage)
		v, t := s.best(snap, free)
		if v == nil {
			return
		}
		if !s.start(now, n, v.op, t, resp) {
			// Lost a race for the job or a limit: try the others next time.
			return
		}
		started++
	}
}

// best returns the schedulable operation with the least satisfaction that
// has a pending job fitting free, and that job's task (spec.md §5.2: with
// composite satisfaction the minimum over children, descending the tree by
// least satisfaction reaches the least satisfied active operation).
func (s *Scheduler) best(snap *Snapshot, free resource.Vec) (*opView, int) {
	var best *opView
	bestTask := -1
	bestSat := 0.0
	for i := range snap.ops {
		v := &snap.ops[i]
		o := v.op
		if o.State() != StateRunning {
			continue
		}
		if o.spec.PreemptionMode == PreemptionGraceful && !v.belowFairShare {
			continue
		}
		t := -1
		for j := range o.tasks {
			tk := &o.tasks[j]
			if tk.pending.Load() > 0 && free.Dominates(tk.spec.Resources) && o.fitsLimits(tk.spec.Resources) {
				t = j
				break
			}
		}
		if t < 0 {
			continue
		}
		usage := resource.FromResources(o.Usage(), snap.Total)
		sat := starvation.LocalSatisfaction(v.fairShare, v.demandShare, usage)
		if best == nil || sat < bestSat {
			best, bestTask, bestSat = v, t, sat
		}
	}
	return best, bestTask
}

// start claims one pending job of task t and starts it on n.
func (s *Scheduler) start(now float64, n *node, o *operation, t int, resp *Response) bool {
	tk := &o.tasks[t]
	for {
		p := tk.pending.Load()
		if p <= 0 {
			return false
		}
		if tk.pending.CompareAndSwap(p, p-1) {
			break
		}
	}
	res := tk.spec.Resources
	if !o.charge(res) {
		tk.pending.Add(1)
		return false
	}
	if o.State() != StateRunning {
		o.uncharge(res)
		tk.pending.Add(1)
		return false
	}
	n.seq++
	id := uint64(n.index)<<32 | uint64(n.seq)
	o.addUsage(res, 1)
	o.running.Add(1)
	tk.running.Add(1)
	n.usage = n.usage.Add(res)
	n.allocs = append(n.allocs, allocation{id: id, op: o, task: int32(t), resources: res, start: now})
	resp.Start = append(resp.Start, StartDecision{Allocation: id, Operation: o.id, Task: t, Resources: res})
	return true
}
