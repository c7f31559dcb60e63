package facade

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
)

// TestPreemptionLogTable drives the log's index with a seeded random mix of
// records and forgets, more operations than it has slots, and checks it
// against a model: the operations it remembers are found with their last
// preemptionsPerOp events, most recent first; forgotten and evicted ones are
// not; a slot is never shared.
func TestPreemptionLogTable(t *testing.T) {
	// Fewer operations than slots: nothing is evicted; then three times as
	// many.
	t.Run("fits", func(t *testing.T) { testPreemptionLog(t, preemptionLogOps/2, false) })
	t.Run("evicts", func(t *testing.T) { testPreemptionLog(t, 3*preemptionLogOps, true) })
}

func testPreemptionLog(t *testing.T, nops int, evictions bool) {
	seed := uint64(17)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	l := newPreemptionLog(nil)
	model := map[string][]uint64{} // op → its allocations, in record order
	var order []string             // ops in the order they took a slot
	var resp schedule.Response
	for step := range 40000 {
		op := fmt.Sprintf("op-%d", r.IntN(nops))
		if r.IntN(10) == 0 {
			l.forget(op)
			delete(model, op)
			continue
		}
		resp.Reset()
		resp.Preempt = append(resp.Preempt, schedule.PreemptDecision{Allocation: uint64(step), Operation: op})
		l.observeAt(clock.Time(step), "n1", &resp)
		if _, ok := model[op]; !ok {
			order = append(order, op)
		}
		model[op] = append(model[op], uint64(step))
	}
	// The model keeps every operation; the log only those it did not evict.
	kept := 0
	for op, allocs := range model {
		got := l.recent(nil, op)
		if len(got) == 0 {
			continue // evicted
		}
		kept++
		// An operation evicted and recorded again has only its events
		// since: got is a prefix of its allocations, most recent first.
		if len(got) > min(len(allocs), preemptionsPerOp) {
			t.Fatalf("%s: %d events of %d recorded", op, len(got), len(allocs))
		}
		if !evictions && len(got) != min(len(allocs), preemptionsPerOp) {
			t.Fatalf("%s: %d events, want %d", op, len(got), min(len(allocs), preemptionsPerOp))
		}
		for i := range got {
			if a, want := got[i].d.Allocation, allocs[len(allocs)-1-i]; a != want {
				t.Fatalf("%s: event %d is allocation %d, want %d", op, i, a, want)
			}
		}
	}
	if kept == 0 || kept > preemptionLogOps {
		t.Fatalf("%d operations kept, want 1..%d", kept, preemptionLogOps)
	}
	seen := map[string]bool{}
	used := 0
	for i, s := range l.table {
		if s == 0 {
			continue
		}
		used++
		op := l.slots[s-1].op
		if op == "" || seen[op] || l.find(op) != i {
			t.Fatalf("table position %d: slot %d of %q is wrong", i, s-1, op)
		}
		seen[op] = true
	}
	if used+len(l.free) != preemptionLogOps {
		t.Fatalf("%d slots indexed and %d free, want %d in all", used, len(l.free), preemptionLogOps)
	}
	t.Logf("%d operations remembered of %d recorded", kept, len(order))
}

// TestPreemptionLogAllocs: recording preemptions allocates nothing, for a
// known operation and for a new one that evicts another.
func TestPreemptionLogAllocs(t *testing.T) {
	l := newPreemptionLog(nil)
	ops := make([]string, 2*preemptionLogOps)
	for i := range ops {
		ops[i] = fmt.Sprintf("op-%d", i)
	}
	var resp schedule.Response
	resp.Preempt = make([]schedule.PreemptDecision, 2)
	i := 0
	var c clock.Clock = clock.Func(func() clock.Time { return clock.Time(i) })
	allocs := testing.AllocsPerRun(5000, func() {
		resp.Preempt[0] = schedule.PreemptDecision{Allocation: uint64(i), Operation: ops[i%len(ops)], ForOperation: "x"}
		resp.Preempt[1] = schedule.PreemptDecision{Allocation: uint64(i), Operation: ops[0]}
		if i%2 == 0 {
			l.observe(c, "n1", &resp)
		} else {
			l.observeAt(clock.Time(i), "n1", &resp)
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("observe allocates %v times per heartbeat, want 0", allocs)
	}
}

// TestRecentPreemptions: a preemption that a heartbeat answers appears in
// the operation orchid's recent_preemptions with the node and the reason
// sentence the node was sent; the orchid lists the operation's tasks.
func TestRecentPreemptions(t *testing.T) {
	ts := startServer(t, `{"config": {"fair_share_starvation_timeout_s": 1, "fair_share_aggressive_starvation_timeout_s": 2,
			"preemptive_scheduling_backoff_s": 0, "fair_share_starvation_tolerance": 0.9},
		"pools": [{"name": "greedy"}, {"name": "starving"}]}`, nil)
	nodes := []*simNode{newNode("n1", 8, 32), newNode("n2", 8, 32)}
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "hog", "pool": "greedy",
		"tasks": [{"name": "mapper", "job_count": 100, "resources": {"cpu": 1, "memory": 1073741824}, "duration_hint_s": 60}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.must(201, "POST", "/api/v1/operations", `{"id": "urgent", "pool": "starving", "tasks": [{"job_count": 6, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	var got map[string]any
	var node string
	for round := 0; round < 40 && got == nil; round++ {
		ts.clock.AdvanceSeconds(0.5)
		ts.srv.UpdateFairShare()
		for _, n := range nodes {
			ts.heartbeat(n)
			if len(n.preempts) > 0 {
				got, node = n.preempts[0], n.name
				break
			}
		}
	}
	if got == nil {
		t.Fatal("no preemption after 20 s of virtual time")
	}
	status, body := ts.do("GET", "/api/v1/orchid/operations/hog", "")
	if status != 200 {
		t.Fatalf("GET orchid: %d %s", status, body)
	}
	var o struct {
		Tasks []struct {
			Name      string         `json:"name"`
			JobCount  int            `json:"job_count"`
			Resources map[string]any `json:"resources"`
			Hint      float64        `json:"duration_hint_s"`
		} `json:"tasks"`
		Recent []struct {
			Time       float64 `json:"time_s"`
			Allocation string  `json:"allocation_id"`
			Node       string  `json:"node_id"`
			Reason     string  `json:"reason"`
		} `json:"recent_preemptions"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Tasks) != 1 || o.Tasks[0].Name != "mapper" || o.Tasks[0].JobCount != 100 || o.Tasks[0].Hint != 60 ||
		num(o.Tasks[0].Resources["cpu"]) != 1 {
		t.Errorf("tasks: %+v", o.Tasks)
	}
	if len(o.Recent) == 0 {
		t.Fatalf("no recent_preemptions: %s", body)
	}
	found := false
	for _, e := range o.Recent {
		if e.Allocation == got["id"] {
			found = true
			if e.Node != node || e.Reason != got["reason"] || e.Time > ts.clock.Now().Seconds() || e.Time <= 0 {
				t.Errorf("recent_preemptions has %+v; the heartbeat to %s said %v", e, node, got)
			}
		}
	}
	if !found {
		t.Errorf("recent_preemptions %+v lacks allocation %v", o.Recent, got["id"])
	}
	// The urgent operation preempted nothing.
	status, body = ts.do("GET", "/api/v1/orchid/operations/urgent", "")
	if status != 200 || !json.Valid(body) {
		t.Fatalf("GET orchid urgent: %d %s", status, body)
	}
	var u map[string]any
	_ = json.Unmarshal(body, &u)
	if r, ok := u["recent_preemptions"].([]any); !ok || len(r) != 0 {
		t.Errorf("urgent's recent_preemptions: %v", u["recent_preemptions"])
	}
}

// TestPreemptionLogConcurrent records, reads and forgets from several
// goroutines at once (run it with -race: make test-race).
func TestPreemptionLogConcurrent(t *testing.T) {
	l := newPreemptionLog(nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp schedule.Response
			var buf [preemptionsPerOp]preemptionEvent
			for i := range 2000 {
				op := fmt.Sprintf("op-%d", (i*7+w)%300)
				switch i % 5 {
				case 0:
					l.forget(op)
				case 1:
					if got := l.recent(buf[:0], op); len(got) > preemptionsPerOp {
						t.Errorf("%d events", len(got))
					}
				default:
					resp.Reset()
					resp.Preempt = append(resp.Preempt, schedule.PreemptDecision{Allocation: uint64(i), Operation: op})
					l.observeAt(clock.Time(i), "n", &resp)
				}
			}
		}()
	}
	wg.Wait()
}
