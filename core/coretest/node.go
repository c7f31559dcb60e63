package coretest

import (
	"slices"

	"github.com/fairsched/fairsched/core/clock"
)

// AllocState is what a simulated node reports of one of its allocations.
type AllocState uint8

// The states of a simulated node's allocation.
const (
	// AllocRunning: the allocation runs (or was not yet settled).
	AllocRunning AllocState = iota
	// AllocCompleted: its job completed; reported once.
	AllocCompleted
	// AllocFailed: its job failed (Finish); reported once.
	AllocFailed
	// AllocAborted: it stopped after a preemption; reported once.
	AllocAborted
	// AllocRefused: the node did not start it (Finish); reported once.
	AllocRefused
)

// Alloc is one allocation a simulated node holds. ID is the allocation's
// identifier as the caller's transport writes it (the core's uint64, the
// HTTP API's string); Meta is whatever the caller keeps per allocation.
type Alloc[ID comparable, M any] struct {
	ID    ID
	State AllocState
	// End is when the job completes; clock.Never: it runs until stopped.
	// A caller may move it (a job that completes now: End = the time).
	End clock.Time
	// Preempted says the scheduler asked the node to preempt it; it stops
	// at StopAt (clock.Never: it never stops by itself), which Preempt
	// sets from the node's StopDelay and a caller may move (a node that
	// stops it at the preemption's timeout).
	Preempted bool
	StopAt    clock.Time
	Meta      M
}

// Node is the simulated node agent that the scenario runner, the simulator
// and the tests of the core, the facade, the dashboard and crash recovery
// share: the one model of what a node does with a heartbeat's answer.
//
//   - It runs an allocation it is told to start until its End, and then
//     reports it completed.
//   - It stops an allocation it is told to preempt StopDelay after being
//     told (0: it is stopped by the next heartbeat; negative: never), and
//     reports it aborted. Whichever of the end and the stop comes first
//     decides; a job that ends the instant it is stopped completed.
//   - A finished allocation's report is delivered once: the next answered
//     heartbeat drops it (a heartbeat that got no answer reports it again).
//   - An allocation the scheduler tells it to abort is gone at once.
//   - An allocation it is made to forget (an agent that restarted or lost
//     an answer) is neither run nor reported.
//
// The node keeps its allocations in the order they were started, which is
// the order of its reports. It is not safe for concurrent use.
type Node[ID comparable, M any] struct {
	// StopDelay is how long after a preemption the node stops the
	// allocation; negative: it never stops one.
	StopDelay clock.Duration
	allocs    []Alloc[ID, M]
}

// Allocs returns the node's allocations in the order they were started,
// finished ones not yet delivered included. The slice is the node's own: a
// caller may change an element's End and Meta, not the slice.
func (n *Node[ID, M]) Allocs() []Alloc[ID, M] { return n.allocs }

// Len returns the number of allocations the node holds.
func (n *Node[ID, M]) Len() int { return len(n.allocs) }

// Advance settles the node's running allocations at t: each whose end or
// stop time passed becomes completed or aborted, and settled (when not nil)
// is called with it, in the order of the allocations.
func (n *Node[ID, M]) Advance(t clock.Time, settled func(a *Alloc[ID, M])) {
	for i := range n.allocs {
		a := &n.allocs[i]
		if a.State != AllocRunning {
			continue
		}
		switch {
		case a.End <= t && (!a.Preempted || a.End <= a.StopAt):
			a.State = AllocCompleted
		case a.Preempted && a.StopAt <= t:
			a.State = AllocAborted
		default:
			continue
		}
		if settled != nil {
			settled(a)
		}
	}
}

// Due reports whether Advance(t) would settle an allocation.
func (n *Node[ID, M]) Due(t clock.Time) bool {
	for i := range n.allocs {
		if a := &n.allocs[i]; a.State == AllocRunning && (a.End <= t || a.Preempted && a.StopAt <= t) {
			return true
		}
	}
	return false
}

// Delivered records that a heartbeat reporting the node's allocations was
// answered: the finished ones are dropped, and dropped (when not nil) is
// called with each, in order.
func (n *Node[ID, M]) Delivered(dropped func(a *Alloc[ID, M])) {
	n.Forget(func(a *Alloc[ID, M]) bool {
		if a.State == AllocRunning {
			return false
		}
		if dropped != nil {
			dropped(a)
		}
		return true
	})
}

// Finish ends allocation id now in state st (AllocCompleted, AllocFailed,
// AllocRefused, …), as a job that ends before its End or a node that
// refuses to start it; it reports false when the node holds no running
// allocation id.
func (n *Node[ID, M]) Finish(id ID, st AllocState) bool {
	a := n.find(id)
	if a == nil || a.State != AllocRunning {
		return false
	}
	a.State = st
	return true
}

// Start makes the node run a new allocation until end (clock.Never: until
// it is stopped).
func (n *Node[ID, M]) Start(id ID, end clock.Time, meta M) {
	n.allocs = append(n.allocs, Alloc[ID, M]{ID: id, End: end, StopAt: clock.Never, Meta: meta})
}

// Preempt tells the node at t to preempt allocation id: it stops it
// StopDelay later. It returns the allocation, or nil when the node does not
// run it or was already told to preempt it.
func (n *Node[ID, M]) Preempt(t clock.Time, id ID) *Alloc[ID, M] {
	a := n.find(id)
	if a == nil || a.State != AllocRunning || a.Preempted {
		return nil
	}
	a.Preempted, a.StopAt = true, clock.Never
	if n.StopDelay >= 0 {
		a.StopAt = t.Add(n.StopDelay)
	}
	return a
}

// Abort tells the node to abort allocation id: it is gone at once. It
// returns the allocation, and false when the node did not hold it.
func (n *Node[ID, M]) Abort(id ID) (Alloc[ID, M], bool) {
	for i := range n.allocs {
		if n.allocs[i].ID == id {
			a := n.allocs[i]
			n.allocs = slices.Delete(n.allocs, i, i+1)
			return a, true
		}
	}
	return Alloc[ID, M]{}, false
}

// Forget drops every allocation for which drop is true, as an agent that
// restarted or lost an answer: it neither runs nor reports them.
func (n *Node[ID, M]) Forget(drop func(a *Alloc[ID, M]) bool) {
	kept := n.allocs[:0]
	for i := range n.allocs {
		if !drop(&n.allocs[i]) {
			kept = append(kept, n.allocs[i])
		}
	}
	clear(n.allocs[len(kept):])
	n.allocs = kept
}

// Find returns allocation id, or nil when the node does not hold it.
func (n *Node[ID, M]) Find(id ID) *Alloc[ID, M] { return n.find(id) }

func (n *Node[ID, M]) find(id ID) *Alloc[ID, M] {
	for i := range n.allocs {
		if n.allocs[i].ID == id {
			return &n.allocs[i]
		}
	}
	return nil
}
