package schedule

import (
	"testing"

	"github.com/fairsched/fairsched/core/resource"
)

// addNode registers a node with limits and tags by its first heartbeat.
func (c *cluster) addNode(name string, limits resource.Vec, tags ...string) {
	c.t.Helper()
	c.nodes = append(c.nodes, simNode{name: name, limits: limits, tags: tags})
	c.heartbeat(len(c.nodes) - 1)
}

// vec is {slots, cpu (cores), memory (bytes)}.
func vec(slots int64, cpu float64, memory int64) resource.Vec {
	return resource.Vec{resource.UserSlots: slots, resource.CPU: cores(cpu), resource.Memory: memory}
}

// tinyNodesConfig is the default config for nodes with bytes of memory: the
// minimum spare resources are one slot, one core and one byte.
func tinyNodesConfig() Config {
	cfg := DefaultConfig()
	cfg.MinSpareAllocationResources = vec(1, 1, 1)
	return cfg
}

// TestBestAllocationSharePeriod: tasks of different sizes combine through
// the demand's memory per slot, and a change of the demand alone is seen
// when best_allocation_share_update_period has passed.
func TestBestAllocationSharePeriod(t *testing.T) {
	cfg := tinyNodesConfig()
	c := newCluster(t, cfg, 0, resource.Vec{})
	c.addNode("a1", vec(10, 10, 100))
	c.addNode("a2", vec(10, 10, 100))
	c.addNode("b", vec(10, 10, 200))
	// 190 + 10 bytes over two slots: 100 bytes per allocation, which fits
	// every node exactly.
	x := c.start(OperationSpec{ID: "X", Tasks: []TaskSpec{
		{Name: "big", JobCount: 1, Resources: vec(1, 1, 190)},
		{Name: "small", JobCount: 1, Resources: vec(1, 1, 10), DurationHintS: 5},
	}})
	c.update()
	best := func() float64 { return c.info(x).BestAllocationShare[resource.Memory] }
	if got := best(); got != 1 {
		t.Fatalf("best allocation share in memory %v, want 1 (100 bytes per allocation)", got)
	}
	c.heartbeatAll()
	// The small job completes at 5 s: the demand is one 190-byte job, which
	// only the 200-byte node fits (190/400), from the first update 60 s
	// after the share was computed.
	c.run(59, 1)
	if got := best(); got != 1 {
		t.Fatalf("at %g s: best allocation share in memory %v, want 1 until the period passed", c.now, got)
	}
	c.run(60, 1)
	if got := best(); got != 190.0/400 {
		t.Fatalf("at %g s: best allocation share in memory %v, want 190/400", c.now, got)
	}
	// With the period 0 it follows every update.
	cfg.BestAllocationShareUpdatePeriod = 0
	if err := c.s.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.start(OperationSpec{ID: "Y", Tasks: tasks(2, vec(1, 1, 60))})
	c.update()
	if got := c.info("Y").BestAllocationShare[resource.Memory]; got != 300.0/400 {
		t.Fatalf("Y: best allocation share in memory %v, want 300/400 (60 bytes: 1, 1 and 3 per node)", got)
	}
}
