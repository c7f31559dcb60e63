package starvation

import (
	"github.com/fairsched/fairsched/core/resource"
)

// LocalSatisfaction is the satisfaction ratio of an element with fair share
// f, demand share d and usage share u (docs/semantics.md#satisfaction-and-status): below 1 the element
// uses less than its fair share in the resources it still needs.
func LocalSatisfaction(f, d, u resource.Share) float64 {
	if f.MaxComponent() <= resource.Epsilon {
		return resource.InfiniteSatisfactionRatio
	}
	over := false
	for r := range f {
		if u[r] > f[r] {
			over = true
			break
		}
	}
	if over {
		m := 0.0
		for r := range f {
			m = max(m, ratio(u[r], f[r], 0))
		}
		return min(m, resource.InfiniteSatisfactionRatio)
	}
	allBlocked := true
	for r := range f {
		if f[r] < d[r] {
			allBlocked = false
			break
		}
	}
	if allBlocked {
		m := resource.InfiniteSatisfactionRatio
		for r := range f {
			m = min(m, ratio(u[r], f[r], 1))
		}
		return m
	}
	m := 0.0
	for r := range f {
		if f[r] < d[r] && f[r] != 0 {
			m = max(m, u[r]/f[r])
		}
	}
	return m
}

// ratio is a/b with x/0 = 1e9 for x > 0 and 0/0 = zeroByZero.
func ratio(a, b, zeroByZero float64) float64 {
	if b == 0 {
		if a == 0 {
			return zeroByZero
		}
		return resource.InfiniteSatisfactionRatio
	}
	return a / b
}

// StrictlyDominatesNonBlocked is the reference's IsStrictlyDominatesNonBlocked
// (docs/semantics.md#satisfaction-and-status), with blocked resources those where fairShare ≥ demand: if
// every resource is blocked, a[r] > b[r] for some r; otherwise a[r] > b[r]
// for every non-blocked r.
func StrictlyDominatesNonBlocked(a, b, fairShare, demand resource.Share) bool {
	allBlocked := true
	for r := range a {
		if fairShare[r] < demand[r] {
			allBlocked = false
			if a[r] <= b[r] {
				return false
			}
		}
	}
	if !allBlocked {
		return true
	}
	for r := range a {
		if a[r] > b[r] {
			return true
		}
	}
	return false
}

// BelowFairShare is the schedulable status of docs/semantics.md#satisfaction-and-status: usage is below
// min(fair share × tolerance, demand) in the resources the element needs.
func BelowFairShare(f, d, u resource.Share, tolerance float64) bool {
	bound := f.Mul(tolerance).Min(d)
	return StrictlyDominatesNonBlocked(bound, u, f, d)
}

// OperationBelowFairShare is BelowFairShare for an operation: an operation
// whose demand is essentially satisfied (f + 1e-4 dominates d) uses
// tolerance 1.
func OperationBelowFairShare(f, d, u resource.Share, tolerance float64) bool {
	if f.Add(resource.Uniform(resource.LargeEpsilon)).Dominates(d) {
		tolerance = 1
	}
	return BelowFairShare(f, d, u, tolerance)
}
