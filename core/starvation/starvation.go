// Package starvation holds the post-update judgements of spec.md §3:
// satisfaction ratios, the below-fair-share status and the starvation state
// machine. Everything here is a pure function of shares and virtual time.
package starvation

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// LocalSatisfaction is the satisfaction ratio of an element with fair share
// f, demand share d and usage share u (spec.md §3.1): below 1 the element
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
// (spec.md §3.2), with blocked resources those where fairShare ≥ demand: if
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

// BelowFairShare is the schedulable status of spec.md §3.3: usage is below
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

// State is a starvation state.
type State uint8

// Starvation states.
const (
	NonStarving State = iota
	Starving
	AggressivelyStarving
)

func (s State) String() string {
	switch s {
	case Starving:
		return "starving"
	case AggressivelyStarving:
		return "aggressively_starving"
	}
	return "non_starving"
}

// Params are an element's effective starvation parameters (spec.md §3.4).
type Params struct {
	Timeout           clock.Duration
	AggressiveTimeout clock.Duration
	Aggressive        bool // aggressive starvation enabled
}

// Tracker is the persistent starvation state of one element. The zero value
// is non-starving.
type Tracker struct {
	State      State
	BelowSince clock.Time
	below      bool
}

// Observe advances the state machine with the status of an update at now
// (spec.md §3.4): the first below-fair-share observation arms the timer,
// starvation is declared strictly after the timeout.
func (t *Tracker) Observe(now clock.Time, belowFairShare bool, p Params) State {
	if !belowFairShare {
		*t = Tracker{}
		return t.State
	}
	switch {
	case !t.below:
		t.below, t.BelowSince = true, now
	case p.Aggressive && now > t.BelowSince.Add(p.AggressiveTimeout):
		t.State = AggressivelyStarving
	case now > t.BelowSince.Add(p.Timeout):
		t.State = Starving
	}
	return t.State
}

// ScaleForPendingJobs shortens the timeouts of an operation with few pending
// jobs: with ratio = pending / coefficient below 1, both timeouts scale by it.
func (p Params) ScaleForPendingJobs(pending int64, coefficient float64) Params {
	if coefficient <= 0 {
		return p
	}
	if r := float64(pending) / coefficient; r < 1 {
		p.Timeout = p.Timeout.Scale(r)
		p.AggressiveTimeout = p.AggressiveTimeout.Scale(r)
	}
	return p
}
