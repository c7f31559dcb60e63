//go:build !race

package loadgen

import (
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// TestHeartbeatPathAllocs: a node's heartbeat on the load generator's side
// (prepare, encode, decode the answer, acknowledge, apply) allocates
// nothing once its buffers have grown.
func TestHeartbeatPathAllocs(t *testing.T) {
	w := testWorkload(t)
	n := NewNode(w, 1)
	ops := newOpTable(w.cfg.Operations)
	ops.prepare(1, 0, 1<<40)
	resp := &schedule.Response{
		Start:   []schedule.StartDecision{{Allocation: 1<<32 | 100, Operation: w.OpID(1, 0)}},
		Preempt: []schedule.PreemptDecision{{Allocation: 1<<32 | 50, Timeout: 10 * clock.Second}},
		Abort:   []schedule.AbortDecision{{Allocation: 1<<32 | 51, Reason: schedule.AbortPreemptionTimedOut}},
	}
	answer := wire.AppendHeartbeatResponse(nil, resp)
	var d Decisions
	for i := range 16 {
		d.Start = append(d.Start, StartDecision{ID: 1<<32 | uint64(i+1), Slot: 1})
	}
	n.Apply(0, &d, ops)
	var body []byte
	now := time.Duration(0)
	step := func() {
		now += time.Millisecond
		n.Prepare(now)
		body = n.AppendHeartbeat(body[:0])
		if err := DecodeResponse(answer, w, &d); err != nil {
			t.Fatal(err)
		}
		n.Acknowledge(ops)
		n.Apply(now, &d, ops)
		// Keep the node's size steady: forget the started allocation again.
		n.Apply(now, &Decisions{Abort: []uint64{1<<32 | 100}}, ops)
	}
	step()
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Fatalf("%v allocations per heartbeat, want 0", a)
	}

	// Batched: the node's entry of a batch and the batch's answer.
	names := []string{n.Name, "other"}
	batchAnswer := []byte(`{"responses":[{"node_id":"` + n.Name + `",` + string(answer[1:len(answer)-1]) +
		`},{"node_id":"other","allocations_to_start":[],"allocations_to_preempt":[],"allocations_to_abort":[]}]}`)
	ds := make([]Decisions, 2)
	errs := make([]*EntryError, 2)
	batch := func() {
		now += time.Millisecond
		n.Prepare(now)
		body = n.AppendBatchEntry(append(body[:0], `{"heartbeats":[`...))
		if err := DecodeBatchResponse(batchAnswer, w, names, ds, errs); err != nil {
			t.Fatal(err)
		}
		n.Acknowledge(ops)
		n.Apply(now, &ds[0], ops)
		n.Apply(now, &Decisions{Abort: []uint64{1<<32 | 100}}, ops)
	}
	batch()
	if a := testing.AllocsPerRun(1000, batch); a != 0 {
		t.Fatalf("%v allocations per batched heartbeat, want 0", a)
	}
}
