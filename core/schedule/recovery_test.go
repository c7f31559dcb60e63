package schedule

import (
	"errors"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// recoveryConfig is the defaults with a 10 s recovery window.
func recoveryConfig() Config {
	cfg := DefaultConfig()
	cfg.Shards = 4
	cfg.RecoveryTimeout = 10 * clock.Second
	return cfg
}

// durableScheduler is a Scheduler whose nodes the test registers.
func durableScheduler(t *testing.T, cfg Config, pools ...tree.Mutation) *Scheduler {
	t.Helper()
	s := New(tree.New(tree.PoolConfig{}), cfg)
	if len(pools) > 0 {
		if _, err := s.ApplyPools(pools...); err != nil {
			t.Fatal(err)
		}
	}
	s.SetDurable(Durable{ExternalNodeRegistry: true})
	return s
}

// heartbeatRegistering sends hb, registering the node with reg when the
// scheduler asks for it.
func heartbeatRegistering(t *testing.T, s *Scheduler, now clock.Time, hb *NodeHeartbeat, reg NodeRegistration) *Response {
	t.Helper()
	resp := &Response{}
	err := s.Heartbeat(now, hb, resp)
	if errors.Is(err, ErrNodeNotRegistered) {
		reg.Name = hb.Node
		if !s.RegisterNode(now, reg) {
			t.Fatalf("RegisterNode(%+v): already registered", reg)
		}
		resp.Reset()
		err = s.Heartbeat(now, hb, resp)
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// echo is the reports a node sends back for the starts it was given, with
// their origins.
func echo(hb *NodeHeartbeat, starts []StartDecision) {
	for _, st := range starts {
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: st.Allocation, State: AllocRunning, HasOrigin: true})
		for len(hb.AllocationOrigins) < len(hb.Allocations)-1 {
			hb.AllocationOrigins = append(hb.AllocationOrigins, AllocationOrigin{})
		}
		hb.AllocationOrigins = append(hb.AllocationOrigins, AllocationOrigin{Operation: []byte(st.Operation), Task: st.Task, Resources: st.Resources})
	}
}

// TestRecoveryAdoption runs a scheduler until node n0 holds allocations of
// two operations, then a second scheduler (the restart) on the same
// operations, and checks what n0's reports become, case by case.
func TestRecoveryAdoption(t *testing.T) {
	first := durableScheduler(t, recoveryConfig())
	for _, id := range []string{"live", "done"} {
		if _, _, err := first.StartOperation(0, OperationSpec{ID: id, Tasks: tasks(4, job(1, 1))}); err != nil {
			t.Fatal(err)
		}
	}
	hb := &NodeHeartbeat{Node: "n0", Limits: smallNode}
	reg := NodeRegistration{Index: 7, Seq: 100, SeqEnd: 200, Adopt: true}
	heartbeatRegistering(t, first, 0, hb, reg)
	first.UpdateFairShare(0)
	resp := heartbeatRegistering(t, first, 0, hb, reg)
	if len(resp.Start) != 8 {
		t.Fatalf("the first process started %d allocations, want 8", len(resp.Start))
	}
	for _, st := range resp.Start {
		if st.Allocation>>32 != 7 || uint32(st.Allocation) <= 100 || uint32(st.Allocation) > 200 {
			t.Fatalf("allocation id %d is outside index 7, seqs 101..200", st.Allocation)
		}
	}
	echo(hb, resp.Start)
	// The node also reports an allocation of an operation nobody knows and
	// one whose id the second process hands out itself.
	echo(hb, []StartDecision{{Allocation: 7<<32 | 150, Operation: "gone", Resources: job(1, 1)}})
	echo(hb, []StartDecision{{Allocation: 7<<32 | 250, Operation: "live", Resources: job(1, 1)}})

	// The restart: the same operations, "done" finished since; n0 and n1
	// were alive before the stop.
	second := durableScheduler(t, recoveryConfig())
	for _, id := range []string{"live", "done"} {
		if _, _, err := second.StartOperation(0, OperationSpec{ID: id, Tasks: tasks(4, job(1, 1))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.AbortOperation("done"); err != nil {
		t.Fatal(err)
	}
	now := clock.FromSeconds(100)
	second.UpdateFairShare(now)
	second.BeginRecovery(now, []string{"n0", "n1"})
	if st := second.Recovery(now); !st.Active || st.ExpectedNodes != 2 {
		t.Fatalf("after BeginRecovery: %+v, want an active window expecting 2 nodes", st)
	}
	reg = NodeRegistration{Index: 7, Seq: 200, SeqEnd: 300, Adopt: true}
	resp = heartbeatRegistering(t, second, now, hb, reg)

	if len(resp.Start) != 0 || len(resp.Preempt) != 0 {
		t.Fatalf("during recovery: %d starts, %d preemptions, want none", len(resp.Start), len(resp.Preempt))
	}
	aborts := map[uint64]AbortReason{}
	for _, a := range resp.Abort {
		aborts[a.Allocation] = a.Reason
	}
	wantAborts := map[uint64]AbortReason{7<<32 | 150: AbortUnknownAllocation, 7<<32 | 250: AbortUnknownAllocation}
	for _, r := range hb.Allocations[:8] {
		if i := hb.AllocationOrigins[indexOf(hb, r.ID)]; string(i.Operation) == "done" {
			wantAborts[r.ID] = AbortOperationFinished
		}
	}
	if len(aborts) != len(wantAborts) {
		t.Fatalf("aborts %v, want %v", aborts, wantAborts)
	}
	for id, r := range wantAborts {
		if aborts[id] != r {
			t.Errorf("allocation %d: abort reason %v (present %v), want %v", id, aborts[id], aborts[id] == r, r)
		}
	}
	info, err := second.Operation("live")
	if err != nil {
		t.Fatal(err)
	}
	if info.RunningAllocations != 4 || info.PendingJobs != 0 || info.Usage != times(job(1, 1), 4) {
		t.Fatalf("live after adoption: running %d, pending %d, usage %v; want 4, 0, %v", info.RunningAllocations, info.PendingJobs, info.Usage, times(job(1, 1), 4))
	}
	if n, ok := second.NodeSummary("n0"); !ok || n.AllocationCount != 4 || n.Usage != times(job(1, 1), 4) {
		t.Fatalf("n0 after adoption: %+v, want 4 allocations using %v", n, times(job(1, 1), 4))
	}
	if st := second.Recovery(now); !st.Active || st.ReportedNodes != 1 || st.Adopted != 4 || st.Refused != 4 {
		t.Fatalf("recovery status %+v, want active, 1 node reported, 4 adopted, 4 refused", st)
	}

	// A completion of an adopted allocation counts; the window closes when
	// n1 reports.
	hb.Allocations, hb.AllocationOrigins = hb.Allocations[:0], hb.AllocationOrigins[:0]
	for _, st := range second.nodeAllocs("n0") {
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: st, State: AllocRunning})
	}
	hb.Allocations[0].State = AllocCompleted
	resp.Reset()
	if err := second.Heartbeat(now.Add(clock.Second), hb, resp); err != nil {
		t.Fatal(err)
	}
	if info, _ := second.Operation("live"); info.CompletedJobs != 1 || info.RunningAllocations != 3 {
		t.Fatalf("after a completion: completed %d, running %d; want 1, 3", info.CompletedJobs, info.RunningAllocations)
	}
	heartbeatRegistering(t, second, now.Add(2*clock.Second), &NodeHeartbeat{Node: "n1", Limits: smallNode}, NodeRegistration{Index: 8, Seq: 0, SeqEnd: 100, Adopt: true})
	if st := second.Recovery(now.Add(2 * clock.Second)); st.Active || st.Ended != now.Add(2*clock.Second) {
		t.Fatalf("after every expected node reported: %+v, want the window closed at +2 s", st)
	}
}

// indexOf returns the index of the report of allocation id.
func indexOf(hb *NodeHeartbeat, id uint64) int {
	for i, r := range hb.Allocations {
		if r.ID == id {
			return i
		}
	}
	return -1
}

// nodeAllocs returns the ids of the allocations node name holds.
func (s *Scheduler) nodeAllocs(name string) []uint64 {
	sh, hash := s.shardAndHash(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes.get(name, hash)
	if n == nil {
		return nil
	}
	return append([]uint64(nil), n.ids...)
}

// TestRecoveryWindow checks, on the injected clock, that nothing starts
// during the window, that it closes at its deadline when a node never
// comes back, that a node registered again without Adopt adopts nothing
// and that a late node is adopted in full, even over its pool's limits.
func TestRecoveryWindow(t *testing.T) {
	cfg := recoveryConfig()
	limited := tree.Mutation{Kind: tree.AddPool, Name: "small", Parent: tree.RootName,
		Pool: tree.PoolConfig{ResourceLimits: slotLimit(2)}}
	s := durableScheduler(t, cfg, limited)
	if _, _, err := s.StartOperation(0, OperationSpec{ID: "big", Pool: "small", Tasks: tasks(10, job(1, 1))}); err != nil {
		t.Fatal(err)
	}
	now := clock.FromSeconds(50)
	s.UpdateFairShare(now)
	s.BeginRecovery(now, []string{"n0", "never"})

	// n0 comes back holding nothing: no start in the window.
	resp := heartbeatRegistering(t, s, now, &NodeHeartbeat{Node: "n0", Limits: smallNode}, NodeRegistration{Index: 0, Seq: 10, SeqEnd: 1000, Adopt: true})
	if len(resp.Start) != 0 {
		t.Fatalf("a start in the recovery window: %+v", resp.Start)
	}
	// At the deadline the window closes without "never".
	deadline := now.Add(cfg.RecoveryTimeout)
	s.UpdateFairShare(deadline - 1)
	if !s.Recovery(deadline - 1).Active {
		t.Fatal("the window closed before its deadline")
	}
	s.UpdateFairShare(deadline)
	if st := s.Recovery(deadline); st.Active || st.Ended != deadline || st.ReportedNodes != 1 {
		t.Fatalf("at the deadline: %+v, want closed then with 1 of 2 nodes", st)
	}
	// The pool's limit of 2 slots holds for starts.
	resp.Reset()
	if err := s.Heartbeat(deadline, &NodeHeartbeat{Node: "n0", Limits: smallNode}, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Start) != 2 {
		t.Fatalf("after the window: %d starts, want 2 (the pool's limit)", len(resp.Start))
	}
	// A late node holding 3 allocations of "big" (seqs an earlier process
	// handed out) is adopted in full: the pool is then over its limit.
	late := &NodeHeartbeat{Node: "late", Limits: smallNode}
	echo(late, []StartDecision{
		{Allocation: 5<<32 | 1, Operation: "big", Resources: job(1, 1)},
		{Allocation: 5<<32 | 2, Operation: "big", Resources: job(1, 1)},
		{Allocation: 5<<32 | 3, Operation: "big", Resources: job(1, 1)},
	})
	resp = heartbeatRegistering(t, s, deadline+1, late, NodeRegistration{Index: 5, Seq: 3, SeqEnd: 100, Adopt: true})
	if len(resp.Abort) != 0 || len(resp.Start) != 0 {
		t.Fatalf("late node: aborts %+v, starts %+v; want it adopted and nothing started (the pool is full)", resp.Abort, resp.Start)
	}
	if info, _ := s.Operation("big"); info.RunningAllocations != 5 || info.PendingJobs != 5 {
		t.Fatalf("big: running %d pending %d, want 5 and 5", info.RunningAllocations, info.PendingJobs)
	}
	// The late node is registered again (after a node timeout, say):
	// nothing it reports is adopted again.
	s.UpdateFairShare(deadline.Add(2 + cfg.NodeHeartbeatTimeout + 1)) // unregisters both nodes
	if _, ok := s.NodeSummary("late"); ok {
		t.Fatal("the late node is still registered after its timeout")
	}
	again := deadline.Add(3 + cfg.NodeHeartbeatTimeout)
	resp = heartbeatRegistering(t, s, again, late, NodeRegistration{Index: 5, Seq: 100, SeqEnd: 200})
	if len(resp.Abort) != 3 {
		t.Fatalf("re-registered node: %d aborts, want its 3 allocations aborted", len(resp.Abort))
	}
}

// TestNodeSeqRange checks that a node starts nothing beyond its id range,
// that OnNodeSeqLow is called once at its low mark and that ExtendNode
// lets it go on.
func TestNodeSeqRange(t *testing.T) {
	s := durableScheduler(t, recoveryConfig())
	var lows []uint32
	s.SetDurable(Durable{ExternalNodeRegistry: true, OnNodeSeqLow: func(node string, index, end uint32) {
		if node != "n0" || index != 3 {
			t.Errorf("OnNodeSeqLow(%q, %d)", node, index)
		}
		lows = append(lows, end)
	}})
	if _, _, err := s.StartOperation(0, OperationSpec{ID: "a", Tasks: tasks(100, job(1, 1))}); err != nil {
		t.Fatal(err)
	}
	hb := &NodeHeartbeat{Node: "n0", Limits: smallNode}
	reg := NodeRegistration{Index: 3, Seq: 20, SeqEnd: 24, SeqLow: 22}
	heartbeatRegistering(t, s, 0, hb, reg)
	s.UpdateFairShare(0)
	resp := heartbeatRegistering(t, s, 0, hb, reg)
	if len(resp.Start) != 4 || len(lows) != 1 || lows[0] != 24 {
		t.Fatalf("%d starts, OnNodeSeqLow calls %v; want 4 starts (seqs 21..24) and one call with end 24", len(resp.Start), lows)
	}
	// Completing them frees the node, but its range is used up.
	hb.Allocations = hb.Allocations[:0]
	for _, st := range resp.Start {
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: st.Allocation, State: AllocCompleted})
	}
	resp.Reset()
	if err := s.Heartbeat(1, hb, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Start) != 0 {
		t.Fatalf("%d starts beyond the id range", len(resp.Start))
	}
	s.ExtendNode("n0", 3, 30, 28)
	hb.Allocations = hb.Allocations[:0]
	resp.Reset()
	if err := s.Heartbeat(2, hb, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Start) != 6 || uint32(resp.Start[0].Allocation) != 25 {
		t.Fatalf("after ExtendNode: %+v, want 6 starts from seq 25", resp.Start)
	}
}

// TestRestoreCompletedJobs checks a checkpoint's restore: the completed
// jobs stop being pending, and an operation with all of them completes.
func TestRestoreCompletedJobs(t *testing.T) {
	s := durableScheduler(t, recoveryConfig())
	spec := OperationSpec{ID: "a", Tasks: []TaskSpec{{Name: "x", JobCount: 3, Resources: job(1, 1)}, {Name: "y", JobCount: 2, Resources: job(1, 1)}}}
	if _, _, err := s.StartOperation(0, spec); err != nil {
		t.Fatal(err)
	}
	spec.ID = "b"
	if _, _, err := s.StartOperation(0, spec); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id        string
		completed []int64
		finished  bool
		err       bool
	}{
		{"a", []int64{1, 2}, false, false},
		{"a", []int64{1, 0}, false, true},         // restored already
		{"b", []int64{1<<40 + 1, 0}, false, true}, // beyond any task's jobs
		{"b", []int64{-1, 0}, false, true},
		{"b", []int64{1}, false, true}, // a count per task
		{"b", []int64{3, 2}, true, false},
		{"nope", []int64{0}, false, true},
	} {
		finished, err := s.RestoreCompletedJobs(tc.id, tc.completed)
		if (err != nil) != tc.err || finished != tc.finished {
			t.Errorf("RestoreCompletedJobs(%s, %v) = %v, %v; want finished %v, error %v", tc.id, tc.completed, finished, err, tc.finished, tc.err)
		}
	}
	if info, _ := s.Operation("a"); info.PendingJobs != 2 || info.CompletedJobs != 3 || info.State != StateRunning {
		t.Errorf("a: %+v, want 2 pending and 3 completed jobs, running", info)
	}
	if info, _ := s.Operation("b"); info.State != StateCompleted {
		t.Errorf("b: %v, want completed", info.State)
	}
	got := map[string][]int64{}
	s.CompletedJobs(func(id string, c []int64) { got[id] = append([]int64(nil), c...) })
	if len(got) != 1 || len(got["a"]) != 2 || got["a"][0] != 1 || got["a"][1] != 2 {
		t.Errorf("CompletedJobs: %v, want only a: [1 2]", got)
	}
}

// slotLimit is a resource limit of n user slots.
func slotLimit(n int64) tree.PartialVec {
	var p tree.PartialVec
	p.V[resource.UserSlots], p.Set[resource.UserSlots] = n, true
	return p
}

// times is v added k times.
func times(v resource.Vec, k int) resource.Vec {
	var sum resource.Vec
	for range k {
		sum = sum.Add(v)
	}
	return sum
}

// TestRecoveryWindowBlocksPreemption: an operation that starves while the
// window is open preempts nothing until it closes, then it does.
func TestRecoveryWindowBlocksPreemption(t *testing.T) {
	cfg := recoveryConfig()
	cfg.RecoveryTimeout = 60 * clock.Second
	cfg.FairShareStarvationTimeout = clock.Second
	cfg.PreemptiveSchedulingBackoff = clock.Second
	s := durableScheduler(t, cfg,
		tree.Mutation{Kind: tree.AddPool, Name: "a", Parent: tree.RootName},
		tree.Mutation{Kind: tree.AddPool, Name: "b", Parent: tree.RootName})
	for _, op := range []OperationSpec{{ID: "full", Pool: "a", Tasks: tasks(10, job(1, 1))}, {ID: "starved", Pool: "b", Tasks: tasks(10, job(1, 1))}} {
		if _, _, err := s.StartOperation(0, op); err != nil {
			t.Fatal(err)
		}
	}
	s.BeginRecovery(0, []string{"n0", "never"})
	hb := &NodeHeartbeat{Node: "n0", Limits: smallNode}
	var held []StartDecision
	for i := range 10 {
		held = append(held, StartDecision{Allocation: uint64(i + 1), Operation: "full", Resources: job(1, 1)})
	}
	echo(hb, held)
	heartbeatRegistering(t, s, 0, hb, NodeRegistration{Index: 0, Seq: 100, SeqEnd: 1000, Adopt: true})
	hb.AllocationOrigins = nil // later heartbeats list them without their origins
	for i := range hb.Allocations {
		hb.Allocations[i].HasOrigin = false
	}
	preempted := 0
	for sec := 1; sec <= 70; sec++ {
		now := clock.FromSeconds(float64(sec))
		s.UpdateFairShare(now)
		resp := &Response{}
		if err := s.Heartbeat(now, hb, resp); err != nil {
			t.Fatal(err)
		}
		if s.Recovery(now).Active {
			if len(resp.Preempt)+len(resp.Start)+len(resp.Abort) > 0 {
				t.Fatalf("at %d s, in the window: preempts %v starts %v aborts %v", sec, resp.Preempt, resp.Start, resp.Abort)
			}
			if info, _ := s.Operation("starved"); sec > 5 && info.Starvation == 0 {
				t.Fatalf("at %d s the starved operation is not starving: the test proves nothing", sec)
			}
			continue
		}
		preempted += len(resp.Preempt)
	}
	if preempted == 0 {
		t.Fatal("no preemption for the starving operation after the window closed")
	}
}
