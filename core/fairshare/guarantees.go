package fairshare

import (
	"math"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Strong guarantees and weights: inference top-down (docs/semantics.md#strong-guarantees, step 2 of
// docs/semantics.md#fair-share), the overcommit adjustment at the root and the tiered adjustment
// top-down, and the pools' weights, inferred from their
// guarantees when the tree says so.

// ---- strong guarantee inference (docs/semantics.md#strong-guarantees) ----

// inferStrongGuarantees infers the pools' strong guarantees; operations have
// none (their inferred guarantee is zero). Top-down: the split pools, then
// the tasks' subtrees in parallel (parallel.go).
func (u *Updater) inferStrongGuarantees() {
	u.pool(tree.Root).inferred = u.total
	for _, p := range u.splitPre {
		u.inferKids(p)
	}
	u.run(taskInfer, u.allTasks)
}

// inferKids infers the strong guarantees of pool p's children from p's.
func (u *Updater) inferKids(p int32) {
	main := u.cfg.MainResource
	kids := u.kids(p)
	var explicit resource.Vec
	for _, c := range kids {
		ce := &u.pools[c]
		ce.inferred = u.tree.Pool(ce.id).StrongGuarantee.OrZero()
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
			if u.tree.Pool(ce.id).StrongGuarantee.Set[r] {
				continue
			}
			totalImplicit += implicitGuarantee(float64(ce.inferred[main]), parentMain, parentR)
		}
		scale := 1.0
		if pe.id != tree.Root && totalImplicit > float64(residual[r]) {
			scale = float64(residual[r]) / totalImplicit
		}
		for _, c := range kids {
			ce := &u.pools[c]
			if u.tree.Pool(ce.id).StrongGuarantee.Set[r] {
				continue
			}
			v := implicitGuarantee(float64(ce.inferred[main]), parentMain, parentR)
			if scale != 1 {
				v *= scale
			}
			ce.inferred[r] = int64(math.Round(v))
		}
	}
}

// ---- guarantee adjustment (docs/semantics.md#strong-guarantees) ----

// adjustGuarantees adjusts the strong guarantees (docs/semantics.md#strong-guarantees) and sets
// the pools' weights, raising the overcommit alerts. With the
// guarantees kept (Updater.keepGuarantees) it only raises the alerts it
// raised when it computed them.
func (u *Updater) adjustGuarantees() {
	if u.keepGuarantees {
		u.alerts = append(u.alerts, u.guaranteeAlerts...)
		return
	}
	start := len(u.alerts)
	u.adjustAll()
	u.guaranteeAlerts = append(u.guaranteeAlerts[:0], u.alerts[start:]...)
}

// adjustAll is adjustGuarantees computing the guarantees.
func (u *Updater) adjustAll() {
	rootSlot := u.elems[tree.Root].pool
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
	// The other pools' tiers were split bottom-up with their subtree
	// attributes (cumulativeTree): their strong guarantee shares were final
	// there, only the root's changes above.
	u.tiersPool(rootSlot)
	// Top-down, the weights with the adjusted guarantees: the split pools,
	// then the tasks' subtrees in parallel (parallel.go).
	for _, p := range u.splitPre {
		u.adjustStrongPool(p)
		u.weightOf(p)
	}
	u.run(taskAdjust, u.allTasks)
}

// tiersPool splits pool p's strong guarantee into the priority and regular
// tiers, its children's tiers being set. Operations have no guarantee: both
// their tiers are zero.
func (u *Updater) tiersPool(p int32) {
	var childPriority resource.Share
	for _, c := range u.kids(p) {
		childPriority = childPriority.Add(u.pools[c].tierPriority)
	}
	e := &u.pools[p]
	id := e.id
	c := u.tree.Pool(id)
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

// adjustStrong adjusts the strong guarantees in pool p's subtree top-down,
// and sets the weights, which depend on the adjusted guarantees of a pool
// and its parent.
func (u *Updater) adjustStrong(p int32) {
	u.adjustStrongPool(p)
	u.weightOf(p)
	for _, c := range u.kids(p) {
		u.adjustStrong(c)
	}
}

// adjustStrongPool caps pool p's strong guarantee share by its limits and
// adjusts its children's tiers to fit into it.
func (u *Updater) adjustStrongPool(p int32) {
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
}

// ---- weights (docs/semantics.md#fair-share) ----

// weightOf sets pool slot p's weight (docs/semantics.md#fair-share), its and its parent's
// strong guarantee shares being adjusted; operations' weights are set by
// updateOperations.
func (u *Updater) weightOf(p int32) {
	ps := &u.pools[p]
	id := ps.id
	if id == tree.Root {
		u.setWeight(id, 1)
		return
	}
	c := u.tree.Pool(id)
	if c.Weight.Set {
		u.setWeight(id, c.Weight.V)
		return
	}
	w := 1.0
	if m := u.cfg.InferWeightFromGuaranteesShareMultiplier; m.Set {
		parent := u.tree.Parent(id)
		pp := u.pool(parent)
		own := u.attrs[id].StrongGuaranteeShare.MaxComponent() + ps.totalFlowRatio
		par := u.attrs[parent].StrongGuaranteeShare.MaxComponent() + pp.totalFlowRatio
		if own > resource.Epsilon && par > resource.Epsilon {
			w = m.V * own / par
		}
	}
	u.setWeight(id, w)
}

// implicitGuarantee is the part of the parent's guarantee parentR in a
// resource that a child without an explicit guarantee in it is inferred to
// have: the child's share of the parent's main-resource guarantee
// (docs/semantics.md#strong-guarantees).
func implicitGuarantee(childMain, parentMain, parentR float64) float64 {
	ratio := 0.0
	if parentMain > 0 {
		ratio = childMain / parentMain
	}
	return ratio * parentR
}
