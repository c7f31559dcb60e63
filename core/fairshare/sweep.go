package fairshare

import (
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
)

// sweepThreshold is the child count above which a pool's function is built
// by sweeping instead of sampling every child at every critical point.
const sweepThreshold = 24

// sweepChild is a child's state during a sweep: the point its current
// segment starts at and that segment's slope in the scaled argument.
type sweepChild struct {
	p     int
	slope resource.Share
}

// sweepSum builds the sum of the children's scaled functions at the sorted
// critical points cps (owner idx[k] for point k) in O(points + children)
// amortised, instead of sampling every child at every point: the running sum
// advances along the summed slope and changes by the owner's jump at its
// critical point. Every len(curs) points the sum is recomputed exactly, which
// bounds rounding drift; the result is clamped to stay non-decreasing.
//
// improved selects the improved layout (one unit of fit factor per critical
// point, children before the owner at their right limits); otherwise points
// with equal arguments are merged and every child switches there.
func (u *Updater) sweepSum(f *plf.Vec, curs []scaledCursor, cps []float64, idx []int32, improved bool) {
	st := u.sweep[:0]
	for range curs {
		st = append(st, sweepChild{p: -1})
	}
	u.sweep = st
	var sum, slope resource.Share
	for j := range curs {
		sum = sum.Add(curs[j].f.V[0])
	}
	prevS := 0.0
	var last resource.Share
	sinceSync := 0
	ff := 0.0
	n := len(cps)
	for k := 0; k < n; {
		s := cps[k]
		if s != prevS {
			sum = sum.Add(slope.Mul(s - prevS))
			prevS = s
		}
		left := sum.Max(last)
		// Owners switching here: one in improved mode, all at s otherwise.
		end := k + 1
		if !improved {
			for end < n && cps[end] == s {
				end++
			}
		}
		for m := k; m < end; m++ {
			j := idx[m]
			c := &curs[j]
			l, r := c.limitsAt(s)
			sum = sum.Add(r.Sub(l))
			slope = slope.Sub(st[j].slope)
			st[j].slope = c.slopeRightOf(s)
			slope = slope.Add(st[j].slope)
		}
		sinceSync += end - k
		if sinceSync >= len(curs) {
			sinceSync = 0
			sum = u.exactSum(curs, s, idx[end-1], improved)
		}
		right := sum.Max(left)
		if improved {
			f.Add(ff, left)
			f.Add(ff, right)
			ff++
		} else {
			f.Add(s, left)
			f.Add(s, right)
		}
		last = right
		k = end
	}
}

// exactSum is the children's sum just right of the owner's switch at s.
func (u *Updater) exactSum(curs []scaledCursor, s float64, owner int32, improved bool) resource.Share {
	var sum resource.Share
	for j := range curs {
		l, r := curs[j].limitsAt(s)
		if !improved || int32(j) <= owner {
			sum = sum.Add(r)
		} else {
			sum = sum.Add(l)
		}
	}
	return sum
}

// limitsAt is limits for arguments that do not decrease between calls.
func (c *scaledCursor) limitsAt(x float64) (plf.Value, plf.Value) { return c.limits(x) }

// slopeRightOf returns the slope of the segment just right of x (after any
// jump at x), or zero beyond the last point.
func (c *scaledCursor) slopeRightOf(x float64) resource.Share {
	f := c.f
	n := len(f.X)
	i := c.i
	for i+1 < n && c.bound(i+1) <= x {
		i++
	}
	if i+1 >= n {
		return resource.Share{}
	}
	x0, x1 := c.bound(i), c.bound(i+1)
	if x1 == x0 {
		return resource.Share{}
	}
	return f.V[i+1].Sub(f.V[i]).Mul(1 / (x1 - x0))
}
