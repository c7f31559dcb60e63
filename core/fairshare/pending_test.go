package fairshare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
)

// TestPendingBySuggestion checks pendingBySuggestion against the general
// construction (operationFSBFF, then bySuggestion) bit for bit, on random
// shares and on the edges: dominant shares near 0 and 1, ties between
// resources, zero components, limits at the demand. Where it declines, the
// general construction is the one used anyway.
func TestPendingBySuggestion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	draw := func() float64 {
		switch r.IntN(8) {
		case 0:
			return 0
		case 1:
			return math.Nextafter(1, 0)
		case 2:
			return 1
		case 3:
			return math.SmallestNonzeroFloat64 * float64(1+r.IntN(4))
		case 4:
			return 0.25
		}
		return r.Float64() * math.Pow(10, -float64(r.IntN(12)))
	}
	var u Updater
	var special, general, opFF plf.Vec
	taken := 0
	for i := range 200000 {
		var in opInput
		for k := range resource.Count {
			in.demandShare[k] = draw()
			in.limitsShare[k] = 1
			if r.IntN(10) == 0 {
				in.limitsShare[k] = draw()
			}
			if r.IntN(10) == 0 {
				in.limitsShare[k] = in.demandShare[k]
			}
		}
		if r.IntN(4) == 0 {
			in.usageShare[r.IntN(resource.Count)] = draw()
		}
		in.gang = r.IntN(4) == 0
		u.cfg.EnableStepFunctionForGangOperations = r.IntN(2) == 0
		if !u.pendingBySuggestion(&in, &special) {
			continue
		}
		taken++
		u.operationFSBFF(&in, &opFF)
		bySuggestion(&opFF, resource.Share{}, in.limitsShare, &general, nil)
		if len(special.X) != len(general.X) {
			t.Fatalf("case %d %+v: %d points, want %d: %v, want %v", i, in, len(special.X), len(general.X), special, general)
		}
		for j := range special.X {
			if math.Float64bits(special.X[j]) != math.Float64bits(general.X[j]) {
				t.Fatalf("case %d %+v: point %d at %v, want %v", i, in, j, special.X[j], general.X[j])
			}
			for k := range resource.Count {
				if math.Float64bits(special.V[j][k]) != math.Float64bits(general.V[j][k]) {
					t.Fatalf("case %d %+v: point %d value %v, want %v", i, in, j, special.V[j], general.V[j])
				}
			}
		}
	}
	if taken < 10000 {
		t.Fatalf("only %d cases took the special construction", taken)
	}
}
