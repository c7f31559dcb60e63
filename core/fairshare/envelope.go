package fairshare

import (
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
)

// bySuggestion builds an element's fair share by suggestion (and, when mff
// is not nil, its max fit factor by suggestion) from its fair share by fit
// factor f in one pass over f's points (docs/semantics.md#fair-share).
//
// The reference builds MFFBS per resource (transpose FSBFF_r, narrow it to
// [G_r, L_r], shift by −G_r, extend to 1), takes the pointwise minimum of
// the five and composes FSBFF with it. The same function, read backwards,
// is the left-continuous inverse of the requirement
//
//	req(x) = max_r (FSBFF_r(x) − G_r)
//
// (with L_r and G_r clamped to FSBFF_r's range as the reference does), cut
// at the cap C = min_r sup{x : FSBFF_r(x) ≤ L_r}:
//
//	MFFBS(0) = sup{x ≤ C : req(x) ≤ 0},  MFFBS(s) = min(C, inf{x : req(x) ≥ s}).
//
// Over a tilted segment of f, req is the upper envelope of at most five
// lines, so the pass visits each segment once, adds the points where the
// maximising resource changes (found analytically), and emits (req(x), f(x))
// directly: FSBS = FSBFF∘MFFBS needs no composition. Jumps of f become a flat
// piece followed by a jump (the element takes a jump only when the
// suggestion covers it), flat pieces of req become jumps, and a jump at the
// right end of f or at the cap is never taken. The points at f's own
// breakpoints carry f's values exactly; points inside segments are
// interpolated (the reference's own points there differ in the last bits).
//
// dst is reset and filled; f must have at least two points.
func bySuggestion(f *plf.Vec, guarantee, limits resource.Share, dst *plf.Vec, mff *plf.Scalar) {
	n := len(f.X)
	var b envBuilder
	b.dst, b.mff = dst, mff
	dst.Reset()
	if mff != nil {
		mff.Reset()
	}
	first, last := &f.V[0], &f.V[n-1]
	zero := false
	for r := range resource.Count {
		lo, hi := first[r], last[r]
		lim := min(max(limits[r], lo), hi)
		b.guarantee[r] = min(max(guarantee[r], lo), lim)
		b.limit[r] = lim
		if lim < hi {
			b.capped[b.nCapped] = int8(r)
			b.nCapped++
		}
		if lo == 0 && hi == 0 && b.guarantee[r] == 0 {
			// A resource the element does not use: its line is zero
			// everywhere, and one such line stands for all of them.
			if zero {
				continue
			}
			zero = true
		}
		b.active[b.nActive] = int8(r)
		b.nActive++
	}
	b.reach(b.req(&f.V[0]), f.X[0], f.V[0])
	for i := 0; i+1 < n && !b.done; i++ {
		x0, x1 := f.X[i], f.X[i+1]
		v0, v1 := &f.V[i], &f.V[i+1]
		if x0 == x1 {
			// A jump of f at x0: not taken at the right end or past the cap.
			if i+2 == n || b.exceeds(v1, &f.V[i+2]) {
				break
			}
			b.jump(x0, v0, v1)
			continue
		}
		b.segment(x0, x1, v0, v1)
		if b.capHit {
			break
		}
	}
	b.finish()
	dst.TrimRight()
	if mff != nil {
		mff.TrimRight()
	}
}

// envBuilder is the state of bySuggestion's pass.
type envBuilder struct {
	dst *plf.Vec
	mff *plf.Scalar

	guarantee, limit [resource.Count]float64
	// The resources whose limit is below the function's range (they cap the
	// fit factor), and those that count in the requirement: all but
	// duplicates of a line that is zero everywhere, which change nothing.
	capped, active   [resource.Count]int8
	nCapped, nActive int

	// The last point reached: its requirement, argument and value. Until the
	// requirement turns positive (started) it is the candidate for the value
	// at suggestion 0.
	lastS   float64
	lastX   float64
	lastV   plf.Value
	started bool

	capHit bool
	done   bool
}

// req returns max_r (v_r − g_r).
func (b *envBuilder) req(v *plf.Value) float64 {
	r := b.active[0]
	s := v[r] - b.guarantee[r]
	for _, r := range b.active[1:b.nActive] {
		s = max(s, v[r]-b.guarantee[r])
	}
	return s
}

// exceeds reports whether f is above a binding limit just right of a jump
// to v that is followed by a segment to next: then the cap is at the jump.
func (b *envBuilder) exceeds(v, next *plf.Value) bool {
	for _, r := range b.capped[:b.nCapped] {
		if v[r] > b.limit[r] || v[r] == b.limit[r] && next[r] > b.limit[r] {
			return true
		}
	}
	return false
}

func (b *envBuilder) add(s, x float64, v plf.Value) {
	b.dst.Add(s, v)
	if b.mff != nil {
		b.mff.Add(s, x)
	}
}

func (b *envBuilder) reach(s, x float64, v plf.Value) {
	b.lastS, b.lastX, b.lastV = s, x, v
}

// jump handles a jump of f at x from v0 (the last point reached) to v1.
func (b *envBuilder) jump(x float64, v0, v1 *plf.Value) {
	s1 := max(b.req(v1), b.lastS)
	if !b.started {
		if s1 <= 0 {
			b.reach(s1, x, *v1)
			return
		}
		b.started = true
		b.add(0, x, *v0)
	}
	if s1 >= 1 {
		b.add(1, x, *v0)
		b.done = true
		return
	}
	b.add(s1, x, *v0)
	b.add(s1, x, *v1)
	b.reach(s1, x, *v1)
}

// segment handles the tilted segment from (x0, v0) (the last point reached)
// to (x1, v1), cutting it at the cap and where the maximising resource
// changes.
func (b *envBuilder) segment(x0, x1 float64, v0, v1 *plf.Value) {
	tEnd := 1.0
	for _, r := range b.capped[:b.nCapped] {
		if v1[r] > b.limit[r] {
			// v0[r] ≤ lim < v1[r]: the cap is inside the segment.
			if t := (b.limit[r] - v0[r]) / (v1[r] - v0[r]); t < tEnd {
				tEnd = t
			}
			b.capHit = true
		}
	}
	tEnd = max(tEnd, 0)
	act := b.active[:b.nActive]
	var a, d [resource.Count]float64 // line r: a[r] + t·d[r], t ∈ [0, 1]
	for _, r := range act {
		a[r] = v0[r] - b.guarantee[r]
		d[r] = v1[r] - v0[r]
	}
	// The maximising line at t = 0 (ties: the steeper one).
	cur := act[0]
	for _, r := range act[1:] {
		if a[r] > a[cur] || (a[r] == a[cur] && d[r] > d[cur]) {
			cur = r
		}
	}
	t := 0.0
	for range resource.Count {
		next, nr := tEnd, int8(-1)
		for _, r := range act {
			if r == cur || d[r] <= d[cur] {
				continue
			}
			if tc := (a[cur] - a[r]) / (d[r] - d[cur]); tc < next {
				next, nr = max(tc, t), r
			}
		}
		// The requirement at next, on line cur: exact at the segment's end
		// and on a flat line (where it is the flat piece's level, so that
		// the flat piece becomes an exact jump of FSBS).
		var s float64
		switch {
		case next == 1:
			s = v1[cur] - b.guarantee[cur]
		case d[cur] == 0:
			s = a[cur]
		case next < 0.5:
			s = a[cur] + d[cur]*next
		default:
			s = (v1[cur] - b.guarantee[cur]) - d[cur]*(1-next)
		}
		b.piece(x0, x1, v0, v1, t, next, max(s, b.lastS))
		if nr < 0 || b.done {
			break
		}
		t, cur = next, nr
	}
	if !b.done && !b.capHit {
		// Rounding may leave another line a little above at the end.
		if s := b.req(v1); s > b.lastS {
			b.piece(x0, x1, v0, v1, 1, 1, s)
		}
	}
}

// paramAtRequirement returns the segment parameter t ∈ [ta, tb] where the
// requirement, linear from sa at ta to sb at tb, is s ∈ [sa, sb].
func paramAtRequirement(ta, tb, sa, sb, s float64) float64 {
	if sb <= sa {
		return tb
	}
	return min(max(ta+(tb-ta)*((s-sa)/(sb-sa)), ta), tb)
}

// piece moves along the segment from (x0, v0) to (x1, v1), from t = ta (the
// last point reached) to t = tb where the requirement is sb; the
// requirement is linear in between.
func (b *envBuilder) piece(x0, x1 float64, v0, v1 *plf.Value, ta, tb, sb float64) {
	sa := b.lastS
	if !b.started {
		if sb <= 0 {
			b.reach(sb, plf.LerpScalar(x0, x1, tb), plf.Lerp(v0, v1, tb))
			return
		}
		b.started = true
		if t0 := paramAtRequirement(ta, tb, sa, sb, 0); t0 > ta {
			b.add(0, plf.LerpScalar(x0, x1, t0), plf.Lerp(v0, v1, t0))
		} else {
			b.add(0, b.lastX, b.lastV)
		}
	}
	if sb >= 1 {
		t1 := paramAtRequirement(ta, tb, sa, sb, 1)
		b.add(1, plf.LerpScalar(x0, x1, t1), plf.Lerp(v0, v1, t1))
		b.done = true
		return
	}
	vb := plf.Lerp(v0, v1, tb)
	xb := plf.LerpScalar(x0, x1, tb)
	b.add(sb, xb, vb)
	b.reach(sb, xb, vb)
}

// finish emits the constant tail: past the last point reached the element
// stays at its value there up to suggestion 1.
func (b *envBuilder) finish() {
	if b.done {
		return
	}
	if !b.started {
		b.add(0, b.lastX, b.lastV)
	}
	b.add(1, b.lastX, b.lastV)
}
