//go:build !race

package bench

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// heapFigures is the scheduler's live heap per element of
// BenchmarkHeartbeat's cluster, measured by building it in steps.
type heapFigures struct {
	nodes, ops, allocations int
	// perNode, perOperation and perAllocation are the growth of the live
	// heap (HeapAlloc after runtime.GC) from registering the nodes, from
	// starting the operations (with a fair-share update and the shards'
	// operation indexes built), and from filling the nodes, divided by the
	// number of elements added.
	perNode, perOperation, perAllocation float64
	// total is the whole scheduler's live heap (pools included).
	total uint64
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measureHeap builds BenchmarkHeartbeat's cluster (nodes × 32 cpu, pools,
// ops operations with plenty of pending jobs, 20 allocations of 1.6 cpu
// per node) step by step and measures the scheduler's live heap after each
// step. Only the scheduler and the node names it shares are live at the
// measurements: the harness keeps one reused heartbeat and response.
func measureHeap(tb testing.TB, nodes, pools, ops int) heapFigures {
	tb.Helper()
	cfg := schedule.DefaultConfig()
	cfg.Limits.MaxOperationCount = 1 << 20
	cfg.Limits.MaxRunningOperationCount = 1 << 20
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	h0 := liveHeap()
	s := schedule.New(tree.New(tree.PoolConfig{}), cfg)
	if _, err := s.ApplyPools(benchPools(pools)...); err != nil {
		tb.Fatal(err)
	}
	var resp schedule.Response
	heartbeat := func(i int, now clock.Time, limits resource.Vec) {
		resp.Reset()
		if err := s.Heartbeat(now, &schedule.NodeHeartbeat{Node: names[i], Limits: limits}, &resp); err != nil {
			tb.Fatal(err)
		}
	}
	hPools := liveHeap()
	for i := range nodes {
		heartbeat(i, 0, heartbeatLimits)
	}
	s.UpdateFairShare(0)
	hNodes := liveHeap()
	for i := range ops {
		spec := schedule.OperationSpec{Pool: fmt.Sprintf("pool%d", 20+i%(pools-20)),
			Tasks: []schedule.TaskSpec{{Name: "map", JobCount: 1000, Resources: benchJob}}}
		if _, _, err := s.StartOperation(0, spec); err != nil {
			tb.Fatal(err)
		}
	}
	s.UpdateFairShare(1)
	// Each shard builds its operation index at its first search: a
	// heartbeat with room for less than a job searches and starts nothing
	// (it visits every operation, so only as many nodes as reach every
	// shard).
	tiny := resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1), resource.Memory: 1 << 30}
	for i := range min(nodes, 20*cfg.Shards) {
		heartbeat(i, 1, tiny)
	}
	hOps := liveHeap()
	allocations := 0
	for i := range nodes {
		heartbeat(i, 2, heartbeatLimits)
		allocations += len(resp.Start)
	}
	resp = schedule.Response{}
	hAllocs := liveHeap()
	runtime.KeepAlive(s)
	runtime.KeepAlive(names)
	if allocations != 20*nodes {
		tb.Fatalf("started %d allocations, want %d", allocations, 20*nodes)
	}
	return heapFigures{
		nodes: nodes, ops: ops, allocations: allocations,
		perNode:       float64(int64(hNodes)-int64(hPools)) / float64(nodes),
		perOperation:  float64(int64(hOps)-int64(hNodes)) / float64(ops),
		perAllocation: float64(int64(hAllocs)-int64(hOps)) / float64(allocations),
		total:         hAllocs - h0,
	}
}

// BenchmarkHeap reports the scheduler's live heap per running allocation,
// per operation and per node of BenchmarkHeartbeat's cluster (10,000
// nodes, 1,000 pools, 10,000 operations, 200,000 allocations); see
// measureHeap. Each iteration builds the cluster (about a second).
func BenchmarkHeap(b *testing.B) {
	b.Run("nodes=10000/allocations=200000", func(b *testing.B) {
		var f heapFigures
		for b.Loop() {
			f = measureHeap(b, 10000, 1000, 10000)
		}
		b.ReportMetric(f.perAllocation, "B/allocation")
		b.ReportMetric(f.perOperation, "B/operation")
		b.ReportMetric(f.perNode, "B/node")
		b.ReportMetric(float64(f.total)/(1<<20), "MiB-total")
	})
}

// TestHeapPerAllocation fails if a running allocation costs the scheduler
// more than 1 KiB of live heap at 10,000 nodes and 200,000 allocations
// (the memory target of the standard load: 1 KiB per allocation, 4 KiB per
// node, 8 KiB per operation).
func TestHeapPerAllocation(t *testing.T) {
	f := measureHeap(t, 10000, 1000, 10000)
	t.Logf("live heap: %.0f B per allocation, %.0f B per operation, %.0f B per node; %.1f MiB in all for %d nodes, %d operations, %d allocations",
		f.perAllocation, f.perOperation, f.perNode, float64(f.total)/(1<<20), f.nodes, f.ops, f.allocations)
	if f.perAllocation > 1024 {
		t.Errorf("%.0f B of live heap per running allocation, want at most 1024", f.perAllocation)
	}
	if f.perOperation > 8192 {
		t.Errorf("%.0f B of live heap per operation, want at most 8192", f.perOperation)
	}
	if f.perNode > 4096 {
		t.Errorf("%.0f B of live heap per node, want at most 4096", f.perNode)
	}
}
