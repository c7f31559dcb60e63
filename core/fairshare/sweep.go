package fairshare

import (
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
)

// sweepChild is one child's state while a pool's fair share by fit factor
// is built: a cursor on the child's fair share by suggestion, scaled by its
// weight (docs/semantics.md#fair-share: at the pool's argument s the child gets suggestion
// s·w/w_min, so the child's point x sits at x/scale).
type sweepChild struct {
	fn    *plf.Vec
	scale float64
	// next is the index of the child's next critical point (the first of
	// its points whose scaled argument is nextS); seg is the first point of
	// the segment the child is on, which starts at segS.
	next  int
	seg   int
	segS  float64
	nextS float64
	slope resource.Share
	done  bool
	// Exact mode: whether the child's value changes with the argument.
	moving bool
}

func (c *sweepChild) bound(i int) float64 { return c.fn.X[i] / c.scale }

// valueAt returns the child's value at s ∈ [segS, nextS], on its current
// segment.
func (c *sweepChild) valueAt(s float64) plf.Value {
	f := c.fn
	i := c.seg
	if i+1 >= len(f.X) {
		return f.V[len(f.V)-1]
	}
	x0, x1 := c.segS, c.nextS
	if s >= x1 {
		return f.V[i+1]
	}
	if x0 == x1 {
		return f.V[i]
	}
	return plf.Lerp(&f.V[i], &f.V[i+1], (s-x0)/(x1-x0)) // plf.Interpolate without copies
}

// event processes the child's critical point at nextS: it returns the left
// and right limits there and whether they are different points (a jump),
// moves the child onto its next segment and sets its slope and next
// critical point. A function that ends before 1 is extended by its last
// value, with one more critical point at 1 (where the limits are nil).
func (c *sweepChild) event() (l, r *plf.Value, jump bool) {
	f := c.fn
	n := len(f.X)
	s := c.nextS
	if c.next >= n {
		// The extension at 1.
		c.done = true
		c.nextS = math.Inf(1)
		return nil, nil, false
	}
	i := c.next
	j := i
	x1 := 0.0
	for j+1 < n {
		if x1 = c.bound(j + 1); x1 != s {
			break
		}
		j++
	}
	l, r, jump = &f.V[i], &f.V[j], i != j
	c.seg, c.segS = j, s
	if j+1 < n {
		c.slope = f.V[j+1].Sub(f.V[j]).Mul(1 / (x1 - s))
		c.next = j + 1
		c.nextS = x1
		return l, r, jump
	}
	c.slope = resource.Share{}
	c.next = n
	if s < 1 {
		c.nextS = 1
	} else {
		c.done = true
		c.nextS = math.Inf(1)
	}
	return l, r, jump
}

// syncEvery·C critical points pass between exact recomputations of the
// running sum of a pool's C children. With the compensated slope the drift
// stays far below fitTolerance: at most 0.18 ulps per child at 1 on the
// benchmark trees (seeds 1 and 2, 10,000 pools and 100,000 operations).
const syncEvery = 8

// exactChildren is the largest pool (in children) whose fair share by fit
// factor carries the children's exact sums: at every critical point the
// children's values are added up, left to right, as the reference does.
// That costs O(C) per point; larger pools carry the sum along instead.
// Small pools are where exact sums matter most: equal shares, limits and
// guarantees meet at round numbers there, and the scheduler compares usage
// with fair share exactly.
const exactChildren = 24

// sweepKey is a heap entry: a child's next critical point.
type sweepKey struct {
	arg   float64
	child int32
}

// less orders critical points by argument, then by child.
func (a sweepKey) less(b sweepKey) bool {
	return a.arg < b.arg || (a.arg == b.arg && a.child < b.child)
}

// siftDown restores the heap property of w.heap from position i.
func (w *worker) siftDown(i int) {
	h := w.heap
	n := len(h)
	x := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n {
			// Without a branch: which child is less follows no pattern.
			a, b := &h[l], &h[r]
			m += int(b2u(b.arg < a.arg) | (b2u(b.arg == a.arg) & b2u(b.child < a.child)))
		}
		if !h[m].less(x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}

// slopeSum is the children's summed slope: a compensated (Neumaier) sum per
// resource, and the number of children with a nonzero slope, which makes
// the sum exactly zero when every child is flat.
type slopeSum struct {
	sum, comp resource.Share
	nonFlat   [resource.Count]int32
}

func neumaier(hi, lo *float64, x float64) {
	t := *hi + x
	if math.Abs(*hi) >= math.Abs(x) {
		*lo += (*hi - t) + x
	} else {
		*lo += (x - t) + *hi
	}
	*hi = t
}

// swap replaces a child's slope old by new.
func (ss *slopeSum) swap(old, new *resource.Share) {
	for k := range resource.Count {
		o, n := old[k], new[k]
		if o == n {
			continue
		}
		if o != 0 {
			ss.nonFlat[k]--
			neumaier(&ss.sum[k], &ss.comp[k], -o)
		}
		if n != 0 {
			ss.nonFlat[k]++
			neumaier(&ss.sum[k], &ss.comp[k], n)
		}
		if ss.nonFlat[k] == 0 {
			ss.sum[k], ss.comp[k] = 0, 0
		}
	}
}

// at returns the summed slope of resource k.
func (ss *slopeSum) at(k int) float64 { return ss.sum[k] + ss.comp[k] }

// sweepFSBFF builds a fair-share-mode pool's fair share by fit factor f from
// its children's fair shares by suggestion (docs/semantics.md#fair-share). The
// children's critical points are merged by a heap keyed by (argument,
// child). A pool of at most exactChildren children is swept by sweepExact,
// which adds the children's values at every point; a larger one by
// sweepSlope, which carries the sum along by its slope.
//
// In the improved mode every critical point takes one unit of the fit
// factor, children before the owner at their right limits (critSuggestion
// and critOwner receive the points' suggestions and owners); otherwise
// points with equal arguments are merged, every child switches there, and
// points beyond 1 are dropped.
//
// With w.piped (a split pool, the other workers idle) a large pool is swept
// on two goroutines (sweepSlopePiped, pipe.go), with the same result.
//
// Sampling every child at every critical point (the reference's way, exact
// sums) costs O(P·C): 65 million child evaluations per update of the
// 100,000-operation benchmark tree against 0.7 million critical points.
func (w *worker) sweepFSBFF(f *plf.Vec, kids []plf.Vec, weights []float64, wmin float64, improved bool, critSuggestion []float64, critOwner []int32) ([]float64, []int32) {
	sum := w.startSweep(kids, weights, wmin)
	if len(kids) <= exactChildren {
		return w.sweepExact(f, sum, improved, critSuggestion, critOwner)
	}
	if w.piped {
		return w.sweepSlopePiped(f, sum, improved, critSuggestion, critOwner)
	}
	return w.sweepSlope(f, sum, improved, critSuggestion, critOwner)
}

// startSweep puts every child at its first critical point (w.sweep, w.heap)
// and returns the children's sum there: their first values added left to
// right.
func (w *worker) startSweep(kids []plf.Vec, weights []float64, wmin float64) resource.Share {
	st := w.sweep[:0]
	h := w.heap[:0]
	var sum resource.Share
	for j := range kids {
		fs := &kids[j]
		st = append(st, sweepChild{fn: fs, scale: weights[j] / wmin})
		sc := &st[j]
		sc.nextS = sc.bound(0)
		sc.segS = sc.nextS
		sum = sum.Add(fs.V[0])
		h = append(h, sweepKey{sc.nextS, int32(j)})
	}
	w.sweep, w.heap = st, h
	for i := len(h)/2 - 1; i >= 0; i-- {
		w.siftDown(i)
	}
	return sum
}

// advanceSweep moves child c, the heap's top, whose critical point was just
// processed, to its next critical point, or out of the heap when it has
// none left.
func (w *worker) advanceSweep(c *sweepChild) {
	if c.done {
		end := len(w.heap) - 1
		w.heap[0] = w.heap[end]
		w.heap = w.heap[:end]
	} else {
		w.heap[0].arg = c.nextS
	}
	if len(w.heap) > 0 {
		w.siftDown(0)
	}
}

// sweepOut appends the sweep's points to the pool's function: at the
// suggestion s (classic mode) or at the next fit factor 0, 1, 2, …
// (improved mode), the value left of the point and, when a child's value
// jumped there, the value right of it.
type sweepOut struct {
	f        *plf.Vec
	improved bool
	ff       float64 // the next fit factor (improved mode)
	last     resource.Share
}

// NB: the points are appended as plf.Vec.Add would, inlined for the two
// cases that arise (x is above the last point's, then equal to it), which
// leave out most of its tests.
func (o *sweepOut) add(s float64, left, sum resource.Share, moved bool) {
	x := s
	if o.improved {
		x = o.ff
		o.ff++
	}
	f := o.f
	// f.Add(x, left): a second horizontal segment extends the first.
	if n := len(f.X); n > 1 && f.X[n-2] != f.X[n-1] && eqShare(&f.V[n-1], &left) && eqShare(&f.V[n-2], &f.V[n-1]) {
		f.X[n-1] = x
	} else {
		f.X = append(f.X, x)
		f.V = append(f.V, left)
	}
	o.last = left
	if moved {
		// Otherwise the right limit is left (and adding it again is a no-op).
		o.last = sum.Max(left)
		// f.Add(x, o.last): a repeated point is dropped, a second vertical
		// segment extends the first.
		n := len(f.X)
		switch {
		case eqShare(&f.V[n-1], &o.last):
		case n > 1 && f.X[n-2] == x:
			f.V[n-1] = o.last
		default:
			f.X = append(f.X, x)
			f.V = append(f.V, o.last)
		}
	}
}

// eqShare is *a == *b (as plf's eq).
func eqShare(a, b *resource.Share) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sweepExact is sweepFSBFF for a pool of at most exactChildren children:
// the sum at every point is the children's values added left to right, as
// the reference does (O(C) per point, on cached values: only moving
// children are interpolated again). sum is the children's sum at the start.
func (w *worker) sweepExact(f *plf.Vec, sum resource.Share, improved bool, critSuggestion []float64, critOwner []int32) ([]float64, []int32) {
	// vals: every child's value at the current argument; mov: the children
	// whose value changes with the argument, in any order.
	vals := slices.Grow(w.vals[:0], len(w.sweep))[:len(w.sweep)]
	for j := range w.sweep {
		vals[j] = w.sweep[j].fn.V[0]
	}
	mov := w.mov[:0]
	out := sweepOut{f: f, improved: improved}
	prevS := 0.0
	for len(w.heap) > 0 {
		j := w.heap[0].child
		c := &w.sweep[j]
		s := c.nextS
		if !improved && s > 1 {
			break
		}
		if s != prevS {
			if len(mov) > 0 {
				for _, k := range mov {
					vals[k] = w.sweep[k].valueAt(s)
				}
				sum = sumValues(vals)
			}
			prevS = s
		}
		left := sum.Max(out.last)
		moved := false // the sum changed at s
		// Owners switching here: one in the improved mode, every child with
		// a critical point at s otherwise.
		for {
			_, r, jump := c.event()
			if jump {
				vals[j] = *r
				moved = true
			}
			if m := c.slope != (resource.Share{}); m != c.moving {
				c.moving = m
				if m {
					mov = append(mov, j)
				} else {
					k := slices.Index(mov, j)
					mov[k] = mov[len(mov)-1]
					mov = mov[:len(mov)-1]
				}
			}
			w.advanceSweep(c)
			if improved {
				critSuggestion, critOwner = append(critSuggestion, s), append(critOwner, j)
				break
			}
			if len(w.heap) == 0 {
				break
			}
			j = w.heap[0].child
			c = &w.sweep[j]
			if c.nextS != s {
				break
			}
		}
		if moved {
			sum = sumValues(vals)
		}
		out.add(s, left, sum, moved)
	}
	w.vals, w.mov = vals, mov
	return critSuggestion, critOwner
}

// sumValues adds vals up left to right.
func sumValues(vals []plf.Value) (sum resource.Share) {
	for j := range vals {
		v := &vals[j]
		for r := range sum {
			sum[r] += v[r]
		}
	}
	return sum
}

// sweepSlope is sweepFSBFF for a pool of more than exactChildren children:
// the sum is carried along between points by its slope, changing at a
// critical point by its owner's jump and slope: O(P log C) for P critical
// points. sum is the children's sum at the start.
//
// NB: the summed slope is a compensated sum (slopeSum): a child's
// near-vertical segment has a huge slope, and adding and later subtracting
// it in a plain running sum would cancel the others' slopes. A component in
// which every child is flat has slope exactly zero, and flat pieces of the
// sum stay exactly flat (they become exact jumps of the max fit factor by
// suggestion, and the parent's layout of jumps depends on them,
// docs/semantics.md#fair-share). The running sum is recomputed exactly every syncEvery·C points, in
// the moving components only (a resync would put a step into a flat piece),
// and clamped to stay non-decreasing. The values at the critical points are
// therefore the exact sums only up to rounding drift; the top-down pass
// allows for that (fitFactorFor).
func (w *worker) sweepSlope(f *plf.Vec, sum resource.Share, improved bool, critSuggestion []float64, critOwner []int32) ([]float64, []int32) {
	var slope slopeSum
	out := sweepOut{f: f, improved: improved}
	prevS := 0.0
	sinceSync := 0
	for len(w.heap) > 0 {
		j := w.heap[0].child
		c := &w.sweep[j]
		s := c.nextS
		if !improved && s > 1 {
			break
		}
		if s != prevS {
			for r := range resource.Count {
				if slope.nonFlat[r] != 0 {
					sum[r] += slope.at(r) * (s - prevS)
				}
			}
			prevS = s
		}
		left := sum.Max(out.last)
		moved := false // the sum changed at s
		// Owners switching here: one in the improved mode, every child with
		// a critical point at s otherwise.
		for {
			old := c.slope
			l, r, jump := c.event()
			if jump {
				sum = sum.Add((*r).Sub(*l))
				moved = true
			}
			slope.swap(&old, &c.slope)
			w.advanceSweep(c)
			sinceSync++
			if improved {
				critSuggestion, critOwner = append(critSuggestion, s), append(critOwner, j)
				break
			}
			if len(w.heap) == 0 {
				break
			}
			j = w.heap[0].child
			c = &w.sweep[j]
			if c.nextS != s {
				break
			}
		}
		if sinceSync >= syncEvery*len(w.sweep) {
			// Resynchronise the moving components; a flat one keeps its
			// value, or the resync would put a step into a flat piece.
			sinceSync = 0
			ex := w.exactSum(s)
			for k := range resource.Count {
				if slope.nonFlat[k] != 0 {
					sum[k] = ex[k]
				}
			}
			moved = true
		}
		out.add(s, left, sum, moved)
	}
	return critSuggestion, critOwner
}

// exactSum is the children's sum at s on their current segments (those
// whose critical point at s was processed are past it).
func (w *worker) exactSum(s float64) (sum resource.Share) {
	for j := range w.sweep {
		sum = sum.Add(w.sweep[j].valueAt(s))
	}
	return sum
}

// b2u is 1 for true and 0 for false; the compiler makes it a SETcc.
func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
