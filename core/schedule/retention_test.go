package schedule

import (
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// TestFinishedOperationsDoNotPinSnapshots: an operation that finished is
// kept (for its results) until it is forgotten, but the snapshots of the
// updates that saw it running must not be: each finished operation would
// otherwise keep the whole view array of one update alive, and a server
// that retains finished operations for minutes grows its heap by that
// array per operation.
func TestFinishedOperationsDoNotPinSnapshots(t *testing.T) {
	node := resource.Vec{resource.UserSlots: 10, resource.CPU: cores(10), resource.Memory: 100 * gib}
	s := New(tree.New(tree.PoolConfig{}), DefaultConfig())
	agents := make([]coretest.Node[uint64, struct{}], 4)
	durations := map[string][]float64{}
	now := 0.0
	beatAll := func() {
		for i := range agents {
			agentBeat(t, s, clock.FromSeconds(now), NodeHeartbeat{Node: fmt.Sprintf("n%03d", i), Limits: node}, &agents[i], durations)
		}
	}
	beatAll() // the nodes register
	start := func(ts []TaskSpec) string {
		id, _, err := s.StartOperation(0, OperationSpec{Tasks: ts})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range ts {
			durations[id] = append(durations[id], tk.DurationHintS)
		}
		return id
	}
	state := func(id string) OperationInfo {
		info, err := s.Operation(id)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	// Two short operations that finish at different updates, and a long
	// one that keeps every snapshot non-empty.
	short := start([]TaskSpec{{Name: "t", JobCount: 2, Resources: job(1, 1), DurationHintS: 1}})
	later := start([]TaskSpec{{Name: "t", JobCount: 2, Resources: job(1, 1), DurationHintS: 3}})
	long := start(tasks(8, job(1, 1)))
	// A weak pointer to the ops array of every snapshot published.
	var seen []weak.Pointer[opView]
	for now < 6 {
		now++
		s.UpdateFairShare(clock.FromSeconds(now))
		beatAll()
		if ops := s.snap.Load().ops; len(ops) > 0 {
			seen = append(seen, weak.Make(&ops[0]))
		}
	}
	for _, id := range []string{short, later} {
		if st := state(id).State; st != StateCompleted {
			t.Fatalf("operation %s is %s at t=%g, want completed", id, st, now)
		}
	}
	if st := state(long).State; st != StateRunning {
		t.Fatalf("operation %s is %s, want running", long, st)
	}
	checkViews(t, s)

	// Only the published snapshot may be reachable (the heartbeats after
	// the last update synced every shard to it).
	runtime.GC()
	for i, p := range seen[:len(seen)-1] {
		if p.Value() != nil {
			t.Errorf("the snapshot of t=%d is still reachable", i+1)
		}
	}
	// The finished operations still answer with their results.
	if info := state(short); info.CompletedJobs != 2 {
		t.Errorf("finished operation %s: %d completed jobs, want 2", short, info.CompletedJobs)
	}
}

// checkViews checks that every operation's view is either an element of
// the published snapshot or its own detached copy.
func checkViews(t *testing.T, s *Scheduler) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.snap.Load()
	for id, o := range s.ops {
		v := o.view.Load()
		if v == nil {
			continue
		}
		in := inSnapshot(snap, v)
		if in == v.detached {
			t.Errorf("operation %s: view in the snapshot %v, detached %v", id, in, v.detached)
		}
		if running := o.State() == StateRunning && !o.retired; running != in {
			t.Errorf("operation %s (%s): running %v but in the snapshot %v", id, o.State(), running, in)
		}
	}
}
