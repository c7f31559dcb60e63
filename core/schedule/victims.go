package schedule

import (
	"cmp"
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// collectVictims fills sh.victims with the node's allocations that the
// stage may preempt and returns their summed resources, the discount. It
// reads each not preempted allocation's status as its operation last
// published it (statusOf).
func (s *Scheduler) collectVictims(sh *shard, n *node, st *stage) resource.Vec {
	sh.victims = sh.victims[:0]
	var discount resource.Vec
	for _, a := range n.allocs {
		if a.preempted {
			continue
		}
		switch a.op.pre.statusOf(a) {
		case Preemptible:
			if s.blockedByAncestor(a.op, st) {
				continue
			}
			sh.victims = append(sh.victims, victim{a: a, status: Preemptible})
		case AggressivelyPreemptible:
			// Without allow_aggressive_preemption the level of an
			// AggressivelyPreemptible allocation is NonPreemptible.
			if !st.aggressive {
				continue
			}
			if v := a.op.view.Load(); v == nil || !v.allowAggressive || s.blockedByAncestor(a.op, st) {
				continue
			}
			sh.victims = append(sh.victims, victim{a: a, status: AggressivelyPreemptible})
		default:
			continue
		}
		discount = discount.Add(a.resources)
	}
	return discount
}

// compareVictims is the reference's SortAllocationsWithPreemptionInfo
// order (docs/semantics.md#preemptive-stages): status ascending; for non-Preemptible statuses
// allocations without a cpu gap first; preemptible progress start time
// ascending. NB: the cpu gap (a usage below what the allocation was
// started with, since nodes report usage) is not tracked, and an
// allocation's progress start time is its start time; ties go by ID so
// that the order is deterministic.
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
// resource limits (docs/semantics.md#preemptive-stages). Greedy, not a minimal subset.
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
		if started != nil && a.op == started.op {
			continue // an operation is never its own victim (bestTarget left them out)
		}
		s.preempt(now, n, a, reason, a.op.preemptionTimeout(&s.cfg), forAlloc, forOp, false, resp)
	}
	for ; i < len(vs); i++ {
		if a := vs[i].a; a.op.limitViolated() {
			s.preempt(now, n, a, PreemptLimitViolated, a.op.preemptionTimeout(&s.cfg), 0, "", false, resp)
		}
	}
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
	if !a.listed {
		o.pre.mu.Unlock()
		panic("BUG: preempting an allocation that is not in its operation's status lists")
	}
	status := o.pre.status(a)
	if onlyPreemptible && status != Preemptible {
		o.pre.mu.Unlock()
		return false
	}
	o.pre.remove(a)
	o.pre.mu.Unlock()
	a.status = status
	a.preempted = true
	a.deadline = now.Add(timeout)
	n.preemptedN++
	if o.graceful() {
		n.dropGraceful(a)
	}
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

func (o *operation) preemptionTimeout(cfg *Config) clock.Duration {
	return o.spec.AllocationPreemptionTimeout.Or(cfg.AllocationPreemptionTimeout)
}
