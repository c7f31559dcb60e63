package schedule

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// Snapshot is what heartbeats read from the last fair-share update. It is
// immutable once published.
type Snapshot struct {
	Time  clock.Time
	Total resource.Vec
	ops   []opView // running operations, in tree pre-order
	// tags holds the compiled scheduling tag filters (nil when no element
	// has one); opView.class indexes its classes.
	tags *tagTable
	// targets lists the operations (indices into ops) of each preemption
	// priority: the candidates of the preemptive stage with that target; a
	// stage without any is skipped (docs/semantics.md#preemptive-stages).
	targets [priorityCount][]int32
	// items are the shards' index items of ops (opIndex.sync), computed
	// once at the publish; absent marks an operation not to index (not
	// schedulable, or without pending jobs).
	items []indexItem
}

// indexItem is an operation's opIndex item as of the publish.
type indexItem struct {
	heapItem
	absent bool
}

// opView is an operation as of the last fair-share update.
type opView struct {
	op             *operation
	index          int32 // in Snapshot.ops
	fairShare      resource.Share
	demandShare    resource.Share
	belowFairShare bool
	starvation     starvation.State
	// priority is the operation's preemption priority (docs/semantics.md#starvation).
	priority PreemptionPriority
	// highPriority puts the operation in the high scheduling priority
	// class (docs/semantics.md#scheduling-on-a-heartbeat, enable_guarantee_priority_scheduling).
	highPriority bool
	// allowAggressive is the effective allow_aggressive_preemption.
	allowAggressive bool
	// normalBlocked: allow_normal_preemption = false on the path.
	normalBlocked bool
	// detached marks a copy held by an operation that left the snapshots
	// (see detachViews); it is never an element of Snapshot.ops.
	detached bool
	// class is the operation's filter class (tags.go): the scheduling tag
	// filters of its path, which a node must match. 0: none.
	class int32
}

// starvationState is an element's persistent status (control plane only).
type starvationState struct {
	tracker        starvation.Tracker
	belowFairShare bool
	// satisfaction is the element's satisfaction ratio at the last update
	// (docs/semantics.md#satisfaction-and-status): an operation's own; a pool's the minimum over its
	// schedulable children, infinite when it has none.
	// localSatisfaction is the element's own local ratio.
	satisfaction, localSatisfaction float64
}

// effective holds an element's inherited parameters.
type effective struct {
	tolerance float64
	params    starvation.Params
	// starving and aggressive: the element or an ancestor pool starves
	// (aggressively) — docs/semantics.md#starvation's lowest (aggressively) starving
	// ancestor exists.
	starving, aggressive bool
	allowAggressive      bool
	normalBlocked        bool
	// threshold is the absolute non_preemptible_resource_usage_threshold.
	threshold resource.Vec
}

// UpdateFairShare runs the fair-share update at virtual time now (every
// Config.FairShareUpdatePeriod): it retires finished operations,
// unregisters silent nodes (their jobs return to pending), feeds every
// operation's demand and usage to the fair-share core, judges statuses,
// starvation and preemption priorities (docs/semantics.md#satisfaction-and-status), publishes a new
// Snapshot for heartbeats and rebalances every operation's preemption
// status lists with its new fair share.
func (s *Scheduler) UpdateFairShare(now clock.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recovering(now) // closes the window at its deadline
	s.endAdoption(now)
	s.retireFinished()
	s.prepareTags()
	total := s.sweepNodes(now)
	s.retireFinished()
	s.total = total
	s.lastNow = now

	t := s.tree
	s.setPoolNodeLimits()
	for _, o := range s.ops {
		if o.retired {
			continue
		}
		if o.State() == StateRunning {
			demand := o.demand()
			t.SetDemandUsage(o.treeID, demand, o.Usage())
			t.SetPendingJobCount(o.treeID, o.pendingJobs())
			if l, changed := s.nodeLimits(o, demand, now); changed {
				t.SetNodeLimits(o.treeID, l)
			}
		} else {
			t.SetDemandUsage(o.treeID, resource.Vec{}, resource.Vec{})
		}
	}
	s.fs.Update(total, now)
	s.fsGen++
	for _, o := range s.ops {
		if !o.retired {
			o.fsGen = s.fsGen
		}
	}
	s.poolsAtUpdate = t.StructureVersion()

	snap := &Snapshot{Time: now, Total: total, tags: s.tags.table}
	eff := s.judge(now, func(o *operation, a *fairshare.Attributes, e *effective, below bool, state starvation.State) {
		high := s.cfg.EnableGuaranteePriorityScheduling &&
			starvation.StrictlyDominatesNonBlocked(a.PromisedGuaranteeFairShare.Total, a.UsageShare, a.FairShare.Total, a.DemandShare)
		snap.ops = append(snap.ops, opView{op: o, fairShare: a.FairShare.Total, demandShare: a.DemandShare,
			belowFairShare: below, starvation: state, priority: s.preemptionPriority(state, e), highPriority: high,
			allowAggressive: e.allowAggressive, normalBlocked: e.normalBlocked, class: s.classOf(o.treeID)})
	})
	for i := range snap.ops {
		v := &snap.ops[i]
		v.index = int32(i)
		if v.priority != PriorityNone {
			snap.targets[v.priority] = append(snap.targets[v.priority], int32(i))
		}
		v.op.view.Store(v)
		s.publishPreemption(v, total, eff[v.op.treeID].threshold)
	}
	// NB: after the views: a heartbeat that changes an operation's usage
	// from now on sees the new view and has its shard re-key it at its
	// rebuild (opIndex.touch). Computed here once, not by every shard.
	snap.items = make([]indexItem, len(snap.ops))
	for i := range snap.ops {
		v := &snap.ops[i]
		need, ok := pendingNeed(v.op)
		it := &snap.items[i]
		it.idx, it.need, it.high = int32(i), need, v.highPriority
		it.absent = !ok || v.op.graceful() && !v.belowFairShare
		if !it.absent {
			it.key = satisfaction(v, total)
		}
	}
	s.snap.Store(snap)
	s.detachViews(snap)
}

// judge is the judgement of a fair-share update, run after s.fs.Update
// by UpdateFairShare and by the what-if sandbox's Result (whatif.go) — one
// function, so that a preview judges as the update does: it walks the
// tree with the inherited parameters of effectiveParams, gives every pool
// its starvation (poolStarvationAt) and every running operation its
// below-fair-share status, starvation (scaled by the pending job count the
// update put in the tree) and satisfaction, then the root its
// satisfaction (poolSatisfaction), and forgets the pools that are gone.
// visit, when not nil, gets every running operation with its attributes,
// inherited parameters, status and new starvation state, in tree order.
// It returns the inherited parameters by tree ID. s.mu held.
func (s *Scheduler) judge(now clock.Time, visit func(o *operation, a *fairshare.Attributes, e *effective, below bool, state starvation.State)) []effective {
	t := s.tree
	eff := make([]effective, t.Len())
	pools := 0
	t.Walk(func(id tree.ID) {
		e := s.effectiveParams(id, eff)
		a := s.fs.Attributes(id)
		if !t.IsOperation(id) {
			if id != tree.Root {
				pools++
				st := s.poolStarvationAt(now, id, a, e)
				e.starving = e.starving || st.tracker.State != starvation.NonStarving
				e.aggressive = e.aggressive || st.tracker.State == starvation.AggressivelyStarving
			}
			eff[id] = e
			return
		}
		eff[id] = e
		o := s.byTree[id]
		if o == nil || o.State() != StateRunning {
			return
		}
		p := e.params.ScaleForPendingJobs(t.PendingJobCount(id), s.cfg.AllocationCountPreemptionTimeoutCoefficient)
		below := starvation.OperationBelowFairShare(a.FairShare.Total, a.DemandShare, a.UsageShare, e.tolerance)
		o.starvation.belowFairShare = below
		state := o.starvation.tracker.Observe(now, below, p)
		o.starvation.localSatisfaction = starvation.LocalSatisfaction(a.FairShare.Total, a.DemandShare, a.UsageShare)
		o.starvation.satisfaction = o.starvation.localSatisfaction
		if visit != nil {
			visit(o, a, &e, below, state)
		}
	})
	a := s.fs.Attributes(tree.Root)
	s.rootStatus.localSatisfaction = starvation.LocalSatisfaction(a.FairShare.Total, a.DemandShare, a.UsageShare)
	s.rootStatus.satisfaction = s.poolSatisfaction(tree.Root)
	s.forgetPools(pools)
	return eff
}

// detachViews gives every operation that is not in snap (it finished or
// waits in a pending queue) its own copy of its last view. A view points
// into its snapshot's ops array, so one kept by a finished operation would
// pin that whole array (every running operation's view of that update)
// for as long as the finished operation is kept: the heap would grow with
// the finished operations a server retains.
func (s *Scheduler) detachViews(snap *Snapshot) {
	for _, o := range s.ops {
		v := o.view.Load()
		if v == nil || v.detached || inSnapshot(snap, v) {
			continue
		}
		c := *v
		c.detached = true
		o.view.Store(&c)
	}
}

// inSnapshot reports whether v is an element of snap.ops.
func inSnapshot(snap *Snapshot, v *opView) bool {
	return int(v.index) < len(snap.ops) && &snap.ops[v.index] == v
}

// preemptionPriority is docs/semantics.md#starvation for a schedulable operation in state
// st whose parent's inherited flags are in e (e.starving/aggressive
// include the ancestor pools).
func (s *Scheduler) preemptionPriority(st starvation.State, e *effective) PreemptionPriority {
	aggressive := st == starvation.AggressivelyStarving
	starving := st != starvation.NonStarving
	if s.cfg.SchedulingPreemptionPriorityScope == ScopeOperationAndAncestors {
		aggressive = aggressive || e.aggressive
		starving = starving || e.starving
	}
	switch {
	case aggressive:
		return PriorityAggressive
	case starving:
		return PriorityNormal
	}
	return PriorityNone
}

// publishPreemption installs an operation's new fair share in its status
// lists and rebalances them (docs/semantics.md#preemption-statuses).
func (s *Scheduler) publishPreemption(v *opView, total, threshold resource.Vec) {
	o := v.op
	o.pre.mu.Lock()
	o.pre.setParams(preemptParams{
		fairShare:           v.fairShare,
		demandShare:         v.demandShare,
		total:               total,
		aggressiveThreshold: s.cfg.AggressivePreemptionSatisfactionThreshold,
		preemptionThreshold: s.cfg.PreemptionSatisfactionThreshold,
		threshold:           threshold,
		preemptible:         operationPreemptible(v.fairShare, v.demandShare),
	})
	o.pre.mu.Unlock()
}

// effectiveParams inherits tolerance, timeouts and the preemption settings
// down the tree (docs/semantics.md): pools take their own value or
// their parent's; operations may only be more conservative (lower
// tolerance, longer timeout, lower non-preemptible threshold).
func (s *Scheduler) effectiveParams(id tree.ID, eff []effective) effective {
	t := s.tree
	if id == tree.Root {
		rc := t.Pool(tree.Root)
		th := s.cfg.NonPreemptibleResourceUsageThreshold
		if n := s.cfg.MaxUnpreemptibleRunningAllocationCount; n.Set && !th.Set[resource.UserSlots] {
			th.V[resource.UserSlots], th.Set[resource.UserSlots] = n.V, true
		}
		return effective{
			tolerance: s.cfg.FairShareStarvationTolerance,
			params: starvation.Params{Timeout: s.cfg.FairShareStarvationTimeout,
				AggressiveTimeout: s.cfg.FairShareAggressiveStarvationTimeout, Aggressive: s.cfg.EnableAggressiveStarvation},
			allowAggressive: rc.AllowAggressivePreemption.Or(s.cfg.AllowAggressivePreemption),
			normalBlocked:   !rc.AllowNormalPreemption.Or(true),
			threshold:       effectiveThreshold(th),
		}
	}
	e := eff[t.Parent(id)]
	if t.IsOperation(id) {
		if o := s.byTree[id]; o != nil {
			if v := o.spec.FairShareStarvationTolerance; v.Set {
				e.tolerance = min(e.tolerance, v.V)
			}
			if v := o.spec.FairShareStarvationTimeout; v.Set {
				e.params.Timeout = max(e.params.Timeout, v.V)
			}
			if th := o.spec.NonPreemptibleResourceUsageThreshold; !th.IsEmpty() {
				e.threshold = e.threshold.Min(th.OrInfinite())
			}
		}
		return e
	}
	c := t.Pool(id)
	e.tolerance = c.FairShareStarvationTolerance.Or(e.tolerance)
	e.params.Timeout = c.FairShareStarvationTimeout.Or(e.params.Timeout)
	e.params.Aggressive = c.EnableAggressiveStarvation.Or(e.params.Aggressive)
	e.allowAggressive = c.AllowAggressivePreemption.Or(e.allowAggressive)
	e.normalBlocked = e.normalBlocked || !c.AllowNormalPreemption.Or(true)
	if !c.NonPreemptibleResourceUsageThreshold.IsEmpty() {
		e.threshold = effectiveThreshold(c.NonPreemptibleResourceUsageThreshold)
	}
	return e
}

// poolStarvationAt runs a pool's starvation state machine (the root never
// starves; pools only with Config.EnablePoolStarvation).
func (s *Scheduler) poolStarvationAt(now clock.Time, id tree.ID, a *fairshare.Attributes, e effective) *starvationState {
	if s.poolStarvation == nil {
		s.poolStarvation = make(map[string]*starvationState)
	}
	name := s.tree.Name(id)
	st := s.poolStarvation[name]
	if st == nil {
		st = &starvationState{}
		s.poolStarvation[name] = st
	}
	st.localSatisfaction = starvation.LocalSatisfaction(a.FairShare.Total, a.DemandShare, a.UsageShare)
	if !s.cfg.EnablePoolStarvation {
		*st = starvationState{localSatisfaction: st.localSatisfaction}
		return st
	}
	st.belowFairShare = starvation.BelowFairShare(a.FairShare.Total, a.DemandShare, a.UsageShare, e.tolerance)
	st.tracker.Observe(now, st.belowFairShare, e.params)
	return st
}

// poolSatisfaction sets and returns the satisfaction ratio of every pool of
// the subtree of id after an update (docs/semantics.md#satisfaction-and-status): a composite's is the
// minimum over its schedulable children — running operations and pools —
// and infinite when it has none. Operations' are set already.
func (s *Scheduler) poolSatisfaction(id tree.ID) float64 {
	t := s.tree
	sat := resource.InfiniteSatisfactionRatio
	for c := t.FirstChild(id); c != tree.None; c = t.NextSibling(c) {
		if t.IsOperation(c) {
			if o := s.byTree[c]; o != nil && o.State() == StateRunning {
				sat = min(sat, o.starvation.satisfaction)
			}
			continue
		}
		sat = min(sat, s.poolSatisfaction(c))
	}
	if st := s.poolStarvation[t.Name(id)]; st != nil && id != tree.Root {
		st.satisfaction = sat
	}
	return sat
}

// forgetPools drops the starvation state of removed pools.
func (s *Scheduler) forgetPools(seen int) {
	if len(s.poolStarvation) <= seen {
		return
	}
	t := s.tree
	for name := range s.poolStarvation {
		if id, ok := t.Lookup(name); !ok || t.Kind(id) != tree.KindPool {
			delete(s.poolStarvation, name)
		}
	}
}

// sweepNodes unregisters nodes silent for longer than the heartbeat timeout
// (their allocations count as aborted and their jobs return to pending) and
// returns the total resources of the remaining nodes; when a node came,
// went or changed, it records them for the scheduling-tag-filter limits and
// the best allocation shares too (collectNodes).
func (s *Scheduler) sweepNodes(now clock.Time) resource.Vec {
	var total resource.Vec
	ts := &s.tags
	changed := !ts.collected || ts.table != ts.sweptTable
	count := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		silent := s.silent[:0]
		sh.nodes.all(func(n *node) {
			if now.Sub(n.lastHeartbeat) > s.cfg.NodeHeartbeatTimeout {
				silent = append(silent, n)
				return
			}
			total = total.AddCapped(n.limits)
			count++
			changed = changed || n.tagMatch.changed
		})
		for _, n := range silent {
			for len(n.allocs) > 0 {
				s.release(sh, n, n.allocs[len(n.allocs)-1], false)
			}
			s.settleLists(sh)
			sh.nodes.remove(n, n.hash)
			changed = true
		}
		clear(silent)
		s.silent = silent[:0]
		sh.mu.Unlock()
	}
	if changed || count != ts.sweptCount {
		s.collectNodes()
	}
	return total
}
