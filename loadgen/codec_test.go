package loadgen

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/facade/wire"
)

func TestDecodeResponse(t *testing.T) {
	w := testWorkload(t)
	f := func(body string, want Decisions) {
		t.Helper()
		var got Decisions
		if err := DecodeResponse([]byte(body), w, &got); err != nil {
			t.Errorf("DecodeResponse(%s): %v", body, err)
			return
		}
		if len(got.Start)+len(got.Preempt)+len(got.Abort) == 0 && len(want.Start)+len(want.Preempt)+len(want.Abort) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeResponse(%s)\n got %+v\nwant %+v", body, got, want)
		}
	}
	f(`{"allocations_to_start":[],"allocations_to_preempt":[],"allocations_to_abort":[]}`, Decisions{})
	f(` { } `, Decisions{})
	f(`{"allocations_to_start":null}`, Decisions{})
	f(`{"allocations_to_start":[{"id":"1802","operation_id":"lgt1-3-2","task_index":0,"resources":{"cpu":1.5,"memory":4294967296}}]}`,
		Decisions{Start: []StartDecision{{ID: 1802, Slot: 3, Gen: 2}}})
	f(`{"allocations_to_start":[{"id":"1","operation_id":"op-17"},{"operation_id":"lgt1-4-0","id":"2"}]}`,
		Decisions{Start: []StartDecision{{ID: 1, Slot: -1}, {ID: 2, Slot: 4}}})
	f(`{"allocations_to_preempt":[{"id":"1783","operation_id":"op-3","reason":"preempted to start allocation 1802 of operation op-21 (starving)","timeout_s":10},{"id":"5","timeout_s":2.5e-1}]}`,
		Decisions{Preempt: []PreemptDecision{{ID: 1783, TimeoutS: 10}, {ID: 5, TimeoutS: 0.25}}})
	f(`{"allocations_to_abort":[{"id":"1650","operation_id":"op-9","reason":"operation op-9 aborted \"x\" \u00e9"}],"extra":{"a":[1,true,null,"s",{"b":-1e3}]}}`,
		Decisions{Abort: []uint64{1650}})
	f("{\n\t\"allocations_to_abort\" : [ { \"id\" : \"18446744073709551615\" } ]\n}\n", Decisions{Abort: []uint64{1<<64 - 1}})
	// Timeouts are correctly rounded: 0.07 is the float64 nearest 0.07.
	f(`{"allocations_to_preempt":[{"id":"6","timeout_s":0.07},{"id":"7","timeout_s":1e1}]}`,
		Decisions{Preempt: []PreemptDecision{{ID: 6, TimeoutS: 0.07}, {ID: 7, TimeoutS: 10}}})

	bad := func(body string) {
		t.Helper()
		var d Decisions
		if err := DecodeResponse([]byte(body), w, &d); err == nil {
			t.Errorf("DecodeResponse(%s) = nil error", body)
		}
	}
	bad(``)
	bad(`[]`)
	bad(`{`)
	bad(`{"allocations_to_start":[{"id":"x"}]}`)
	bad(`{"allocations_to_start":[{"id":1}]}`)
	bad(`{"allocations_to_start":[{"operation_id":"op-1"}]}`)
	bad(`{"allocations_to_start":[{"id":"18446744073709551616"}]}`)
	bad(`{"allocations_to_start":[{"id":"1"}}`)
	bad(`{"allocations_to_start":{}}`)
	bad(`{"allocations_to_preempt":[{"id":"1","timeout_s":"10"}]}`)
	bad(`{"a":tru}`)
	bad(`{"a":1.}`)
	bad(`{"a":"\`)
	bad(`{} x`)
	bad(`{"a" 1}`)
	bad(`{"a":1,}`)
	// Not JSON, even where DecodeResponse skips it (jsonscan checks it all).
	bad(`{"a":01}`)
	bad(`{"a":-}`)
	bad(`{"a":"\q"}`)
	bad(`{"a":"\u12"}`)
	bad("{\"a\":\"\x01\"}")
	bad(`{"a":[1 2]}`)
	bad(`{"a":nul}`)
	bad(`{"allocations_to_abort":[{"id":"1","x":[}]}`)
}

// randomResponse builds a core response with n decisions of each kind.
func randomResponse(r *rng.Rand, w *Workload, n int) *schedule.Response {
	resp := &schedule.Response{}
	for range n {
		op := "op-" + strconv.Itoa(r.IntN(100))
		if r.IntN(2) == 0 {
			op = w.OpID(r.IntN(w.cfg.Operations), uint32(r.IntN(5)))
		}
		var res resource.Vec
		res[resource.CPU] = r.Int64N(10000)
		res[resource.Memory] = r.Int64N(1 << 40)
		resp.Start = append(resp.Start, schedule.StartDecision{Allocation: r.Uint64(), Operation: op, Task: r.IntN(3), Resources: res})
		resp.Preempt = append(resp.Preempt, schedule.PreemptDecision{Allocation: r.Uint64(), Operation: op, Reason: schedule.PreemptReason(r.IntN(6)),
			Timeout: clock.Duration(r.IntN(600)) * 250 * clock.Millisecond, ForAllocation: r.Uint64(), ForOperation: op})
		resp.Abort = append(resp.Abort, schedule.AbortDecision{Allocation: r.Uint64(), Reason: schedule.AbortReason(r.IntN(4)), Operation: op})
	}
	return resp
}

// TestDecodeResponseRoundTrip decodes what the server's encoder writes.
func TestDecodeResponseRoundTrip(t *testing.T) {
	w := testWorkload(t)
	r := rng.New(42)
	for i := range 200 {
		resp := randomResponse(&r, w, i%7)
		body := wire.AppendHeartbeatResponse(nil, resp)
		var got, want Decisions
		if err := DecodeResponse(body, w, &got); err != nil {
			t.Fatalf("seed 42, case %d: %v\n%s", i, err, body)
		}
		FromResponse(resp, w, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed 42, case %d:\n got %+v\nwant %+v\n%s", i, got, want, body)
		}
	}
}

// TestHeartbeatBodyDecodes checks the request encoder against the
// server's decoder.
func TestHeartbeatBodyDecodes(t *testing.T) {
	w := testWorkload(t)
	n := NewNode(w, 2)
	var d Decisions
	for i := range 20 {
		d.Start = append(d.Start, StartDecision{ID: uint64(2)<<32 | uint64(i+1), Slot: int32(i % 5)})
	}
	n.Apply(0, &d, nil)
	n.Apply(0, &Decisions{Preempt: []PreemptDecision{{ID: 2<<32 | 3}}}, nil)
	n.Prepare(sec)
	var hb wire.Heartbeat
	if err := hb.Decode(n.AppendHeartbeat(nil), nil); err != nil {
		t.Fatal(err)
	}
	if hb.Limits != w.NodeLimits() || len(hb.Tags) != 1 || hb.Tags[0] != NodeTag(2) {
		t.Fatalf("limits %v tags %v", hb.Limits, hb.Tags)
	}
	if !reflect.DeepEqual(hb.Allocations, n.AppendReports(nil)) {
		t.Fatalf("decoded allocations\n%v\nwant\n%v", hb.Allocations, n.AppendReports(nil))
	}
}

func TestAppendStartOperationDecodes(t *testing.T) {
	w := testWorkload(t)
	for slot := range 5 {
		for gen := range uint32(3) {
			spec := w.Operation(slot, gen)
			got, err := wire.DecodeStartOperation(AppendStartOperation(nil, &spec))
			if err != nil {
				t.Fatalf("operation (%d, %d): %v\n%s", slot, gen, err, AppendStartOperation(nil, &spec))
			}
			if !reflect.DeepEqual(got, spec) {
				t.Fatalf("operation (%d, %d):\n got %+v\nwant %+v", slot, gen, got, spec)
			}
		}
	}
}

func FuzzDecodeResponse(f *testing.F) {
	w := &Workload{RunID: "t1", cfg: Config{Operations: 10}}
	r := rng.New(7)
	for i := range 4 {
		f.Add(wire.AppendHeartbeatResponse(nil, randomResponse(&r, w, i)))
	}
	f.Add([]byte(`{"allocations_to_preempt":[{"id":"5","timeout_s":2.5e-1}],"x":[[[{}]]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decisions
		err := DecodeResponse(data, w, &d)
		if err != nil && len(d.Start)+len(d.Preempt)+len(d.Abort) > 0 {
			// Partial results are allowed on error; nothing to check.
			return
		}
		for _, s := range d.Start {
			if s.Slot >= int32(w.cfg.Operations) || s.Slot < -1 {
				t.Fatalf("slot %d out of range", s.Slot)
			}
		}
	})
}
