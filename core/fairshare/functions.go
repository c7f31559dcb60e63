package fairshare

import (
	"math"
	"runtime"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// compressEpsilon bounds the error of function compression (docs/semantics.md#fair-share).
const compressEpsilon = 1e-15

// fsbffKey is everything a pool's fair share by fit factor is built from
// besides what kidsDirty tracks (its operation children).
type fsbffKey struct {
	children uint64 // signature of the pool children's functions and weights
	flags    uint8
}

// fsbsKey is everything a fair share by suggestion is built from besides the
// fair share by fit factor (identified by its generation).
type fsbsKey struct {
	fsbffGen  uint64
	guarantee resource.Share
	limits    resource.Share
	flags     uint8
}

// Key flags.
const (
	flagImproved = 1 << iota
	flagFIFO
)

// prepare builds a pool's fair-share functions, pool children first
// (docs/semantics.md#fair-share; the reference's PrepareFairShareFunctions), and before them
// the functions of its operation children that updateOperations marked.
// Functions whose inputs are unchanged since they were built are kept: the
// fair share by fit factor is keyed on the children (fsbffKey, kidsDirty), the
// fair share by suggestion on that and the guarantee and limits (fsbsKey).
func (u *Updater) prepare(w *worker, p int32) {
	u.prepareKids(w, p)
	u.preparePool(w, p)
}

// prepareKids prepares pool p's pool children.
func (u *Updater) prepareKids(w *worker, p int32) {
	for _, c := range u.kids(p) {
		u.prepare(w, c)
	}
}

// preparePool builds pool p's own functions (and its operation children's),
// its pool children's being built.
func (u *Updater) preparePool(w *worker, p int32) {
	u.prepareOperations(w, p)
	ps := &u.pools[p]
	id := ps.id
	a := &u.attrs[id]
	u.prepareFSBFF(w, p)
	k := fsbsKey{fsbffGen: ps.fsbffGen, guarantee: a.StrongGuaranteeShare.Add(a.ProposedIntegralShare), limits: a.LimitsShare}
	if u.cfg.EnableImprovedFitFactor {
		k.flags |= flagImproved
	}
	e := u.nodeOf(id)
	if e.built && ps.fsbsKey == k {
		return
	}
	var mff *plf.Scalar
	if !u.cfg.EnableImprovedFitFactor {
		mff = &ps.mffbs
	}
	bySuggestion(&ps.fsbff, k.guarantee, k.limits, &w.scratchVec, mff)
	compress(u.fsbs(id), &w.scratchVec, compressEpsilon)
	ps.fsbsKey = k
	e.built = true
	e.fnGen = w.nextGen()
}

// prepareAll runs the integral passes (docs/semantics.md#integral-guarantees, integral.go) and
// builds every pool's functions, in three parallel phases (parallel.go):
//
//  1. the functions below the integral pools that have no integral
//     ancestor, and their fair shares by fit factor, which the integral
//     passes read (prepareTemporary). Nothing there depends on the
//     integral shares the passes set, which change only the integral
//     pools' and their ancestors' guarantees (and the keys rebuild whatever
//     a nested integral pool changes);
//  2. the integral passes on the calling goroutine, while the others build
//     the tasks' subtrees that hold no integral pool and hang below none
//     (plainTasks): the passes neither read nor write those;
//  3. the other tasks' subtrees.
//
// Then the split pools bottom-up.
func (u *Updater) prepareAll() {
	u.run(taskPrepareInt, u.intTasks)
	u.runWhile(taskPrepare, u.plainTasks, u.integralPasses)
	u.run(taskPrepare, u.intAffected)
	w := u.worker0()
	// The other workers are idle now: a large split pool's sweep takes a
	// second goroutine (sweepSlopePiped).
	w.piped = runtime.GOMAXPROCS(0) >= 2
	defer func() { w.piped = false }()
	for i := len(u.prePools) - 1; i >= 0; i-- {
		if p := u.prePools[i]; u.pools[p].split {
			u.preparePool(w, p)
		}
	}
}

// prepareTemporary builds pool p's functions under a temporary guarantee or
// limits share (docs/semantics.md#integral-guarantees) and returns that fair share by suggestion,
// valid until the next update. The pool's own fair share by suggestion is
// left as it is; its fair share by fit factor is the one it keeps.
func (u *Updater) prepareTemporary(p int32, guarantee, limits resource.Share) *plf.Vec {
	w := u.worker0()
	u.prepareKids(w, p)
	u.prepareOperations(w, p)
	u.prepareFSBFF(w, p)
	ps := &u.pools[p]
	bySuggestion(&ps.fsbff, guarantee, limits, &w.scratchVec, nil)
	// In the arena if it fits (append moves it out otherwise).
	a, used := &u.tmpArena, u.tmpUsed
	ps.tmpFsbs = plf.Vec{X: a.X[used:used:cap(a.X)], V: a.V[used:used:cap(a.V)]}
	compress(&ps.tmpFsbs, &w.scratchVec, compressEpsilon)
	n := len(ps.tmpFsbs.X)
	u.tmpNeed += n
	if used+n <= cap(a.X) {
		u.tmpUsed += n
	}
	return &ps.tmpFsbs
}

// sizeTmpArena makes room for the next update's temporary functions: what
// this update's took, or twice the integral pools' own fair shares by
// suggestion (which have about as many points), whichever is more. It
// allocates only when that grows, so the update after the first one that
// has integral volume does not allocate for them either.
func (u *Updater) sizeTmpArena() {
	need := u.tmpNeed
	est := 0
	for _, ids := range [2][]tree.ID{u.burst, u.relaxed} {
		for _, id := range ids {
			est += 2 * len(u.fsbs(id).X)
		}
	}
	need = max(need, est)
	if cap(u.tmpArena.X) < need {
		need += need / 4
		u.tmpArena.X = make([]float64, 0, need)
		u.tmpArena.V = make([]plf.Value, 0, need)
	}
}

// prepareFSBFF rebuilds pool p's fair share by fit factor if its children
// changed.
func (u *Updater) prepareFSBFF(w *worker, p int32) {
	ps := &u.pools[p]
	id := ps.id
	fifo := u.tree.Pool(id).Mode == tree.ModeFIFO
	var k fsbffKey
	if u.cfg.EnableImprovedFitFactor {
		k.flags |= flagImproved
	}
	// The children's generations and weights are read by position (node,
	// weightByPos), not from their Attributes, which lie far apart.
	h := uint64(14695981039346656037)
	if fifo {
		// Children are operations, in an order that may change.
		k.flags |= flagFIFO
		for _, c := range u.fifoOrder(id) {
			pos := u.pos[c]
			h = mix(h, uint64(c))
			h = mix(h, u.node[pos].fnGen)
			h = mix(h, math.Float64bits(u.weightByPos[pos]))
		}
	} else {
		// The pool children, in tree order as by position (the operation
		// children are kidsDirty's).
		for _, k := range u.kids(p) {
			c := u.pools[k].id
			pos := u.pos[c]
			h = mix(h, uint64(c))
			h = mix(h, u.node[pos].fnGen)
			h = mix(h, math.Float64bits(u.weightByPos[pos]))
		}
	}
	k.children = h
	if ps.fsbffValid && !ps.kidsDirty && ps.fsbffKey == k {
		return
	}
	if fifo {
		u.fifoFSBFF(p)
	} else {
		u.normalFSBFF(w, p)
	}
	ps.fsbffKey, ps.kidsDirty, ps.fsbffValid = k, false, true
	ps.fsbffGen = w.nextGen()
}

// prepareOperations builds the functions of pool p's operation children that
// updateOperations marked.
func (u *Updater) prepareOperations(w *worker, p int32) {
	if !u.pools[p].kidsDirty {
		return // opSums marks a pool with a marked child kidsDirty
	}
	id := u.pools[p].id
	for pos := u.childStart[id]; pos < u.childEnd[id]; pos++ {
		in := &u.opIn[pos]
		if !in.pending {
			continue
		}
		in.pending = false
		u.prepareOperation(w, in, &u.fsbsByPos[pos])
		e := &u.node[pos]
		e.built = true
		e.fnGen = w.nextGen()
	}
}

// prepareOperation builds an operation's fair share by suggestion into dst
// from its fair share by fit factor, which is not kept.
func (u *Updater) prepareOperation(w *worker, in *opInput, dst *plf.Vec) {
	if f := &w.scratchVec; u.pendingBySuggestion(in, f) {
		compress(dst, f, compressEpsilon)
		return
	}
	u.operationFSBFF(in, &w.opFF)
	bySuggestion(&w.opFF, resource.Share{}, in.limitsShare, &w.scratchVec, nil)
	compress(dst, &w.scratchVec, compressEpsilon)
}

// pendingBySuggestion builds into f, and reports that it did, the fair
// share by suggestion of an operation that runs nothing, has a demand d of
// dominant share m ∈ (0, 1) and limits not below it: (0, 0), (m, d), (1, d).
// That is what bySuggestion makes of its fair share by fit factor (0, 0),
// (1, 0), (2, d), bit for bit (TestPendingBySuggestion): the requirement is
// 0 on [0, 1] and the dominant line from 0 to m on [1, 2], which is m at its
// end, where the value is d; suggestions above m take the end. About 40% of
// the operations of a realistic tree run nothing.
func (u *Updater) pendingBySuggestion(in *opInput, f *plf.Vec) bool {
	d := in.demandShare
	m := d.MaxComponent()
	if in.usageShare.MaxComponent() != 0 || u.cfg.EnableStepFunctionForGangOperations && in.gang ||
		!(m > 0 && m < 1) || !in.limitsShare.Dominates(d) {
		return false
	}
	f.Reset()
	f.Add(0, resource.Share{})
	f.Add(m, d)
	f.Add(1, d)
	return true
}

// operationFSBFF builds an operation's fair share by fit factor into f: on
// [0,1] usage is water-filled, on [1,2] the share grows linearly from usage
// to demand; a gang under the step-function option is all or nothing at 1
// (docs/semantics.md#fair-share).
func (u *Updater) operationFSBFF(in *opInput, f *plf.Vec) {
	f.Reset()
	usage, demand := in.usageShare, in.demandShare
	if u.cfg.EnableStepFunctionForGangOperations && in.gang {
		var zero resource.Share
		f.Add(0, zero)
		f.Add(1, zero)
		f.Add(1, demand)
		f.Add(2, demand)
		return
	}
	maxUsage := usage.MaxComponent()
	if maxUsage == 0 {
		f.Add(0, resource.Share{})
		f.Add(1, resource.Share{})
	} else {
		// The usage levels in increasing order (insertion sort of five).
		sorted := usage
		for i := 1; i < len(sorted); i++ {
			for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
				sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
			}
		}
		f.Add(0, resource.Share{})
		prev := 0.0
		for _, us := range sorted {
			ff := us / maxUsage
			if ff > prev {
				f.Add(ff, resource.Uniform(us).Min(usage))
				prev = ff
			}
		}
	}
	f.Add(1, usage)
	f.Add(2, demand)
}

// fifoFSBFF concatenates the children's fair share by suggestion in FIFO
// order, child k occupying fit factors [k, k+1] (docs/semantics.md#fair-share).
func (u *Updater) fifoFSBFF(p int32) {
	ps := &u.pools[p]
	id := ps.id
	f := &ps.fsbff
	f.Reset()
	kids := u.fifoOrder(id)
	if len(kids) == 0 {
		f.Add(0, resource.Share{})
		f.Add(1, resource.Share{})
		return
	}
	var prefix resource.Share
	for k, c := range kids {
		g := u.fsbs(c)
		shift := float64(k)
		for i, x := range g.X {
			f.Add(x+shift, g.V[i].Add(prefix))
		}
		prefix = prefix.Add(g.RightValue())
	}
}

// scaledCursor samples a child's fair share by suggestion at x·scale, with
// the function extended to the right by its last value: the child's part of
// its parent's fit factor (docs/semantics.md#fair-share).
type scaledCursor struct {
	fn    *plf.Vec
	scale float64
	seg   int
}

// bound returns point i's argument in the scaled function.
func (c *scaledCursor) bound(i int) float64 { return c.fn.X[i] / c.scale }

func (c *scaledCursor) limits(x float64) (plf.Value, plf.Value) {
	f := c.fn
	n := len(f.X)
	if n == 1 || x >= c.bound(n-1) {
		v := f.V[n-1]
		if x == c.bound(n-1) && n >= 2 && f.X[n-2] == f.X[n-1] {
			return f.V[n-2], v
		}
		return v, v
	}
	for c.seg+1 < n-1 && c.bound(c.seg+1) < x {
		c.seg++
	}
	i := c.seg
	if i+2 < n && f.X[i+1] == f.X[i+2] && c.bound(i+1) == x {
		return f.V[i+1], f.V[i+2]
	}
	x0, x1 := c.bound(i), c.bound(i+1)
	if x0 == x1 {
		return f.V[i], f.V[i+1]
	}
	v := plf.Interpolate(x0, x1, f.V[i], f.V[i+1], x)
	return v, v
}

// scaledLimits is scaledCursor.limits without a cursor (random access).
func scaledLimits(f *plf.Vec, scale, x float64) (plf.Value, plf.Value) {
	c := scaledCursor{fn: f, scale: scale}
	return c.seek(x)
}

// seek is limits at x for a cursor at the start: a binary search puts it
// on the segment that limits would walk to, then limits.
func (c *scaledCursor) seek(x float64) (plf.Value, plf.Value) {
	f := c.fn
	n := len(f.X)
	if n > 2 && x > c.bound(1) && x < c.bound(n-1) {
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
		c.seg = lo - 1
	}
	return c.limits(x)
}

// minChildWeight is the smallest child weight above Epsilon.
func (u *Updater) minChildWeight(id tree.ID) float64 {
	m := math.MaxFloat64
	for _, w := range u.kidWeights(id) {
		if w > resource.Epsilon {
			m = min(m, w)
		}
	}
	return m
}

// normalFSBFF sums the children's weighted fair share by suggestion
// (docs/semantics.md#fair-share); in the improved mode the children's jumps are laid out one
// child at a time, each critical point taking one unit of the fit factor
// (docs/semantics.md#fair-share).
func (u *Updater) normalFSBFF(w *worker, p int32) {
	e := &u.pools[p]
	id := e.id
	f := &e.fsbff
	f.Reset()
	kids := u.children(id)
	e.critSuggestion, e.critOwner = e.critSuggestion[:0], e.critOwner[:0]
	if len(kids) == 0 {
		f.Add(0, resource.Share{})
		f.Add(1, resource.Share{})
		return
	}
	e.critSuggestion, e.critOwner = w.sweepFSBFF(f, u.kidFsbs(id), u.kidWeights(id), u.minChildWeight(id), u.cfg.EnableImprovedFitFactor, e.critSuggestion, e.critOwner)
}

// compress copies src into dst merging segments that stay within eps of the
// original in every component (a greedy cone test, docs/semantics.md#fair-share).
//
// A component that is zero throughout (src is non-decreasing and
// non-negative, so zero at both ends) passes the test exactly when the
// argument advances, which every other component requires too: it is
// skipped unless all are zero.
func compress(dst, src *plf.Vec, eps float64) {
	dst.Reset()
	n := len(src.X)
	if n <= 2 {
		for i := range src.X {
			dst.Add(src.X[i], src.V[i])
		}
		return
	}
	var rs [resource.Count]int
	nr := 0
	first, last := &src.V[0], &src.V[n-1]
	for r := range resource.Count {
		if first[r] != 0 || last[r] != 0 {
			rs[nr] = r
			nr++
		}
	}
	if nr == 0 {
		nr = 1
	}
	used := rs[:nr]
	type seg struct{ dx, dy float64 }
	cross := func(a, b seg) float64 { return a.dx*b.dy - b.dx*a.dy }
	start := 0
	end := 1
	var top, bottom [resource.Count]seg
	setBounds := func(s, e int) {
		dx := src.X[e] - src.X[s]
		for _, r := range used {
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
		vn, vs := &src.V[next], &src.V[start]
		for _, r := range used {
			dy := vn[r] - vs[r]
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
