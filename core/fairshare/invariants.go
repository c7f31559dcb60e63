package fairshare

import (
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The checks Update runs on its result under the invariants build tag and
// -race (core/internal/invariants); they compile to nothing otherwise.

// invariantSlack is the relative tolerance of the fair-share checks (with a
// floor of 1, so absolute for shares, which are at most 1). The top-down
// pass lets the children's sum exceed their pool's fair share by
// resource.Epsilon (the classic mode's precision repair, docs/semantics.md#fair-share) or by
// a few ulps per child (the improved mode, fitTolerance), and sums are added
// in different orders here and there.
const invariantSlack = 1e-8

// checkFairShares panics if the fair shares of the last update break what
// docs/semantics.md#fair-share guarantees:
//
//   - every element's fair share is a number, non-negative and at most 1
//     in every resource (fair shares are capped by limits shares, and
//     the root's limits share is the whole cluster);
//   - the fair shares of a pool's children sum to at most the pool's, per
//     resource (the top-down distribution, docs/design/fair-share.md#handing-the-shares-down; the root's is their sum,
//     docs/semantics.md#fair-share).
//
// Nothing more: a pool's children may leave part of its fair share unused
// (left-continuity at jumps, docs/design/fair-share.md#the-three-functions-of-an-element), and the decomposition's parts are not
// checked.
func (u *Updater) checkFairShares() {
	for _, p := range u.prePools {
		id := u.pools[p].id
		total := u.attrs[id].FairShare.Total
		if id == tree.Root {
			u.checkShareRange(id, total)
		}
		var sum resource.Share
		for _, c := range u.children(id) {
			fs := u.attrs[c].FairShare.Total
			u.checkShareRange(c, fs)
			sum = sum.Add(fs)
		}
		for r := range resource.Count {
			if !(sum[r] <= total[r]+invariantSlack*max(1, total[r])) {
				invariants.Check(false, "fairshare: the children of %q have fair share %v in %v, above the pool's %v",
					u.tree.Name(id), sum[r], resource.Kind(r), total[r])
			}
		}
	}
}

// checkShareRange checks that element id's fair share s is a number in
// [0, 1] in every resource, up to invariantSlack.
func (u *Updater) checkShareRange(id tree.ID, s resource.Share) {
	for r := range resource.Count {
		if !(s[r] >= -invariantSlack && s[r] <= 1+invariantSlack) { // NaN fails too
			invariants.Check(false, "fairshare: %q has fair share %v in %v, outside [0, 1]",
				u.tree.Name(id), s[r], resource.Kind(r))
		}
	}
}
