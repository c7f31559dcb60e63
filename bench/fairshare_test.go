package bench

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/fairshare"
)

// fairShareSeed seeds every tree of the fair-share benchmarks.
const fairShareSeed = 1

// BenchmarkFairShareUpdate is a full fair-share update of a realistic random
// tree (coretest.GenTree: depth ≤ 5, strong guarantees on 20% of the pools, 5%
// integral, 10% fifo, demand ≈ 4× the cluster). Each iteration advances the
// virtual time by 0.2 s, calls Invalidate so that every element's functions
// are rebuilt as in the first update, and updates. The Updater is warmed up
// by one update before the timer starts: a full update reuses its buffers.
func BenchmarkFairShareUpdate(b *testing.B) {
	for _, s := range []struct {
		pools, ops string
		p, o       int
	}{
		{"pools=1000", "ops=10000", 1000, 10000},
		{"pools=10000", "ops=100000", 10000, 100000},
	} {
		b.Run(s.pools, func(b *testing.B) {
			b.Run(s.ops, func(b *testing.B) {
				t, total := coretest.GenTree(fairShareSeed, s.p, s.o)
				u := fairshare.New(t, fairshare.DefaultConfig())
				now := clock.Time(0)
				u.Update(total, now)
				b.ReportAllocs()
				for b.Loop() {
					now = now.Add(200 * clock.Millisecond)
					u.Invalidate()
					u.Update(total, now)
				}
			})
		})
	}
}

// BenchmarkFairShareUpdateIncremental is the steady state between full
// updates: before each update one random operation's demand changes
// (coretest.DemandChanges: its job count moves by up to ±half, running jobs
// clipped to it, applied with Tree.SetDemandUsage), and the virtual time
// advances by 0.2 s. Drawing and applying the change is timed too; it costs
// well under a microsecond.
func BenchmarkFairShareUpdateIncremental(b *testing.B) {
	b.Run("pools=10000", func(b *testing.B) {
		b.Run("ops=100000", func(b *testing.B) {
			t, total := coretest.GenTree(fairShareSeed, 10000, 100000)
			u := fairshare.New(t, fairshare.DefaultConfig())
			changes := coretest.NewDemandChanges(t, fairShareSeed+1)
			now := clock.Time(0)
			u.Update(total, now)
			b.ReportAllocs()
			for b.Loop() {
				id, demand, usage := changes.Next()
				t.SetDemandUsage(id, demand, usage)
				now = now.Add(200 * clock.Millisecond)
				u.Update(total, now)
			}
		})
	})
}
