package starvation

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

func sh(v ...float64) resource.Share {
	var s resource.Share
	copy(s[:], v)
	return s
}

func TestLocalSatisfaction(t *testing.T) {
	f := func(name string, fs, d, u resource.Share, want float64) {
		t.Helper()
		if got := LocalSatisfaction(fs, d, u); got != want {
			t.Errorf("%s: LocalSatisfaction(%v, %v, %v) = %v, want %v", name, fs, d, u, got, want)
		}
	}
	f("zero fair share is infinitely satisfied", sh(), sh(0.5), sh(), 1e9)
	f("usage above fair share", sh(0.2, 0.2), sh(0.5, 0.5), sh(0.4, 0.1), 2)
	f("half of fair share in the needed resource", sh(0.2, 0.4), sh(0.5, 0.5), sh(0.1, 0.1), 0.5)
	f("blocked resources are ignored", sh(0.5, 0.4), sh(0.5, 0.8), sh(0.5, 0.1), 0.25)
	f("all blocked takes the minimum", sh(0.5, 0.5), sh(0.5, 0.5), sh(0.25, 0.5), 0.5)
	f("all blocked, zero over zero is 1", sh(0.5, 0), sh(0.5, 0), sh(0.5, 0), 1)
}

func TestBelowFairShare(t *testing.T) {
	f := func(name string, fs, d, u resource.Share, tol float64, want bool) {
		t.Helper()
		if got := BelowFairShare(fs, d, u, tol); got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	f("well below", sh(0.5, 0.5), sh(1, 1), sh(0.1, 0.1), 0.8, true)
	f("within tolerance", sh(0.5, 0.5), sh(1, 1), sh(0.41, 0.41), 0.8, false)
	f("one needed resource at fair share", sh(0.5, 0.5), sh(1, 1), sh(0.1, 0.5), 0.8, false)
	f("demand satisfied", sh(0.5, 0.5), sh(0.5, 0.5), sh(0.5, 0.5), 0.8, false)
}

func TestStarvationStateMachine(t *testing.T) {
	p := Params{Timeout: 30 * clock.Second, AggressiveTimeout: 120 * clock.Second, Aggressive: true}
	var tr Tracker
	steps := []struct {
		now   float64 // seconds
		below bool
		want  State
	}{
		{0, true, NonStarving},  // arms the timer
		{30, true, NonStarving}, // not strictly after the timeout
		{30.1, true, Starving},  // strictly after
		{120, true, Starving},   //
		{120.2, true, AggressivelyStarving},
		{121, false, NonStarving}, // resets
		{122, true, NonStarving},
		{152.5, true, Starving},
	}
	for i, s := range steps {
		if got := tr.Observe(clock.FromSeconds(s.now), s.below, p); got != s.want {
			t.Fatalf("step %d (t=%v below=%v): state %v, want %v", i, s.now, s.below, got, s.want)
		}
	}
	p.Aggressive = false
	tr = Tracker{}
	tr.Observe(0, true, p)
	if got := tr.Observe(clock.FromSeconds(1000), true, p); got != Starving {
		t.Fatalf("without aggressive starvation: %v, want starving", got)
	}
}

func TestScaleForPendingJobs(t *testing.T) {
	p := Params{Timeout: 30 * clock.Second, AggressiveTimeout: 120 * clock.Second}.ScaleForPendingJobs(1, 4)
	if p.Timeout != 7500*clock.Millisecond || p.AggressiveTimeout != 30*clock.Second {
		t.Fatalf("got %+v", p)
	}
	if q := (Params{Timeout: 30 * clock.Second}).ScaleForPendingJobs(10, 1); q.Timeout != 30*clock.Second {
		t.Fatalf("many pending jobs must not scale: %+v", q)
	}
}
