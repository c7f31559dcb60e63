package schedule

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// TestConcurrentHeartbeatsKeepInvariants runs heartbeats of many nodes in
// parallel goroutines together with operation starts, aborts, moves, pool
// limit changes and fair-share updates. Starvation is quick (2 s) and the
// preemptive backoff short (1 s), and a starving operation appears
// mid-run, so preemption (normal, graceful, limit violations) happens
// concurrently with everything else. Nodes report the usage of a quarter
// of their running allocations (before round 30 their request or one and
// a half times it, then their request) and now and then stop listing one,
// which must be answered as vanished. Checked along the way: a node's usage
// never exceeds its limits except by allocations already being preempted,
// and every operation's status lists are consistent (each listed
// allocation once, in order, with its part's status). Checked at the end: every operation's
// usage equals the sum of its allocations, per-status counts add up, pool
// limits hold and pool operation counts are exact.
func TestConcurrentHeartbeatsKeepInvariants(t *testing.T) {
	const (
		nodes   = 32
		workers = 4
		rounds  = 80
	)
	seed := uint64(1)
	t.Logf("seed %d", seed)
	cfg := DefaultConfig()
	cfg.Shards = 8
	cfg.FairShareStarvationTimeout = 2 * clock.Second
	cfg.PreemptiveSchedulingBackoff = 1 * clock.Second
	cfg.AllocationPreemptionTimeout = 3 * clock.Second
	cfg.AllocationGracefulPreemptionTimeout = 4 * clock.Second
	s := New(tree.New(tree.PoolConfig{}), cfg)
	limit := resource.Vec{resource.UserSlots: 1000, resource.CPU: cores(40), resource.Memory: 1000 * gib}
	if _, err := s.ApplyPools(
		tree.Mutation{Kind: tree.AddPool, Name: "a", Pool: tree.PoolConfig{ResourceLimits: tree.Full(limit)}},
		tree.Mutation{Kind: tree.AddPool, Name: "b", Pool: tree.PoolConfig{Weight: tree.Some(2)}},
	); err != nil {
		t.Fatal(err)
	}
	node := resource.Vec{resource.UserSlots: 16, resource.CPU: cores(16), resource.Memory: 64 * gib}
	var ops []string
	for i := range 8 {
		pool := []string{"a", "b", ""}[i%3]
		mode := PreemptionNormal
		if i%4 == 3 {
			mode = PreemptionGraceful
		}
		id, _, err := s.StartOperation(0, OperationSpec{Pool: pool, PreemptionMode: mode, Tasks: []TaskSpec{{JobCount: 400, Resources: job(float64(1+i%3), 1)}}})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, id)
	}
	// Register the nodes, then publish a first snapshot.
	var resp Response
	for i := range nodes {
		if err := s.Heartbeat(0, &NodeHeartbeat{Node: fmt.Sprintf("n%d", i), Limits: node, Tags: nodeTags(i)}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	s.UpdateFairShare(0)

	var (
		mu          sync.Mutex
		preemptions = map[PreemptReason]int{}
		heavyStarts atomic.Int64
	)
	type workerState struct {
		r         *rand.Rand
		held      map[int][]AllocationReport
		preempted map[uint64]bool
		requested map[uint64]resource.Vec
		resp      Response
	}
	states := make([]*workerState, workers)
	for w := range states {
		states[w] = &workerState{r: rand.New(rand.NewPCG(seed, uint64(w))), held: map[int][]AllocationReport{}, preempted: map[uint64]bool{}, requested: map[uint64]resource.Vec{}}
	}
	heartbeats := func(ws *workerState, w, round int) {
		r, preempted, resp := ws.r, ws.preempted, &ws.resp
		for i := w; i < nodes; i += workers {
			name := fmt.Sprintf("n%d", i)
			reports := ws.held[i]
			for j := range reports {
				switch {
				case preempted[reports[j].ID] && r.IntN(2) == 0:
					reports[j].State = AllocAborted
				case r.IntN(64) == 0:
					reports[j].State = AllocCompleted
				}
			}
			var listed []AllocationReport
			var usage []resource.Vec
			omitted := map[uint64]bool{}
			for j := range reports {
				a := &reports[j]
				a.HasUsage = false
				if a.State != AllocRunning {
					listed, usage = append(listed, *a), append(usage, resource.Vec{})
					continue
				}
				if r.IntN(256) == 0 {
					omitted[a.ID] = true
					continue
				}
				var u resource.Vec
				if a.HasUsage = r.IntN(4) == 0; a.HasUsage {
					// From round 30 usage only falls back to the request,
					// so that the limit violations of pool a are repaid by
					// the end.
					halves := int64(2)
					if round < 30 {
						halves += int64(r.IntN(2))
					}
					for k, x := range ws.requested[a.ID] {
						u[k] = x * halves / 2
					}
				}
				listed, usage = append(listed, *a), append(usage, u)
			}
			resp.Reset()
			if err := s.Heartbeat(clock.FromSeconds(float64(round)), &NodeHeartbeat{Node: name, Limits: node, Tags: nodeTags(i), Allocations: listed, AllocationUsage: usage}, resp); err != nil {
				t.Error(err)
				return
			}
			for _, st := range resp.Start {
				if st.Operation == "heavy" {
					heavyStarts.Add(1)
					if len(nodeTags(i)) == 0 {
						t.Errorf("allocation %d of heavy, whose filter is gpu, started on %s without tags", st.Allocation, name)
					}
				}
			}
			vanished := map[uint64]bool{}
			for _, ab := range resp.Abort {
				if ab.Reason == AbortVanished {
					vanished[ab.Allocation] = true
				}
			}
			kept := reports[:0]
			for _, a := range reports {
				aborted := false
				for _, ab := range resp.Abort {
					aborted = aborted || ab.Allocation == a.ID
				}
				if omitted[a.ID] && vanished[a.ID] == preempted[a.ID] {
					t.Errorf("allocation %d (preempted %v) omitted: vanished %v", a.ID, preempted[a.ID], vanished[a.ID])
				}
				if a.State == AllocRunning && !aborted && !omitted[a.ID] {
					kept = append(kept, a)
				} else {
					delete(preempted, a.ID)
					delete(ws.requested, a.ID)
				}
			}
			if len(vanished) > len(omitted) {
				t.Errorf("%d allocations vanished, %d omitted", len(vanished), len(omitted))
			}
			for _, st := range resp.Start {
				kept = append(kept, AllocationReport{ID: st.Allocation, State: AllocRunning})
				ws.requested[st.Allocation] = st.Resources
			}
			mu.Lock()
			for _, p := range resp.Preempt {
				if preempted[p.Allocation] {
					t.Errorf("allocation %d preempted twice", p.Allocation)
				}
				preempted[p.Allocation] = true
				preemptions[p.Reason]++
				if p.ForOperation != "" && p.ForOperation == p.Operation {
					t.Errorf("allocation %d of %s preempted to start allocation %d of the same operation", p.Allocation, p.Operation, p.ForAllocation)
				}
			}
			mu.Unlock()
			ws.held[i] = kept
			checkNodeInfo(t, s, name)
		}
	}
	control := func(round int) {
		s.UpdateFairShare(clock.FromSeconds(float64(round)))
		switch round {
		case 10:
			s.AbortOperation(ops[0])
		case 20:
			// A heavy operation appears and starves.
			// Its filter lets it only on the gpu nodes.
			s.StartOperation(clock.FromSeconds(float64(round)), OperationSpec{ID: "heavy", Pool: "b", Weight: tree.Some(4), Tasks: []TaskSpec{{JobCount: 2000, Resources: job(2, 2)}},
				SchedulingTagFilter: tagfilter.MustParse("gpu")})
		case 30:
			// Lower pool a's limits below its usage: limit violations.
			lower := limit
			lower[resource.CPU] = cores(16)
			if _, err := s.ApplyPools(tree.Mutation{Kind: tree.SetPool, Name: "a", Pool: tree.PoolConfig{ResourceLimits: tree.Full(lower)}}); err != nil {
				t.Error(err)
			}
		case 35:
			// A filter on pool b: new filter classes while heartbeats run.
			if _, err := s.ApplyPools(tree.Mutation{Kind: tree.SetPool, Name: "b", Pool: tree.PoolConfig{Weight: tree.Some(2), SchedulingTagFilter: tagfilter.MustParse("gpu | !gpu")}}); err != nil {
				t.Error(err)
			}
		case 40:
			if err := s.MoveOperation(ops[1], "a"); err != nil {
				t.Error(err)
			}
		}
		if round%5 == 0 {
			checkOperationLists(t, s)
		}
	}
	// Each round runs the control plane and every worker's heartbeats in
	// parallel; rounds are separated so that virtual time moves together.
	for round := range rounds {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				heartbeats(states[w], w, round)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			control(round)
		}()
		wg.Wait()
	}
	t.Logf("preemptions by reason: %v", preemptions)
	// NB: the workload is built to exercise graceful preemption and
	// preemption for starvation; which preemptions happen depends on how
	// the heartbeat goroutines interleave, and about 1 run in 500 sees no
	// preemption for starvation, so only its absence in every one of a few
	// runs would say the path is dead (the scenario scripts pin it).
	if preemptions[PreemptGraceful] == 0 {
		t.Errorf("preemptions %v: want some graceful ones", preemptions)
	}
	if preemptions[PreemptForStarving]+preemptions[PreemptForStarvingAncestor] == 0 {
		t.Logf("no preemption for starvation in this interleaving: %v", preemptions)
	}
	if heavyStarts.Load() == 0 {
		t.Error("heavy never started an allocation")
	}

	// Invariants.
	checkOperationLists(t, s)
	checkQuiescent(t, s)
	sum := map[string]resource.Vec{}
	var poolA resource.Vec
	poolOf := map[string]string{}
	for _, info := range s.Operations(nil) {
		poolOf[info.ID] = info.Pool
	}
	for i := range nodes {
		info, ok := s.Node(fmt.Sprintf("n%d", i))
		if !ok {
			t.Fatalf("node n%d lost", i)
		}
		var u, held resource.Vec
		for _, a := range info.Allocations {
			u = u.Add(a.Resources)
			sum[a.Operation] = sum[a.Operation].Add(a.Resources)
			if !a.Preempted {
				held = held.Add(a.Resources)
				if poolOf[a.Operation] == "a" {
					poolA = poolA.Add(a.Resources)
				}
			}
		}
		if u != info.Usage || !info.Limits.Dominates(held) || held != info.Usage.Sub(info.PreemptedUsage) {
			t.Errorf("node %s: usage %v (preempted %v), allocations %v (not preempted %v), limits %v", info.Name, info.Usage, info.PreemptedUsage, u, held, info.Limits)
		}
	}
	for _, info := range s.Operations(nil) {
		if info.Usage != sum[info.ID] {
			t.Errorf("operation %s: usage %v, its allocations %v", info.ID, info.Usage, sum[info.ID])
		}
		c := info.AllocationsByStatus
		if c[0]+c[1]+c[2]+info.PreemptedAllocations != info.RunningAllocations {
			t.Errorf("operation %s: statuses %v + preempted %d != running %d", info.ID, c, info.PreemptedAllocations, info.RunningAllocations)
		}
	}
	lower := limit
	lower[resource.CPU] = cores(16)
	if !lower.Dominates(poolA) {
		// Limit violations are repaid by the normal stage, one node per
		// backoff: after 40 rounds they must be gone.
		t.Errorf("pool a uses %v over its limits %v", poolA, lower)
	}
	s.UpdateFairShare(rounds)
	infos := s.Operations(nil)
	for _, p := range s.Pools(nil) {
		var running, total, pending int64
		for _, info := range infos {
			if info.State.Final() || !(info.Pool == p.Name || p.Name == tree.RootName) {
				continue
			}
			total++
			switch info.State {
			case StateRunning:
				running++
			case StatePending:
				pending++
			}
		}
		if p.RunningOperationCount != running || p.OperationCount != total || p.PendingOperationCount != pending {
			t.Errorf("pool %s: running %d, all %d, pending %d; want %d, %d, %d", p.Name, p.RunningOperationCount, p.OperationCount, p.PendingOperationCount, running, total, pending)
		}
	}
}

// checkNodeInfo checks one node under its shard lock: usage is the sum of its
// allocations and exceeds the limits only by preempted ones.
func checkNodeInfo(t *testing.T, s *Scheduler, name string) {
	t.Helper()
	info, ok := s.Node(name)
	if !ok {
		t.Errorf("node %s lost", name)
		return
	}
	var u, held resource.Vec
	for _, a := range info.Allocations {
		u = u.Add(a.Resources)
		if !a.Preempted {
			held = held.Add(a.Resources)
		}
	}
	if u != info.Usage || held != info.Usage.Sub(info.PreemptedUsage) || !info.Limits.Dominates(held) {
		t.Errorf("node %s: usage %v (preempted %v), allocations %v (not preempted %v), limits %v", name, info.Usage, info.PreemptedUsage, u, held, info.Limits)
	}
}

// checkOperationLists verifies every operation's status lists under its
// mutex, concurrently with heartbeats (listsError): each listed allocation
// is in the list once, in order, with the status of its part and the
// operation's; counts and sums match.
func checkOperationLists(t *testing.T, s *Scheduler) {
	t.Helper()
	s.mu.Lock()
	ops := make([]*operation, 0, len(s.ops))
	for _, o := range s.ops {
		ops = append(ops, o)
	}
	s.mu.Unlock()
	for _, o := range ops {
		o.pre.mu.Lock()
		if err := listsError(&o.pre); err != "" {
			t.Errorf("operation %s: %s", o.id, err)
		}
		for a := o.pre.head; a != nil; a = a.next {
			if a.op != o {
				t.Errorf("operation %s: allocation %d of %s in its lists", o.id, a.id, a.op.id)
			}
		}
		o.pre.mu.Unlock()
	}
}

// checkQuiescent verifies every node when no heartbeat runs: each not
// preempted allocation is in its operation's lists and each preempted one
// is not, and the lists hold no allocation a node does not; allocations
// are sorted by ID; usage, preempted usage and the graceful count match
// the allocations.
func checkQuiescent(t *testing.T, s *Scheduler) {
	t.Helper()
	held := map[*allocation]bool{}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, n := range sh.nodes.slots {
			if n.hash == 0 {
				continue
			}
			n := n.n
			var u, pu resource.Vec
			graceful := 0
			for j, a := range n.allocs {
				if j > 0 && n.allocs[j-1].id >= a.id {
					t.Errorf("node %s: allocations out of ID order", n.name)
				}
				if a.preempted == a.listed || a.node != n {
					t.Errorf("node %s: allocation %d preempted %v listed %v", n.name, a.id, a.preempted, a.listed)
				}
				held[a] = true
				u = u.Add(a.resources)
				if a.preempted {
					pu = pu.Add(a.resources)
				}
				if a.op.graceful() && !a.preempted {
					graceful++
				}
			}
			if u != n.usage || pu != n.preemptedUsage || graceful != len(n.graceful) {
				t.Errorf("node %s: usage %v preempted %v graceful %d; allocations say %v, %v, %d", n.name, n.usage, n.preemptedUsage, len(n.graceful), u, pu, graceful)
			}
		}
		sh.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.ops {
		o.pre.mu.Lock()
		for a := o.pre.head; a != nil; a = a.next {
			if !held[a] {
				t.Errorf("operation %s: allocation %d listed, held by no node", o.id, a.id)
			}
		}
		o.pre.mu.Unlock()
	}
}

// nodeTags are node i's tags in the concurrency test: every other node is a
// gpu node.
func nodeTags(i int) []string {
	if i%2 == 0 {
		return []string{"gpu"}
	}
	return nil
}
