// Package fairshare computes fair shares: the Vector HDRF update of spec.md §2.
//
// An Updater is bound to one pool tree. Each call of Update computes, for
// every element, the fair share and its decomposition into strong-guarantee,
// integral-guarantee and weight-proportional parts, plus the shares and
// integral volumes of api.md §5. Time is an argument in virtual seconds; the
// package reads no clock.
//
// The pipeline follows the reference's order (spec.md §2.1): strong-guarantee
// inference (§2.2), bottom-up attributes, integral volume accounting (§2.5),
// guarantee adjustment (§2.3–2.4), burst and relaxed integral shares
// (§2.6–2.7), the fair-share functions (§2.8), the top-down distribution
// (§2.9), promised-guarantee fair share (§2.11) and the root (§2.10).
//
// Ownership and allocation: the Updater owns per-element state in slices
// indexed by tree.ID and every function buffer; they are reused across
// updates, so a steady tree updates without allocating. An Updater is not
// safe for concurrent use; the caller serialises Update with tree mutations.
package fairshare

import (
	"fmt"
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// elem is the update's state of one element.
type elem struct {
	kind tree.Kind
	name string
	gang bool

	attrs    Attributes
	inferred resource.Vec
	usage    resource.Vec // absolute; pools: sum of children
	demand   resource.Vec

	tierPriority resource.Share
	tierRegular  resource.Share

	burstRatio, flowRatio           float64
	totalBurstRatio, totalFlowRatio float64

	// Integral state, persisted across updates.
	volume         [resource.Count]float64
	lastShareRatio float64
	overflow       [resource.Count]float64
	acceptable     [resource.Count]float64
	childOverflow  [resource.Count]float64
	acceptedFree   [resource.Count]float64

	fsbff plf.Vec
	mffbs plf.Scalar
	fsbs  plf.Vec
	// built and key record the inputs the functions were last built from;
	// fnGen counts rebuilds so that parents notice a child's change.
	built bool
	key   fnKey
	fnGen uint64
	// The last top-down visit: skipped when target and functions are unchanged.
	distValid  bool
	distTarget resource.Share
	distGen    uint64
	// Improved-mode critical points of a fair-share-mode pool: suggestion and
	// the child whose jump it is, one per unit of the fit factor.
	cpS   []float64
	cpIdx []int32
}

// Updater runs fair-share updates over a tree. See the package documentation.
type Updater struct {
	t   *tree.Tree
	cfg Config

	el []elem

	layoutVersion uint64
	layoutValid   bool
	pre           []tree.ID // pre-order
	childStart    []int32
	childEnd      []int32
	childBuf      []tree.ID
	fifoBuf       []tree.ID
	burst         []tree.ID
	relaxed       []tree.ID

	total    resource.Vec
	now      float64
	prev     float64
	hasPrev  bool
	promised []bool // per element: promised fair share computed this update

	alerts []string
	gen    uint64 // function generations, unique across elements

	// scratch
	comp         plf.Scalar
	mff          [resource.Count]plf.Scalar
	mffAcc       [2]plf.Scalar
	scratchVec   plf.Vec
	cps          []float64
	cpIdxScratch []int32
	order        []int32
	cpoints      []plf.CPoint
	cursors      []scaledCursor
	shares       []resource.Share
	relaxedPools []tree.ID
	relaxedW     []float64
	relaxedLim   []resource.Share
	sweep        []sweepChild
	tmpS         []float64
	tmpIdx       []int32
	stack        [][]resource.Share
	stackSpare   [][]resource.Share
}

// New returns an Updater for t with configuration cfg.
func New(t *tree.Tree, cfg Config) *Updater {
	return &Updater{t: t, cfg: cfg}
}

// Config returns the configuration.
func (u *Updater) Config() Config { return u.cfg }

// SetConfig replaces the configuration; it takes effect on the next update.
func (u *Updater) SetConfig(cfg Config) { u.cfg = cfg }

// Tree returns the tree the Updater works on.
func (u *Updater) Tree() *tree.Tree { return u.t }

// Attributes returns element id's attributes after the last update. The
// pointer stays valid until the next update.
func (u *Updater) Attributes(id tree.ID) *Attributes { return &u.el[id].attrs }

// Alerts returns the configuration alerts of the last update (guarantee
// overcommit, nested promised-guarantee pools, priority pools without donor).
func (u *Updater) Alerts() []string { return u.alerts }

// SetPreviousUpdate sets the time of the previous update, from which the
// next update measures the integral refill (spec.md §2.5).
func (u *Updater) SetPreviousUpdate(t float64) { u.prev, u.hasPrev = t, true }

// ForgetPreviousUpdate makes the next update the first after start: no
// integral volume is refilled or consumed.
func (u *Updater) ForgetPreviousUpdate() { u.hasPrev = false }

// SetAccumulatedVolume sets an integral pool's accumulated volume in
// resource·seconds (cpu in centi-core·seconds), e.g. restored after a restart.
func (u *Updater) SetAccumulatedVolume(id tree.ID, v [resource.Count]float64) {
	u.ensure()
	u.el[id].volume = v
}

// Invalidate makes the next update recompute every element's functions, as
// the first update does. Updates are otherwise incremental: an element's
// functions are rebuilt only when their inputs changed, and the top-down pass
// skips subtrees whose target and functions are unchanged; the results are
// the same either way.
func (u *Updater) Invalidate() {
	for i := range u.el {
		u.el[i].built = false
		u.el[i].distValid = false
	}
}

// FairShareBySuggestion returns element id's fair-share-by-suggestion
// function of the last update (for introspection and tests).
func (u *Updater) FairShareBySuggestion(id tree.ID) *plf.Vec { return &u.el[id].fsbs }

// children returns id's children in tree order.
func (u *Updater) children(id tree.ID) []tree.ID {
	return u.childBuf[u.childStart[id]:u.childEnd[id]]
}

// fifoOrder returns a FIFO pool's children in FIFO order.
func (u *Updater) fifoOrder(id tree.ID) []tree.ID {
	return u.fifoBuf[u.childStart[id]:u.childEnd[id]]
}

// ensure sizes the per-element state to the tree and resets recycled IDs.
func (u *Updater) ensure() {
	n := u.t.Len()
	for len(u.el) < n {
		u.el = append(u.el, elem{})
	}
	for len(u.childStart) < n {
		u.childStart = append(u.childStart, 0)
		u.childEnd = append(u.childEnd, 0)
		u.promised = append(u.promised, false)
	}
	if u.layoutValid && u.layoutVersion == u.t.StructureVersion() {
		return // names and kinds change only with the structure
	}
	for id := range n {
		e := &u.el[id]
		k, name := u.t.Kind(tree.ID(id)), u.t.Name(tree.ID(id))
		if e.kind != k || e.name != name {
			*e = elem{kind: k, name: name, fsbff: e.fsbff, mffbs: e.mffbs, fsbs: e.fsbs, cpS: e.cpS[:0], cpIdx: e.cpIdx[:0]}
		}
	}
}

// layout rebuilds the pre-order and children lists after structural changes.
func (u *Updater) layout() {
	u.ensure()
	if u.layoutValid && u.layoutVersion == u.t.StructureVersion() {
		return
	}
	u.pre = u.pre[:0]
	u.childBuf = u.childBuf[:0]
	u.burst, u.relaxed = u.burst[:0], u.relaxed[:0]
	u.t.Walk(func(id tree.ID) {
		u.pre = append(u.pre, id)
		if u.t.Kind(id) == tree.KindPool {
			switch u.t.Pool(id).Integral.Type {
			case tree.GuaranteeBurst:
				u.burst = append(u.burst, id)
			case tree.GuaranteeRelaxed:
				u.relaxed = append(u.relaxed, id)
			}
		}
	})
	for _, id := range u.pre {
		u.childStart[id] = int32(len(u.childBuf))
		for c := u.t.FirstChild(id); c != tree.None; c = u.t.NextSibling(c) {
			u.childBuf = append(u.childBuf, c)
		}
		u.childEnd[id] = int32(len(u.childBuf))
	}
	u.fifoBuf = append(u.fifoBuf[:0], u.childBuf...)
	u.layoutVersion = u.t.StructureVersion()
	u.layoutValid = true
}

// Update runs one fair-share update at virtual time now with the cluster's
// total resources.
func (u *Updater) Update(total resource.Vec, now float64) {
	u.alerts = u.alerts[:0]
	u.layout()
	u.total = total
	u.now = now
	for _, id := range u.pre {
		e := &u.el[id]
		e.attrs.ProposedIntegralShare = resource.Share{}
		e.attrs.PromisedGuaranteeFairShare = Detailed{}
		u.promised[id] = false
	}
	u.validatePoolConfigs()
	u.inferStrongGuarantees()
	u.cumulative(tree.Root)
	u.consumeAndRefill()
	u.adjustGuarantees()
	u.computeWeights()
	u.burstIntegralShares()
	u.relaxedIntegralShares()

	u.prepare(tree.Root)
	if u.cfg.EnableImprovedFitFactor {
		u.distributeVec(tree.Root, u.el[tree.Root].fsbs.ValueAt(1), regular)
	} else {
		u.distribute(tree.Root, 1, regular)
	}
	u.promisedFairShare(tree.Root)
	u.rootFairShare()
	u.integralAttributes()
	u.prev, u.hasPrev = now, true
}

func (u *Updater) alertf(format string, args ...any) {
	u.alerts = append(u.alerts, fmt.Sprintf(format, args...))
}

// ---- configuration checks (spec.md §2.1 step 1) ----

func (u *Updater) validatePoolConfigs() {
	// Nested promised-guarantee pools and priority pools without a donor.
	for _, id := range u.pre {
		if u.t.Kind(id) == tree.KindOperation {
			continue
		}
		c := u.t.Pool(id)
		if c.ComputePromisedGuaranteeFairShare {
			for p := u.t.Parent(id); p != tree.None; p = u.t.Parent(p) {
				if u.t.Pool(p).ComputePromisedGuaranteeFairShare {
					u.alertf("pool %q computes promised guarantee fair share inside pool %q that does too", u.t.Name(id), u.t.Name(p))
					break
				}
			}
		}
		if c.EnablePriorityStrongGuaranteeAdjustment && !u.hasDonorAncestor(id) {
			u.alertf("pool %q has priority strong guarantee adjustment but no donor ancestor", u.t.Name(id))
		}
	}
}

func (u *Updater) hasDonorAncestor(id tree.ID) bool {
	for p := u.t.Parent(id); p != tree.None; p = u.t.Parent(p) {
		c := u.t.Pool(p)
		if c.EnablePriorityStrongGuaranteeAdjustmentDonorship {
			return true
		}
		if c.EnablePriorityStrongGuaranteeAdjustment {
			// A priority pool above passes its own donor status down.
			return u.hasDonorAncestor(p)
		}
	}
	return false
}

// ---- strong guarantee inference (spec.md §2.2) ----

func (u *Updater) inferStrongGuarantees() {
	u.el[tree.Root].inferred = u.total
	main := u.cfg.MainResource
	for _, id := range u.pre {
		if u.t.Kind(id) == tree.KindOperation {
			continue
		}
		kids := u.children(id)
		var explicit resource.Vec
		for _, c := range kids {
			ce := &u.el[c]
			if ce.kind == tree.KindOperation {
				ce.inferred = resource.Vec{}
				continue
			}
			ce.inferred = u.t.Pool(c).StrongGuarantee.OrZero()
			explicit = explicit.Add(ce.inferred)
		}
		pe := &u.el[id]
		residual := pe.inferred.Sub(explicit).Max(resource.Vec{})
		parentMain := float64(pe.inferred[main])
		for r := range resource.Count {
			if resource.Kind(r) == main {
				continue
			}
			parentR := float64(pe.inferred[r])
			totalImplicit := 0.0
			for _, c := range kids {
				if u.el[c].kind == tree.KindOperation || u.t.Pool(c).StrongGuarantee.Set[r] {
					continue
				}
				ratio := 0.0
				if parentMain > 0 {
					ratio = float64(u.el[c].inferred[main]) / parentMain
				}
				totalImplicit += ratio * parentR
			}
			scale := 1.0
			if id != tree.Root && totalImplicit > float64(residual[r]) {
				scale = float64(residual[r]) / totalImplicit
			}
			for _, c := range kids {
				if u.el[c].kind == tree.KindOperation || u.t.Pool(c).StrongGuarantee.Set[r] {
					continue
				}
				ratio := 0.0
				if parentMain > 0 {
					ratio = float64(u.el[c].inferred[main]) / parentMain
				}
				v := ratio * parentR
				if scale != 1 {
					v *= scale
				}
				u.el[c].inferred[r] = int64(math.Round(v))
			}
		}
	}
}

// ---- bottom-up attributes (spec.md §2.1 step 4) ----

func (u *Updater) cumulative(id tree.ID) {
	e := &u.el[id]
	a := &e.attrs
	total := u.total
	if e.kind == tree.KindOperation {
		spec := u.t.Operation(id)
		e.gang = spec.IsGang
		e.usage = u.t.Usage(id)
		e.demand = u.t.Demand(id).Max(e.usage)
		e.burstRatio, e.flowRatio, e.totalBurstRatio, e.totalFlowRatio = 0, 0, 0, 0
		a.LimitsShare = resource.FromResources(spec.ResourceLimits.OrInfinite().Min(total), total)
	} else {
		c := u.t.Pool(id)
		e.burstRatio, e.flowRatio = 0, 0
		if id != tree.Root && c.Integral.Type != tree.GuaranteeNone {
			e.flowRatio = resource.GetMaxResourceRatio(c.Integral.ResourceFlow.OrZero(), total)
			e.burstRatio = resource.GetMaxResourceRatio(c.Integral.BurstGuarantee.OrZero(), total)
		}
		e.totalBurstRatio, e.totalFlowRatio = e.burstRatio, e.flowRatio
		var usage, demand resource.Vec
		for _, ch := range u.children(id) {
			u.cumulative(ch)
			ce := &u.el[ch]
			e.totalBurstRatio += ce.totalBurstRatio
			e.totalFlowRatio += ce.totalFlowRatio
			usage = usage.Add(ce.usage)
			demand = demand.Add(ce.demand)
		}
		e.usage, e.demand = usage, demand
		limits := resource.InfiniteVec()
		if id != tree.Root {
			limits = c.ResourceLimits.OrInfinite()
		}
		a.LimitsShare = resource.FromResources(limits.Min(total), total)
		if c.Mode == tree.ModeFIFO {
			u.sortFifo(id)
		}
	}
	a.StrongGuaranteeShare = resource.FromResources(e.inferred, total)
	if e.usage.IsZero() {
		a.DominantResource = resource.DominantResource(e.demand, total)
	} else {
		a.DominantResource = resource.DominantResource(e.usage, total)
	}
	a.UsageShare = resource.FromResources(e.usage, total)
	a.DemandShare = resource.FromResources(e.demand, total)
	if id == tree.Root {
		var s resource.Share
		for _, ch := range u.children(id) {
			s = s.Add(u.el[ch].attrs.StrongGuaranteeShare)
		}
		a.StrongGuaranteeShare = s
	}
}

// sortFifo orders a FIFO pool's children by its fifo_sort_parameters
// (spec.md §2.14); ties keep tree order.
func (u *Updater) sortFifo(id tree.ID) {
	kids := u.fifoOrder(id)
	copy(kids, u.children(id))
	params := u.t.Pool(id).SortParameters()
	slices.SortStableFunc(kids, func(a, b tree.ID) int {
		for _, p := range params {
			switch p {
			case tree.FifoWeight:
				wa, wb := u.t.Operation(a).Weight.Or(1), u.t.Operation(b).Weight.Or(1)
				if wa != wb {
					if wa > wb {
						return -1
					}
					return 1
				}
			case tree.FifoStartTime:
				sa, sb := u.t.Operation(a).StartTime, u.t.Operation(b).StartTime
				if sa != sb {
					if sa < sb {
						return -1
					}
					return 1
				}
			case tree.FifoPendingJobCount:
				pa, pb := u.t.PendingJobCount(a), u.t.PendingJobCount(b)
				if pa != pb {
					if pa < pb {
						return -1
					}
					return 1
				}
			}
		}
		return 0
	})
}

// computeWeights sets every element's weight (spec.md §2.13).
func (u *Updater) computeWeights() {
	m := u.cfg.InferWeightFromGuaranteesShareMultiplier
	for _, id := range u.pre {
		e := &u.el[id]
		switch e.kind {
		case tree.KindOperation:
			e.attrs.Weight = u.t.Operation(id).Weight.Or(1)
		case tree.KindRoot:
			e.attrs.Weight = 1
		default:
			c := u.t.Pool(id)
			if c.Weight.Set {
				e.attrs.Weight = c.Weight.V
				continue
			}
			e.attrs.Weight = 1
			if m.Set {
				p := &u.el[u.t.Parent(id)]
				own := e.attrs.StrongGuaranteeShare.MaxComponent() + e.totalFlowRatio
				par := p.attrs.StrongGuaranteeShare.MaxComponent() + p.totalFlowRatio
				if own > resource.Epsilon && par > resource.Epsilon {
					e.attrs.Weight = m.V * own / par
				}
			}
		}
	}
}

// ---- integral volumes (spec.md §2.5) ----

func (u *Updater) consumeAndRefill() {
	for _, id := range u.pre {
		e := &u.el[id]
		e.overflow, e.acceptable, e.childOverflow, e.acceptedFree = [5]float64{}, [5]float64{}, [5]float64{}, [5]float64{}
	}
	for _, id := range u.burst {
		u.refill(id)
	}
	for _, id := range u.relaxed {
		u.refill(id)
	}
	u.overflowAndAcceptable(tree.Root)
	u.distributeFreeVolume(tree.Root)
}

func (u *Updater) canAcceptFreeVolume(id tree.ID) bool {
	if id == tree.Root {
		return false
	}
	return u.t.Pool(id).Integral.CanAcceptFreeVolume.Or(true)
}

func (u *Updater) capacity(id tree.ID) [resource.Count]float64 {
	c := u.total.Mul(u.el[id].flowRatio)
	var v [resource.Count]float64
	for r := range c {
		v[r] = float64(c[r]) * u.cfg.PoolCapacitySaturationPeriodS
	}
	return v
}

func (u *Updater) refill(id tree.ID) {
	if u.total.IsZero() || !u.hasPrev {
		return
	}
	e := &u.el[id]
	dt := u.now - u.prev
	capacity := u.capacity(id)
	old := e.volume
	accept := u.canAcceptFreeVolume(id)
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
	return u.el[id].kind == tree.KindPool && u.t.Pool(id).Integral.Type != tree.GuaranteeNone
}

func (u *Updater) overflowAndAcceptable(id tree.ID) {
	if u.isIntegral(id) {
		return
	}
	e := &u.el[id]
	var childAcceptable [resource.Count]float64
	for _, c := range u.children(id) {
		if u.el[c].kind != tree.KindPool {
			continue
		}
		u.overflowAndAcceptable(c)
		ce := &u.el[c]
		for r := range resource.Count {
			e.childOverflow[r] += ce.overflow[r]
			childAcceptable[r] += ce.acceptable[r]
		}
	}
	accept := u.canAcceptFreeVolume(id)
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
		if o := u.t.Pool(id).Integral.ShouldDistributeFreeVolume; o.Set {
			return o.V
		}
	}
	return u.cfg.ShouldDistributeFreeVolumeAmongChildren
}

func (u *Updater) distributeFreeVolume(id tree.ID) {
	e := &u.el[id]
	free := e.acceptedFree
	if u.isIntegral(id) {
		for r := range resource.Count {
			e.volume[r] += free[r]
		}
		return
	}
	if e.kind == tree.KindOperation {
		return
	}
	if u.shouldDistributeFreeVolume(id) && (free != [5]float64{} || e.childOverflow != [5]float64{}) {
		kids := u.children(id)
		for r := range resource.Count {
			free[r] += e.childOverflow[r]
			if free[r] == 0 {
				continue
			}
			hungry := u.order[:0]
			weightSum := 0.0
			for i, c := range kids {
				ce := &u.el[c]
				if ce.kind == tree.KindOperation {
					continue
				}
				if ce.acceptable[r] > resource.Epsilon && ce.totalFlowRatio > resource.Epsilon {
					hungry = append(hungry, int32(i))
					weightSum += ce.totalFlowRatio
				}
			}
			slices.SortStableFunc(hungry, func(a, b int32) int {
				ea, eb := &u.el[kids[a]], &u.el[kids[b]]
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
				ce := &u.el[kids[hungry[k]]]
				offer := free[r] * (ce.totalFlowRatio / weightSum)
				if offer < ce.acceptable[r] {
					break
				}
				ce.acceptedFree[r] = ce.acceptable[r]
				free[r] -= ce.acceptable[r]
				weightSum -= ce.totalFlowRatio
			}
			for ; k < len(hungry); k++ {
				ce := &u.el[kids[hungry[k]]]
				ce.acceptedFree[r] = free[r] * (ce.totalFlowRatio / weightSum)
			}
			u.order = hungry
		}
	}
	for _, c := range u.children(id) {
		u.distributeFreeVolume(c)
	}
}

// volumeRatio is the integral share the pool's volume sustains for one
// smooth period (spec.md §2.5).
func (u *Updater) volumeRatio(id tree.ID) float64 {
	v := u.el[id].volume
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

// ---- guarantee adjustment (spec.md §2.3–2.4) ----

func (u *Updater) adjustGuarantees() {
	root := &u.el[tree.Root]
	flow := u.total.Mul(root.totalFlowRatio)
	burst := u.total.Mul(root.totalBurstRatio)
	var strong resource.Vec
	for _, c := range u.children(tree.Root) {
		strong = strong.Add(u.el[c].inferred)
	}
	if !u.total.Dominates(strong.Add(flow)) {
		u.alertf("strong guarantees %v and resource flows %v exceed total resources %v", strong, flow, u.total)
	}
	if !u.total.Dominates(strong.Add(burst)) {
		u.alertf("strong guarantees %v and burst guarantees %v exceed total resources %v", strong, burst, u.total)
		ones := resource.Ones()
		k := plf.InverseLowerBound(0, 1, func(k float64) bool {
			sum := root.attrs.StrongGuaranteeShare.Mul(k)
			for _, p := range u.burst {
				sum = sum.Add(resource.Uniform(u.el[p].burstRatio).Mul(k))
			}
			return ones.Dominates(sum)
		})
		root.attrs.StrongGuaranteeShare = root.attrs.StrongGuaranteeShare.Mul(k)
		for _, p := range u.burst {
			u.el[p].burstRatio *= k
		}
	}
	u.tiers(tree.Root)
	u.adjustStrong(tree.Root)
}

// tiers splits strong guarantees into the priority and regular tiers.
func (u *Updater) tiers(id tree.ID) {
	e := &u.el[id]
	if e.kind == tree.KindOperation {
		e.tierPriority, e.tierRegular = resource.Share{}, resource.Share{}
		return
	}
	var childPriority resource.Share
	for _, c := range u.children(id) {
		u.tiers(c)
		childPriority = childPriority.Add(u.el[c].tierPriority)
	}
	c := u.t.Pool(id)
	switch {
	case id != tree.Root && c.EnablePriorityStrongGuaranteeAdjustment && u.hasDonorAncestor(id):
		e.tierPriority, e.tierRegular = e.attrs.StrongGuaranteeShare, resource.Share{}
	case id != tree.Root && c.EnablePriorityStrongGuaranteeAdjustmentDonorship:
		e.tierPriority, e.tierRegular = resource.Share{}, e.attrs.StrongGuaranteeShare
	default:
		e.tierPriority = childPriority
		e.tierRegular = e.attrs.StrongGuaranteeShare.Sub(childPriority)
	}
}

func (u *Updater) adjustStrong(id tree.ID) {
	e := &u.el[id]
	if e.kind == tree.KindOperation {
		return
	}
	e.attrs.StrongGuaranteeShare = e.attrs.StrongGuaranteeShare.Min(e.attrs.LimitsShare)
	kids := u.children(id)
	var fixed resource.Share
	tier := func(c tree.ID, t int) *resource.Share {
		if t == 0 {
			return &u.el[c].tierPriority
		}
		return &u.el[c].tierRegular
	}
	for t := 0; t < 2; t++ {
		var sum resource.Share
		for _, c := range kids {
			sum = sum.Add(*tier(c, t))
		}
		avail := e.attrs.StrongGuaranteeShare.Sub(fixed).Max(resource.Share{})
		if !avail.Dominates(sum) {
			check := func(k float64) bool {
				var s resource.Share
				for _, c := range kids {
					s = s.Add(tier(c, t).Mul(k))
				}
				return avail.Dominates(s)
			}
			k := 0.0
			if check(0) {
				k = plf.InverseLowerBound(0, 1, check)
			}
			for _, c := range kids {
				*tier(c, t) = tier(c, t).Mul(k)
				if t == 0 {
					u.el[c].tierRegular = resource.Share{}
				}
			}
			break
		}
		fixed = fixed.Add(sum)
	}
	for _, c := range kids {
		ce := &u.el[c]
		ce.attrs.StrongGuaranteeShare = ce.tierPriority.Add(ce.tierRegular)
	}
	for _, c := range kids {
		u.adjustStrong(c)
	}
}

// ---- integral shares (spec.md §2.6–2.7) ----

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
	for cur := id; cur != tree.Root; cur = u.t.Parent(cur) {
		a := &u.el[cur].attrs
		res = res.Min(a.LimitsShare.Sub(a.StrongGuaranteeShare.Add(a.ProposedIntegralShare)))
	}
	return res
}

func (u *Updater) increaseHierarchicalIntegralShare(id tree.ID, delta resource.Share) {
	for cur := id; cur != tree.None; cur = u.t.Parent(cur) {
		a := &u.el[cur].attrs
		inc := a.ProposedIntegralShare.Add(delta)
		if cur != tree.Root {
			inc = adjustProposedIntegralShare(a.LimitsShare, a.StrongGuaranteeShare, inc)
		}
		a.ProposedIntegralShare = inc
	}
}

func (u *Updater) burstIntegralShares() {
	for _, id := range u.burst {
		e := &u.el[id]
		ratio := min(e.burstRatio, u.volumeRatio(id))
		proposed := resource.Uniform(ratio).Min(u.hierarchicalAvailableLimits(id))
		proposed = adjustProposedIntegralShare(e.attrs.LimitsShare, e.attrs.StrongGuaranteeShare, proposed)
		e.attrs.ProposedIntegralShare = proposed
		u.prepare(id)
		e.attrs.ProposedIntegralShare = resource.Share{}
		within := e.fsbs.ValueAt(0)
		integral := within.Sub(e.attrs.StrongGuaranteeShare).Max(resource.Share{})
		u.increaseHierarchicalIntegralShare(id, integral)
		e.lastShareRatio = integral.MaxComponent()
	}
}

func (u *Updater) relaxedIntegralShares() {
	if len(u.relaxed) == 0 {
		return
	}
	avail := resource.Ones()
	for _, c := range u.children(tree.Root) {
		a := &u.el[c].attrs
		avail = avail.Sub(a.StrongGuaranteeShare.Add(a.ProposedIntegralShare).Min(a.DemandShare))
	}
	avail = avail.Max(resource.Share{})
	pools, weights, limits := u.relaxedPools[:0], u.relaxedW[:0], u.relaxedLim[:0]
	for _, id := range u.relaxed {
		r := u.volumeRatio(id)
		if r == 0 {
			continue
		}
		e := &u.el[id]
		pools = append(pools, id)
		weights = append(weights, r)
		limits = append(limits, e.attrs.LimitsShare)
		mult := u.t.Pool(id).Integral.RelaxedShareMultiplierLimit.Or(u.cfg.RelaxedShareMultiplierLimit)
		lim := resource.Uniform(r).Min(resource.Uniform(e.flowRatio * mult)).Add(e.attrs.StrongGuaranteeShare)
		e.attrs.LimitsShare = e.attrs.LimitsShare.Min(lim)
		u.prepare(id)
	}
	u.relaxedPools, u.relaxedW, u.relaxedLim = pools, weights, limits
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
			e := &u.el[id]
			fs := e.fsbs.ValueAt(min(1, f*weights[i]))
			sum = sum.Add(fs.Sub(e.attrs.StrongGuaranteeShare).Max(resource.Share{}))
		}
		return avail.Dominates(sum)
	})
	for i, id := range pools {
		e := &u.el[id]
		within := e.fsbs.ValueAt(min(1, f*weights[i]))
		integral := within.Sub(e.attrs.StrongGuaranteeShare).Max(resource.Share{})
		e.attrs.LimitsShare = limits[i]
		limited := integral.Min(u.hierarchicalAvailableLimits(id))
		u.increaseHierarchicalIntegralShare(id, limited)
		e.lastShareRatio = limited.MaxComponent()
	}
}

// ---- top-down distribution (spec.md §2.9) ----

type shareType int

const (
	regular shareType = iota
	promisedGuarantee
)

func (u *Updater) setDetailed(id tree.ID, total resource.Share, t shareType) {
	a := &u.el[id].attrs
	d := &a.FairShare
	if t == promisedGuarantee {
		d = &a.PromisedGuaranteeFairShare
		u.promised[id] = true
	}
	d.Total = total
	d.StrongGuarantee = total.Min(a.StrongGuaranteeShare)
	d.IntegralGuarantee = total.Sub(d.StrongGuarantee).Min(a.ProposedIntegralShare)
	d.WeightProportional = total.Sub(d.StrongGuarantee).Sub(d.IntegralGuarantee)
}

// childSuggestion is the suggestion child i (in the pool's child order: tree
// order, or FIFO order for FIFO pools) receives at fit factor ff.
func (u *Updater) childSuggestion(id tree.ID, fifo bool, i int, c tree.ID, ff, wmin float64) float64 {
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
	return min(1, ff*(u.el[c].attrs.Weight/wmin))
}

// distribute is the classic top-down pass with a scalar suggestion.
func (u *Updater) distribute(id tree.ID, s float64, t shareType) {
	e := &u.el[id]
	if t == regular {
		st := resource.Uniform(s)
		if e.distValid && e.distTarget == st && e.distGen == e.fnGen {
			return
		}
		e.distValid, e.distTarget, e.distGen = true, st, e.fnGen
	}
	if e.kind == tree.KindOperation {
		u.setDetailed(id, e.fsbs.ValueAt(s), t)
		return
	}
	kids := u.children(id)
	if len(kids) == 0 {
		u.setDetailed(id, resource.Share{}, t)
		return
	}
	fifo := u.t.Pool(id).Mode == tree.ModeFIFO
	if fifo {
		kids = u.fifoOrder(id)
	}
	wmin := u.minChildWeight(id)
	target := e.fsbs.ValueAt(s)
	bound := target.Add(resource.EpsilonShare())
	check := func(ff float64) bool {
		var sum resource.Share
		for i, c := range kids {
			sum = sum.Add(u.el[c].fsbs.ValueAt(u.childSuggestion(id, fifo, i, c, ff, wmin)))
		}
		return bound.Dominates(sum)
	}
	ff := e.mffbs.ValueAt(s)
	if !check(ff) {
		ff = plf.InverseLowerBound(0, ff, check)
	}
	for i, c := range kids {
		u.distribute(c, u.childSuggestion(id, fifo, i, c, ff, wmin), t)
	}
	u.setDetailed(id, target, t)
}

// childShares fills u.shares with the shares the children of id receive at
// improved fit factor ff (the reference's child fair shares by fit factor).
func (u *Updater) childShares(id tree.ID, ff float64, dst []resource.Share) []resource.Share {
	dst = dst[:0]
	if u.t.Pool(id).Mode == tree.ModeFIFO {
		kids := u.fifoOrder(id)
		sat := int(ff)
		frac := ff - float64(sat)
		for i, c := range kids {
			var v resource.Share
			switch {
			case i < sat:
				v = u.el[c].fsbs.ValueAt(1)
			case i == sat && frac != 0:
				v = u.el[c].fsbs.ValueAt(frac)
			}
			dst = append(dst, v)
		}
		return dst
	}
	e := &u.el[id]
	kids := u.children(id)
	wmin := u.minChildWeight(id)
	n := len(e.cpS)
	k := int(ff)
	if k >= n-1 {
		k = n - 1
	}
	frac := ff - float64(k)
	for j, c := range kids {
		f := &u.el[c].fsbs
		scale := u.el[c].attrs.Weight / wmin
		l, r := scaledLimits(f, scale, e.cpS[k])
		// Value at k from the left: children before the jump's owner already
		// took their right limit.
		atK := l
		if j < int(e.cpIdx[k]) {
			atK = r
		}
		if frac == 0 {
			dst = append(dst, atK)
			continue
		}
		from := l
		if j <= int(e.cpIdx[k]) {
			from = r
		}
		l2, r2 := scaledLimits(f, scale, e.cpS[k+1])
		to := l2
		if j < int(e.cpIdx[k+1]) {
			to = r2
		}
		dst = append(dst, interpolate(float64(k), float64(k+1), from, to, ff))
	}
	return dst
}

// spare returns reusable storage for the child shares at recursion depth d.
func (u *Updater) spare(d int) []resource.Share {
	if d < len(u.stackSpare) {
		return u.stackSpare[d][:0]
	}
	return nil
}

// fitFactorFor finds the largest improved fit factor at which the children's
// shares fit into target (the reference bisects over the whole domain; this
// finds the same double faster). The pool's own FSBFF equals the children's
// sum at integer fit factors, so a binary search over its integer points
// finds the piece; inside it the sum is linear, solved per resource and then
// refined to the exact largest double.
func (u *Updater) fitFactorFor(id tree.ID, target resource.Share) float64 {
	e := &u.el[id]
	f := &e.fsbff
	hi := f.RightBound()
	pred := func(ff float64) bool {
		u.shares = u.childShares(id, ff, u.shares)
		var s resource.Share
		for _, v := range u.shares {
			s = s.Add(v)
		}
		return target.Dominates(s)
	}
	if pred(hi) {
		return hi
	}
	if !pred(0) {
		return 0
	}
	// Largest integer k in [0, hi) with f(k) fitting.
	lo, up := 0, int(hi)
	for lo+1 < up {
		mid := int(uint(lo+up) >> 1)
		if target.Dominates(f.ValueAt(float64(mid))) {
			lo = mid
		} else {
			up = mid
		}
	}
	k := float64(lo)
	_, a := f.LeftRightLimitAt(k)
	b := f.ValueAt(k + 1)
	cand := k + 1
	for r := range resource.Count {
		if d := b[r] - a[r]; d > 0 && target[r] < b[r] {
			cand = min(cand, k+(target[r]-a[r])/d)
		}
	}
	return plf.Refine(k, k+1, cand, pred)
}

// distributeVec is the improved top-down pass with a vector target.
func (u *Updater) distributeVec(id tree.ID, target resource.Share, t shareType) {
	e := &u.el[id]
	if t == regular {
		if e.distValid && e.distTarget == target && e.distGen == e.fnGen && e.attrs.FairShare.Total == target {
			return
		}
		e.distValid, e.distTarget, e.distGen = true, target, e.fnGen
	}
	if e.kind == tree.KindOperation {
		u.setDetailed(id, target, t)
		return
	}
	kids := u.children(id)
	if len(kids) == 0 {
		u.setDetailed(id, resource.Share{}, t)
		return
	}
	ff := u.fitFactorFor(id, target)
	if ff < resource.Epsilon {
		ff = 0
	}
	depth := len(u.stack)
	u.stack = append(u.stack, u.childShares(id, ff, u.spare(depth)))
	if u.t.Pool(id).Mode == tree.ModeFIFO {
		kids = u.fifoOrder(id)
	}
	for i, c := range kids {
		u.distributeVec(c, u.stack[depth][i], t)
	}
	for len(u.stackSpare) <= depth {
		u.stackSpare = append(u.stackSpare, nil)
	}
	u.stackSpare[depth] = u.stack[depth]
	u.stack = u.stack[:depth]
	u.setDetailed(id, target, t)
}

// ---- promised guarantee and root (spec.md §2.10–2.11) ----

func (u *Updater) promisedFairShare(id tree.ID) {
	if u.el[id].kind == tree.KindOperation {
		return
	}
	if u.t.Pool(id).ComputePromisedGuaranteeFairShare {
		if u.cfg.EnableImprovedFitFactor {
			u.distributeVec(id, u.el[id].fsbs.ValueAt(0), promisedGuarantee)
		} else {
			u.distribute(id, 0, promisedGuarantee)
		}
		return
	}
	for _, c := range u.children(id) {
		u.promisedFairShare(c)
	}
}

func (u *Updater) rootFairShare() {
	var strong, total resource.Share
	for _, c := range u.children(tree.Root) {
		a := &u.el[c].attrs
		strong = strong.Add(a.FairShare.StrongGuarantee)
		total = total.Add(a.FairShare.Total)
	}
	a := &u.el[tree.Root].attrs
	static := a.StrongGuaranteeShare
	a.StrongGuaranteeShare = strong
	u.setDetailed(tree.Root, total, regular)
	a.StrongGuaranteeShare = static
}

// integralAttributes fills the integral pools' orchid attributes (api.md §5).
func (u *Updater) integralAttributes() {
	for _, id := range u.pre {
		e := &u.el[id]
		ia := &e.attrs.Integral
		if !u.isIntegral(id) {
			*ia = IntegralAttributes{}
			continue
		}
		ia.Type = u.t.Pool(id).Integral.Type
		for r := range resource.Count {
			ia.AccumulatedVolume[r] = e.volume[r]
		}
		ia.AccumulatedVolume[resource.CPU] /= resource.CPUScale
		ia.AccumulatedResourceRatioVolume = u.volumeRatio(id) * u.cfg.SmoothPeriodS
		ia.Capacity = u.capacity(id)
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
