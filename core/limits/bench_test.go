package limits

import (
	"fmt"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

// BenchmarkRegisterUnregister cycles two operations through one running slot
// of a pool at the given depth: each iteration is one Unregister that starts
// the pending operation (a scan from the pool to the root) and one Register
// that queues the finished one again.
func BenchmarkRegisterUnregister(b *testing.B) {
	for _, depth := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			muts := []tree.Mutation{poolMut("p0", "root", -1, -1)}
			for i := 1; i < depth; i++ {
				muts = append(muts, poolMut(fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", i-1), -1, -1))
			}
			leaf := fmt.Sprintf("p%d", depth-1)
			muts[len(muts)-1].Pool.MaxRunningOperationCount = tree.SomeInt(1)
			h := newHarness(b, DefaultConfig(), muts...)
			x, _, _ := h.start("x", leaf, false)
			y, _, _ := h.start("y", leaf, false)
			l := h.l
			dst := make([]tree.ID, 0, 8)
			b.ReportAllocs()
			for b.Loop() {
				dst = l.Unregister(x, dst[:0])
				l.Register(x)
				x, y = y, x
			}
		})
	}
}
