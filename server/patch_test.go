package server

import (
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// TestPatchRacingRetirementIsAllOrNothing: a PATCH of an operation whose
// last job completes, and which the fair-share update retires, while the
// PATCH is being applied changes nothing (operation_finished), in memory
// and in the store. The hook runs the node's heartbeat and the core's
// fair-share update right before the core applies the patch, where a patch
// made of several core calls (a move, then the weight) let the update
// retire the operation between them: the move stayed in memory but was
// never written. On a real bbolt file.
func TestPatchRacingRetirementIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	c := clock.NewManual(clock.Time(5_000_000))
	cfg := serveConfig(t, `{"pools": [{"name": "prod", "weight": 1}, {"name": "research", "weight": 1}]}`)
	st := openBolt(t, dir)
	a, err := New(Options{Config: cfg, Clock: c, ManualUpdates: true, Logger: quiet(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var limits resource.Vec
	limits[resource.CPU] = 8 * resource.CPUScale
	limits[resource.UserSlots] = 100
	limits[resource.Memory] = 16 << 30
	beat := func(reports []schedule.AllocationReport) schedule.Response {
		t.Helper()
		var resp schedule.Response
		if err := a.Heartbeat(a.Now(), &schedule.NodeHeartbeat{Node: "n1", Limits: limits, Allocations: reports}, &resp); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		return resp
	}
	beat(nil)
	c.Advance(clock.Second)
	a.UpdateFairShare()
	body := []byte(`{"id": "x", "pool": "prod", "weight": 2, "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)
	spec, err := wire.DecodeStartOperation(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := a.StartOperation(spec, body, "", func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	c.Advance(clock.Second)
	a.UpdateFairShare()
	resp := beat(nil)
	if len(resp.Start) != 1 {
		t.Fatalf("%d allocations started, want 1", len(resp.Start))
	}
	alloc := resp.Start[0].Allocation

	testHookPatchOperation = func(id string) {
		beat([]schedule.AllocationReport{{ID: alloc, State: schedule.AllocCompleted}})
		a.Scheduler().UpdateFairShare(a.Now()) // retires x
	}
	t.Cleanup(func() { testHookPatchOperation = nil })
	p, err := wire.DecodeOperationPatch([]byte(`{"pool": "research", "weight": 3, "resource_limits": {"cpu": 4}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = a.PatchOperation("x", &p, func(schedule.OperationInfo, string) bool { return true }, func() bool { return true })
	testHookPatchOperation = nil
	if e, ok := err.(*apierr.Error); !ok || e.Code != schedule.CodeFinished {
		t.Fatalf("PATCH of a retired operation: %v, want %s", err, schedule.CodeFinished)
	}
	check := func(when string, s *Server) {
		t.Helper()
		o, err := s.Scheduler().Operation("x")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if o.Pool != "prod" || o.State != schedule.StateCompleted {
			t.Fatalf("%s: x in pool %s, %s; want prod, completed (the PATCH changed nothing)", when, o.Pool, o.State)
		}
	}
	check("before the restart", a)
	// The service's next update records the completion, as the fair-share
	// loop would.
	c.Advance(clock.Second)
	a.UpdateFairShare()
	if err := a.WaitDurable(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	st.Close()
	b, err := New(Options{Clock: c, ManualUpdates: true, Logger: quiet(), Store: openBolt(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	check("after a restart", b)
}
