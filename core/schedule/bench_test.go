package schedule

import (
	"fmt"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// BenchmarkHeartbeatByOperations measures a heartbeat that completes one allocation and
// starts one (the best-operation search over every running operation, the
// status lists' rebalance), and one that also runs the preemptive stages,
// by number of operations.
func BenchmarkHeartbeatByOperations(b *testing.B) {
	for _, ops := range []int{10, 1000, 10000} {
		for _, preemptive := range []bool{false, true} {
			b.Run(fmt.Sprintf("ops=%d/preemptive=%v", ops, preemptive), func(b *testing.B) {
				s := New(tree.New(tree.PoolConfig{}), DefaultConfig())
				const slots = 100
				limits := resource.Vec{resource.UserSlots: slots, resource.CPU: cores(slots), resource.Memory: slots * gib}
				hb := &NodeHeartbeat{Node: "n0", Limits: limits, Allocations: make([]AllocationReport, 0, slots)}
				var resp Response
				if err := s.Heartbeat(0, hb, &resp); err != nil {
					b.Fatal(err)
				}
				for i := range ops {
					if _, _, err := s.StartOperation(0, OperationSpec{ID: fmt.Sprintf("o%d", i), Tasks: tasks(1<<30, job(1, 0))}); err != nil {
						b.Fatal(err)
					}
				}
				s.UpdateFairShare(0)
				resp.Reset()
				s.Heartbeat(0, hb, &resp)
				for _, st := range resp.Start {
					hb.Allocations = append(hb.Allocations, AllocationReport{ID: st.Allocation, State: AllocRunning})
				}
				s.UpdateFairShare(1)
				now := 1.0
				b.ReportAllocs()
				for b.Loop() {
					if preemptive {
						now += 6
					} else {
						now += 1e-3
					}
					hb.Allocations[0].State = AllocCompleted
					resp.Reset()
					if err := s.Heartbeat(clock.FromSeconds(now), hb, &resp); err != nil {
						b.Fatal(err)
					}
					copy(hb.Allocations, hb.Allocations[1:])
					hb.Allocations[len(hb.Allocations)-1] = AllocationReport{ID: resp.Start[0].Allocation, State: AllocRunning}
				}
			})
		}
	}
}

// BenchmarkHeartbeatReports measures the settling of a full node's 20
// reports alone (nothing can start): steady, every report with its
// allocation's usage unchanged (usage), and every report's usage changed
// back and forth (usage-changing).
func BenchmarkHeartbeatReports(b *testing.B) {
	for _, mode := range []string{"steady", "usage", "usage-changing"} {
		b.Run(mode, func(b *testing.B) {
			s := New(tree.New(tree.PoolConfig{}), DefaultConfig())
			const slots = 20
			limits := resource.Vec{resource.UserSlots: slots, resource.CPU: cores(slots), resource.Memory: slots * gib}
			hb := &NodeHeartbeat{Node: "n0", Limits: limits}
			var resp Response
			if err := s.Heartbeat(0, hb, &resp); err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.StartOperation(0, OperationSpec{ID: "a", Tasks: tasks(1<<30, job(1, 0))}); err != nil {
				b.Fatal(err)
			}
			s.UpdateFairShare(0)
			resp.Reset()
			s.Heartbeat(0, hb, &resp)
			for _, st := range resp.Start {
				hb.Allocations = append(hb.Allocations, AllocationReport{ID: st.Allocation, State: AllocRunning, HasUsage: mode != "steady"})
				hb.AllocationUsage = append(hb.AllocationUsage, st.Resources)
			}
			s.UpdateFairShare(1)
			now := clock.FromSeconds(1)
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				now += clock.Time(clock.Millisecond)
				if mode == "usage-changing" {
					k++
					for i := range hb.AllocationUsage {
						hb.AllocationUsage[i][resource.CPU] = cores(0.5) + cores(float64((i+k)%2))
					}
				}
				resp.Reset()
				if err := s.Heartbeat(now, hb, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
