package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

const gib = int64(1) << 30

// smallNode is 10 slots, 10 cores and 100 GiB: ten job(1, 1) allocations.
var smallNode = resource.Vec{resource.UserSlots: 10, resource.CPU: cores(10), resource.Memory: 100 * gib}

func cores(c float64) int64 { return resource.Cores(c) }

// heartbeat sends hb at now and returns the answer, failing the test on a
// rejection.
func heartbeat(t *testing.T, s *Scheduler, now clock.Time, hb *NodeHeartbeat) *Response {
	t.Helper()
	var resp Response
	if err := s.Heartbeat(now, hb, &resp); err != nil {
		t.Fatalf("heartbeat of %s: %v", hb.Node, err)
	}
	return &resp
}

// started returns the allocations an answer started, as running reports.
func started(resp *Response) []AllocationReport {
	var reps []AllocationReport
	for _, st := range resp.Start {
		reps = append(reps, AllocationReport{ID: st.Allocation, State: AllocRunning})
	}
	return reps
}

// startOn returns a scheduler of cfg and pools on which node n000 of limits
// registered, spec started and, after a fair-share update, the node's next
// heartbeat started what it could: the reports of those allocations.
func startOn(t *testing.T, cfg Config, limits resource.Vec, spec OperationSpec, pools ...tree.Mutation) (*Scheduler, []AllocationReport) {
	t.Helper()
	s := New(tree.New(tree.PoolConfig{}), cfg)
	if _, err := s.ApplyPools(pools...); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: limits})
	if _, _, err := s.StartOperation(0, spec); err != nil {
		t.Fatal(err)
	}
	s.UpdateFairShare(0)
	return s, started(heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: limits}))
}

// reportStates maps a simulated node's states to the reported ones.
var reportStates = [...]AllocationState{
	coretest.AllocRunning: AllocRunning, coretest.AllocCompleted: AllocCompleted, coretest.AllocFailed: AllocFailed,
	coretest.AllocAborted: AllocAborted, coretest.AllocRefused: AllocRefused,
}

// agentBeat sends the heartbeat hb of a node whose allocations agent runs:
// it settles the agent at now, reports its allocations and applies the
// answer (aborted allocations are gone, preempted ones stop at the next
// heartbeat, started ones run for their task's duration in durations, or
// until stopped).
func agentBeat(t *testing.T, s *Scheduler, now clock.Time, hb NodeHeartbeat, agent *coretest.Node[uint64, struct{}], durations map[string][]float64) *Response {
	t.Helper()
	agent.Advance(now, nil)
	for _, a := range agent.Allocs() {
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: a.ID, State: reportStates[a.State]})
	}
	resp := heartbeat(t, s, now, &hb)
	agent.Delivered(nil)
	for _, ab := range resp.Abort {
		agent.Abort(ab.Allocation)
	}
	for _, p := range resp.Preempt {
		agent.Preempt(now, p.Allocation)
	}
	for _, st := range resp.Start {
		end := clock.Never
		if ds := durations[st.Operation]; st.Task < len(ds) && ds[st.Task] > 0 {
			end = now.Add(clock.DurationFromSeconds(ds[st.Task]))
		}
		agent.Start(st.Allocation, end, struct{}{})
	}
	return resp
}

func job(cpu float64, memGiB int64) resource.Vec {
	return resource.Vec{resource.UserSlots: 1, resource.CPU: cores(cpu), resource.Memory: memGiB * gib}
}

func tasks(n int64, res resource.Vec) []TaskSpec {
	return []TaskSpec{{Name: "t", JobCount: n, Resources: res}}
}

// Reports in any order settle the same allocations as in ID order (the
// search tries the allocation after the previous report's first).
func TestReportsInAnyOrder(t *testing.T) {
	f := func(order func([]AllocationReport)) {
		t.Helper()
		s, reps := startOn(t, DefaultConfig(), smallNode, OperationSpec{ID: "a", Tasks: tasks(10, job(1, 1))})
		if len(reps) != 10 {
			t.Fatalf("started %d, want 10", len(reps))
		}
		reps[3].State, reps[7].State = AllocCompleted, AllocFailed
		order(reps)
		resp := heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: smallNode, Allocations: reps})
		if len(resp.Abort) != 0 {
			t.Fatalf("aborts %+v", resp.Abort)
		}
		// The failed job returned to pending and was started again.
		if info, _ := s.Operation("a"); info.RunningAllocations != 9 || info.CompletedJobs != 1 {
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
	s, reps := startOn(t, DefaultConfig(), smallNode, OperationSpec{Tasks: tasks(1000, job(1, 1))})
	if len(reps) != 10 {
		t.Fatalf("started %d, want 10", len(reps))
	}
	var resp *Response
	send := func(reps []AllocationReport) {
		t.Helper()
		resp = heartbeat(t, s, 0, &NodeHeartbeat{Node: "n000", Limits: smallNode, Allocations: reps})
	}
	send(reps)
	if len(resp.Start)+len(resp.Abort)+len(resp.Preempt) != 0 {
		t.Fatalf("steady heartbeat: %+v", *resp)
	}
	// A duplicate instead of allocation 3: allocation 3 vanished.
	dup := slices.Clone(reps)
	dup[3] = dup[4]
	send(dup)
	if len(resp.Abort) != 1 || resp.Abort[0].Allocation != reps[3].ID || resp.Abort[0].Reason != AbortVanished {
		t.Fatalf("duplicate: aborts %+v, want %d vanished", resp.Abort, reps[3].ID)
	}
	// It was restarted (one start); the node runs it.
	if len(resp.Start) != 1 {
		t.Fatalf("duplicate: starts %+v", resp.Start)
	}
	reps = append(slices.Delete(reps, 3, 4), AllocationReport{ID: resp.Start[0].Allocation})
	// The seq of allocation 5 under an unknown node's index: unknown, and
	// allocation 5 vanished.
	other := slices.Clone(reps)
	other[5].ID = 77<<32 | other[5].ID&(1<<32-1)
	send(other)
	if len(resp.Abort) != 2 || resp.Abort[0].Allocation != other[5].ID || resp.Abort[0].Reason != AbortUnknownAllocation ||
		resp.Abort[1].Allocation != reps[5].ID || resp.Abort[1].Reason != AbortVanished {
		t.Fatalf("other node's seq: aborts %+v", resp.Abort)
	}
	reps = append(slices.Delete(reps, 5, 6), AllocationReport{ID: resp.Start[0].Allocation})
	// Keep the oldest allocation and churn the others past the window:
	// the node's heartbeats are still settled exactly.
	for range 3 * heldWindow {
		reps[1].State = AllocCompleted
		send(reps)
		if len(resp.Start) != 1 || len(resp.Abort) != 0 {
			t.Fatalf("churn: %+v", *resp)
		}
		reps = append(slices.Delete(reps, 1, 2), AllocationReport{ID: resp.Start[0].Allocation})
		send(reps)
		if len(resp.Start)+len(resp.Abort) != 0 {
			t.Fatalf("steady after churn: %+v", *resp)
		}
	}
	if sh, hash := s.shardAndHash("n000"); sh.nodes.get("n000", hash).heldOK {
		t.Fatalf("allocations %d..%d fit a window of %d", reps[0].ID, reps[len(reps)-1].ID, heldWindow)
	}
	// The oldest finishes: the window covers the node again.
	reps[0].State = AllocCompleted
	send(reps)
	if sh, hash := s.shardAndHash("n000"); !sh.nodes.get("n000", hash).heldOK {
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
