//go:build !race && !invariants

package schedule

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// Zero allocations on the heartbeat path: a heartbeat
// into a reused Response allocates nothing in steady state, whether it
// changes nothing, completes and starts an allocation, or preempts.

// allocNode builds a scheduler with one node holding `slots` allocations
// of operation a (plenty of pending jobs) and returns it with the node's
// reports.
func allocNode(t *testing.T, cfg Config, slots int64) (*Scheduler, *NodeHeartbeat, *Response) {
	t.Helper()
	s := New(tree.New(tree.PoolConfig{}), cfg)
	limits := resource.Vec{resource.UserSlots: slots, resource.CPU: cores(float64(slots)), resource.Memory: slots * gib}
	hb := &NodeHeartbeat{Node: "n0", Limits: limits, Allocations: make([]AllocationReport, 0, 4*slots)}
	resp := &Response{}
	if err := s.Heartbeat(0, hb, resp); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StartOperation(0, OperationSpec{ID: "a", Tasks: tasks(1<<30, job(1, 0)) /* no memory: fits 2^53 */}); err != nil {
		t.Fatal(err)
	}
	s.UpdateFairShare(0)
	resp.Reset()
	if err := s.Heartbeat(0, hb, resp); err != nil {
		t.Fatal(err)
	}
	if int64(len(resp.Start)) != slots {
		t.Fatalf("started %d, want %d", len(resp.Start), slots)
	}
	for _, st := range resp.Start {
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: st.Allocation, State: AllocRunning})
	}
	s.UpdateFairShare(1)
	return s, hb, resp
}

func TestHeartbeatAllocsSteady(t *testing.T) {
	// Half of a's allocations are Preemptible: the normal stage (always
	// attempted) collects and sorts them as victims, then finds nothing
	// to do.
	cfg := DefaultConfig()
	cfg.PreemptionSatisfactionThreshold = 0.5
	s, hb, resp := allocNode(t, cfg, 100)
	if info, _ := s.Operation("a"); info.AllocationsByStatus[Preemptible] != 50 {
		t.Fatalf("a: %v, want 50 Preemptible allocations", info.AllocationsByStatus)
	}
	now := 1.0
	allocs := testing.AllocsPerRun(100, func() {
		now += 6 // every heartbeat runs the preemptive stages too
		resp.Reset()
		if err := s.Heartbeat(clock.FromSeconds(now), hb, resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Start)+len(resp.Preempt)+len(resp.Abort) != 0 {
			t.Fatalf("steady heartbeat decided %+v", resp)
		}
	})
	if allocs != 0 {
		t.Errorf("steady heartbeat: %v allocations per run, want 0", allocs)
	}
}

func TestHeartbeatAllocsCompleteAndStart(t *testing.T) {
	s, hb, resp := allocNode(t, DefaultConfig(), 100)
	now := 1.0
	allocs := testing.AllocsPerRun(100, func() {
		now++
		hb.Allocations[0].State = AllocCompleted
		resp.Reset()
		if err := s.Heartbeat(clock.FromSeconds(now), hb, resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Start) != 1 || len(resp.Preempt)+len(resp.Abort) != 0 {
			t.Fatalf("heartbeat decided %+v, want one start", resp)
		}
		copy(hb.Allocations, hb.Allocations[1:])
		hb.Allocations[len(hb.Allocations)-1] = AllocationReport{ID: resp.Start[0].Allocation, State: AllocRunning}
	})
	if allocs != 0 {
		t.Errorf("complete-and-start heartbeat: %v allocations per run, want 0", allocs)
	}
}

func TestHeartbeatAllocsPreempt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FairShareStarvationTimeout = 1 * clock.Second
	const slots = 1000
	s, hb, resp := allocNode(t, cfg, slots)
	if _, _, err := s.StartOperation(1, OperationSpec{ID: "b", Tasks: tasks(1<<30, job(1, 0))}); err != nil {
		t.Fatal(err)
	}
	for now := 2.0; now <= 4; now++ {
		s.UpdateFairShare(clock.FromSeconds(now)) // b starves; no heartbeat in between
	}
	if info, _ := s.Operation("b"); info.PreemptionPriority != PriorityNormal {
		t.Fatalf("b: priority %v, want normal", info.PreemptionPriority)
	}
	now := 4.0
	var victim uint64
	allocs := testing.AllocsPerRun(100, func() {
		now += 6
		resp.Reset()
		if err := s.Heartbeat(clock.FromSeconds(now), hb, resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Start) != 1 || len(resp.Preempt) != 1 || len(resp.Abort) != 0 || resp.Preempt[0].ForAllocation != resp.Start[0].Allocation {
			t.Fatalf("heartbeat decided %+v, want one start by preemption", resp)
		}
		// The previous victim was reported aborted in this heartbeat: drop it.
		if victim != 0 {
			for i := range hb.Allocations {
				if hb.Allocations[i].ID == victim {
					hb.Allocations = append(hb.Allocations[:i], hb.Allocations[i+1:]...)
					break
				}
			}
		}
		victim = resp.Preempt[0].Allocation
		for i := range hb.Allocations {
			if hb.Allocations[i].ID == victim {
				hb.Allocations[i].State = AllocAborted
			}
		}
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: resp.Start[0].Allocation, State: AllocRunning})
	})
	if allocs != 0 {
		t.Errorf("preempting heartbeat: %v allocations per run, want 0", allocs)
	}
}

func TestHeartbeatAllocsUsage(t *testing.T) {
	// Every allocation reports a usage, alternately above and below its
	// request: the node, operation, limit counters and status lists follow.
	cfg := DefaultConfig()
	cfg.PreemptionSatisfactionThreshold = 0.5
	s, hb, resp := allocNode(t, cfg, 100)
	hb.AllocationUsage = make([]resource.Vec, len(hb.Allocations))
	for i := range hb.Allocations {
		hb.Allocations[i].HasUsage = true
	}
	low, high := resource.Vec{resource.UserSlots: 1, resource.CPU: cores(0.5)}, resource.Vec{resource.UserSlots: 1, resource.CPU: cores(1.5)}
	now, k := 1.0, 0
	allocs := testing.AllocsPerRun(100, func() {
		now++
		k++
		for i := range hb.AllocationUsage {
			if (i+k)%2 == 0 {
				hb.AllocationUsage[i] = low
			} else {
				hb.AllocationUsage[i] = high
			}
		}
		resp.Reset()
		if err := s.Heartbeat(clock.FromSeconds(now), hb, resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Start)+len(resp.Preempt)+len(resp.Abort) != 0 {
			t.Fatalf("usage heartbeat decided %+v", resp)
		}
	})
	if allocs != 0 {
		t.Errorf("usage heartbeat: %v allocations per run, want 0", allocs)
	}
	if info, _ := s.Operation("a"); info.Usage[resource.CPU] != cores(100) {
		t.Errorf("a's cpu usage %v, want 100 cores", info.Usage[resource.CPU])
	}
}

func TestHeartbeatAllocsVanished(t *testing.T) {
	// The node stops listing its oldest allocation: it is finished and its
	// job starts again in the same heartbeat.
	s, hb, resp := allocNode(t, DefaultConfig(), 100)
	now := 1.0
	allocs := testing.AllocsPerRun(100, func() {
		now++
		gone := hb.Allocations[0].ID
		copy(hb.Allocations, hb.Allocations[1:])
		hb.Allocations = hb.Allocations[:len(hb.Allocations)-1]
		resp.Reset()
		if err := s.Heartbeat(clock.FromSeconds(now), hb, resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Start) != 1 || len(resp.Abort) != 1 || resp.Abort[0].Allocation != gone || resp.Abort[0].Reason != AbortVanished || len(resp.Preempt) != 0 {
			t.Fatalf("heartbeat decided %+v, want allocation %d vanished and one start", resp, gone)
		}
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: resp.Start[0].Allocation, State: AllocRunning})
	})
	if allocs != 0 {
		t.Errorf("vanishing heartbeat: %v allocations per run, want 0", allocs)
	}
}

// TestHeartbeatAllocsTagFilters: with scheduling tag filters in use (a
// pool's and an operation's matching the node, and an operation whose
// filter does not), a complete-and-start heartbeat still allocates
// nothing: the node's class memo and the index's heaps are reused.
func TestHeartbeatAllocsTagFilters(t *testing.T) {
	s := New(tree.New(tree.PoolConfig{}), DefaultConfig())
	if _, err := s.ApplyPools(tree.Mutation{Kind: tree.AddPool, Name: "p", Pool: tree.PoolConfig{SchedulingTagFilter: tagfilter.MustParse("gpu")}}); err != nil {
		t.Fatal(err)
	}
	const slots = 100
	limits := resource.Vec{resource.UserSlots: slots, resource.CPU: cores(slots), resource.Memory: slots * gib}
	hb := &NodeHeartbeat{Node: "n0", Limits: limits, Tags: []string{"gpu", "fast"}, Allocations: make([]AllocationReport, 0, 4*slots)}
	resp := &Response{}
	if err := s.Heartbeat(0, hb, resp); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []OperationSpec{
		{ID: "z", Tasks: tasks(1<<30, job(1, 0)), SchedulingTagFilter: tagfilter.MustParse("slow")},
		{ID: "a", Pool: "p", Tasks: tasks(1<<30, job(1, 0)), SchedulingTagFilter: tagfilter.MustParse("!slow & (fast | ssd)")},
	} {
		if _, _, err := s.StartOperation(0, spec); err != nil {
			t.Fatal(err)
		}
	}
	s.UpdateFairShare(0)
	resp.Reset()
	if err := s.Heartbeat(0, hb, resp); err != nil {
		t.Fatal(err)
	}
	for _, st := range resp.Start {
		if st.Operation != "a" {
			t.Fatalf("started %+v on a node its filter does not match", st)
		}
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: st.Allocation, State: AllocRunning})
	}
	if len(resp.Start) != slots {
		t.Fatalf("started %d, want %d", len(resp.Start), slots)
	}
	s.UpdateFairShare(1)
	now := 1.0
	allocs := testing.AllocsPerRun(100, func() {
		now++
		hb.Allocations[0].State = AllocCompleted
		resp.Reset()
		if err := s.Heartbeat(clock.FromSeconds(now), hb, resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Start) != 1 || resp.Start[0].Operation != "a" || len(resp.Preempt)+len(resp.Abort) != 0 {
			t.Fatalf("heartbeat decided %+v, want one start of a", resp)
		}
		copy(hb.Allocations, hb.Allocations[1:])
		hb.Allocations[len(hb.Allocations)-1] = AllocationReport{ID: resp.Start[0].Allocation, State: AllocRunning}
	})
	if allocs != 0 {
		t.Errorf("complete-and-start heartbeat with tag filters: %v allocations per run, want 0", allocs)
	}
}
