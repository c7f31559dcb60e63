package schedule

import (
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// OperationState is an operation's lifecycle state.
type OperationState uint32

// Operation states: pending (waiting for a running slot, docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations),
// running, and the two final states.
const (
	StatePending OperationState = iota
	StateRunning
	StateCompleted
	StateAborted
)

func (s OperationState) String() string {
	switch s {
	case StateRunning:
		return "running"
	case StateCompleted:
		return "completed"
	case StateAborted:
		return "aborted"
	}
	return "pending"
}

// Final reports whether the state is completed or aborted.
func (s OperationState) Final() bool { return s >= StateCompleted }

// PreemptionMode is an operation's preemption mode (docs/semantics.md#graceful-preemption).
type PreemptionMode uint8

// Preemption modes.
const (
	PreemptionNormal PreemptionMode = iota
	PreemptionGraceful
)

func (m PreemptionMode) String() string {
	if m == PreemptionGraceful {
		return "graceful"
	}
	return "normal"
}

// TaskSpec is one task of an operation: JobCount jobs of Resources each.
type TaskSpec struct {
	Name          string
	JobCount      int64
	Resources     resource.Vec
	DurationHintS float64
}

// OperationSpec describes an operation to start (docs/api.md#operations).
type OperationSpec struct {
	ID             string // empty: the scheduler names it op-<n>
	Pool           string // empty: the root
	Type           string // map, reduce, vanilla, …; only vanilla may be lightweight
	Weight         tree.OptFloat
	PreemptionMode PreemptionMode
	IsGang         bool
	ResourceLimits tree.PartialVec

	AllocationPreemptionTimeout         tree.OptDuration
	AllocationGracefulPreemptionTimeout tree.OptDuration
	FairShareStarvationTolerance        tree.OptFloat
	FairShareStarvationTimeout          tree.OptDuration
	// NonPreemptibleResourceUsageThreshold may only lower the inherited
	// threshold, per resource (docs/semantics.md).
	NonPreemptibleResourceUsageThreshold tree.PartialVec
	// SchedulingTagFilter restricts the operation to the nodes it matches,
	// besides its pools' filters (docs/semantics.md).
	SchedulingTagFilter tagfilter.Filter

	Tasks []TaskSpec
}

// task is the live state of one task. pending is claimed by heartbeats with
// compare-and-swap; the counts are shared between shards.
type task struct {
	spec      TaskSpec // JobCount is the current one (PatchOperation)
	pending   atomic.Int64
	running   atomic.Int64
	completed atomic.Int64
	// excess counts running jobs beyond the job count, after the count
	// went below the completed and running jobs (setJobCount): while it
	// is positive no job is pending, and a job that ends does not return
	// to pending (endJob).
	excess atomic.Int64
}

// claim takes one pending job of the task, if it has one (heartbeats of
// every shard claim concurrently).
func (tk *task) claim() bool {
	for {
		p := tk.pending.Load()
		if p <= 0 {
			return false
		}
		if tk.pending.CompareAndSwap(p, p-1) {
			return true
		}
	}
}

// operation is the live state of one operation.
type operation struct {
	id     string
	seq    uint64 // start order
	treeID tree.ID
	spec   OperationSpec
	tasks  []task

	state      atomic.Uint32 // OperationState
	usage      [resource.Count]atomic.Int64
	running    atomic.Int64 // allocations
	unfinished atomic.Int64 // jobs pending or running
	// jobsMu serialises the ends of jobs of tasks with excess jobs
	// (endExcessJob); a leaf.
	jobsMu sync.Mutex
	// retired is set by the control plane when it removed the operation
	// from the tree and the limits.
	retired bool
	// best is its best allocation share (control plane only, tags.go),
	// next to what the update reads of every operation.
	best bestShare
	// limited holds the usage counters of the operation itself and of every
	// ancestor pool with specified resource limits, checked and charged
	// when an allocation starts (docs/semantics.md#scheduling-on-a-heartbeat precommit).
	limited atomic.Pointer[[]*limitCounter]
	// own is the counter of the operation's own resource limits (control
	// plane; nil without limits).
	own *limitCounter

	starvation starvationState // control plane only
	fsGen      uint64          // the fair-share update that last saw it
	startTime  clock.Time

	// pre holds the preemption status lists of the operation's allocations
	// (docs/semantics.md#preemption-statuses) under their own mutex: the allocations live on nodes of
	// every shard.
	pre opPreemption
	// view is the operation in the last published snapshot (nil before
	// the first update that saw it running).
	view atomic.Pointer[opView]
	// preempted is the usage of its allocations that were told to stop but
	// still run; they are no longer charged to the limit counters.
	preempted      [resource.Count]atomic.Int64
	preemptedCount atomic.Int64
}

// limitCounter is the live usage of an element with resource limits.
type limitCounter struct {
	limits resource.Vec
	usage  [resource.Count]atomic.Int64
}

func (o *operation) State() OperationState { return OperationState(o.state.Load()) }

// Usage returns the operation's current usage.
func (o *operation) Usage() resource.Vec {
	var v resource.Vec
	for r := range v {
		v[r] = o.usage[r].Load()
	}
	return v
}

// preemptedUsage returns the usage of its preempted, still running allocations.
func (o *operation) preemptedUsage() resource.Vec {
	var v resource.Vec
	for r := range v {
		v[r] = o.preempted[r].Load()
	}
	return v
}

func (o *operation) graceful() bool { return o.spec.PreemptionMode == PreemptionGraceful }

// limitViolated reports whether the operation's or an ancestor pool's
// specified resource limits are exceeded (docs/semantics.md#preemptive-stages).
func (o *operation) limitViolated() bool {
	lp := o.limited.Load()
	if lp == nil {
		return false
	}
	for _, c := range *lp {
		for r := range c.limits {
			if c.usage[r].Load() > c.limits[r] {
				return true
			}
		}
	}
	return false
}

// demand is usage plus every pending job (demand is derived
// from unfinished jobs, docs/semantics.md#pools-and-operations).
func (o *operation) demand() resource.Vec {
	d := o.Usage()
	for i := range o.tasks {
		t := &o.tasks[i]
		if p := t.pending.Load(); p > 0 {
			d = d.Add(t.spec.Resources.Scale(p))
		}
	}
	return d
}

// pendingJobs is the number of jobs not yet started.
func (o *operation) pendingJobs() int64 {
	n := int64(0)
	for i := range o.tasks {
		n += max(o.tasks[i].pending.Load(), 0)
	}
	return n
}

func (o *operation) addUsage(v resource.Vec, sign int64) {
	for r, x := range v {
		if x != 0 {
			o.usage[r].Add(sign * x)
		}
	}
}

// charge adds v to the operation's and its limited ancestors' usage if none
// of their limits is exceeded; it reports whether it did.
func (o *operation) charge(v resource.Vec) bool {
	lp := o.limited.Load()
	if lp == nil {
		return true
	}
	cs := *lp
	for i, c := range cs {
		ok := true
		for r, x := range v {
			if x == 0 {
				continue
			}
			if c.usage[r].Add(x) > c.limits[r] {
				ok = false
			}
		}
		if !ok {
			for j := 0; j <= i; j++ {
				for r, x := range v {
					if x != 0 {
						cs[j].usage[r].Add(-x)
					}
				}
			}
			return false
		}
	}
	return true
}

// fittingTask returns the first task with a pending job that fits free and
// the operation's limits (-1 if none), and whether any task has a pending
// job at all.
func (o *operation) fittingTask(free resource.Vec) (task int, pending bool) {
	for j := range o.tasks {
		tk := &o.tasks[j]
		if tk.pending.Load() <= 0 {
			continue
		}
		pending = true
		if free.Dominates(tk.spec.Resources) && o.fitsLimits(tk.spec.Resources) {
			return j, true
		}
	}
	return -1, pending
}

// fitsLimits reports whether v fits under every limit the operation charges.
func (o *operation) fitsLimits(v resource.Vec) bool {
	lp := o.limited.Load()
	if lp == nil {
		return true
	}
	for _, c := range *lp {
		for r, x := range v {
			if x != 0 && c.usage[r].Load()+x > c.limits[r] {
				return false
			}
		}
	}
	return true
}

// recharge adds d, a change of a running allocation's measured usage of
// either sign, to the operation's and its limited ancestors' counters
// without checking their limits (docs/semantics.md#preemptive-stages: an excess is a limit
// violation, repaid by preemption).
func (o *operation) recharge(d resource.Vec) {
	lp := o.limited.Load()
	if lp == nil {
		return
	}
	for _, c := range *lp {
		for r, x := range d {
			if x != 0 {
				c.usage[r].Add(x)
			}
		}
	}
}

func (o *operation) uncharge(v resource.Vec) {
	lp := o.limited.Load()
	if lp == nil {
		return
	}
	for _, c := range *lp {
		for r, x := range v {
			if x != 0 {
				c.usage[r].Add(-x)
			}
		}
	}
}
