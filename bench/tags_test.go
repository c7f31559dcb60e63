package bench

import (
	"fmt"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// newTaggedCluster is BenchmarkHeartbeat's cluster with scheduling tag
// filters in use: every other node has the tag gpu, every fifth the tag
// spot; every tenth pool (of the 980 leaves) has the filter gpu and every
// tenth operation its own filter !spot | ssd.
func newTaggedCluster(b *testing.B, cfg schedule.Config) *heartbeatCluster {
	b.Helper()
	const nodes, pools, ops = 10000, 1000, 10000
	cfg.Limits.MaxOperationCount = 1 << 20
	cfg.Limits.MaxRunningOperationCount = 1 << 20
	s := schedule.New(tree.New(tree.PoolConfig{}), cfg)
	gpu := tagfilter.MustParse("gpu")
	var ms []tree.Mutation
	for i := range pools {
		parent := ""
		if i >= 20 {
			parent = fmt.Sprintf("pool%d", i%20)
		}
		pc := tree.PoolConfig{MaxOperationCount: tree.SomeInt(1 << 20), MaxRunningOperationCount: tree.SomeInt(1 << 20)}
		if i >= 20 && i%10 == 0 {
			pc.SchedulingTagFilter = gpu
		}
		ms = append(ms, tree.Mutation{Kind: tree.AddPool, Name: fmt.Sprintf("pool%d", i), Parent: parent, Pool: pc})
	}
	if _, err := s.ApplyPools(ms...); err != nil {
		b.Fatal(err)
	}
	own := tagfilter.MustParse("!spot | ssd")
	for i := range ops {
		spec := schedule.OperationSpec{Pool: fmt.Sprintf("pool%d", 20+i%(pools-20)),
			Tasks: []schedule.TaskSpec{{Name: "map", JobCount: 1000, Resources: benchJob}}}
		if i%10 == 3 {
			spec.SchedulingTagFilter = own
		}
		if _, _, err := s.StartOperation(0, spec); err != nil {
			b.Fatal(err)
		}
	}
	c := &heartbeatCluster{s: s, limits: heartbeatLimits}
	c.nodes = make([]benchNode, nodes)
	for i := range c.nodes {
		n := &c.nodes[i]
		var tags []string
		if i%2 == 0 {
			tags = append(tags, "gpu")
		}
		if i%5 == 0 {
			tags = append(tags, "spot")
		}
		n.hb = schedule.NodeHeartbeat{Node: fmt.Sprintf("node-%05d", i), Limits: c.limits, Tags: tags}
		c.heartbeat(i)
	}
	s.UpdateFairShare(c.now)
	for i := range c.nodes {
		c.heartbeat(i)
	}
	s.UpdateFairShare(c.now)
	return c
}

// BenchmarkTagFilters: BenchmarkHeartbeat's steady and churn heartbeats and
// BenchmarkSchedulerUpdate with scheduling tag filters in use (see
// newTaggedCluster), to compare with the same benchmarks without.
func BenchmarkTagFilters(b *testing.B) {
	b.Run("heartbeat-steady/nodes=10000", func(b *testing.B) {
		c := newTaggedCluster(b, schedule.DefaultConfig())
		runParallel(b, c, func(i int) {
			if err := c.heartbeat(i); err != nil {
				b.Error(err)
			}
		})
	})
	b.Run("heartbeat-churn/nodes=10000", func(b *testing.B) {
		c := newTaggedCluster(b, schedule.DefaultConfig())
		runParallel(b, c, func(i int) {
			n := &c.nodes[i]
			n.allocs[0].State = schedule.AllocCompleted
			if err := c.heartbeat(i); err != nil {
				b.Error(err)
			}
		})
	})
	b.Run("update/nodes=10000/ops=10000", func(b *testing.B) {
		c := newTaggedCluster(b, schedule.DefaultConfig())
		b.ReportAllocs()
		for b.Loop() {
			c.now = c.now.Add(clock.Millisecond)
			c.s.UpdateFairShare(c.now)
		}
	})
	b.Run("update-best-share-every-time/nodes=10000/ops=10000", func(b *testing.B) {
		cfg := schedule.DefaultConfig()
		cfg.BestAllocationShareUpdatePeriod = 0
		c := newTaggedCluster(b, cfg)
		b.ReportAllocs()
		for b.Loop() {
			c.now = c.now.Add(clock.Millisecond)
			c.s.UpdateFairShare(c.now)
		}
	})
}
