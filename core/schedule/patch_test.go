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
			s := New(tree.New(tree.PoolConfig{}), DefaultConfig())
			if _, err := s.ApplyPools(tree.Mutation{Kind: tree.AddPool, Name: "a"}, tree.Mutation{Kind: tree.AddPool, Name: "b"},
				tree.Mutation{Kind: tree.AddPool, Name: "full", Pool: tree.PoolConfig{MaxOperationCount: tree.SomeInt(ten)}}); err != nil {
				t.Fatal(err)
			}
			for i := range 11 {
				spec := OperationSpec{Pool: "full", Tasks: tasks(1, job(1, 1))}
				if i == 10 {
					spec = OperationSpec{ID: "x", Pool: "a", Weight: tree.Some(2), Tasks: tasks(4, job(1, 1))}
				}
				if _, _, err := s.StartOperation(0, spec); err != nil {
					t.Fatal(err)
				}
			}
			id := "x"
			before, _ := s.Operation(id)
			_, err := s.PatchOperation(id, tc.patch)
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != tc.code || tc.why != "" && e.Path != tc.why {
				t.Fatalf("PatchOperation: %v, want %s at %q", err, tc.code, tc.why)
			}
			after, _ := s.Operation(id)
			o := s.ops[id]
			if after.Pool != before.Pool || after.PendingJobs != before.PendingJobs || o.spec.Weight != tree.Some(2) ||
				len(o.tasks) != 1 || o.tasks[0].spec.JobCount != 4 || !o.spec.ResourceLimits.IsEmpty() {
				t.Fatalf("after a refused patch: pool %s pending %d weight %v tasks %d limits %v; want it unchanged", after.Pool, after.PendingJobs, o.spec.Weight, len(o.tasks), o.spec.ResourceLimits)
			}
		})
	}
}

func isCode(err error, code string) bool {
	var e *apierr.Error
	return errors.As(err, &e) && e.Code == code
}

// checkJobs checks an operation's job counters: unfinished is its pending
// and running jobs, and a task with excess jobs has none pending.
func checkJobs(t *testing.T, o *operation) {
	t.Helper()
	if err := o.jobCountersError(); err != nil {
		t.Error(err)
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
