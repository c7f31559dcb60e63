package fairshare

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The detailed decomposition of a fair share into its strong-guarantee,
// integral-guarantee and weight-proportional parts, and the root's fair
// share (spec.md §2.10, step 11 of §2.1).

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

// detailPools decomposes every pool's fair share again (spec.md §2.10; the
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
