package fairshare

import (
	"slices"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Per-element attributes bottom-up (step 4 of docs/semantics.md#fair-share): operations'
// inputs and shares (updateOperations, which also decides which operations'
// functions are rebuilt), the pools' subtree totals, burst and flow ratios,
// limits, strong-guarantee, usage and demand shares (cumulative), and the
// FIFO pools' child order.

// ---- operations (docs/semantics.md#fair-share step 4, docs/design/fair-share.md#the-three-functions-of-an-element) ----

// updateOperations visits the operations twice. First in ID order, the
// order of the tree's and the attributes' storage: it detects changed inputs
// and refreshes those operations' attributes (updateOps). Then in position
// order, by parent (opSums, a flat pass over the pools in parallel): it
// marks the functions that need rebuilding (prepareOperations rebuilds them
// when the parent is prepared, while they are hot in cache) and sums usage
// and demand into the parents, telling them whether a child's function or
// weight changed.
//
// The first pass looks at the operations the tree's change log lists since
// the last update (tree.ChangesSince), the second at their parents only,
// unless every operation may have changed: after a structural change, when
// the total or the gang option changed, when the log no longer reaches
// back, or when it lists many; then both passes look at every operation,
// on chunks in parallel. An operation the log does not list has the inputs
// it had, so the two ways give the same state.
func (u *Updater) updateOperations() {
	total := u.total
	stepGang := u.cfg.EnableStepFunctionForGangOperations
	u.opSameEnv = u.opValid && u.opTotal == total && u.opStepGang == stepGang
	u.opTotal, u.opStepGang, u.opValid = total, stepGang, true
	ids, ok := u.tree.ChangesSince(u.opCursor)
	u.opCursor = u.tree.ChangeCursor()
	u.opSumsAll = !ok || !u.opSameEnv || u.opScanAll || len(ids) > len(u.opIDs)/changedOpsFraction
	if u.opSumsAll {
		u.opScanAll = false
		u.run(taskOps, u.opChunks)
	} else {
		for _, id := range ids {
			if u.tree.Kind(id) != tree.KindOperation {
				continue
			}
			u.updateOp(id, total, true)
			// The parent's sums, and its and its ancestors' subtree
			// attributes (cumulative).
			a := u.tree.Parent(id)
			u.pools[u.elems[a].pool].opsChanged = true
			for ; a != tree.None; a = u.tree.Parent(a) {
				ps := &u.pools[u.elems[a].pool]
				if ps.pathDirty {
					break // and so are its ancestors
				}
				ps.pathDirty = true
			}
		}
	}
	u.run(taskOpSums, u.poolChunks)
}

// changedOpsFraction: when the change log lists more than 1/changedOpsFraction
// of the operations, updateOperations looks at all of them, in parallel.
const changedOpsFraction = 16

// updateOps is updateOperations' first pass over the operations
// u.opIDs[lo:hi].
func (u *Updater) updateOps(lo, hi int) {
	total := u.total
	sameEnv := u.opSameEnv
	for _, id := range u.opIDs[lo:hi] {
		u.updateOp(id, total, sameEnv)
	}
}

// updateOp refreshes operation id's input and attributes if they changed.
func (u *Updater) updateOp(id tree.ID, total resource.Vec, sameEnv bool) {
	raw := &u.opRaw[id]
	spec := u.tree.Operation(id)
	demand, usage, nodesGen := u.tree.Demand(id), u.tree.Usage(id), u.tree.NodeLimitsGen(id)
	if !raw.valid || raw.weight != spec.Weight {
		raw.weight = spec.Weight
		u.setWeight(id, spec.Weight.Or(1))
		u.opIn[u.pos[id]].weightChanged = true
	}
	if raw.valid && sameEnv && raw.demand == demand && raw.usage == usage &&
		raw.limits == spec.ResourceLimits && raw.nodesGen == nodesGen && raw.gang == spec.IsGang {
		return
	}
	raw.demand, raw.usage, raw.limits, raw.nodesGen, raw.gang, raw.valid = demand, usage, spec.ResourceLimits, nodesGen, spec.IsGang, true
	in := &u.opIn[u.pos[id]]
	in.usage, in.demand = usage, demand.Max(usage)
	in.gang, in.changed = spec.IsGang, true
	a := &u.attrs[id]
	nodes := u.tree.NodeLimits(id)
	a.LimitsShare = limitsShare(spec.ResourceLimits, &nodes, total)
	a.StrongGuaranteeShare = resource.Share{}
	if usage.IsZero() {
		a.DominantResource = resource.DominantResource(in.demand, total)
	} else {
		a.DominantResource = resource.DominantResource(usage, total)
	}
	a.UsageShare = resource.FromResources(usage, total)
	a.DemandShare = resource.FromResources(in.demand, total)
	in.usageShare, in.demandShare, in.limitsShare = a.UsageShare, a.DemandShare, a.LimitsShare
}

// opSums is updateOperations' second pass for the pools u.poolsByID[lo:hi]:
// each pool's operation children, in position order, where one may have
// changed (opsChanged; every pool after a first pass over all operations:
// opSumsAll). It also starts every pool's per-update state: the
// proposed integral share (set by the integral passes) and the integral
// volumes' overflow and room (consumeAndRefill).
func (u *Updater) opSums(lo, hi int) {
	all := u.opSumsAll
	for _, p := range u.poolsByID[lo:hi] {
		ps := &u.pools[p]
		u.attrs[ps.id].ProposedIntegralShare = resource.Share{}
		ps.overflow, ps.acceptable, ps.childOverflow, ps.acceptedFree = [5]float64{}, [5]float64{}, [5]float64{}, [5]float64{}
		if !all && !ps.opsChanged {
			continue
		}
		ps.opsChanged, ps.fifoCheck = false, true
		var opUsage, opDemand resource.Vec
		for pos := u.childStart[ps.id]; pos < u.childEnd[ps.id]; pos++ {
			e := &u.node[pos]
			if !e.isOp {
				continue
			}
			in := &u.opIn[pos]
			if in.weightChanged {
				in.weightChanged = false
				ps.kidsDirty = true
			}
			if in.changed || !e.built {
				// Built by the parent's prepare, right before the parent reads it.
				in.changed, in.pending = false, true
				ps.kidsDirty = true
			}
			opUsage = opUsage.Add(in.usage)
			opDemand = opDemand.Add(in.demand)
		}
		ps.opUsage, ps.opDemand = opUsage, opDemand
	}
}

// limitsShare is an element's limits share (docs/semantics.md): its
// specified resource limits and the resources of the nodes its scheduling
// tag filter matches, the smaller of the two, as a share of the total; for
// an operation also at most its best allocation share.
func limitsShare(specified tree.PartialVec, nodes *tree.NodeLimits, total resource.Vec) resource.Share {
	limits := specified.OrInfinite()
	if !nodes.TagFilter.IsEmpty() {
		limits = limits.Min(nodes.TagFilter.OrInfinite())
	}
	s := resource.FromResources(limits.Min(total), total)
	if nodes.HasBestAllocationShare {
		s = s.Min(nodes.BestAllocationShare)
	}
	return s
}

// ---- bottom-up attributes (docs/semantics.md#fair-share step 4) ----

// cumulative computes the pools' subtree attributes bottom-up: the tasks'
// subtrees in parallel, then the split pools (parallel.go). The pools but
// the root also split their strong guarantees into tiers there (docs/semantics.md#strong-guarantees,
// guarantees.go): their strong guarantee shares are final once computed
// here until the adjustment, only the root's changes before it.
//
// With the guarantees kept (Updater.keepGuarantees) only the usage and
// demand of the pools above a changed operation are computed again
// (cumulativeUsage), from the root down the marked paths (pathDirty).
func (u *Updater) cumulative() {
	if u.keepGuarantees {
		u.cumulativePath(u.elems[tree.Root].pool)
		return
	}
	u.run(taskCumulative, u.allTasks)
	root := u.elems[tree.Root].pool
	for i := len(u.splitPre) - 1; i >= 0; i-- {
		p := u.splitPre[i]
		u.cumulativePool(p)
		if p != root {
			u.tiersPool(p)
		}
	}
}

// cumulativeTree computes the subtree attributes and tiers of p's subtree
// (p is not the root).
func (u *Updater) cumulativeTree(p int32) {
	for _, k := range u.kids(p) {
		u.cumulativeTree(k)
	}
	u.cumulativePool(p)
	u.tiersPool(p)
}

// cumulativePath computes the usage and demand attributes of pool p and of
// the pools below it that pathDirty marks.
func (u *Updater) cumulativePath(p int32) {
	for _, k := range u.kids(p) {
		if u.pools[k].pathDirty {
			u.cumulativePath(k)
		}
	}
	u.cumulativeUsage(p)
}

// cumulativePool computes pool p's subtree attributes from its children's.
func (u *Updater) cumulativePool(p int32) {
	u.cumulativeGuarantees(p)
	u.cumulativeUsage(p)
}

// cumulativeUsage computes pool p's usage and demand and their shares from
// its children's, and orders a FIFO pool's children.
func (u *Updater) cumulativeUsage(p int32) {
	ps := &u.pools[p]
	ps.pathDirty = false
	id := ps.id
	a := &u.attrs[id]
	total := u.total
	usage, demand := ps.opUsage, ps.opDemand
	for _, k := range u.kids(p) {
		ce := &u.pools[k]
		usage = usage.Add(ce.usage)
		demand = demand.Add(ce.demand)
	}
	ps.usage, ps.demand = usage, demand
	if ps.fifoCheck {
		ps.fifoCheck = false
		if u.tree.Pool(id).Mode == tree.ModeFIFO {
			u.sortFifo(id)
		}
	}
	if usage.IsZero() {
		a.DominantResource = resource.DominantResource(demand, total)
	} else {
		a.DominantResource = resource.DominantResource(usage, total)
	}
	a.UsageShare = resource.FromResources(usage, total)
	a.DemandShare = resource.FromResources(demand, total)
}

// cumulativeGuarantees computes what pool p's guarantees are made of, from
// the tree's configuration, the total and its children's: the integral
// ratios, the limits share and the unadjusted strong guarantee share.
func (u *Updater) cumulativeGuarantees(p int32) {
	ps := &u.pools[p]
	id := ps.id
	a := &u.attrs[id]
	total := u.total
	c := u.tree.Pool(id)
	ps.burstRatio, ps.flowRatio = 0, 0
	if id != tree.Root && c.Integral.Type != tree.GuaranteeNone {
		ps.flowRatio = resource.GetMaxResourceRatio(c.Integral.ResourceFlow.OrZero(), total)
		ps.burstRatio = resource.GetMaxResourceRatio(c.Integral.BurstGuarantee.OrZero(), total)
	}
	ps.totalBurstRatio, ps.totalFlowRatio = ps.burstRatio, ps.flowRatio
	for _, k := range u.kids(p) {
		ce := &u.pools[k]
		ps.totalBurstRatio += ce.totalBurstRatio
		ps.totalFlowRatio += ce.totalFlowRatio
	}
	if id != tree.Root {
		nodes := u.tree.NodeLimits(id)
		a.LimitsShare = limitsShare(c.ResourceLimits, &nodes, total)
	} else {
		a.LimitsShare = resource.FromResources(total, total)
	}
	a.StrongGuaranteeShare = resource.FromResources(ps.inferred, total)
	if id == tree.Root {
		// Σ children's strong guarantee shares; operations have none.
		var s resource.Share
		for _, k := range u.kids(p) {
			s = s.Add(u.attrs[u.pools[k].id].StrongGuaranteeShare)
		}
		a.StrongGuaranteeShare = s
	}
}

// sortFifo orders a FIFO pool's children by its fifo_sort_parameters
// (docs/semantics.md#fifo-pools); ties keep tree order. It runs when opSums looked at the
// pool's children (fifoCheck): the sort keys are the operations' weights,
// start times and pending job counts, which change only with the children
// (a layout) or through the setters the tree's change log lists.
//
// The order of the last update is kept when it still is that order, which
// the sort would then give again: sorted by the parameters, ties in tree
// order (by position). Checking costs a comparison per child, sorting
// O(C log C).
func (u *Updater) sortFifo(id tree.ID) {
	kids := u.fifoOrder(id)
	params := u.tree.Pool(id).SortParameters()
	cmp := func(a, b tree.ID) int {
		for _, p := range params {
			switch p {
			case tree.FifoWeight:
				wa, wb := u.tree.Operation(a).Weight.Or(1), u.tree.Operation(b).Weight.Or(1)
				if wa != wb {
					if wa > wb {
						return -1
					}
					return 1
				}
			case tree.FifoStartTime:
				sa, sb := u.tree.Operation(a).StartTime, u.tree.Operation(b).StartTime
				if sa != sb {
					if sa < sb {
						return -1
					}
					return 1
				}
			case tree.FifoPendingJobCount:
				pa, pb := u.tree.PendingJobCount(a), u.tree.PendingJobCount(b)
				if pa != pb {
					if pa < pb {
						return -1
					}
					return 1
				}
			}
		}
		return 0
	}
	sorted := true
	for i := 1; i < len(kids); i++ {
		if c := cmp(kids[i-1], kids[i]); c > 0 || c == 0 && u.pos[kids[i-1]] > u.pos[kids[i]] {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	copy(kids, u.children(id))
	slices.SortStableFunc(kids, cmp)
}
