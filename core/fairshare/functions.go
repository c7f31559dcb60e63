package fairshare

import (
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// compressEpsilon bounds the error of function compression (spec.md §2.8).
const compressEpsilon = 1e-15

// fnKey is everything an element's fair-share functions are built from.
type fnKey struct {
	usage, demand, limits resource.Share
	strong, integral      resource.Share
	children              uint64 // signature of the children's functions and weights
	flags                 uint8
}

// prepare builds the element's fair-share functions, children first
// (spec.md §2.8; the reference's PrepareFairShareFunctions). Functions whose
// inputs are unchanged since they were built are kept.
func (u *Updater) prepare(id tree.ID) {
	e := &u.el[id]
	if e.kind != tree.KindOperation {
		for _, c := range u.children(id) {
			u.prepare(c)
		}
	}
	k := u.key(id)
	if e.built && e.key == k {
		return
	}
	u.prepareOne(id)
	e.key, e.built = k, true
	u.gen++
	e.fnGen = u.gen
}

func (u *Updater) key(id tree.ID) fnKey {
	e := &u.el[id]
	a := &e.attrs
	k := fnKey{usage: a.UsageShare, demand: a.DemandShare, limits: a.LimitsShare,
		strong: a.StrongGuaranteeShare, integral: a.ProposedIntegralShare}
	if u.cfg.EnableImprovedFitFactor {
		k.flags |= 1
	}
	if u.cfg.EnableStepFunctionForGangOperations && e.gang {
		k.flags |= 2
	}
	if e.kind == tree.KindOperation {
		return k
	}
	kids := u.children(id)
	if u.t.Pool(id).Mode == tree.ModeFIFO {
		k.flags |= 4
		kids = u.fifoOrder(id)
	}
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		h ^= v
		h *= 1099511628211
		h ^= h >> 29
	}
	for _, c := range kids {
		mix(uint64(c))
		mix(u.el[c].fnGen)
		mix(math.Float64bits(u.el[c].attrs.Weight))
	}
	k.children = h
	return k
}

func (u *Updater) prepareOne(id tree.ID) {
	e := &u.el[id]
	switch {
	case e.kind == tree.KindOperation:
		u.operationFSBFF(id)
	case u.t.Pool(id).Mode == tree.ModeFIFO:
		u.fifoFSBFF(id)
	default:
		u.normalFSBFF(id)
	}
	u.maxFitFactorBySuggestion(id)
	e.fsbff.ComposeInto(&u.scratchVec, &e.mffbs, &u.cpoints)
	compress(&e.fsbs, &u.scratchVec, compressEpsilon)
}

// operationFSBFF: on [0,1] usage is water-filled, on [1,2] the share grows
// linearly from usage to demand; a gang under the step-function option is
// all or nothing at 1 (spec.md §2.8).
func (u *Updater) operationFSBFF(id tree.ID) {
	e := &u.el[id]
	f := &e.fsbff
	f.Reset()
	a := &e.attrs
	if u.cfg.EnableStepFunctionForGangOperations && e.gang {
		var zero resource.Share
		f.Add(0, zero)
		f.Add(1, zero)
		f.Add(1, a.DemandShare)
		f.Add(2, a.DemandShare)
		return
	}
	maxUsage := a.UsageShare.MaxComponent()
	if maxUsage == 0 {
		f.Add(0, resource.Share{})
		f.Add(1, resource.Share{})
	} else {
		sorted := a.UsageShare
		slices.Sort(sorted[:])
		f.Add(0, resource.Share{})
		prev := 0.0
		for _, us := range sorted {
			ff := us / maxUsage
			if ff > prev {
				f.Add(ff, resource.Uniform(us).Min(a.UsageShare))
				prev = ff
			}
		}
	}
	f.Add(1, a.UsageShare)
	f.Add(2, a.DemandShare)
}

// fifoFSBFF concatenates the children's fair share by suggestion in FIFO
// order, child k occupying fit factors [k, k+1] (spec.md §2.8).
func (u *Updater) fifoFSBFF(id tree.ID) {
	e := &u.el[id]
	f := &e.fsbff
	f.Reset()
	kids := u.fifoOrder(id)
	if len(kids) == 0 {
		f.Add(0, resource.Share{})
		f.Add(1, resource.Share{})
		return
	}
	var prefix resource.Share
	for k, c := range kids {
		g := &u.el[c].fsbs
		shift := float64(k)
		for i, x := range g.X {
			f.Add(x+shift, g.V[i].Add(prefix))
		}
		prefix = prefix.Add(g.RightValue())
	}
}

// scaledCursor samples a child's fair share by suggestion at x·scale, with
// the function extended to the right by its last value: the child's part of
// its parent's fit factor (spec.md §2.8).
type scaledCursor struct {
	f     *plf.Vec
	scale float64
	i     int
}

// bound returns point i's argument in the scaled function.
func (c *scaledCursor) bound(i int) float64 { return c.f.X[i] / c.scale }

func (c *scaledCursor) limits(x float64) (plf.Value, plf.Value) {
	f := c.f
	n := len(f.X)
	if n == 1 || x >= c.bound(n-1) {
		v := f.V[n-1]
		if x == c.bound(n-1) && n >= 2 && f.X[n-2] == f.X[n-1] {
			return f.V[n-2], v
		}
		return v, v
	}
	for c.i+1 < n-1 && c.bound(c.i+1) < x {
		c.i++
	}
	i := c.i
	if i+2 < n && f.X[i+1] == f.X[i+2] && c.bound(i+1) == x {
		return f.V[i+1], f.V[i+2]
	}
	x0, x1 := c.bound(i), c.bound(i+1)
	if x0 == x1 {
		return f.V[i], f.V[i+1]
	}
	v := interpolate(x0, x1, f.V[i], f.V[i+1], x)
	return v, v
}

// limitsAt is limits without a cursor (random access).
func scaledLimits(f *plf.Vec, scale, x float64) (plf.Value, plf.Value) {
	c := scaledCursor{f: f, scale: scale}
	n := len(f.X)
	if n > 2 {
		// Binary search for the first point j ≥ 1 with bound(j) ≥ x.
		lo, hi := 1, n-1
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if c.bound(mid) < x {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		c.i = lo - 1
	}
	return c.limits(x)
}

func interpolate(x0, x1 float64, v0, v1 plf.Value, x float64) plf.Value {
	t := (x - x0) / (x1 - x0)
	var r plf.Value
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

// minChildWeight is the smallest child weight above Epsilon.
func (u *Updater) minChildWeight(id tree.ID) float64 {
	m := math.MaxFloat64
	for _, c := range u.children(id) {
		if w := u.el[c].attrs.Weight; w > resource.Epsilon {
			m = min(m, w)
		}
	}
	return m
}

// normalFSBFF sums the children's weighted fair share by suggestion
// (spec.md §2.8); in the improved mode the children's jumps are laid out one
// child at a time, each critical point taking one unit of the fit factor
// (spec.md §2.9).
func (u *Updater) normalFSBFF(id tree.ID) {
	e := &u.el[id]
	f := &e.fsbff
	f.Reset()
	kids := u.children(id)
	e.cpS, e.cpIdx = e.cpS[:0], e.cpIdx[:0]
	if len(kids) == 0 {
		f.Add(0, resource.Share{})
		f.Add(1, resource.Share{})
		return
	}
	wmin := u.minChildWeight(id)
	curs := u.cursors[:0]
	for _, c := range kids {
		curs = append(curs, scaledCursor{f: &u.el[c].fsbs, scale: u.el[c].attrs.Weight / wmin})
	}
	u.cursors = curs

	if u.cfg.EnableImprovedFitFactor {
		e.cpS, e.cpIdx = u.criticalPoints(curs, e.cpS, e.cpIdx)
		if len(curs) > sweepThreshold {
			u.sweepSum(f, curs, e.cpS, e.cpIdx, true)
			return
		}
		ff := 0.0
		for k, s := range e.cpS {
			pi := int(e.cpIdx[k])
			var left, right resource.Share
			for j := range curs {
				l, r := curs[j].limits(s)
				switch {
				case j < pi:
					left, right = left.Add(r), right.Add(r)
				case j > pi:
					left, right = left.Add(l), right.Add(l)
				default:
					left, right = left.Add(l), right.Add(r)
				}
			}
			f.Add(ff, left)
			f.Add(ff, right)
			ff++
		}
		return
	}

	cps := u.cps[:0]
	for j := range curs {
		c := &curs[j]
		last := c.bound(0)
		cps = append(cps, last)
		for i := 1; i < len(c.f.X); i++ {
			if b := c.bound(i); b > last {
				cps = append(cps, b)
				last = b
			}
		}
		if last < 1 {
			cps = append(cps, 1)
		}
	}
	slices.Sort(cps)
	cps = slices.Compact(cps)
	u.cps = cps
	if len(curs) > sweepThreshold {
		u.sweepClassic(f, curs)
		return
	}
	for _, x := range cps {
		if x > 1 {
			break
		}
		var left, right resource.Share
		for j := range curs {
			l, r := curs[j].limits(x)
			left, right = left.Add(l), right.Add(r)
		}
		f.Add(x, left)
		f.Add(x, right)
	}
}

// maxFitFactorBySuggestion builds MFFBS from FSBFF, the limits share and the
// guarantee share (spec.md §2.8): per resource the transposed FSBFF narrowed
// to [guarantee, limit] and shifted by the guarantee; then the minimum.
func (u *Updater) maxFitFactorBySuggestion(id tree.ID) {
	e := &u.el[id]
	guarantee := e.attrs.StrongGuaranteeShare.Add(e.attrs.ProposedIntegralShare)
	for r := range resource.Count {
		comp := &u.comp
		comp.ExtractComponent(&e.fsbff, r)
		lo := comp.Y[0]
		hi := comp.Y[len(comp.Y)-1]
		limit := min(max(e.attrs.LimitsShare[r], lo), hi)
		g := min(max(guarantee[r], lo), limit)
		comp.Transpose()
		m := &u.mff[r]
		m.NarrowTo(comp, g, limit)
		m.TrimLeft()
		m.ShiftArgument(-g)
		m.ExtendRight(1)
		m.TrimRight()
		comp.Transpose()
	}
	// A component that is constant at the largest fit factor (a resource the
	// element does not use) never lowers the minimum: skip it.
	top := e.fsbff.RightBound()
	acc, other := &u.mffAcc[0], &u.mffAcc[1]
	first := true
	for r := range resource.Count {
		m := &u.mff[r]
		if r < resource.Count-1 || !first {
			if len(m.Y) == 2 && m.Y[0] == top && m.Y[1] == top {
				continue
			}
		}
		if first {
			acc.CopyFrom(m)
			first = false
			continue
		}
		other.PointwiseMin(acc, m, &u.cps)
		acc, other = other, acc
	}
	e.mffbs.CopyFrom(acc)
}

// compress copies src into dst merging segments that stay within eps of the
// original in every component (a greedy cone test, spec.md §2.8).
func compress(dst, src *plf.Vec, eps float64) {
	dst.Reset()
	n := len(src.X)
	if n <= 2 {
		for i := range src.X {
			dst.Add(src.X[i], src.V[i])
		}
		return
	}
	type seg struct{ dx, dy float64 }
	cross := func(a, b seg) float64 { return a.dx*b.dy - b.dx*a.dy }
	start := 0
	end := 1
	var top, bottom [resource.Count]seg
	setBounds := func(s, e int) {
		dx := src.X[e] - src.X[s]
		for r := range resource.Count {
			dy := src.V[e][r] - src.V[s][r]
			top[r] = seg{dx, dy + eps}
			bottom[r] = seg{dx, dy - eps}
		}
	}
	setBounds(0, 1)
	dst.Add(src.X[0], src.V[0])
	for j := 1; j+1 < n; j++ {
		next := j + 1
		dx := src.X[next] - src.X[start]
		ok := true
		for r := range resource.Count {
			dy := src.V[next][r] - src.V[start][r]
			acc := seg{dx, dy}
			ct, cb := seg{dx, dy + eps}, seg{dx, dy - eps}
			if cross(ct, top[r]) > 0 {
				top[r] = ct
			}
			if cross(cb, bottom[r]) < 0 {
				bottom[r] = cb
			}
			if cross(bottom[r], acc) <= 0 || cross(top[r], acc) >= 0 {
				ok = false
				break
			}
		}
		if ok {
			end = next
			continue
		}
		dst.Add(src.X[end], src.V[end])
		start, end = j, next
		setBounds(start, end)
	}
	dst.Add(src.X[end], src.V[end])
}

// criticalPoints appends every child's critical points (its left bound, each
// distinct right end of a segment, and 1 where the function is extended),
// sorted by argument and then by child, with the child that owns each.
func (u *Updater) criticalPoints(curs []scaledCursor, dstS []float64, dstIdx []int32) ([]float64, []int32) {
	cps := u.cps[:0]
	idx := u.cpIdxScratch[:0]
	for j := range curs {
		c := &curs[j]
		n := len(c.f.X)
		last := c.bound(0)
		cps, idx = append(cps, last), append(idx, int32(j))
		for i := 1; i < n; i++ {
			if b := c.bound(i); b > last {
				cps, idx = append(cps, b), append(idx, int32(j))
				last = b
			}
		}
		if last < 1 {
			cps, idx = append(cps, 1), append(idx, int32(j))
		}
	}
	order := u.order[:0]
	for i := range cps {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int {
		if cps[a] != cps[b] {
			if cps[a] < cps[b] {
				return -1
			}
			return 1
		}
		return int(idx[a] - idx[b])
	})
	for _, o := range order {
		dstS = append(dstS, cps[o])
		dstIdx = append(dstIdx, idx[o])
	}
	u.cps, u.cpIdxScratch, u.order = cps, idx, order
	return dstS, dstIdx
}

// sweepClassic builds a wide pool's classic FSBFF by sweeping.
func (u *Updater) sweepClassic(f *plf.Vec, curs []scaledCursor) {
	u.tmpS, u.tmpIdx = u.criticalPoints(curs, u.tmpS[:0], u.tmpIdx[:0])
	u.sweepSum(f, curs, u.tmpS, u.tmpIdx, false)
}
