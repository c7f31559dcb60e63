package coretest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
)

func sec(s float64) clock.Time { return clock.FromSeconds(s) }

// TestNodeLifecycle drives one allocation through the node model: what the
// node reports at each heartbeat, for every way an allocation ends.
func TestNodeLifecycle(t *testing.T) {
	never := clock.Never
	tests := []struct {
		name      string
		end       clock.Time
		stopDelay float64 // seconds; < 0 never
		preemptAt float64 // < 0: not preempted
		moveStop  float64 // > 0: the caller moves StopAt there
		// at each heartbeat time: the report (- none), all answered
		beats []float64
		want  string
	}{
		{name: "runs until stopped", end: never, preemptAt: -1, beats: []float64{1, 2, 1e9}, want: "1:running 2:running 1e+09:running"},
		{name: "completes once", end: sec(5), preemptAt: -1, beats: []float64{4, 5, 6}, want: "4:running 5:completed 6:-"},
		{name: "completes between beats", end: sec(4.5), preemptAt: -1, beats: []float64{4, 7, 8}, want: "4:running 7:completed 8:-"},
		{name: "preempted stops at the next beat", end: never, preemptAt: 1, beats: []float64{2, 3}, want: "2:aborted 3:-"},
		{name: "preempted with a delay", end: never, stopDelay: 3, preemptAt: 1, beats: []float64{2, 3, 4, 5}, want: "2:running 3:running 4:aborted 5:-"},
		{name: "never stops", end: never, stopDelay: -1, preemptAt: 1, beats: []float64{2, 1e6}, want: "2:running 1e+06:running"},
		{name: "never stops but completes", end: sec(8), stopDelay: -1, preemptAt: 1, beats: []float64{2, 9, 10}, want: "2:running 9:completed 10:-"},
		{name: "ends before the stop", end: sec(3), stopDelay: 5, preemptAt: 1, beats: []float64{10, 11}, want: "10:completed 11:-"},
		{name: "stops before the end", end: sec(9), stopDelay: 5, preemptAt: 1, beats: []float64{10, 11}, want: "10:aborted 11:-"},
		{name: "ends the instant it stops", end: sec(6), stopDelay: 5, preemptAt: 1, beats: []float64{10}, want: "10:completed"},
		{name: "stops at a moved time", end: never, stopDelay: 0, preemptAt: 1, moveStop: 7, beats: []float64{2, 7, 8}, want: "2:running 7:aborted 8:-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n Node[uint64, string]
			n.StopDelay = -1
			if tc.stopDelay >= 0 {
				n.StopDelay = clock.DurationFromSeconds(tc.stopDelay)
			}
			n.Start(7, tc.end, "op")
			if tc.preemptAt >= 0 {
				a := n.Preempt(sec(tc.preemptAt), 7)
				if a == nil {
					t.Fatal("Preempt found no allocation")
				}
				if tc.moveStop > 0 {
					a.StopAt = sec(tc.moveStop)
				}
				if again := n.Preempt(sec(tc.preemptAt), 7); again != nil {
					t.Fatal("a second Preempt of the same allocation was accepted")
				}
			}
			var got []string
			for _, b := range tc.beats {
				settled := 0
				due := n.Due(sec(b))
				n.Advance(sec(b), func(*Alloc[uint64, string]) { settled++ })
				if due != (settled > 0) {
					t.Fatalf("at %g: Due %v, Advance settled %d", b, due, settled)
				}
				rep := "-"
				for _, a := range n.Allocs() {
					rep = [...]string{"running", "completed", "failed", "aborted", "refused"}[a.State]
				}
				got = append(got, fmt.Sprintf("%g:%s", b, rep))
				n.Delivered(nil)
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Fatalf("reports %s, want %s", s, tc.want)
			}
		})
	}
}

// TestNodeUnanswered: a finished allocation is reported again until a
// heartbeat is answered; Abort and Forget drop allocations at once.
func TestNodeUnanswered(t *testing.T) {
	var n Node[string, int]
	n.Start("a", sec(1), 1)
	n.Start("b", clock.Never, 2)
	n.Start("c", clock.Never, 3)
	n.Advance(sec(2), nil)
	n.Advance(sec(3), nil) // unanswered: still reported
	if a := n.Find("a"); a == nil || a.State != AllocCompleted {
		t.Fatalf("a after an unanswered heartbeat: %+v", a)
	}
	var dropped []string
	n.Delivered(func(a *Alloc[string, int]) { dropped = append(dropped, a.ID) })
	if len(dropped) != 1 || dropped[0] != "a" || n.Len() != 2 {
		t.Fatalf("delivered %v, %d left", dropped, n.Len())
	}
	if a, ok := n.Abort("b"); !ok || a.Meta != 2 {
		t.Fatalf("Abort(b) = %+v, %v", a, ok)
	}
	if _, ok := n.Abort("b"); ok {
		t.Fatal("Abort of an allocation the node no longer holds reported true")
	}
	if !n.Finish("c", AllocFailed) || n.Finish("c", AllocCompleted) || n.Find("c").State != AllocFailed {
		t.Fatalf("Finish(c): %+v", n.Find("c"))
	}
	n.Advance(sec(4), nil)
	if n.Find("c").State != AllocFailed {
		t.Fatalf("Advance changed a finished allocation: %+v", n.Find("c"))
	}
	if n.Preempt(sec(3), "b") != nil {
		t.Fatal("Preempt of an aborted allocation accepted")
	}
	n.Forget(func(a *Alloc[string, int]) bool { return a.ID == "c" })
	if n.Len() != 0 {
		t.Fatalf("%d allocations after forgetting the last", n.Len())
	}
}
