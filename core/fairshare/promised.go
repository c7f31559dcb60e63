package fairshare

// The promised-guarantee fair share (docs/semantics.md#promised-guarantee-fair-share, step 10 of the update): what
// pools with compute_promised_guarantee_fair_share and their descendants
// receive from their guarantees alone, by a second top-down pass from
// suggestion 0.

// promisedFairShare runs that pass for every such pool in pool slot p's
// subtree (they do not nest).
func (u *Updater) promisedFairShare(p int32) {
	id := u.pools[p].id
	if u.tree.Pool(id).ComputePromisedGuaranteeFairShare {
		if u.cfg.EnableImprovedFitFactor {
			u.distributeVec(u.worker0(), id, u.fsbs(id).ValueAt(0), promisedGuarantee, false)
		} else {
			u.distribute(u.worker0(), id, 0, promisedGuarantee, false)
		}
		return
	}
	for _, c := range u.kids(p) {
		u.promisedFairShare(c)
	}
}
