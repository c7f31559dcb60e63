package loadgen

import (
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// BenchmarkDecodeResponse decodes heartbeat answers as the server writes
// them: the empty answer of a steady node, and one with starts, a
// preemption and an abort.
func BenchmarkDecodeResponse(b *testing.B) {
	cfg := Standard()
	cfg.Nodes, cfg.Pools, cfg.Operations = 4, 3, 5
	cfg.InProcess = true
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	w := NewWorkload(&cfg)
	busy := &schedule.Response{
		Preempt: []schedule.PreemptDecision{{Allocation: 1<<32 | 1783, Operation: w.OpID(2, 0), Reason: schedule.PreemptForStarving,
			Timeout: 10 * clock.Second, ForAllocation: 1<<32 | 1802, ForOperation: w.OpID(3, 1)}},
		Abort: []schedule.AbortDecision{{Allocation: 1<<32 | 1650, Operation: w.OpID(4, 0), Reason: schedule.AbortOperationFinished, OperationState: schedule.StateAborted}},
	}
	for i := range 8 {
		busy.Start = append(busy.Start, schedule.StartDecision{Allocation: 1<<32 | uint64(1802+i), Operation: w.OpID(i%5, 1), Task: i % 2,
			Resources: resource.Vec{resource.UserSlots: 1, resource.CPU: 150, resource.Memory: 4 << 30}})
	}
	for _, bc := range []struct {
		name string
		r    *schedule.Response
	}{
		{"answer=empty", &schedule.Response{}},
		{"answer=busy", busy},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := wire.AppendHeartbeatResponse(nil, bc.r)
			var d Decisions
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := DecodeResponse(body, w, &d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBatchPath is the load generator's side of a batched heartbeat
// without the transport: for a batch of 64 of 10,000 nodes with 22 running
// allocations each, in turn, Prepare, the batch's body (AppendBatchEntry),
// the answer's decoding (DecodeBatchResponse, every node steady) and
// Acknowledge and Apply; ns/heartbeat is the headline.
func BenchmarkBatchPath(b *testing.B) {
	const nodes, batch = 10000, 64
	cfg := Standard()
	cfg.Nodes, cfg.InProcess = nodes, true
	cfg.JobDuration = Dist{Kind: DistFixed, A: 1e6}
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	w := NewWorkload(&cfg)
	ns := make([]*Node, nodes)
	for i := range ns {
		ns[i] = NewNode(w, i)
		var d Decisions
		for j := range 22 {
			d.Start = append(d.Start, StartDecision{ID: uint64(i)<<32 | uint64(j+1), Slot: -1})
		}
		ns[i].Apply(0, &d, nil)
	}
	type group struct {
		nodes  []*Node
		names  []string
		answer []byte
	}
	var groups []group
	for at := 0; at < nodes; at += batch {
		g := group{nodes: ns[at:min(at+batch, nodes)]}
		g.answer = append(g.answer, `{"responses":[`...)
		for i, n := range g.nodes {
			g.names = append(g.names, n.Name)
			if i > 0 {
				g.answer = append(g.answer, ',')
			}
			g.answer = append(g.answer, `{"node_id":"`+n.Name+emptyEntryTail...)
		}
		g.answer = append(g.answer, "]}\n"...)
		groups = append(groups, g)
	}
	ds := make([]Decisions, batch)
	errs := make([]*EntryError, batch)
	var body []byte
	k, heartbeats := 0, 0
	now := time.Second
	b.ReportAllocs()
	for b.Loop() {
		g := &groups[k]
		if k++; k == len(groups) {
			k = 0
		}
		now += time.Millisecond
		body = append(body[:0], `{"heartbeats":[`...)
		for i, n := range g.nodes {
			n.Prepare(now)
			if i > 0 {
				body = append(body, ',')
			}
			body = n.AppendBatchEntry(body)
		}
		body = append(body, "]}"...)
		if err := DecodeBatchResponse(g.answer, w, g.names, ds, errs); err != nil {
			b.Fatal(err)
		}
		for i, n := range g.nodes {
			n.Acknowledge(nil)
			n.Apply(now, &ds[i], nil)
		}
		heartbeats += len(g.nodes)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(heartbeats), "ns/heartbeat")
}
