package fairshare

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/tree"
)

// TestSweepPiped checks that the pipelined sweep (sweepSlopePiped) builds
// what sweepSlope builds, bit for bit, with the same critical points: over
// the children of every pool of more than exactChildren children of a
// GenTree tree (the root has 40, its sweep wraps the ring many times and
// resynchronises every 320 points), in both fit-factor modes, at
// GOMAXPROCS 1 and 2. Under -race a smaller tree's first pools of that size.
func TestSweepPiped(t *testing.T) {
	pools, most := 2000, 1000
	if invariants.Enabled { // -race or -tags invariants: slower
		pools, most = 300, 6
	}
	tr, total := coretest.GenTree(1, pools, 10*pools)
	for _, improved := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.EnableImprovedFitFactor = improved
		u := New(tr, cfg)
		u.Update(total, 0)
		u.Update(total, clock.Time(30*clock.Second))
		n := 0
		for _, p := range u.prePools {
			id := u.pools[p].id
			kids := u.kidFsbs(id)
			if len(kids) <= exactChildren || n == most {
				continue
			}
			n++
			var want plf.Vec
			serial := &worker{}
			ws, wo := serial.sweepFSBFF(&want, kids, u.kidWeights(id), u.minChildWeight(id), improved, nil, nil)
			for _, procs := range []int{1, 2} {
				t.Run(fmt.Sprintf("improved=%v/pool=%s/procs=%d", improved, tr.Name(id), procs), func(t *testing.T) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					var got plf.Vec
					piped := &worker{piped: true}
					gs, gwo := piped.sweepFSBFF(&got, kids, u.kidWeights(id), u.minChildWeight(id), improved, nil, nil)
					if d := vecDiff(&want, &got); d != "" {
						t.Fatalf("%d children, %d points: %s", len(kids), len(want.X), d)
					}
					if !slices.Equal(ws, gs) || !slices.Equal(wo, gwo) {
						t.Fatalf("critical points differ: %d/%d vs %d/%d", len(ws), len(wo), len(gs), len(gwo))
					}
				})
			}
		}
		if n == 0 || !invariants.Enabled && len(u.children(tree.Root)) <= exactChildren {
			t.Fatalf("no pool of more than %d children to sweep", exactChildren)
		}
	}
}

// vecDiff describes the first difference between a and b, bit for bit.
func vecDiff(a, b *plf.Vec) string {
	if len(a.X) != len(b.X) {
		return fmt.Sprintf("%d points vs %d", len(a.X), len(b.X))
	}
	for i := range a.X {
		if math.Float64bits(a.X[i]) != math.Float64bits(b.X[i]) {
			return fmt.Sprintf("x[%d] %v vs %v", i, a.X[i], b.X[i])
		}
		for r := range a.V[i] {
			if math.Float64bits(a.V[i][r]) != math.Float64bits(b.V[i][r]) {
				return fmt.Sprintf("v[%d][%d] %v vs %v", i, r, a.V[i][r], b.V[i][r])
			}
		}
	}
	return ""
}
