package schedule

import (
	"strconv"

	"github.com/fairsched/fairsched/core/resource"
)

// The counters a durable server keeps across restarts (the facade stores
// them; the core only hands them out).

// OperationIDSeq is n of the last server-chosen operation id, op-<n>.
func (s *Scheduler) OperationIDSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idSeq
}

// AdvanceOperationIDSeq makes every later server-chosen operation id at
// least op-<n+1>; it never moves the counter back.
func (s *Scheduler) AdvanceOperationIDSeq(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idSeq = max(s.idSeq, n)
}

// CompletedJobs calls fn with every unfinished operation's completed job
// counts per task (completed is reused between calls: copy what is kept),
// for the caller's progress checkpoints.
func (s *Scheduler) CompletedJobs(fn func(id string, completed []int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var completed []int64
	for id, o := range s.ops {
		if o.State().Final() {
			continue
		}
		completed = completed[:0]
		for i := range o.tasks {
			completed = append(completed, o.tasks[i].completed.Load())
		}
		fn(id, completed)
	}
}

// RestoreCompletedJobs sets a restored operation's completed job counts per
// task (a checkpoint), before any of its allocations started or were
// adopted; the jobs stop being pending. An operation whose every job is
// then completed completes (it reports true). Counts beyond a task's jobs
// are an error, and nothing changes.
func (s *Scheduler) RestoreCompletedJobs(id string, completed []int64) (finished bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookup(id)
	if err != nil {
		return false, err
	}
	if len(completed) != len(o.tasks) {
		return false, errorf(CodeInvalidValue, "completed", "cannot restore operation %q: %d completed counts for %d tasks", id, len(completed), len(o.tasks))
	}
	if o.State().Final() || o.running.Load() > 0 {
		return false, errorf(CodeInvalidValue, "completed", "cannot restore operation %q: it is %s with %d allocations", id, o.State(), o.running.Load())
	}
	for i, c := range completed {
		tk := &o.tasks[i]
		if c < 0 || c > MaxJobCount || tk.completed.Load() != 0 {
			return false, errorf(CodeInvalidValue, "completed["+strconv.Itoa(i)+"]", "cannot restore %d completed jobs of task %d of operation %q: want 0 to 2^40, once", c, i, id)
		}
	}
	s.lockShards() // as PatchOperation: no heartbeat counts jobs meanwhile
	for i, c := range completed {
		tk := &o.tasks[i]
		tk.completed.Store(c)
		o.unfinished.Add(tk.setJobCount(tk.spec.JobCount))
	}
	s.unlockShards()
	if o.unfinished.Load() > 0 {
		return false, nil
	}
	if o.state.CompareAndSwap(uint32(o.State()), uint32(StateCompleted)) {
		s.finishEpoch.Add(1)
		s.retire(o)
	}
	return true, nil
}

// SetAccumulatedVolume sets integral pool name's accumulated volume in
// resource·seconds, cpu in cores·seconds (as PoolInfo reports it), e.g.
// from a checkpoint.
func (s *Scheduler) SetAccumulatedVolume(name string, v [resource.Count]float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tree.Lookup(name)
	if !ok {
		return errorf(CodeInvalidValue, "pool", "cannot set the volume of pool %q: no such pool", name)
	}
	v[resource.CPU] *= resource.CPUScale
	s.fs.SetAccumulatedVolume(id, v)
	return nil
}
