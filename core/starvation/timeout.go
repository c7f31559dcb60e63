package starvation

import "github.com/fairsched/fairsched/core/clock"

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

// Params are an element's effective starvation parameters (docs/semantics.md#starvation).
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
// (docs/semantics.md#starvation): the first below-fair-share observation arms the timer,
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
