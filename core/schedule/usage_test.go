package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Reported usage and vanished allocations (docs/api.md#node-heartbeats; Heartbeat's doc
// states the rules these tests pin).

// cpuLimit is resource_limits of cpu only.
func cpuLimit(c float64) tree.PartialVec {
	return tree.PartialVec{V: resource.Vec{resource.CPU: cores(c)}, Set: [resource.Count]bool{resource.CPU: true}}
}

// runningNode returns a scheduler whose one node n000, a smallNode (10
// slots, 10 cores, 100 GiB), runs every job of operation a (jobs of
// job(1, 1)) in pool p, whose cpu limit of 20 cores gives it a limit
// counter; a is listed once after the start, and a fair-share update has
// published its statuses. It returns the allocation IDs in start order.
func runningNode(t *testing.T, jobs int64) (*Scheduler, []uint64) {
	t.Helper()
	s, reps := startOn(t, DefaultConfig(), smallNode, OperationSpec{ID: "a", Pool: "p", Tasks: tasks(jobs, job(1, 1))},
		tree.Mutation{Kind: tree.AddPool, Name: "p", Pool: tree.PoolConfig{ResourceLimits: cpuLimit(20)}})
	heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: smallNode, Allocations: reps})
	s.UpdateFairShare(0)
	var ids []uint64
	for _, r := range reps {
		ids = append(ids, r.ID)
	}
	if int64(len(ids)) != jobs {
		t.Fatalf("%d allocations running, want %d", len(ids), jobs)
	}
	return s, ids
}

// listing is n000's heartbeat listing allocations ids running, with the
// usage of those in usage.
func listing(ids []uint64, usage map[uint64]resource.Vec) *NodeHeartbeat {
	hb := &NodeHeartbeat{Node: "n000", Limits: smallNode}
	for _, id := range ids {
		u, ok := usage[id]
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: id, State: AllocRunning, HasUsage: ok})
		hb.AllocationUsage = append(hb.AllocationUsage, u)
	}
	return hb
}

// preemptNow preempts allocation id of node n000 as a heartbeat would (the
// node keeps listing it running).
func preemptNow(t *testing.T, s *Scheduler, id uint64) {
	t.Helper()
	sh, hash := s.shardAndHash("n000")
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes.get("n000", hash)
	var r Response
	if !s.preempt(0, n, n.find(id), PreemptGraceful, 10*clock.Second, 0, "", false, &r) {
		t.Fatalf("cannot preempt allocation %d", id)
	}
}

// chargedTo returns the usage charged to pool name's limit counter.
func chargedTo(t *testing.T, s *Scheduler, name string) resource.Vec {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tree.Lookup(name)
	lc := s.counters[id]
	if !ok || lc == nil {
		t.Fatalf("pool %s has no limit counter", name)
	}
	var v resource.Vec
	for r := range v {
		v[r] = lc.usage[r].Load()
	}
	return v
}

// TestReportedUsage: a running allocation's reported usage becomes its
// usage, whether above or below its request; the node, the operation, the
// limit counter and the status lists follow, and a report without a usage
// keeps the last one. A preempted allocation's usage changes the node's
// (and its preempted part) and the operation's usage, not the limit
// counters or the lists.
func TestReportedUsage(t *testing.T) {
	j := job(1, 1)
	others := j.Scale(3)
	f := func(name string, preempted bool, want resource.Vec, steps ...map[int]resource.Vec) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			s, ids := runningNode(t, 4)
			if preempted {
				preemptNow(t, s, ids[0])
			}
			for _, st := range steps {
				usage := map[uint64]resource.Vec{}
				for k, u := range st {
					usage[ids[k]] = u
				}
				resp := heartbeat(t, s, 0, listing(ids, usage))
				if len(resp.Start)+len(resp.Preempt)+len(resp.Abort) != 0 {
					t.Fatalf("heartbeat decided %+v", *resp)
				}
			}
			ni, _ := s.Node("n000")
			info, _ := s.Operation("a")
			wantPreempted, wantCharged, wantListed := resource.Vec{}, others.Add(want), int64(4)
			if preempted {
				wantPreempted, wantCharged, wantListed = want, others, 3
			}
			if ni.Usage != others.Add(want) || ni.PreemptedUsage != wantPreempted || ni.Allocations[0].Resources != want {
				t.Errorf("node usage %v (preempted %v), allocation %v; want %v (%v), %v", ni.Usage, ni.PreemptedUsage, ni.Allocations[0].Resources, others.Add(want), wantPreempted, want)
			}
			if info.Usage != others.Add(want) || info.Demand != others.Add(want) {
				t.Errorf("operation usage %v demand %v, want both %v", info.Usage, info.Demand, others.Add(want))
			}
			if got := chargedTo(t, s, "p"); got != wantCharged {
				t.Errorf("pool p charged %v, want %v", got, wantCharged)
			}
			sh, hash := s.shardAndHash("n000")
			sh.mu.Lock()
			o := sh.nodes.get("n000", hash).find(ids[0]).op
			o.pre.mu.Lock()
			checkLists(t, &o.pre)
			listed := o.pre.usage[0].Add(o.pre.usage[1]).Add(o.pre.usage[2])
			o.pre.mu.Unlock()
			sh.mu.Unlock()
			if listed != wantCharged || info.AllocationsByStatus[0]+info.AllocationsByStatus[1]+info.AllocationsByStatus[2] != wantListed {
				t.Errorf("status lists sum %v over %v allocations, want %v over %d", listed, info.AllocationsByStatus, wantCharged, wantListed)
			}
		})
	}
	type reports = map[int]resource.Vec
	f("never reported: the usage it started with", false, j)
	f("raised above the request", false, job(3, 2), reports{0: job(3, 2)})
	f("lowered below the request", false, job(0.5, 0), reports{0: job(0.5, 0)})
	f("zero (an empty resource_usage)", false, resource.Vec{}, reports{0: {}})
	f("a later report without usage keeps the last one", false, job(3, 2), reports{0: job(3, 2)}, nil, reports{1: j})
	f("reported back to the request", false, j, reports{0: job(3, 2)}, reports{0: j})
	f("preempted, never reported", true, j)
	f("preempted, raised", true, job(3, 2), reports{0: job(3, 2)})
	f("preempted, lowered", true, job(0.5, 0), reports{0: job(0.5, 0)})
}

// TestReportedUsageRejected: a usage component below 0 or above 2^53, or a
// report whose usage is missing, rejects the heartbeat with a precise
// error before anything changes — even its other reports.
func TestReportedUsageRejected(t *testing.T) {
	f := func(u []resource.Vec, path, msg string) {
		t.Helper()
		s, ids := runningNode(t, 4)
		before, _ := s.Node("n000")
		reps := []AllocationReport{{ID: ids[0], State: AllocCompleted}, {ID: ids[1], State: AllocRunning, HasUsage: true}}
		var resp Response
		err := s.Heartbeat(clock.Time(clock.Second), &NodeHeartbeat{Node: "n000", Limits: smallNode, Allocations: reps, AllocationUsage: u}, &resp)
		var e *apierr.Error
		if msg = fmt.Sprintf(msg, ids[1]); !errors.As(err, &e) || e.Code != CodeInvalidValue || e.Path != path || e.Message != msg {
			t.Fatalf("usage %v: error %#v, want invalid_value at %s: %s", u, err, path, msg)
		}
		after, _ := s.Node("n000")
		if info, _ := s.Operation("a"); after.Usage != before.Usage || len(after.Allocations) != 4 || after.LastHeartbeat != before.LastHeartbeat || info.CompletedJobs != 0 {
			t.Errorf("a rejected heartbeat changed the node: %+v → %+v", before, after)
		}
	}
	f([]resource.Vec{{}, {resource.CPU: -1}}, "allocations[1].resource_usage.cpu",
		"cannot use cpu -1 as the usage of allocation %d: want a non-negative amount of at most 2^53")
	f([]resource.Vec{{}, {resource.Memory: resource.MaxAmount + 1}}, "allocations[1].resource_usage.memory",
		"cannot use memory 9007199254740993 as the usage of allocation %d: want a non-negative amount of at most 2^53")
	f([]resource.Vec{{}}, "allocations[1].resource_usage",
		"cannot read the usage of allocation %d: AllocationUsage has 1 entries for 2 reports")
	// 2^53 itself is accepted (on a node that has room for it: with the
	// default allowed overcommit of 0 an allocation that takes its node
	// over its limits is aborted at once).
	s, ids := runningNode(t, 4)
	cfg := s.Config()
	cfg.MaxNodeResourceLimits = resource.Vec{} // no bound: the node is above 2^53
	if err := s.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	hb := listing(ids, map[uint64]resource.Vec{ids[1]: {resource.Memory: resource.MaxAmount}})
	hb.Limits[resource.Memory] = resource.MaxAmount + 10*gib
	heartbeat(t, s, 0, hb)
	if ni, _ := s.Node("n000"); ni.Allocations[1].Resources[resource.Memory] != resource.MaxAmount {
		t.Errorf("usage of 2^53 bytes not taken: %v", ni.Allocations[1].Resources)
	}
}

// TestResizeRebalancesStatusLists: a changed usage moves the boundaries of
// the status lists as if the allocations had been scanned again in start
// order (docs/semantics.md#preemption-statuses; thresholds of "defaults" in TestPreemptionListsBalance:
// NonPreemptible while the sum before is below 0.025, Aggressively-
// preemptible below 0.125, one allocation a share of 0.01).
func TestResizeRebalancesStatusLists(t *testing.T) {
	unit := resource.Vec{1, 100, 0, 10, 0}
	share := func(x float64) resource.Share { return resource.Share{x, x, 0, x, 0} }
	f := func(i int, units int64, want string) {
		t.Helper()
		nd := &node{}
		p := &opPreemption{}
		p.params = preemptParams{fairShare: share(0.125), demandShare: share(0.5), aggressiveThreshold: 0.2, preemptionThreshold: 1, preemptible: true, total: unit.Scale(100)}
		as := make([]*allocation, 16)
		for k := range as {
			as[k] = &allocation{id: uint64(k + 1), node: nd, resources: unit, start: clock.Time(k)}
			p.add(as[k])
		}
		p.setParams(p.params)
		if got := statusesOf(t, p, as); got != "NNNAAAAAAAAAAPPP" {
			t.Fatalf("statuses before %s", got)
		}
		p.resize(as[i], unit.Scale(units))
		p.rebalance()
		if got := statusesOf(t, p, as); got != want {
			t.Errorf("allocation %d at %d units: statuses\n got %s\nwant %s", i, units, got, want)
		}
	}
	f(0, 1, "NNNAAAAAAAAAAPPP")  // unchanged
	f(0, 3, "NAAAAAAAAAAPPPPP")  // the first takes the NonPreemptible room
	f(0, 0, "NNNNAAAAAAAAAAPP")  // an idle allocation makes room for one more of each
	f(5, 4, "NNNAAAAAAAPPPPPP")  // a middle one moves the second boundary only
	f(15, 9, "NNNAAAAAAAAAAPPP") // the last one moves nothing
	f(2, 0, "NNNNAAAAAAAAAAPP")
}

// TestVanishedAllocations: an allocation the node holds but no longer lists
// is finished as aborted at that heartbeat: its job is pending again, its
// resources are free on the node and in the limit counters; a not
// preempted one is answered with AbortVanished. Starting is off (the
// minimum spare resources exceed the node), so that the jobs stay
// pending; allocation indices are in start order.
func TestVanishedAllocations(t *testing.T) {
	type hb struct {
		omit     []int // not listed
		twice    []int // listed running, then again as below
		complete []int // listed completed instead of running
		preempt  []int // preempted before the heartbeat
		abortOp  bool  // a aborted before the heartbeat
	}
	f := func(name string, h hb, vanished []int, pending int64) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			s, ids := runningNode(t, 6)
			cfg := s.Config()
			cfg.MinSpareAllocationResources = smallNode.Scale(2)
			if err := s.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			for _, i := range h.preempt {
				preemptNow(t, s, ids[i])
			}
			if h.abortOp {
				if err := s.AbortOperation("a"); err != nil {
					t.Fatal(err)
				}
			}
			var reps []AllocationReport
			for i, id := range ids {
				if slices.Contains(h.omit, i) {
					continue
				}
				if slices.Contains(h.twice, i) {
					reps = append(reps, AllocationReport{ID: id, State: AllocRunning})
				}
				st := AllocRunning
				if slices.Contains(h.complete, i) {
					st = AllocCompleted
				}
				reps = append(reps, AllocationReport{ID: id, State: st})
			}
			resp := heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: smallNode, Allocations: reps})
			var got, want []uint64
			for _, ab := range resp.Abort {
				switch {
				case ab.Reason == AbortVanished && ab.Operation == "a":
					got = append(got, ab.Allocation)
				case ab.Reason != AbortOperationFinished || !h.abortOp:
					t.Errorf("unexpected abort %+v", ab)
				}
			}
			for _, i := range vanished {
				want = append(want, ids[i])
			}
			if !slices.Equal(got, want) || len(resp.Start)+len(resp.Preempt) != 0 {
				t.Errorf("vanished %v, want %v; starts %v, preemptions %v", got, want, resp.Start, resp.Preempt)
			}
			running := int64(len(ids) - len(h.omit) - len(h.complete))
			if h.abortOp {
				running = 0
			}
			info, _ := s.Operation("a")
			if info.RunningAllocations != running || info.PendingJobs != pending || info.CompletedJobs != int64(len(h.complete)) {
				t.Errorf("a: %d running, %d pending, %d completed; want %d, %d, %d", info.RunningAllocations, info.PendingJobs, info.CompletedJobs, running, pending, len(h.complete))
			}
			ni, _ := s.Node("n000")
			if ni.Usage != job(1, 1).Scale(running) || int64(len(ni.Allocations)) != running {
				t.Errorf("node usage %v with %d allocations, want %v with %d", ni.Usage, len(ni.Allocations), job(1, 1).Scale(running), running)
			}
			if h.abortOp {
				return
			}
			held := 0
			for _, i := range h.preempt {
				if !slices.Contains(h.omit, i) {
					held++
				}
			}
			if got, want := chargedTo(t, s, "p"), job(1, 1).Scale(running-int64(held)); got != want {
				t.Errorf("pool p charged %v, want %v", got, want)
			}
		})
	}
	f("every allocation listed", hb{}, nil, 0)
	f("one omitted", hb{omit: []int{2}}, []int{2}, 1)
	f("all omitted (an agent restart)", hb{omit: []int{0, 1, 2, 3, 4, 5}}, []int{0, 1, 2, 3, 4, 5}, 6)
	f("only finished ones listed", hb{omit: []int{1, 2, 3, 4, 5}, complete: []int{0}}, []int{1, 2, 3, 4, 5}, 5)
	f("a preempted one omitted: stopped, no answer", hb{omit: []int{1}, preempt: []int{1}}, nil, 1)
	f("a preempted one listed, another omitted", hb{omit: []int{3}, preempt: []int{1}}, []int{3}, 1)
	f("listed twice does not hide an omitted one", hb{omit: []int{1}, twice: []int{0}}, []int{1}, 1)
	f("listed running, then completed", hb{omit: []int{1}, twice: []int{0}, complete: []int{0}}, []int{1}, 1)
	f("an aborted operation's omitted allocation", hb{omit: []int{4}, abortOp: true}, []int{4}, 0)
}

// TestListedSet: the node's listed bitmap follows removals as a slice of
// flags would, in one word, in the node's two inline words and on the heap.
func TestListedSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 63, 64, 65, 128, 129, 300} {
		n := &node{}
		for i := range size {
			n.addAlloc(&allocation{id: uint64(i + 1)})
		}
		n.resetListed()
		want := make([]bool, size)
		for len(want) > 0 {
			k := r.IntN(len(want))
			if n.list(k) == want[k] {
				t.Fatalf("size %d: list(%d) says it was listed %v", size, k, !want[k])
			}
			want[k] = true
			if r.IntN(3) == 0 {
				j := r.IntN(len(want))
				n.removeAlloc(n.allocs[j])
				want = append(want[:j], want[j+1:]...)
			}
			for i := range want {
				if n.isListed(i) != want[i] {
					t.Fatalf("size %d, %d left: allocation %d listed %v, want %v", size, len(want), i, n.isListed(i), want[i])
				}
			}
		}
		if size > 128 && &n.listed[0] == &n.listedBuf[0] {
			t.Errorf("size %d: the bitmap is still the inline one", size)
		}
	}
}

// TestVanishedOnABigNode: a node of 300 allocations (its listed set on the
// heap) completes every 5th and stops listing every 7th of the others:
// exactly those vanish, in ID order, and start again at once.
func TestVanishedOnABigNode(t *testing.T) {
	big := resource.Vec{resource.UserSlots: 300, resource.CPU: cores(300), resource.Memory: 300 * gib}
	s, all := startOn(t, DefaultConfig(), big, OperationSpec{ID: "a", Tasks: tasks(300, job(1, 1))})
	var reps []AllocationReport
	var want []uint64
	for i, a := range all {
		switch {
		case i%5 == 0:
			reps = append(reps, AllocationReport{ID: a.ID, State: AllocCompleted})
		case i%7 == 0:
			want = append(want, a.ID)
		default:
			reps = append(reps, a)
		}
	}
	resp := heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: big, Allocations: reps})
	var got []uint64
	for _, ab := range resp.Abort {
		if ab.Reason != AbortVanished {
			t.Fatalf("abort %+v", ab)
		}
		got = append(got, ab.Allocation)
	}
	if !slices.Equal(got, want) || len(resp.Start) != len(want) {
		t.Fatalf("vanished %v, want %v; %d started", got, want, len(resp.Start))
	}
	if info, _ := s.Operation("a"); info.RunningAllocations != 240 || info.CompletedJobs != 60 || info.PendingJobs != 0 {
		t.Errorf("a: %d running, %d completed, %d pending; want 240, 60, 0", info.RunningAllocations, info.CompletedJobs, info.PendingJobs)
	}
}
