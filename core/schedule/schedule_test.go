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

const gib = int64(1) << 30

// smallNode is 10 slots, 10 cores and 100 GiB: ten job(1, 1) allocations.
var smallNode = resource.Vec{resource.UserSlots: 10, resource.CPU: cores(10), resource.Memory: 100 * gib}

func cores(c float64) int64 { return resource.Cores(c) }

// cluster is a deterministic harness of simulated nodes on virtual time for
// the tests that look inside the scheduler; scenarios are scripts under
// testdata/scenarios (see TestScenarios). Its nodes are coretest.Node agents
// that stop a preempted allocation at their next heartbeat: they run every
// allocation they are told to start until its task's DurationHintS passed
// (never, without one) and report it completed once.
type cluster struct {
	t         *testing.T
	s         *Scheduler
	nodes     []simNode
	now       float64
	resp      Response
	durations map[string][]float64 // operation → task durations
	// usage is what nodes report as the resource_usage of the running
	// allocations it names (others report none).
	usage map[uint64]resource.Vec
	// preempts and aborts log every decision with its time and node.
	preempts []loggedPreempt
	aborts   []loggedAbort
}

type loggedPreempt struct {
	t    float64
	node string
	PreemptDecision
}

type loggedAbort struct {
	t    float64
	node string
	AbortDecision
}

// simNode is a simulated node: its agent's allocations carry their
// operation's ID.
type simNode struct {
	name   string
	limits resource.Vec
	tags   []string
	// unschedulable cordons the node in its heartbeats.
	unschedulable bool
	agent         coretest.Node[uint64, string]
}

// reportStates maps the agent's states to the reported ones, and back.
var reportStates = map[coretest.AllocState]AllocationState{
	coretest.AllocRunning: AllocRunning, coretest.AllocCompleted: AllocCompleted, coretest.AllocFailed: AllocFailed,
	coretest.AllocAborted: AllocAborted, coretest.AllocRefused: AllocRefused,
}

// reports returns what the node would report now, in a new slice.
func (n *simNode) reports() []AllocationReport {
	var reps []AllocationReport
	for _, a := range n.agent.Allocs() {
		reps = append(reps, AllocationReport{ID: a.ID, State: reportStates[a.State]})
	}
	return reps
}

// ids returns the node's allocations in start order.
func (n *simNode) ids() []uint64 {
	var ids []uint64
	for _, a := range n.agent.Allocs() {
		ids = append(ids, a.ID)
	}
	return ids
}

// finish ends the node's j-th allocation now in state st.
func (n *simNode) finish(j int, st AllocationState) {
	for cs, rs := range reportStates {
		if rs == st {
			n.agent.Finish(n.agent.Allocs()[j].ID, cs)
			return
		}
	}
}

func newCluster(t *testing.T, cfg Config, nodes int, limits resource.Vec, pools ...tree.Mutation) *cluster {
	t.Helper()
	s := New(tree.New(tree.PoolConfig{}), cfg)
	if len(pools) > 0 {
		if _, err := s.ApplyPools(pools...); err != nil {
			t.Fatal(err)
		}
	}
	c := &cluster{t: t, s: s, durations: map[string][]float64{}}
	for i := range nodes {
		c.nodes = append(c.nodes, simNode{name: fmt.Sprintf("n%03d", i), limits: limits})
	}
	// Nodes register with their first heartbeat.
	c.heartbeatAll()
	return c
}

// heartbeatAll sends one heartbeat per node in order and applies the answers.
func (c *cluster) heartbeatAll() {
	c.t.Helper()
	for i := range c.nodes {
		c.heartbeat(i)
	}
}

func (c *cluster) heartbeat(i int) {
	c.t.Helper()
	n := &c.nodes[i]
	n.agent.Advance(c.at(), nil)
	c.resp.Reset()
	hb := NodeHeartbeat{Node: n.name, Limits: n.limits, Tags: n.tags, Allocations: n.reports(), Unschedulable: n.unschedulable}
	for j := range hb.Allocations {
		u, ok := c.usage[hb.Allocations[j].ID]
		hb.Allocations[j].HasUsage = ok
		hb.AllocationUsage = append(hb.AllocationUsage, u)
	}
	if err := c.s.Heartbeat(c.at(), &hb, &c.resp); err != nil {
		c.t.Fatalf("heartbeat of %s: %v", n.name, err)
	}
	// Finished reports are delivered once; aborted allocations are gone.
	n.agent.Delivered(nil)
	for _, ab := range c.resp.Abort {
		n.agent.Abort(ab.Allocation)
		c.aborts = append(c.aborts, loggedAbort{c.now, n.name, ab})
	}
	for _, p := range c.resp.Preempt {
		c.preempts = append(c.preempts, loggedPreempt{c.now, n.name, p})
		n.agent.Preempt(c.at(), p.Allocation)
	}
	for _, st := range c.resp.Start {
		end := clock.Never
		if ds := c.durations[st.Operation]; st.Task < len(ds) && ds[st.Task] > 0 {
			end = clock.FromSeconds(c.now + ds[st.Task])
		}
		n.agent.Start(st.Allocation, end, st.Operation)
	}
}

// at returns the harness's time (seconds) as the core's clock.Time.
func (c *cluster) at() clock.Time { return clock.FromSeconds(c.now) }

// run advances virtual time in steps of dt until until, running a
// fair-share update and a heartbeat of every node at each step.

func (c *cluster) run(until, dt float64) {
	c.t.Helper()
	for c.now+dt <= until+1e-9 {
		c.now += dt
		c.update()
		c.heartbeatAll()
	}
}

func (c *cluster) update() { c.s.UpdateFairShare(c.at()) }

func (c *cluster) start(spec OperationSpec) string {
	c.t.Helper()
	id, _, err := c.s.StartOperation(c.at(), spec)
	if err != nil {
		c.t.Fatalf("start %+v: %v", spec, err)
	}
	for _, tk := range spec.Tasks {
		c.durations[id] = append(c.durations[id], tk.DurationHintS)
	}
	return id
}

func (c *cluster) info(id string) OperationInfo {
	c.t.Helper()
	info, err := c.s.Operation(id)
	if err != nil {
		c.t.Fatal(err)
	}
	return info
}

func job(cpu float64, memGiB int64) resource.Vec {
	return resource.Vec{resource.UserSlots: 1, resource.CPU: cores(cpu), resource.Memory: memGiB * gib}
}

func tasks(n int64, res resource.Vec) []TaskSpec {
	return []TaskSpec{{Name: "t", JobCount: n, Resources: res}}
}

func TestHeartbeatSettlesReports(t *testing.T) {
	node := resource.Vec{resource.UserSlots: 10, resource.CPU: cores(10), resource.Memory: 100 * gib}
	c := newCluster(t, DefaultConfig(), 1, node)
	id := c.start(OperationSpec{Tasks: tasks(4, job(2, 1))})
	c.update()
	c.heartbeat(0)
	if got := len(c.resp.Start); got != 4 {
		t.Fatalf("started %d allocations, want 4", got)
	}
	n := &c.nodes[0]
	first, second := n.ids()[0], n.ids()[1]

	// A completed job counts once even when reported twice (with the
	// allocations still running, so that none vanishes).
	n.finish(0, AllocCompleted)
	c.heartbeat(0)
	c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: n.name, Limits: node, Allocations: append([]AllocationReport{{ID: first, State: AllocCompleted}}, n.reports()...)}, &c.resp)
	if info := c.info(id); info.CompletedJobs != 1 || info.RunningAllocations != 3 {
		t.Fatalf("after a repeated completion: %+v", info)
	}
	// A failed job returns to pending and is started again.
	n.agent.Finish(second, coretest.AllocFailed)
	c.heartbeat(0)
	if info := c.info(id); info.CompletedJobs != 1 || info.RunningAllocations != 3 || info.PendingJobs != 0 {
		t.Fatalf("after a failure: %+v", info)
	}
	// An unknown running allocation is answered with an abort.
	c.resp.Reset()
	unknown := uint64(0)<<32 | 999
	if err := c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: n.name, Limits: node, Allocations: append([]AllocationReport{{ID: unknown, State: AllocRunning}}, n.reports()...)}, &c.resp); err != nil {
		t.Fatal(err)
	}
	if len(c.resp.Abort) != 1 || c.resp.Abort[0].Allocation != unknown || c.resp.Abort[0].Reason != AbortUnknownAllocation {
		t.Fatalf("unknown allocation: abort %+v", c.resp.Abort)
	}
	// Completing every job completes the operation.
	for j := range n.agent.Len() {
		n.finish(j, AllocCompleted)
	}
	c.heartbeat(0)
	if info := c.info(id); info.State != StateCompleted || info.CompletedJobs != 4 {
		t.Fatalf("after all completions: %+v", info)
	}
}

func TestForeignAllocationIsRejected(t *testing.T) {
	node := resource.Vec{resource.UserSlots: 10, resource.CPU: cores(10), resource.Memory: 100 * gib}
	c := newCluster(t, DefaultConfig(), 2, node)
	c.start(OperationSpec{Tasks: tasks(4, job(2, 1))})
	c.update()
	c.heartbeat(0)
	c.heartbeat(1)
	stolen := c.nodes[0].reports()[0]
	before, _ := c.s.Node(c.nodes[1].name)
	c.resp.Reset()
	err := c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: c.nodes[1].name, Limits: node, Allocations: append(c.nodes[1].reports(), stolen)}, &c.resp)
	var se *apierr.Error
	if !errors.As(err, &se) || se.Code != CodeForeignAllocation {
		t.Fatalf("foreign allocation: err %v", err)
	}
	if after, _ := c.s.Node(c.nodes[1].name); len(after.Allocations) != len(before.Allocations) || after.Usage != before.Usage {
		t.Fatalf("a rejected heartbeat changed the node: %+v → %+v", before, after)
	}
}

// Reports in any order settle the same allocations as in ID order (the
// search tries the allocation after the previous report's first).
func TestReportsInAnyOrder(t *testing.T) {
	f := func(order func([]AllocationReport)) {
		t.Helper()
		c := newCluster(t, DefaultConfig(), 1, smallNode)
		id := c.start(OperationSpec{Tasks: tasks(10, job(1, 1))})
		c.update()
		c.heartbeat(0)
		n := &c.nodes[0]
		if n.agent.Len() != 10 {
			t.Fatalf("started %d, want 10", n.agent.Len())
		}
		reps := n.reports()
		reps[3].State, reps[7].State = AllocCompleted, AllocFailed
		order(reps)
		c.resp.Reset()
		if err := c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: n.name, Limits: n.limits, Allocations: reps}, &c.resp); err != nil {
			t.Fatal(err)
		}
		if len(c.resp.Abort) != 0 {
			t.Fatalf("aborts %+v", c.resp.Abort)
		}
		// The failed job returned to pending and was started again.
		if info := c.info(id); info.RunningAllocations != 9 || info.CompletedJobs != 1 {
			t.Fatalf("%+v", info)
		}
	}
	f(func([]AllocationReport) {})
	f(func(r []AllocationReport) { slices.Reverse(r) })
	f(func(r []AllocationReport) {
		rnd := rand.New(rand.NewPCG(1, 2))
		rnd.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
	})
}

// A heartbeat that lists exactly the allocations the node holds, running,
// is recognised without searching them (node.held); anything else takes
// the search: a duplicate, an ID of another (unknown) node with the seq of
// a held allocation, and a node whose allocations span more seqs than the
// window.
func TestHeartbeatListsHeldAllocations(t *testing.T) {
	c := newCluster(t, DefaultConfig(), 1, smallNode)
	c.start(OperationSpec{Tasks: tasks(1000, job(1, 1))})
	c.update()
	c.heartbeat(0)
	n := &c.nodes[0]
	if n.agent.Len() != 10 {
		t.Fatalf("started %d, want 10", n.agent.Len())
	}
	send := func(reps []AllocationReport) {
		t.Helper()
		c.resp.Reset()
		if err := c.s.Heartbeat(c.at(), &NodeHeartbeat{Node: n.name, Limits: n.limits, Allocations: reps}, &c.resp); err != nil {
			t.Fatal(err)
		}
	}
	reps := n.reports()
	send(reps)
	if len(c.resp.Start)+len(c.resp.Abort)+len(c.resp.Preempt) != 0 {
		t.Fatalf("steady heartbeat: %+v", c.resp)
	}
	// A duplicate instead of allocation 3: allocation 3 vanished.
	dup := slices.Clone(reps)
	dup[3] = dup[4]
	send(dup)
	if len(c.resp.Abort) != 1 || c.resp.Abort[0].Allocation != reps[3].ID || c.resp.Abort[0].Reason != AbortVanished {
		t.Fatalf("duplicate: aborts %+v, want %d vanished", c.resp.Abort, reps[3].ID)
	}
	// It was restarted (one start); the node runs it.
	if len(c.resp.Start) != 1 {
		t.Fatalf("duplicate: starts %+v", c.resp.Start)
	}
	reps = append(slices.Delete(reps, 3, 4), AllocationReport{ID: c.resp.Start[0].Allocation})
	// The seq of allocation 5 under an unknown node's index: unknown, and
	// allocation 5 vanished.
	other := slices.Clone(reps)
	other[5].ID = 77<<32 | other[5].ID&(1<<32-1)
	send(other)
	if len(c.resp.Abort) != 2 || c.resp.Abort[0].Allocation != other[5].ID || c.resp.Abort[0].Reason != AbortUnknownAllocation ||
		c.resp.Abort[1].Allocation != reps[5].ID || c.resp.Abort[1].Reason != AbortVanished {
		t.Fatalf("other node's seq: aborts %+v", c.resp.Abort)
	}
	reps = append(slices.Delete(reps, 5, 6), AllocationReport{ID: c.resp.Start[0].Allocation})
	// Keep the oldest allocation and churn the others past the window:
	// the node's heartbeats are still settled exactly.
	for range 3 * heldWindow {
		reps[1].State = AllocCompleted
		send(reps)
		if len(c.resp.Start) != 1 || len(c.resp.Abort) != 0 {
			t.Fatalf("churn: %+v", c.resp)
		}
		reps = append(slices.Delete(reps, 1, 2), AllocationReport{ID: c.resp.Start[0].Allocation})
		send(reps)
		if len(c.resp.Start)+len(c.resp.Abort) != 0 {
			t.Fatalf("steady after churn: %+v", c.resp)
		}
	}
	if sh, hash := c.s.shardAndHash(n.name); sh.nodes.get(n.name, hash).heldOK {
		t.Fatalf("allocations %d..%d fit a window of %d", reps[0].ID, reps[len(reps)-1].ID, heldWindow)
	}
	// The oldest finishes: the window covers the node again.
	reps[0].State = AllocCompleted
	send(reps)
	if sh, hash := c.s.shardAndHash(n.name); !sh.nodes.get(n.name, hash).heldOK {
		t.Fatal("held window off after the oldest allocation finished")
	}
}

// TestNodeTable checks the shards' node tables against a map on seeded
// random additions and removals, with hashes narrowed so that probe
// sequences collide and wrap around.
func TestNodeTable(t *testing.T) {
	for _, bits := range []uint{3, 6, 64} {
		r := rand.New(rand.NewPCG(uint64(bits), 9))
		var tb nodeTable
		want := map[string]*node{}
		hash := func(name string) uint64 {
			_, h := (&Scheduler{shards: make([]shard, 1)}).shardAndHash(name)
			if bits < 64 {
				h = h&(1<<bits-1) | 1
			}
			return h
		}
		for step := range 5000 {
			name := fmt.Sprintf("n%d", r.IntN(300))
			h := hash(name)
			switch n := want[name]; {
			case n == nil:
				n = &node{name: name, hash: h}
				tb.put(n, h)
				want[name] = n
			case r.IntN(2) == 0:
				tb.remove(n, h)
				delete(want, name)
			}
			if step%50 == 0 || bits == 3 {
				count := 0
				tb.all(func(*node) { count++ })
				if count != len(want) || tb.count != len(want) {
					t.Fatalf("bits %d step %d: %d nodes (count %d), want %d", bits, step, count, tb.count, len(want))
				}
				for i := range 300 {
					name := fmt.Sprintf("n%d", i)
					if got := tb.get(name, hash(name)); got != want[name] {
						t.Fatalf("bits %d step %d: get(%s) = %v, want %v", bits, step, name, got, want[name])
					}
				}
			}
		}
	}
}
