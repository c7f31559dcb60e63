package schedule

import (
	"testing"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
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

func filterPool(name, parent, filter string) tree.Mutation {
	return tree.Mutation{Kind: tree.AddPool, Name: name, Parent: parent, Pool: tree.PoolConfig{SchedulingTagFilter: tagfilter.MustParse(filter)}}
}

// TestSchedulingTagFilterResourceLimits is the reference's
// TestSchedulingTagFilterResourceLimits: an element's scheduling-tag-filter
// resource limits are the resources of the nodes that match its own filter
// (all nodes without one), and they bound its limits share.
func TestSchedulingTagFilterResourceLimits(t *testing.T) {
	n1, n2, n3, n4 := vec(2, 3, 10), vec(10, 10, 100), vec(20, 30, 500), vec(100, 50, 1000)
	all := n1.Add(n2).Add(n3).Add(n4)
	c := newCluster(t, DefaultConfig(), 0, resource.Vec{},
		filterPool("PoolA", "", ""),
		filterPool("PoolB", "", "tag_1"),
		filterPool("PoolC", "PoolB", "tag_3 & tag_1"),
		filterPool("PoolD", "PoolB", "tag_3"),
		filterPool("PoolE", "", "tag_2 | (tag_1 & tag_4)"))
	c.addNode("n1", n1, "tag_1")
	c.addNode("n2", n2, "tag_2")
	c.addNode("n3", n3, "tag_3")
	c.addNode("n134", n4, "tag_1", "tag_3", "tag_4")
	jobs := tasks(10, vec(1, 1, 10))
	x := c.start(OperationSpec{ID: "X", Tasks: jobs, SchedulingTagFilter: tagfilter.MustParse("tag_1 | tag_2 | tag_5")})
	y := c.start(OperationSpec{ID: "Y", Pool: "PoolD", Tasks: tasks(5, vec(1, 1, 10))})
	c.update()

	f := func(name string, got tree.PartialVec, want resource.Vec) {
		t.Helper()
		if got != tree.Full(want) {
			t.Errorf("%s: scheduling tag filter resource limits %v, want %v", name, got.V, want)
		}
	}
	pool := func(name string) PoolInfo {
		t.Helper()
		p, err := c.s.Pool(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f("PoolA", pool("PoolA").SchedulingTagFilterResourceLimits, all)
	f("PoolB", pool("PoolB").SchedulingTagFilterResourceLimits, n1.Add(n4))
	f("PoolC", pool("PoolC").SchedulingTagFilterResourceLimits, n4)
	f("PoolD", pool("PoolD").SchedulingTagFilterResourceLimits, n3.Add(n4))
	f("PoolE", pool("PoolE").SchedulingTagFilterResourceLimits, n2.Add(n4))
	f("X", c.info(x).SchedulingTagFilterResourceLimits, n1.Add(n2).Add(n4))
	f("Y", c.info(y).SchedulingTagFilterResourceLimits, all)

	// The limits bound the limits shares.
	share := func(name string, got, want resource.Share) {
		t.Helper()
		if !got.Near(want, 1e-12) {
			t.Errorf("%s: limits share %v, want %v", name, got, want)
		}
	}
	share("PoolC", pool("PoolC").Attrs.LimitsShare, resource.FromResources(n4, all))
	share("PoolE", pool("PoolE").Attrs.LimitsShare, resource.FromResources(n2.Add(n4), all))
	share("X", c.info(x).Attrs.LimitsShare, resource.FromResources(n1.Add(n2).Add(n4), all).Min(c.info(x).BestAllocationShare))

	// A filter taken away takes its limits along.
	cfg := pool("PoolC").Config
	cfg.SchedulingTagFilter = tagfilter.Filter{}
	if _, err := c.s.ApplyPools(tree.Mutation{Kind: tree.SetPool, Name: "PoolC", Pool: cfg}); err != nil {
		t.Fatal(err)
	}
	c.update()
	f("PoolC without a filter", pool("PoolC").SchedulingTagFilterResourceLimits, all)
	share("PoolC without a filter", pool("PoolC").Attrs.LimitsShare, resource.FromResources(all, all))
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
