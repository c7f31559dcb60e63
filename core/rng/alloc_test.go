//go:build !race

package rng

import "testing"

// TestZeroAllocs asserts that a stack-local Rand stays on the stack and no method
// allocates.
func TestZeroAllocs(t *testing.T) {
	buf := make([]int, 0, 16)
	var sink float64
	allocs := testing.AllocsPerRun(100, func() {
		r := New(1)
		c := r.Fork()
		sink += float64(r.Uint64()>>60) + float64(r.Uint32()>>30) + float64(r.Int64()>>62)
		sink += float64(r.IntN(10) + int(r.Int32N(10)) + int(r.Int64N(10)) + int(r.Uint64N(10)))
		sink += r.Float64() + r.ExpFloat64() + r.NormFloat64() + c.Float64()
		buf = r.AppendPerm(buf[:0], 16)
		r.Shuffle(len(buf), func(i, j int) { buf[i], buf[j] = buf[j], buf[i] })
	})
	if allocs != 0 {
		t.Fatalf("got %v allocs per run, want 0", allocs)
	}
	_ = sink
}
