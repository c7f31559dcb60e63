package schedule_test

import (
	"maps"
	"math"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/core/tree"
)

// The history recorded after each fair-share update holds every pool's
// dominant shares and starvation as the orchid shows them, and the
// fairness error is their mean distance over the pools with demand.
func TestPoolSamplesHistory(t *testing.T) {
	c := runScript(t, `
config enable_pool_starvation=true fair_share_starvation_timeout=5
node count=2 slots=10 cpu=10 memory=100G
pool name=a
pool name=b
pool name=idle
op id=oa pool=a jobs=1000
update t=1
heartbeat
op id=ob pool=b jobs=1000 t=2
`)
	s := c.Scheduler()
	h, err := history.New(history.Config{Step: clock.Second, Span: clock.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var buf []history.PoolSample
	var integral float64
	var prevErr float64
	for sec := 3.0; sec <= 20; sec++ {
		now := clock.FromSeconds(sec)
		s.UpdateFairShare(now)
		samples, ok := s.PoolSamples(buf[:0])
		if !ok {
			t.Fatal("no samples right after an update")
		}
		buf = samples
		h.Record(now, samples)
		// The error by hand, from the orchid's views.
		sum, n := 0.0, 0
		for _, p := range s.Pools(nil) {
			if p.Name == "<Root>" || p.Attrs.DemandShare.MaxComponent() <= 1e-9 {
				continue
			}
			sum += math.Abs(p.Attrs.UsageShare.MaxComponent() - p.Attrs.FairShare.Total.MaxComponent())
			n++
		}
		cur, in := h.FairnessError()
		if n != 2 || math.Abs(cur-sum/float64(n)) > 1e-12 {
			t.Fatalf("at %v: fairness error %v over %d pools, want %v", sec, cur, n, sum/float64(n))
		}
		if sec > 3 {
			integral += prevErr
		}
		if math.Abs(in-integral) > 1e-9 {
			t.Fatalf("at %v: integral %v, want %v", sec, in, integral)
		}
		prevErr = cur
	}
	pts, err := h.Query("b", clock.FromSeconds(3), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Pool("b")
	last := pts[len(pts)-1]
	if len(pts) != 18 || math.Abs(last.FairShare-b.Attrs.FairShare.Total.MaxComponent()) > 1e-3 || last.Starvation != b.Starvation || !last.BelowFairShare {
		t.Errorf("b's history %+v; the orchid: fair share %v, %v", last, b.Attrs.FairShare.Total, b.Starvation)
	}
	if pts[0].Starvation != 0 || last.Starvation == 0 {
		t.Errorf("b should start non-starving and starve after 5 s below its fair share: %+v … %+v", pts[0], last)
	}
	if _, err := h.Query("idle", 0, 0, nil); err != nil {
		t.Errorf("a pool without demand has a history too: %v", err)
	}
	// A pool change after the update: no samples until the next update.
	if _, err := s.ApplyPools(poolAdd("c")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.PoolSamples(nil); ok {
		t.Error("samples of a tree that changed since the update")
	}
}

func poolAdd(name string) tree.Mutation { return tree.Mutation{Kind: tree.AddPool, Name: name} }

// A pool with child pools is Inner (left out of the fairness error); a
// pool with only operations under it, or nothing, is a leaf.
func TestPoolSamplesInner(t *testing.T) {
	c := runScript(t, `
node count=1 slots=10 cpu=10 memory=100G
pool name=a
pool name=a1 parent=a
pool name=b
op id=o pool=b jobs=5
update t=1
`)
	samples, ok := c.Scheduler().PoolSamples(nil)
	if !ok {
		t.Fatal("no samples after an update")
	}
	inner := map[string]bool{}
	for _, p := range samples {
		inner[p.Name] = p.Inner
	}
	if want := map[string]bool{"a": true, "a1": false, "b": false}; !maps.Equal(inner, want) {
		t.Errorf("inner %v, want %v", inner, want)
	}
}
