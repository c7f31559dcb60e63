package server

import (
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// ---- explanations and what-if (docs/why-waiting.md) ----

// ExplainOperation explains why operation id is in its state now
// (schedule.Scheduler.ExplainOperation), with its recent preemptions as
// the heartbeats decided them (RecentPreemptions), each linked to the
// operation and allocation it made room for. An unknown operation is
// tree.CodeUnknownOperation. Nothing changes; the heartbeats do not wait
// for it beyond one shard at a time.
func (s *Server) ExplainOperation(id string) (schedule.Explanation, error) {
	var buf [PreemptionsPerOperation]PreemptionEvent
	events := s.RecentPreemptions(buf[:0], id)
	var recent []schedule.Preemption
	for i := range events {
		e := &events[i]
		recent = append(recent, schedule.Preemption{Time: e.Time, Node: e.Node, Decision: e.Decision})
	}
	return s.sched.ExplainOperation(id, s.clock.Now(), recent)
}

// ExplainPool explains pool name's fair share and starvation now
// (schedule.Scheduler.ExplainPool); an unknown pool is
// tree.CodeUnknownPool.
func (s *Server) ExplainPool(name string) (schedule.Explanation, error) {
	return s.sched.ExplainPool(name, s.clock.Now())
}

// Preview is a what-if (POST /api/v1/whatif): a copy of the scheduler's
// pool tree, limits, config and demand (schedule.WhatIf) that takes the
// pool and config changes of the Server's methods — PutPool, PatchPool,
// DeletePool, PatchConfig, with the same callbacks — decided by the same
// functions (putPool, patchPool, deletePool, patchConfig) and applied to
// the copy only: nothing is stored, no hook runs, the live state is never
// written. A refused change leaves the copy as it was. Result answers
// every pool before and after. It is not safe for concurrent use.
type Preview struct {
	w   *schedule.WhatIf
	cfg schedule.Config // the config as changed so far
}

// Preview starts a what-if over a copy of the current state, taken under
// the Server's mutex: no change is half made in it.
func (s *Server) Preview() *Preview {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Preview{w: s.sched.WhatIf(), cfg: s.cfg}
}

// noStore is a preview's store check: nothing is written.
func noStore() error { return nil }

// PutPool is Server.PutPool on the copy.
func (p *Preview) PutPool(name string, prepare func(exists bool, cur schedule.PoolInfo) (tree.Mutation, bool)) (created bool, err error) {
	return putPool(p.w, name, prepare, noStore)
}

// PatchPool is Server.PatchPool on the copy.
func (p *Preview) PatchPool(name string, prepare func(cur schedule.PoolInfo) (tree.Mutation, bool)) error {
	return patchPool(p.w, name, prepare, noStore)
}

// DeletePool is Server.DeletePool on the copy.
func (p *Preview) DeletePool(name string, authorize func() bool) error {
	return deletePool(p.w, name, authorize, noStore)
}

// PatchConfig is Server.PatchConfig on the copy.
func (p *Preview) PatchConfig(patch func(cur schedule.Config) (schedule.Config, error)) (prev, next schedule.Config, err error) {
	prev = p.cfg
	next, err = patchConfig(prev, patch, noStore, func(c schedule.Config) error {
		if err := p.w.SetConfig(c); err != nil {
			return err
		}
		p.cfg = c
		return nil
	})
	return prev, next, err
}

// Pools appends the copy's pools as changed so far, in tree pre-order.
func (p *Preview) Pools(dst []schedule.PoolInfo) []schedule.PoolInfo { return p.w.Pools(dst) }

// Result runs a fair-share update on the copy and answers every pool
// before and after the changes (schedule.WhatIf.Result).
func (p *Preview) Result() []schedule.PoolChange { return p.w.Result() }
