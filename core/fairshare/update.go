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
// Layout (style.md §2): the state is split by who reads it. Attributes (the
// output) and a small elem (functions by suggestion, generations) are
// indexed by tree.ID; operations' cached inputs are indexed by tree.ID too;
// everything only pools have (subtree totals, guarantees, integral volumes,
// fit-factor functions) lives in a dense table of pool slots. Operations are
// visited once per update, in ID order (updateOperations): that pass
// detects their changes, rebuilds their functions and sums their usage and
// demand into their parents, so the bottom-up and top-down passes over pools
// skip them. Only the top-down distribution visits operations again, and
// only below pools whose distribution changed.
//
// Ownership and allocation: the Updater owns per-element state and every
// function buffer; they are reused across updates, so a steady tree updates
// without allocating. An Updater is not safe for concurrent use; the caller
// serialises Update with tree mutations.
package fairshare

import (
	"fmt"
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// elem is what every element has, indexed by tree.ID.
type elem struct {
	pool int32 // slot in Updater.pools; -1 for operations
	kind tree.Kind
}

// nodeState is the per-element state of the function building and the
// top-down pass, indexed by position (see Updater.pos).
type nodeState struct {
	// fnGen changes whenever the fair share by suggestion (Updater.fs) is
	// rebuilt, so that parents notice.
	fnGen uint64
	// The last top-down visit: skipped when target and functions are unchanged.
	distGen    uint64
	distTarget resource.Share
	built      bool
	distValid  bool
	op         bool // an operation
}

// opRaw is an operation's input from the tree as of the last update,
// indexed by tree.ID (read in ID order, as the tree stores it).
type opRaw struct {
	demand, usage resource.Vec
	limits        tree.PartialVec
	weight        tree.OptFloat
	gang          bool
	valid         bool
}

// opInput is what an operation's function and its parent's sums are built
// from, indexed by position (read in position order).
type opInput struct {
	demand resource.Vec // max(demand, usage)
	usage  resource.Vec
	// Shares as in the attributes.
	usageShare, demandShare, limitsShare resource.Share
	gang                                 bool
	changed                              bool  // input changed since the last update
	weightChanged                        bool  // weight changed since the last update
	pending                              bool  // the function is to be rebuilt (by prepare)
	parent                               int32 // the parent's pool slot
}

// poolState is the state only pools (and the root) have, in a dense table.
type poolState struct {
	id tree.ID

	usage, demand     resource.Vec // absolute, whole subtree
	opUsage, opDemand resource.Vec // sums over the operation children
	inferred          resource.Vec

	tierPriority, tierRegular resource.Share

	burstRatio, flowRatio           float64
	totalBurstRatio, totalFlowRatio float64

	// Integral state, persisted across updates.
	volume         [resource.Count]float64
	lastShareRatio float64
	overflow       [resource.Count]float64
	acceptable     [resource.Count]float64
	childOverflow  [resource.Count]float64
	acceptedFree   [resource.Count]float64

	// Fair share by fit factor and (classic mode) max fit factor by
	// suggestion. ffKey records what fsbff was built from and ffGen counts
	// its rebuilds; sugKey records what fsbs and mffbs were built from.
	fsbff   plf.Vec
	mffbs   plf.Scalar
	ffKey   ffKey
	ffGen   uint64
	ffValid bool
	sugKey  sugKey
	// kidsDirty: an operation child's function or weight, or the list of
	// children, changed since fsbff was built.
	kidsDirty bool
	kidsSig   uint64 // signature of the children list
	// Improved-mode critical points of a fair-share-mode pool: suggestion and
	// the child whose jump it is, one per unit of the fit factor.
	cpS   []float64
	cpIdx []int32

	// The fair share by suggestion under the integral passes' temporary
	// guarantee or limits (spec.md §2.6–2.7), rebuilt each update in
	// Updater.tmpArena from the pool's (kept) fair share by fit factor; the
	// pool's own fsbs is left alone, so an unchanged pool is not rebuilt.
	tmpFsbs plf.Vec

	// Pool children, a range of Updater.poolKids.
	kidStart, kidEnd int32
}

// Updater runs fair-share updates over a tree. See the package documentation.
type Updater struct {
	t   *tree.Tree
	cfg Config

	attrs []Attributes
	el    []elem
	opRaw []opRaw   // by ID
	opIn  []opInput // by position
	opIDs []tree.ID // the operations, ascending
	names []string  // per ID: the name the state belongs to (recycled IDs)

	// State by position: an element's position is its index in childBuf
	// (the root's is len(childBuf)), so a pool's children are adjacent, in
	// the order the pool reads them, and operations are visited in order.
	pos       []int32
	fs        []plf.Vec // fair shares by suggestion
	fsSpare   []plf.Vec
	kw        []float64 // weights
	node      []nodeState
	nodeSpare []nodeState
	opInSpare []opInput
	opPos     []int32 // the operations' positions, ascending

	pools     []poolState
	freePools []int32

	layoutVersion uint64
	layoutValid   bool
	prePools      []int32 // pool slots in pre-order
	childStart    []int32
	childEnd      []int32
	childBuf      []tree.ID
	fifoBuf       []tree.ID
	poolKids      []int32 // pool children's slots, per pool a range
	burst         []tree.ID
	relaxed       []tree.ID

	total    resource.Vec
	now      float64
	prev     float64
	hasPrev  bool
	promised []tree.ID // elements whose promised fair share is set

	// What the operations' attributes and functions were computed with.
	opTotal    resource.Vec
	opStepGang bool
	opValid    bool

	alerts []string
	gen    uint64 // function generations, unique across elements

	// scratch
	opFF         plf.Vec
	scratchVec   plf.Vec
	order        []int32
	shares       []resource.Share
	relaxedPools []tree.ID
	relaxedW     []float64
	sweep        []sweepChild
	heap         []sweepKey
	stack        [][]resource.Share
	stackSpare   [][]resource.Share
	tmpArena     plf.Vec // storage of the temporary functions (tmpFsbs)
	tmpUsed      int     // points of tmpArena used in this update
	tmpNeed      int     // points the temporary functions took in this update
	pieceFrom    []resource.Share
	pieceTo      []resource.Share
	pieceAt      []resource.Share
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
func (u *Updater) Attributes(id tree.ID) *Attributes { return &u.attrs[id] }

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
	u.layout()
	if p := u.el[id].pool; p >= 0 {
		u.pools[p].volume = v
	}
}

// Invalidate makes the next update recompute every element's functions, as
// the first update does. Updates are otherwise incremental: an element's
// functions are rebuilt only when their inputs changed, and the top-down pass
// skips subtrees whose target and functions are unchanged; the results are
// the same either way.
func (u *Updater) Invalidate() {
	for i := range u.node {
		u.node[i].built = false
		u.node[i].distValid = false
	}
	for i := range u.pools {
		u.pools[i].ffValid = false
	}
}

// FairShareBySuggestion returns element id's fair-share-by-suggestion
// function of the last update (for introspection and tests).
func (u *Updater) FairShareBySuggestion(id tree.ID) *plf.Vec { return u.fsbs(id) }

// fsbs returns element id's fair share by suggestion.
func (u *Updater) fsbs(id tree.ID) *plf.Vec { return &u.fs[u.pos[id]] }

// nd returns element id's node state.
func (u *Updater) nd(id tree.ID) *nodeState { return &u.node[u.pos[id]] }

// kidFs returns the fair shares by suggestion of id's children, in tree order.
func (u *Updater) kidFs(id tree.ID) []plf.Vec { return u.fs[u.childStart[id]:u.childEnd[id]] }

// kidW returns the weights of id's children, in tree order.
func (u *Updater) kidW(id tree.ID) []float64 { return u.kw[u.childStart[id]:u.childEnd[id]] }

// setWeight sets element id's weight.
func (u *Updater) setWeight(id tree.ID, w float64) {
	u.attrs[id].Weight = w
	u.kw[u.pos[id]] = w
}

// children returns id's children in tree order.
func (u *Updater) children(id tree.ID) []tree.ID {
	return u.childBuf[u.childStart[id]:u.childEnd[id]]
}

// fifoOrder returns a FIFO pool's children in FIFO order.
func (u *Updater) fifoOrder(id tree.ID) []tree.ID {
	return u.fifoBuf[u.childStart[id]:u.childEnd[id]]
}

// kids returns the slots of pool slot p's pool children, in tree order.
func (u *Updater) kids(p int32) []int32 {
	ps := &u.pools[p]
	return u.poolKids[ps.kidStart:ps.kidEnd]
}

// pool returns id's pool state; id must be a pool or the root.
func (u *Updater) pool(id tree.ID) *poolState { return &u.pools[u.el[id].pool] }

// layout sizes the per-element state to the tree, resets the state of
// recycled IDs and rebuilds the pre-order and children lists after
// structural changes.
func (u *Updater) layout() {
	if u.layoutValid && u.layoutVersion == u.t.StructureVersion() {
		return
	}
	n := u.t.Len()
	if len(u.el) < n {
		grow := n - len(u.el)
		u.attrs = append(u.attrs, make([]Attributes, grow)...)
		u.el = append(u.el, make([]elem, grow)...)
		u.opRaw = append(u.opRaw, make([]opRaw, grow)...)
		u.names = append(u.names, make([]string, grow)...)
		u.childStart = append(u.childStart, make([]int32, grow)...)
		u.childEnd = append(u.childEnd, make([]int32, grow)...)
		u.pos = append(u.pos, make([]int32, grow)...)
		for i := n - grow; i < n; i++ {
			u.el[i].pool = -1
			u.pos[i] = -1
		}
	}
	for i := range n {
		id := tree.ID(i)
		e := &u.el[id]
		k, name := u.t.Kind(id), u.t.Name(id)
		if e.kind == k && u.names[id] == name {
			continue
		}
		// A new element, or a recycled ID: start afresh, keeping buffers.
		if e.pool >= 0 {
			u.freePools = append(u.freePools, e.pool)
		}
		*e = elem{kind: k, pool: -1}
		u.pos[id] = -1 // no state to keep
		u.names[id] = name
		u.attrs[id] = Attributes{}
		u.opRaw[id] = opRaw{}
		if k == tree.KindPool || k == tree.KindRoot {
			e.pool = u.newPool(id)
		}
	}
	u.prePools = u.prePools[:0]
	u.childBuf = u.childBuf[:0]
	u.poolKids = u.poolKids[:0]
	u.burst, u.relaxed = u.burst[:0], u.relaxed[:0]
	u.t.Walk(func(id tree.ID) {
		if u.t.Kind(id) == tree.KindOperation {
			return
		}
		u.prePools = append(u.prePools, u.el[id].pool)
		if u.t.Kind(id) == tree.KindPool {
			switch u.t.Pool(id).Integral.Type {
			case tree.GuaranteeBurst:
				u.burst = append(u.burst, id)
			case tree.GuaranteeRelaxed:
				u.relaxed = append(u.relaxed, id)
			}
		}
	})
	for _, p := range u.prePools {
		ps := &u.pools[p]
		id := ps.id
		u.childStart[id] = int32(len(u.childBuf))
		ps.kidStart = int32(len(u.poolKids))
		h := uint64(14695981039346656037)
		for c := u.t.FirstChild(id); c != tree.None; c = u.t.NextSibling(c) {
			u.childBuf = append(u.childBuf, c)
			h = mix(h, uint64(c))
			if u.t.Kind(c) != tree.KindOperation {
				u.poolKids = append(u.poolKids, u.el[c].pool)
			}
		}
		u.childEnd[id] = int32(len(u.childBuf))
		ps.kidEnd = int32(len(u.poolKids))
		if h != ps.kidsSig {
			ps.kidsSig, ps.kidsDirty = h, true
		}
	}
	u.fifoBuf = append(u.fifoBuf[:0], u.childBuf...)
	// Move the state kept by position to the new positions.
	m := len(u.childBuf) + 1
	fs := slices.Grow(u.fsSpare[:0], m)[:m]
	clear(fs)
	node := slices.Grow(u.nodeSpare[:0], m)[:m]
	clear(node)
	opIn := slices.Grow(u.opInSpare[:0], m)[:m]
	clear(opIn)
	kw := slices.Grow(u.kw[:0:0], m)[:m]
	place := func(id tree.ID, p int32) {
		if old := u.pos[id]; old >= 0 {
			fs[p], node[p], opIn[p] = u.fs[old], u.node[old], u.opIn[old]
		}
		u.pos[id] = p
		kw[p] = u.attrs[id].Weight
	}
	for i, c := range u.childBuf {
		place(c, int32(i))
		node[i].op = u.t.Kind(c) == tree.KindOperation
	}
	place(tree.Root, int32(m-1))
	clear(u.fs)
	u.fs, u.fsSpare, u.kw = fs, u.fs, kw
	u.node, u.nodeSpare = node, u.node
	u.opIn, u.opInSpare = opIn, u.opIn
	// Operations by position: grouped by parent, parents in pre-order, so
	// their functions are allocated, and read by their parents, in one sweep.
	u.opIDs = u.opIDs[:0]
	for i := range n {
		if u.t.Kind(tree.ID(i)) == tree.KindOperation {
			u.opIDs = append(u.opIDs, tree.ID(i))
		}
	}
	u.opPos = u.opPos[:0]
	for _, p := range u.prePools {
		id := u.pools[p].id
		for i := u.childStart[id]; i < u.childEnd[id]; i++ {
			if c := u.childBuf[i]; u.t.Kind(c) == tree.KindOperation {
				u.opIn[i].parent = p
				u.opPos = append(u.opPos, i)
			}
		}
	}
	u.layoutVersion = u.t.StructureVersion()
	u.layoutValid = true
}

// newPool returns a fresh pool slot for id, reusing freed slots' buffers.
func (u *Updater) newPool(id tree.ID) int32 {
	if n := len(u.freePools); n > 0 {
		p := u.freePools[n-1]
		u.freePools = u.freePools[:n-1]
		old := &u.pools[p]
		*old = poolState{id: id, fsbff: old.fsbff, mffbs: old.mffbs,
			cpS: old.cpS[:0], cpIdx: old.cpIdx[:0], kidsDirty: true}
		return p
	}
	u.pools = append(u.pools, poolState{id: id, kidsDirty: true})
	return int32(len(u.pools) - 1)
}

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 1099511628211
	h ^= h >> 29
	return h
}

// Update runs one fair-share update at virtual time now with the cluster's
// total resources.
func (u *Updater) Update(total resource.Vec, now float64) {
	u.alerts = u.alerts[:0]
	u.layout()
	u.total = total
	u.now = now
	for _, p := range u.prePools {
		u.attrs[u.pools[p].id].ProposedIntegralShare = resource.Share{}
	}
	for _, id := range u.promised {
		if int(id) < len(u.attrs) {
			u.attrs[id].PromisedGuaranteeFairShare = Detailed{}
		}
	}
	u.promised = u.promised[:0]
	u.validatePoolConfigs()
	u.inferStrongGuarantees()
	u.updateOperations()
	u.cumulative(u.el[tree.Root].pool)
	u.consumeAndRefill()
	u.adjustGuarantees()
	u.computeWeights()
	u.tmpUsed, u.tmpNeed = 0, 0
	u.burstIntegralShares()
	u.relaxedIntegralShares()

	u.prepare(u.el[tree.Root].pool)
	if u.cfg.EnableImprovedFitFactor {
		u.distributeVec(tree.Root, u.fsbs(tree.Root).ValueAt(1), regular)
	} else {
		u.distribute(tree.Root, 1, regular)
	}
	u.promisedFairShare(u.el[tree.Root].pool)
	u.rootFairShare()
	u.integralAttributes()
	u.sizeTmpArena()
	u.prev, u.hasPrev = now, true
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

func (u *Updater) alertf(format string, args ...any) {
	u.alerts = append(u.alerts, fmt.Sprintf(format, args...))
}

// ---- configuration checks (spec.md §2.1 step 1) ----

func (u *Updater) validatePoolConfigs() {
	// Nested promised-guarantee pools and priority pools without a donor.
	for _, p := range u.prePools {
		id := u.pools[p].id
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

// inferStrongGuarantees infers the pools' strong guarantees; operations have
// none (their inferred guarantee is zero).
func (u *Updater) inferStrongGuarantees() {
	u.pool(tree.Root).inferred = u.total
	main := u.cfg.MainResource
	for _, p := range u.prePools {
		kids := u.kids(p)
		var explicit resource.Vec
		for _, c := range kids {
			ce := &u.pools[c]
			ce.inferred = u.t.Pool(ce.id).StrongGuarantee.OrZero()
			explicit = explicit.Add(ce.inferred)
		}
		pe := &u.pools[p]
		residual := pe.inferred.Sub(explicit).Max(resource.Vec{})
		parentMain := float64(pe.inferred[main])
		for r := range resource.Count {
			if resource.Kind(r) == main {
				continue
			}
			parentR := float64(pe.inferred[r])
			totalImplicit := 0.0
			for _, c := range kids {
				ce := &u.pools[c]
				if u.t.Pool(ce.id).StrongGuarantee.Set[r] {
					continue
				}
				ratio := 0.0
				if parentMain > 0 {
					ratio = float64(ce.inferred[main]) / parentMain
				}
				totalImplicit += ratio * parentR
			}
			scale := 1.0
			if pe.id != tree.Root && totalImplicit > float64(residual[r]) {
				scale = float64(residual[r]) / totalImplicit
			}
			for _, c := range kids {
				ce := &u.pools[c]
				if u.t.Pool(ce.id).StrongGuarantee.Set[r] {
					continue
				}
				ratio := 0.0
				if parentMain > 0 {
					ratio = float64(ce.inferred[main]) / parentMain
				}
				v := ratio * parentR
				if scale != 1 {
					v *= scale
				}
				ce.inferred[r] = int64(math.Round(v))
			}
		}
	}
}

// ---- operations (spec.md §2.1 step 4, §2.8) ----

// updateOperations visits every operation twice. First in ID order, the
// order of the tree's and the attributes' storage: it detects changed inputs
// and refreshes those operations' attributes. Then in position order (by
// parent): it marks the functions that need rebuilding (prepareOperations
// rebuilds them when the parent is prepared, while they are hot in cache)
// and sums usage and demand into the parents, telling them whether a child's
// function or weight changed.
func (u *Updater) updateOperations() {
	total := u.total
	stepGang := u.cfg.EnableStepFunctionForGangOperations
	sameEnv := u.opValid && u.opTotal == total && u.opStepGang == stepGang
	u.opTotal, u.opStepGang, u.opValid = total, stepGang, true
	for _, id := range u.opIDs {
		raw := &u.opRaw[id]
		spec := u.t.Operation(id)
		demand, usage := u.t.Demand(id), u.t.Usage(id)
		if !raw.valid || raw.weight != spec.Weight {
			raw.weight = spec.Weight
			u.setWeight(id, spec.Weight.Or(1))
			u.opIn[u.pos[id]].weightChanged = true
		}
		if raw.valid && sameEnv && raw.demand == demand && raw.usage == usage &&
			raw.limits == spec.ResourceLimits && raw.gang == spec.IsGang {
			continue
		}
		raw.demand, raw.usage, raw.limits, raw.gang, raw.valid = demand, usage, spec.ResourceLimits, spec.IsGang, true
		in := &u.opIn[u.pos[id]]
		in.usage, in.demand = usage, demand.Max(usage)
		in.gang, in.changed = spec.IsGang, true
		a := &u.attrs[id]
		a.LimitsShare = resource.FromResources(spec.ResourceLimits.OrInfinite().Min(total), total)
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
	for _, p := range u.prePools {
		ps := &u.pools[p]
		ps.opUsage, ps.opDemand = resource.Vec{}, resource.Vec{}
	}
	for _, pos := range u.opPos {
		in := &u.opIn[pos]
		e := &u.node[pos]
		ps := &u.pools[in.parent]
		if in.weightChanged {
			in.weightChanged = false
			ps.kidsDirty = true
		}
		if in.changed || !e.built {
			// Built by the parent's prepare, right before the parent reads it.
			in.changed, in.pending = false, true
			ps.kidsDirty = true
		}
		ps.opUsage = ps.opUsage.Add(in.usage)
		ps.opDemand = ps.opDemand.Add(in.demand)
	}
}

// ---- bottom-up attributes (spec.md §2.1 step 4) ----

func (u *Updater) cumulative(p int32) {
	ps := &u.pools[p]
	id := ps.id
	a := &u.attrs[id]
	total := u.total
	c := u.t.Pool(id)
	ps.burstRatio, ps.flowRatio = 0, 0
	if id != tree.Root && c.Integral.Type != tree.GuaranteeNone {
		ps.flowRatio = resource.GetMaxResourceRatio(c.Integral.ResourceFlow.OrZero(), total)
		ps.burstRatio = resource.GetMaxResourceRatio(c.Integral.BurstGuarantee.OrZero(), total)
	}
	ps.totalBurstRatio, ps.totalFlowRatio = ps.burstRatio, ps.flowRatio
	usage, demand := ps.opUsage, ps.opDemand
	for _, k := range u.kids(p) {
		u.cumulative(k)
		ce := &u.pools[k]
		ps.totalBurstRatio += ce.totalBurstRatio
		ps.totalFlowRatio += ce.totalFlowRatio
		usage = usage.Add(ce.usage)
		demand = demand.Add(ce.demand)
	}
	ps.usage, ps.demand = usage, demand
	limits := resource.InfiniteVec()
	if id != tree.Root {
		limits = c.ResourceLimits.OrInfinite()
	}
	a.LimitsShare = resource.FromResources(limits.Min(total), total)
	if c.Mode == tree.ModeFIFO {
		u.sortFifo(id)
	}
	a.StrongGuaranteeShare = resource.FromResources(ps.inferred, total)
	if usage.IsZero() {
		a.DominantResource = resource.DominantResource(demand, total)
	} else {
		a.DominantResource = resource.DominantResource(usage, total)
	}
	a.UsageShare = resource.FromResources(usage, total)
	a.DemandShare = resource.FromResources(demand, total)
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

// computeWeights sets every pool's weight (spec.md §2.13); operations'
// weights are set by updateOperations.
func (u *Updater) computeWeights() {
	m := u.cfg.InferWeightFromGuaranteesShareMultiplier
	for _, p := range u.prePools {
		ps := &u.pools[p]
		id := ps.id
		if id == tree.Root {
			u.setWeight(id, 1)
			continue
		}
		c := u.t.Pool(id)
		if c.Weight.Set {
			u.setWeight(id, c.Weight.V)
			continue
		}
		w := 1.0
		if m.Set {
			parent := u.t.Parent(id)
			pp := u.pool(parent)
			own := u.attrs[id].StrongGuaranteeShare.MaxComponent() + ps.totalFlowRatio
			par := u.attrs[parent].StrongGuaranteeShare.MaxComponent() + pp.totalFlowRatio
			if own > resource.Epsilon && par > resource.Epsilon {
				w = m.V * own / par
			}
		}
		u.setWeight(id, w)
	}
}

// ---- integral volumes (spec.md §2.5) ----

func (u *Updater) consumeAndRefill() {
	for _, p := range u.prePools {
		ps := &u.pools[p]
		ps.overflow, ps.acceptable, ps.childOverflow, ps.acceptedFree = [5]float64{}, [5]float64{}, [5]float64{}, [5]float64{}
	}
	for _, id := range u.burst {
		u.refill(id)
	}
	for _, id := range u.relaxed {
		u.refill(id)
	}
	root := u.el[tree.Root].pool
	u.overflowAndAcceptable(root)
	u.distributeFreeVolume(root)
}

func (u *Updater) canAcceptFreeVolume(id tree.ID) bool {
	if id == tree.Root {
		return false
	}
	return u.t.Pool(id).Integral.CanAcceptFreeVolume.Or(true)
}

func (u *Updater) capacity(ps *poolState) [resource.Count]float64 {
	c := u.total.Mul(ps.flowRatio)
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
	e := u.pool(id)
	dt := u.now - u.prev
	capacity := u.capacity(e)
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
	return u.t.Kind(id) == tree.KindPool && u.t.Pool(id).Integral.Type != tree.GuaranteeNone
}

func (u *Updater) overflowAndAcceptable(p int32) {
	e := &u.pools[p]
	if u.isIntegral(e.id) {
		return
	}
	var childAcceptable [resource.Count]float64
	for _, c := range u.kids(p) {
		u.overflowAndAcceptable(c)
		ce := &u.pools[c]
		for r := range resource.Count {
			e.childOverflow[r] += ce.overflow[r]
			childAcceptable[r] += ce.acceptable[r]
		}
	}
	accept := u.canAcceptFreeVolume(e.id)
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

func (u *Updater) distributeFreeVolume(p int32) {
	e := &u.pools[p]
	free := e.acceptedFree
	if u.isIntegral(e.id) {
		for r := range resource.Count {
			e.volume[r] += free[r]
		}
		return
	}
	kids := u.kids(p)
	if u.shouldDistributeFreeVolume(e.id) && (free != [5]float64{} || e.childOverflow != [5]float64{}) {
		for r := range resource.Count {
			free[r] += e.childOverflow[r]
			if free[r] == 0 {
				continue
			}
			hungry := u.order[:0]
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
			u.order = hungry
		}
	}
	for _, c := range kids {
		u.distributeFreeVolume(c)
	}
}

// volumeRatio is the integral share the pool's volume sustains for one
// smooth period (spec.md §2.5).
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

// ---- guarantee adjustment (spec.md §2.3–2.4) ----

func (u *Updater) adjustGuarantees() {
	rootSlot := u.el[tree.Root].pool
	root := &u.pools[rootSlot]
	ra := &u.attrs[tree.Root]
	flow := u.total.Mul(root.totalFlowRatio)
	burst := u.total.Mul(root.totalBurstRatio)
	var strong resource.Vec
	for _, c := range u.kids(rootSlot) {
		strong = strong.Add(u.pools[c].inferred)
	}
	if !u.total.Dominates(strong.Add(flow)) {
		u.alertf("strong guarantees %v and resource flows %v exceed total resources %v", strong, flow, u.total)
	}
	if !u.total.Dominates(strong.Add(burst)) {
		u.alertf("strong guarantees %v and burst guarantees %v exceed total resources %v", strong, burst, u.total)
		ones := resource.Ones()
		k := plf.InverseLowerBound(0, 1, func(k float64) bool {
			sum := ra.StrongGuaranteeShare.Mul(k)
			for _, p := range u.burst {
				sum = sum.Add(resource.Uniform(u.pool(p).burstRatio).Mul(k))
			}
			return ones.Dominates(sum)
		})
		ra.StrongGuaranteeShare = ra.StrongGuaranteeShare.Mul(k)
		for _, p := range u.burst {
			u.pool(p).burstRatio *= k
		}
	}
	u.tiers(rootSlot)
	u.adjustStrong(rootSlot)
}

// tiers splits strong guarantees into the priority and regular tiers.
// Operations have no guarantee: both their tiers are zero.
func (u *Updater) tiers(p int32) {
	var childPriority resource.Share
	for _, c := range u.kids(p) {
		u.tiers(c)
		childPriority = childPriority.Add(u.pools[c].tierPriority)
	}
	e := &u.pools[p]
	id := e.id
	c := u.t.Pool(id)
	strong := u.attrs[id].StrongGuaranteeShare
	switch {
	case id != tree.Root && c.EnablePriorityStrongGuaranteeAdjustment && u.hasDonorAncestor(id):
		e.tierPriority, e.tierRegular = strong, resource.Share{}
	case id != tree.Root && c.EnablePriorityStrongGuaranteeAdjustmentDonorship:
		e.tierPriority, e.tierRegular = resource.Share{}, strong
	default:
		e.tierPriority = childPriority
		e.tierRegular = strong.Sub(childPriority)
	}
}

func (u *Updater) adjustStrong(p int32) {
	e := &u.pools[p]
	a := &u.attrs[e.id]
	a.StrongGuaranteeShare = a.StrongGuaranteeShare.Min(a.LimitsShare)
	kids := u.kids(p)
	var fixed resource.Share
	tier := func(c int32, t int) *resource.Share {
		if t == 0 {
			return &u.pools[c].tierPriority
		}
		return &u.pools[c].tierRegular
	}
	for t := 0; t < 2; t++ {
		var sum resource.Share
		for _, c := range kids {
			sum = sum.Add(*tier(c, t))
		}
		avail := a.StrongGuaranteeShare.Sub(fixed).Max(resource.Share{})
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
					u.pools[c].tierRegular = resource.Share{}
				}
			}
			break
		}
		fixed = fixed.Add(sum)
	}
	for _, c := range kids {
		ce := &u.pools[c]
		u.attrs[ce.id].StrongGuaranteeShare = ce.tierPriority.Add(ce.tierRegular)
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
		a := &u.attrs[cur]
		res = res.Min(a.LimitsShare.Sub(a.StrongGuaranteeShare.Add(a.ProposedIntegralShare)))
	}
	return res
}

func (u *Updater) increaseHierarchicalIntegralShare(id tree.ID, delta resource.Share) {
	for cur := id; cur != tree.None; cur = u.t.Parent(cur) {
		a := &u.attrs[cur]
		inc := a.ProposedIntegralShare.Add(delta)
		if cur != tree.Root {
			inc = adjustProposedIntegralShare(a.LimitsShare, a.StrongGuaranteeShare, inc)
		}
		a.ProposedIntegralShare = inc
	}
}

func (u *Updater) burstIntegralShares() {
	for _, id := range u.burst {
		ps := u.pool(id)
		a := &u.attrs[id]
		ratio := min(ps.burstRatio, u.volumeRatio(ps))
		proposed := resource.Uniform(ratio).Min(u.hierarchicalAvailableLimits(id))
		proposed = adjustProposedIntegralShare(a.LimitsShare, a.StrongGuaranteeShare, proposed)
		fs := u.prepareTemporary(u.el[id].pool, a.StrongGuaranteeShare.Add(proposed), a.LimitsShare)
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
	for _, c := range u.kids(u.el[tree.Root].pool) {
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
		mult := u.t.Pool(id).Integral.RelaxedShareMultiplierLimit.Or(u.cfg.RelaxedShareMultiplierLimit)
		lim := resource.Uniform(r).Min(resource.Uniform(ps.flowRatio * mult)).Add(a.StrongGuaranteeShare)
		lim = a.LimitsShare.Min(lim)
		u.prepareTemporary(u.el[id].pool, a.StrongGuaranteeShare.Add(a.ProposedIntegralShare), lim)
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

// ---- top-down distribution (spec.md §2.9) ----

type shareType int

const (
	regular shareType = iota
	promisedGuarantee
)

func (u *Updater) setDetailed(id tree.ID, total resource.Share, t shareType) {
	a := &u.attrs[id]
	d := &a.FairShare
	if t == promisedGuarantee {
		d = &a.PromisedGuaranteeFairShare
		u.promised = append(u.promised, id)
	}
	d.Total = total
	d.StrongGuarantee = total.Min(a.StrongGuaranteeShare)
	d.IntegralGuarantee = total.Sub(d.StrongGuarantee).Min(a.ProposedIntegralShare)
	d.WeightProportional = total.Sub(d.StrongGuarantee).Sub(d.IntegralGuarantee)
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

// distribute is the classic top-down pass with a scalar suggestion.
func (u *Updater) distribute(id tree.ID, s float64, t shareType) {
	e := u.nd(id)
	if t == regular {
		st := resource.Uniform(s)
		if e.distValid && e.distTarget == st && e.distGen == e.fnGen {
			return
		}
		e.distValid, e.distTarget, e.distGen = true, st, e.fnGen
	}
	if u.el[id].kind == tree.KindOperation {
		u.setDetailed(id, u.fsbs(id).ValueAt(s), t)
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
		u.distribute(c, u.childSuggestion(fifo, i, c, ff, wmin), t)
	}
	u.setDetailed(id, target, t)
}

// ---- promised guarantee and root (spec.md §2.10–2.11) ----

func (u *Updater) promisedFairShare(p int32) {
	id := u.pools[p].id
	if u.t.Pool(id).ComputePromisedGuaranteeFairShare {
		if u.cfg.EnableImprovedFitFactor {
			u.distributeVec(id, u.fsbs(id).ValueAt(0), promisedGuarantee)
		} else {
			u.distribute(id, 0, promisedGuarantee)
		}
		return
	}
	for _, c := range u.kids(p) {
		u.promisedFairShare(c)
	}
}

func (u *Updater) rootFairShare() {
	var strong, total resource.Share
	for _, c := range u.children(tree.Root) {
		a := &u.attrs[c]
		strong = strong.Add(a.FairShare.StrongGuarantee)
		total = total.Add(a.FairShare.Total)
	}
	a := &u.attrs[tree.Root]
	static := a.StrongGuaranteeShare
	a.StrongGuaranteeShare = strong
	u.setDetailed(tree.Root, total, regular)
	a.StrongGuaranteeShare = static
}

// integralAttributes fills the integral pools' orchid attributes (api.md §5).
func (u *Updater) integralAttributes() {
	for _, p := range u.prePools {
		e := &u.pools[p]
		id := e.id
		ia := &u.attrs[id].Integral
		if !u.isIntegral(id) {
			*ia = IntegralAttributes{}
			continue
		}
		ia.Type = u.t.Pool(id).Integral.Type
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
