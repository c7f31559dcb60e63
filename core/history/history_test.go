package history

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/starvation"
)

func sec(s float64) clock.Time { return clock.FromSeconds(s) }

func newHistory(t testing.TB, step, span float64) *History {
	t.Helper()
	h, err := New(Config{Step: clock.DurationFromSeconds(step), Span: clock.DurationFromSeconds(span)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHalf(t *testing.T) {
	f := func(v, want float64) {
		t.Helper()
		if got := fromHalf(toHalf(v)); got != want {
			t.Errorf("half(%v) = %v, want %v", v, got, want)
		}
	}
	f(0, 0)
	f(-1, 0)
	f(math.NaN(), 0)
	f(1, 1)
	f(0.5, 0.5)
	f(0.25, 0.25)
	f(2048, 2048)
	f(2049, 2048) // a tie rounds to even
	f(2051, 2052)
	f(65504, 65504)
	f(1e9, 65504)
	f(math.Ldexp(1, -24), math.Ldexp(1, -24)) // the smallest subnormal
	f(math.Ldexp(1, -26), 0)
	f(math.Ldexp(3, -26), math.Ldexp(1, -24))
	f(math.Ldexp(1023, -24), math.Ldexp(1023, -24)) // the largest subnormal
	// Every value keeps 11 significant bits.
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := math.Ldexp(r.Float64(), r.IntN(30)-14)
		got := fromHalf(toHalf(v))
		if math.Abs(got-v) > v*math.Ldexp(1, -11)+math.Ldexp(1, -25) {
			t.Fatalf("half(%v) = %v: off by more than half an ulp", v, got)
		}
	}
	// Every half converts back to itself.
	for h := uint16(0); h < 0x7c00; h++ {
		if got := toHalf(fromHalf(h)); got != h {
			t.Fatalf("toHalf(fromHalf(%#x)) = %#x", h, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	f := func(step, span clock.Duration, ok bool) {
		t.Helper()
		err := Config{Step: step, Span: span}.Validate()
		if (err == nil) != ok {
			t.Errorf("step %v span %v: %v, want ok=%v", step, span, err, ok)
		}
	}
	f(10*clock.Second, 24*clock.Hour, true)
	f(10*clock.Second, 10*clock.Second, true)
	f(0, clock.Hour, false)
	f(-clock.Second, clock.Hour, false)
	f(10*clock.Second, 15*clock.Second, false)
	f(clock.Microsecond, 2*MaxSlots*clock.Microsecond, false)
	f(10*clock.Second, 0, false)
}

// Samples within a step average; the worst starvation and any
// below-fair-share status are kept; coarser query steps average the steps
// that hold samples; steps without samples have none.
func TestRecordQuery(t *testing.T) {
	h := newHistory(t, 10, 100)
	rec := func(at float64, ps ...PoolSample) { h.Record(sec(at), ps) }
	a := func(u, f, d float64, st starvation.State, below bool) PoolSample {
		return PoolSample{Name: "a", Usage: u, FairShare: f, Demand: d, Starvation: st, BelowFairShare: below}
	}
	rec(0, a(0, 0.5, 1, 0, false))
	rec(5, a(0.5, 0.5, 1, starvation.Starving, true))
	rec(10, a(0.25, 0.5, 1, 0, true))
	rec(35, a(0.75, 0.5, 1, 0, false))
	got, err := h.Query("a", 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{Time: sec(0), Usage: 0.25, FairShare: 0.5, Demand: 1, Starvation: starvation.Starving, BelowFairShare: true, Samples: 1},
		{Time: sec(10), Usage: 0.25, FairShare: 0.5, Demand: 1, BelowFairShare: true, Samples: 1},
		{Time: sec(20)},
		{Time: sec(30), Usage: 0.75, FairShare: 0.5, Demand: 1, Samples: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("step 10:\n got %+v\nwant %+v", got, want)
	}
	got, _ = h.Query("a", sec(12), 20*clock.Second, nil)
	want = []Point{
		{Time: sec(0), Usage: 0.25, FairShare: 0.5, Demand: 1, Starvation: starvation.Starving, BelowFairShare: true, Samples: 2},
		{Time: sec(20), Usage: 0.75, FairShare: 0.5, Demand: 1, Samples: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("step 20 since 12:\n got %+v\nwant %+v", got, want)
	}
	// A query step that is not a multiple rounds up (15 s → 20 s).
	got2, _ := h.Query("a", sec(12), 15*clock.Second, nil)
	if !reflect.DeepEqual(got2, got) {
		t.Errorf("step 15 s: %+v, want the step 20 s answer %+v", got2, got)
	}
	if _, err := h.Query("b", 0, 0, nil); err == nil {
		t.Error("a pool without a history: no error")
	}
	if _, err := h.Query("a", 0, -clock.Second, nil); err == nil {
		t.Error("a negative step: no error")
	}
	// An old record is ignored.
	rec(20, a(1, 1, 1, 0, false))
	if got, _ := h.Query("a", sec(20), 0, nil); got[0].Samples != 0 {
		t.Errorf("a record older than the newest step was kept: %+v", got)
	}
}

// The span bounds the history: the oldest steps are overwritten, and a
// gap longer than the span clears everything.
func TestSpan(t *testing.T) {
	h := newHistory(t, 1, 5)
	for i := range 8 {
		h.Record(sec(float64(i)), []PoolSample{{Name: "a", Usage: float64(i), Demand: 1}})
	}
	got, _ := h.Query("a", 0, 0, nil)
	if len(got) != 5 || got[0].Time != sec(3) || got[0].Usage != 3 || got[4].Usage != 7 {
		t.Errorf("the last 5 steps: %+v", got)
	}
	h.Record(sec(100), []PoolSample{{Name: "a", Usage: 9, Demand: 1}})
	got, _ = h.Query("a", 0, 0, nil)
	if len(got) != 5 || got[0].Time != sec(96) || got[0].Samples != 0 || got[4].Usage != 9 {
		t.Errorf("after a long gap: %+v", got)
	}
}

// A pool that a record no longer lists loses its history.
func TestRemovedPool(t *testing.T) {
	h := newHistory(t, 10, 100)
	h.Record(sec(0), []PoolSample{{Name: "a"}, {Name: "b"}})
	h.Record(sec(10), []PoolSample{{Name: "a"}})
	if h.Len() != 1 {
		t.Fatalf("%d series, want 1", h.Len())
	}
	if _, err := h.Query("b", 0, 0, nil); err == nil {
		t.Error("the removed pool b still has a history")
	}
}

// The fairness error is the mean |usage − fair share| over the pools with
// demand; its integral sums each error times the time it held.
func TestFairnessError(t *testing.T) {
	h := newHistory(t, 10, 100)
	h.Record(sec(0), []PoolSample{
		{Name: "a", Usage: 0.2, FairShare: 0.5, Demand: 1},
		{Name: "b", Usage: 0.6, FairShare: 0.5, Demand: 1},
		{Name: "idle", Usage: 0, FairShare: 0.3, Demand: 0},              // no demand: not counted
		{Name: "parent", Usage: 0, FairShare: 1, Demand: 2, Inner: true}, // not a leaf: not counted
	})
	cur, integral := h.FairnessError()
	if math.Abs(cur-0.2) > 1e-12 || integral != 0 {
		t.Errorf("at 0: error %v, integral %v; want 0.2, 0", cur, integral)
	}
	h.Record(sec(30), []PoolSample{{Name: "a", Usage: 0.5, FairShare: 0.5, Demand: 1}})
	cur, integral = h.FairnessError()
	if cur != 0 || math.Abs(integral-6) > 1e-9 {
		t.Errorf("at 30: error %v, integral %v; want 0, 6 (0.2 for 30 s)", cur, integral)
	}
	h.Record(sec(40), nil)
	if cur, _ := h.FairnessError(); cur != 0 {
		t.Errorf("without pools with demand: error %v, want 0", cur)
	}
	pts, _ := h.QueryFairness(0, 0, nil)
	if len(pts) != 5 || math.Abs(pts[0].Usage-0.2) > 1e-3 || pts[1].Samples != 0 || pts[3].Usage != 0 || pts[3].Samples != 1 {
		t.Errorf("fairness series: %+v", pts)
	}
}

// A history survives a snapshot, its byte form and a restore: the
// queries answer the same, and records after the restore continue the
// series (the steps between the checkpoint and the restart have none).
func TestSnapshotRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := newHistory(t, 10, 600)
	names := []string{"a", "b", "c"}
	for i := range 102 { // the last record lists every pool
		var ps []PoolSample
		for _, n := range names[:1+i%3] {
			ps = append(ps, PoolSample{Name: n, Usage: r.Float64(), FairShare: r.Float64(), Demand: r.Float64() * 3,
				Starvation: starvation.State(r.IntN(3)), BelowFairShare: r.IntN(2) == 0})
		}
		h.Record(sec(float64(i)*7), ps)
	}
	snap := h.Snapshot()
	b := snap.AppendBinary(nil)
	dec, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dec, &snap) {
		t.Fatalf("the byte form does not round-trip")
	}
	g, err := Restore(h.Config(), dec)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		want, err1 := h.Query(n, 0, 0, nil)
		got, err2 := g.Query(n, 0, 0, nil)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("pool %s after restore (%v, %v):\n got %+v\nwant %+v", n, err1, err2, got, want)
		}
	}
	wc, wi := h.FairnessError()
	gc, gi := g.FairnessError()
	if wc != gc || wi != gi {
		t.Errorf("fairness error after restore %v %v, want %v %v", gc, gi, wc, wi)
	}
	// The restart: the next record is 100 s later.
	last := snap.Last.Seconds()
	g.Record(sec(last+100), []PoolSample{{Name: "a", Usage: 0.5, FairShare: 0.5, Demand: 1}})
	pts, _ := g.Query("a", sec(last-10), 0, nil)
	if n := len(pts); n < 10 || pts[0].Samples == 0 || pts[n-1].Samples != 1 || pts[n-2].Samples != 0 {
		t.Errorf("after the restart: %+v", pts)
	}
	// A shorter span keeps the newest steps; another step is refused.
	short, err := Restore(Config{Step: 10 * clock.Second, Span: 100 * clock.Second}, dec)
	if err != nil {
		t.Fatal(err)
	}
	head := math.Floor(last / 10)
	want, _ := h.Query("a", sec((head-9)*10), 0, nil)
	got, _ := short.Query("a", 0, 0, nil)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("restored into a shorter span:\n got %+v\nwant %+v", got, want)
	}
	if _, err := Restore(Config{Step: 5 * clock.Second, Span: 600 * clock.Second}, dec); err == nil {
		t.Error("a snapshot of another step was restored")
	}
}

// TestMemoryPerPool measures the heap of a history of 10,000 pools with
// the default config and checks it against the bound the package
// documentation states: 7 bytes a step (60,480 bytes a pool), which the
// allocator rounds up to whole 8 KiB pages for rings over 32 KiB, plus
// bookkeeping. Run with -v to see the figure.
func TestMemoryPerPool(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 600 MB")
	}
	const pools = 10000
	var h *History
	per := heapPerPool(t, pools, func(samples []PoolSample) {
		var err error
		if h, err = New(DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		h.Record(0, samples)
	})
	slots := int64(DefaultConfig().Span / DefaultConfig().Step)
	t.Logf("history of %d pools, %d steps each: %.0f bytes per pool (%.1f MiB in all; series %d bytes per pool)",
		pools, slots, per, per*pools/(1<<20), h.MemoryBytes()/pools)
	if bound := float64(7*slots + 8192 + 512); per > bound {
		t.Errorf("%.0f bytes per pool, over the stated bound %.0f", per, bound)
	}
	runtime.KeepAlive(h)
}

// heapPerPool is the heap that record's structure takes per pool, once it
// recorded one sample of each of pools pools (measured between two GCs).
func heapPerPool(t *testing.T, pools int, record func([]PoolSample)) float64 {
	t.Helper()
	samples := make([]PoolSample, pools)
	for i := range samples {
		samples[i] = PoolSample{Name: "pool-" + strconv.Itoa(i), Usage: 0.1, FairShare: 0.1, Demand: 0.2}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	record(samples)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(pools)
}

func BenchmarkRecord(b *testing.B) {
	for _, pools := range []int{100, 10000} {
		b.Run("pools="+strconv.Itoa(pools), func(b *testing.B) {
			h := newHistory(b, 10, 3600)
			samples := make([]PoolSample, pools)
			for i := range samples {
				samples[i] = PoolSample{Name: "pool-" + strconv.Itoa(i), Usage: 0.1, FairShare: 0.1, Demand: 0.2}
			}
			now := 0.0
			b.ReportAllocs()
			for b.Loop() {
				now += 1
				h.Record(sec(now), samples)
			}
		})
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	h, _ := New(Config{Step: clock.Second, Span: 10 * clock.Second})
	f.Add([]byte(nil))
	f.Add([]byte(magic))
	empty := h.Snapshot()
	f.Add(empty.AppendBinary(nil))
	for i := range 12 {
		h.Record(sec(float64(i)), []PoolSample{{Name: "a", Usage: 0.5, Demand: 1}, {Name: "b" + strconv.Itoa(i%2), FairShare: 0.25}})
	}
	full := h.Snapshot()
	f.Add(full.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		if again := s.AppendBinary(nil); string(again) != string(b) {
			t.Fatalf("decoded and encoded again: %x, was %x", again, b)
		}
		if err := s.Config.Validate(); err != nil {
			return
		}
		// Applied as a checkpoint's segment, into a history of the same
		// step and a span of 3 steps.
		if a, err := New(Config{Step: s.Config.Step, Span: 3 * s.Config.Step}); err == nil {
			before := a.Snapshot()
			if err := a.Apply(s); err != nil {
				if !reflect.DeepEqual(a.Snapshot(), before) {
					t.Fatalf("a refused segment changed the history: %v", err)
				}
			} else {
				a.Record(s.Last, []PoolSample{{Name: "a"}})
			}
		}
		g, err := Restore(s.Config, s)
		if err != nil {
			return
		}
		for _, p := range s.Pools {
			if _, err := g.Query(p.Name, 0, 0, nil); err != nil {
				t.Fatalf("a restored pool %q has no history: %v", p.Name, err)
			}
		}
		g.Record(s.Last, []PoolSample{{Name: "a"}})
	})
}
