package schedule

import (
	"errors"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// TestHeartbeatBounds: a heartbeat starts at most
// max_started_allocations_per_heartbeat allocations (1024 by default, even
// on a node with room for millions of tiny jobs: issue 14 saw 3.4 million
// in one answer), a node holds at most MaxNodeAllocations, and
// resource_limits above max_node_resource_limits are refused whole, at the
// bound's value and one past it.
func TestHeartbeatBounds(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.MaxStartedAllocationsPerHeartbeat != 1024 || cfg.MaxNodeResourceLimits != DefaultMaxNodeResourceLimits {
		t.Fatalf("defaults: %d, %v", cfg.MaxStartedAllocationsPerHeartbeat, cfg.MaxNodeResourceLimits)
	}
	big := DefaultMaxNodeResourceLimits // the largest node the defaults take
	s, held := startOn(t, cfg, big, OperationSpec{ID: "tiny", Tasks: tasks(1<<40, resource.Vec{resource.CPU: 1})})
	if len(held) != 1024 {
		t.Fatalf("the first heartbeat started %d, want 1024", len(held))
	}
	for want, total := 1024, len(held); total < MaxNodeAllocations+2048; want = min(1024, MaxNodeAllocations-total) {
		resp := heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: big, Allocations: held})
		if len(resp.Start) != want {
			t.Fatalf("after %d allocations a heartbeat started %d, want %d", total, len(resp.Start), want)
		}
		if want == 0 {
			break
		}
		total += len(resp.Start)
		held = append(held, started(resp)...)
	}
	if n, _ := s.NodeSummary("n000"); n.AllocationCount != MaxNodeAllocations {
		t.Errorf("the node holds %d allocations, want %d", n.AllocationCount, MaxNodeAllocations)
	}

	// One past the bound, in each resource: refused, nothing registered.
	for k := range resource.Count {
		limits := big
		limits[k]++
		var resp Response
		err := s.Heartbeat(0, &NodeHeartbeat{Node: "huge", Limits: limits}, &resp)
		var e *apierr.Error
		want := "resource_limits." + resource.Kind(k).String()
		if !errors.As(err, &e) || e.Code != CodeInvalidValue || e.Path != want {
			t.Errorf("limits %v: %v, want invalid_value at %s", limits, err, want)
		}
		if _, ok := s.NodeSummary("huge"); ok {
			t.Errorf("limits %v: the node was registered", limits)
		}
	}
	// A lower bound applies from the next heartbeat.
	cfg.MaxNodeResourceLimits[resource.CPU] = resource.Cores(8)
	cfg.MaxStartedAllocationsPerHeartbeat = 3
	if err := s.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	var resp Response
	small := resource.Vec{resource.UserSlots: 100, resource.CPU: resource.Cores(8), resource.Memory: 1 << 30}
	if err := s.Heartbeat(0, &NodeHeartbeat{Node: "n001", Limits: small}, &resp); err != nil {
		t.Fatal(err)
	}
	s.UpdateFairShare(clock.FromSeconds(1))
	resp.Reset()
	if err := s.Heartbeat(clock.FromSeconds(1), &NodeHeartbeat{Node: "n001", Limits: small}, &resp); err != nil || len(resp.Start) != 3 {
		t.Errorf("8 cpu: %v, %d starts", err, len(resp.Start))
	}
	if err := s.Heartbeat(clock.FromSeconds(1), &NodeHeartbeat{Node: "n001", Limits: resource.Vec{resource.CPU: resource.Cores(8.01)}}, &resp); err == nil {
		t.Error("8.01 cpu above a bound of 8 accepted")
	}
}

func TestAddCappedNeverWraps(t *testing.T) {
	var total resource.Vec
	for range 1 << 12 {
		total = total.AddCapped(DefaultMaxNodeResourceLimits.Scale(1 << 8))
	}
	for k, v := range total {
		if v < 0 || v > resource.MaxAmount {
			t.Errorf("%s: %d", resource.Kind(k), v)
		}
	}
}
