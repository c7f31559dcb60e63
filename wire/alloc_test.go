//go:build !race

package wire

import (
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
)

func TestAppendSolveResultAllocs(t *testing.T) {
	e := snapshot.ElementResult{Name: "pool-a"}
	e.Attrs.FairShare.Total = resource.Share{0.25, 1.0 / 3, 0, 0.5, 1e-9}
	e.Attrs.Integral.Type = tree.GuaranteeBurst
	r := &snapshot.Result{Updates: []snapshot.UpdateResult{{Label: "l\n", Elements: []snapshot.ElementResult{e, e, e}}}}
	buf := AppendSolveResult(nil, r)
	if n := testing.AllocsPerRun(100, func() { buf = AppendSolveResult(buf[:0], r) }); n != 0 {
		t.Fatalf("AppendSolveResult allocates %v times per call into a large enough buffer", n)
	}
	er := &Error{Code: CodeInvalidValue, Message: "cannot use \"x\"", Path: "$.a"}
	buf = AppendError(buf[:0], er)
	if n := testing.AllocsPerRun(100, func() { buf = AppendError(buf[:0], er) }); n != 0 {
		t.Fatalf("AppendError allocates %v times per call", n)
	}
}

func TestHeartbeatDecodeAllocs(t *testing.T) {
	var h Heartbeat
	in := NewInterner(16)
	body := []byte(apiHeartbeat)
	if err := h.Decode(body, in); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := h.Decode(body, in); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Heartbeat.Decode allocates %v times per call once warm", n)
	}
	r := &schedule.Response{
		Start:   []schedule.StartDecision{{Allocation: 1802, Operation: "op-17", Resources: resource.Vec{resource.CPU: 150}}},
		Preempt: []schedule.PreemptDecision{{Allocation: 1783, Operation: "op-3", Timeout: 10 * clock.Second, ForAllocation: 1802, ForOperation: "op-21"}},
	}
	buf := AppendHeartbeatResponse(nil, r)
	if n := testing.AllocsPerRun(100, func() { buf = AppendHeartbeatResponse(buf[:0], r) }); n != 0 {
		t.Fatalf("AppendHeartbeatResponse allocates %v times per call", n)
	}
}

func TestHeartbeatBatchDecodeAllocs(t *testing.T) {
	var body []byte
	body = append(body, `{"heartbeats":[`...)
	for i := range 64 {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"node_id":"node-`...)
		body = strconv.AppendInt(body, int64(i), 10)
		body = append(body, `",`...)
		body = append(body, nodeHeartbeat(i%2 == 0)[1:]...)
	}
	body = append(body, "]}"...)
	var b HeartbeatBatch
	in := NewInterner(1024)
	if err := b.Decode(body, in, 1024); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := b.Decode(body, in, 1024); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("HeartbeatBatch.Decode of 64 heartbeats allocates %v times per call once warm", n)
	}
	for i := range b.Entries {
		if b.Entries[i].Err != nil || len(b.Entries[i].Heartbeat.Allocations) != 20 {
			t.Fatalf("entry %d: %+v", i, b.Entries[i])
		}
	}
}
