package schedule

import (
	"testing"

	"github.com/fairsched/fairsched/core/clock"
)

// TestRefusedAndCordoned: a refused start returns its job to pending and
// its operation is not offered that node (by either stage) for
// refused_allocation_backoff_s, while other operations and other nodes
// go on; a cordoned node starts nothing, keeps and lists its allocations.
func TestRefusedAndCordoned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backoff float64 // refused_allocation_backoff_s
		refuse  bool    // n000 refuses x's first start
		cordon  bool    // n000 is cordoned from then on
		// after the next heartbeat of n000 at +wait s: x's allocations on
		// n000 and on n001 (which heartbeats too), y's on n000.
		wait                   float64
		xOn0, xOn1, yOn0, xPen int64
	}{
		{"refused: not offered again within the back-off", 10, true, false, 5, 0, 0, 1, 1},
		{"refused: offered again after the back-off", 10, true, false, 11, 1, 0, 1, 0},
		{"refused: back-off 0", 0, true, false, 1, 1, 0, 1, 0},
		{"refused: another node takes it", 10, true, false, 5, 0, 1, 1, 0},
		{"cordoned: nothing new starts, the running one stays", 10, false, true, 5, 1, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RefusedAllocationBackoff = clock.DurationFromSeconds(tc.backoff)
			c := newCluster(t, cfg, 1, smallNode)
			x := c.start(OperationSpec{ID: "x", Tasks: tasks(1, job(1, 1))})
			c.update()
			c.heartbeat(0)
			n := &c.nodes[0]
			if n.agent.Len() != 1 {
				t.Fatalf("n000 holds %d allocations, want x's", n.agent.Len())
			}
			if tc.refuse {
				n.finish(0, AllocRefused)
				c.heartbeat(0) // with a back-off, nothing else to offer
				if got := c.info(x); tc.backoff > 0 && (got.PendingJobs != 1 || got.RunningAllocations != 0) || c.s.RefusedAllocations() != 1 {
					t.Fatalf("after the refusal: %d pending, %d running, %d refused; want 1, 0, 1", got.PendingJobs, got.RunningAllocations, c.s.RefusedAllocations())
				}
			}
			y := c.start(OperationSpec{ID: "y", Tasks: tasks(1, job(1, 1))})
			if tc.cordon {
				c.nodes[0].unschedulable = true
			}
			c.now += tc.wait
			c.update()
			c.heartbeat(0)
			if tc.xOn1 > 0 {
				c.nodes = append(c.nodes, simNode{name: "n001", limits: smallNode})
				c.heartbeat(1)
			}
			on := func(node int, op string) int64 {
				k := int64(0)
				if node >= len(c.nodes) {
					return 0
				}
				for _, id := range c.nodes[node].ids() {
					a := c.s.allocationOp(c.nodes[node].name, id)
					if a == op {
						k++
					}
				}
				return k
			}
			if got := [4]int64{on(0, x), on(1, x), on(0, y), c.info(x).PendingJobs}; got != [4]int64{tc.xOn0, tc.xOn1, tc.yOn0, tc.xPen} {
				t.Fatalf("x on n000, x on n001, y on n000, x pending: %v, want %v", got, [4]int64{tc.xOn0, tc.xOn1, tc.yOn0, tc.xPen})
			}
			if info, _ := c.s.Node("n000"); info.Schedulable == tc.cordon || len(info.Allocations) != int(tc.xOn0+tc.yOn0) {
				t.Fatalf("n000: schedulable %v with %d allocations listed", info.Schedulable, len(info.Allocations))
			}
		})
	}
}

// allocationOp is the operation of allocation id on node name ("" if the
// node does not hold it).
func (s *Scheduler) allocationOp(name string, id uint64) string {
	info, _ := s.Node(name)
	for _, a := range info.Allocations {
		if a.ID == id {
			return a.Operation
		}
	}
	return ""
}
