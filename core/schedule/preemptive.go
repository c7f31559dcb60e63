package schedule

import (
	"cmp"
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
)

// stage is a preemptive scheduling stage (spec.md §5.4).
type stage struct {
	target PreemptionPriority
	// aggressive: victims are allocations of level ≥ AggressivelyPreemptible
	// (Preemptible ones, and AggressivelyPreemptible ones of operations with
	// allow_aggressive_preemption); otherwise level Preemptible.
	aggressive bool
	// force: attempted even without target operations, to preempt
	// allocations of operations over their resource limits.
	force bool
}

// preemptiveStages are spec.md §5.4's stages without the SSD and GPU ones
// (out of scope, §11), in order.
var preemptiveStages = [...]stage{
	{target: PriorityAggressive, aggressive: true},
	{target: PriorityNormal, force: true},
}

// schedulePreemptive runs the preemptive stages on node n and stops after
// the first stage that started an allocation: at most one allocation per
// heartbeat starts using preemption (spec.md §5.4, §9.5). started is the
// number of allocations the regular stage started (for
// Config.MaxStartedAllocationsPerHeartbeat).
func (s *Scheduler) schedulePreemptive(now clock.Time, sh *shard, n *node, snap *Snapshot, started int, resp *Response) {
	for i := range preemptiveStages {
		st := &preemptiveStages[i]
		targets := len(snap.targets[st.target])
		if targets == 0 && !st.force {
			continue
		}
		discount := s.collectVictims(sh, n, st)
		var a *allocation
		if targets > 0 {
			a = s.startPreemptively(now, sh, n, snap, st.target, discount, started, resp)
		}
		s.preemptAfterScheduling(now, sh, n, st, a, resp)
		if a != nil {
			return
		}
	}
}

// collectVictims fills sh.victims with the node's allocations that the
// stage may preempt and returns their summed resources, the discount. It
// reads the node's preemption index, so it visits only allocations of the
// stage's minimum level or above.
func (s *Scheduler) collectVictims(sh *shard, n *node, st *stage) resource.Vec {
	sh.victims = sh.victims[:0]
	var discount resource.Vec
	n.idxMu.Lock()
	for a := n.buckets[Preemptible]; a != nil; a = a.bnext {
		if blockedByAncestor(a.op, st) {
			continue
		}
		sh.victims = append(sh.victims, victim{a: a, status: Preemptible})
		discount = discount.Add(a.resources)
	}
	if st.aggressive {
		for a := n.buckets[AggressivelyPreemptible]; a != nil; a = a.bnext {
			// Without allow_aggressive_preemption the level of an
			// AggressivelyPreemptible allocation is NonPreemptible (§4).
			if v := a.op.view.Load(); v == nil || !v.allowAggressive || blockedByAncestor(a.op, st) {
				continue
			}
			sh.victims = append(sh.victims, victim{a: a, status: AggressivelyPreemptible})
			discount = discount.Add(a.resources)
		}
	}
	n.idxMu.Unlock()
	return discount
}

// blockedByAncestor is spec.md §5.4's blocked_by_ancestor: graceful
// operations are never victims of the preemptive stages (§7), and the
// normal stage may not preempt below a pool (or operation) with
// allow_normal_preemption = false.
func blockedByAncestor(o *operation, st *stage) bool {
	if o.graceful() {
		return true
	}
	if st.target == PriorityNormal {
		if v := o.view.Load(); v != nil && v.normalBlocked {
			return true
		}
	}
	return false
}

// startPreemptively starts at most one allocation of an operation with the
// stage's target priority, on the node's free resources plus the discount.
// Preempted allocations that still run count as free: they are going away.
func (s *Scheduler) startPreemptively(now clock.Time, sh *shard, n *node, snap *Snapshot, target PreemptionPriority, discount resource.Vec, started int, resp *Response) *allocation {
	usage := n.effectiveUsage()
	if !s.canStartMore(n, usage, discount, started) {
		return nil
	}
	free := n.limits.Sub(usage).Add(discount)
	v, t := bestTarget(snap, free, target)
	if v == nil {
		return nil
	}
	return s.start(now, sh, n, v.op, t, resp)
}

// compareVictims is the reference's SortAllocationsWithPreemptionInfo
// order (spec.md §5.5): status ascending; for non-Preemptible statuses
// allocations without a cpu gap first; preemptible progress start time
// ascending. NB: an allocation's usage is what it started with, so there
// is never a cpu gap, and its progress start time is its start time; ties
// go by ID so that the order is deterministic.
func compareVictims(x, y victim) int {
	if c := cmp.Compare(x.status, y.status); c != 0 {
		return c
	}
	if c := cmp.Compare(x.a.start, y.a.start); c != 0 {
		return c
	}
	return cmp.Compare(x.a.id, y.a.id)
}

// preemptAfterScheduling preempts victims, most preemptible and most
// recently started first, until the node's usage fits its limits; then
// the remaining victims whose operation or an ancestor pool is over its
// resource limits (spec.md §5.5). Greedy, not a minimal subset.
func (s *Scheduler) preemptAfterScheduling(now clock.Time, sh *shard, n *node, st *stage, started *allocation, resp *Response) {
	vs := sh.victims
	slices.SortFunc(vs, func(x, y victim) int { return compareVictims(y, x) })
	reason := PreemptNodeOvercommit
	var forAlloc uint64
	var forOp string
	if started != nil {
		forAlloc, forOp = started.id, started.op.id
		reason = preemptorReason(started.op, st)
	}
	i := 0
	for ; i < len(vs); i++ {
		if n.limits.Dominates(n.effectiveUsage()) {
			break
		}
		a := vs[i].a
		s.preempt(now, n, a, reason, a.op.preemptionTimeout(&s.cfg), forAlloc, forOp, false, resp)
	}
	for ; i < len(vs); i++ {
		if a := vs[i].a; a.op.limitViolated() {
			s.preempt(now, n, a, PreemptLimitViolated, a.op.preemptionTimeout(&s.cfg), 0, "", false, resp)
		}
	}
}

// preemptorReason says why the operation o was allowed to preempt in the
// stage: it starves itself (the reference's "preempted for properly
// starving operation") or an ancestor pool does.
func preemptorReason(o *operation, st *stage) PreemptReason {
	v := o.view.Load()
	if v == nil {
		return PreemptForStarvingAncestor
	}
	if st.target == PriorityAggressive {
		if v.starvation == starvation.AggressivelyStarving {
			return PreemptForAggressivelyStarving
		}
		return PreemptForStarvingAncestor
	}
	if v.starvation != starvation.NonStarving {
		return PreemptForStarving
	}
	return PreemptForStarvingAncestor
}

// preempt tells the node to stop a within timeout seconds. The allocation
// leaves its operation's status lists and the limit counters at once and
// keeps running until the node reports it finished; a report after the
// deadline is answered with an abort. With onlyPreemptible it does nothing
// unless a is (still) Preemptible. Shard mutex held.
func (s *Scheduler) preempt(now clock.Time, n *node, a *allocation, reason PreemptReason, timeout clock.Duration, forAlloc uint64, forOp string, onlyPreemptible bool, resp *Response) bool {
	if a.preempted {
		return false
	}
	o := a.op
	o.pre.mu.Lock()
	if onlyPreemptible && (!a.listed || a.status != Preemptible) {
		o.pre.mu.Unlock()
		return false
	}
	status := a.status
	o.pre.remove(a)
	o.pre.mu.Unlock()
	a.preempted = true
	a.deadline = now.Add(timeout)
	n.preemptedUsage = n.preemptedUsage.Add(a.resources)
	for r, x := range a.resources {
		if x != 0 {
			o.preempted[r].Add(x)
		}
	}
	o.preemptedCount.Add(1)
	o.uncharge(a.resources)
	resp.Preempt = append(resp.Preempt, PreemptDecision{Allocation: a.id, Operation: o.id, Reason: reason,
		Timeout: timeout, ForAllocation: forAlloc, ForOperation: forOp, Status: status})
	return true
}

// preemptGracefully preempts every Preemptible allocation of a graceful
// operation on the node with the graceful timeout (spec.md §7): a graceful
// operation continuously sheds what it runs above its fair share.
func (s *Scheduler) preemptGracefully(now clock.Time, sh *shard, n *node, resp *Response) {
	if n.graceful == 0 {
		return
	}
	sh.victims = sh.victims[:0]
	n.idxMu.Lock()
	for a := n.buckets[Preemptible]; a != nil; a = a.bnext {
		if a.op.graceful() {
			sh.victims = append(sh.victims, victim{a: a, status: Preemptible})
		}
	}
	n.idxMu.Unlock()
	for _, v := range sh.victims {
		a := v.a
		if a.op.State().Final() {
			continue // aborted on its next report
		}
		s.preempt(now, n, a, PreemptGraceful, a.op.gracefulTimeout(&s.cfg), 0, "", true, resp)
	}
}

// abortOvercommitted aborts allocations of a node whose usage exceeds its
// limits for longer than Config.AllowedNodeResourcesOvercommitDuration
// (spec.md §5.6): least preemptible first, an allocation is kept if it
// still fits beside those kept before it. Preempted allocations are
// already going away and are left alone.
func (s *Scheduler) abortOvercommitted(now clock.Time, sh *shard, n *node, resp *Response) {
	if n.limits.Dominates(n.effectiveUsage()) {
		n.overcommitted = false
		return
	}
	if !n.overcommitted {
		n.overcommitted, n.overcommitSince = true, now
	}
	if now.Sub(n.overcommitSince) < s.cfg.AllowedNodeResourcesOvercommitDuration {
		return
	}
	sh.victims = sh.victims[:0]
	n.idxMu.Lock()
	for _, a := range n.allocs {
		if !a.preempted {
			sh.victims = append(sh.victims, victim{a: a, status: a.status})
		}
	}
	n.idxMu.Unlock()
	slices.SortFunc(sh.victims, compareVictims)
	var kept resource.Vec
	for _, v := range sh.victims {
		a := v.a
		if next := kept.Add(a.resources); n.limits.Dominates(next) {
			kept = next
			continue
		}
		resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortNodeOvercommit, Operation: a.op.id})
		s.release(sh, n, a, false)
	}
	n.overcommitted = false
}

func (o *operation) preemptionTimeout(cfg *Config) clock.Duration {
	return o.spec.AllocationPreemptionTimeout.Or(cfg.AllocationPreemptionTimeout)
}

func (o *operation) gracefulTimeout(cfg *Config) clock.Duration {
	return o.spec.AllocationGracefulPreemptionTimeout.Or(cfg.AllocationGracefulPreemptionTimeout)
}
