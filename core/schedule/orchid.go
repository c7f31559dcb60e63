package schedule

import (
	"cmp"
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// Snapshot returns the last published snapshot.
func (s *Scheduler) Snapshot() *Snapshot { return s.snap.Load() }

// OperationInfo is an operation's orchid view (docs/api.md#operations).
type OperationInfo struct {
	ID, Pool string
	State    OperationState
	// Usage includes preempted allocations that still run.
	Demand, Usage  resource.Vec
	Attrs          fairshare.Attributes // as of the last update
	BelowFairShare bool
	Starvation     starvation.State
	// Satisfaction is the satisfaction ratio of the last update (an
	// operation's is its local one); SchedulingSatisfaction is the one the
	// regular stage orders by now, with the live usage (docs/semantics.md).
	Satisfaction           float64
	SchedulingSatisfaction float64
	// HighSchedulingPriority: the operation is in the high scheduling
	// priority class (docs/semantics.md#scheduling-on-a-heartbeat).
	HighSchedulingPriority bool
	RunningAllocations     int64
	PendingJobs            int64
	CompletedJobs          int64
	// WaitingPool and WaitingLimit say why a pending operation waits: the
	// pool whose max_running_operation_count it is queued behind.
	WaitingPool  string
	WaitingLimit int64
	StartTime    clock.Time
	// PreemptionPriority is the operation's preemption priority at the
	// last update (docs/semantics.md#starvation).
	PreemptionPriority PreemptionPriority
	// AllocationsByStatus counts its running, not preempted allocations
	// per preemption status (docs/semantics.md#preemption-statuses), indexed by PreemptionStatus;
	// PreemptedAllocations counts those told to stop that still run.
	AllocationsByStatus  [statusCount]int64
	PreemptedAllocations int64
	// SchedulingTagFilter is the operation's own filter (docs/semantics.md#pools-and-operations).
	SchedulingTagFilter tagfilter.Filter
	// SchedulingTagFilterResourceLimits are the resources of the nodes
	// that match it at the last update (all nodes without a filter), and
	// BestAllocationShare the share of the cluster its allocations could
	// use by memory granularity (docs/semantics.md#best-allocation-share; zero before its first update).
	SchedulingTagFilterResourceLimits tree.PartialVec
	BestAllocationShare               resource.Share
}

// Operation returns an operation's view.
func (s *Scheduler) Operation(id string) (OperationInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookup(id)
	if err != nil {
		return OperationInfo{}, err
	}
	return s.operationInfo(o), nil
}

// Operations appends the views of every known operation, in start order.
func (s *Scheduler) Operations(dst []OperationInfo) []OperationInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := make([]*operation, 0, len(s.ops))
	for _, o := range s.ops {
		ops = append(ops, o)
	}
	slices.SortFunc(ops, func(a, b *operation) int { return cmp.Compare(a.seq, b.seq) })
	for _, o := range ops {
		dst = append(dst, s.operationInfo(o))
	}
	return dst
}

func (s *Scheduler) operationInfo(o *operation) OperationInfo {
	info := OperationInfo{ID: o.id, Pool: o.spec.Pool, State: o.State(), Demand: o.demand(), Usage: o.Usage(),
		RunningAllocations: o.running.Load(), PendingJobs: o.pendingJobs(), StartTime: o.startTime}
	if info.Pool == "" {
		info.Pool = tree.RootName
	}
	for i := range o.tasks {
		info.CompletedJobs += o.tasks[i].completed.Load()
	}
	if !o.retired && s.fsGen > 0 && o.fsGen == s.fsGen {
		info.Attrs = *s.fs.Attributes(o.treeID)
		info.SchedulingTagFilterResourceLimits = s.tagFilterLimits(s.tree.NodeLimits(o.treeID).TagFilter)
	}
	o.pre.mu.Lock()
	info.AllocationsByStatus = o.pre.counts()
	o.pre.mu.Unlock()
	info.PreemptedAllocations = o.preemptedCount.Load()
	info.SchedulingTagFilter = o.spec.SchedulingTagFilter
	if o.best.valid {
		info.BestAllocationShare = o.best.share
	}
	if snap := s.snap.Load(); snap != nil {
		if v := o.view.Load(); v != nil && !o.retired && inSnapshot(snap, v) {
			info.PreemptionPriority = v.priority
			info.HighSchedulingPriority = v.highPriority
			info.SchedulingSatisfaction = satisfaction(v, snap.Total)
		}
	}
	if !o.retired {
		info.BelowFairShare = o.starvation.belowFairShare
		info.Starvation = o.starvation.tracker.State
		info.Satisfaction = o.starvation.satisfaction
		if s.limits.State(o.treeID) == limits.Pending {
			p, l := s.limits.WaitingFor(o.treeID)
			info.WaitingPool, info.WaitingLimit = s.tree.Name(p), l
		}
	}
	return info
}

// PoolInfo is a pool's orchid view (docs/api.md#the-orchid).
type PoolInfo struct {
	Name, Parent   string
	Config         tree.PoolConfig
	Attrs          fairshare.Attributes
	BelowFairShare bool
	Starvation     starvation.State
	// Satisfaction is the minimum over the pool's schedulable children at
	// the last update (infinite without any); LocalSatisfaction is the
	// pool's own local ratio (docs/semantics.md#satisfaction-and-status).
	Satisfaction, LocalSatisfaction  float64
	OperationCount                   int64
	RunningOperationCount            int64
	LightweightRunningOperationCount int64
	PendingOperationCount            int64
	MaxOperationCount                int64
	MaxRunningOperationCount         int64
	// SchedulingTagFilterResourceLimits are the resources of the nodes that
	// match the pool's scheduling_tag_filter at the last update (all nodes
	// without a filter; docs/semantics.md#pools-and-operations).
	SchedulingTagFilterResourceLimits tree.PartialVec
}

// Pool returns a pool's view (the root is "<Root>").
func (s *Scheduler) Pool(name string) (PoolInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tree.Lookup(name)
	if !ok || s.tree.IsOperation(id) {
		return PoolInfo{}, errorf(tree.CodeUnknownPool, "name", "cannot find pool \"%s\"", name)
	}
	return s.poolInfo(id), nil
}

// Pools appends every pool's view in tree pre-order, the root first.
func (s *Scheduler) Pools(dst []PoolInfo) []PoolInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tree.Walk(func(id tree.ID) {
		if !s.tree.IsOperation(id) {
			dst = append(dst, s.poolInfo(id))
		}
	})
	return dst
}

func (s *Scheduler) poolInfo(id tree.ID) PoolInfo {
	t := s.tree
	info := PoolInfo{Name: t.Name(id), Config: *t.Pool(id),
		OperationCount:                   s.limits.OperationCount(id),
		RunningOperationCount:            s.limits.RunningOperationCount(id),
		LightweightRunningOperationCount: s.limits.LightweightRunningOperationCount(id),
		PendingOperationCount:            s.limits.PendingOperationCount(id),
		MaxOperationCount:                s.limits.EffectiveMaxOperationCount(id),
		MaxRunningOperationCount:         s.limits.EffectiveMaxRunningOperationCount(id),
	}
	if p := t.Parent(id); p != tree.None {
		info.Parent = t.Name(p)
	}
	if s.fsGen > 0 && s.poolsAtUpdate == t.StructureVersion() {
		info.Attrs = *s.fs.Attributes(id)
		info.SchedulingTagFilterResourceLimits = s.tagFilterLimits(t.NodeLimits(id).TagFilter)
	}
	st := s.poolStarvation[info.Name]
	if id == tree.Root {
		st = &s.rootStatus
	}
	if st != nil {
		info.BelowFairShare, info.Starvation = st.belowFairShare, st.tracker.State
		info.Satisfaction, info.LocalSatisfaction = st.satisfaction, st.localSatisfaction
	}
	return info
}

// tagFilterLimits returns an element's scheduling-tag-filter resource
// limits for its view: those of its filter's nodes, or all nodes.
func (s *Scheduler) tagFilterLimits(l tree.PartialVec) tree.PartialVec {
	if l.IsEmpty() {
		return tree.Full(s.total)
	}
	return l
}

// Total returns the total resources of the registered nodes at the last update.
func (s *Scheduler) Total() resource.Vec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// NodeInfo is a node's orchid view.
type NodeInfo struct {
	Name          string
	Limits, Usage resource.Vec
	// PreemptedUsage is the part of Usage held by preempted allocations
	// that have not stopped yet.
	PreemptedUsage resource.Vec
	LastHeartbeat  clock.Time
	// Tags are the tags of its last heartbeat (a copy).
	Tags []string
	// Schedulable is false while its last heartbeat cordoned it.
	Schedulable bool
	Allocations []AllocationInfo
}

// AllocationInfo is one allocation of a node.
type AllocationInfo struct {
	ID        uint64
	Operation string
	Task      int
	Resources resource.Vec
	Start     clock.Time
	// Status is the allocation's preemption status (docs/semantics.md#preemption-statuses); for a
	// preempted allocation the one it had when it was preempted.
	Status    PreemptionStatus
	Preempted bool
	// Deadline is when a preempted allocation must be gone.
	Deadline clock.Time
}

// Node returns a node's view; Allocations are in ID (start) order.
func (s *Scheduler) Node(name string) (NodeInfo, bool) {
	sh, hash := s.shardAndHash(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes.get(name, hash)
	if n == nil {
		return NodeInfo{}, false
	}
	info := NodeInfo{Name: n.name, Limits: n.limits, Usage: n.usage, PreemptedUsage: n.preemptedUsage, LastHeartbeat: n.lastHeartbeat,
		Tags: slices.Clone(n.tags), Schedulable: !n.unschedulable}
	info.Allocations = make([]AllocationInfo, 0, len(n.allocs))
	for _, a := range n.allocs {
		st := a.status
		if !a.preempted {
			st = a.op.pre.statusOf(a)
		}
		info.Allocations = append(info.Allocations, AllocationInfo{ID: a.id, Operation: a.op.id, Task: int(a.task),
			Resources: a.resources, Start: a.start, Status: st, Preempted: a.preempted, Deadline: a.deadline})
	}
	return info, true
}
