package history

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/starvation"
)

func TestValidateTiers(t *testing.T) {
	s := clock.Second
	for _, c := range []struct {
		tiers []Config
		path  string // "" when valid
	}{
		{DefaultTiers(), ""},
		{[]Config{{Step: s, Span: 10 * s}}, ""},
		{nil, "tiers"},
		{[]Config{{s, 2 * s}, {2 * s, 4 * s}, {4 * s, 8 * s}, {8 * s, 16 * s}, {16 * s, 32 * s}}, "tiers"},
		{[]Config{{Step: 0, Span: 10 * s}}, "tiers[0].step"},
		{[]Config{{Step: s, Span: 10 * s}, {Step: 2 * s, Span: 10 * s}}, "tiers[1]"},
		{[]Config{{Step: s, Span: 10 * s}, {Step: s, Span: 20 * s}}, "tiers[1]"},
		{[]Config{{Step: s, Span: 10 * s}, {Step: 3 * s, Span: 20 * s}}, "tiers[1].span"},
	} {
		err := ValidateTiers(c.tiers)
		if c.path == "" {
			if err != nil {
				t.Errorf("%v: %v", c.tiers, err)
			}
			continue
		}
		if e, ok := err.(*apierr.Error); !ok || e.Path != c.path {
			t.Errorf("%v: got %v, want an error at %s", c.tiers, err, c.path)
		}
	}
}

// TestTiersQuery: a query answers from the finest tier that reaches back to
// its since, at that tier's step, with the same means as the finer tier's
// steps.
func TestTiersQuery(t *testing.T) {
	tr, err := NewTiers([]Config{{Step: 10 * clock.Second, Span: 100 * clock.Second}, {Step: 60 * clock.Second, Span: 600 * clock.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if i := tr.Choose(0); i != 1 {
		t.Errorf("empty tiers choose %d", i)
	}
	// One sample every 5 s, usage = the minute it falls in / 10.
	for i := range 120 { // 0 to 595 s
		ts := float64(i) * 5
		tr.Record(sec(ts), []PoolSample{{Name: "a", Usage: math.Floor(ts/60) / 10, FairShare: 0.5, Demand: 1}})
	}
	for _, c := range []struct {
		since    float64
		tier     int
		step     clock.Duration
		n        int
		first    float64 // the first point's time
		usage0   float64
		samples0 int
	}{
		{500, 0, 10 * clock.Second, 10, 500, 0.8, 1}, // inside the fine tier's 100 s
		{490, 0, 10 * clock.Second, 10, 500, 0.8, 1}, // the step before the fine tier's oldest: still the fine tier
		{480, 1, 60 * clock.Second, 2, 480, 0.8, 1},  // older: the coarse tier, aligned to its step
		{0, 1, 60 * clock.Second, 10, 0, 0, 1},
	} {
		if i := tr.Choose(sec(c.since)); i != c.tier {
			t.Errorf("since %v: tier %d, want %d", c.since, i, c.tier)
		}
		pts, step, err := tr.Query("a", sec(c.since), 0, nil)
		if err != nil || step != c.step || len(pts) != c.n || pts[0].Time != sec(c.first) ||
			math.Abs(pts[0].Usage-c.usage0) > 1e-3 || pts[0].Samples != c.samples0 {
			t.Errorf("since %v: step %v, %d points, %+v, %v", c.since, step, len(pts), pts, err)
		}
	}
	// The fine tier's minute means equal the coarse tier's.
	fine, _, _ := tr.Query("a", sec(540), 60*clock.Second, nil)
	coarse, _ := tr.Tier(1).Query("a", sec(540), 0, nil)
	if len(fine) != 1 || len(coarse) != 1 || math.Abs(fine[0].Usage-coarse[0].Usage) > 1e-3 {
		t.Errorf("fine %+v, coarse %+v", fine, coarse)
	}
	if _, _, err := tr.Query("b", 0, 0, nil); err == nil {
		t.Error("a pool without history answered")
	}
	fe, _, err := tr.QueryFairness(sec(500), 0, nil)
	if err != nil || len(fe) != 10 || math.Abs(fe[0].Usage-0.3) > 1e-3 {
		t.Errorf("fairness %+v %v", fe, err)
	}
}

// TestSegmentApply: the segments of every stretch of steps, applied to an
// empty history (in any order, through the byte form), give back the
// history's answers and fairness error.
func TestSegmentApply(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := newHistory(t, 10, 300)
	names := []string{"a", "b", "c", "d"}
	var cuts []int64
	for i := range 200 {
		var ps []PoolSample
		for j, n := range names {
			if i > 150 && j == 3 {
				break // d is removed
			}
			if i%7 == 0 && j == 2 {
				continue // c is absent now and then (a record lists every pool: it loses its series)
			}
			ps = append(ps, PoolSample{Name: n, Usage: r.Float64(), FairShare: r.Float64(), Demand: r.Float64() * 3,
				Starvation: starvation.State(r.IntN(3)), BelowFairShare: r.IntN(2) == 0})
		}
		h.Record(sec(float64(i)*4), ps)
		if i%9 == 0 {
			cuts = append(cuts, h.Head())
		}
	}
	cuts = append(cuts, h.Head())
	g := newHistory(t, 10, 300)
	var segs []*Snapshot
	from := int64(math.MinInt64 / 4)
	for _, to := range cuts {
		s := h.Segment(from, to)
		dec, err := DecodeSnapshot(s.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, dec)
		from = to + 1
	}
	r.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
	for _, s := range segs {
		if err := g.Apply(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names[:3] {
		want, err1 := h.Query(n, 0, 0, nil)
		got, err2 := g.Query(n, 0, 0, nil)
		// A pool's series may start later in h (it lost it) than in g.
		if err1 != nil || err2 != nil || len(got) < len(want) || !reflect.DeepEqual(got[len(got)-len(want):], want) {
			t.Errorf("pool %s:\n got %+v\nwant %+v (%v %v)", n, got, want, err1, err2)
		}
	}
	wf, _ := h.QueryFairness(0, 0, nil)
	gf, _ := g.QueryFairness(0, 0, nil)
	if !reflect.DeepEqual(gf, wf) {
		t.Errorf("fairness:\n got %+v\nwant %+v", gf, wf)
	}
	wc, wi := h.FairnessError()
	gc, gi := g.FairnessError()
	if wc != gc || wi != gi {
		t.Errorf("fairness error %v %v, want %v %v", gc, gi, wc, wi)
	}
	// Bad segments change nothing.
	before := g.Snapshot()
	for _, bad := range []Snapshot{
		{Config: Config{Step: clock.Second, Span: 300 * clock.Second}},
		{Config: g.cfg, Pools: []SeriesSnapshot{{Name: "x", Head: 1, Values: []uint16{1}, Flags: []uint8{flagPresent}}}},
		{Config: g.cfg, Pools: []SeriesSnapshot{{Name: "x", Head: 1, Values: []uint16{1, 2, 0x7c00}, Flags: []uint8{flagPresent}}}},
		{Config: g.cfg, Pools: []SeriesSnapshot{{Name: "y"}, {Name: "x"}}},
		{Config: g.cfg, Integral: math.NaN(), HasLast: true},
	} {
		if err := g.Apply(&bad); err == nil {
			t.Errorf("applied %+v", bad)
		}
	}
	if after := g.Snapshot(); !reflect.DeepEqual(after, before) {
		t.Error("a refused segment changed the history")
	}
}

// TestTiersMemory measures the heap of the default tiers with 10,000 pools
// and checks it against the bound docs/operations.md states (under
// 5.5 KiB a pool, 55 MiB in all; 5,024 bytes measured). Run with -v to see the figure.
func TestTiersMemory(t *testing.T) {
	const pools = 10000
	var tr *Tiers
	per := heapPerPool(t, pools, func(samples []PoolSample) {
		var err error
		if tr, err = NewTiers(DefaultTiers()); err != nil {
			t.Fatal(err)
		}
		tr.Record(0, samples)
	})
	t.Logf("default history tiers of %d pools: %.0f bytes per pool (%.1f MiB in all; series %d bytes per pool)",
		pools, per, per*pools/(1<<20), tr.MemoryBytes()/pools)
	if per > 5.5*1024 {
		t.Errorf("%.0f bytes per pool, over the stated 5.5 KiB", per)
	}
	runtime.KeepAlive(tr)
}

// BenchmarkTiersRecord is the fair-share update loop's cost of the
// history: one Record of every pool into the default tiers, an update a
// second.
func BenchmarkTiersRecord(b *testing.B) {
	for _, pools := range []int{100, 10000} {
		b.Run("pools="+strconv.Itoa(pools), func(b *testing.B) {
			tr, err := NewTiers(DefaultTiers())
			if err != nil {
				b.Fatal(err)
			}
			samples := make([]PoolSample, pools)
			for i := range samples {
				samples[i] = PoolSample{Name: "pool-" + strconv.Itoa(i), Usage: 0.1, FairShare: 0.1, Demand: 0.2}
			}
			now := 0.0
			tr.Record(sec(now), samples) // the rings
			b.ReportAllocs()
			for b.Loop() {
				now++
				tr.Record(sec(now), samples)
			}
		})
	}
}
