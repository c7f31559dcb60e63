package plf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairsched/fairsched/core/resource"
)

// Tests of the piecewise-linear functions (docs/semantics.md#fair-share): the canonical form
// kept by Add, left-continuous sampling, the transformations used to build
// max-fit-factor-by-suggestion, composition and the exact bisection.

// scalarOf builds a Scalar through Add from (x, y) pairs.
func scalarOf(xy ...float64) *Scalar {
	var f Scalar
	for i := 0; i < len(xy); i += 2 {
		f.Add(xy[i], xy[i+1])
	}
	return &f
}

// vv is the vector value used by the vector tests: y in cpu, 2y in memory.
func vv(y float64) Value { return Value{0, y, 0, 2 * y, 0} }

// vecOf builds a Vec through Add from (x, y) pairs with values vv(y).
func vecOf(xy ...float64) *Vec {
	var f Vec
	for i := 0; i < len(xy); i += 2 {
		f.Add(xy[i], vv(xy[i+1]))
	}
	return &f
}

// pointsOf returns a scalar function's points as (x, y) pairs.
func pointsOf(f *Scalar) []float64 {
	var p []float64
	for i := range f.X {
		p = append(p, f.X[i], f.Y[i])
	}
	return p
}

// vecPointsOf returns a vector function's points as (x, cpu) pairs, checking
// that every value has the vv shape.
func vecPointsOf(t *testing.T, f *Vec) []float64 {
	t.Helper()
	var p []float64
	for i := range f.X {
		if f.V[i] != vv(f.V[i][resource.CPU]) {
			t.Fatalf("point %d value %v is not of the form vv(y)", i, f.V[i])
		}
		p = append(p, f.X[i], f.V[i][resource.CPU])
	}
	return p
}

func TestAddMerging(t *testing.T) {
	f := func(name string, in, want []float64) {
		t.Helper()
		if got := pointsOf(scalarOf(in...)); !slices.Equal(got, want) {
			t.Errorf("%s: Scalar points %v, want %v", name, got, want)
		}
		if got := vecPointsOf(t, vecOf(in...)); !slices.Equal(got, want) {
			t.Errorf("%s: Vec points %v, want %v", name, got, want)
		}
	}
	f("repeated point dropped", []float64{0, 0, 0, 0, 1, 1, 1, 1}, []float64{0, 0, 1, 1})
	f("repeated point after a jump", []float64{0, 0, 1, 0, 1, 1, 1, 1}, []float64{0, 0, 1, 0, 1, 1})
	f("two verticals merged", []float64{0, 0, 1, 0, 1, 1, 1, 2}, []float64{0, 0, 1, 0, 1, 2})
	f("three verticals merged", []float64{1, 0, 1, 1, 1, 2, 1, 3}, []float64{1, 0, 1, 3})
	f("two horizontals merged", []float64{0, 0, 1, 0, 2, 0}, []float64{0, 0, 2, 0})
	f("three horizontals merged", []float64{0, 5, 1, 5, 2, 5, 3, 5}, []float64{0, 5, 3, 5})
	f("horizontal after tilted", []float64{0, 0, 1, 1, 2, 1, 3, 1}, []float64{0, 0, 1, 1, 3, 1})
	f("collinear tilted kept", []float64{0, 0, 1, 1, 2, 2}, []float64{0, 0, 1, 1, 2, 2})
	f("vertical then horizontal kept", []float64{0, 0, 0, 1, 1, 1}, []float64{0, 0, 0, 1, 1, 1})
	f("horizontal then vertical kept", []float64{0, 0, 1, 0, 1, 1}, []float64{0, 0, 1, 0, 1, 1})
	f("horizontal, jump, horizontal", []float64{0, 0, 1, 0, 1, 1, 2, 1, 3, 1}, []float64{0, 0, 1, 0, 1, 1, 3, 1})
	f("single point", []float64{2, 3}, []float64{2, 3})

	// A vector segment is horizontal only if every component is.
	var g Vec
	g.Add(0, Value{0, 0, 0, 0, 0})
	g.Add(1, Value{0, 1, 0, 0, 0})
	g.Add(2, Value{0, 2, 0, 0, 0})
	if g.Len() != 3 {
		t.Errorf("segments horizontal in some components only were merged: %v %v", g.X, g.V)
	}
	g.Reset()
	g.Add(0, Value{1, 1, 0, 0, 0})
	g.Add(1, Value{1, 1, 0, 0, 0})
	g.Add(2, Value{1, 1, 0, 0, 0})
	if g.Len() != 2 || g.X[1] != 2 {
		t.Errorf("horizontal vector segments not merged: %v %v", g.X, g.V)
	}
}

func TestSamplingLeftContinuous(t *testing.T) {
	// (0,0)-(1,0) | jump to 1 | (1,1)-(2,1) | jump to 3 | (2,3)-(4,5)
	sf := scalarOf(0, 0, 1, 0, 1, 1, 2, 1, 2, 3, 4, 5)
	vf := vecOf(0, 0, 1, 0, 1, 1, 2, 1, 2, 3, 4, 5)
	f := func(x, value, left, right float64) {
		t.Helper()
		if got := sf.ValueAt(x); got != value {
			t.Errorf("Scalar.ValueAt(%v) = %v, want %v", x, got, value)
		}
		if l, r := sf.LeftRightLimitAt(x); l != left || r != right {
			t.Errorf("Scalar.LeftRightLimitAt(%v) = %v, %v, want %v, %v", x, l, r, left, right)
		}
		if got := vf.ValueAt(x); got != vv(value) {
			t.Errorf("Vec.ValueAt(%v) = %v, want %v", x, got, vv(value))
		}
		if got := vf.LeftLimitAt(x); got != vv(left) {
			t.Errorf("Vec.LeftLimitAt(%v) = %v, want %v", x, got, vv(left))
		}
		if got := vf.RightLimitAt(x); got != vv(right) {
			t.Errorf("Vec.RightLimitAt(%v) = %v, want %v", x, got, vv(right))
		}
		if l, r := vf.LeftRightLimitAt(x); l != vv(left) || r != vv(right) {
			t.Errorf("Vec.LeftRightLimitAt(%v) = %v, %v, want %v, %v", x, l, r, vv(left), vv(right))
		}
	}
	f(0, 0, 0, 0)
	f(0.5, 0, 0, 0)
	f(1, 0, 0, 1) // at a jump the value is the left limit
	f(1.5, 1, 1, 1)
	f(2, 1, 1, 3)
	f(3, 4, 4, 4)
	f(4, 5, 5, 5)

	// Jumps at the bounds.
	g := vecOf(0, 0, 0, 1, 1, 1)
	if v := g.ValueAt(0); v != vv(0) {
		t.Errorf("jump at the left bound: ValueAt(0) = %v, want %v", v, vv(0))
	}
	if v := g.RightLimitAt(0); v != vv(1) {
		t.Errorf("jump at the left bound: RightLimitAt(0) = %v, want %v", v, vv(1))
	}
	h := vecOf(0, 0, 1, 0, 1, 1)
	if l, r := h.LeftRightLimitAt(1); l != vv(0) || r != vv(1) {
		t.Errorf("jump at the right bound: limits %v, %v, want %v, %v", l, r, vv(0), vv(1))
	}
	if v := h.ValueAt(1); v != vv(0) {
		t.Errorf("jump at the right bound: ValueAt(1) = %v, want %v", v, vv(0))
	}
	if v := h.RightValue(); v != vv(1) {
		t.Errorf("RightValue = %v, want %v", v, vv(1))
	}
	p := scalarOf(2, 7)
	if l, r := p.LeftRightLimitAt(2); p.ValueAt(2) != 7 || l != 7 || r != 7 {
		t.Errorf("single point: ValueAt %v, limits %v %v, want 7", p.ValueAt(2), l, r)
	}

	// A cursor gives the same limits as random access.
	c := NewCursor(vf)
	for _, x := range []float64{0, 0.25, 1, 1, 1.5, 2, 2, 2.5, 4} {
		cl, cr := c.LeftRightLimitAt(x)
		l, r := vf.LeftRightLimitAt(x)
		if cl != l || cr != r {
			t.Errorf("Cursor.LeftRightLimitAt(%v) = %v, %v, want %v, %v", x, cl, cr, l, r)
		}
	}
}

func TestNarrowTo(t *testing.T) {
	g := scalarOf(0, 0, 1, 0, 1, 1, 2, 1, 3, 2)
	f := func(lo, hi float64, want []float64) {
		t.Helper()
		var n Scalar
		n.NarrowTo(g, lo, hi)
		if got := pointsOf(&n); !slices.Equal(got, want) {
			t.Errorf("NarrowTo(%v, %v) = %v, want %v", lo, hi, got, want)
		}
	}
	f(0, 3, []float64{0, 0, 1, 0, 1, 1, 2, 1, 3, 2})
	f(0.5, 2.5, []float64{0.5, 0, 1, 0, 1, 1, 2, 1, 2.5, 1.5})
	// End points at a jump carry both limits.
	f(1, 2, []float64{1, 0, 1, 1, 2, 1})
	f(0, 1, []float64{0, 0, 1, 0, 1, 1})
	f(1, 1, []float64{1, 0, 1, 1})
	f(1.5, 1.5, []float64{1.5, 1})
	f(2.5, 3, []float64{2.5, 1.5, 3, 2})
}

func TestTrim(t *testing.T) {
	f := func(name string, in, wantLeft, wantRight []float64) {
		t.Helper()
		l := scalarOf(in...)
		l.TrimLeft()
		if got := pointsOf(l); !slices.Equal(got, wantLeft) {
			t.Errorf("%s: TrimLeft = %v, want %v", name, got, wantLeft)
		}
		r := scalarOf(in...)
		r.TrimRight()
		if got := pointsOf(r); !slices.Equal(got, wantRight) {
			t.Errorf("%s: Scalar.TrimRight = %v, want %v", name, got, wantRight)
		}
		v := vecOf(in...)
		v.TrimRight()
		if got := vecPointsOf(t, v); !slices.Equal(got, wantRight) {
			t.Errorf("%s: Vec.TrimRight = %v, want %v", name, got, wantRight)
		}
	}
	f("no jumps", []float64{0, 0, 1, 1}, []float64{0, 0, 1, 1}, []float64{0, 0, 1, 1})
	f("left jump", []float64{1, 0, 1, 1, 2, 1}, []float64{1, 1, 2, 1}, []float64{1, 0, 1, 1, 2, 1})
	f("right jump", []float64{0, 0, 1, 0, 1, 1}, []float64{0, 0, 1, 0, 1, 1}, []float64{0, 0, 1, 0})
	f("both", []float64{0, 0, 0, 1, 1, 1, 1, 2}, []float64{0, 1, 1, 1, 1, 2}, []float64{0, 0, 0, 1, 1, 1})
	// A lone jump keeps its right value on the left and its left value on the right.
	f("lone jump", []float64{1, 0, 1, 1}, []float64{1, 1}, []float64{1, 0})
	f("single point", []float64{1, 5}, []float64{1, 5}, []float64{1, 5})
}

func TestShiftArgument(t *testing.T) {
	f := func(in []float64, d float64, want []float64) {
		t.Helper()
		g := scalarOf(in...)
		g.ShiftArgument(d)
		if got := pointsOf(g); !slices.Equal(got, want) {
			t.Errorf("ShiftArgument(%v) of %v = %v, want %v", d, in, got, want)
		}
	}
	f([]float64{0, 0, 1, 1, 1, 2}, -0.25, []float64{-0.25, 0, 0.75, 1, 0.75, 2})
	f([]float64{0, 0, 1, 1}, 0, []float64{0, 0, 1, 1})
	f([]float64{0.5, 3}, 2, []float64{2.5, 3})
	// Arguments that collapse under rounding become a jump (through Add).
	f([]float64{1, 0, 1 + 0x1p-52, 1, 2, 1}, 1024, []float64{1025, 0, 1025, 1, 1026, 1})
}

func TestExtendRight(t *testing.T) {
	f := func(in []float64, hi float64, want []float64) {
		t.Helper()
		g := scalarOf(in...)
		g.ExtendRight(hi)
		if got := pointsOf(g); !slices.Equal(got, want) {
			t.Errorf("ExtendRight(%v) of %v = %v, want %v", hi, in, got, want)
		}
	}
	f([]float64{0, 0, 1, 1}, 2, []float64{0, 0, 1, 1, 2, 1})
	f([]float64{0, 0, 1, 1, 2, 1}, 3, []float64{0, 0, 1, 1, 3, 1}) // merged with the horizontal end
	f([]float64{0, 0, 1, 0, 1, 1}, 2, []float64{0, 0, 1, 0, 1, 1, 2, 1})
	f([]float64{0, 0, 1, 1}, 1, []float64{0, 0, 1, 1})
	f([]float64{0, 0, 1, 1}, 0.5, []float64{0, 0, 1, 1})
}

func TestPointwiseMin(t *testing.T) {
	f := func(name string, a, b, want []float64) {
		t.Helper()
		var m Scalar
		var scratch []float64
		m.PointwiseMin(scalarOf(a...), scalarOf(b...), &scratch)
		if got := pointsOf(&m); !slices.Equal(got, want) {
			t.Errorf("%s: PointwiseMin = %v, want %v", name, got, want)
		}
		// Symmetric.
		m.PointwiseMin(scalarOf(b...), scalarOf(a...), &scratch)
		if got := pointsOf(&m); !slices.Equal(got, want) {
			t.Errorf("%s: PointwiseMin(b, a) = %v, want %v", name, got, want)
		}
	}
	f("a below b", []float64{0, 0, 1, 0.5}, []float64{0, 1, 1, 2}, []float64{0, 0, 1, 0.5})
	f("crossing at 0.5", []float64{0, 0, 1, 1}, []float64{0, 0.5, 1, 0.5}, []float64{0, 0, 0.5, 0.5, 1, 0.5})
	// The crossing is the largest double where a ≤ b: exactly 1/3 here.
	f("crossing at 1/3", []float64{0, 0, 1, 1}, []float64{0, 1.0 / 3, 1, 1.0 / 3}, []float64{0, 0, 1.0 / 3, 1.0 / 3, 1, 1.0 / 3})
	f("jump across", []float64{0, 0, 0.5, 0, 0.5, 1, 1, 1}, []float64{0, 0.5, 1, 0.5}, []float64{0, 0, 0.5, 0, 0.5, 0.5, 1, 0.5})
	f("domains intersect", []float64{0, 0, 2, 2}, []float64{1, 5, 3, 5}, []float64{1, 1, 2, 2})
	f("touching", []float64{0, 0, 2, 2}, []float64{0, 0, 1, 1, 2, 1.5}, []float64{0, 0, 1, 1, 2, 1.5})

	// A generic crossing: the point found satisfies a ≤ b, and the next
	// double does not.
	a, b := scalarOf(0, 0, 0.7, 0.9), scalarOf(0, 0.1, 0.7, 0.3)
	var m Scalar
	var scratch []float64
	m.PointwiseMin(a, b, &scratch)
	if m.Len() != 3 {
		t.Fatalf("generic crossing: %v, want three points", pointsOf(&m))
	}
	x := m.X[1]
	if !(a.ValueAt(x) <= b.ValueAt(x)) || a.ValueAt(math.Nextafter(x, 1)) <= b.ValueAt(math.Nextafter(x, 1)) {
		t.Errorf("crossing %v is not the largest double with a ≤ b: a=%v b=%v, next a=%v b=%v",
			x, a.ValueAt(x), b.ValueAt(x), a.ValueAt(math.Nextafter(x, 1)), b.ValueAt(math.Nextafter(x, 1)))
	}
	if math.Abs(x-0.1) > 1e-15 || m.Y[1] != min(a.ValueAt(x), b.ValueAt(x)) {
		t.Errorf("crossing point (%v, %v), want about (0.1, %v)", x, m.Y[1], a.ValueAt(0.1))
	}
}

func TestComposeInto(t *testing.T) {
	f := func(name string, outer, inner, want []float64) {
		t.Helper()
		var dst Vec
		var scratch []CPoint
		vecOf(outer...).ComposeInto(&dst, scalarOf(inner...), &scratch)
		if got := vecPointsOf(t, &dst); !slices.Equal(got, want) {
			t.Errorf("%s: f∘g = %v, want %v", name, got, want)
		}
	}
	f("linear", []float64{0, 0, 2, 2}, []float64{0, 0, 1, 2}, []float64{0, 0, 1, 2})
	f("outer breakpoint inside a tilted inner segment", []float64{0, 0, 1, 1, 2, 3}, []float64{0, 0, 1, 2}, []float64{0, 0, 0.5, 1, 1, 3})
	f("outer jump inside a tilted inner segment", []float64{0, 0, 1, 0, 1, 1, 2, 1}, []float64{0, 0, 1, 2}, []float64{0, 0, 0.5, 0, 0.5, 1, 1, 1})
	// A step inner function: the composition jumps where g does.
	f("step inner", []float64{0, 0, 1, 1}, []float64{0, 0, 0.5, 0, 0.5, 1, 1, 1}, []float64{0, 0, 0.5, 0, 0.5, 1, 1, 1})
	f("step inner over an outer jump", []float64{0, 0, 1, 0, 1, 1, 2, 1}, []float64{0, 0, 0.5, 0.5, 0.5, 1.5, 1, 2}, []float64{0, 0, 0.5, 0, 0.5, 1, 1, 1})
	// g stays exactly at the outer jump: f's value there is its left limit.
	f("inner constant at an outer jump", []float64{0, 0, 1, 0, 1, 1, 2, 1}, []float64{0, 0, 0.5, 0.5, 0.5, 1, 1, 1}, []float64{0, 0, 1, 0})
	// A jump at the end of g is trimmed: the value at the right bound is the left limit.
	f("inner jump at the right bound", []float64{0, 0, 2, 2}, []float64{0, 0, 1, 1, 1, 2}, []float64{0, 0, 1, 1})
	f("single point inner", []float64{0, 0, 2, 2}, []float64{0.3, 1}, []float64{0.3, 1})
}

func TestInverseLowerBound(t *testing.T) {
	f := func(name string, lo, hi float64, pred func(float64) bool, want float64) {
		t.Helper()
		x := InverseLowerBound(lo, hi, pred)
		if !math.IsNaN(want) && x != want {
			t.Errorf("%s: InverseLowerBound(%v, %v) = %v, want %v", name, lo, hi, x, want)
		}
		if x < lo || x > hi {
			t.Errorf("%s: %v outside [%v, %v]", name, x, lo, hi)
		}
		if !pred(lo) {
			return
		}
		if !pred(x) {
			t.Errorf("%s: pred(%v) is false", name, x)
		}
		if next := math.Nextafter(x, math.Inf(1)); x < hi && pred(next) {
			t.Errorf("%s: %v is not the largest: pred(%v) is true", name, x, next)
		}
	}
	any := math.NaN()
	f("sqrt2", 0, 2, func(x float64) bool { return x*x <= 2 }, any)
	f("exact 0.1", 0, 1, func(x float64) bool { return x <= 0.1 }, 0.1)
	f("exact 1/3", 0, 1, func(x float64) bool { return x <= 1.0/3 }, 1.0/3)
	f("3x ≤ 1", 0, 1, func(x float64) bool { return 3*x <= 1 }, any)
	f("negative", -1, 1, func(x float64) bool { return x <= -0.5 }, -0.5)
	f("below a tiny positive", -1, 1, func(x float64) bool { return x < 1e-300 }, math.Nextafter(1e-300, 0))
	f("zero", -1, 1, func(x float64) bool { return x <= 0 }, any)
	f("subnormal", 0, 1e-310, func(x float64) bool { return x <= 5e-311 }, 5e-311)
	f("huge range", -math.MaxFloat64, math.MaxFloat64, func(x float64) bool { return x <= 12345.678 }, 12345.678)
	f("true everywhere", 0, 1, func(float64) bool { return true }, 1)
	f("false at lo", 0, 1, func(float64) bool { return false }, 0)
	f("empty range", 0.5, 0.5, func(x float64) bool { return x <= 0.7 }, 0.5)
	f("one ulp range", 1, math.Nextafter(1, 2), func(x float64) bool { return x <= 1 }, 1)
}

// ---- seeded property tests ----

// randPoints returns the (x, y) pairs of a random non-decreasing function on
// [lo, hi] with values in [vlo, vhi]: tilted and flat segments and jumps.
// Arguments and values are snapped to a grid of eighths half the time, so
// that breakpoints of different functions coincide.
func randPoints(rng *rand.Rand, lo, hi, vlo, vhi float64) []float64 {
	grid := func(v, a, b float64) float64 {
		if rng.IntN(2) == 0 {
			return a + math.Round((v-a)/(b-a)*8)/8*(b-a)
		}
		return v
	}
	n := 2 + rng.IntN(7)
	xs := []float64{lo, hi}
	for range n - 2 {
		xs = append(xs, grid(lo+(hi-lo)*rng.Float64(), lo, hi))
	}
	slices.Sort(xs)
	var pts []float64
	y := vlo
	defer func() {
		for i := 3; i < len(pts); i += 2 {
			if pts[i] < pts[i-2] {
				panic(fmt.Sprintf("BUG: test generator made a decreasing function %v", pts))
			}
		}
	}()
	for i, x := range xs {
		if i > 0 && rng.IntN(4) != 0 {
			y = max(y, min(vhi, grid(y+(vhi-vlo)*rng.Float64()/float64(n), vlo, vhi)))
		}
		pts = append(pts, x, y)
		if rng.IntN(4) == 0 {
			y = max(y, min(vhi, grid(y+(vhi-vlo)*rng.Float64()/float64(n), vlo, vhi)))
			pts = append(pts, x, y)
		}
	}
	return pts
}

// checkCanonical asserts the form Add maintains: non-decreasing arguments,
// no repeated point, no two consecutive vertical or horizontal segments.
func checkCanonical[T comparable](t *testing.T, ctx string, xs []float64, vs []T) {
	t.Helper()
	for i := 0; i+1 < len(xs); i++ {
		if xs[i] > xs[i+1] {
			t.Errorf("%s: arguments decrease at %d: %v", ctx, i, xs)
		}
		if xs[i] == xs[i+1] && vs[i] == vs[i+1] {
			t.Errorf("%s: repeated point %d: %v", ctx, i, xs)
		}
		if i+2 < len(xs) {
			if xs[i] == xs[i+1] && xs[i+1] == xs[i+2] {
				t.Errorf("%s: two consecutive vertical segments at %d: %v %v", ctx, i, xs, vs)
			}
			if xs[i] != xs[i+1] && xs[i+1] != xs[i+2] && vs[i] == vs[i+1] && vs[i+1] == vs[i+2] {
				t.Errorf("%s: two consecutive horizontal segments at %d: %v %v", ctx, i, xs, vs)
			}
		}
	}
}

func TestPropertyComposeAndPointwiseMin(t *testing.T) {
	// Random monotone functions with jumps: (f∘g)(x) = f(g(x)) and
	// min(a, b)(x) = min(a(x), b(x)) at random arguments and at every
	// breakpoint, within 1e-12. (Run locally with 3000 seeds: no failure.)
	const tol = 1e-12
	var cps []CPoint
	var scratch []float64
	for _, seed := range []uint64{1, 2, 3, 5, 8, 13, 21, 34, 55, 89} {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		for iter := range 200 {
			ctx := fmt.Sprintf("seed %d iteration %d", seed, iter)

			fp := randPoints(rng, 0, 2, 0, 3)
			var f Vec
			for i := 0; i < len(fp); i += 2 {
				y := fp[i+1]
				f.Add(fp[i], Value{0, y, 0, y * y, 0.5})
			}
			g := scalarOf(randPoints(rng, 0, 1, 0, 2)...)
			var dst Vec
			f.ComposeInto(&dst, g, &cps)
			checkCanonical(t, ctx+" f∘g", dst.X, dst.V)
			if dst.LeftBound() != g.LeftBound() || dst.RightBound() != g.RightBound() {
				t.Errorf("%s: f∘g on [%v, %v], want g's domain [%v, %v]", ctx, dst.LeftBound(), dst.RightBound(), g.LeftBound(), g.RightBound())
			}
			xs := append([]float64(nil), g.X...)
			for range 30 {
				xs = append(xs, rng.Float64())
			}
			for _, x := range xs {
				got, want := dst.ValueAt(x), f.ValueAt(g.ValueAt(x))
				if !got.Near(want, tol) {
					t.Errorf("%s: (f∘g)(%v) = %v, f(g(x)) = f(%v) = %v\nf: %v %v\ng: %v",
						ctx, x, got, g.ValueAt(x), want, f.X, f.V, pointsOf(g))
				}
			}

			a := scalarOf(randPoints(rng, 0, 1, 0, 3)...)
			blo, bhi := 0.0, 1.0
			if rng.IntN(3) == 0 {
				blo, bhi = 0.25, 1.5
			}
			b := scalarOf(randPoints(rng, blo, bhi, 0, 3)...)
			var m Scalar
			m.PointwiseMin(a, b, &scratch)
			checkCanonical(t, ctx+" min", m.X, m.Y)
			lo, hi := max(a.LeftBound(), b.LeftBound()), min(a.RightBound(), b.RightBound())
			if m.LeftBound() != lo || m.RightBound() != hi {
				t.Errorf("%s: min on [%v, %v], want [%v, %v]", ctx, m.LeftBound(), m.RightBound(), lo, hi)
			}
			xs = xs[:0]
			for _, x := range append(append([]float64(nil), a.X...), b.X...) {
				if x >= lo && x <= hi {
					xs = append(xs, x)
				}
			}
			for range 30 {
				xs = append(xs, lo+(hi-lo)*rng.Float64())
			}
			for _, x := range xs {
				got, want := m.ValueAt(x), min(a.ValueAt(x), b.ValueAt(x))
				if math.Abs(got-want) > tol {
					t.Errorf("%s: min(a, b)(%v) = %v, want min(%v, %v)\na: %v\nb: %v\nmin: %v",
						ctx, x, got, a.ValueAt(x), b.ValueAt(x), pointsOf(a), pointsOf(b), pointsOf(&m))
				}
				gl, gr := m.LeftRightLimitAt(x)
				al, ar := a.LeftRightLimitAt(x)
				bl, br := b.LeftRightLimitAt(x)
				if math.Abs(gl-min(al, bl)) > tol || math.Abs(gr-min(ar, br)) > tol {
					t.Errorf("%s: min limits at %v = %v, %v, want %v, %v", ctx, x, gl, gr, min(al, bl), min(ar, br))
				}
			}
		}
	}
}
