package schedule

import (
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// abortOvercommitted aborts allocations of a node whose usage exceeds its
// limits for longer than Config.AllowedNodeResourcesOvercommitDuration
// (docs/semantics.md#scheduling-on-a-heartbeat): least preemptible first, an allocation is kept if it
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
	s.settleLists(sh)
	sh.victims = sh.victims[:0]
	for _, a := range n.allocs {
		if !a.preempted {
			sh.victims = append(sh.victims, victim{a: a, status: a.op.pre.statusOf(a)})
		}
	}
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
