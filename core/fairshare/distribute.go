package fairshare

import (
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The top-down distribution (docs/semantics.md#fair-share, step 9 of the update), in its two
// modes side by side: distribute is the classic pass, which hands every
// child a scalar suggestion found with the pool's max fit factor by
// suggestion; distributeVec is the improved pass (Config.EnableImprovedFitFactor),
// which hands every child a vector target found on the pool's fair share by
// fit factor, jumps laid out one child at a time. Both also compute the
// promised-guarantee fair share (shareType promisedGuarantee, docs/semantics.md#promised-guarantee-fair-share).
// The helpers of each pass follow the two passes.

// shareType selects the attribute a top-down pass writes: the fair share, or
// the promised-guarantee fair share (docs/semantics.md#promised-guarantee-fair-share), which never skips an
// unchanged subtree.
type shareType int

const (
	regular shareType = iota
	promisedGuarantee
)

// distribute is the classic top-down pass with a scalar suggestion. With
// split, id is a split pool (parallel.go): its split children are visited
// at once, the other pool children are left to their tasks (Updater.taskSug).
func (u *Updater) distribute(w *worker, id tree.ID, s float64, t shareType, split bool) {
	e := u.nodeOf(id)
	if t == regular {
		st := resource.Uniform(s)
		if e.distMode == distClassic && e.distTarget == st && e.distGen == e.fnGen {
			return
		}
		e.distMode, e.distTarget, e.distGen = distClassic, st, e.fnGen
	}
	if u.elems[id].kind == tree.KindOperation {
		u.setOpShare(w, id, u.fsbs(id).ValueAt(s), t)
		return
	}
	kids := u.children(id)
	if len(kids) == 0 {
		u.setDetailed(id, resource.Share{}, t)
		return
	}
	fifo := u.tree.Pool(id).Mode == tree.ModeFIFO
	if fifo {
		kids = u.fifoOrder(id)
	}
	wmin := u.minChildWeight(id)
	target := u.fsbs(id).ValueAt(s)
	bound := target.Add(resource.EpsilonShare())
	check := func(ff float64) bool {
		var sum resource.Share
		for i, c := range kids {
			sum = sum.Add(u.fsbs(c).ValueAt(u.childSuggestion(fifo, i, c, ff, wmin)))
		}
		return bound.Dominates(sum)
	}
	ff := u.pool(id).mffbs.ValueAt(s)
	if !check(ff) {
		ff = plf.InverseLowerBound(0, ff, check)
	}
	for i, c := range kids {
		cs := u.childSuggestion(fifo, i, c, ff, wmin)
		if split && !u.nodeOf(c).isOp {
			if cp := u.pool(c); !cp.split {
				u.taskSug[cp.task] = cs
				u.taskRun = append(u.taskRun, cp.task)
				continue
			}
		}
		u.distribute(w, c, cs, t, split)
	}
	u.setDetailed(id, target, t)
}

// distributeVec is the improved top-down pass with a vector target. With
// split, id is a split pool (parallel.go): its split children are visited
// at once, the other pool children are left to their tasks
// (Updater.taskTarget).
func (u *Updater) distributeVec(w *worker, id tree.ID, target resource.Share, t shareType, split bool) {
	e := u.nodeOf(id)
	if t == regular {
		if e.distMode == distImproved && e.distTarget == target && e.distGen == e.fnGen && u.attrs[id].FairShare.Total == target {
			return
		}
		e.distMode, e.distTarget, e.distGen = distImproved, target, e.fnGen
	}
	if u.elems[id].kind == tree.KindOperation {
		u.setOpShare(w, id, target, t)
		return
	}
	kids := u.children(id)
	if len(kids) == 0 {
		u.setDetailed(id, resource.Share{}, t)
		return
	}
	ff, piece := u.fitFactorFor(w, id, target)
	if ff < resource.Epsilon {
		ff = 0
	}
	depth := len(w.stack)
	if k := float64(piece); piece >= 0 && ff >= k && ff <= k+1 {
		w.stack = append(w.stack, w.pieceShares(k, ff, w.spare(depth)))
	} else {
		w.stack = append(w.stack, u.childShares(id, ff, w.spare(depth)))
	}
	fifo := u.tree.Pool(id).Mode == tree.ModeFIFO
	if fifo {
		kids = u.fifoOrder(id)
	}
	start := u.childStart[id]
	for i, c := range kids {
		pos := start + int32(i)
		if fifo {
			pos = u.pos[c]
		}
		if ce := &u.node[pos]; ce.isOp {
			// An operation takes its share (distributeVec, inlined).
			// NB: unlike a pool's, an operation's fair share is written
			// only here (by setOpShare), so an unchanged target means
			// unchanged attributes.
			share := w.stack[depth][i]
			if t == regular {
				if ce.distMode == distImproved && ce.distTarget == share && ce.distGen == ce.fnGen {
					continue
				}
				ce.distMode, ce.distTarget, ce.distGen = distImproved, share, ce.fnGen
			}
			u.setOpShare(w, c, share, t)
			continue
		}
		share := w.stack[depth][i]
		if split {
			if cp := u.pool(c); !cp.split {
				u.taskTarget[cp.task] = share
				u.taskRun = append(u.taskRun, cp.task)
				continue
			}
		}
		u.distributeVec(w, c, share, t, split)
	}
	for len(w.stackSpare) <= depth {
		w.stackSpare = append(w.stackSpare, nil)
	}
	w.stackSpare[depth] = w.stack[depth]
	w.stack = w.stack[:depth]
	u.setDetailed(id, target, t)
}

// childSuggestion is the suggestion child i (in the pool's child order: tree
// order, or FIFO order for FIFO pools) receives at fit factor ff.
func (u *Updater) childSuggestion(fifo bool, i int, c tree.ID, ff, wmin float64) float64 {
	if fifo {
		sat := int(ff)
		switch {
		case i < sat:
			return 1
		case i == sat:
			return ff - float64(sat)
		}
		return 0
	}
	return min(1, ff*(u.attrs[c].Weight/wmin))
}

// childShares fills u.shares with the shares the children of id receive at
// improved fit factor ff (the reference's child fair shares by fit factor).
func (u *Updater) childShares(id tree.ID, ff float64, dst []resource.Share) []resource.Share {
	dst = dst[:0]
	if u.tree.Pool(id).Mode == tree.ModeFIFO {
		kids := u.fifoOrder(id)
		sat := int(ff)
		frac := ff - float64(sat)
		for i, c := range kids {
			var v resource.Share
			switch {
			case i < sat:
				v = u.fsbs(c).ValueAt(1)
			case i == sat && frac != 0:
				v = u.fsbs(c).ValueAt(frac)
			}
			dst = append(dst, v)
		}
		return dst
	}
	e := u.pool(id)
	kids := u.children(id)
	wmin := u.minChildWeight(id)
	n := len(e.critSuggestion)
	k := int(ff)
	if k >= n-1 {
		k = n - 1
	}
	frac := ff - float64(k)
	fs, ws := u.kidFsbs(id), u.kidWeights(id)
	for j := range kids {
		f := &fs[j]
		scale := ws[j] / wmin
		l, r := scaledLimits(f, scale, e.critSuggestion[k])
		// Value at k from the left: children before the jump's owner already
		// took their right limit.
		atK := l
		if j < int(e.critOwner[k]) {
			atK = r
		}
		if frac == 0 {
			dst = append(dst, atK)
			continue
		}
		from := l
		if j <= int(e.critOwner[k]) {
			from = r
		}
		l2, r2 := scaledLimits(f, scale, e.critSuggestion[k+1])
		to := l2
		if j < int(e.critOwner[k+1]) {
			to = r2
		}
		dst = append(dst, plf.Interpolate(float64(k), float64(k+1), from, to, ff))
	}
	return dst
}

// spare returns reusable storage for the child shares at recursion depth d.
func (w *worker) spare(d int) []resource.Share {
	if d < len(w.stackSpare) {
		return w.stackSpare[d][:0]
	}
	return nil
}

// fitFactorFor finds the largest improved fit factor at which the children's
// shares fit into target (the reference bisects over the whole domain; this
// finds the same double faster). The pool's own FSBFF is the children's sum
// at integer fit factors, so a binary search over its integer points finds
// the piece; inside it the sum is linear, solved per resource and then
// refined to the exact largest double. When piece is at least 0, the
// children's limits at the ends of [piece, piece+1], which holds the result,
// are in the piece cache (pieceLimits).
//
// NB: a large pool's FSBFF is built by a sweep whose values at the integer
// points equal the children's exact sum only up to rounding drift (a few
// ulps per child, see sweepFSBFF), and target comes from that FSBFF.
// Comparing exactly would let an ulp decide whether a saturated child keeps
// its share or a jump is taken; so the children's sum may exceed target by
// fitTolerance, which bounds the drift (and is zero where the sums are
// exact).
func (u *Updater) fitFactorFor(w *worker, id tree.ID, target resource.Share) (ff float64, piece int) {
	ps := u.pool(id)
	f := &ps.fsbff
	c := &ps.fit
	if c.gen != ps.fsbffGen {
		// The last piece stays a candidate for the new function (checked
		// below as for the same function): a rebuilt function moves little.
		hint := c.lo
		*c = fitCache{gen: ps.fsbffGen, hi: f.RightBound(), v0: f.V[0], lo: -1, pieceLo: -1}
		c.top = f.ValueAt(c.hi)
		if hint >= 0 && int(hint) < int(c.hi) {
			k := float64(hint)
			c.lo = hint
			c.fk = f.ValueAt(k)
			_, c.a = f.LeftRightLimitAt(k)
			c.b = f.ValueAt(k + 1)
		}
	}
	hi := c.hi
	fifo := u.tree.Pool(id).Mode == tree.ModeFIFO
	tol := u.fitTolerance(len(u.children(id)), fifo, target)
	bound := target.Add(tol)
	pred := func(ff float64) bool {
		w.shares = u.childShares(id, ff, w.shares)
		var s resource.Share
		for _, v := range w.shares {
			s = s.Add(v)
		}
		return bound.Dominates(s)
	}
	// The children's sum at hi is f(hi) up to drift: when f(hi) is above
	// bound by more than the drift, the exact check is not needed.
	if bound.Add(tol).Dominates(c.top) && pred(hi) {
		return hi, -1
	}
	// At 0 every child is at its left limit at suggestion 0, and f(0) is
	// that sum, added in the same order: exact (FIFO pools do not start at
	// every child's 0, so they check).
	if fifo {
		if !pred(0) {
			return 0, -1
		}
	} else if !bound.Dominates(c.v0) {
		return 0, -1
	}
	// Largest integer k in [0, hi) with f(k) fitting: the last update's if
	// it still is (f is non-decreasing, so f(k) fitting and f(k+1) not
	// makes k the one the binary search finds), else a binary search.
	lo := int(c.lo)
	if lo < 0 || !bound.Dominates(c.fk) || lo+1 < int(hi) && bound.Dominates(c.b) {
		up := int(hi)
		lo = 0
		for lo+1 < up {
			mid := int(uint(lo+up) >> 1)
			if bound.Dominates(f.ValueAt(float64(mid))) {
				lo = mid
			} else {
				up = mid
			}
		}
		k := float64(lo)
		c.lo = int32(lo)
		c.fk = f.ValueAt(k)
		_, c.a = f.LeftRightLimitAt(k)
		c.b = f.ValueAt(k + 1)
	}
	k := float64(lo)
	a, b := c.a, c.b
	cand := k + 1
	for r := range resource.Count {
		if d := b[r] - a[r]; d > 0 && bound[r] < b[r] {
			cand = min(cand, k+(bound[r]-a[r])/d)
		}
	}
	if fifo {
		// In [k, k+1] only child k moves: the children before it are at
		// suggestion 1, those after at 0 (adding zero shares changes no bit).
		kids := u.fifoOrder(id)
		var prefix resource.Share
		for _, c := range kids[:lo] {
			prefix = prefix.Add(u.fsbs(c).ValueAt(1))
		}
		fk := u.fsbs(kids[lo])
		cand = fifoCandidate(fk, prefix, bound, k, cand)
		return plf.Refine(k, k+1, cand, func(ff float64) bool {
			s := prefix
			switch sat := int(ff); {
			case sat > lo:
				s = s.Add(fk.ValueAt(1))
			case ff != k:
				s = s.Add(fk.ValueAt(ff - k))
			}
			return bound.Dominates(s)
		}), -1
	}
	w.piece = u.pieceLimits(id, lo)
	return plf.Refine(k, k+1, cand, func(ff float64) bool { return bound.Dominates(w.pieceSum(k, ff)) }), lo
}

// fifoCandidate returns a fit factor in [k, k+1] close to the largest at
// which a FIFO pool's children fit into bound, child k at suggestion ff − k
// after children at suggestion 1 that sum to prefix: the linear solution on
// the segment of fk (child k's fair share by suggestion) where the sum first
// exceeds bound, or cand when no point of fk does. It is only Refine's
// starting point: Refine returns the same double from any (its predicate is
// monotone), at a cost that grows with the distance in ulps. The linear
// estimate over the whole piece (cand) is off by up to the piece's width,
// since fk has several segments in it: about 100 predicate calls, each a
// search in fk.
func fifoCandidate(fk *plf.Vec, prefix, bound resource.Share, k, cand float64) float64 {
	for i := range fk.X {
		v := prefix.Add(fk.V[i])
		if bound.Dominates(v) {
			continue
		}
		if i == 0 {
			return k
		}
		p := prefix.Add(fk.V[i-1])
		t := 1.0
		for r := range resource.Count {
			if d := v[r] - p[r]; d > 0 && bound[r] < v[r] {
				t = min(t, (bound[r]-p[r])/d)
			}
		}
		x0, x1 := fk.X[i-1], fk.X[i]
		return k + x0 + (x1-x0)*max(t, 0)
	}
	return cand
}

// fitCache is what fitFactorFor keeps of a pool's fair share by fit factor
// between updates, valid while the function is (gen): its domain's right
// end and the values there and at 0, and the piece [lo, lo+1] of the last
// result (lo ≥ 0; after a rebuild, the last function's, as a candidate):
// the values at its ends (fk, b) and the right limit at lo (a). pieceLo is
// the piece whose children's limits Updater.pieceByPos holds (-1: none).
type fitCache struct {
	gen         uint64
	hi          float64
	top, v0     resource.Share
	lo, pieceLo int32
	fk, a, b    resource.Share
}

// fitTolerance is how much the children's sum may exceed a target of
// magnitude target for a pool of n children: nothing where the pool's
// FSBFF holds exact sums (FIFO pools and pools of at most exactChildren
// children, sweepFSBFF), else 4 ulps per child and 16 for the compression
// of the function the target came from (compressEpsilon).
func (u *Updater) fitTolerance(n int, fifo bool, target resource.Share) resource.Share {
	var tol resource.Share
	if fifo || n <= exactChildren {
		return tol
	}
	for r := range tol {
		tol[r] = (float64(4*n+16) * 0x1p-52) * max(1, target[r])
	}
	return tol
}

// pieceVals are a child's shares in the piece [k, k+1] of its parent's fit
// factor: at k from the left (at), from k on (from), and at k+1 (to).
type pieceVals struct {
	at, from, to resource.Share
}

// pieceLimits returns every child's shares at the ends of piece [k, k+1] of
// a fair-share-mode pool's fit factor, for pieceSum: kept in u.pieceByPos at
// the children's positions from one update to the next while the pool's
// fair share by fit factor is the same (fitCache), looked up otherwise.
func (u *Updater) pieceLimits(id tree.ID, k int) []pieceVals {
	e := u.pool(id)
	dst := u.pieceByPos[u.childStart[id]:u.childEnd[id]]
	if int(e.fit.pieceLo) == k {
		return dst
	}
	e.fit.pieceLo = int32(k)
	wmin := u.minChildWeight(id)
	n := len(e.critSuggestion)
	fs, ws := u.kidFsbs(id), u.kidWeights(id)
	for j := range dst {
		// One cursor for both ends: the search for the first leaves it on
		// a segment at or before the second's, from which limits walks to
		// the segment the search would find.
		c := scaledCursor{fn: &fs[j], scale: ws[j] / wmin}
		l, r := c.seek(e.critSuggestion[k])
		v, w := l, l
		if j < int(e.critOwner[k]) {
			v = r
		}
		if j <= int(e.critOwner[k]) {
			w = r
		}
		t := v
		if k+1 < n {
			l2, r2 := c.limits(e.critSuggestion[k+1])
			t = l2
			if j < int(e.critOwner[k+1]) {
				t = r2
			}
		}
		dst[j] = pieceVals{at: v, from: w, to: t}
	}
	return dst
}

// pieceSum is the sum of childShares(ff) for ff in the piece [k, k+1] that
// pieceLimits prepared (w.piece), to the bit, without looking the limits up
// again.
func (w *worker) pieceSum(k, ff float64) resource.Share {
	var s resource.Share
	switch {
	case ff == k:
		for i := range w.piece {
			s = s.Add(w.piece[i].at)
		}
	case ff == k+1:
		for i := range w.piece {
			s = s.Add(w.piece[i].to)
		}
	default:
		// plf.Interpolate(k, k+1, from, to, ff) per child, its argument
		// ratio computed once (it is the same for every child).
		t := (ff - k) / (k + 1 - k)
		for i := range w.piece {
			pv := &w.piece[i]
			s = s.Add(plf.Lerp(&pv.from, &pv.to, t))
		}
	}
	return s
}

// pieceShares appends the children's shares at ff in the piece that
// pieceLimits prepared: childShares(ff) to the bit.
func (w *worker) pieceShares(k, ff float64, dst []resource.Share) []resource.Share {
	dst = dst[:0]
	switch {
	case ff == k:
		for i := range w.piece {
			dst = append(dst, w.piece[i].at)
		}
	case ff == k+1:
		for i := range w.piece {
			dst = append(dst, w.piece[i].to)
		}
	default:
		t := (ff - k) / (k + 1 - k) // as in pieceSum
		for i := range w.piece {
			pv := &w.piece[i]
			dst = append(dst, plf.Lerp(&pv.from, &pv.to, t))
		}
	}
	return dst
}

// distributeAll runs the top-down pass from the root with suggestion 1: the
// split pools top-down, then the tasks' subtrees in parallel (parallel.go),
// then the operations' attributes in ID order (opAttrs).
func (u *Updater) distributeAll() {
	u.taskRun = u.taskRun[:0]
	u.startOpShares()
	w := u.worker0()
	if u.cfg.EnableImprovedFitFactor {
		u.distributeVec(w, tree.Root, u.fsbs(tree.Root).ValueAt(1), regular, true)
		u.run(taskDistVec, u.taskRun)
	} else {
		u.distribute(w, tree.Root, 1, regular, true)
		u.run(taskDist, u.taskRun)
	}
	u.run(taskOpAttrs, u.idChunks)
}

// setOpShare sets operation id's fair share: the promised-guarantee one at
// once, the regular one in u.opShare, marked in the worker's bitmap, for
// opAttrs to decompose in ID order. The operations' attributes are spread
// over a large array by ID while the top-down pass visits them by parent;
// written in ID order they stream.
func (u *Updater) setOpShare(w *worker, id tree.ID, share resource.Share, t shareType) {
	if t != regular {
		u.setDetailed(id, share, t)
		return
	}
	u.opShare[id] = share
	w.opDirty[id>>6] |= 1 << (id & 63)
}

// startOpShares sizes u.opShare and the workers' bitmaps to the tree.
func (u *Updater) startOpShares() {
	n := len(u.attrs)
	if len(u.opShare) < n {
		u.opShare = make([]resource.Share, n)
	}
	words := (n + 63) / 64
	u.ensureWorkers()
	for _, w := range u.workers {
		if len(w.opDirty) < words {
			w.opDirty = append(w.opDirty, make([]uint64, words-len(w.opDirty))...)
		}
	}
}

// opAttrs decomposes the fair shares setOpShare marked, of the operations
// with IDs in [lo, hi) (lo a multiple of 64), in ID order, and clears their
// marks.
func (u *Updater) opAttrs(lo, hi int) {
	for i := lo / 64; i < (hi+63)/64; i++ {
		var bits uint64
		for _, w := range u.workers {
			if i < len(w.opDirty) {
				bits |= w.opDirty[i]
				w.opDirty[i] = 0
			}
		}
		for bits != 0 {
			b := bits & -bits
			id := tree.ID(i*64 + bitIndex(b))
			u.setOpDetailed(id, u.opShare[id])
			bits ^= b
		}
	}
}
