package facade

import (
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
)

// TestPatchRacingRetirementIsAllOrNothing: a PATCH of an operation whose
// last job completes, and which the fair-share loop retires, while the
// PATCH is being applied changes nothing (409 operation_finished), in
// memory and in the store. The hook runs the node's heartbeat and the
// core's fair-share update right before the core applies the patch, where
// a patch made of several core calls (a move, then the weight) let the
// update retire the operation between them: the move stayed in memory but
// was never written.
func TestPatchRacingRetirementIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	mc.set(clock.Time(5_000_000))
	ts := startDurable(t, dir, mc, twoPools, nil)
	n := newNode("n1", 8, 16)
	ts.heartbeat(n)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "x", "pool": "prod", "weight": 2, "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n)
	ids := n.ids()
	if len(ids) != 1 {
		t.Fatalf("%d allocations run, want 1", len(ids))
	}
	alloc, _ := strconv.ParseUint(ids[0], 10, 64)

	testHookPatchOperation = func(id string) {
		now := ts.clock.Now()
		hb := schedule.NodeHeartbeat{Node: "n1", Limits: resource.Vec{resource.UserSlots: 100, resource.CPU: resource.Cores(8), resource.Memory: 16 << 30},
			Allocations: []schedule.AllocationReport{{ID: alloc, State: schedule.AllocCompleted}}}
		var resp schedule.Response
		if err := ts.srv.sched.Heartbeat(now, &hb, &resp); err != nil {
			t.Errorf("the racing heartbeat: %v", err)
		}
		ts.srv.sched.UpdateFairShare(now) // retires x
	}
	t.Cleanup(func() { testHookPatchOperation = nil })
	status, body := ts.do("PATCH", "/api/v1/operations/x", `{"pool": "research", "weight": 3, "resource_limits": {"cpu": 4}}`)
	testHookPatchOperation = nil
	if status != 409 || errorCode(body) != schedule.CodeFinished {
		t.Fatalf("PATCH of a retired operation: %d %s, want 409 %s", status, body, schedule.CodeFinished)
	}
	check := func(when string, s *durableServer) {
		t.Helper()
		o := s.must(200, "GET", "/api/v1/orchid/operations/x", "")
		if o["pool"] != "prod" || o["state"] != "completed" {
			t.Fatalf("%s: x in pool %v, %v; want prod, completed (the PATCH changed nothing)", when, o["pool"], o["state"])
		}
	}
	check("before the restart", ts)
	ts.stop()
	check("after a restart", startDurable(t, dir, mc, twoPools, nil))
}
