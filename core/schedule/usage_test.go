package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Reported usage and vanished allocations (docs/api.md#node-heartbeats; Heartbeat's doc
// states the rules these tests pin).

// cpuLimit is resource_limits of cpu only.
func cpuLimit(c float64) tree.PartialVec {
	return tree.PartialVec{V: resource.Vec{resource.CPU: cores(c)}, Set: [resource.Count]bool{resource.CPU: true}}
}

// runningCluster is one smallNode (10 slots, 10 cores, 100 GiB) running
// every job of operation a (jobs of job(1, 1)) in pool p, whose cpu limit
// of 20 cores gives it a limit counter; a is listed once after the start,
// and a fair-share update has published its statuses. It returns the
// allocation IDs in start order.
func runningCluster(t *testing.T, jobs int64) (*cluster, []uint64) {
	t.Helper()
	c := newCluster(t, DefaultConfig(), 1, smallNode, tree.Mutation{Kind: tree.AddPool, Name: "p", Pool: tree.PoolConfig{ResourceLimits: cpuLimit(20)}})
	c.start(OperationSpec{ID: "a", Pool: "p", Tasks: tasks(jobs, job(1, 1))})
	c.update()
	c.heartbeat(0)
	c.heartbeat(0)
	c.update()
	ids := c.nodes[0].ids()
	if int64(len(ids)) != jobs {
		t.Fatalf("%d allocations running, want %d", len(ids), jobs)
	}
	return c, ids
}

// preemptNow preempts allocation id of node i as a heartbeat would (the
// simulated node keeps listing it running).
func (c *cluster) preemptNow(i int, id uint64) {
	c.t.Helper()
	sh, hash := c.s.shardAndHash(c.nodes[i].name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes.get(c.nodes[i].name, hash)
	var r Response
	if !c.s.preempt(c.at(), n, n.find(id), PreemptGraceful, 10*clock.Second, 0, "", false, &r) {
		c.t.Fatalf("cannot preempt allocation %d", id)
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
			c, ids := runningCluster(t, 4)
			if preempted {
				c.preemptNow(0, ids[0])
			}
			for _, st := range steps {
				c.usage = map[uint64]resource.Vec{}
				for k, u := range st {
					c.usage[ids[k]] = u
				}
				c.heartbeat(0)
				if len(c.resp.Start)+len(c.resp.Preempt)+len(c.resp.Abort) != 0 {
					t.Fatalf("heartbeat decided %+v", c.resp)
				}
			}
			ni, _ := c.s.Node(c.nodes[0].name)
			info := c.info("a")
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
			if got := chargedTo(t, c.s, "p"); got != wantCharged {
				t.Errorf("pool p charged %v, want %v", got, wantCharged)
			}
			sh, hash := c.s.shardAndHash(c.nodes[0].name)
			sh.mu.Lock()
			o := sh.nodes.get(c.nodes[0].name, hash).find(ids[0]).op
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

// TestReportedUsageIgnored: the usage of a finished report or of an unknown
// allocation changes nothing.
func TestReportedUsageIgnored(t *testing.T) {
	c, ids := runningCluster(t, 4)
	c.usage = map[uint64]resource.Vec{ids[0]: job(5, 5)}
	c.nodes[0].finish(0, AllocCompleted)
	c.heartbeat(0)
	if info := c.info("a"); info.Usage != job(1, 1).Scale(3) || info.CompletedJobs != 1 {
		t.Errorf("after a completed report with usage: usage %v, %d completed; want %v, 1", info.Usage, info.CompletedJobs, job(1, 1).Scale(3))
	}
	unknown := ids[3] + 100
	c.resp.Reset()
	hb := NodeHeartbeat{Node: c.nodes[0].name, Limits: smallNode,
		Allocations:     append(c.nodes[0].reports(), AllocationReport{ID: unknown, State: AllocRunning, HasUsage: true}),
		AllocationUsage: []resource.Vec{3: job(5, 5)}}
	if err := c.s.Heartbeat(c.at(), &hb, &c.resp); err != nil {
		t.Fatal(err)
	}
	if len(c.resp.Abort) != 1 || c.resp.Abort[0].Reason != AbortUnknownAllocation {
		t.Fatalf("aborts %+v, want the unknown allocation's", c.resp.Abort)
	}
	if ni, _ := c.s.Node(c.nodes[0].name); ni.Usage != job(1, 1).Scale(3) {
		t.Errorf("node usage %v after an unknown allocation's usage, want %v", ni.Usage, job(1, 1).Scale(3))
	}
}

// TestReportedUsageRejected: a usage component below 0 or above 2^53, or a
// report whose usage is missing, rejects the heartbeat with a precise
// error before anything changes — even its other reports.
func TestReportedUsageRejected(t *testing.T) {
	f := func(u []resource.Vec, path, msg string) {
		t.Helper()
		c, ids := runningCluster(t, 4)
		before, _ := c.s.Node(c.nodes[0].name)
		reps := []AllocationReport{{ID: ids[0], State: AllocCompleted}, {ID: ids[1], State: AllocRunning, HasUsage: true}}
		c.resp.Reset()
		err := c.s.Heartbeat(c.at()+clock.Time(clock.Second), &NodeHeartbeat{Node: c.nodes[0].name, Limits: smallNode, Allocations: reps, AllocationUsage: u}, &c.resp)
		var e *apierr.Error
		if msg = fmt.Sprintf(msg, ids[1]); !errors.As(err, &e) || e.Code != CodeInvalidValue || e.Path != path || e.Message != msg {
			t.Fatalf("usage %v: error %#v, want invalid_value at %s: %s", u, err, path, msg)
		}
		after, _ := c.s.Node(c.nodes[0].name)
		if after.Usage != before.Usage || len(after.Allocations) != 4 || after.LastHeartbeat != before.LastHeartbeat || c.info("a").CompletedJobs != 0 {
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
	c, ids := runningCluster(t, 4)
	cfg := c.s.Config()
	cfg.MaxNodeResourceLimits = resource.Vec{} // no bound: the node is above 2^53
	if err := c.s.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.nodes[0].limits[resource.Memory] = resource.MaxAmount + 10*gib
	c.usage = map[uint64]resource.Vec{ids[1]: {resource.Memory: resource.MaxAmount}}
	c.heartbeat(0)
	if ni, _ := c.s.Node(c.nodes[0].name); ni.Allocations[1].Resources[resource.Memory] != resource.MaxAmount {
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

// TestReportedUsageMovesStatuses: through heartbeats, an allocation whose
// usage drops to zero is no longer counted towards its operation's fair
// share: the next one becomes NonPreemptible, and so on down the lists
// (docs/semantics.md#preemption-statuses, defaults a = 0.2, p = 1: a's fair share 0.5, one job 0.1).
func TestReportedUsageMovesStatuses(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 1, smallNode)
	c.start(OperationSpec{ID: "a", Tasks: tasks(10, job(1, 1))})
	c.update()
	c.heartbeat(0)
	// b wants the other half, in jobs of 2 slots: none fits a freed slot.
	c.start(OperationSpec{ID: "b", Tasks: tasks(5, resource.Vec{resource.UserSlots: 2, resource.CPU: cores(2), resource.Memory: 2 * gib})})
	c.update()
	first := c.nodes[0].ids()[0]
	f := func(u *resource.Vec, want [3]int64) {
		t.Helper()
		c.usage = nil
		if u != nil {
			c.usage = map[uint64]resource.Vec{first: *u}
		}
		c.heartbeat(0)
		if info := c.info("a"); info.AllocationsByStatus != want || info.RunningAllocations != 10 {
			t.Errorf("usage %v: a runs %d, by status %v; want 10, %v", u, info.RunningAllocations, info.AllocationsByStatus, want)
		}
	}
	zero, full := resource.Vec{}, job(1, 1)
	f(nil, [3]int64{1, 4, 5})
	f(&zero, [3]int64{2, 4, 4})
	f(nil, [3]int64{2, 4, 4}) // no usage reported: it stays idle
	f(&full, [3]int64{1, 4, 5})
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
			c, ids := runningCluster(t, 6)
			cfg := c.s.Config()
			cfg.MinSpareAllocationResources = smallNode.Scale(2)
			if err := c.s.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			for _, i := range h.preempt {
				c.preemptNow(0, ids[i])
			}
			if h.abortOp {
				if err := c.s.AbortOperation("a"); err != nil {
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
			c.resp.Reset()
			if err := c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: c.nodes[0].name, Limits: smallNode, Allocations: reps}, &c.resp); err != nil {
				t.Fatal(err)
			}
			var got, want []uint64
			for _, ab := range c.resp.Abort {
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
			if !slices.Equal(got, want) || len(c.resp.Start)+len(c.resp.Preempt) != 0 {
				t.Errorf("vanished %v, want %v; starts %v, preemptions %v", got, want, c.resp.Start, c.resp.Preempt)
			}
			running := int64(len(ids) - len(h.omit) - len(h.complete))
			if h.abortOp {
				running = 0
			}
			info := c.info("a")
			if info.RunningAllocations != running || info.PendingJobs != pending || info.CompletedJobs != int64(len(h.complete)) {
				t.Errorf("a: %d running, %d pending, %d completed; want %d, %d, %d", info.RunningAllocations, info.PendingJobs, info.CompletedJobs, running, pending, len(h.complete))
			}
			ni, _ := c.s.Node(c.nodes[0].name)
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
			if got, want := chargedTo(t, c.s, "p"), job(1, 1).Scale(running-int64(held)); got != want {
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

// TestVanishedAtOnce: the resources of vanished allocations are free for
// the same heartbeat: a node whose agent restarted (it lists nothing) gets
// its jobs back at once, and an allocation started in the previous answer
// that the node does not list (the answer was lost) vanishes too.
func TestVanishedAtOnce(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 1, smallNode)
	c.start(OperationSpec{ID: "a", Tasks: tasks(12, job(1, 1))})
	c.update()
	c.heartbeat(0)
	n := &c.nodes[0]
	if n.agent.Len() != 10 {
		t.Fatalf("%d started, want 10", n.agent.Len())
	}
	// The answer that started the last allocation was lost.
	lost := n.ids()[9]
	n.agent.Forget(func(a *coretest.Alloc[uint64, string]) bool { return a.ID == lost })
	c.heartbeat(0)
	if len(c.resp.Abort) != 1 || c.resp.Abort[0] != (AbortDecision{Allocation: lost, Reason: AbortVanished, Operation: "a"}) || len(c.resp.Start) != 1 {
		t.Fatalf("after a lost start: aborts %+v, starts %+v; want allocation %d vanished and one start", c.resp.Abort, c.resp.Start, lost)
	}
	// The agent restarts: it lists nothing.
	n.agent.Forget(func(*coretest.Alloc[uint64, string]) bool { return true })
	c.heartbeat(0)
	if len(c.resp.Abort) != 10 || len(c.resp.Start) != 10 {
		t.Fatalf("after a restart: %d aborts, %d starts; want 10 and 10", len(c.resp.Abort), len(c.resp.Start))
	}
	for k, ab := range c.resp.Abort {
		if ab.Reason != AbortVanished || k > 0 && ab.Allocation <= c.resp.Abort[k-1].Allocation {
			t.Fatalf("abort %d: %+v, want vanished in ID order", k, ab)
		}
	}
	if info := c.info("a"); info.RunningAllocations != 10 || info.PendingJobs != 2 {
		t.Errorf("a: %d running, %d pending; want 10, 2", info.RunningAllocations, info.PendingJobs)
	}
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
	c := newCluster(t, DefaultConfig(), 1, big)
	c.start(OperationSpec{ID: "a", Tasks: tasks(300, job(1, 1))})
	c.update()
	c.heartbeat(0)
	var reps []AllocationReport
	var want []uint64
	for i, a := range c.nodes[0].reports() {
		switch {
		case i%5 == 0:
			reps = append(reps, AllocationReport{ID: a.ID, State: AllocCompleted})
		case i%7 == 0:
			want = append(want, a.ID)
		default:
			reps = append(reps, a)
		}
	}
	c.resp.Reset()
	if err := c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: c.nodes[0].name, Limits: big, Allocations: reps}, &c.resp); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, ab := range c.resp.Abort {
		if ab.Reason != AbortVanished {
			t.Fatalf("abort %+v", ab)
		}
		got = append(got, ab.Allocation)
	}
	if !slices.Equal(got, want) || len(c.resp.Start) != len(want) {
		t.Fatalf("vanished %v, want %v; %d started", got, want, len(c.resp.Start))
	}
	if info := c.info("a"); info.RunningAllocations != 240 || info.CompletedJobs != 60 || info.PendingJobs != 0 {
		t.Errorf("a: %d running, %d completed, %d pending; want 240, 60, 0", info.RunningAllocations, info.CompletedJobs, info.PendingJobs)
	}
}
