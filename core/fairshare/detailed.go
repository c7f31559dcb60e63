package fairshare

import (
	"math"

	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The detailed decomposition of a fair share into its strong-guarantee,
// integral-guarantee and weight-proportional parts, and the root's fair
// share (docs/semantics.md#fair-share, step 11 of the update).

// setDetailed sets element id's fair share (or, for promisedGuarantee, its
// promised-guarantee fair share) to total and decomposes it by the element's
// strong-guarantee and proposed integral shares.
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

// setOpDetailed is setDetailed(id, total, regular) for an operation, whose
// strong-guarantee and proposed integral shares are zero (updateOp and
// layout set them so, and nothing else writes an operation's): the same
// expressions with the zeros as constants, bit for bit the same, without
// reading the two shares, which lie two cache lines past the fair share in
// Attributes (opAttrs writes tens of thousands of operations' per update).
func (u *Updater) setOpDetailed(id tree.ID, total resource.Share) {
	a := &u.attrs[id]
	if invariants.Enabled {
		invariants.Check(zeroBits(&a.StrongGuaranteeShare) && zeroBits(&a.ProposedIntegralShare),
			"fairshare: operation %q has strong guarantee share %v and proposed integral share %v",
			u.tree.Name(id), a.StrongGuaranteeShare, a.ProposedIntegralShare)
	}
	var zero resource.Share
	d := &a.FairShare
	d.Total = total
	d.StrongGuarantee = total.Min(zero)
	d.IntegralGuarantee = total.Sub(d.StrongGuarantee).Min(zero)
	d.WeightProportional = total.Sub(d.StrongGuarantee).Sub(d.IntegralGuarantee)
}

// zeroBits reports whether every component of s is +0 (the zero value).
func zeroBits(s *resource.Share) bool {
	for _, v := range s {
		if math.Float64bits(v) != 0 {
			return false
		}
	}
	return true
}

// detailPools decomposes every pool's fair share again (docs/semantics.md#fair-share; the
// root's is rootFairShare's). The top-down pass decomposes what it visits,
// but it skips a subtree whose target and functions are unchanged, and a
// pool's decomposition depends on its strong-guarantee and proposed integral
// shares, which can change without changing its functions (they depend on
// the sum of the two) or its fair share: a pool whose strong guarantee grows
// by what its integral share shrinks (issue 19). An operation's
// decomposition needs nothing: it has neither share, so it changes only with
// its fair share, which the top-down pass visits.
//
// NB: checking each pool's two shares against those it was last decomposed
// with costs about as much as decomposing it again, so every pool is: one
// pass over the pools, as the bottom-up passes make anyway.
func (u *Updater) detailPools() {
	u.run(taskDetail, u.poolChunks)
}

// detailPoolsOf decomposes the fair shares of the pools u.poolsByID[lo:hi].
func (u *Updater) detailPoolsOf(lo, hi int) {
	for _, p := range u.poolsByID[lo:hi] {
		if id := u.pools[p].id; id != tree.Root {
			u.setDetailed(id, u.attrs[id].FairShare.Total, regular)
		}
	}
}

// rootFairShare sets the root's fair share to the sum of its children's and
// its strong part to the sum of theirs.
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
