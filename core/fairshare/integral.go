package fairshare

import (
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Integral guarantees: volume accounting (docs/semantics.md#integral-guarantees, step 5 of the update), then
// the burst pools' and the relaxed pools'
// integral shares, and the integral pools' orchid attributes.
//
// Volumes are refilled (by the resource flow) and consumed (by the last
// integral share) in refill, called for every burst and relaxed pool by
// consumeAndRefill; overflow moves between pools in overflowAndAcceptable and
// distributeFreeVolume. Nothing else changes a volume, except
// Updater.SetAccumulatedVolume (and a new pool starts with none).

// ---- integral volumes (docs/semantics.md#integral-guarantees) ----

// consumeAndRefill is one update's volume accounting: every burst and
// relaxed pool's volume is refilled and consumed (refill), overflow and room
// are summed up the tree (overflowAndAcceptable) and free volume is handed
// down (distributeFreeVolume).
//
// The overflow and room start at zero (opSums clears them). The passes over
// the pools run on the tasks' subtrees in parallel, the split pools before
// or after them (parallel.go); the subtrees below an integral pool are
// skipped, as the recursion skips them.
func (u *Updater) consumeAndRefill() {
	for _, id := range u.burst {
		u.refill(id)
	}
	for _, id := range u.relaxed {
		u.refill(id)
	}
	u.run(taskOverflow, u.freeTasks)
	for i := len(u.splitPre) - 1; i >= 0; i-- {
		if p := u.splitPre[i]; !u.pools[p].underIntegral {
			u.overflowAndAcceptablePool(p)
		}
	}
	w := u.worker0()
	for _, p := range u.splitPre {
		if !u.pools[p].underIntegral {
			u.distributeFreeVolumePool(w, p)
		}
	}
	u.run(taskFreeVolume, u.freeTasks)
}

func (u *Updater) canAcceptFreeVolume(id tree.ID) bool {
	if id == tree.Root {
		return false
	}
	return u.tree.Pool(id).Integral.CanAcceptFreeVolume.Or(true)
}

func (u *Updater) capacity(ps *poolState) [resource.Count]float64 {
	c := u.total.Mul(ps.flowRatio)
	var v [resource.Count]float64
	for r := range c {
		v[r] = float64(c[r]) * u.cfg.PoolCapacitySaturationPeriodS
	}
	return v
}

// refill adds to integral pool id's volume what its resource flow brought
// since the previous update and takes what its last integral share used,
// and records the overflow above its capacity and its room below it. The
// first update after start (no previous update) and an update with no
// resources change nothing.
func (u *Updater) refill(id tree.ID) {
	if u.total.IsZero() || !u.hasPrev {
		return
	}
	e := u.pool(id)
	dt := u.now.Sub(u.prev).Seconds()
	capacity := u.capacity(e)
	old := e.volume
	accept := e.acceptFree
	for r := range resource.Count {
		t := float64(u.total[r]) * dt
		v := e.volume[r] + t*e.flowRatio
		v -= t * e.lastShareRatio
		v = max(v, 0)
		upper := max(old[r], capacity[r])
		e.overflow[r] = max(v-upper, 0)
		if accept {
			e.acceptable[r] = max(capacity[r]-v, 0)
		}
		e.volume[r] = min(v, upper)
	}
}

func (u *Updater) isIntegral(id tree.ID) bool {
	return u.tree.Kind(id) == tree.KindPool && u.tree.Pool(id).Integral.Type != tree.GuaranteeNone
}

// overflowAndAcceptable sums the overflow and room of p's subtree up to p,
// stopping at integral pools.
func (u *Updater) overflowAndAcceptable(p int32) {
	if u.pools[p].integral {
		return
	}
	for _, c := range u.kids(p) {
		u.overflowAndAcceptable(c)
	}
	u.overflowAndAcceptablePool(p)
}

// overflowAndAcceptablePool sets pool p's overflow and room from its
// children's (an integral pool keeps refill's).
func (u *Updater) overflowAndAcceptablePool(p int32) {
	e := &u.pools[p]
	if e.integral {
		return
	}
	var childAcceptable [resource.Count]float64
	for _, c := range u.kids(p) {
		ce := &u.pools[c]
		for r := range resource.Count {
			e.childOverflow[r] += ce.overflow[r]
			childAcceptable[r] += ce.acceptable[r]
		}
	}
	accept := e.acceptFree
	for r := range resource.Count {
		diff := e.childOverflow[r] - childAcceptable[r]
		if diff > 0 {
			e.overflow[r], e.acceptable[r] = diff, 0
		} else {
			e.overflow[r] = 0
			if accept {
				e.acceptable[r] = -diff
			} else {
				e.acceptable[r] = 0
			}
		}
	}
}

func (u *Updater) shouldDistributeFreeVolume(id tree.ID) bool {
	if id != tree.Root {
		if o := u.tree.Pool(id).Integral.ShouldDistributeFreeVolume; o.Set {
			return o.V
		}
	}
	return u.cfg.ShouldDistributeFreeVolumeAmongChildren
}

// distributeFreeVolume hands free volume down p's subtree, stopping at
// integral pools.
func (u *Updater) distributeFreeVolume(w *worker, p int32) {
	if u.distributeFreeVolumePool(w, p) {
		return
	}
	for _, c := range u.kids(p) {
		u.distributeFreeVolume(w, c)
	}
}

// distributeFreeVolumePool hands pool p's free volume to its children, or
// adds it to p's volume if p is integral (and reports that).
func (u *Updater) distributeFreeVolumePool(w *worker, p int32) (integral bool) {
	e := &u.pools[p]
	free := e.acceptedFree
	if e.integral {
		for r := range resource.Count {
			e.volume[r] += free[r]
		}
		return true
	}
	kids := u.kids(p)
	if u.shouldDistributeFreeVolume(e.id) && (free != [5]float64{} || e.childOverflow != [5]float64{}) {
		for r := range resource.Count {
			free[r] += e.childOverflow[r]
			if free[r] == 0 {
				continue
			}
			hungry := w.order[:0]
			weightSum := 0.0
			for i, c := range kids {
				ce := &u.pools[c]
				if ce.acceptable[r] > resource.Epsilon && ce.totalFlowRatio > resource.Epsilon {
					hungry = append(hungry, int32(i))
					weightSum += ce.totalFlowRatio
				}
			}
			slices.SortStableFunc(hungry, func(a, b int32) int {
				ea, eb := &u.pools[kids[a]], &u.pools[kids[b]]
				ra, rb := ea.acceptable[r]/ea.totalFlowRatio, eb.acceptable[r]/eb.totalFlowRatio
				switch {
				case ra < rb:
					return -1
				case ra > rb:
					return 1
				}
				return 0
			})
			k := 0
			for ; k < len(hungry); k++ {
				ce := &u.pools[kids[hungry[k]]]
				offer := free[r] * (ce.totalFlowRatio / weightSum)
				if offer < ce.acceptable[r] {
					break
				}
				ce.acceptedFree[r] = ce.acceptable[r]
				free[r] -= ce.acceptable[r]
				weightSum -= ce.totalFlowRatio
			}
			for ; k < len(hungry); k++ {
				ce := &u.pools[kids[hungry[k]]]
				ce.acceptedFree[r] = free[r] * (ce.totalFlowRatio / weightSum)
			}
			w.order = hungry
		}
	}
	return false
}

// volumeRatio is the integral share the pool's volume sustains for one
// smooth period (docs/semantics.md#integral-guarantees).
func (u *Updater) volumeRatio(ps *poolState) float64 {
	v := ps.volume
	r, any := 0.0, false
	for i := range v {
		if u.total[i] > 0 {
			x := v[i] / float64(u.total[i])
			if !any || x < r {
				r = x
			}
			any = true
		}
	}
	return r / u.cfg.SmoothPeriodS
}

// ---- integral shares (docs/semantics.md#integral-guarantees) ----

func adjustProposedIntegralShare(limits, strong, proposed resource.Share) resource.Share {
	if limits.Dominates(strong.Add(proposed)) {
		return proposed
	}
	proposed = limits.Sub(strong)
	for r := range proposed {
		for i := 0; i < 32 && limits[r] < strong[r]+proposed[r]; i++ {
			proposed[r] = math.Nextafter(proposed[r], 0)
		}
	}
	return proposed
}

func (u *Updater) hierarchicalAvailableLimits(id tree.ID) resource.Share {
	res := resource.Ones()
	for cur := id; cur != tree.Root; cur = u.tree.Parent(cur) {
		a := &u.attrs[cur]
		res = res.Min(a.LimitsShare.Sub(a.StrongGuaranteeShare.Add(a.ProposedIntegralShare)))
	}
	return res
}

func (u *Updater) increaseHierarchicalIntegralShare(id tree.ID, delta resource.Share) {
	for cur := id; cur != tree.None; cur = u.tree.Parent(cur) {
		a := &u.attrs[cur]
		inc := a.ProposedIntegralShare.Add(delta)
		if cur != tree.Root {
			inc = adjustProposedIntegralShare(a.LimitsShare, a.StrongGuaranteeShare, inc)
		}
		a.ProposedIntegralShare = inc
	}
}

// integralPasses sets the burst (docs/semantics.md#integral-guarantees) and then the relaxed
// pools' integral shares.
func (u *Updater) integralPasses() {
	u.tmpUsed, u.tmpNeed = 0, 0
	u.burstIntegralShares()
	u.relaxedIntegralShares()
}

func (u *Updater) burstIntegralShares() {
	for _, id := range u.burst {
		ps := u.pool(id)
		a := &u.attrs[id]
		ratio := min(ps.burstRatio, u.volumeRatio(ps))
		proposed := resource.Uniform(ratio).Min(u.hierarchicalAvailableLimits(id))
		proposed = adjustProposedIntegralShare(a.LimitsShare, a.StrongGuaranteeShare, proposed)
		fs := u.prepareTemporary(u.elems[id].pool, a.StrongGuaranteeShare.Add(proposed), a.LimitsShare)
		within := fs.ValueAt(0)
		integral := within.Sub(a.StrongGuaranteeShare).Max(resource.Share{})
		u.increaseHierarchicalIntegralShare(id, integral)
		ps.lastShareRatio = integral.MaxComponent()
	}
}

func (u *Updater) relaxedIntegralShares() {
	if len(u.relaxed) == 0 {
		return
	}
	avail := resource.Ones()
	for _, c := range u.kids(u.elems[tree.Root].pool) {
		a := &u.attrs[u.pools[c].id]
		avail = avail.Sub(a.StrongGuaranteeShare.Add(a.ProposedIntegralShare).Min(a.DemandShare))
	}
	avail = avail.Max(resource.Share{})
	pools, weights := u.relaxedPools[:0], u.relaxedW[:0]
	for _, id := range u.relaxed {
		ps := u.pool(id)
		r := u.volumeRatio(ps)
		if r == 0 {
			continue
		}
		a := &u.attrs[id]
		pools = append(pools, id)
		weights = append(weights, r)
		mult := u.tree.Pool(id).Integral.RelaxedShareMultiplierLimit.Or(u.cfg.RelaxedShareMultiplierLimit)
		lim := resource.Uniform(r).Min(resource.Uniform(ps.flowRatio * mult)).Add(a.StrongGuaranteeShare)
		lim = a.LimitsShare.Min(lim)
		u.prepareTemporary(u.elems[id].pool, a.StrongGuaranteeShare.Add(a.ProposedIntegralShare), lim)
	}
	u.relaxedPools, u.relaxedW = pools, weights
	if len(pools) == 0 {
		return
	}
	wmin := slices.Min(weights)
	for i := range weights {
		weights[i] /= wmin
	}
	f := plf.InverseLowerBound(0, 1, func(f float64) bool {
		var sum resource.Share
		for i, id := range pools {
			fs := u.pool(id).tmpFsbs.ValueAt(min(1, f*weights[i]))
			sum = sum.Add(fs.Sub(u.attrs[id].StrongGuaranteeShare).Max(resource.Share{}))
		}
		return avail.Dominates(sum)
	})
	for i, id := range pools {
		within := u.pool(id).tmpFsbs.ValueAt(min(1, f*weights[i]))
		integral := within.Sub(u.attrs[id].StrongGuaranteeShare).Max(resource.Share{})
		limited := integral.Min(u.hierarchicalAvailableLimits(id))
		u.increaseHierarchicalIntegralShare(id, limited)
		u.pool(id).lastShareRatio = limited.MaxComponent()
	}
}

// ---- orchid attributes (docs/api.md#the-orchid) ----

// integralAttributes fills the integral pools' orchid attributes (docs/api.md#the-orchid),
// on chunks of the pools in parallel.
func (u *Updater) integralAttributes() {
	u.run(taskIntegralAttrs, u.poolChunks)
}

// integralAttributesOf fills the integral attributes of the pools
// u.poolsByID[lo:hi].
func (u *Updater) integralAttributesOf(lo, hi int) {
	for _, p := range u.poolsByID[lo:hi] {
		e := &u.pools[p]
		id := e.id
		ia := &u.attrs[id].Integral
		if !e.integral {
			*ia = IntegralAttributes{}
			continue
		}
		ia.Type = u.tree.Pool(id).Integral.Type
		for r := range resource.Count {
			ia.AccumulatedVolume[r] = e.volume[r]
		}
		ia.AccumulatedVolume[resource.CPU] /= resource.CPUScale
		ia.AccumulatedResourceRatioVolume = u.volumeRatio(e) * u.cfg.SmoothPeriodS
		ia.Capacity = u.capacity(e)
		ia.Capacity[resource.CPU] /= resource.CPUScale
		ia.SpecifiedBurstRatio = e.burstRatio
		ia.SpecifiedResourceFlowRatio = e.flowRatio
		ia.TotalBurstRatio = e.totalBurstRatio
		ia.TotalResourceFlowRatio = e.totalFlowRatio
		ia.LastShareRatio = e.lastShareRatio
		ia.EstimatedBurstUsageDurationSeconds = 0
		if ia.Type == tree.GuaranteeBurst {
			if d := e.burstRatio - e.flowRatio; d > 0 {
				ia.EstimatedBurstUsageDurationSeconds = ia.AccumulatedResourceRatioVolume / d
			} else {
				ia.EstimatedBurstUsageDurationSeconds = math.Inf(1)
			}
		}
	}
}
