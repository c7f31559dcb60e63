package loadgen

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
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
	origins := n.AppendOrigins(nil)
	for i, o := range hb.AllocationOrigins {
		if string(o.Operation) != string(origins[i].Operation) || o.Task != origins[i].Task || o.Resources != origins[i].Resources {
			t.Fatalf("origin %d: decoded %+v, want %+v", i, o, origins[i])
		}
	}
	if len(hb.AllocationOrigins) != 19 {
		t.Fatalf("%d origins decoded, want 19 (every running allocation)", len(hb.AllocationOrigins))
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

// appendBatchAnswer writes the answer to a batch as the server does
// (facade's heartbeats handler): each node's answer, or its error.
func appendBatchAnswer(dst []byte, names []string, resps []*schedule.Response, errs []*wire.Error) []byte {
	dst = append(dst, `{"responses":[`...)
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"node_id":`...)
		dst = strconv.AppendQuote(dst, name)
		if errs[i] != nil {
			dst = append(dst, `,"error":`...)
			dst = wire.AppendErrorObject(dst, errs[i])
		} else {
			dst = append(dst, ',')
			dst = wire.AppendHeartbeatResponseMembers(dst, resps[i])
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}

// TestDecodeBatchResponse decodes what the server writes for a batch:
// answers (empty ones by the fast path) and errors, in order.
func TestDecodeBatchResponse(t *testing.T) {
	w := testWorkload(t)
	r := rng.New(43)
	for c := range 100 {
		k := 1 + c%9
		names := make([]string, k)
		resps := make([]*schedule.Response, k)
		errs := make([]*wire.Error, k)
		for i := range k {
			names[i] = NodeName(r.IntN(1000))
			switch r.IntN(4) {
			case 0:
				resps[i] = &schedule.Response{}
			case 1:
				errs[i] = &wire.Error{Code: "foreign_allocation", Message: "cannot accept \"1\"", Path: "$.heartbeats[" + strconv.Itoa(i) + "].allocations[0].id"}
			default:
				resps[i] = randomResponse(&r, w, r.IntN(4))
			}
		}
		body := appendBatchAnswer(nil, names, resps, errs)
		ds := make([]Decisions, k)
		ees := make([]*EntryError, k)
		if err := DecodeBatchResponse(body, w, names, ds, ees); err != nil {
			t.Fatalf("seed 43, case %d: %v\n%s", c, err, body)
		}
		for i := range k {
			if errs[i] != nil {
				if ees[i] == nil || ees[i].Code != errs[i].Code || ees[i].Message != errs[i].Message || ees[i].Path != errs[i].Path {
					t.Fatalf("seed 43, case %d, entry %d: error %+v, want %+v", c, i, ees[i], errs[i])
				}
				continue
			}
			var want Decisions
			FromResponse(resps[i], w, &want)
			if ees[i] != nil || fmt.Sprint(ds[i]) != fmt.Sprint(want) {
				t.Fatalf("seed 43, case %d, entry %d: %+v %v, want %+v\n%s", c, i, ds[i], ees[i], want, body)
			}
		}
		// Not the answer to these heartbeats: refused.
		if len(names) > 1 {
			if err := DecodeBatchResponse(body, w, names[1:], ds, ees); err == nil {
				t.Fatalf("case %d: an answer with one response too many decodes", c)
			}
			if err := DecodeBatchResponse(body, w, append(names[:len(names):len(names)], "node-x"), append(ds, Decisions{}), append(ees, nil)); err == nil {
				t.Fatalf("case %d: an answer with one response too few decodes", c)
			}
		}
		other := append([]string(nil), names...)
		other[k-1] = "other"
		if err := DecodeBatchResponse(body, w, other, ds, ees); err == nil {
			t.Fatalf("case %d: a response of another node decodes", c)
		}
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"responses":{}}`, `{"responses":[1]}`, `{"responses":[{"node_id":"node-1","error":[]}]}`,
		`{"responses":[{"allocations_to_start":[]}]}`, `{"responses":[]} x`} {
		if err := DecodeBatchResponse([]byte(bad), w, []string{"node-1"}, make([]Decisions, 1), make([]*EntryError, 1)); err == nil {
			t.Errorf("DecodeBatchResponse(%s) = nil error", bad)
		}
	}
}

// TestBatchBodyDecodes: the load generator's batch decodes with the
// server's decoder into each node's reports, for nodes whose allocations
// change between heartbeats (the nodes' encoding caches).
func TestBatchBodyDecodes(t *testing.T) {
	w := testWorkload(t)
	nodes := []*Node{NewNode(w, 1), NewNode(w, 2), NewNode(w, 3)}
	r := rng.New(44)
	ops := newOpTable(w.cfg.Operations)
	var next uint64 = 1
	var in = wire.NewInterner(100)
	var b wire.HeartbeatBatch
	now := time.Duration(0)
	finished := 0
	defer func() {
		if finished == 0 && !t.Failed() {
			t.Fatal("no heartbeat reported a finished allocation")
		}
	}()
	for step := range 300 {
		now += 100 * time.Millisecond
		var body []byte
		body = append(body, `{"heartbeats":[`...)
		for i, n := range nodes {
			n.Prepare(now)
			if i > 0 {
				body = append(body, ',')
			}
			body = n.AppendBatchEntry(body)
		}
		body = append(body, "]}"...)
		if err := b.Decode(body, in, 10); err != nil {
			t.Fatalf("step %d: %v\n%s", step, err, body)
		}
		for i, n := range nodes {
			e := &b.Entries[i]
			for _, a := range e.Heartbeat.Allocations {
				if a.State != schedule.AllocRunning {
					finished++
				}
			}
			if e.Err != nil || e.Node != n.Name || !reflect.DeepEqual(nonNilReports(e.Heartbeat.Allocations), nonNilReports(n.AppendReports(nil))) {
				t.Fatalf("step %d, node %s: decoded %+v %v, want %v", step, n.Name, e.Heartbeat.Allocations, e.Err, n.AppendReports(nil))
			}
			var single wire.Heartbeat
			if err := single.Decode(n.AppendHeartbeat(nil), in); err != nil || !reflect.DeepEqual(nonNilReports(single.Allocations), nonNilReports(e.Heartbeat.Allocations)) {
				t.Fatalf("step %d, node %s: its own heartbeat decodes to %v (%v), its batch entry to %v", step, n.Name, single.Allocations, err, e.Heartbeat.Allocations)
			}
			n.Acknowledge(ops)
			var d Decisions
			for range r.IntN(3) {
				d.Start = append(d.Start, StartDecision{ID: next, Slot: -1})
				next++
			}
			if len(n.running) > 0 && r.IntN(4) == 0 {
				d.Preempt = append(d.Preempt, PreemptDecision{ID: n.running[r.IntN(len(n.running))].id})
			}
			if len(n.running) > 0 && r.IntN(6) == 0 {
				d.Abort = append(d.Abort, n.running[r.IntN(len(n.running))].id)
			}
			n.Apply(now, &d, ops)
		}
	}
}

func nonNilReports(s []schedule.AllocationReport) []schedule.AllocationReport {
	if s == nil {
		return []schedule.AllocationReport{}
	}
	return s
}

func FuzzDecodeBatchResponse(f *testing.F) {
	w := &Workload{RunID: "t1", cfg: Config{Operations: 10}}
	r := rng.New(8)
	names := []string{"node-1", "node-2"}
	f.Add(appendBatchAnswer(nil, names, []*schedule.Response{randomResponse(&r, w, 2), {}}, make([]*wire.Error, 2)))
	f.Add(appendBatchAnswer(nil, names, []*schedule.Response{{}, nil}, []*wire.Error{nil, {Code: "invalid_value", Message: "m", Path: "$.heartbeats[1]"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds := make([]Decisions, 2)
		errs := make([]*EntryError, 2)
		if err := DecodeBatchResponse(data, w, names, ds, errs); err != nil {
			return
		}
		for i := range ds {
			for _, s := range ds[i].Start {
				if s.Slot >= int32(w.cfg.Operations) || s.Slot < -1 {
					t.Fatalf("slot %d out of range", s.Slot)
				}
			}
		}
	})
}
