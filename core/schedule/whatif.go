package schedule

import (
	"slices"

	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// WhatIf previews changes of the pool tree and the tree config against the
// live cluster without making them (POST /api/v1/whatif, docs/api.md): it
// holds copies of the scheduler's pool tree (tree.Tree.Clone), operation
// limits and pending queues (limits.Limits.Clone), configuration,
// starvation states and the demand, usage and total resources of the last
// fair-share update. Changes are applied to the copies by the code the real
// mutations run (applyPoolMutations, checkRuntimeConfig), so a refused
// change gets the error the real one would; Result then runs a fair-share
// update on the copies with a new updater and judges statuses and
// starvation with UpdateFairShare's judge, and answers every pool's view
// before (the live orchid) and after.
//
// A WhatIf owns its copies and never writes the scheduler's state; it reads
// the live operations only in Scheduler.WhatIf, under the control lock.
// It is not safe for concurrent use. Known limit: the nodes a pool's
// scheduling_tag_filter matches are those of the last update, so a change
// of a filter is previewed with the old filter's node limits.
type WhatIf struct {
	sb     *Scheduler // a control plane over the copies; no shards, no nodes
	before []PoolInfo
	// The demand, usage and pending jobs of every operation at the copy,
	// by tree ID, for those the last update did not see running (a pending
	// operation has none in the tree): a change may start them.
	demand, usage []resource.Vec
	pending       []int64
	// running: the operation was running at the last update, so the tree
	// holds its demand and usage as of that update.
	running []bool
	// volumes are the integral pools' accumulated volumes by name, in the
	// updater's units.
	volumes map[string][resource.Count]float64
}

// WhatIf returns a sandbox over a copy of the scheduler's state (see
// WhatIf). It allocates the copy, O(pools + operations), under the control
// lock; nothing on the heartbeat path waits for it.
func (s *Scheduler) WhatIf() *WhatIf {
	s.mu.Lock()
	defer s.mu.Unlock()
	// NB: no retireFinished on the live state: retiring an operation a
	// heartbeat finished may start a pending one, and a what-if changes
	// nothing; the sandbox retires them on its copies below.
	t := s.tree.Clone()
	w := &WhatIf{
		demand:  make([]resource.Vec, t.Len()),
		usage:   make([]resource.Vec, t.Len()),
		pending: make([]int64, t.Len()),
		running: make([]bool, t.Len()),
		volumes: map[string][resource.Count]float64{},
	}
	sb := &Scheduler{
		cfg:            s.cfg,
		tree:           t,
		limits:         s.limits.Clone(t),
		fs:             fairshare.New(t, s.cfg.FairShare),
		byTree:         make([]*operation, len(s.byTree)),
		rootStatus:     s.rootStatus,
		total:          s.total,
		lastNow:        s.lastNow,
		poolStarvation: make(map[string]*starvationState, len(s.poolStarvation)),
	}
	for name, st := range s.poolStarvation {
		c := *st
		sb.poolStarvation[name] = &c
	}
	snap := s.snap.Load()
	for id, o := range s.byTree {
		if o == nil || o.retired {
			continue
		}
		// A shell: what the update reads of an operation (its spec for the
		// inherited parameters, its state and starvation), never the live
		// operation, which heartbeats keep changing.
		c := &operation{id: o.id, spec: o.spec, treeID: o.treeID, starvation: o.starvation, startTime: o.startTime}
		c.state.Store(uint32(o.State()))
		sb.byTree[id] = c
		w.demand[id], w.usage[id], w.pending[id] = o.demand(), o.Usage(), o.pendingJobs()
		if v := o.view.Load(); v != nil && inSnapshot(snap, v) && o.fsGen == s.fsGen {
			w.running[id] = true
		}
	}
	if s.fsGen > 0 && s.poolsAtUpdate == s.tree.StructureVersion() {
		s.tree.Walk(func(id tree.ID) {
			if a := s.fs.Attributes(id); !s.tree.IsOperation(id) && a.Integral.Type != tree.GuaranteeNone {
				v := a.Integral.AccumulatedVolume
				v[resource.CPU] *= resource.CPUScale
				w.volumes[s.tree.Name(id)] = v
			}
		})
	}
	s.tree.Walk(func(id tree.ID) {
		if !s.tree.IsOperation(id) {
			w.before = append(w.before, s.poolInfo(id))
		}
	})
	w.sb = sb
	// The operations a heartbeat finished and no change has retired yet:
	// a real pool change retires them first (ApplyPools), so the sandbox
	// does too, with the same function, on its copies.
	s.finishedMu.Lock()
	fin := slices.Clone(s.finished)
	s.finishedMu.Unlock()
	for _, o := range fin {
		if c := sb.byTree[o.treeID]; c != nil && c.id == o.id {
			sb.retire(c)
		}
	}
	return w
}

// Pool returns a pool's configuration and counts in the sandbox as changed
// so far (the view a PATCH body is decoded against); its shares are those
// of the last live update until Result.
func (w *WhatIf) Pool(name string) (PoolInfo, error) {
	t := w.sb.tree
	id, ok := t.Lookup(name)
	if !ok || t.IsOperation(id) {
		return PoolInfo{}, errorf(tree.CodeUnknownPool, "name", "cannot find pool \"%s\"", name)
	}
	return w.sb.poolInfo(id), nil
}

// Config returns the sandbox's configuration as changed so far.
func (w *WhatIf) Config() Config { return w.sb.cfg }

// ApplyPools applies pool mutations to the sandbox as Scheduler.ApplyPools
// applies them to the live tree: the same validation, the same error for a
// refused change (and then the sandbox is as it was).
func (w *WhatIf) ApplyPools(ms ...tree.Mutation) (int, error) {
	sb := w.sb
	i, scratch, err := applyPoolMutations(sb.tree, sb.limits, sb.scratchIDs[:0], ms)
	sb.scratchIDs = scratch
	if err != nil {
		return i, err
	}
	w.grow()
	w.syncStates()
	return -1, nil
}

// SetConfig replaces the sandbox's configuration as Scheduler.SetConfig
// replaces the live one: the same validation and error.
func (w *WhatIf) SetConfig(cfg Config) error {
	sb := w.sb
	if err := checkRuntimeConfig(&cfg, sb.cfg.Shards); err != nil {
		return err
	}
	cfg.Shards = sb.cfg.Shards
	sb.cfg = cfg
	sb.fs.SetConfig(cfg.FairShare)
	sb.limits.SetConfig(cfg.Limits)
	sb.scratchIDs = sb.limits.RescanAll(sb.scratchIDs[:0])
	w.syncStates()
	return nil
}

// grow extends the per-ID slices to the tree's length (new pools).
func (w *WhatIf) grow() {
	for n := w.sb.tree.Len(); len(w.running) < n; {
		w.running = append(w.running, false)
		w.demand = append(w.demand, resource.Vec{})
		w.usage = append(w.usage, resource.Vec{})
		w.pending = append(w.pending, 0)
	}
	for len(w.sb.byTree) < w.sb.tree.Len() {
		w.sb.byTree = append(w.sb.byTree, nil)
	}
}

// syncStates is Scheduler.syncStates on the shells.
func (w *WhatIf) syncStates() {
	sb := w.sb
	for _, o := range sb.byTree {
		if o == nil {
			continue
		}
		if sb.limits.State(o.treeID) == limits.Pending {
			o.state.CompareAndSwap(uint32(StateRunning), uint32(StatePending))
		} else {
			o.state.CompareAndSwap(uint32(StatePending), uint32(StateRunning))
		}
	}
}

// PoolChange is one pool before and after the previewed changes: Before is
// nil for a pool the changes create, After nil for one they remove.
type PoolChange struct {
	Name          string
	Before, After *PoolInfo
}

// Result runs the fair-share update on the sandbox at the time of the last
// live update (no integral volume is refilled or consumed in between) and
// returns every pool before and after, the live pools in tree pre-order
// first, then the pools the changes created. It may be called again after
// more changes.
func (w *WhatIf) Result() []PoolChange {
	sb := w.sb
	t := sb.tree
	now := sb.lastNow
	w.grow()
	for _, o := range sb.byTree {
		if o == nil {
			continue
		}
		id := o.treeID
		switch {
		case o.State() != StateRunning:
			t.SetDemandUsage(id, resource.Vec{}, resource.Vec{})
		case !w.running[id]:
			// Started by a change: its demand now.
			t.SetDemandUsage(id, w.demand[id], w.usage[id])
			t.SetPendingJobCount(id, w.pending[id])
		}
	}
	for name, v := range w.volumes {
		if id, ok := t.Lookup(name); ok {
			sb.fs.SetAccumulatedVolume(id, v)
		}
	}
	sb.fs.SetPreviousUpdate(now)
	sb.fs.Update(sb.total, now)
	sb.fsGen++
	sb.poolsAtUpdate = t.StructureVersion()
	sb.judge(now, nil)
	after := map[string]*PoolInfo{}
	var order []string
	t.Walk(func(id tree.ID) {
		if !t.IsOperation(id) {
			p := sb.poolInfo(id)
			after[p.Name] = &p
			order = append(order, p.Name)
		}
	})
	var out []PoolChange
	seen := map[string]bool{}
	for i := range w.before {
		b := &w.before[i]
		seen[b.Name] = true
		out = append(out, PoolChange{Name: b.Name, Before: b, After: after[b.Name]})
	}
	for _, name := range order {
		if !seen[name] {
			out = append(out, PoolChange{Name: name, After: after[name]})
		}
	}
	return out
}

// Pools appends every pool of the sandbox as changed so far, in tree
// pre-order, the root first (Scheduler.Pools of the copy).
func (w *WhatIf) Pools(dst []PoolInfo) []PoolInfo {
	t := w.sb.tree
	t.Walk(func(id tree.ID) {
		if !t.IsOperation(id) {
			dst = append(dst, w.sb.poolInfo(id))
		}
	})
	return dst
}
