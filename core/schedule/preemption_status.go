package schedule

import (
	"sync"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// PreemptionStatus is an allocation's preemption status (spec.md §4).
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

// PreemptionPriority is an operation's preemption priority (spec.md §3.5):
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

// allocList is one of an operation's three status lists: an intrusive
// doubly linked list (through allocation.prev/next) in start order, with
// the summed resources of its members.
type allocList struct {
	head, tail *allocation
	n          int64
	usage      resource.Vec
}

// preemptParams are the inputs of the rebalancing (spec.md §4), set after
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
// Preemptible lists (spec.md §4, the reference's operation shared state).
// Together the lists hold the operation's running, not preempted
// allocations in start order.
//
// Concurrency: mu guards the lists, params and every listed allocation's
// prev/next/status/listed fields. It is taken with the allocation's shard
// mutex held (heartbeats) or with the control lock held (fair-share
// publish), never the other way round; under it the node index mutex
// (node.idxMu, a leaf) is taken to move allocations between the node's
// status buckets.
type opPreemption struct {
	mu     sync.Mutex
	lists  [statusCount]allocList
	params preemptParams
}

// counts returns the number of allocations per status. Caller holds mu.
func (p *opPreemption) counts() [statusCount]int64 {
	return [statusCount]int64{p.lists[0].n, p.lists[1].n, p.lists[2].n}
}

// pushBack appends a to list st (the node bucket is the caller's).
func (p *opPreemption) pushBack(st PreemptionStatus, a *allocation) {
	l := &p.lists[st]
	a.prev, a.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = a
	} else {
		l.head = a
	}
	l.tail = a
	l.n++
	l.usage = l.usage.Add(a.resources)
}

// pushFront prepends a to list st.
func (p *opPreemption) pushFront(st PreemptionStatus, a *allocation) {
	l := &p.lists[st]
	a.prev, a.next = nil, l.head
	if l.head != nil {
		l.head.prev = a
	} else {
		l.tail = a
	}
	l.head = a
	l.n++
	l.usage = l.usage.Add(a.resources)
}

// unlink removes a from list st (its own).
func (p *opPreemption) unlink(st PreemptionStatus, a *allocation) {
	l := &p.lists[st]
	if a.prev != nil {
		a.prev.next = a.next
	} else {
		l.head = a.next
	}
	if a.next != nil {
		a.next.prev = a.prev
	} else {
		l.tail = a.prev
	}
	a.prev, a.next = nil, nil
	l.n--
	l.usage = l.usage.Sub(a.resources)
}

// add registers a newly started allocation: it joins the tail of
// Preemptible (spec.md §4) and the lists are rebalanced.
func (p *opPreemption) add(a *allocation) {
	p.pushBack(Preemptible, a)
	a.node.bucketInsert(a, Preemptible)
	p.rebalance()
}

// remove drops a finished or preempted allocation and rebalances.
func (p *opPreemption) remove(a *allocation) {
	if !a.listed {
		return
	}
	p.unlink(a.status, a)
	a.node.bucketRemove(a)
	p.rebalance()
}

// statusPrecision is the precision of the status partition's share
// comparisons: a usage share within it of a bound has reached the bound.
// NB: fair shares carry rounding (the improved fit-factor computation gives
// a fair share of 1/3 a few ulps above the usage share of exactly a third
// of the cluster); without a precision such a difference moves an
// allocation across a boundary (Preemptible to AggressivelyPreemptible).
// 1e-9 of the cluster is far below any allocation's share.
const statusPrecision = resource.Epsilon

// below is "usage is below bound" of spec.md §4: the absolute threshold
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

// balance moves the boundary between lists left and left+1 (spec.md §4):
// shrink left from its tail while the prefix without the tail is still not
// below bound, then grow it from the right list's head while the prefix is
// below bound. prefix is the usage of every list up to and including left.
// It reports whether it moved an allocation.
func (p *opPreemption) balance(left PreemptionStatus, prefix resource.Vec, bound resource.Share, infinite bool) (moved bool) {
	right := left + 1
	l, r := &p.lists[left], &p.lists[right]
	for l.n > 0 {
		a := l.tail
		next := prefix.Sub(a.resources)
		if p.below(next, bound, infinite) {
			break
		}
		p.unlink(left, a)
		p.pushFront(right, a)
		a.node.bucketMove(a, right)
		prefix, moved = next, true
	}
	for r.n > 0 {
		if !p.below(prefix, bound, infinite) {
			break
		}
		a := r.head
		p.unlink(right, a)
		p.pushBack(left, a)
		a.node.bucketMove(a, left)
		prefix, moved = prefix.Add(a.resources), true
	}
	return moved
}

// rebalance runs the balance procedure twice, because moving one boundary
// may move the other's threshold (spec.md §4). When the first pass moves
// nothing the second would find the same lists and is skipped.
func (p *opPreemption) rebalance() {
	pr := &p.params
	aggressive, preemptible := pr.aggressiveBound, pr.preemptibleBound
	for range 2 {
		moved := p.balance(NonPreemptible, p.lists[NonPreemptible].usage, aggressive, false)
		if p.balance(AggressivelyPreemptible, p.lists[NonPreemptible].usage.Add(p.lists[AggressivelyPreemptible].usage), preemptible, !pr.preemptible) {
			moved = true
		}
		if !moved {
			return
		}
	}
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

// operationPreemptible is operation_preemptible of spec.md §4: when the
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
