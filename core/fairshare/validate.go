package fairshare

import "github.com/fairsched/fairsched/core/tree"

// Configuration checks (spec.md §2.1 step 1): alerts for nested
// promised-guarantee pools and for priority pools without a donor ancestor.
// They never stop the update.

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
