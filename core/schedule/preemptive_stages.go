package schedule

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
)

// stage is a preemptive scheduling stage (docs/semantics.md#preemptive-stages).
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

// preemptiveStages are docs/semantics.md#preemptive-stages's stages without the SSD and GPU ones
// (out of scope), in order.
var preemptiveStages = [...]stage{
	{target: PriorityAggressive, aggressive: true},
	{target: PriorityNormal, force: true},
}

// schedulePreemptive runs the preemptive stages on node n and stops after
// the first stage that started an allocation: at most one allocation per
// heartbeat starts using preemption (docs/semantics.md#preemptive-stages). started is the
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

// blockedByAncestor is docs/semantics.md#preemptive-stages's blocked_by_ancestor: graceful
// operations are never victims of the preemptive stages, the normal
// stage may not preempt below a pool (or operation) with
// allow_normal_preemption = false, and an operation that is starving itself
// is no victim unless allow_preemption_from_starving_operations.
func (s *Scheduler) blockedByAncestor(o *operation, st *stage) bool {
	if o.graceful() {
		return true
	}
	v := o.view.Load()
	if v == nil {
		return false
	}
	if st.target == PriorityNormal && v.normalBlocked {
		return true
	}
	return v.starvation != starvation.NonStarving && !s.cfg.AllowPreemptionFromStarvingOperations
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
	v, t := bestTarget(snap, n, free, target, sh.victims)
	if v == nil {
		return nil
	}
	return s.start(now, sh, n, v.op, t, resp)
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
