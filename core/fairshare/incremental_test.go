package fairshare_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// randomTree builds a small random tree: pools up to depth 4, some fifo,
// some with guarantees, limits and integral guarantees, and operations.
func randomTree(r *rand.Rand, pools, ops int) (*tree.Tree, []string, []string) {
	t := tree.New(tree.PoolConfig{})
	var poolNames, fifo, opNames []string
	depth := map[string]int{"": 0}
	for i := range pools {
		name := fmt.Sprintf("p%d", i)
		parent := ""
		var cands []string
		for _, p := range poolNames {
			if depth[p] < 3 && !contains(fifo, p) {
				cands = append(cands, p)
			}
		}
		if len(cands) > 0 && r.IntN(3) > 0 {
			parent = cands[r.IntN(len(cands))]
		}
		var c tree.PoolConfig
		if r.IntN(3) == 0 {
			c.Weight = tree.Some(float64(1 + r.IntN(4)))
		}
		if r.IntN(4) == 0 {
			c.StrongGuarantee = tree.PartialVec{V: resource.Vec{1: resource.Cores(float64(5 + r.IntN(20)))}, Set: [5]bool{1: true}}
		}
		if r.IntN(5) == 0 {
			c.ResourceLimits = tree.PartialVec{V: resource.Vec{1: resource.Cores(float64(10 + r.IntN(40)))}, Set: [5]bool{1: true}}
		}
		switch r.IntN(8) {
		case 0:
			c.Integral.Type = tree.GuaranteeBurst
			c.Integral.ResourceFlow = tree.PartialVec{V: resource.Vec{1: resource.Cores(5)}, Set: [5]bool{1: true}}
			c.Integral.BurstGuarantee = tree.PartialVec{V: resource.Vec{1: resource.Cores(20)}, Set: [5]bool{1: true}}
		case 1:
			c.Integral.Type = tree.GuaranteeRelaxed
			c.Integral.ResourceFlow = tree.PartialVec{V: resource.Vec{1: resource.Cores(5)}, Set: [5]bool{1: true}}
		case 2:
			c.Mode = tree.ModeFIFO
			fifo = append(fifo, name)
		}
		if _, err := t.Apply(tree.Mutation{Kind: tree.AddPool, Name: name, Parent: parent, Pool: c}); err != nil {
			panic(err)
		}
		poolNames = append(poolNames, name)
		depth[name] = depth[parent] + 1
	}
	for i := range ops {
		name := fmt.Sprintf("op%d", i)
		parent := ""
		if len(poolNames) > 0 {
			parent = poolNames[r.IntN(len(poolNames))]
		}
		d := randomDemand(r)
		if _, err := t.Apply(tree.Mutation{Kind: tree.AddOperation, Name: name, Parent: parent,
			Op: tree.OperationSpec{StartTime: clock.FromSeconds(float64(i)), IsGang: r.IntN(10) == 0}, Demand: d, Usage: randomUsage(r, d)}); err != nil {
			panic(err)
		}
		opNames = append(opNames, name)
	}
	return t, poolNames, opNames
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func randomDemand(r *rand.Rand) resource.Vec {
	jobs := int64(1 + r.IntN(30))
	return resource.Vec{jobs, jobs * resource.Cores(float64(1+r.IntN(4))), 0, jobs << (30 + r.IntN(3)), 0}
}

func randomUsage(r *rand.Rand, d resource.Vec) resource.Vec {
	if r.IntN(2) == 0 {
		return resource.Vec{}
	}
	f := r.Float64()
	return d.Mul(f).Min(d)
}

// TestIncrementalEqualsFull runs seeded random sequences of changes and
// checks that the incremental update gives exactly the attributes a full
// update gives.
func TestIncrementalEqualsFull(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		for _, improved := range []bool{true, false} {
			t.Run(fmt.Sprintf("seed=%d/improved=%v", seed, improved), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 7))
				tr, pools, ops := randomTree(r, 8+r.IntN(12), 10+r.IntN(30))
				cfg := fairshare.DefaultConfig()
				cfg.EnableImprovedFitFactor = improved
				cfg.EnableStepFunctionForGangOperations = seed%3 == 0
				inc, full := fairshare.New(tr, cfg), fairshare.New(tr, cfg)
				total := resource.Vec{200, resource.Cores(200), 0, 400 << 30, 0}
				now := 0.0
				for step := range 40 {
					id, _ := tr.Lookup(ops[r.IntN(len(ops))])
					switch r.IntN(6) {
					case 0, 1:
						d := randomDemand(r)
						tr.SetDemandUsage(id, d, randomUsage(r, d))
					case 2:
						if err := tr.SetOperationWeight(id, tree.Some(float64(1+r.IntN(5)))); err != nil {
							t.Fatal(err)
						}
					case 3:
						p := pools[r.IntN(len(pools))]
						pid, _ := tr.Lookup(p)
						c := *tr.Pool(pid)
						c.Weight = tree.Some(float64(1 + r.IntN(5)))
						if _, err := tr.Apply(tree.Mutation{Kind: tree.SetPool, Name: p, Pool: c}); err != nil {
							t.Fatal(err)
						}
					case 4:
						name := fmt.Sprintf("new%d", step)
						d := randomDemand(r)
						if _, err := tr.Apply(tree.Mutation{Kind: tree.AddOperation, Name: name, Parent: pools[r.IntN(len(pools))], Demand: d}); err != nil {
							t.Fatal(err)
						}
						ops = append(ops, name)
					case 5:
						// no change: only time passes
					}
					now += 0.2 + float64(r.IntN(100))
					inc.Update(total, now)
					full.Invalidate()
					full.Update(total, now)
					tr.Walk(func(id tree.ID) {
						a, b := inc.Attributes(id), full.Attributes(id)
						if *a != *b {
							t.Fatalf("step %d: %s differs:\nincremental %+v\nfull        %+v", step, tr.Name(id), a.FairShare, b.FairShare)
						}
					})
				}
			})
		}
	}
}
