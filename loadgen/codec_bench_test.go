package loadgen

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/facade/wire"
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
