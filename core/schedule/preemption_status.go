package schedule

import (
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// PreemptionStatus is an allocation's preemption status (docs/semantics.md#preemption-statuses).
type PreemptionStatus uint8

// Preemption statuses, from least to most preemptible.
const (
	NonPreemptible PreemptionStatus = iota
	AggressivelyPreemptible
	Preemptible
)

const statusCount = 3

func (s PreemptionStatus) String() string {
	switch s {
	case AggressivelyPreemptible:
		return "aggressively_preemptible"
	case Preemptible:
		return "preemptible"
	}
	return "non_preemptible"
}

// PreemptionPriority is an operation's preemption priority (docs/semantics.md#starvation):
// the preemptive stage whose target it is.
type PreemptionPriority uint8

// Preemption priorities.
const (
	PriorityNone PreemptionPriority = iota
	PriorityNormal
	PriorityAggressive
)

const priorityCount = 3

func (p PreemptionPriority) String() string {
	switch p {
	case PriorityNormal:
		return "normal"
	case PriorityAggressive:
		return "aggressive"
	}
	return "none"
}

// preemptParams are the inputs of the rebalancing (docs/semantics.md#preemption-statuses), set after
// every fair-share publish.
type preemptParams struct {
	fairShare, demandShare resource.Share
	total                  resource.Vec
	aggressiveThreshold    float64      // a
	preemptionThreshold    float64      // p
	threshold              resource.Vec // N, absolute; zero never applies
	// preemptible is operation_preemptible: NOT(F ≈ D) OR D ≈ 0.
	preemptible bool
	// aggressiveBound and preemptibleBound are F·a and F·p lowered by
	// statusPrecision: set by setParams, read by every rebalance.
	aggressiveBound, preemptibleBound resource.Share
}

// opPreemption is an operation's NonPreemptible | AggressivelyPreemptible |
// Preemptible lists (docs/semantics.md#preemption-statuses, the reference's operation shared state).
// Together the lists hold the operation's running, not preempted
// allocations in start order.
//
// They are one intrusive doubly linked list (through allocation.prev/next)
// in start order, cut in three by two boundaries: bound[0] is the first
// allocation that is not NonPreemptible and bound[1] the first Preemptible
// one (nil when there is none). Each allocation carries its rank in the
// list's order (allocation.seq), so its status is where its rank falls
// between the boundaries' ranks: moving a boundary past an allocation
// writes nothing but the operation's own fields.
//
// NB: the lists used to be three lists, with every allocation also linked
// in its node's bucket of its status: each boundary move rewrote the
// allocation, its neighbours in two buckets and the node's index under the
// node's mutex — five cache lines, usually on another shard — and
// rebalancing was 30% of BenchmarkHeartbeat/churn.
//
// Concurrency: mu guards the list, the boundaries, the counts and sums,
// params and every listed allocation's prev/next/seq/listed fields. It is
// taken with the allocation's shard mutex held (heartbeats) or with the
// control lock held (fair-share publish), never the other way round. The
// boundaries' ranks are also published in bounds under the sequence lock
// ver, so that a heartbeat reads the status of its node's allocations
// (statusOf) without taking the mutexes of their operations.
type opPreemption struct {
	mu sync.Mutex
	// ver is odd while publish writes bounds.
	ver atomic.Uint32
	// bounds[i] is one more than the rank of last[i] (0 when nil): the
	// allocations ranked below it have statuses up to i.
	bounds [2]atomic.Uint64

	head, tail *allocation
	bound      [2]*allocation
	// last[i] is the allocation just before bound[i] (the list's tail when
	// bound[i] is nil), nil when there is none, and edge[i] its resources:
	// the balance's shrink test reads them without touching the
	// allocation, which usually lives on another shard's node.
	last    [2]*allocation
	edge    [2]resource.Vec
	lastSeq [2]uint64 // last[i].seq
	n       [statusCount]int64
	usage   [statusCount]resource.Vec
	nextSeq uint64 // the rank of the next allocation added
	// dirty says which rebalancing the lists wait for: changes that no
	// rebalance has seen yet (drop, resize) leave them where the last one
	// put them; add's shortcut needs balanced lists.
	dirty  dirtiness
	params preemptParams
}

// dirtiness is how far from balanced an operation's lists may be.
type dirtiness uint8

const (
	balanced dirtiness = iota
	// secondDirty: only the second boundary may move — AggressivelyPreemptible
	// allocations were dropped from balanced lists. The first boundary's
	// prefix is unchanged and its right list was not empty, so its test
	// still fails.
	secondDirty
	// fullDirty: any boundary may move.
	fullDirty
)

// classify is the status of the allocation of rank seq between boundaries
// of ranks b0 and b1.
func classify(seq, b0, b1 uint64) PreemptionStatus {
	switch {
	case seq < b0:
		return NonPreemptible
	case seq < b1:
		return AggressivelyPreemptible
	}
	return Preemptible
}

// status returns listed allocation a's status. Caller holds mu.
func (p *opPreemption) status(a *allocation) PreemptionStatus {
	return classify(a.seq, p.bounds[0].Load(), p.bounds[1].Load())
}

// statusOf returns listed allocation a's status as of the last completed
// change of the lists, without the mutex (which it takes only if a
// publish keeps overlapping its reads). The caller holds a's shard mutex,
// which keeps a listed and its rank fixed.
func (p *opPreemption) statusOf(a *allocation) PreemptionStatus { return p.statusOfRank(a.seq) }

// statusOfRank is statusOf for the listed allocation of rank seq.
func (p *opPreemption) statusOfRank(seq uint64) PreemptionStatus {
	for range 4 {
		v := p.ver.Load()
		if v&1 != 0 {
			continue
		}
		b0, b1 := p.bounds[0].Load(), p.bounds[1].Load()
		if p.ver.Load() == v {
			return classify(seq, b0, b1)
		}
	}
	p.mu.Lock()
	st := classify(seq, p.bounds[0].Load(), p.bounds[1].Load())
	p.mu.Unlock()
	return st
}

// publish stores the boundaries' ranks for statusOf. Caller holds mu.
//
// NB: a boundary is published as the rank after its last allocation's
// (lastSeq), which the balance has at hand, rather than as its first
// allocation's: reading that allocation was a cache miss per publish.
// Between the two ranks no listed allocation is ranked.
func (p *opPreemption) publish() {
	var b [2]uint64
	for i := range b {
		if p.last[i] != nil {
			b[i] = p.lastSeq[i] + 1
		}
	}
	b0, b1 := b[0], b[1]
	if p.bounds[0].Load() == b0 && p.bounds[1].Load() == b1 {
		return
	}
	p.ver.Add(1)
	p.bounds[0].Store(b0)
	p.bounds[1].Store(b1)
	p.ver.Add(1)
}

// counts returns the number of allocations per status. Caller holds mu.
func (p *opPreemption) counts() [statusCount]int64 { return p.n }

// add registers a newly started allocation: it joins the tail of
// Preemptible (docs/semantics.md#preemption-statuses) and the lists are rebalanced. Caller holds mu.
func (p *opPreemption) add(a *allocation) {
	a.seq = p.nextSeq
	p.nextSeq++
	// a joins the list after every boundary's last allocation (a boundary
	// that was nil becomes a): last and edge do not change.
	a.prev, a.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = a
	} else {
		p.head = a
	}
	p.tail = a
	a.listed = true
	if p.bound[1] == nil {
		p.bound[1] = a
		if p.bound[0] == nil {
			p.bound[0] = a
		}
	}
	p.n[Preemptible]++
	p.usage[Preemptible] = p.usage[Preemptible].Add(a.resources)
	// NB: balanced lists with Preemptible allocations before a keep every
	// status: a's prefix is at least theirs, so a is Preemptible too, and
	// the allocations before it keep their prefixes.
	if p.n[Preemptible] > 1 && p.dirty == balanced {
		p.publish()
		return
	}
	p.rebalance()
}

// remove drops a finished or preempted allocation and rebalances. Caller
// holds mu.
func (p *opPreemption) remove(a *allocation) {
	if p.drop(a) {
		p.settle()
	}
}

// drop takes a finished or preempted allocation out of the lists and
// reports whether they wait for a rebalance (settle) now. The statuses
// published stay those of the last rebalance: they class every allocation
// still listed as they did. Caller holds mu.
func (p *opPreemption) drop(a *allocation) bool {
	if !a.listed {
		return p.dirty != balanced
	}
	st := p.status(a)
	for i := range p.bound {
		if p.bound[i] == a {
			p.bound[i] = a.next
		}
		if p.last[i] == a {
			p.setLast(i, a.prev)
		}
	}
	if a.prev != nil {
		a.prev.next = a.next
	} else {
		p.head = a.next
	}
	if a.next != nil {
		a.next.prev = a.prev
	} else {
		p.tail = a.prev
	}
	a.prev, a.next, a.listed = nil, nil, false
	p.n[st]--
	p.usage[st] = p.usage[st].Sub(a.resources)
	// A Preemptible allocation is in no boundary's prefix.
	switch st {
	case NonPreemptible:
		p.dirty = fullDirty
	case AggressivelyPreemptible:
		p.dirty = max(p.dirty, secondDirty)
	}
	return p.dirty != balanced
}

// settle rebalances lists that wait for it and publishes. Caller holds mu.
func (p *opPreemption) settle() {
	switch p.dirty {
	case balanced:
		p.publish()
	case secondDirty:
		p.balance(AggressivelyPreemptible, p.usage[NonPreemptible].Add(p.usage[AggressivelyPreemptible]), p.params.preemptibleBound, !p.params.preemptible)
		p.dirty = balanced
		p.publish()
	default:
		p.rebalance()
	}
}

// setLast makes a (nil: none) the last allocation before boundary i.
func (p *opPreemption) setLast(i int, a *allocation) {
	p.last[i] = a
	if a != nil {
		p.edge[i], p.lastSeq[i] = a.resources, a.seq
	}
}

// resize makes u the usage of allocation a and keeps the sum of its status
// list; the caller rebalances the lists (docs/semantics.md#preemption-statuses: on every resource
// update) once it has resized what it would. Caller holds mu.
func (p *opPreemption) resize(a *allocation, u resource.Vec) {
	if a.listed {
		st := p.status(a)
		p.usage[st] = p.usage[st].Sub(a.resources).Add(u)
		p.dirty = fullDirty
		for i := range p.last {
			if p.last[i] == a {
				p.edge[i] = u
			}
		}
	}
	a.resources = u
}

// statusPrecision is the precision of the status partition's share
// comparisons: a usage share within it of a bound has reached the bound.
// NB: fair shares carry rounding (the improved fit-factor computation gives
// a fair share of 1/3 a few ulps above the usage share of exactly a third
// of the cluster); without a precision such a difference moves an
// allocation across a boundary (Preemptible to AggressivelyPreemptible).
// 1e-9 of the cluster is far below any allocation's share.
const statusPrecision = resource.Epsilon

// below is "usage is below bound" of docs/semantics.md#preemption-statuses: the absolute threshold
// strictly dominates usage, or bound strictly dominates the usage share on
// the non-blocked resources. infinite stands for a bound of +∞. The bounds
// rebalance passes are lowered by statusPrecision, so that a usage share
// within it of the bound has reached the bound.
func (p *opPreemption) below(usage resource.Vec, bound resource.Share, infinite bool) bool {
	if infinite || p.params.threshold.StrictlyDominates(usage) {
		return true
	}
	u := resource.FromResources(usage, p.params.total)
	return starvation.StrictlyDominatesNonBlocked(bound, u, p.params.fairShare, p.params.demandShare)
}

// balance moves the boundary between lists left and left+1 (docs/semantics.md#preemption-statuses):
// shrink left from its tail while the prefix without the tail is still not
// below bound, then grow it from the right list's head while the prefix is
// below bound. prefix is the usage of every list up to and including left.
// It reports whether it moved an allocation, and whether it stopped
// growing only because the right list ran out.
func (p *opPreemption) balance(left PreemptionStatus, prefix resource.Vec, bound resource.Share, infinite bool) (moved, starved bool) {
	right := left + 1
	for p.n[left] > 0 {
		next := prefix.Sub(p.edge[left])
		if p.below(next, bound, infinite) {
			break
		}
		a := p.last[left]
		p.bound[left] = a
		p.setLast(int(left), a.prev)
		p.n[left]--
		p.n[right]++
		p.usage[left] = p.usage[left].Sub(a.resources)
		p.usage[right] = p.usage[right].Add(a.resources)
		prefix, moved = next, true
	}
	for {
		if p.n[right] == 0 {
			return moved, true
		}
		if !p.below(prefix, bound, infinite) {
			return moved, false
		}
		a := p.bound[left]
		p.bound[left] = a.next
		p.setLast(int(left), a)
		p.n[right]--
		p.n[left]++
		p.usage[right] = p.usage[right].Sub(a.resources)
		p.usage[left] = p.usage[left].Add(a.resources)
		prefix, moved = prefix.Add(a.resources), true
	}
}

// rebalance runs the balance procedure (docs/semantics.md#preemption-statuses) and publishes the
// boundaries. The procedure runs twice because moving one boundary may
// move the other's threshold.
//
// NB: the second pass can only move the first boundary, and only when the
// first pass stopped it on an empty AggressivelyPreemptible list that the
// second boundary then filled: the first pass leaves the second boundary
// where its prefix puts it (which the first cannot pass, since F·a ≤ F·p)
// and the first where its prefix puts it unless its right list ran out.
// The statuses are the procedure's fixed point whatever the lists were
// (TestPreemptionListsMatchScan), so the second pass is skipped otherwise.
func (p *opPreemption) rebalance() {
	pr := &p.params
	aggressive, preemptible := pr.aggressiveBound, pr.preemptibleBound
	for range 2 {
		_, starved := p.balance(NonPreemptible, p.usage[NonPreemptible], aggressive, false)
		moved, _ := p.balance(AggressivelyPreemptible, p.usage[NonPreemptible].Add(p.usage[AggressivelyPreemptible]), preemptible, !pr.preemptible)
		if !starved || !moved {
			break
		}
	}
	p.dirty = balanced
	p.publish()
}

// setParams installs new inputs and rebalances. Caller holds mu.
func (p *opPreemption) setParams(params preemptParams) {
	// NB: the bounds are computed once per publish, not at every
	// rebalance (every start and release).
	params.aggressiveBound = params.fairShare.Mul(params.aggressiveThreshold).Sub(resource.Uniform(statusPrecision))
	params.preemptibleBound = params.fairShare.Mul(params.preemptionThreshold).Sub(resource.Uniform(statusPrecision))
	p.params = params
	p.rebalance()
}

// operationPreemptible is operation_preemptible of docs/semantics.md#preemption-statuses: when the
// fair share equals the demand, no allocation may be Preemptible.
func operationPreemptible(fairShare, demandShare resource.Share) bool {
	return !fairShare.Near(demandShare, resource.Epsilon) || demandShare.Near(resource.Share{}, resource.Epsilon)
}

// effectiveThreshold turns a non_preemptible_resource_usage_threshold
// config into its absolute vector: empty means none (all zero, never
// strictly dominates a usage), unspecified components are infinite.
func effectiveThreshold(p tree.PartialVec) resource.Vec {
	if p.IsEmpty() {
		return resource.Vec{}
	}
	return p.OrInfinite()
}
