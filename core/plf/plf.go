// Package plf implements monotone, possibly discontinuous piecewise-linear
// functions on a closed interval, the representation of the fair-share
// functions of docs/semantics.md#fair-share.
//
// A function is its plot: a list of points (x_i, v_i) with non-decreasing x.
// Consecutive points form segments; two consecutive points with the same x
// form a vertical segment, a jump. All functions are left-continuous: at a
// jump the value is the left limit. A function of a single point is defined
// at that point only.
//
// Construction goes through Add, which applies the same merging rules
// everywhere (a repeated point is dropped; two consecutive vertical or two
// consecutive horizontal segments become one), so every function is in a
// canonical form. Functions own their slices and reuse them across Reset,
// which is how the fair-share update avoids allocating in steady state.
//
// Interpolation is exact at the end points and monotone (the two-sided
// formula of InterpolateNormalized), and every bisection finds the largest
// double satisfying its predicate, so results are deterministic and
// reproducible bit for bit.
package plf

import (
	"cmp"
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/resource"
)

// Value is a vector value: a share of every resource.
type Value = resource.Share

// Vec is a vector-valued function.
type Vec struct {
	X []float64
	V []Value
}

// Scalar is a scalar-valued function.
type Scalar struct {
	X []float64
	Y []float64
}

// ---- construction ----

// Reset empties f, keeping its storage.
func (f *Vec) Reset() { f.X, f.V = f.X[:0], f.V[:0] }

// Reset empties f, keeping its storage.
func (f *Scalar) Reset() { f.X, f.Y = f.X[:0], f.Y[:0] }

// Add appends the point (x, v). x must not be below the last point's x.
func (f *Vec) Add(x float64, v Value) {
	n := len(f.X)
	if n > 0 {
		bx, bv := f.X[n-1], &f.V[n-1]
		if bx == x {
			if eq(bv, &v) {
				return // a repeated point
			}
			if n > 1 && f.X[n-2] == bx {
				*bv = v // a second vertical segment: extend the first
				return
			}
		} else if n > 1 {
			if ax, av := f.X[n-2], &f.V[n-2]; ax != bx && eq(bv, &v) && eq(av, bv) {
				f.X[n-1] = x // a second horizontal segment: extend the first
				return
			}
		}
	}
	f.X = append(f.X, x)
	f.V = append(f.V, v)
}

// eq is *a == *b, inlined (for == on arrays of floats the compiler calls a
// generated function).
func eq(a, b *Value) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Add appends the point (x, y). x must not be below the last point's x.
func (f *Scalar) Add(x, y float64) {
	n := len(f.X)
	if n > 0 {
		bx, by := f.X[n-1], f.Y[n-1]
		if bx == x && by == y {
			return
		}
		if n > 1 {
			ax, ay := f.X[n-2], f.Y[n-2]
			if (ax == bx && bx == x) || (ax != bx && ay == by && bx != x && by == y) {
				f.X[n-1], f.Y[n-1] = x, y
				return
			}
		}
	}
	f.X = append(f.X, x)
	f.Y = append(f.Y, y)
}

// CopyFrom makes f a copy of g.
func (f *Vec) CopyFrom(g *Vec) {
	f.X = append(f.X[:0], g.X...)
	f.V = append(f.V[:0], g.V...)
}

// CopyFrom makes f a copy of g.
func (f *Scalar) CopyFrom(g *Scalar) {
	f.X = append(f.X[:0], g.X...)
	f.Y = append(f.Y[:0], g.Y...)
}

// Len returns the number of points.
func (f *Vec) Len() int { return len(f.X) }

// Len returns the number of points.
func (f *Scalar) Len() int { return len(f.X) }

// LeftBound returns the smallest argument.
func (f *Vec) LeftBound() float64 { return f.X[0] }

// RightBound returns the largest argument.
func (f *Vec) RightBound() float64 { return f.X[len(f.X)-1] }

// LeftValue returns the value at the left bound.
func (f *Vec) LeftValue() Value { return f.V[0] }

// RightValue returns the value of the last point (the right limit at the
// right bound; equal to the value there for a trimmed function).
func (f *Vec) RightValue() Value { return f.V[len(f.V)-1] }

// LeftBound returns the smallest argument.
func (f *Scalar) LeftBound() float64 { return f.X[0] }

// RightBound returns the largest argument.
func (f *Scalar) RightBound() float64 { return f.X[len(f.X)-1] }

// ---- interpolation ----

// Interpolate returns the value at x of the segment (x0,v0)–(x1,v1), x0 < x1.
func Interpolate(x0, x1 float64, v0, v1 Value, x float64) Value {
	return Lerp(&v0, &v1, (x-x0)/(x1-x0))
}

// Lerp returns v0 + t·(v1 − v0) for t in [0, 1] with the two-sided
// formula every function of this package samples with: from v0 for
// t < 1/2, from v1 above, so it is exact at both ends and monotone in t.
func Lerp(v0, v1 *Value, t float64) Value {
	var r Value
	if t < 0.5 {
		for i := range r {
			r[i] = v0[i] + (v1[i]-v0[i])*t
		}
	} else {
		for i := range r {
			r[i] = v1[i] - (v1[i]-v0[i])*(1-t)
		}
	}
	return r
}

// LerpScalar is Lerp for one number.
func LerpScalar(y0, y1, t float64) float64 {
	if t < 0.5 {
		return y0 + (y1-y0)*t
	}
	return y1 - (y1-y0)*(1-t)
}

func interpolateScalar(x0, x1, y0, y1, x float64) float64 {
	return LerpScalar(y0, y1, (x-x0)/(x1-x0))
}

// ---- sampling ----

// leftSegment returns the index i of the first segment (points i, i+1) whose
// right end is ≥ x; for a single-point function it returns 0.
func leftSegment(xs []float64, x float64) int {
	n := len(xs)
	if n == 1 {
		return 0
	}
	// First point index j ≥ 1 with xs[j] ≥ x.
	lo, hi := 1, n-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if xs[mid] < x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

// rightSegment returns the index of the last segment whose left end is ≤ x.
func rightSegment(xs []float64, x float64) int {
	n := len(xs)
	if n == 1 {
		return 0
	}
	// Last point index j ≤ n-2 with xs[j] ≤ x.
	lo, hi := 0, n-2
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if xs[mid] <= x {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// ValueAt returns f(x), the left limit at x.
func (f *Vec) ValueAt(x float64) Value {
	i := leftSegment(f.X, x)
	return f.segLeft(i, x)
}

// LeftLimitAt returns the left limit at x (equal to ValueAt).
func (f *Vec) LeftLimitAt(x float64) Value { return f.ValueAt(x) }

// RightLimitAt returns the right limit at x.
func (f *Vec) RightLimitAt(x float64) Value {
	i := rightSegment(f.X, x)
	return f.segRight(i, x)
}

// LeftRightLimitAt returns both limits at x.
func (f *Vec) LeftRightLimitAt(x float64) (Value, Value) {
	i := f.segmentAt(leftSegment(f.X, x), x)
	return f.segLimits(i, x)
}

// segmentAt moves from the left segment i at x to the vertical segment that
// follows it at x, if there is one.
func (f *Vec) segmentAt(i int, x float64) int {
	if i+1 < len(f.X) && f.X[i+1] == x && i+2 < len(f.X) && f.X[i+2] == x {
		return i + 1
	}
	return i
}

func (f *Vec) segLeft(i int, x float64) Value {
	if len(f.X) == 1 {
		return f.V[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.V[i]
	}
	return Interpolate(x0, x1, f.V[i], f.V[i+1], x)
}

func (f *Vec) segRight(i int, x float64) Value {
	if len(f.X) == 1 {
		return f.V[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.V[i+1]
	}
	return Interpolate(x0, x1, f.V[i], f.V[i+1], x)
}

func (f *Vec) segLimits(i int, x float64) (Value, Value) {
	if len(f.X) == 1 {
		return f.V[0], f.V[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.V[i], f.V[i+1]
	}
	v := Interpolate(x0, x1, f.V[i], f.V[i+1], x)
	return v, v
}

// ValueAt returns f(x), the left limit at x.
func (f *Scalar) ValueAt(x float64) float64 {
	i := leftSegment(f.X, x)
	return f.segLeft(i, x)
}

func (f *Scalar) segLeft(i int, x float64) float64 {
	if len(f.X) == 1 {
		return f.Y[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.Y[i]
	}
	return interpolateScalar(x0, x1, f.Y[i], f.Y[i+1], x)
}

func (f *Scalar) segRight(i int, x float64) float64 {
	if len(f.X) == 1 {
		return f.Y[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.Y[i+1]
	}
	return interpolateScalar(x0, x1, f.Y[i], f.Y[i+1], x)
}

func (f *Scalar) segmentAt(i int, x float64) int {
	if i+1 < len(f.X) && f.X[i+1] == x && i+2 < len(f.X) && f.X[i+2] == x {
		return i + 1
	}
	return i
}

func (f *Scalar) segLimits(i int, x float64) (float64, float64) {
	if len(f.X) == 1 {
		return f.Y[0], f.Y[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.Y[i], f.Y[i+1]
	}
	v := interpolateScalar(x0, x1, f.Y[i], f.Y[i+1], x)
	return v, v
}

// LeftRightLimitAt returns both limits at x.
func (f *Scalar) LeftRightLimitAt(x float64) (float64, float64) {
	i := f.segmentAt(leftSegment(f.X, x), x)
	return f.segLimits(i, x)
}

// Cursor samples a function at non-decreasing arguments in amortised O(1).
type Cursor struct {
	f *Vec
	i int
}

// NewCursor returns a cursor at the start of f.
func NewCursor(f *Vec) Cursor { return Cursor{f: f} }

// LeftRightLimitAt returns both limits at x; x must not decrease between calls.
func (c *Cursor) LeftRightLimitAt(x float64) (Value, Value) {
	f := c.f
	n := len(f.X)
	for c.i+1 < n-1 && f.X[c.i+1] < x {
		c.i++
	}
	return f.segLimits(f.segmentAt(c.i, x), x)
}

// ---- scalar operations used to build max-fit-factor-by-suggestion ----

// ExtractComponent makes f the r-th component of g.
func (f *Scalar) ExtractComponent(g *Vec, r int) {
	f.Reset()
	for i, x := range g.X {
		f.Add(x, g.V[i][r])
	}
}

// Transpose swaps arguments and values in place. f must be non-decreasing.
func (f *Scalar) Transpose() { f.X, f.Y = f.Y, f.X }

// NarrowTo makes f the restriction of g to [lo, hi] (which must lie inside
// g's domain): the restriction's end points carry g's left and right limits.
func (f *Scalar) NarrowTo(g *Scalar, lo, hi float64) {
	f.Reset()
	sample := func(x float64) {
		l, r := g.LeftRightLimitAt(x)
		f.Add(x, l)
		f.Add(x, r)
	}
	sample(lo)
	prev := lo
	for _, x := range g.X {
		if x > prev && x < hi {
			sample(x)
			prev = x
		}
	}
	if hi > lo {
		sample(hi)
	}
}

// TrimLeft removes a jump at the left bound.
func (f *Scalar) TrimLeft() {
	if len(f.X) >= 2 && f.X[0] == f.X[1] {
		if len(f.X) > 2 {
			copy(f.X, f.X[1:])
			copy(f.Y, f.Y[1:])
			f.X, f.Y = f.X[:len(f.X)-1], f.Y[:len(f.Y)-1]
		} else {
			// A lone jump becomes a point carrying the right value.
			f.Y[0] = f.Y[1]
			f.X, f.Y = f.X[:1], f.Y[:1]
		}
	}
}

// TrimRight removes a jump at the right bound.
func (f *Scalar) TrimRight() {
	n := len(f.X)
	if n >= 2 && f.X[n-1] == f.X[n-2] {
		f.X, f.Y = f.X[:n-1], f.Y[:n-1]
	}
}

// TrimRight removes a jump at the right bound.
func (f *Vec) TrimRight() {
	n := len(f.X)
	if n >= 2 && f.X[n-1] == f.X[n-2] {
		f.X, f.V = f.X[:n-1], f.V[:n-1]
	}
}

// ShiftArgument adds d to every argument.
func (f *Scalar) ShiftArgument(d float64) {
	if d == 0 {
		return
	}
	xs, ys := f.X, f.Y
	f.X, f.Y = xs[:0], ys[:0]
	for i := range xs {
		x, y := xs[i]+d, ys[i]
		f.Add(x, y)
	}
}

// ExtendRight extends f to hi with its last value.
func (f *Scalar) ExtendRight(hi float64) {
	if f.RightBound() < hi {
		f.Add(hi, f.Y[len(f.Y)-1])
	}
}

// PointwiseMin sets f to min(a, b) on the intersection of their domains,
// adding the points where a and b cross. scratch is reused storage.
func (f *Scalar) PointwiseMin(a, b *Scalar, scratch *[]float64) {
	lo := max(a.LeftBound(), b.LeftBound())
	hi := min(a.RightBound(), b.RightBound())
	cps := (*scratch)[:0]
	cps = appendCritical(cps, a.X)
	cps = appendCritical(cps, b.X)
	cps = clearAndSort(cps, lo, hi)
	n := len(cps)
	ca, cb := scalarCursor{f: a}, scalarCursor{f: b}
	for i := 1; i < n; i++ {
		l, r := cps[i-1], cps[i]
		ia, ib := ca.rightSegment(l), cb.rightSegment(l)
		al, bl := a.segRight(ia, l), b.segRight(ib, l)
		// The segment that is lower at l.
		loF, loI, hiF, hiI := a, ia, b, ib
		if bl < al {
			loF, loI, hiF, hiI = b, ib, a, ia
		}
		if loF.segRight(loI, l) < hiF.segRight(hiI, l) && loF.segLine(loI, r) > hiF.segLine(hiI, r) {
			pred := func(m float64) bool { return loF.segLine(loI, m) <= hiF.segLine(hiI, m) }
			// The lines cross where their difference, linear on [l, r], is zero.
			dl := hiF.segLine(hiI, l) - loF.segLine(loI, l)
			dr := loF.segLine(loI, r) - hiF.segLine(hiI, r)
			x := Refine(l, r, l+(r-l)*(dl/(dl+dr)), pred)
			cps = append(cps, x)
		}
	}
	cps = clearAndSort(cps, lo, hi)
	*scratch = cps
	f.Reset()
	ca, cb = scalarCursor{f: a}, scalarCursor{f: b}
	for _, x := range cps {
		al, ar := ca.limits(x)
		bl, br := cb.limits(x)
		f.Add(x, min(al, bl))
		f.Add(x, min(ar, br))
	}
}

// scalarCursor samples a scalar function at non-decreasing arguments.
type scalarCursor struct {
	f *Scalar
	i int
}

// rightSegment is Scalar's rightSegment for non-decreasing x.
func (c *scalarCursor) rightSegment(x float64) int {
	xs := c.f.X
	for c.i+1 <= len(xs)-2 && xs[c.i+1] <= x {
		c.i++
	}
	return c.i
}

// limits is LeftRightLimitAt for non-decreasing x.
func (c *scalarCursor) limits(x float64) (float64, float64) {
	xs := c.f.X
	n := len(xs)
	j := c.i
	for j+1 < n-1 && xs[j+1] < x {
		j++
	}
	c.i = j
	return c.f.segLimits(c.f.segmentAt(j, x), x)
}

// segLine evaluates segment i's line at x (its interpolation), for x inside it.
func (f *Scalar) segLine(i int, x float64) float64 {
	if len(f.X) == 1 {
		return f.Y[0]
	}
	x0, x1 := f.X[i], f.X[i+1]
	if x0 == x1 {
		return f.Y[i]
	}
	return interpolateScalar(x0, x1, f.Y[i], f.Y[i+1], x)
}

func appendCritical(dst, xs []float64) []float64 {
	last := math.Inf(-1)
	for _, x := range xs {
		if x > last {
			dst = append(dst, x)
			last = x
		}
	}
	return dst
}

// clearAndSort drops points outside [lo, hi], sorts and deduplicates.
func clearAndSort(cps []float64, lo, hi float64) []float64 {
	out := cps[:0]
	for _, x := range cps {
		if x >= lo && x <= hi {
			out = append(out, x)
		}
	}
	sortFloats(out)
	w := 0
	for i, x := range out {
		if i == 0 || x != out[w-1] {
			out[w] = x
			w++
		}
	}
	return out[:w]
}

// ---- composition ----

// ComposeInto sets dst to f∘g: dst(x) = f(g(x)) on g's domain. g must be
// non-decreasing and its values must lie in f's domain. scratch is reused.
func (f *Vec) ComposeInto(dst *Vec, g *Scalar, scratch *[]CPoint) {
	cps := (*scratch)[:0]
	cps = append(cps, CPoint{g.X[0], g.Y[0]})
	for i := 1; i < len(g.X); i++ {
		cps = append(cps, CPoint{g.X[i], g.Y[i]})
	}
	if len(g.X) == 1 {
		// A single point: one segment that is a point.
		cps = append(cps, CPoint{g.X[0], g.Y[0]})
	}
	// Critical points of f that fall strictly inside a tilted segment of g.
	last := math.Inf(-1)
	j := 0 // segment index of g in transposed order (g is non-decreasing in both)
	for _, y := range f.X {
		if !(y > last) {
			continue
		}
		last = y
		if len(g.X) < 2 || y < g.Y[0] || y > g.Y[len(g.Y)-1] {
			continue
		}
		// Find g's segment whose value range holds y, the way SegmentAt on the
		// transposed function does.
		for j+1 < len(g.Y)-1 && g.Y[j+1] < y {
			j++
		}
		k := j
		if k+1 < len(g.Y) && g.Y[k+1] == y && k+2 < len(g.Y) && g.Y[k+2] == y {
			k++
		}
		x0, x1, y0, y1 := g.X[k], g.X[k+1], g.Y[k], g.Y[k+1]
		if x0 != x1 && y0 != y1 && y != y0 && y != y1 {
			cps = append(cps, CPoint{interpolateScalar(y0, y1, x0, x1, y), y})
		}
	}
	sortCPoints(cps)
	*scratch = cps
	dst.Reset()
	n := len(cps)
	for i, c := range cps {
		if i == 0 || cps[i-1].X != c.X {
			var v Value
			if i > 0 && cps[i-1].Y < c.Y {
				v = f.LeftLimitAt(c.Y)
			} else {
				v = f.ValueAt(c.Y)
			}
			dst.Add(c.X, v)
		}
		if i+1 == n || cps[i+1].X != c.X {
			var v Value
			if i+1 < n && cps[i+1].Y > c.Y {
				v = f.RightLimitAt(c.Y)
			} else {
				v = f.ValueAt(c.Y)
			}
			dst.Add(c.X, v)
		}
	}
	dst.TrimRight()
}

// CPoint is a critical point of a composition: argument and inner value.
type CPoint struct{ X, Y float64 }

// ---- bisection ----

func floatToKey(v float64) uint64 {
	b := math.Float64bits(v)
	mask := uint64(int64(b)>>63) | 1<<63
	return b ^ mask
}

func keyToFloat(k uint64) float64 {
	mask := uint64(int64(^k)>>63) | 1<<63
	return math.Float64frombits(k ^ mask)
}

// InverseLowerBound returns the largest double x in [lo, hi] with pred(x),
// for a predicate that is true at lo and monotonically turns false. If pred
// is false at lo, lo is returned.
func InverseLowerBound(lo, hi float64, pred func(float64) bool) float64 {
	if lo == hi || !pred(lo) {
		return lo
	}
	if pred(hi) {
		return hi
	}
	return bisectKeys(floatToKey(lo), floatToKey(hi), pred)
}

func sortFloats(xs []float64) { slices.Sort(xs) }

func sortCPoints(cps []CPoint) {
	slices.SortFunc(cps, func(a, b CPoint) int {
		if c := cmp.Compare(a.X, b.X); c != 0 {
			return c
		}
		return cmp.Compare(a.Y, b.Y)
	})
}

// Refine returns the largest double in [lo, hi] satisfying pred, starting
// from a candidate x close to it: it gallops from x in steps of 1, 2, 4, …
// ULPs until pred changes and bisects the last step, so it costs
// O(log distance) calls instead of a whole bisection (and tries hi after a
// few steps up). pred must be monotone (true, then false) and true at lo;
// the result equals InverseLowerBound(lo, hi, pred).
func Refine(lo, hi, x float64, pred func(float64) bool) float64 {
	x = min(max(x, lo), hi)
	kl, kh, kx := floatToKey(lo), floatToKey(hi), floatToKey(x)
	if pred(x) {
		// Gallop up: a is true, find b false. After a few steps try hi: the
		// predicate often holds up to it (a flat piece).
		a, step := kx, uint64(1)
		hiFalse := false
		for {
			if kh-a <= step {
				if !hiFalse && pred(hi) {
					return hi
				}
				return bisectKeys(a, kh, pred)
			}
			if step == 8 && !hiFalse {
				if pred(hi) {
					return hi
				}
				hiFalse = true
			}
			b := a + step
			if !pred(keyToFloat(b)) {
				return bisectKeys(a, b, pred)
			}
			a, step = b, step*2
		}
	}
	// Gallop down: b is false, find a true.
	b, step := kx, uint64(1)
	for {
		if b-kl <= step {
			return bisectKeys(kl, b, pred)
		}
		a := b - step
		if pred(keyToFloat(a)) {
			return bisectKeys(a, b, pred)
		}
		b, step = a, step*2
	}
}

// bisectKeys returns the largest key in [a, b) whose double satisfies pred,
// given that a does and b does not.
func bisectKeys(a, b uint64, pred func(float64) bool) float64 {
	for a+1 < b {
		m := a + (b-a)/2
		if pred(keyToFloat(m)) {
			a = m
		} else {
			b = m
		}
	}
	return keyToFloat(a)
}
