package fairshare

import "github.com/fairsched/fairsched/core/tree"

// Configuration checks (docs/semantics.md#fair-share step 1): alerts for nested
// promised-guarantee pools and for priority pools without a donor ancestor.
// They never stop the update.

// validatePoolConfigs checks the pools that compute a promised-guarantee
// fair share or have priority strong guarantee adjustment (layout lists them
// in pre-order, u.checkPools: a configuration change is a structural one).
func (u *Updater) validatePoolConfigs() {
	// Nested promised-guarantee pools and priority pools without a donor.
	for _, p := range u.checkPools {
		id := u.pools[p].id
		c := u.tree.Pool(id)
		if c.ComputePromisedGuaranteeFairShare {
			for p := u.tree.Parent(id); p != tree.None; p = u.tree.Parent(p) {
				if u.tree.Pool(p).ComputePromisedGuaranteeFairShare {
					u.alertf("pool %q computes promised guarantee fair share inside pool %q that does too", u.tree.Name(id), u.tree.Name(p))
					break
				}
			}
		}
		if c.EnablePriorityStrongGuaranteeAdjustment && !u.hasDonorAncestor(id) {
			u.alertf("pool %q has priority strong guarantee adjustment but no donor ancestor", u.tree.Name(id))
		}
	}
}

func (u *Updater) hasDonorAncestor(id tree.ID) bool {
	for p := u.tree.Parent(id); p != tree.None; p = u.tree.Parent(p) {
		c := u.tree.Pool(p)
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
