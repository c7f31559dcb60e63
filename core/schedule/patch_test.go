package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// TestPatchOperationAllOrNothing: a patch with one bad part changes
// nothing, whatever its other parts (the move included), and says which
// part is bad.
func TestPatchOperationAllOrNothing(t *testing.T) {
	ten := int64(10)
	for _, tc := range []struct {
		name      string
		patch     OperationPatch
		code, why string
	}{
		{"weight", OperationPatch{Pool: "b", HasPool: true, Weight: tree.Some(-1)}, apierr.CodeInvalidValue, "weight"},
		{"unknown pool", OperationPatch{Pool: "nope", HasPool: true, Weight: tree.Some(3)}, tree.CodeUnknownPool, "pool"},
		{"pool full", OperationPatch{Pool: "full", HasPool: true, Weight: tree.Some(3)}, "too_many_operations", ""},
		{"renamed task", OperationPatch{Pool: "b", HasPool: true, Tasks: []TaskPatch{{Name: "other", HasName: true}}}, apierr.CodeInvalidValue, "tasks[0].name"},
		{"resources changed", OperationPatch{Weight: tree.Some(3), Tasks: []TaskPatch{{Resources: job(2, 1), HasResources: true}}}, apierr.CodeInvalidValue, "tasks[0].resources"},
		{"new task without resources", OperationPatch{Pool: "b", HasPool: true, Tasks: []TaskPatch{{}, {JobCount: 1, HasJobCount: true}}}, CodeMissingAttribute, "tasks[1].resources"},
		{"new task without job_count", OperationPatch{Tasks: []TaskPatch{{}, {Resources: job(1, 1), HasResources: true}}}, CodeMissingAttribute, "tasks[1].job_count"},
		{"job_count above 2^40", OperationPatch{Pool: "b", HasPool: true, Tasks: []TaskPatch{{JobCount: 1<<40 + 1, HasJobCount: true}}}, apierr.CodeInvalidValue, "tasks[0].job_count"},
		{"negative job_count", OperationPatch{Tasks: []TaskPatch{{JobCount: -1, HasJobCount: true}}}, apierr.CodeInvalidValue, "tasks[0].job_count"},
		{"demand above 2^53", OperationPatch{Pool: "b", HasPool: true, Tasks: []TaskPatch{{}, {JobCount: 1 << 40, HasJobCount: true, Resources: resource.Vec{resource.Memory: 1 << 20}, HasResources: true}}}, apierr.CodeInvalidValue, "tasks[1].job_count"},
		{"limits", OperationPatch{Pool: "b", HasPool: true, ResourceLimits: tree.PartialVec{V: resource.Vec{resource.CPU: -1}, Set: [resource.Count]bool{resource.CPU: true}}, HasResourceLimits: true}, apierr.CodeInvalidValue, "resource_limits.cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, DefaultConfig(), 1, smallNode,
				tree.Mutation{Kind: tree.AddPool, Name: "a"}, tree.Mutation{Kind: tree.AddPool, Name: "b"},
				tree.Mutation{Kind: tree.AddPool, Name: "full", Pool: tree.PoolConfig{MaxOperationCount: tree.SomeInt(ten)}})
			for range 10 {
				c.start(OperationSpec{Pool: "full", Tasks: tasks(1, job(1, 1))})
			}
			id := c.start(OperationSpec{ID: "x", Pool: "a", Weight: tree.Some(2), Tasks: tasks(4, job(1, 1))})
			before := c.info(id)
			_, err := c.s.PatchOperation(id, tc.patch)
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != tc.code || tc.why != "" && e.Path != tc.why {
				t.Fatalf("PatchOperation: %v, want %s at %q", err, tc.code, tc.why)
			}
			after := c.info(id)
			o := c.s.ops[id]
			if after.Pool != before.Pool || after.PendingJobs != before.PendingJobs || o.spec.Weight != tree.Some(2) ||
				len(o.tasks) != 1 || o.tasks[0].spec.JobCount != 4 || !o.spec.ResourceLimits.IsEmpty() {
				t.Fatalf("after a refused patch: pool %s pending %d weight %v tasks %d limits %v; want it unchanged", after.Pool, after.PendingJobs, o.spec.Weight, len(o.tasks), o.spec.ResourceLimits)
			}
		})
	}
}

// TestPatchJobCounts: a task's job count follows the workload. Above its
// completed and running jobs the rest is pending; below them nothing is
// pending, the running allocations keep running, and those that end other
// than completed do not return to pending; the operation completes when
// every task completed its job count and nothing runs.
func TestPatchJobCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// jobs run 4 allocations of the task's 4 jobs, complete of them
		// complete, then the patch.
		complete int
		patch    []TaskPatch
		// After the patch: pending jobs, running allocations, state.
		pending, running int64
		state            OperationState
		// Then every running allocation ends as end (AllocCompleted or
		// AllocAborted), with one heartbeat: jobs pending or running after
		// it (new starts included), completed jobs, state.
		end                 AllocationState
		outstanding, doneAt int64
		final               OperationState
	}{
		{"raise", 1, []TaskPatch{{JobCount: 6, HasJobCount: true}}, 2, 3, StateRunning, AllocAborted, 5, 1, StateRunning},
		{"raise then complete", 1, []TaskPatch{{JobCount: 6, HasJobCount: true}}, 2, 3, StateRunning, AllocCompleted, 2, 4, StateRunning},
		{"lower within the running", 1, []TaskPatch{{JobCount: 3, HasJobCount: true}}, 0, 3, StateRunning, AllocAborted, 2, 1, StateRunning},
		{"lower to the completed", 1, []TaskPatch{{JobCount: 1, HasJobCount: true}}, 0, 3, StateRunning, AllocAborted, 0, 1, StateCompleted},
		{"lower to 0, the running complete", 1, []TaskPatch{{JobCount: 0, HasJobCount: true}}, 0, 3, StateRunning, AllocCompleted, 0, 4, StateCompleted},
		{"unchanged", 0, []TaskPatch{{}}, 0, 4, StateRunning, AllocCompleted, 0, 4, StateCompleted},
		{"a new task", 0, []TaskPatch{{}, {Name: "more", JobCount: 2, HasJobCount: true, Resources: job(1, 1), HasResources: true}}, 2, 4, StateRunning, AllocCompleted, 2, 4, StateRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, DefaultConfig(), 1, smallNode)
			id := c.start(OperationSpec{ID: "x", Tasks: []TaskSpec{{Name: "t", JobCount: 4, Resources: job(1, 1)}}})
			c.update()
			c.heartbeatAll()
			if got := c.info(id).RunningAllocations; got != 4 {
				t.Fatalf("%d allocations run, want 4", got)
			}
			n := &c.nodes[0]
			for j := range tc.complete {
				n.finish(j, AllocCompleted)
			}
			if tc.complete > 0 {
				c.heartbeat(0)
			}
			st, err := c.s.PatchOperation(id, OperationPatch{Tasks: tc.patch})
			if err != nil {
				t.Fatal(err)
			}
			info := c.info(id)
			if info.PendingJobs != tc.pending || info.RunningAllocations != tc.running || st != tc.state || info.State != tc.state {
				t.Fatalf("after the patch: %d pending, %d running, %v (answered %v); want %d, %d, %v", info.PendingJobs, info.RunningAllocations, info.State, st, tc.pending, tc.running, tc.state)
			}
			for j := range n.agent.Len() {
				n.finish(j, tc.end)
			}
			c.update()
			c.heartbeat(0)
			info = c.info(id)
			if got := info.PendingJobs + info.RunningAllocations; got != tc.outstanding || info.CompletedJobs != tc.doneAt || info.State != tc.final {
				t.Fatalf("after the allocations ended %v: %d outstanding, %d completed, %v; want %d, %d, %v", tc.end, got, info.CompletedJobs, info.State, tc.outstanding, tc.doneAt, tc.final)
			}
			checkJobs(t, c.s.ops[id])
		})
	}
	t.Run("lower to 0 before a start", func(t *testing.T) {
		c := newCluster(t, DefaultConfig(), 0, smallNode)
		id := c.start(OperationSpec{ID: "x", Tasks: tasks(4, job(1, 1))})
		st, err := c.s.PatchOperation(id, OperationPatch{Tasks: []TaskPatch{{JobCount: 0, HasJobCount: true}}})
		if err != nil || st != StateCompleted {
			t.Fatalf("PatchOperation: %v, %v; want completed", st, err)
		}
		if _, err := c.s.PatchOperation(id, OperationPatch{Tasks: []TaskPatch{{JobCount: 1, HasJobCount: true}}}); !isCode(err, CodeFinished) {
			t.Fatalf("a patch of a completed operation: %v, want %s", err, CodeFinished)
		}
	})
}

func isCode(err error, code string) bool {
	var e *apierr.Error
	return errors.As(err, &e) && e.Code == code
}

// checkJobs checks an operation's job counters: unfinished is its pending
// and running jobs, and a task with excess jobs has none pending.
func checkJobs(t *testing.T, o *operation) {
	t.Helper()
	if o.State().Final() {
		return
	}
	var sum int64
	for i := range o.tasks {
		tk := &o.tasks[i]
		sum += tk.pending.Load() + tk.running.Load()
		if tk.excess.Load() > 0 && tk.pending.Load() > 0 {
			t.Errorf("task %d: %d excess and %d pending jobs", i, tk.excess.Load(), tk.pending.Load())
		}
	}
	if got := o.unfinished.Load(); got != sum {
		t.Errorf("unfinished %d, its tasks have %d pending or running jobs", got, sum)
	}
}

// TestConcurrentPatchJobCounts: heartbeats of nodes on several shards
// complete, fail and start jobs while job counts go up and down, tasks are
// appended and allocations are refused. After each patch and at the end
// the job counters agree (unfinished is the pending and running jobs; no
// task has both excess and pending jobs), and once every count is 0 and
// every allocation ended the operation is completed. Run with -race.
func TestConcurrentPatchJobCounts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Shards = 4
	cfg.RefusedAllocationBackoff = 0
	s := New(tree.New(tree.PoolConfig{}), cfg)
	id, _, err := s.StartOperation(0, OperationSpec{ID: "x", Tasks: tasks(40, job(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	const nodes, rounds = 8, 60
	var now atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var held []AllocationReport
			var resp Response
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				for i := range held {
					switch rng.IntN(6) {
					case 0:
						held[i].State = AllocCompleted
					case 1:
						held[i].State = AllocFailed
					case 2:
						held[i].State = AllocRefused
					}
				}
				hb := NodeHeartbeat{Node: fmt.Sprintf("n%d", w), Limits: smallNode, Allocations: held}
				resp.Reset()
				if err := s.Heartbeat(clock.Time(now.Load()), &hb, &resp); err != nil {
					t.Error(err)
					return
				}
				kept := held[:0]
				for _, a := range held {
					if a.State == AllocRunning && !slices.ContainsFunc(resp.Abort, func(d AbortDecision) bool { return d.Allocation == a.ID }) {
						kept = append(kept, a)
					}
				}
				held = kept
				for _, st := range resp.Start {
					held = append(held, AllocationReport{ID: st.Allocation, State: AllocRunning})
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for r := range rounds {
		now.Add(int64(clock.Second))
		s.UpdateFairShare(clock.Time(now.Load()))
		// Around the task's completed and running jobs: below them now
		// and then (excess jobs), above them mostly, and above the
		// completed ones, so that x completes only at the end.
		o := s.ops[id] // only this goroutine patches: o.tasks is stable here
		around := func(i int) int64 {
			tk := &o.tasks[i]
			return tk.completed.Load() + max(1, tk.running.Load()-5+rng.Int64N(25))
		}
		ps := []TaskPatch{{JobCount: around(0), HasJobCount: true}}
		if r == rounds/2 {
			ps = append(ps, TaskPatch{Name: "more", JobCount: 10, HasJobCount: true, Resources: job(1, 1), HasResources: true})
		} else if r > rounds/2 {
			ps = append(ps, TaskPatch{JobCount: around(1), HasJobCount: true})
		}
		if _, err := s.PatchOperation(id, OperationPatch{Tasks: ps}); isCode(err, CodeFinished) {
			// Heartbeats completed past a count read a moment before and
			// nothing runs: x completed, as it must then.
			break
		} else if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		s.lockShards()
		checkJobs(t, s.ops[id])
		s.unlockShards()
	}
	zero := make([]TaskPatch, len(s.ops[id].tasks))
	for i := range zero {
		zero[i] = TaskPatch{JobCount: 0, HasJobCount: true}
	}
	if _, err := s.PatchOperation(id, OperationPatch{Tasks: zero}); err != nil && !isCode(err, CodeFinished) {
		t.Fatal(err)
	}
	// With no job left to start, every allocation ends within a few
	// heartbeats of each node: poll, a bounded number of times (the core
	// has no wall clock).
	for i := 0; i < 1_000_000 && s.ops[id].running.Load() > 0; i++ {
		runtime.Gosched()
		now.Add(int64(clock.Second))
		s.UpdateFairShare(clock.Time(now.Load()))
	}
	close(stop)
	wg.Wait()
	info, _ := s.Operation(id)
	if info.State != StateCompleted || info.RunningAllocations != 0 || info.PendingJobs != 0 {
		t.Fatalf("at the end: %v, %d running, %d pending; want completed, 0, 0", info.State, info.RunningAllocations, info.PendingJobs)
	}
}
