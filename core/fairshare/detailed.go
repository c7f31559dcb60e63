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
