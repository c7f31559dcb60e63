package schedule

import (
	"fmt"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// OperationPatch is a change of an operation's runtime parameters (PATCH
// /api/v1/operations/{id}, docs/api.md): each part applies when it is set,
// and PatchOperation applies all of them or none.
type OperationPatch struct {
	// Weight is the new weight, when set.
	Weight tree.OptFloat
	// Pool is the pool to move the operation to ("" is the root), when
	// HasPool.
	Pool    string
	HasPool bool
	// ResourceLimits are the new limits (the zero value removes them),
	// when HasResourceLimits.
	ResourceLimits    tree.PartialVec
	HasResourceLimits bool
	// Tasks change the tasks: entry i changes task i, entries past the
	// last task append new tasks. Tasks are never removed.
	Tasks []TaskPatch
}

// TaskPatch is one entry of OperationPatch.Tasks. For an existing task,
// JobCount is its new job count when HasJobCount, and Name and Resources,
// when given, must equal the task's. A new task needs JobCount and
// Resources, as at a start; its job count may be 0.
type TaskPatch struct {
	Name          string
	HasName       bool
	JobCount      int64
	HasJobCount   bool
	Resources     resource.Vec
	HasResources  bool
	DurationHintS float64
}

// jobCountersError returns what is wrong with a running operation's job
// counters, or nil: its unfinished jobs must be its tasks' pending and
// running ones, and no task may have both excess and pending jobs. The
// caller holds every shard mutex.
func (o *operation) jobCountersError() error {
	if o.State().Final() {
		return nil
	}
	var sum int64
	for i := range o.tasks {
		tk := &o.tasks[i]
		sum += tk.pending.Load() + tk.running.Load()
		if tk.excess.Load() > 0 && tk.pending.Load() > 0 {
			return fmt.Errorf("operation %s, task %d: %d excess and %d pending jobs", o.id, i, tk.excess.Load(), tk.pending.Load())
		}
	}
	if got := o.unfinished.Load(); got != sum {
		return fmt.Errorf("operation %s: %d unfinished jobs, its tasks have %d pending or running", o.id, got, sum)
	}
	return nil
}

// checkJobCounters verifies jobCountersError under -tags invariants and
// -race. The caller holds every shard mutex.
func (o *operation) checkJobCounters() {
	if !invariants.Enabled {
		return
	}
	err := o.jobCountersError()
	invariants.Check(err == nil, "%v", err)
}

// MaxJobCount is the most jobs a task may have (2^40).
const MaxJobCount = 1 << 40

// PatchOperation applies p to operation id under one lock: every part or,
// with an error (*apierr.Error naming the field), none. It returns the
// operation's state after the change: a change of job counts that leaves
// no job pending or running completes the operation (as its last
// completed job would).
//
// A task's job count may go below its completed and running jobs: then no
// job of it is pending, its running allocations keep running, and one
// that ends other than completed does not return to pending (see endJob).
func (s *Scheduler) PatchOperation(id string, p OperationPatch) (OperationState, error) {
	if err := ValidatePatch(&p); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retireFinished()
	o, err := s.liveOperation(id, "change")
	if err != nil {
		return 0, err
	}
	// Every shard mutex from the state check to the last change: no
	// heartbeat can complete the operation between them (it would then
	// finish with the patch half applied, or with jobs the patch added).
	s.lockShards()
	defer s.unlockShards()
	o.checkJobCounters() // as the heartbeats since the last change left them
	defer o.checkJobCounters()
	if st := o.State(); st.Final() {
		return 0, errorf(CodeFinished, "id", "cannot change operation %q: it is %s", id, st)
	}
	if len(p.Tasks) > 0 {
		cur := make([]TaskSpec, len(o.tasks))
		for i := range o.tasks {
			cur[i] = o.tasks[i].spec
		}
		if _, err := PatchedTasks(o.id, cur, p.Tasks); err != nil {
			return 0, err
		}
	}
	// The move is the only part that can fail on the live state (the new
	// pools' operation limits): it goes first, and what follows cannot
	// fail.
	if p.HasPool {
		if err := s.move(o, p.Pool); err != nil {
			return 0, err
		}
	}
	if p.Weight.Set {
		if err := s.tree.SetOperationWeight(o.treeID, p.Weight); err != nil {
			panic("BUG: a validated weight was refused: " + err.Error())
		}
		o.spec.Weight = p.Weight
	}
	if p.HasResourceLimits {
		if err := s.tree.SetOperationLimits(o.treeID, p.ResourceLimits); err != nil {
			panic("BUG: validated limits were refused: " + err.Error())
		}
		o.spec.ResourceLimits = p.ResourceLimits
		s.setLimited(o)
	}
	if len(p.Tasks) > 0 {
		s.patchTasks(o, p.Tasks)
	}
	return o.State(), nil
}

// PatchedTasks returns the tasks of operation id after ps changed tasks:
// names and resources of existing tasks repeated unchanged, new tasks
// complete, every job count in [0, 2^40], and each task's and the
// operation's total demand within 2^53 per resource, or an error naming
// the field. tasks is not modified.
func PatchedTasks(id string, tasks []TaskSpec, ps []TaskPatch) ([]TaskSpec, error) {
	if len(ps) > MaxTasks {
		return nil, errorf(CodeInvalidValue, "tasks", "cannot give an operation %d tasks: want at most %d", len(ps), MaxTasks)
	}
	out := make([]TaskSpec, max(len(ps), len(tasks)))
	var total resource.Vec
	for i := range out {
		field := "tasks[" + strconv.Itoa(i) + "]"
		var spec TaskSpec
		if i < len(tasks) {
			spec = tasks[i]
		}
		if i < len(ps) {
			tp := &ps[i]
			switch {
			case i < len(tasks) && tp.HasName && tp.Name != spec.Name:
				return nil, errorf(CodeInvalidValue, field+".name", "cannot rename task %d of operation %q from %q to %q: a task's name cannot change", i, id, spec.Name, tp.Name)
			case i < len(tasks) && tp.HasResources && tp.Resources != spec.Resources:
				return nil, errorf(CodeInvalidValue, field+".resources", "cannot change the resources of task %d of operation %q: a task's resources cannot change (start a new task)", i, id)
			case i >= len(tasks) && !tp.HasJobCount:
				return nil, errorf(CodeMissingAttribute, field+".job_count", "cannot add a task without job_count")
			case i >= len(tasks) && !tp.HasResources:
				return nil, errorf(CodeMissingAttribute, field+".resources", "cannot add a task without resources: want the resources of one job")
			}
			if i >= len(tasks) {
				spec = TaskSpec{Name: tp.Name, Resources: tp.Resources, DurationHintS: tp.DurationHintS}
				if spec.Resources.IsZero() {
					return nil, errorf(CodeInvalidValue, field+".resources", "cannot add jobs that use no resources: want at least one positive amount")
				}
				if err := validateTaskRanges(field, tp.Name, tp.Resources, tp.DurationHintS); err != nil {
					return nil, err
				}
			}
			if tp.HasJobCount {
				if tp.JobCount < 0 || tp.JobCount > MaxJobCount {
					return nil, errorf(CodeInvalidValue, field+".job_count", "cannot use job_count %d: want a whole number in [0, 2^40]", tp.JobCount)
				}
				spec.JobCount = tp.JobCount
			}
		}
		if err := addDemand(&total, field, spec.JobCount, spec.Resources); err != nil {
			return nil, err
		}
		out[i] = spec
	}
	return out, nil
}

// MaxTasks is the most tasks an operation may have.
const MaxTasks = 1000

// patchTasks applies checked task patches: new job counts, new tasks. The
// caller holds s.mu and every shard mutex, so no heartbeat counts jobs
// meanwhile.
func (s *Scheduler) patchTasks(o *operation, ps []TaskPatch) {
	if len(ps) > len(o.tasks) {
		// Heartbeats read o.tasks under a shard mutex, the control plane
		// under s.mu: both are held.
		ts := make([]task, len(ps))
		for i := range o.tasks {
			old, t := &o.tasks[i], &ts[i]
			t.spec = old.spec
			t.pending.Store(old.pending.Load())
			t.running.Store(old.running.Load())
			t.completed.Store(old.completed.Load())
			t.excess.Store(old.excess.Load())
		}
		for i := len(o.tasks); i < len(ps); i++ {
			tp := &ps[i]
			ts[i].spec = TaskSpec{Name: tp.Name, Resources: tp.Resources, DurationHintS: tp.DurationHintS}
		}
		o.tasks = ts
	}
	for i := range ps {
		if ps[i].HasJobCount {
			o.unfinished.Add(o.tasks[i].setJobCount(ps[i].JobCount))
		}
	}
	for i := range s.shards {
		s.shards[i].ops.touch(o) // pending jobs may have appeared
	}
	if o.unfinished.Load() == 0 {
		// No job pending or running: every task has completed its jobs.
		for {
			cur := o.State()
			if cur.Final() {
				return
			}
			if o.state.CompareAndSwap(uint32(cur), uint32(StateCompleted)) {
				break
			}
		}
		s.finishEpoch.Add(1) // after the state: see Heartbeat
		s.retire(o)
		if f := s.dur.OnOperationCompleted; f != nil {
			f(o.id)
		}
	}
}

// setJobCount makes j the task's job count and returns the change of its
// pending jobs: j less its completed and running jobs are pending (none
// below 0), and the running jobs beyond what j needs are its excess.
// Every shard mutex held.
func (tk *task) setJobCount(j int64) (pendingDelta int64) {
	tk.spec.JobCount = j
	c, r, p := tk.completed.Load(), tk.running.Load(), max(tk.pending.Load(), 0)
	need := j - c
	var np, e int64
	if need >= r {
		np = need - r
	} else {
		e = r - max(need, 0)
	}
	tk.pending.Store(np)
	tk.excess.Store(e)
	return np - p
}

// endJob settles the job of an allocation of task t of o that ended, as
// completed or not (a release). A completed job counts as done; another
// returns to pending unless the operation finished or the task's job count
// went below its completed and running jobs (then the job is not needed
// any more). The operation completes when its last job pending or running
// ends so. Shard mutex held.
func (s *Scheduler) endJob(o *operation, t *task, completed bool) {
	if t.excess.Load() > 0 && s.endExcessJob(o, t, completed) {
		return
	}
	t.running.Add(-1)
	if completed {
		t.completed.Add(1)
		s.jobGone(o)
	} else if !o.State().Final() {
		t.pending.Add(1)
	}
}

// endExcessJob is endJob for a task with excess jobs: while it has, none
// of its jobs is pending, so nothing claims one, and its releases (on any
// shard) are serialised by o.jobsMu. It reports false, having done
// nothing, when the excess is gone by then.
func (s *Scheduler) endExcessJob(o *operation, t *task, completed bool) bool {
	o.jobsMu.Lock()
	e := t.excess.Load()
	if e == 0 {
		o.jobsMu.Unlock()
		return false
	}
	r := t.running.Add(-1) + 1
	if completed {
		t.completed.Add(1)
		if e == r { // every running job was in excess
			t.excess.Add(-1)
		}
	} else {
		t.excess.Add(-1)
	}
	o.jobsMu.Unlock()
	s.jobGone(o)
	return true
}

// jobGone counts a job that is neither pending nor running any more: the
// operation completes when it was its last.
func (s *Scheduler) jobGone(o *operation) {
	if o.unfinished.Add(-1) == 0 && o.state.CompareAndSwap(uint32(StateRunning), uint32(StateCompleted)) {
		s.finishEpoch.Add(1) // after the state: see Heartbeat
		s.operationFinishedByHeartbeat(o)
	}
}

// move moves o under pool ("" is the root), checking the new ancestors'
// operation limits; s.mu and every shard mutex held.
func (s *Scheduler) move(o *operation, pool string) error {
	p := tree.Root
	if pool != "" {
		pid, ok := s.tree.Lookup(pool)
		if !ok || s.tree.IsOperation(pid) {
			return errorf(tree.CodeUnknownPool, "pool", "cannot move operation %q to pool %q: there is no such pool", o.id, pool)
		}
		p = pid
	}
	activated, err := s.limits.Move(o.treeID, p, s.scratchIDs[:0])
	if err != nil {
		return err
	}
	s.scratchIDs = activated
	if _, err := s.tree.Apply(tree.Mutation{Kind: tree.MoveOperation, Name: o.id, Parent: pool}); err != nil {
		panic("BUG: limits accepted a move the tree refused: " + err.Error())
	}
	o.spec.Pool = pool
	s.syncStates()
	s.setLimited(o)
	return nil
}

// refuse records that node n refused allocation a (a report of
// AllocRefused): a's operation is not offered n until
// Config.RefusedAllocationBackoff from now, so that a start the node cannot
// make does not come back at each heartbeat. Shard mutex held.
func (s *Scheduler) refuse(now clock.Time, n *node, a *allocation) {
	s.refusedCount.Add(1)
	d := s.cfg.RefusedAllocationBackoff
	if d <= 0 {
		return
	}
	until := now.Add(d)
	for i := range n.refused {
		if n.refused[i].op == a.op {
			n.refused[i].until = until
			return
		}
	}
	if len(n.refused) >= maxRefusals {
		first := 0
		for i := range n.refused {
			if n.refused[i].until < n.refused[first].until {
				first = i
			}
		}
		n.refused[first] = refusal{op: a.op, until: until}
		return
	}
	n.refused = append(n.refused, refusal{op: a.op, until: until})
}

// RefusedAllocations counts the allocations nodes refused since the
// scheduler started.
func (s *Scheduler) RefusedAllocations() uint64 { return s.refusedCount.Load() }
