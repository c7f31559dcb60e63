package bench

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
)

// BenchmarkSchedulerUpdate is Scheduler.UpdateFairShare on BenchmarkHeartbeat's
// cluster (10,000 nodes, 1,000 pools, 10,000 running operations): the node
// sweep, every operation's inputs (demand, usage, node limits), the
// incremental fair-share update and the snapshot. Nothing changes between
// updates, so the fair-share core's part is small and the scheduler's own
// work per node and per operation shows. Each iteration advances the
// virtual time by a millisecond (the nodes stay registered).
func BenchmarkSchedulerUpdate(b *testing.B) {
	b.Run("nodes=10000/ops=10000", func(b *testing.B) {
		c := newHeartbeatCluster(b, 10000, 1000, 10000, schedule.DefaultConfig())
		b.ReportAllocs()
		for b.Loop() {
			c.now = c.now.Add(clock.Millisecond)
			c.s.UpdateFairShare(c.now)
		}
	})
}
