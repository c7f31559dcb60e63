package bench

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
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
//
// NB: before the timer starts, steadyVolumes runs the integral volumes to
// their equilibrium, where a scheduler that has run for an hour has them
// (bench/README.md, "The incremental update's steady state"): from empty
// volumes every integral pool's guarantee moves at every update for the
// first ~50 minutes of virtual time, which BenchmarkFairShareUpdateIncrementalCold
// measures (this benchmark's setup until issue 12).
func BenchmarkFairShareUpdateIncremental(b *testing.B) {
	benchIncremental(b, true)
}

// BenchmarkFairShareUpdateIncrementalCold is BenchmarkFairShareUpdateIncremental
// right after a cold start: the integral volumes start empty and fill during
// the benchmark, so every burst and relaxed pool's integral share, hence its
// and its ancestors' functions, change at every update.
func BenchmarkFairShareUpdateIncrementalCold(b *testing.B) {
	benchIncremental(b, false)
}

func benchIncremental(b *testing.B, steady bool) {
	b.Run("pools=10000", func(b *testing.B) {
		b.Run("ops=100000", func(b *testing.B) {
			t, total := coretest.GenTree(fairShareSeed, 10000, 100000)
			u := fairshare.New(t, fairshare.DefaultConfig())
			changes := coretest.NewDemandChanges(t, fairShareSeed+1)
			now := clock.Time(0)
			u.Update(total, now)
			if steady {
				now = steadyVolumes(u, total, now)
			}
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

// steadyVolumes brings the integral volumes to the equilibrium that 0.2 s
// updates reach after about 50 minutes of virtual time (measured on the
// 1,000-pool tree: from then on no integral share changes, bit for bit):
// a few updates one smooth period apart, after each of which a pool that
// uses its integral share has the volume its resource flow sustains. It
// returns the time of the last update.
func steadyVolumes(u *fairshare.Updater, total resource.Vec, now clock.Time) clock.Time {
	step := clock.Duration(u.Config().SmoothPeriodS * float64(clock.Second))
	for range 5 {
		now = now.Add(step)
		u.Update(total, now)
	}
	return now
}
