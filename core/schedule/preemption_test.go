package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// statusesOf returns the statuses of the allocations in order, and checks
// that the lists agree with them.
func statusesOf(t *testing.T, p *opPreemption, as []*allocation) string {
	t.Helper()
	checkLists(t, p)
	b := make([]byte, len(as))
	for i, a := range as {
		if !a.listed {
			b[i] = '-'
			continue
		}
		b[i] = "NAP"[p.statusOf(a)]
	}
	return string(b)
}

// checkLists verifies the lists (caller holds p.mu or owns p): the list is
// in start and rank order with consistent links, the boundaries cut it in
// three in order, each member's published status is that of its part, and
// counts and sums match.
func checkLists(t *testing.T, p *opPreemption) {
	t.Helper()
	if err := listsError(p); err != "" {
		t.Fatal(err)
	}
}

// listsError is checkLists' verdict, "" when the lists are consistent.
func listsError(p *opPreemption) string {
	var n [statusCount]int64
	var u [statusCount]resource.Vec
	st := NonPreemptible
	var prev *allocation
	for a := p.head; a != nil; a = a.next {
		for st < Preemptible && p.bound[st] == a {
			st++
		}
		if !a.listed || a.prev != prev {
			return fmt.Sprintf("allocation %d: listed %v, prev link broken", a.id, a.listed)
		}
		if prev != nil && (prev.seq >= a.seq || prev.start > a.start || prev.start == a.start && prev.node == a.node && prev.id > a.id) {
			return fmt.Sprintf("lists out of start order: %d before %d", prev.id, a.id)
		}
		if got := p.status(a); got != st {
			return fmt.Sprintf("allocation %d in list %v has status %v", a.id, st, got)
		}
		n[st]++
		u[st] = u[st].Add(a.resources)
		prev = a
	}
	if p.tail != prev {
		return "tail mismatch"
	}
	for st < Preemptible && p.bound[st] == nil {
		st++
	}
	if st != Preemptible || p.bound[1] != nil && p.bound[0] == nil {
		return fmt.Sprintf("boundaries %p %p not in the list", p.bound[0], p.bound[1])
	}
	if n != p.n || u != p.usage {
		return fmt.Sprintf("counts %v sums %v, recorded %v %v", n, u, p.n, p.usage)
	}
	for i, b := range p.bound {
		last := p.tail
		if b != nil {
			last = b.prev
		}
		if p.last[i] != last || last != nil && p.edge[i] != last.resources {
			return fmt.Sprintf("boundary %d: last allocation %p (edge %v), the list says %p", i, p.last[i], p.edge[i], last)
		}
	}
	return ""
}

// TestPreemptionListsBalance pins the balance procedure of docs/semantics.md#preemption-statuses on
// the lists alone: scanning oldest-first with a running sum, an allocation
// is NonPreemptible while the sum before it is below F·a, Aggressively-
// preemptible while below F·p and Preemptible after; the boundary-crossing
// allocation stays on the less preemptible side.
func TestPreemptionListsBalance(t *testing.T) {
	unit := resource.Vec{1, 100, 0, 10, 0}
	total := unit.Scale(100)
	type step struct {
		grow   int // index of an allocation whose resources double (-1: none)
		remove int // index of an allocation that finishes (-1: none)
		want   string
	}
	f := func(name string, n int, params preemptParams, want string, steps ...step) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			nd := &node{}
			p := &opPreemption{}
			p.params = params
			p.params.total = total
			as := make([]*allocation, n)
			for i := range as {
				as[i] = &allocation{id: uint64(i + 1), node: nd, resources: unit, start: clock.Time(i) * clock.Time(clock.Second)}
				p.add(as[i])
			}
			p.setParams(p.params)
			if got := statusesOf(t, p, as); got != want {
				t.Errorf("statuses\n got %s\nwant %s", got, want)
			}
			for _, s := range steps {
				if s.grow >= 0 {
					a := as[s.grow]
					p.resize(a, a.resources.Scale(2))
					p.rebalance()
				}
				if s.remove >= 0 {
					p.remove(as[s.remove])
				}
				if got := statusesOf(t, p, as); got != s.want {
					t.Errorf("after %+v: statuses\n got %s\nwant %s", s, got, s.want)
				}
			}
		})
	}
	share := func(x float64) resource.Share { return resource.Share{x, x, 0, x, 0} }
	rep := func(s string, n int) string {
		b := ""
		for range n {
			b += s
		}
		return b
	}
	// The reference's TestUpdatePreemptibleAllocationsList: 150 unit
	// allocations, F = 1.0, demand 1.6, a = 0.5 → 50/50/50.
	f("reference 150", 150, preemptParams{fairShare: share(1), demandShare: share(1.6), aggressiveThreshold: 0.5, preemptionThreshold: 1, preemptible: true},
		rep("N", 50)+rep("A", 50)+rep("P", 50))
	// The reference's DoNotPreemptAllocationsIfFairShareRatioEqualToDemandRatio:
	// F = D = 0.04 here (4 allocations of 0.01): nothing is Preemptible;
	// when the first allocation grows, the second becomes Aggressively-
	// preemptible.
	f("fair share equals demand", 4, preemptParams{fairShare: share(0.04), demandShare: share(0.04), aggressiveThreshold: 0.5, preemptionThreshold: 1, preemptible: false},
		"NNAA", step{grow: 0, remove: -1, want: "NAAA"})
	// Default thresholds (a = 0.2, p = 1): F = 0.125 → NonPreemptible
	// while the sum before is below 0.025, AggressivelyPreemptible below
	// 0.125.
	f("defaults", 16, preemptParams{fairShare: share(0.125), demandShare: share(0.5), aggressiveThreshold: 0.2, preemptionThreshold: 1, preemptible: true},
		"NNNAAAAAAAAAAPPP",
		// A finished NonPreemptible allocation is replaced from the right,
		// and so on down the line.
		step{grow: -1, remove: 0, want: "-NNNAAAAAAAAAAPP"},
		// A finished Preemptible one changes nothing else.
		step{grow: -1, remove: 15, want: "-NNNAAAAAAAAAAP-"})
	// Zero fair share: everything is Preemptible.
	f("zero fair share", 3, preemptParams{demandShare: share(0.5), aggressiveThreshold: 0.2, preemptionThreshold: 1, preemptible: true}, "PPP")
	// The absolute threshold: usage strictly below 3 units in every
	// resource (unspecified gpu and network are infinite) is non-preemptible
	// whatever the share.
	three := unit.Scale(3)
	f("threshold", 6, preemptParams{demandShare: share(0.5), aggressiveThreshold: 0.2, preemptionThreshold: 1, preemptible: true,
		threshold: effectiveThreshold(tree.PartialVec{V: three, Set: [resource.Count]bool{true, true, false, true, false}})}, "NNNPPP")
	// A fully specified threshold with gpu 0 never applies: nothing is
	// strictly below 0 gpu.
	f("full threshold", 6, preemptParams{demandShare: share(0.5), aggressiveThreshold: 0.2, preemptionThreshold: 1, preemptible: true,
		threshold: effectiveThreshold(tree.Full(three))}, "PPPPPP")
	// A partially specified threshold is infinite elsewhere.
	f("partial threshold", 6, preemptParams{demandShare: share(0.5), aggressiveThreshold: 0.2, preemptionThreshold: 1, preemptible: true,
		threshold: effectiveThreshold(tree.PartialVec{V: resource.Vec{2, 0, 0, 0, 0}, Set: [resource.Count]bool{true}})}, "NNPPPP")
}

// TestPreemptorReason: the reason names why the operation made room for
// was allowed to preempt.
func TestPreemptorReason(t *testing.T) {
	f := func(st starvation.State, target PreemptionPriority, want PreemptReason) {
		t.Helper()
		o := &operation{}
		o.view.Store(&opView{starvation: st})
		if got := preemptorReason(o, &stage{target: target}); got != want {
			t.Errorf("%v in stage %v: %v, want %v", st, target, got, want)
		}
	}
	f(starvation.Starving, PriorityNormal, PreemptForStarving)
	f(starvation.NonStarving, PriorityNormal, PreemptForStarvingAncestor)
	f(starvation.AggressivelyStarving, PriorityAggressive, PreemptForAggressivelyStarving)
	f(starvation.Starving, PriorityAggressive, PreemptForStarvingAncestor)
	f(starvation.NonStarving, PriorityAggressive, PreemptForStarvingAncestor)
}

// TestPreemptionListsMatchScan checks the lists against docs/semantics.md#preemption-statuses's
// reading of the balance procedure, on seeded random histories of starts,
// finishes (rebalanced at once or later), usage changes and new fair
// shares, whenever they are balanced: scanning the allocations
// oldest-first with a running sum, an allocation is NonPreemptible while
// the sum before it is below F·a, AggressivelyPreemptible while it is
// below F·p (always, when the operation is not preemptible), Preemptible
// after.
func TestPreemptionListsMatchScan(t *testing.T) {
	const seed = 12
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	total := resource.Vec{100, 10000, 10, 1000, 10}
	randVec := func(max int64) resource.Vec {
		var v resource.Vec
		for i := range v {
			if r.IntN(4) > 0 {
				v[i] = r.Int64N(max + 1)
			}
		}
		return v
	}
	randShare := func() resource.Share {
		var s resource.Share
		for i := range s {
			s[i] = float64(r.IntN(9)) / 8
		}
		return s
	}
	randParams := func() preemptParams {
		pp := preemptParams{fairShare: randShare(), demandShare: randShare(), total: total,
			aggressiveThreshold: float64(r.IntN(5)) / 4}
		pp.preemptionThreshold = pp.aggressiveThreshold + float64(r.IntN(5))/4
		pp.preemptible = r.IntN(4) > 0
		if r.IntN(3) == 0 {
			pp.threshold = randVec(20)
		}
		return pp
	}
	scan := func(p *opPreemption) []PreemptionStatus {
		var got []PreemptionStatus
		var sum resource.Vec
		pr := &p.params
		for a := p.head; a != nil; a = a.next {
			st := Preemptible
			switch {
			case p.below(sum, pr.aggressiveBound, false):
				st = NonPreemptible
			case p.below(sum, pr.preemptibleBound, !pr.preemptible):
				st = AggressivelyPreemptible
			}
			got = append(got, st)
			sum = sum.Add(a.resources)
		}
		return got
	}
	nd := &node{}
	for round := range 200 {
		p := &opPreemption{}
		p.setParams(randParams())
		var live []*allocation
		id := uint64(0)
		for step := range 60 {
			switch k := r.IntN(10); {
			case k < 5 || len(live) == 0:
				id++
				a := &allocation{id: id, node: nd, start: clock.Time(id), resources: randVec(12)}
				p.add(a)
				live = append(live, a)
			case k < 7:
				// A release drops it and settles later; a preemption
				// removes it at once.
				i := r.IntN(len(live))
				if r.IntN(2) == 0 {
					p.drop(live[i])
				} else {
					p.remove(live[i])
				}
				live = append(live[:i], live[i+1:]...)
				if r.IntN(3) == 0 {
					p.settle()
				}
			case k < 9:
				for range 1 + r.IntN(3) {
					a := live[r.IntN(len(live))]
					p.resize(a, randVec(12))
				}
				p.rebalance()
			default:
				p.setParams(randParams())
			}
			checkLists(t, p)
			if p.dirty != balanced {
				continue // the statuses of the last rebalance stay published
			}
			want := scan(p)
			i := 0
			for a := p.head; a != nil; a = a.next {
				if got := p.statusOf(a); got != want[i] {
					t.Fatalf("round %d step %d: allocation %d (%d of %d) is %v, the scan says %v (params %+v)", round, step, a.id, i, len(want), got, want[i], p.params)
				}
				i++
			}
		}
	}
}
