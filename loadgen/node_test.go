package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/schedule"
)

func testWorkload(t *testing.T) *Workload {
	t.Helper()
	cfg := Standard()
	cfg.Nodes, cfg.Pools, cfg.Operations = 4, 3, 5
	cfg.JobDuration = Dist{Kind: DistFixed, A: 10}
	cfg.InProcess = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	w := NewWorkload(&cfg)
	w.RunID = "t1"
	return w
}

const sec = time.Second

// reports returns the node's next heartbeat as id → state.
func reports(n *Node) map[uint64]schedule.AllocationState {
	m := map[uint64]schedule.AllocationState{}
	for _, r := range n.AppendReports(nil) {
		m[r.ID] = r.State
	}
	return m
}

func TestNodeSemantics(t *testing.T) {
	f := func(name string, steps func(t *testing.T, n *Node, ops *opTable)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			w := testWorkload(t)
			ops := newOpTable(w.cfg.Operations)
			ops.prepare(0, 0, 2)
			steps(t, NewNode(w, 0), ops)
		})
	}
	start := func(n *Node, ops *opTable, now time.Duration, ids ...uint64) {
		d := &Decisions{}
		for _, id := range ids {
			d.Start = append(d.Start, StartDecision{ID: id, Slot: 0, Gen: 0})
		}
		n.Apply(now, d, ops)
	}

	f("finished allocations are reported once", func(t *testing.T, n *Node, ops *opTable) {
		start(n, ops, 0, 1, 2)
		n.Prepare(5 * sec)
		if got := reports(n); len(got) != 2 || got[1] != schedule.AllocRunning || got[2] != schedule.AllocRunning {
			t.Fatalf("at 5 s: got %v, want 1 and 2 running", got)
		}
		n.Acknowledge(ops)
		n.Prepare(10 * sec) // both jobs last 10 s
		if got := reports(n); len(got) != 2 || got[1] != schedule.AllocCompleted || got[2] != schedule.AllocCompleted {
			t.Fatalf("at 10 s: got %v, want 1 and 2 completed", got)
		}
		if n.Running() != 0 {
			t.Fatalf("running %d after completion, want 0", n.Running())
		}
		if c, a := n.Acknowledge(ops); c != 2 || a != 0 {
			t.Fatalf("Acknowledge = %d completed, %d aborted; want 2, 0", c, a)
		}
		n.Prepare(11 * sec)
		if got := reports(n); len(got) != 0 {
			t.Fatalf("after the acknowledged heartbeat: got %v, want nothing", got)
		}
		if ops.done[0].Load() != 2 || ops.completedOps.Load() != 1 {
			t.Fatalf("operation 0: %d jobs done, %d operations completed; want 2 and 1", ops.done[0].Load(), ops.completedOps.Load())
		}
		if got := <-ops.finished; got != 0 {
			t.Fatalf("finished slot %d, want 0", got)
		}
	})

	f("a failed heartbeat reports its finished allocations again", func(t *testing.T, n *Node, ops *opTable) {
		start(n, ops, 0, 7)
		n.Prepare(10 * sec)
		// The heartbeat failed: no Acknowledge.
		n.Prepare(11 * sec)
		if got := reports(n); len(got) != 1 || got[7] != schedule.AllocCompleted {
			t.Fatalf("got %v, want 7 completed again", got)
		}
		n.Acknowledge(ops)
		if ops.done[0].Load() != 1 {
			t.Fatalf("jobs done %d, want 1 (counted once)", ops.done[0].Load())
		}
	})

	f("preempted allocations stop at once and are reported aborted", func(t *testing.T, n *Node, ops *opTable) {
		start(n, ops, 0, 1, 2)
		n.Prepare(sec)
		n.Acknowledge(ops)
		n.Apply(sec, &Decisions{Preempt: []PreemptDecision{{ID: 1, TimeoutS: 30}}}, ops)
		n.Prepare(sec)
		if got := reports(n); len(got) != 2 || got[1] != schedule.AllocAborted || got[2] != schedule.AllocRunning {
			t.Fatalf("got %v, want 1 aborted and 2 running", got)
		}
		if c, a := n.Acknowledge(ops); c != 0 || a != 1 {
			t.Fatalf("Acknowledge = %d completed, %d aborted; want 0, 1", c, a)
		}
		if n.Running() != 1 {
			t.Fatalf("running %d, want 1", n.Running())
		}
		n.Prepare(2 * sec)
		if got := reports(n); len(got) != 1 || got[2] != schedule.AllocRunning {
			t.Fatalf("next heartbeat: got %v, want only 2 running", got)
		}
		if ops.done[0].Load() != 0 {
			t.Fatalf("an aborted job counted as done")
		}
	})

	f("preempted allocations stop within the timeout fraction", func(t *testing.T, n *Node, ops *opTable) {
		n.stopFrac = 0.5
		start(n, ops, 0, 1)
		n.Apply(0, &Decisions{Preempt: []PreemptDecision{{ID: 1, TimeoutS: 4}}}, ops)
		n.Prepare(2 * sec) // at most 0.5 × 4 s later
		if got := reports(n); got[1] != schedule.AllocAborted {
			t.Fatalf("got %v, want 1 aborted by 2 s", got)
		}
	})

	f("a job that ends before its preemption stop completes", func(t *testing.T, n *Node, ops *opTable) {
		n.stopFrac = 1
		start(n, ops, 0, 1)
		// Preempted at 9.9 s with a 60 s timeout: the stop comes after the
		// job's end at 10 s unless the draw is tiny; force it.
		n.running[0].stop = 20 * sec
		n.Prepare(10 * sec)
		if got := reports(n); got[1] != schedule.AllocCompleted {
			t.Fatalf("got %v, want 1 completed", got)
		}
	})

	f("aborted allocations are dropped without a report", func(t *testing.T, n *Node, ops *opTable) {
		start(n, ops, 0, 1, 2)
		n.Apply(sec, &Decisions{Abort: []uint64{2, 99}}, ops)
		n.Prepare(sec)
		if got := reports(n); len(got) != 1 || got[1] != schedule.AllocRunning {
			t.Fatalf("got %v, want only 1 running", got)
		}
		n.Prepare(30 * sec)
		if got := reports(n); len(got) != 1 || got[1] != schedule.AllocCompleted {
			t.Fatalf("got %v, want only 1 completed", got)
		}
	})

	f("a preempt or abort of an unknown allocation changes nothing", func(t *testing.T, n *Node, ops *opTable) {
		start(n, ops, 0, 1)
		n.Apply(sec, &Decisions{Preempt: []PreemptDecision{{ID: 5}}, Abort: []uint64{6}}, ops)
		n.Prepare(2 * sec)
		if got := reports(n); len(got) != 1 || got[1] != schedule.AllocRunning {
			t.Fatalf("got %v, want 1 running", got)
		}
	})

	f("allocations of other operations run and are not counted", func(t *testing.T, n *Node, ops *opTable) {
		n.Apply(0, &Decisions{Start: []StartDecision{{ID: 3, Slot: -1}}}, ops)
		n.Prepare(10 * sec)
		if c, _ := n.Acknowledge(ops); c != 1 {
			t.Fatalf("completed %d, want 1", c)
		}
		if ops.done[0].Load() != 0 {
			t.Fatalf("a foreign job counted for slot 0")
		}
	})

	f("completions of an older generation are not counted", func(t *testing.T, n *Node, ops *opTable) {
		start(n, ops, 0, 1) // generation 0
		ops.prepare(0, 1, 2)
		n.Prepare(10 * sec)
		n.Acknowledge(ops)
		if ops.done[0].Load() != 0 {
			t.Fatalf("a generation-0 job counted for generation 1")
		}
	})
}

func TestAppendHeartbeatMatchesReports(t *testing.T) {
	w := testWorkload(t)
	n := NewNode(w, 3)
	n.Apply(0, &Decisions{Start: []StartDecision{{ID: 1<<32 | 1, Slot: 0}, {ID: 1<<32 | 2, Slot: 1}}}, nil)
	n.Apply(0, &Decisions{Preempt: []PreemptDecision{{ID: 1<<32 | 2}}}, nil)
	n.Prepare(sec)
	got := string(n.AppendHeartbeat(nil))
	want := `{"resource_limits":{"user_slots":32,"cpu":32,"memory":137438953472},"tags":["rack-0"],"allocations":[` +
		`{"id":"4294967297","state":"running","operation_id":"lgt1-0-0","task_index":0,"resources":{"user_slots":1,"cpu":1,"memory":4294967296}},{"id":"4294967298","state":"aborted"}]}`
	if got != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
}

// TestOpTableQueuesASlotOnce: a slot waiting for a retry is not queued
// again when an operation of it completes meanwhile.
func TestOpTableQueuesASlotOnce(t *testing.T) {
	ops := newOpTable(2)
	ops.prepare(0, 0, 1)
	ops.enqueue(0) // its start failed: queued for a retry
	ops.complete(0, 0)
	ops.enqueue(0)
	if n := len(ops.finished); n != 1 {
		t.Fatalf("slot 0 queued %d times, want 1", n)
	}
	ops.dequeue(<-ops.finished)
	ops.prepare(0, 1, 1)
	ops.complete(0, 1)
	if n := len(ops.finished); n != 1 {
		t.Fatalf("after the retry: %d queued, want 1", n)
	}
}

// TestNodeReportsOriginsWhenNeeded: a node reports its allocations'
// origins in its first heartbeat and the first after a failed one (all of
// them with OriginsAlways), not in the others.
func TestNodeReportsOriginsWhenNeeded(t *testing.T) {
	const origin = `"operation_id":"lgt1-0-0"`
	for _, always := range []bool{false, true} {
		w := testWorkload(t)
		w.cfg.OriginsAlways = always
		n := NewNode(w, 0)
		n.Apply(0, &Decisions{Start: []StartDecision{{ID: 1, Slot: 0}}}, nil)
		steps := []struct {
			name string
			do   func()
			want bool
		}{
			{"first heartbeat", func() {}, true},
			{"after an answer", func() { n.Acknowledge(nil) }, always},
			{"after a failure", n.Failed, true},
			{"answered again", func() { n.Acknowledge(nil) }, always},
		}
		for _, st := range steps {
			st.do()
			body := string(n.AppendHeartbeat(nil))
			if got := strings.Contains(body, origin); got != st.want {
				t.Errorf("OriginsAlways %v, %s: origins reported %v, want %v: %s", always, st.name, got, st.want, body)
			}
			if got := len(n.AppendOrigins(nil)) > 0; got != st.want {
				t.Errorf("OriginsAlways %v, %s: AppendOrigins reports %v, want %v", always, st.name, got, st.want)
			}
		}
	}
}
