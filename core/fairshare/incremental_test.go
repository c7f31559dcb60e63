package fairshare_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
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

// TestIncrementalEqualsFull runs seeded random sequences of changes (incChanges)
// on random trees and checks, after every update, that the incremental
// update gives exactly, bit for bit and in every field of every element's
// Attributes, what an update that recomputes everything (Invalidate) gives.
// The two Updaters run in lockstep on the same tree, driven as
// snapshot.Solve drives its updates: the update's config, then its changes,
// then the previous update's time (or none), then Update. Rerun one sequence
// with -run 'TestIncrementalEqualsFull/seed=N'.
func TestIncrementalEqualsFull(t *testing.T) {
	seeds := uint64(150)
	if testing.Short() {
		seeds = 30
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			incCheckSequence(t, seed, 40)
		})
	}
}

// incCheckSequence runs one random sequence of steps updates.
func incCheckSequence(t *testing.T, seed uint64, steps int) {
	t.Helper()
	seq := newIncSequence(seed)
	for step := range steps {
		what, elapsed := seq.step(step)
		seq.log = append(seq.log, fmt.Sprintf("step %d: %s", step, what))
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d, step %d (improved=%v, elapsed %v): %s\nchanges:\n  %s", seed, step, seq.cfg.EnableImprovedFitFactor, elapsed,
				fmt.Sprintf(format, args...), strings.Join(seq.log, "\n  "))
		}
		seq.tr.Walk(func(id tree.ID) {
			if d := attrDiff(reflect.ValueOf(*seq.inc.Attributes(id)), reflect.ValueOf(*seq.full.Attributes(id)), ""); d != "" {
				fail("%s: %s", seq.tr.Name(id), d)
			}
		})
		if a, b := seq.inc.Alerts(), seq.full.Alerts(); !slices.Equal(a, b) {
			fail("alerts differ: incremental %q, full %q", a, b)
		}
	}
}

// newIncSequence draws a random tree and config for seed, with an
// incremental Updater and one that recomputes everything at every step.
func newIncSequence(seed uint64) *incSequence {
	r := rand.New(rand.NewPCG(seed, 7))
	tr, pools, ops := randomTree(r, 4+r.IntN(12), 5+r.IntN(30))
	seq := &incSequence{r: r, tr: tr, pools: pools, ops: ops}
	cfg := fairshare.DefaultConfig()
	cfg.EnableImprovedFitFactor = r.IntN(2) == 0
	cfg.EnableStepFunctionForGangOperations = r.IntN(3) == 0
	cfg.ShouldDistributeFreeVolumeAmongChildren = r.IntN(2) == 0
	if r.IntN(3) == 0 {
		cfg.InferWeightFromGuaranteesShareMultiplier = tree.Some(float64(1 + r.IntN(3)))
	}
	seq.cfg = cfg
	seq.inc, seq.full = fairshare.New(tr, cfg), fairshare.New(tr, cfg)
	// Accumulated volumes as a snapshot restores them (snapshot.Build).
	for _, p := range pools {
		id, _ := tr.Lookup(p)
		if tr.Pool(id).Integral.Type != tree.GuaranteeNone && r.IntN(3) > 0 {
			var v [resource.Count]float64
			v[resource.CPU] = float64(resource.Cores(float64(r.IntN(20000))))
			seq.inc.SetAccumulatedVolume(id, v)
			seq.full.SetAccumulatedVolume(id, v)
		}
	}
	seq.total = resource.Vec{200, resource.Cores(200), 0, 400 << 30, 0}
	return seq
}

// step draws step's change (none for the first update) and how much
// virtual time passed (-1: elapsed_s null), and runs both Updaters.
func (seq *incSequence) step(step int) (what string, elapsed float64) {
	what = "first update"
	if step > 0 {
		what = seq.change(&seq.cfg, &seq.total)
	}
	elapsed = -1
	if step > 0 && seq.r.IntN(4) > 0 {
		elapsed = 0.2 + float64(seq.r.IntN(200))
	}
	for _, u := range []*fairshare.Updater{seq.inc, seq.full} {
		u.SetConfig(seq.cfg)
		if elapsed >= 0 {
			u.SetPreviousUpdate(clock.FromSeconds(seq.now))
		} else {
			u.ForgetPreviousUpdate()
		}
	}
	if elapsed >= 0 {
		seq.now += elapsed
	}
	seq.inc.Update(seq.total, clock.FromSeconds(seq.now))
	seq.full.Invalidate()
	seq.full.Update(seq.total, clock.FromSeconds(seq.now))
	return what, elapsed
}

// incSequence draws the changes of one random sequence.
type incSequence struct {
	r     *rand.Rand
	tr    *tree.Tree
	pools []string // the pools (not the root)
	ops   []string // the operations, removed ones included
	log   []string // every step's changes, for the failure message
	added int

	cfg       fairshare.Config
	inc, full *fairshare.Updater
	total     resource.Vec
	now       float64 // virtual seconds
}

// change applies one to three random changes before an update and describes
// them. The changes go through the calls snapshot.Solve makes for an
// update's "set" (core/snapshot's apply: Tree.SetDemandUsage for demand and
// usage, Tree.SetOperationWeight and Tree.SetOperationLimits for an
// operation's weight and resource_limits, an Apply of tree.SetPool with the
// pool's whole config otherwise), and through the same tree.SetPool for the
// pool attributes no "set" path reaches (integral guarantees, mode,
// promised guarantee); the update's config and total resources are changed
// as an update's "config" and "total_resources" change them.
func (s *incSequence) change(cfg *fairshare.Config, total *resource.Vec) string {
	r, tr := s.r, s.tr
	var done []string
	for range 1 + r.IntN(3) {
		op, opOK := s.pickOp()
		pool := s.pools[r.IntN(len(s.pools))]
		pid, _ := tr.Lookup(pool)
		c := *tr.Pool(pid)
		setPool := func(what string) {
			if _, err := tr.Apply(tree.Mutation{Kind: tree.SetPool, Name: pool, Pool: c}); err != nil {
				done = append(done, fmt.Sprintf("%s %s: rejected (%v)", pool, what, err))
				return
			}
			done = append(done, fmt.Sprintf("%s %s", pool, what))
		}
		cores := func(lo, hi int) tree.PartialVec {
			return tree.PartialVec{V: resource.Vec{resource.CPU: resource.Cores(float64(lo + r.IntN(hi-lo+1)))}, Set: [5]bool{resource.CPU: true}}
		}
		switch k := r.IntN(21); {
		case k < 2 && opOK: // demand
			id, _ := tr.Lookup(op)
			d := randomDemand(r)
			tr.SetDemandUsage(id, d, tr.Usage(id))
			done = append(done, fmt.Sprintf("%s.demand %v", op, d))
		case k < 3 && opOK: // usage
			id, _ := tr.Lookup(op)
			u := randomUsage(r, tr.Demand(id))
			tr.SetDemandUsage(id, tr.Demand(id), u)
			done = append(done, fmt.Sprintf("%s.usage %v", op, u))
		case k < 4 && opOK: // operation weight
			id, _ := tr.Lookup(op)
			w := tree.Some(float64(1 + r.IntN(5)))
			if err := tr.SetOperationWeight(id, w); err != nil {
				panic(err)
			}
			done = append(done, fmt.Sprintf("%s.weight %v", op, w.V))
		case k < 5 && opOK: // operation resource_limits
			id, _ := tr.Lookup(op)
			var l tree.PartialVec
			if r.IntN(3) > 0 {
				l = cores(5, 60)
			}
			if err := tr.SetOperationLimits(id, l); err != nil {
				panic(err)
			}
			done = append(done, fmt.Sprintf("%s.resource_limits %v", op, l))
		case k < 6: // pool weight
			c.Weight = tree.Some(float64(1 + r.IntN(5)))
			setPool(fmt.Sprintf(".weight %v", c.Weight.V))
		case k < 8: // pool resource_limits
			c.ResourceLimits = tree.PartialVec{}
			if r.IntN(4) > 0 {
				c.ResourceLimits = cores(10, 120)
			}
			setPool(fmt.Sprintf(".resource_limits %v", c.ResourceLimits))
		case k < 12: // strong_guarantee_resources
			c.StrongGuarantee = tree.PartialVec{}
			if r.IntN(5) > 0 {
				c.StrongGuarantee = cores(0, 60)
				if r.IntN(3) == 0 {
					c.StrongGuarantee.V[resource.Memory] = int64(r.IntN(100)) << 30
					c.StrongGuarantee.Set[resource.Memory] = true
				}
			}
			setPool(fmt.Sprintf(".strong_guarantee_resources %v", c.StrongGuarantee))
		case k < 15: // integral guarantees: type, burst guarantee, resource flow
			ig := &c.Integral
			switch r.IntN(4) {
			case 0:
				ig.Type = tree.GuaranteeType(r.IntN(3))
			case 1:
				ig.BurstGuarantee = cores(0, 80)
			case 2:
				ig.ResourceFlow = cores(0, 30)
			case 3:
				ig.Type = tree.GuaranteeType(1 + r.IntN(2))
				ig.BurstGuarantee, ig.ResourceFlow = cores(0, 80), cores(0, 30)
			}
			setPool(fmt.Sprintf(".integral_guarantees %v burst %v flow %v", ig.Type, ig.BurstGuarantee, ig.ResourceFlow))
		case k < 16: // pool mode
			c.Mode = 1 - c.Mode
			setPool(fmt.Sprintf(".mode %v", c.Mode))
		case k < 17: // promised guarantee fair share
			c.ComputePromisedGuaranteeFairShare = !c.ComputePromisedGuaranteeFairShare
			setPool(fmt.Sprintf(".compute_promised_guarantee_fair_share %v", c.ComputePromisedGuaranteeFairShare))
		case k < 18: // the fit-factor mode and the gang step function (config)
			if r.IntN(2) == 0 {
				cfg.EnableImprovedFitFactor = !cfg.EnableImprovedFitFactor
				done = append(done, fmt.Sprintf("config improved %v", cfg.EnableImprovedFitFactor))
			} else {
				cfg.EnableStepFunctionForGangOperations = !cfg.EnableStepFunctionForGangOperations
				done = append(done, fmt.Sprintf("config gang step function %v", cfg.EnableStepFunctionForGangOperations))
			}
		case k < 19: // operations come and go
			if opOK && r.IntN(2) == 0 {
				if _, err := tr.Apply(tree.Mutation{Kind: tree.RemoveOperation, Name: op}); err != nil {
					panic(err)
				}
				done = append(done, fmt.Sprintf("remove %s", op))
				break
			}
			name := fmt.Sprintf("new%d", s.added)
			s.added++
			d := randomDemand(r)
			if _, err := tr.Apply(tree.Mutation{Kind: tree.AddOperation, Name: name, Parent: pool, Demand: d, Usage: randomUsage(r, d)}); err != nil {
				panic(err)
			}
			s.ops = append(s.ops, name)
			done = append(done, fmt.Sprintf("add %s to %s", name, pool))
		case k < 20: // node limits: tag-filter resources, best allocation share
			var l tree.NodeLimits
			if r.IntN(3) > 0 {
				l.TagFilter = tree.Full(resource.Vec{100, resource.Cores(float64(20 + r.IntN(180))), 0, int64(50+r.IntN(350)) << 30, 0})
			}
			name, id := pool, pid
			if opOK && r.IntN(2) == 0 {
				name = op
				id, _ = tr.Lookup(op)
				if r.IntN(2) == 0 {
					l.BestAllocationShare, l.HasBestAllocationShare = resource.Share{1, 1, 1, r.Float64(), 1}, true
				}
			}
			tr.SetNodeLimits(id, l)
			done = append(done, fmt.Sprintf("%s node limits %+v", name, l))
		default: // total resources
			total[resource.CPU] = resource.Cores(float64(100 + 50*r.IntN(4)))
			done = append(done, fmt.Sprintf("total %v", *total))
		}
	}
	return strings.Join(done, "; ")
}

// pickOp returns a random operation that still exists.
func (s *incSequence) pickOp() (string, bool) {
	for range 4 {
		op := s.ops[s.r.IntN(len(s.ops))]
		if _, ok := s.tr.Lookup(op); ok {
			return op, true
		}
	}
	return "", false
}
