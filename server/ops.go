package server

import (
	"errors"
	"slices"
	"strconv"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// ---- pools ----

// poolTarget is what a pool change applies to: the live scheduler
// (schedule.Scheduler) or a what-if's copy of it (schedule.WhatIf). The
// pool and config changes below are written once against it, so that a
// previewed change is decided exactly as the real one.
type poolTarget interface {
	Pool(name string) (schedule.PoolInfo, error)
	ApplyPools(ms ...tree.Mutation) (int, error)
}

// putPool is PutPool's decision on t: ready runs after prepare (the
// store's check for a real change).
func putPool(t poolTarget, name string, prepare func(exists bool, cur schedule.PoolInfo) (tree.Mutation, bool), ready func() error) (created bool, err error) {
	cur, err := t.Pool(name)
	exists := err == nil
	if !exists && name == tree.RootName {
		panic("BUG: the root pool does not exist")
	}
	m, ok := prepare(exists, cur)
	if !ok {
		return false, ErrRefused
	}
	if err := ready(); err != nil {
		return false, err
	}
	if name == tree.RootName && m.Parent != "" && m.Parent != tree.RootName {
		return false, &apierr.Error{Code: tree.CodeInvalidValue, Path: "$.parent", Message: "cannot give the root pool a parent"}
	}
	if _, err := t.ApplyPools(m); err != nil {
		return false, err
	}
	return !exists, nil
}

// patchPool is PatchPool's decision on t.
func patchPool(t poolTarget, name string, prepare func(cur schedule.PoolInfo) (tree.Mutation, bool), ready func() error) error {
	cur, err := t.Pool(name)
	if err != nil {
		return err
	}
	m, ok := prepare(cur)
	if !ok {
		return ErrRefused
	}
	if err := ready(); err != nil {
		return err
	}
	if name == tree.RootName && m.Parent != "" && m.Parent != tree.RootName {
		return &apierr.Error{Code: tree.CodeInvalidValue, Path: "$.parent", Message: "cannot give the root pool a parent"}
	}
	_, err = t.ApplyPools(m)
	return err
}

// deletePool is DeletePool's decision on t.
func deletePool(t poolTarget, name string, authorize func() bool, ready func() error) error {
	if name == tree.RootName {
		return &apierr.Error{Code: tree.CodeInvalidValue, Path: "$.url.name", Message: "cannot remove the root pool"}
	}
	if _, err := t.Pool(name); err != nil {
		return err
	}
	if !authorize() {
		return ErrRefused
	}
	if err := ready(); err != nil {
		return err
	}
	_, err := t.ApplyPools(tree.Mutation{Kind: tree.RemovePool, Name: name})
	return err
}

// patchConfig is PatchConfig's decision: the config patch makes of cur,
// applied by apply unless it is cur itself (then it returns next == cur
// and applies nothing).
func patchConfig(cur schedule.Config, patch func(cur schedule.Config) (schedule.Config, error), ready func() error, apply func(schedule.Config) error) (next schedule.Config, err error) {
	next, err = patch(cur)
	if err != nil || next == cur {
		return cur, err
	}
	if err := ready(); err != nil {
		return cur, err
	}
	if err := apply(next); err != nil {
		return cur, err
	}
	return next, nil
}

// PutPool creates or replaces pool name, under the Server's mutex:
// prepare gets whether the pool exists and its current state, and returns
// the mutation to apply (AddPool for a new pool, SetPool for an existing
// one) or false when the caller's guard refused. It reports whether the
// pool was created. The change is durable when it returns nil.
func (s *Server) PutPool(name string, prepare func(exists bool, cur schedule.PoolInfo) (tree.Mutation, bool)) (created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	created, err = putPool(s.sched, name, prepare, s.storeOK)
	if err != nil {
		return false, err
	}
	s.poolsChanged()
	return created, s.await(s.submit(s.poolWrite(name)))
}

// PatchPool changes pool name, under the Server's mutex: prepare gets its
// current state and returns the SetPool mutation to apply, or false when
// the caller's guard or decoder refused (and answered). The change is
// durable when it returns nil.
func (s *Server) PatchPool(name string, prepare func(cur schedule.PoolInfo) (tree.Mutation, bool)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := patchPool(s.sched, name, prepare, s.storeOK); err != nil {
		return err
	}
	s.poolsChanged()
	return s.await(s.submit(s.poolWrite(name)))
}

// DeletePool removes an empty pool (tree.CodePoolNotEmpty when it has
// child pools or operations). authorize runs under the Server's mutex once
// the pool is known to exist; false refuses (ErrRefused).
func (s *Server) DeletePool(name string, authorize func() bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := deletePool(s.sched, name, authorize, s.storeOK); err != nil {
		return err
	}
	s.poolsChanged()
	return s.await(s.submit(store.Delete(store.Pools, name)))
}

// ---- config ----

// PatchConfig changes the tree config to what patch makes of the current
// one (a decoder's partial update), applied through applyConfig; a refused
// patch changes nothing. It returns the config before and after.
func (s *Server) PatchConfig(patch func(cur schedule.Config) (schedule.Config, error)) (prev, next schedule.Config, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev = s.cfg
	next, err = patchConfig(prev, patch, s.storeOK, s.applyConfig)
	if err != nil || next == prev {
		return prev, prev, err
	}
	return prev, next, s.await(s.submit(configWrite(&next)))
}

// ---- operations ----

// maxLiveDemand bounds the declared demand (Σ job_count × resources) of
// the operations that have not finished, per resource: every pool's demand
// is a part of it, so none can leave the fixed-point range of 2^53.
const maxLiveDemand = resource.MaxAmount

// StartOperation admits the operation spec, whose request body was body
// (stored as it is) and whose caller is owner ("" without tokens):
// authorize runs first, under the Server's mutex (false: ErrRefused). The
// same client id with the same spec returns the same operation again
// (again: true), once the first start is durable; with a different spec
// it is schedule.CodeDuplicateID. A new operation whose demand would take
// the demand of the unfinished operations past 2^53 in a resource is
// CodeDemandOverflow: no pool's demand can then wrap.
func (s *Server) StartOperation(spec schedule.OperationSpec, body []byte, owner string, authorize func() bool) (id string, st schedule.OperationState, again bool, err error) {
	s.mu.Lock()
	if !authorize() {
		s.mu.Unlock()
		return "", 0, false, ErrRefused
	}
	if err := s.storeOK(); err != nil {
		s.mu.Unlock()
		return "", 0, false, err
	}
	demand := wire.Demand(&spec)
	if spec.ID == "" || s.ops[spec.ID] == nil {
		if err := s.demandError(demand); err != nil {
			s.mu.Unlock()
			return "", 0, false, err
		}
	}
	now := s.Now()
	id, st, err = s.sched.StartOperation(now, spec)
	var durable store.Pending
	if err == nil {
		r, ok := s.ops[id]
		if again = ok; !again {
			if st == schedule.StatePending {
				s.pendingSince[id] = now
			} else if s.opts.Hooks.PendingWait != nil {
				s.opts.Hooks.PendingWait(0)
			}
			s.opSeq++
			r = &opRecord{seq: s.opSeq, state: OperationState{State: StateLive}, demand: demand, tasks: slices.Clone(spec.Tasks), owner: owner}
			s.demand = s.demand.Add(demand)
			s.ops[id] = r
			if s.d != nil {
				r.durable = s.submit(s.operationStartWrites(id, r, body, now)...)
			}
		}
		// A repeated start answers once the first one is durable.
		durable = r.durable
	}
	s.mu.Unlock()
	if err != nil {
		return "", 0, false, err
	}
	return id, st, again, s.await(durable)
}

// demandError is the refusal of an operation whose demand would take the
// live demand past maxLiveDemand (nil when it would not). s.mu held.
func (s *Server) demandError(d resource.Vec) error {
	for k := range d {
		if d[k] > maxLiveDemand-s.demand[k] {
			kind := resource.Kind(k)
			return &apierr.Error{Code: CodeDemandOverflow, Path: "$.tasks",
				Message: "cannot start an operation demanding " + amountString(kind, d[k]) + " " + kind.String() +
					": the operations that have not finished demand " + amountString(kind, s.demand[k]) +
					" already, and pools' demand must stay within 2^53 (" + amountString(kind, maxLiveDemand) + ")"}
		}
	}
	return nil
}

// releaseDemand takes a finished operation's demand out of the live
// demand, once. s.mu held.
func (s *Server) releaseDemand(r *opRecord) {
	if r != nil && !r.released {
		r.released = true
		s.demand = s.demand.Sub(r.demand)
	}
}

// amountString writes a resource amount as the API does: cpu in cores.
func amountString(k resource.Kind, v int64) string {
	if k == resource.CPU {
		return strconv.FormatFloat(float64(v)/resource.CPUScale, 'g', -1, 64)
	}
	return strconv.FormatInt(v, 10)
}

// Authorizer is a front end's guard of a change to an existing operation:
// it gets the operation's current state and its owner ("" when started
// without tokens, or unknown), and refuses (answering its caller) with
// false.
type Authorizer func(cur schedule.OperationInfo, owner string) bool

// testHookPatchOperation, when set (by tests), runs in PatchOperation
// after the request is checked and before the core applies it: where a
// fair-share update may retire the operation.
var testHookPatchOperation func(id string)

// PatchOperation changes an operation's runtime parameters: weight, pool
// (a move, re-checked against the new ancestors' limits), resource_limits
// and tasks (job counts; the declared demand follows, a rise bounded as a
// start's: CodeDemandOverflow). movable checks the new pool (the caller's
// use permission) after authorize. It is all or nothing: one core call
// (schedule.Scheduler.PatchOperation) under one core lock, so that a
// fair-share update that retires the operation comes before or after it,
// never between its parts; then one durable write. The change is durable
// when it returns nil.
func (s *Server) PatchOperation(id string, p *wire.OperationPatch, authorize Authorizer, movable func() bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.sched.Operation(id)
	if err != nil {
		return err
	}
	r := s.ops[id]
	if !authorize(cur, r.ownerName()) {
		return ErrRefused
	}
	if p.HasPool && !movable() {
		return ErrRefused
	}
	if !p.Changes() {
		return nil
	}
	if err := s.storeOK(); err != nil {
		return err
	}
	var tasks []schedule.TaskSpec
	var demand resource.Vec
	if len(p.Tasks) > 0 && r != nil {
		if tasks, err = schedule.PatchedTasks(id, r.tasks, p.Tasks); err != nil {
			return err
		}
		demand = wire.Demand(&schedule.OperationSpec{Tasks: tasks})
		if !r.released {
			if err := s.demandError(demand.Sub(r.demand).Max(resource.Vec{})); err != nil {
				return err
			}
		}
	}
	if testHookPatchOperation != nil {
		testHookPatchOperation(id)
	}
	if _, err := s.sched.PatchOperation(id, p.OperationPatch); err != nil {
		return err
	}
	if tasks != nil {
		if !r.released {
			s.demand = s.demand.Add(demand.Sub(r.demand))
		}
		r.tasks, r.demand = tasks, demand
	}
	if r != nil && s.d != nil {
		if p.HasPool {
			pool := p.Pool
			if pool == "" {
				pool = tree.RootName
			}
			r.state.Pool = &pool
		}
		if p.Weight.Set {
			w := p.Weight.V
			r.state.Weight = &w
		}
		if p.HasResourceLimits {
			r.state.ResourceLimits = wire.AppendPartialResources(nil, &p.ResourceLimits)
		}
		if tasks != nil {
			r.state.Tasks = wire.AppendTasks(nil, tasks)
		}
		r.durable = s.submit(operationStateWrite(id, &r.state))
		return s.await(r.durable)
	}
	return nil
}

// FinishOperation completes (complete) or aborts an operation; its
// allocations are told to stop on their nodes' next heartbeats. authorize
// runs under the Server's mutex. Finishing a finished operation again (a
// retry) reports again and no error once its final state is durable.
func (s *Server) FinishOperation(id string, complete bool, authorize Authorizer) (again bool, err error) {
	s.mu.Lock()
	cur, err := s.sched.Operation(id)
	if err != nil {
		s.mu.Unlock()
		return false, err
	}
	r := s.ops[id]
	if !authorize(cur, r.ownerName()) {
		s.mu.Unlock()
		return false, ErrRefused
	}
	if err := s.storeOK(); err != nil {
		s.mu.Unlock()
		return false, err
	}
	state := StateAborted
	if complete {
		err, state = s.sched.CompleteOperation(id), StateCompleted
	} else {
		err = s.sched.AbortOperation(id)
	}
	var durable store.Pending
	if r != nil {
		if err == nil {
			s.releaseDemand(r)
		}
		if err == nil && s.d != nil {
			r.state.State = state
			r.state.FinishUnixUS = s.unixUS(s.Now())
			r.durable = s.submit(operationStateWrite(id, &r.state))
		}
		durable = r.durable
	}
	s.mu.Unlock()
	if code(err) == schedule.CodeFinished {
		return true, s.await(durable)
	}
	if err != nil {
		return false, err
	}
	return false, s.await(durable)
}

// ownerName is the operation's owner ("" for none or no record).
func (r *opRecord) ownerName() string {
	if r == nil {
		return ""
	}
	return r.owner
}

// OperationOwner is the user who started operation id ("" without
// tokens, or when the service does not know it).
func (s *Server) OperationOwner(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops[id].ownerName()
}

// OperationTasks are operation id's tasks with their current job counts
// (nil when the service does not know it).
func (s *Server) OperationTasks(id string) []schedule.TaskSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.ops[id]; r != nil {
		return r.tasks
	}
	return nil
}

// StartSeqs returns, for each of infos, its start sequence number (the
// listing cursor; 0 for an operation the service does not know).
func (s *Server) StartSeqs(infos []schedule.OperationInfo) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seqs := make([]uint64, len(infos))
	for i := range infos {
		if r := s.ops[infos[i].ID]; r != nil {
			seqs[i] = r.seq
		}
	}
	return seqs
}

// code is err's code ("" when err is not an *apierr.Error).
func code(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsStoreUnavailable reports whether err is the refusal of a change
// because the store failed.
func IsStoreUnavailable(err error) bool { return err != nil && code(err) == CodeStoreUnavailable }
