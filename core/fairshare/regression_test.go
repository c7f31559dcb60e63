package fairshare_test

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
)

// TestIssue19DetailedFollowsGuarantees is issue 19: when a pool's guarantee
// changes but its total fair share does not, the next (incremental) update
// kept the old split of the fair share into its parts. The reproduction,
// through snapshot.Solve as `fairsched solve` runs it:
//
//	{"total_resources": {"cpu": 100},
//	 "tree": {"children": [{"pool": "P", "strong_guarantee_resources": {"cpu": 10},
//	   "integral_guarantees": {"guarantee_type": "burst", "burst_guarantee_resources": {"cpu": 50}},
//	   "accumulated_resource_volume": {"cpu": 6000},
//	   "children": [{"operation": "op", "demand": {"cpu": 30}}]}]},
//	 "updates": [{"elapsed_s": null}, {"elapsed_s": null, "set": {"P.strong_guarantee_resources": {"cpu": 20}}}]}
//
// Update 1 must split P's 0.3 into strong 0.2 and integral 0.1
// (docs/semantics.md#fair-share), and the root's likewise, in both fit-factor modes, for a burst or
// a relaxed pool (resource flow 10 cores), with or without elapsed time; and
// without elapsed time it must equal a solve of the changed snapshot from
// scratch in every attribute.
func TestIssue19DetailedFollowsGuarantees(t *testing.T) {
	build := func(improved bool, typ tree.GuaranteeType, strongCores float64, updates []snapshot.Update) *snapshot.Snapshot {
		cfg := fairshare.DefaultConfig()
		cfg.EnableImprovedFitFactor = improved
		pool := tree.PoolConfig{StrongGuarantee: semCPU(strongCores), Integral: tree.IntegralConfig{Type: typ, BurstGuarantee: semCPU(50)}}
		if typ == tree.GuaranteeRelaxed {
			pool.Integral = tree.IntegralConfig{Type: typ, ResourceFlow: semCPU(10)}
		}
		var volume [resource.Count]float64
		volume[resource.CPU] = 6000 * resource.CPUScale
		return &snapshot.Snapshot{
			Total:  resource.Vec{resource.CPU: resource.Cores(100)},
			Config: cfg,
			Root: snapshot.Element{Children: []snapshot.Element{{
				Name: "P", Pool: pool, AccumulatedVolume: volume,
				Children: []snapshot.Element{{Name: "op", IsOperation: true, Demand: resource.Vec{resource.CPU: resource.Cores(30)}}},
			}}},
			Updates: updates,
		}
	}
	type parts struct{ strong, integral, weightProportional float64 } // cpu
	want := map[string]parts{tree.RootName: {0.2, 0.1, 0}, "P": {0.2, 0.1, 0}, "op": {0, 0, 0.3}}
	f := func(improved bool, typ tree.GuaranteeType, elapsed float64) {
		t.Helper()
		name := fmt.Sprintf("%s/%v/elapsed=%v", semMode(improved), typ, elapsed)
		first, second := snapshot.Update{}, snapshot.Update{
			Set: []snapshot.Assignment{{Element: "P", Attr: snapshot.AttrStrongGuarantee, Vec: semCPU(20)}},
		}
		if elapsed >= 0 {
			second.Elapsed, second.HasElapsed = clock.DurationFromSeconds(elapsed), true
		}
		res, err := snapshot.Solve(build(improved, typ, 10, []snapshot.Update{first, second}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := res.Updates[1].Elements
		for _, e := range got {
			w := want[e.Name]
			d := &e.Attrs.FairShare
			cpu := resource.CPU
			if math.Abs(d.StrongGuarantee[cpu]-w.strong) > semPartEps || math.Abs(d.IntegralGuarantee[cpu]-w.integral) > semPartEps ||
				math.Abs(d.WeightProportional[cpu]-w.weightProportional) > semPartEps {
				t.Errorf("%s: update 1: %s's fair share %v splits into strong %v, integral %v, weight-proportional %v; want %v, %v, %v",
					name, e.Name, d.Total[cpu], d.StrongGuarantee[cpu], d.IntegralGuarantee[cpu], d.WeightProportional[cpu], w.strong, w.integral, w.weightProportional)
			}
		}
		if elapsed >= 0 {
			return // the volume changed: a solve from scratch starts elsewhere
		}
		scratch, err := snapshot.Solve(build(improved, typ, 20, []snapshot.Update{{}}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, e := range scratch.Updates[0].Elements {
			if d := attrDiff(reflect.ValueOf(got[i].Attrs), reflect.ValueOf(e.Attrs), ""); d != "" {
				t.Errorf("%s: update 1 differs from a solve from scratch in %s%s (\"incremental\" is update 1)", name, e.Name, d)
			}
		}
	}
	for _, improved := range semBothModes {
		for _, typ := range []tree.GuaranteeType{tree.GuaranteeBurst, tree.GuaranteeRelaxed} {
			f(improved, typ, -1) // elapsed_s null
			f(improved, typ, 10)
		}
	}
}
