package schedule

import (
	"cmp"
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// canStartMore is CanStartMoreAllocations (docs/semantics.md#scheduling-on-a-heartbeat): the node keeps at
// least the minimum spare resources after usage less discount.
func (s *Scheduler) canStartMore(n *node, usage, discount resource.Vec, started int) bool {
	if m := s.cfg.MaxStartedAllocationsPerHeartbeat; m > 0 && started >= m || len(n.allocs) >= MaxNodeAllocations {
		return false
	}
	return n.limits.Add(discount).Dominates(usage.Add(s.cfg.MinSpareAllocationResources))
}

// scheduleRegular is the regular (non-preemptive) stage (docs/semantics.md#scheduling-on-a-heartbeat):
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
		idx, t := h.best(free, n)
		if idx < 0 {
			break
		}
		if len(n.refused) > 0 && n.refuses(snap.ops[idx].op) {
			h.skip(idx) // refused here lately (refuse)
			continue
		}
		if s.start(now, sh, n, snap.ops[idx].op, t, resp) == nil {
			if n.seq >= n.seqEnd {
				break // its allocation id range is used up (recovery.go)
			}
			// Lost a race for the job or a limit: not again in this stage.
			h.skip(idx)
			continue
		}
		started++
	}
	h.restore()
	return started
}

// place accounts allocation id of a job of o's task t on n, with res, as
// running: on the node, the operation, the task and the status lists. A
// start's id is above every id the node holds; an adopted one (recovery.go)
// goes to its place in the ID order. The limit counters are the caller's.
func (s *Scheduler) place(now clock.Time, sh *shard, n *node, o *operation, t int, id uint64, res resource.Vec, adopted bool) *allocation {
	a := sh.newAllocation()
	a.id = id
	a.op, a.node, a.task, a.resources, a.start = o, n, int32(t), res, now
	o.addUsage(res, 1)
	o.running.Add(1)
	o.tasks[t].running.Add(1)
	n.usage = n.usage.Add(res)
	if adopted {
		n.insertAlloc(a)
	} else {
		n.addAlloc(a)
	}
	o.pre.mu.Lock()
	o.pre.add(a)
	o.pre.mu.Unlock()
	if o.graceful() {
		g := gracefulAlloc{a: a, op: o, seq: a.seq}
		if !adopted {
			n.graceful = append(n.graceful, g) // NB: allocates only to grow
		} else {
			i, _ := slices.BinarySearchFunc(n.graceful, id, func(g gracefulAlloc, id uint64) int { return cmp.Compare(g.a.id, id) })
			n.graceful = slices.Insert(n.graceful, i, g)
		}
	}
	sh.ops.started(o)
	return a
}

// bestTarget returns the operation of the given preemption priority with
// the least satisfaction that has a pending job fitting free, and that
// job's task (docs/semantics.md#scheduling-on-a-heartbeat; with composite satisfaction the minimum over
// children, descending the tree by least satisfaction reaches the least
// satisfied active operation). The preemptive stages use it: only their
// target operations are active, usually few, so it scans them; those whose
// scheduling tag filters do not match node n are not. free counts
// the victims' resources as free; an operation never preempts itself, so
// its own victims are taken out of free for it.
func bestTarget(snap *Snapshot, n *node, free resource.Vec, target PreemptionPriority, victims []victim) (*opView, int) {
	var best *opView
	bestTask := -1
	bestSat := 0.0
	for _, i := range snap.targets[target] {
		v := &snap.ops[i]
		o := v.op
		if o.State() != StateRunning {
			continue
		}
		if o.graceful() && !v.belowFairShare || !n.matches(snap.tags, v.class) {
			continue
		}
		if len(n.refused) > 0 && n.refuses(o) {
			continue
		}
		t, _ := o.fittingTask(free)
		if t < 0 {
			continue
		}
		if own := victimsOf(victims, o); !own.IsZero() {
			if t, _ = o.fittingTask(free.Sub(own)); t < 0 {
				continue
			}
		}
		sat := satisfaction(v, snap.Total)
		if best == nil || sat < bestSat {
			best, bestTask, bestSat = v, t, sat
		}
	}
	return best, bestTask
}

// victimsOf sums the resources of o's allocations among the victims.
func victimsOf(victims []victim, o *operation) resource.Vec {
	var own resource.Vec
	for i := range victims {
		if victims[i].a.op == o {
			own = own.Add(victims[i].a.resources)
		}
	}
	return own
}

// start claims one pending job of task t and starts it on n; it returns the
// new allocation, or nil when the job or a limit was lost to a race.
func (s *Scheduler) start(now clock.Time, sh *shard, n *node, o *operation, t int, resp *Response) *allocation {
	if n.seq >= n.seqEnd {
		return nil // no allocation id left until ExtendNode (recovery.go)
	}
	tk := &o.tasks[t]
	if !tk.claim() {
		return nil
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
	if n.seq == n.seqLow && s.dur.OnNodeSeqLow != nil {
		s.dur.OnNodeSeqLow(n.name, n.index, n.seqEnd) // NB: once per range
	}
	a := s.place(now, sh, n, o, t, uint64(n.index)<<32|uint64(n.seq), res, false)
	resp.Start = append(resp.Start, StartDecision{Allocation: a.id, Operation: o.id, Task: t, Resources: res})
	return a
}
