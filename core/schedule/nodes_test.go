package schedule_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// TestNodesPages lists the registered nodes a page at a time, in name
// order, across shards.
func TestNodesPages(t *testing.T) {
	cfg := schedule.DefaultConfig()
	cfg.Shards = 4
	s := schedule.New(tree.New(tree.PoolConfig{}), cfg)
	var limits resource.Vec
	limits[resource.CPU] = 800
	var want []string
	for i := range 23 {
		name := fmt.Sprintf("n-%02d", (i*7)%23)
		want = append(want, name)
		hb := schedule.NodeHeartbeat{Node: name, Limits: limits, Tags: []string{"t" + name}}
		var resp schedule.Response
		if err := s.Heartbeat(clock.Time(i+1)*clock.Time(clock.Second), &hb, &resp); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	for _, limit := range []int{0, 1, 5, 23, 100} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			page, more := s.Nodes(nil, after, limit)
			for _, n := range page {
				got = append(got, n.Name)
				if n.Limits != limits || len(n.Tags) != 1 || n.Tags[0] != "t"+n.Name || n.AllocationCount != 0 {
					t.Fatalf("node %+v", n)
				}
			}
			if limit > 0 && len(page) > limit || pages > 30 {
				t.Fatalf("limit %d: a page of %d", limit, len(page))
			}
			if !more {
				break
			}
			after = page[len(page)-1].Name
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	if _, ok := s.NodeSummary("n-99"); ok {
		t.Fatal("NodeSummary of an unknown node")
	}
	if n, ok := s.NodeSummary("n-05"); !ok || n.Name != "n-05" || n.LastHeartbeat == 0 {
		t.Fatalf("NodeSummary(n-05) = %+v, %v", n, ok)
	}
}
