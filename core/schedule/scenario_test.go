package schedule

import (
	"math"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// Scenario tests on virtual time (spec.md §3–§7): the cluster harness of
// schedule_test.go runs fair-share updates and heartbeats of every node
// once per virtual second.

// smallNode is 10 slots, 10 cores and 100 GiB: ten job(1, 1) allocations.
var smallNode = resource.Vec{resource.UserSlots: 10, resource.CPU: cores(10), resource.Memory: 100 * gib}

// runningOf returns the number of running, not preempted allocations of op.
func (c *cluster) runningOf(op string) int64 {
	info := c.info(op)
	return info.RunningAllocations - info.PreemptedAllocations
}

// preemptsOf returns the logged preemptions of op's allocations.
func (c *cluster) preemptsOf(op string) []loggedPreempt {
	var out []loggedPreempt
	for _, p := range c.preempts {
		if p.Operation == op {
			out = append(out, p)
		}
	}
	return out
}

// checkGates asserts that preemption for a starving operation happened on
// each node at most once per backoff (spec.md §5.4).
func (c *cluster) checkGates(backoff float64) {
	c.t.Helper()
	last := map[string]float64{}
	seen := map[string]bool{}
	for _, p := range c.preempts {
		if p.ForAllocation == 0 {
			continue
		}
		if seen[p.node] && p.t != last[p.node] && p.t-last[p.node] <= backoff {
			c.t.Errorf("node %s preempted at %v and %v: less than the backoff %v apart", p.node, last[p.node], p.t, backoff)
		}
		seen[p.node], last[p.node] = true, p.t
	}
}

// TestStarvingOperationPreemptsAfterTimeout: operation a fills 4 nodes; b
// arrives with an equal fair share (0.5). b is below its fair share from
// its first update, starves strictly after fair_share_starvation_timeout
// (30 s), and only then takes a's Preemptible allocations (those above a's
// fair share), one per node per preemptive_scheduling_backoff, until its
// usage is within the tolerance (0.8) of its fair share.
func TestStarvingOperationPreemptsAfterTimeout(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 4, smallNode)
	a := c.start(OperationSpec{ID: "a", Tasks: tasks(1000, job(1, 1)), AllocationPreemptionTimeout: tree.SomeDuration(7 * clock.Second)})
	c.update()
	c.heartbeatAll()
	c.run(10, 1)
	if got := c.runningOf(a); got != 40 {
		t.Fatalf("a runs %d allocations, want 40", got)
	}
	b := c.start(OperationSpec{ID: "b", Tasks: tasks(1000, job(1, 1))})
	c.run(41, 1)
	// First update with b at 11: below fair share since 11, not yet starving.
	if info := c.info(b); !info.BelowFairShare || info.Starvation != starvation.NonStarving || len(c.preempts) != 0 {
		t.Fatalf("at 41: b %+v, preemptions %v; want below fair share, not starving, no preemption", info, c.preempts)
	}
	c.run(42, 1)
	if info := c.info(b); info.Starvation != starvation.Starving || info.PreemptionPriority != PriorityNormal {
		t.Fatalf("at 42: b starvation %v priority %v, want starving with priority normal", info.Starvation, info.PreemptionPriority)
	}
	c.run(200, 1)
	if len(c.preempts) == 0 || c.preempts[0].t < 42 {
		t.Fatalf("first preemption %v, want one at 42 or later", c.preempts)
	}
	for _, p := range c.preempts {
		if p.Operation != a || p.ForOperation != b || p.ForAllocation == 0 || p.Reason != PreemptForStarving || p.Timeout != 7*clock.Second || p.Status != Preemptible {
			t.Errorf("preemption %+v: want a's Preemptible allocations for b (starving) with a's timeout 7", p)
		}
	}
	c.checkGates(5)
	// b stops preempting once its usage reaches 0.8 of its fair share (16
	// of 40 slots); nodes may overshoot by at most one allocation each.
	infoB := c.info(b)
	if rb := c.runningOf(b); rb < 16 || rb > 20 || infoB.BelowFairShare || infoB.Starvation != starvation.NonStarving {
		t.Errorf("b at the end: %d allocations, %+v; want 16..20, not below fair share", rb, infoB)
	}
	if ra, rb := c.runningOf(a), c.runningOf(b); ra+rb != 40 || len(c.preempts) != int(rb) {
		t.Errorf("a %d + b %d allocations with %d preemptions; want 40 in all, one preemption per b allocation", ra, rb, len(c.preempts))
	}
	if lastT := c.preempts[len(c.preempts)-1].t; lastT > 120 {
		t.Errorf("still preempting at %v", lastT)
	}
	c.golden("starving_preempts")
}

// TestNoPreemptionWithinTolerance: b uses 0.45 of the cluster with a fair
// share of 0.5 — within the starvation tolerance 0.8 — so it never starves
// and never preempts, however long it waits.
func TestNoPreemptionWithinTolerance(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 4, smallNode)
	a := c.start(OperationSpec{ID: "a", Tasks: tasks(22, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.now = 1
	b := c.start(OperationSpec{ID: "b", Tasks: tasks(1000, job(1, 1))})
	c.run(300, 1)
	if ra, rb := c.runningOf(a), c.runningOf(b); ra != 22 || rb != 18 {
		t.Fatalf("a %d, b %d allocations; want 22 and 18", ra, rb)
	}
	info := c.info(b)
	if got := info.Attrs.FairShare.Total[resource.CPU]; math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("b's fair share %v, want 0.5", got)
	}
	if info.BelowFairShare || info.Starvation != starvation.NonStarving || len(c.preempts) != 0 {
		t.Errorf("b %+v, preemptions %v; want neither starvation nor preemption", info, c.preempts)
	}
	// a runs above its fair share: 2 of its allocations are Preemptible.
	if got := c.info(a).AllocationsByStatus[Preemptible]; got != 2 {
		t.Errorf("a has %d Preemptible allocations, want 2", got)
	}
}

// TestPreemptedAllocationRunsUntilDeadline: a preempted allocation keeps
// its resources until its node reports it finished; a node that never
// stops it is told to abort it at its deadline.
func TestPreemptedAllocationRunsUntilDeadline(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 1, smallNode)
	c.stopDelay = -1 // the node ignores preemption
	a := c.start(OperationSpec{ID: "a", Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.start(OperationSpec{ID: "b", Tasks: tasks(1000, job(1, 1))})
	for len(c.preempts) == 0 && c.now < 100 {
		c.run(c.now+1, 1)
	}
	if len(c.preempts) == 0 {
		t.Fatal("no preemption")
	}
	p := c.preempts[0]
	c.run(p.t+p.Timeout.Seconds()-1, 1)
	ni, _ := c.s.Node(c.nodes[0].name)
	found := false
	for _, al := range ni.Allocations {
		if al.ID == p.Allocation {
			found = al.Preempted && al.Deadline == clock.FromSeconds(p.t).Add(p.Timeout)
		}
	}
	if held := ni.Usage.Sub(ni.PreemptedUsage); !found || held[resource.CPU] != smallNode[resource.CPU] || ni.PreemptedUsage.IsZero() {
		t.Fatalf("before the deadline: node %+v; want the preempted allocation still held beside a full node", ni)
	}
	if len(c.aborts) != 0 {
		t.Fatalf("aborted before the deadline: %v", c.aborts)
	}
	c.run(p.t+p.Timeout.Seconds(), 1)
	if len(c.aborts) == 0 || c.aborts[0].Allocation != p.Allocation || c.aborts[0].Reason != AbortPreemptionTimedOut || c.aborts[0].t != p.t+p.Timeout.Seconds() {
		t.Fatalf("aborts %v, want allocation %d aborted at its deadline %v", c.aborts, p.Allocation, p.t+p.Timeout.Seconds())
	}
	if info := c.info(a); info.PreemptedAllocations != int64(len(c.preempts)-1) {
		t.Errorf("a: %d preempted allocations still running, want %d", info.PreemptedAllocations, len(c.preempts)-1)
	}
}

// TestAggressivePreemptionOnFragmentedCluster: operation a's small
// allocations are spread over 4 nodes (one start per heartbeat), so each
// node holds at most 4 cores of a's Preemptible allocations — less than
// the 5-core (half-node) allocations of b. The normal stage cannot start
// them; with enable_aggressive_starvation and aggressive threshold 0.5, b
// becomes aggressively starving after 120 s and the aggressive stage may
// also take a's AggressivelyPreemptible allocations.
func TestAggressivePreemptionOnFragmentedCluster(t *testing.T) {
	node := resource.Vec{resource.UserSlots: 100, resource.CPU: cores(10), resource.Memory: 100 * gib}
	run := func(aggressive, allowAggressive bool) *cluster {
		cfg := DefaultConfig()
		cfg.EnableAggressiveStarvation = aggressive
		cfg.AllowAggressivePreemption = allowAggressive
		cfg.AggressivePreemptionSatisfactionThreshold = 0.5
		cfg.MaxStartedAllocationsPerHeartbeat = 1
		c := newCluster(t, cfg, 4, node)
		c.start(OperationSpec{ID: "a", Tasks: tasks(40, job(1, 1))})
		c.update()
		c.heartbeatAll()
		c.run(20, 1)
		if got := c.runningOf("a"); got != 40 {
			t.Fatalf("a runs %d, want 40", got)
		}
		c.start(OperationSpec{ID: "b", Tasks: tasks(3, job(5, 1))})
		c.run(400, 1)
		return c
	}

	c := run(false, true)
	if got := c.runningOf("b"); got != 0 || len(c.preempts) != 0 {
		t.Errorf("without aggressive starvation: b runs %d, preemptions %v; want none", got, c.preempts)
	}
	if info := c.info("b"); info.Starvation != starvation.Starving {
		t.Errorf("without aggressive starvation: b is %v, want starving", info.Starvation)
	}

	// allow_aggressive_preemption = false: a's AggressivelyPreemptible
	// allocations are at level NonPreemptible, so even the aggressive
	// stage cannot make room.
	c = run(true, false)
	if got := c.runningOf("b"); got != 0 || len(c.preempts) != 0 {
		t.Errorf("without allow_aggressive_preemption: b runs %d, preemptions %v; want none", got, c.preempts)
	}
	if info := c.info("b"); info.Starvation != starvation.AggressivelyStarving || info.PreemptionPriority != PriorityAggressive {
		t.Errorf("without allow_aggressive_preemption: b is %v with priority %v, want aggressively starving", info.Starvation, info.PreemptionPriority)
	}

	c = run(true, true)
	if got := c.runningOf("b"); got != 3 {
		t.Fatalf("with aggressive starvation: b runs %d, want 3", got)
	}
	// b is below its fair share since 21 and aggressively starving after
	// 141; nothing is preempted before.
	if first := c.preempts[0].t; first < 142 || first > 148 {
		t.Errorf("first preemption at %v, want 142..148", first)
	}
	aggr := 0
	for _, p := range c.preempts {
		if p.Operation != "a" || p.ForOperation != "b" || p.Reason != PreemptForAggressivelyStarving || p.Timeout != 10*clock.Second {
			t.Errorf("preemption %+v: want a's allocation for b (aggressively starving), timeout 10", p)
		}
		if p.Status == AggressivelyPreemptible {
			aggr++
		}
	}
	// Each 5-core allocation of b evicts 5 one-core allocations of a.
	if len(c.preempts) != 15 || aggr == 0 {
		t.Errorf("%d preemptions (%d AggressivelyPreemptible), want 15 with some AggressivelyPreemptible", len(c.preempts), aggr)
	}
	c.checkGates(5)
	if info := c.info("b"); info.Starvation != starvation.NonStarving || info.BelowFairShare {
		t.Errorf("b at the end: %+v", info)
	}
	c.golden("aggressive_fragmented")
}

// TestGracefulPreemptionShedsToFairShare: graceful operation g fills the
// cluster in pool p; h arrives in p with weight 3. g's fair share drops to
// 0.25 and every allocation above it becomes Preemptible: each is preempted
// gracefully (timeout 60 s) on the next heartbeat, keeps running until its
// node stops it (50 s here), and is never a victim of the preemptive
// stages. g ends at its fair share and is not scheduled again above it.
func TestGracefulPreemptionShedsToFairShare(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 4, smallNode,
		tree.Mutation{Kind: tree.AddPool, Name: "p"})
	c.stopDelay = 50
	g := c.start(OperationSpec{ID: "g", Pool: "p", PreemptionMode: PreemptionGraceful, Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.run(10, 1)
	if got := c.runningOf(g); got != 40 || len(c.preempts) != 0 {
		t.Fatalf("g runs %d with preemptions %v; want 40 and none", got, c.preempts)
	}
	h := c.start(OperationSpec{ID: "h", Pool: "p", Weight: tree.Some(3), Tasks: tasks(1000, job(1, 1))})
	c.run(11, 1)
	if got := len(c.preemptsOf(g)); got != 30 {
		t.Fatalf("at 11: %d graceful preemptions, want 30 (g's allocations above its fair share 0.25)", got)
	}
	// Until the nodes stop them, g's preempted allocations keep their
	// resources; h may use them only through the preemptive stage.
	c.run(60, 1)
	if info := c.info(g); info.RunningAllocations != 40 || info.PreemptedAllocations != 30 {
		t.Fatalf("at 60: g %+v; want 40 running of which 30 preempted", info)
	}
	c.run(200, 1)
	for _, p := range c.preemptsOf(g) {
		if p.Reason != PreemptGraceful || p.Timeout != 60*clock.Second || p.ForAllocation != 0 || p.Status != Preemptible || p.t != 11 {
			t.Errorf("preemption of g %+v: want graceful with timeout 60 at 11", p)
		}
	}
	if got := len(c.preempts); got != 30 {
		t.Errorf("%d preemptions in all, want only g's 30 graceful ones", got)
	}
	info := c.info(g)
	if rg, rh := c.runningOf(g), c.runningOf(h); rg != 10 || rh != 30 || info.PreemptedAllocations != 0 {
		t.Errorf("g %d, h %d allocations (g %+v); want 10 and 30", rg, rh, info)
	}
	if got, fs := info.Attrs.UsageShare[resource.CPU], info.Attrs.FairShare.Total[resource.CPU]; math.Abs(got-fs) > 1e-9 || math.Abs(fs-0.25) > 1e-9 {
		t.Errorf("g uses %v with fair share %v, want both 0.25", got, fs)
	}
	c.golden("graceful_sheds")
}

// TestGracefulPreemptionTimeoutOverride: an operation's own
// allocation_graceful_preemption_timeout is handed to the node.
func TestGracefulPreemptionTimeoutOverride(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 1, smallNode)
	c.start(OperationSpec{ID: "g", PreemptionMode: PreemptionGraceful, AllocationGracefulPreemptionTimeout: tree.SomeDuration(45 * clock.Second), Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.start(OperationSpec{ID: "h", Tasks: tasks(1000, job(1, 1))})
	c.run(2, 1)
	if len(c.preempts) != 5 {
		t.Fatalf("preemptions %v, want g's 5 allocations above its fair share 0.5", c.preempts)
	}
	for _, p := range c.preempts {
		if p.Timeout != 45*clock.Second || p.Reason != PreemptGraceful {
			t.Errorf("preemption %+v, want graceful with timeout 45", p)
		}
	}
}

// TestLimitViolationPreemption: lowering a busy pool's resource limits
// makes the normal stage (always attempted) preempt the pool's Preemptible
// allocations until the pool fits its limits again, with no starving
// operation around.
func TestLimitViolationPreemption(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 4, smallNode, tree.Mutation{Kind: tree.AddPool, Name: "lim"})
	a := c.start(OperationSpec{ID: "a", Pool: "lim", Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.run(3, 1)
	lim := tree.PartialVec{V: resource.Vec{resource.CPU: cores(20)}, Set: [resource.Count]bool{resource.CPU: true}}
	if _, err := c.s.ApplyPools(tree.Mutation{Kind: tree.SetPool, Name: "lim", Pool: tree.PoolConfig{ResourceLimits: lim}}); err != nil {
		t.Fatal(err)
	}
	c.run(30, 1)
	if got := c.runningOf(a); got != 20 {
		t.Errorf("a runs %d allocations, want 20 (the pool's limit)", got)
	}
	if len(c.preempts) != 20 {
		t.Errorf("%d preemptions, want 20", len(c.preempts))
	}
	for _, p := range c.preempts {
		if p.Reason != PreemptLimitViolated || p.ForAllocation != 0 || p.Timeout != 10*clock.Second || p.Status != Preemptible {
			t.Errorf("preemption %+v: want a Preemptible allocation for the violated limit", p)
		}
	}
	// The freed room stays free: the pool is at its limit.
	free := 0
	for i := range c.nodes {
		ni, _ := c.s.Node(c.nodes[i].name)
		free += 10 - len(ni.Allocations)
	}
	if free != 20 {
		t.Errorf("%d free slots, want 20", free)
	}
}

// TestNodeOvercommitAbort: a node whose limits shrink below its usage
// aborts allocations after the allowed overcommit duration, least
// preemptible and oldest kept first (spec.md §5.6). Preemptive scheduling
// is off here (its backoff never passes after the first heartbeat).
func TestNodeOvercommitAbort(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AllowedNodeResourcesOvercommitDuration = 10 * clock.Second
	cfg.PreemptiveSchedulingBackoff = 1e9 * clock.Second
	c := newCluster(t, cfg, 1, smallNode)
	a := c.start(OperationSpec{ID: "a", Tasks: tasks(10, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.run(2, 1)
	if info := c.info(a); info.RunningAllocations != 10 || info.AllocationsByStatus[Preemptible] != 0 {
		t.Fatalf("a: %+v; want 10 running, none Preemptible", info)
	}
	before, _ := c.s.Node(c.nodes[0].name)
	c.nodes[0].limits = smallNode.Mul(0.6)
	c.run(11, 1) // overcommitted since 3
	if len(c.aborts) != 0 {
		t.Fatalf("aborted within the allowed overcommit duration: %v", c.aborts)
	}
	c.run(13, 1)
	if len(c.aborts) != 4 {
		t.Fatalf("aborts %v, want 4", c.aborts)
	}
	for i, ab := range c.aborts {
		if ab.Reason != AbortNodeOvercommit || ab.Allocation != before.Allocations[6+i].ID || ab.t != 13 {
			t.Errorf("abort %d: %+v, want the %d-th allocation at 13 for node overcommit", i, ab, 6+i)
		}
	}
	after, _ := c.s.Node(c.nodes[0].name)
	if !after.Limits.Dominates(after.Usage) || len(after.Allocations) != 6 {
		t.Errorf("after the abort: %+v", after)
	}
	if info := c.info(a); info.PendingJobs != 4 {
		t.Errorf("a: %d pending jobs, want the 4 aborted ones back", info.PendingJobs)
	}
}

// TestNodeOvercommitPreemption: when limits shrink, the normal preemptive
// stage, always attempted, preempts the node's Preemptible allocations
// until its usage fits (spec.md §5.5: nothing started, the node is
// overcommitted), before the allowed overcommit duration ends in aborts.
func TestNodeOvercommitPreemption(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AllowedNodeResourcesOvercommitDuration = 30 * clock.Second
	c := newCluster(t, cfg, 1, smallNode)
	a := c.start(OperationSpec{ID: "a", Tasks: tasks(10, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.now = 1
	c.nodes[0].limits = smallNode.Mul(0.6)
	c.heartbeatAll()
	c.run(12, 1)
	// The total shrank to 6 slots: a's fair share is 6 of its demand 10, so
	// its last 4 allocations are Preemptible; the next preemptive
	// heartbeat (6) preempts them.
	if len(c.preempts) != 4 || len(c.aborts) != 0 {
		t.Fatalf("preemptions %v, aborts %v; want 4 preemptions", c.preempts, c.aborts)
	}
	for _, p := range c.preempts {
		if p.Reason != PreemptNodeOvercommit || p.t != 6 || p.ForAllocation != 0 || p.Status != Preemptible {
			t.Errorf("preemption %+v: want a Preemptible allocation for node overcommit at 6", p)
		}
	}
	if got := c.runningOf(a); got != 6 {
		t.Errorf("a runs %d, want 6", got)
	}
}

// TestNormalPreemptionBlockedByPool: allow_normal_preemption = false on a
// pool protects its operations' allocations from the normal stage.
func TestNormalPreemptionBlockedByPool(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 2, smallNode,
		tree.Mutation{Kind: tree.AddPool, Name: "safe", Pool: tree.PoolConfig{AllowNormalPreemption: tree.SomeBool(false)}},
		tree.Mutation{Kind: tree.AddPool, Name: "inner", Parent: "safe"})
	c.start(OperationSpec{ID: "a", Pool: "inner", Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeatAll()
	c.start(OperationSpec{ID: "b", Tasks: tasks(1000, job(1, 1))})
	c.run(120, 1)
	if info := c.info("b"); info.Starvation != starvation.Starving || info.RunningAllocations != 0 || len(c.preempts) != 0 {
		t.Errorf("b %+v, preemptions %v; want b starving without preempting", info, c.preempts)
	}
}

// TestPreemptionPriorityScope: with scope operation_and_ancestors an
// operation that is not starving itself inherits priority Normal from its
// starving pool (spec.md §3.5); with operation_only it does not.
func TestPreemptionPriorityScope(t *testing.T) {
	for _, scope := range []PreemptionPriorityScope{ScopeOperationAndAncestors, ScopeOperationOnly} {
		cfg := DefaultConfig()
		cfg.SchedulingPreemptionPriorityScope = scope
		c := newCluster(t, cfg, 4, smallNode,
			tree.Mutation{Kind: tree.AddPool, Name: "p"}, tree.Mutation{Kind: tree.AddPool, Name: "q"})
		// x1 runs its whole demand (fair share = demand: not starving).
		c.start(OperationSpec{ID: "x1", Pool: "p", Tasks: tasks(4, job(1, 1))})
		c.update()
		c.heartbeatAll()
		c.now = 1
		c.start(OperationSpec{ID: "a", Pool: "q", Tasks: tasks(1000, job(1, 1))})
		c.update()
		c.heartbeatAll()
		c.now = 2
		c.start(OperationSpec{ID: "x2", Pool: "p", Tasks: tasks(1000, job(1, 1))})
		for c.now < 40 {
			c.now++
			c.update() // no heartbeats: nothing changes
		}
		p, _ := c.s.Pool("p")
		x1, x2 := c.info("x1"), c.info("x2")
		if p.Starvation != starvation.Starving || x1.Starvation != starvation.NonStarving || x2.Starvation != starvation.Starving {
			t.Fatalf("%v: pool p %v, x1 %v, x2 %v; want p and x2 starving", scope, p.Starvation, x1.Starvation, x2.Starvation)
		}
		want := PriorityNormal
		if scope == ScopeOperationOnly {
			want = PriorityNone
		}
		if x1.PreemptionPriority != want || x2.PreemptionPriority != PriorityNormal || c.info("a").PreemptionPriority != PriorityNone {
			t.Errorf("%v: priorities x1 %v, x2 %v, a %v; want %v, normal, none", scope, x1.PreemptionPriority, x2.PreemptionPriority, c.info("a").PreemptionPriority, want)
		}
	}
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

// TestPendingQueueNestedPools: running-operation limits on nested pools
// (spec.md §6.2), through the scheduler: an operation waits at the lowest
// pool whose limit it would exceed and starts when a running operation
// leaves — by completing its jobs in heartbeats or by CompleteOperation.
func TestPendingQueueNestedPools(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 2, smallNode,
		tree.Mutation{Kind: tree.AddPool, Name: "p", Pool: tree.PoolConfig{MaxRunningOperationCount: tree.SomeInt(2)}},
		tree.Mutation{Kind: tree.AddPool, Name: "c1", Parent: "p", Pool: tree.PoolConfig{MaxRunningOperationCount: tree.SomeInt(1)}},
		tree.Mutation{Kind: tree.AddPool, Name: "c2", Parent: "p"})
	startAs := func(id, pool string, jobs int64, want OperationState) {
		t.Helper()
		_, st, err := c.s.StartOperation(c.at(), OperationSpec{ID: id, Pool: pool, Tasks: []TaskSpec{{JobCount: jobs, Resources: job(1, 1), DurationHintS: 5}}})
		if err != nil || st != want {
			t.Fatalf("start %s in %s: %v %v, want %v", id, pool, st, err, want)
		}
		c.durations[id] = []float64{5}
	}
	waiting := func(id, pool string) {
		t.Helper()
		info := c.info(id)
		if info.State != StatePending || info.WaitingPool != pool {
			t.Fatalf("%s: %v waiting at %q, want pending at %q", id, info.State, info.WaitingPool, pool)
		}
	}
	counts := func(pool string, running, pending int64) {
		t.Helper()
		p, err := c.s.Pool(pool)
		if err != nil || p.RunningOperationCount != running || p.PendingOperationCount != pending {
			t.Fatalf("pool %s: running %d pending %d (%v), want %d and %d", pool, p.RunningOperationCount, p.PendingOperationCount, err, running, pending)
		}
	}
	startAs("o1", "c1", 3, StateRunning)
	startAs("o2", "c1", 3, StatePending)
	startAs("o3", "c2", 1000, StateRunning)
	startAs("o4", "c2", 3, StatePending)
	waiting("o2", "c1")
	waiting("o4", "p")
	counts("p", 2, 2) // pending counts include the subtree's
	counts("c1", 1, 1)
	counts("c2", 1, 1)
	// Pending operations get no allocations.
	c.run(3, 1)
	if c.info("o2").RunningAllocations != 0 || c.info("o4").RunningAllocations != 0 || c.info("o1").RunningAllocations != 3 {
		t.Fatalf("allocations of pending operations: o1 %+v o2 %+v o4 %+v", c.info("o1"), c.info("o2"), c.info("o4"))
	}
	// o1's jobs complete (5 s): o2 leaves c1's queue; p is full again.
	c.run(8, 1)
	if st := c.info("o1").State; st != StateCompleted {
		t.Fatalf("o1 %v, want completed", st)
	}
	if st := c.info("o2").State; st != StateRunning {
		t.Fatalf("o2 %v, want running after o1 completed", st)
	}
	waiting("o4", "p")
	counts("p", 2, 1)
	// o3 is completed by the API: o4 starts.
	if err := c.s.CompleteOperation("o3"); err != nil {
		t.Fatal(err)
	}
	if st := c.info("o4").State; st != StateRunning {
		t.Fatalf("o4 %v, want running after o3 completed", st)
	}
	counts("p", 2, 0)
	c.run(30, 1)
	for _, id := range []string{"o2", "o4"} {
		if info := c.info(id); info.State != StateCompleted || info.CompletedJobs != 3 {
			t.Errorf("%s: %+v, want all 3 jobs completed", id, info)
		}
	}
	counts("p", 0, 0)
	if len(c.preempts) != 0 {
		t.Errorf("preemptions %v", c.preempts)
	}
}

// TestLightweightOperationsBypassRunningLimit: vanilla operations in a FIFO
// pool with enable_lightweight_operations run immediately, counted apart
// from max_running_operation_count, and are scheduled; other operations
// queue behind the limit (spec.md §6.3).
func TestLightweightOperationsBypassRunningLimit(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 2, smallNode,
		tree.Mutation{Kind: tree.AddPool, Name: "light", Pool: tree.PoolConfig{Mode: tree.ModeFIFO, EnableLightweightOperations: true, MaxRunningOperationCount: tree.SomeInt(1)}},
		tree.Mutation{Kind: tree.AddPool, Name: "fair", Pool: tree.PoolConfig{EnableLightweightOperations: true, MaxRunningOperationCount: tree.SomeInt(1)}})
	start := func(id, pool, typ string, want OperationState) {
		t.Helper()
		_, st, err := c.s.StartOperation(c.at(), OperationSpec{ID: id, Pool: pool, Type: typ, Tasks: tasks(2, job(1, 1))})
		if err != nil || st != want {
			t.Fatalf("start %s (%s) in %s: %v %v, want %v", id, typ, pool, st, err, want)
		}
	}
	start("m1", "light", "map", StateRunning)
	start("m2", "light", "map", StatePending)
	start("v1", "light", "vanilla", StateRunning)
	start("v2", "light", "vanilla", StateRunning)
	// Not lightweight outside a FIFO pool.
	start("f1", "fair", "vanilla", StateRunning)
	start("f2", "fair", "vanilla", StatePending)
	p, _ := c.s.Pool("light")
	if p.RunningOperationCount != 1 || p.LightweightRunningOperationCount != 2 || p.PendingOperationCount != 1 || p.OperationCount != 4 {
		t.Fatalf("pool light: %+v", p)
	}
	c.run(2, 1)
	for _, id := range []string{"m1", "v1", "v2", "f1"} {
		if got := c.info(id).RunningAllocations; got != 2 {
			t.Errorf("%s runs %d allocations, want 2", id, got)
		}
	}
	for _, id := range []string{"m2", "f2"} {
		if got := c.info(id).RunningAllocations; got != 0 {
			t.Errorf("pending %s runs %d allocations", id, got)
		}
	}
	// max_operation_count still applies to lightweight operations.
	c2 := newCluster(t, DefaultConfig(), 1, smallNode,
		tree.Mutation{Kind: tree.AddPool, Name: "light", Pool: tree.PoolConfig{Mode: tree.ModeFIFO, EnableLightweightOperations: true, MaxOperationCount: tree.SomeInt(1), MaxRunningOperationCount: tree.SomeInt(1)}})
	c2.start(OperationSpec{Pool: "light", Type: "vanilla", Tasks: tasks(1, job(1, 1))})
	if _, _, err := c2.s.StartOperation(0, OperationSpec{Pool: "light", Type: "vanilla", Tasks: tasks(1, job(1, 1))}); err == nil {
		t.Error("a lightweight operation was admitted over max_operation_count")
	}
}

// TestBurstPoolReceivesBurstGuarantee: a burst pool (flow 10 cores, burst
// 50 cores of 100) idle for 600 s accumulates volume for a ratio of 1.0 (10%
// of the cluster for 600 s over the 60 s smooth period). When its
// operation arrives it gets the burst guarantee 0.5 plus half the rest
// (0.75 of the cluster) while the volume lasts; as the volume drains to
// the flow, its share falls towards 0.1 + 0.45 = 0.55. Jobs last one
// second, so usage follows fair share through heartbeats alone.
func TestBurstPoolReceivesBurstGuarantee(t *testing.T) {
	cpu := func(c float64) tree.PartialVec {
		return tree.PartialVec{V: resource.Vec{resource.CPU: cores(c)}, Set: [resource.Count]bool{resource.CPU: true}}
	}
	c := newCluster(t, DefaultConfig(), 10, smallNode,
		tree.Mutation{Kind: tree.AddPool, Name: "burst", Pool: tree.PoolConfig{Integral: tree.IntegralConfig{
			Type: tree.GuaranteeBurst, ResourceFlow: cpu(10), BurstGuarantee: cpu(50)}}},
		tree.Mutation{Kind: tree.AddPool, Name: "other"})
	short := []TaskSpec{{Name: "t", JobCount: 1 << 20, Resources: job(1, 1), DurationHintS: 1}}
	c.start(OperationSpec{ID: "o", Pool: "other", Tasks: short})
	c.update()
	c.heartbeatAll()
	c.run(600, 10) // the burst pool accumulates volume
	if got := c.runningOf("o"); got != 100 {
		t.Fatalf("o runs %d allocations alone, want 100", got)
	}
	c.start(OperationSpec{ID: "b", Pool: "burst", Tasks: short})
	usage := func() (float64, fairshareDetail) {
		t.Helper()
		p, err := c.s.Pool("burst")
		if err != nil {
			t.Fatal(err)
		}
		return p.Attrs.UsageShare[resource.CPU], fairshareDetail{p.Attrs.FairShare.Total[resource.CPU], p.Attrs.FairShare.IntegralGuarantee[resource.CPU]}
	}
	c.run(630, 1)
	if u, fs := usage(); math.Abs(fs.integral-0.5) > 1e-6 || math.Abs(fs.total-0.75) > 1e-6 || math.Abs(u-0.75) > 0.03 {
		t.Errorf("at 630: burst pool uses %v with fair share %+v; want integral 0.5, total 0.75, usage ≈ 0.75", u, fs)
	}
	c.run(700, 1)
	u700, fs700 := usage()
	if fs700.integral >= 0.5 || fs700.integral <= 0.1 || math.Abs(u700-fs700.total) > 0.03 {
		t.Errorf("at 700: burst pool uses %v with fair share %+v; want an integral part between 0.1 and 0.5 (the volume drains) and usage ≈ fair share", u700, fs700)
	}
	c.run(1200, 2)
	if u, fs := usage(); math.Abs(fs.integral-0.1) > 0.01 || math.Abs(fs.total-0.55) > 0.01 || math.Abs(u-0.55) > 0.03 {
		t.Errorf("at 1200: burst pool uses %v with fair share %+v; want integral ≈ 0.1 (the flow), total ≈ 0.55, usage ≈ 0.55", u, fs)
	}
	if len(c.preempts) != 0 {
		t.Errorf("%d preemptions; short jobs need none", len(c.preempts))
	}
}

type fairshareDetail struct{ total, integral float64 }

// TestPreemptiveSchedulingBackoff: a node runs the preemptive stages on its
// first heartbeat with a snapshot, then only when more than
// preemptive_scheduling_backoff (5 s) passed since its last attempt, and
// starts at most one allocation by preemption per heartbeat (spec.md §5.4).
func TestPreemptiveSchedulingBackoff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FairShareStarvationTimeout = 500 * clock.Millisecond
	c := newCluster(t, cfg, 1, smallNode)
	c.start(OperationSpec{ID: "a", Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeatAll() // the first preemptive attempt, at 0
	c.start(OperationSpec{ID: "b", Tasks: tasks(1000, job(1, 1))})
	for _, now := range []float64{1, 2} {
		c.now = now
		c.update()
	}
	if info := c.info("b"); info.PreemptionPriority != PriorityNormal {
		t.Fatalf("b: priority %v, want normal", info.PreemptionPriority)
	}
	f := func(now float64, want int) {
		t.Helper()
		c.now = now
		before := len(c.preempts)
		c.heartbeatAll()
		if got := len(c.preempts) - before; got != want {
			t.Errorf("heartbeat at %v: %d preemptions, want %d", now, got, want)
		}
	}
	f(2, 0)
	f(5, 0) // not more than 5 s after 0
	f(5.01, 1)
	f(6, 0)
	f(10.01, 0)
	f(10.02, 1)
	f(16, 1)
}
