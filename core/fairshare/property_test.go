package fairshare_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Seeded property tests of the fair-share update (docs/semantics.md#fair-share): random
// pool trees, checked after Update against the invariants of Vector HDRF and
// the DRF properties (Pareto efficiency, sharing incentive, strategy-
// proofness). Every failure names its seed; rerun one seed with
// -run 'TestRandomTreeInvariants/seed=N'.

const (
	propEps    = 1e-6 // slack for ≤ / ≥ comparisons of shares
	propSatEps = 1e-5 // "saturated" and "at its limit"
)

// propSeeds is the fixed list of seeds; each names one random tree.
func propSeeds(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(1000 + 7919*i)
	}
	return s
}

func propRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// propOptions selects the features of a random tree.
type propOptions struct {
	gangs      bool // some operations are gangs (step function on)
	limits     bool // pool and operation resource limits
	guarantees bool // strong guarantees
	fifo       bool // FIFO pools
	// proportional makes every demand a multiple of (cpu, memory) of the
	// cluster, guarantees cpu-only and nested feasibly, and usage zero: then
	// every share is proportional to the cluster and guarantees can be
	// checked component-wise.
	proportional bool
}

func (o propOptions) String() string {
	return fmt.Sprintf("gangs=%v limits=%v guarantees=%v fifo=%v proportional=%v", o.gangs, o.limits, o.guarantees, o.fifo, o.proportional)
}

type propTree struct {
	tr    *tree.Tree
	total resource.Vec
	opts  propOptions
	ms    []tree.Mutation // the mutations that built it, for reproduction
}

func propTotal(rng *rand.Rand, proportional bool) resource.Vec {
	var v resource.Vec
	v[resource.CPU] = resource.Cores(float64(50 + rng.IntN(950)))
	v[resource.Memory] = int64(100+rng.IntN(3900)) * semGiB
	if !proportional {
		if rng.IntN(2) == 0 {
			v[resource.UserSlots] = int64(100 + rng.IntN(9900))
		}
		if rng.IntN(3) == 0 {
			v[resource.GPU] = int64(8 + rng.IntN(56))
		}
		if rng.IntN(4) == 0 {
			v[resource.Network] = int64(1000 + rng.IntN(99000))
		}
	}
	return v
}

func propPartial(v resource.Vec, set ...resource.Kind) tree.PartialVec {
	var p tree.PartialVec
	for _, k := range set {
		p.V[k], p.Set[k] = v[k], true
	}
	return p
}

// genPropTree builds a tree of 5–40 elements, depth ≤ 4 (pools at depth ≤ 3).
func genPropTree(t *testing.T, rng *rand.Rand, o propOptions) *propTree {
	t.Helper()
	total := propTotal(rng, o.proportional)
	n := 5 + rng.IntN(36)
	type poolInfo struct {
		name   string
		depth  int
		fifo   bool
		budget float64 // proportional mode: guarantee (fraction of cpu) left for children; <0 = none
		guar   float64
	}
	pools := []poolInfo{{name: "", depth: 0, budget: 1}}
	var ms []tree.Mutation
	weight := func() tree.OptFloat {
		if rng.IntN(2) == 0 {
			return tree.Some(0.25 + 3.75*rng.Float64())
		}
		return tree.OptFloat{}
	}
	fracOf := func(k resource.Kind, f float64) int64 { return int64(f * float64(total[k])) }
	for i := 1; i < n; i++ {
		pi := rng.IntN(len(pools))
		p := &pools[pi]
		if !p.fifo && p.depth < 3 && rng.IntN(100) < 35 {
			name := fmt.Sprintf("p%d", i)
			c := tree.PoolConfig{Weight: weight()}
			info := poolInfo{name: name, depth: p.depth + 1, budget: -1}
			if o.fifo && rng.IntN(100) < 20 {
				c.Mode = tree.ModeFIFO
				info.fifo = true
			}
			if o.guarantees && (rng.IntN(100) < 40 || o.proportional && rng.IntN(100) < 50) {
				if o.proportional {
					if p.budget > 0 {
						g := p.budget * 0.6 * rng.Float64()
						p.budget -= g
						info.budget, info.guar = g, g
						c.StrongGuarantee = propPartial(resource.Vec{0, fracOf(resource.CPU, g)}, resource.CPU)
					}
				} else {
					g := resource.Vec{0, fracOf(resource.CPU, 0.4*rng.Float64()), 0, fracOf(resource.Memory, 0.4*rng.Float64()), 0}
					if rng.IntN(2) == 0 {
						c.StrongGuarantee = propPartial(g, resource.CPU)
					} else {
						c.StrongGuarantee = propPartial(g, resource.CPU, resource.Memory)
					}
				}
			}
			if o.limits && rng.IntN(100) < 25 {
				l := resource.Vec{0, fracOf(resource.CPU, 0.05+0.75*rng.Float64()), 0, fracOf(resource.Memory, 0.05+0.75*rng.Float64()), 0}
				if rng.IntN(2) == 0 {
					c.ResourceLimits = propPartial(l, resource.CPU)
				} else {
					c.ResourceLimits = propPartial(l, resource.CPU, resource.Memory)
				}
			}
			ms = append(ms, semPool(name, p.name, c))
			pools = append(pools, info)
			continue
		}
		name := fmt.Sprintf("o%d", i)
		spec := tree.OperationSpec{Weight: weight(), StartTime: clock.FromSeconds(float64(rng.IntN(100)))}
		if o.gangs && rng.IntN(100) < 25 {
			spec.IsGang = true
		}
		if o.limits && rng.IntN(100) < 10 {
			spec.ResourceLimits = propPartial(resource.Vec{0, fracOf(resource.CPU, 0.05+0.5*rng.Float64())}, resource.CPU)
		}
		var d resource.Vec
		switch {
		case rng.IntN(100) < 5:
			// no demand at all
		case o.proportional:
			k := 0.7 * rng.Float64()
			d[resource.CPU], d[resource.Memory] = fracOf(resource.CPU, k), fracOf(resource.Memory, k)
		default:
			for r := range resource.Count {
				if total[r] > 0 && rng.IntN(100) < 85 {
					x := rng.Float64()
					d[r] = fracOf(resource.Kind(r), 0.9*x*x)
				}
			}
		}
		ms = append(ms, semOp(name, p.name, d, spec))
	}
	// Usage ≤ demand, and the sum of usages fits the cluster.
	if !o.proportional {
		var sum resource.Vec
		for i := range ms {
			m := &ms[i]
			if m.Kind != tree.AddOperation || rng.IntN(2) == 0 {
				continue
			}
			for r := range resource.Count {
				m.Usage[r] = int64(float64(m.Demand[r]) * rng.Float64())
			}
			sum = sum.Add(m.Usage)
		}
		for r := range resource.Count {
			if sum[r] > total[r] {
				k := float64(total[r]) / float64(sum[r])
				for i := range ms {
					ms[i].Usage[r] = int64(float64(ms[i].Usage[r]) * k)
				}
			}
		}
	}
	tr := tree.New(tree.PoolConfig{})
	if i, err := tr.Apply(ms...); err != nil {
		t.Fatalf("cannot build random tree: mutation %d %+v: %v", i, ms[i], err)
	}
	return &propTree{tr: tr, total: total, opts: o, ms: ms}
}

// describe prints the tree for a failure report (cpu in cores).
func (rt *propTree) describe() string {
	opt := func(o tree.OptFloat) string {
		if !o.Set {
			return "-"
		}
		return fmt.Sprint(o.V)
	}
	pv := func(p tree.PartialVec) string {
		if p.IsEmpty() {
			return "-"
		}
		s := "{"
		for k, set := range p.Set {
			if set {
				s += fmt.Sprintf(" %v=%v", resource.Kind(k), p.V[k])
			}
		}
		return s + " }"
	}
	s := fmt.Sprintf("total %v (cpu in cores)\n", rt.total)
	for _, m := range rt.ms {
		switch m.Kind {
		case tree.AddPool:
			s += fmt.Sprintf("  pool %s in %q: mode=%v weight=%s strong=%s limits=%s\n", m.Name, m.Parent, m.Pool.Mode, opt(m.Pool.Weight), pv(m.Pool.StrongGuarantee), pv(m.Pool.ResourceLimits))
		case tree.AddOperation:
			s += fmt.Sprintf("  op %s in %q: weight=%s gang=%v start=%v limits=%s demand=%v usage=%v\n", m.Name, m.Parent, opt(m.Op.Weight), m.Op.IsGang, m.Op.StartTime, pv(m.Op.ResourceLimits), m.Demand, m.Usage)
		}
	}
	return s
}

func (rt *propTree) hasLimits() bool {
	for _, m := range rt.ms {
		if !m.Pool.ResourceLimits.IsEmpty() || !m.Op.ResourceLimits.IsEmpty() {
			return true
		}
	}
	return false
}

func (rt *propTree) hasGangs() bool {
	for _, m := range rt.ms {
		if m.Kind == tree.AddOperation && m.Op.IsGang {
			return true
		}
	}
	return false
}

func propArgmax(s resource.Share) resource.Kind {
	best := resource.Kind(0)
	for r := range resource.Count {
		if s[r] > s[best] {
			best = resource.Kind(r)
		}
	}
	return best
}

// propStats counts what the checks looked at.
type propStats struct {
	ops, paretoGaps, jumpBlocked, guarantees, componentWise int
}

// propCheckInvariants checks every property of one update and reports
// violations with the context prefix.
func propCheckInvariants(t *testing.T, ctx string, rt *propTree, u *fairshare.Updater, st *propStats) {
	t.Helper()
	tr := rt.tr
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s", ctx, fmt.Sprintf(format, args...))
	}
	root := u.Attributes(tree.Root).FairShare.Total
	for r := range resource.Count {
		if root[r] > 1+propEps {
			fail("root fair share %v exceeds 1 in %v", root, resource.Kind(r))
		}
	}
	tr.Walk(func(id tree.ID) {
		a := u.Attributes(id)
		fs := a.FairShare.Total
		name := tr.Name(id)
		for r := range resource.Count {
			if math.IsNaN(fs[r]) || fs[r] < -propEps {
				fail("%s: fair share %v is negative or NaN", name, fs)
				return
			}
			if fs[r] > a.DemandShare[r]+propEps {
				fail("%s: fair share %v exceeds demand share %v in %v", name, fs, a.DemandShare, resource.Kind(r))
			}
		}
		// Own and every ancestor's limits.
		for e := id; e != tree.None; e = tr.Parent(e) {
			ls := u.Attributes(e).LimitsShare
			for r := range resource.Count {
				if fs[r] > ls[r]+propEps {
					fail("%s: fair share %v exceeds limits share %v of %s in %v", name, fs, ls, tr.Name(e), resource.Kind(r))
				}
			}
		}
		if !tr.IsOperation(id) {
			var sum resource.Share
			for c := tr.FirstChild(id); c != tree.None; c = tr.NextSibling(c) {
				sum = sum.Add(u.Attributes(c).FairShare.Total)
			}
			if !sum.Near(fs, propEps) {
				fail("%s: fair share %v != sum of children's %v", name, fs, sum)
			}
		}
	})
	tr.Walk(func(id tree.ID) {
		if tr.IsOperation(id) {
			st.ops++
		}
	})
	if !rt.hasGangs() {
		propCheckPareto(t, ctx, rt, u, st)
		g, c := propCheckGuarantees(t, ctx, rt, u)
		st.guarantees += g
		st.componentWise += c
	}
}

// propCheckPareto: an operation below its demand in its dominant resource
// must be blocked. DRF's notion of blocked is a saturated resource the
// operation needs, or a limit on its path in a resource it needs. Vector
// HDRF (docs/semantics.md#fair-share) is weaker in two ways, both counted, not errors:
//   - a pool has one scalar fit factor, so once any resource saturates at
//     the root, or any element on the path reaches a limit in any resource,
//     no descendant grows, even one that does not need that resource
//     (TestScalarFitFactorParetoGap);
//   - functions are left-continuous (docs/semantics.md#fair-share): an element whose fair
//     share by suggestion jumps where its parent stops keeps the jump's left
//     value, and resources may stay idle with nothing saturated, even
//     without gangs (TestDiscontinuityLeavesResourcesIdle; seed 33157853
//     with propSeeds(6000)).
//
// What remains an error: an operation below demand with no saturated
// resource, no limit reached on its path and no element sitting at a jump.
func propCheckPareto(t *testing.T, ctx string, rt *propTree, u *fairshare.Updater, st *propStats) {
	t.Helper()
	tr := rt.tr
	root := u.Attributes(tree.Root).FairShare.Total
	atJump := -1 // unknown yet
	tr.Walk(func(id tree.ID) {
		if !tr.IsOperation(id) {
			return
		}
		a := u.Attributes(id)
		dom := propArgmax(a.DemandShare)
		if a.FairShare.Total[dom] >= a.DemandShare[dom]-propEps {
			return
		}
		strict, weak := false, false
		for r := range resource.Count {
			if root[r] >= 1-propSatEps {
				weak = true
				strict = strict || a.DemandShare[r] > 0
			}
		}
		for e := id; e != tree.None; e = tr.Parent(e) {
			ea := u.Attributes(e)
			for r := range resource.Count {
				if ea.FairShare.Total[r] >= ea.LimitsShare[r]-propSatEps {
					weak = true
					strict = strict || a.DemandShare[r] > 0
				}
			}
		}
		if atJump < 0 {
			atJump = 0
			if propSomeElementAtJump(tr, u) {
				atJump = 1
			}
		}
		switch {
		case strict:
		case weak:
			st.paretoGaps++
		case atJump == 1:
			st.jumpBlocked++
		default:
			t.Errorf("%s: Pareto: operation %s gets %v below its demand %v (dominant %v) although no resource is saturated (root %v), no element on its path is at a limit and no element sits at a jump",
				ctx, tr.Name(id), a.FairShare.Total, a.DemandShare, dom, root)
		}
	})
}

// propSomeElementAtJump reports whether some element's fair share is the
// left value of a jump of its fair share by suggestion.
func propSomeElementAtJump(tr *tree.Tree, u *fairshare.Updater) bool {
	found := false
	tr.Walk(func(id tree.ID) {
		if found || id == tree.Root {
			return
		}
		f := u.FairShareBySuggestion(id)
		fs := u.Attributes(id).FairShare.Total
		for i := 0; i+1 < f.Len(); i++ {
			if f.X[i] == f.X[i+1] && !f.V[i].Near(f.V[i+1], 1e-9) && f.V[i].Near(fs, 1e-9) {
				found = true
				return
			}
		}
	})
	return found
}

// propCheckGuarantees: with feasible guarantees and no limits, a pool whose
// demand dominates its (adjusted) strong guarantee share g gets g: in every
// resource when all shapes are proportional. With arbitrary shapes a vector
// guarantee is honoured only in the resource that binds at suggestion 0
// (the pool grows along its demand shape until one resource reaches its
// guarantee), so the check is that some needed resource reaches g, or the
// pool is satisfied. Component-wise, the general case fails legitimately:
// e.g. seed 9646342 with propSeeds(3000), where a pool's implicit memory
// guarantee is scaled to 0 (its parent's memory guarantee is taken by a
// sibling's explicit one) and its cpu guarantee of 0.137 then buys nothing.
func propCheckGuarantees(t *testing.T, ctx string, rt *propTree, u *fairshare.Updater) (checked, componentWise int) {
	t.Helper()
	if rt.hasLimits() {
		return 0, 0
	}
	tr := rt.tr
	if !resource.Ones().Add(resource.EpsilonShare()).Dominates(u.Attributes(tree.Root).StrongGuaranteeShare) {
		return // infeasible: the sum of guarantees exceeds the cluster
	}
	tr.Walk(func(id tree.ID) {
		if id == tree.Root || tr.IsOperation(id) {
			return
		}
		a := u.Attributes(id)
		g, d, fs := a.StrongGuaranteeShare, a.DemandShare, a.FairShare.Total
		if g.MaxComponent() <= resource.Epsilon || !d.Add(resource.EpsilonShare()).Dominates(g) {
			return
		}
		checked++
		if rt.opts.proportional {
			componentWise++
			if !fs.Add(resource.Uniform(propEps)).Dominates(g) {
				t.Errorf("%s: guarantee: pool %s gets %v below its strong guarantee share %v (demand %v)", ctx, tr.Name(id), fs, g, d)
			}
			return
		}
		if fs.Add(resource.Uniform(propEps)).Dominates(d) {
			return
		}
		// The resource that binds at suggestion 0 may be one the pool needs
		// but has no guarantee in (inference can scale a resource's implicit
		// guarantee to 0, docs/semantics.md#strong-guarantees); then that zero is what is honoured.
		for r := range resource.Count {
			if d[r] > 0 && fs[r] >= g[r]-propEps {
				return
			}
		}
		t.Errorf("%s: guarantee: pool %s gets %v, below its strong guarantee share %v in every resource it needs (demand %v)", ctx, tr.Name(id), fs, g, d)
	})
	return checked, componentWise
}

func propOptionsForSeed(seed uint64, i int) propOptions {
	rng := propRand(seed ^ 0xabcdef)
	o := propOptions{
		gangs:      i%5 == 4,
		limits:     i%3 != 0,
		guarantees: rng.IntN(4) != 0,
		fifo:       rng.IntN(3) != 0,
	}
	if i%4 == 1 {
		o = propOptions{guarantees: true, fifo: o.fifo, proportional: true}
	}
	return o
}

func TestRandomTreeInvariants(t *testing.T) {
	var st propStats
	defer func() {
		t.Logf("%d pool guarantees checked (%d component-wise); of %d operation fair shares, %d were held below demand only by a resource or limit they do not need (scalar fit factor) and %d only at a discontinuity (left-continuity)",
			st.guarantees, st.componentWise, st.ops, st.paretoGaps, st.jumpBlocked)
	}()
	for i, seed := range propSeeds(60) {
		o := propOptionsForSeed(seed, i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d: %v", seed, o)
			rt := genPropTree(t, propRand(seed), o)
			for _, improved := range semBothModes {
				cfg := semConfig(improved)
				cfg.EnableStepFunctionForGangOperations = o.gangs
				u := fairshare.New(rt.tr, cfg)
				u.Update(rt.total, 0)
				ctx := fmt.Sprintf("seed %d %s (%v)", seed, semMode(improved), o)
				before := t.Failed()
				propCheckInvariants(t, ctx, rt, u, &st)
				// A second update of the unchanged tree gives the same
				// attributes bit for bit: no state leaks between updates.
				first := map[tree.ID]fairshare.Attributes{}
				rt.tr.Walk(func(id tree.ID) { first[id] = *u.Attributes(id) })
				u.Update(rt.total, 0)
				rt.tr.Walk(func(id tree.ID) {
					if got := *u.Attributes(id); !reflect.DeepEqual(got, first[id]) {
						t.Errorf("%s: second update changed %s:\nfirst  %+v\nsecond %+v", ctx, rt.tr.Name(id), first[id], got)
					}
				})
				if !before && t.Failed() {
					t.Logf("tree of seed %d:\n%s", seed, rt.describe())
				}
			}
		})
	}
}

// propFlatOps builds n operations directly under the root with equal weights.
func propFlatOps(t *testing.T, demands []resource.Vec) *tree.Tree {
	t.Helper()
	ms := make([]tree.Mutation, len(demands))
	for i, d := range demands {
		ms[i] = semOp(fmt.Sprintf("op%d", i), "", d, tree.OperationSpec{})
	}
	return semBuild(t, ms...)
}

func propDemand(rng *rand.Rand, total resource.Vec) resource.Vec {
	var d resource.Vec
	for r := range resource.Count {
		if total[r] > 0 && rng.IntN(100) < 80 {
			x := rng.Float64()
			d[r] = int64(float64(total[r]) * 0.8 * x * x)
		}
	}
	return d
}

func TestDRFSharingIncentive(t *testing.T) {
	// n operations with equal weights, no guarantees or limits: each gets at
	// least min(demand, 1/n) in its dominant resource.
	for _, seed := range propSeeds(50) {
		rng := propRand(seed)
		total := propTotal(rng, false)
		n := 2 + rng.IntN(11)
		demands := make([]resource.Vec, n)
		for i := range demands {
			demands[i] = propDemand(rng, total)
		}
		for _, improved := range semBothModes {
			tr := propFlatOps(t, demands)
			u := fairshare.New(tr, semConfig(improved))
			u.Update(total, 0)
			for i := range n {
				id, _ := tr.Lookup(fmt.Sprintf("op%d", i))
				a := u.Attributes(id)
				dom := propArgmax(a.DemandShare)
				want := min(a.DemandShare[dom], 1/float64(n))
				if got := a.FairShare.Total[dom]; got < want-propEps {
					t.Errorf("seed %d %s: op%d of %d gets %v in its dominant resource %v, want ≥ min(demand %v, 1/n) = %v (total %v, demands %v)",
						seed, semMode(improved), i, n, got, dom, a.DemandShare[dom], want, total, demands)
				}
			}
		}
	}
}

func TestDRFStrategyProof(t *testing.T) {
	// A flat pool of operations with equal weights. Operation 0 runs k true
	// jobs of size j. Declaring an inflated demand (some components scaled
	// up) never lets more of its true jobs fit into its fair share than the
	// truthful declaration.
	trueJobs := func(fs resource.Share, job resource.Vec, k int64, total resource.Vec) float64 {
		n := float64(k)
		for r := range resource.Count {
			if job[r] > 0 && total[r] > 0 {
				n = min(n, fs[r]*float64(total[r])/float64(job[r]))
			}
		}
		return n
	}
	for _, seed := range propSeeds(50) {
		rng := propRand(seed)
		total := propTotal(rng, false)
		n := 2 + rng.IntN(7)
		demands := make([]resource.Vec, n)
		var job resource.Vec
		for r := range resource.Count {
			if total[r] > 0 && rng.IntN(100) < 80 {
				job[r] = max(1, int64(float64(total[r])*0.05*rng.Float64()))
			}
		}
		if job.IsZero() {
			job[resource.CPU] = resource.Cores(1)
		}
		k := int64(1 + rng.IntN(60))
		demands[0] = job.Scale(k)
		for i := 1; i < n; i++ {
			demands[i] = propDemand(rng, total)
		}
		for _, improved := range semBothModes {
			solve := func(d0 resource.Vec) resource.Share {
				ds := append([]resource.Vec(nil), demands...)
				ds[0] = d0
				tr := propFlatOps(t, ds)
				u := fairshare.New(tr, semConfig(improved))
				u.Update(total, 0)
				return u.Attributes(tr.FirstChild(tree.Root)).FairShare.Total
			}
			truth := trueJobs(solve(demands[0]), job, k, total)
			for range 8 {
				lie := demands[0]
				scaled := false
				for r := range resource.Count {
					if lie[r] > 0 && rng.IntN(2) == 0 {
						lie[r] = int64(float64(lie[r]) * (1 + 3*rng.Float64()))
						scaled = true
					}
				}
				if !scaled {
					lie[resource.CPU] = lie[resource.CPU]*2 + 1
				}
				got := trueJobs(solve(lie), job, k, total)
				if got > truth+propEps || math.Floor(got+1e-9) > math.Floor(truth+1e-9) {
					t.Errorf("seed %d %s: declaring %v instead of %v (job %v × %d) fits %.9g true jobs, truthful %.9g (total %v, others %v)",
						seed, semMode(improved), lie, demands[0], job, k, got, truth, total, demands[1:])
				}
			}
		}
	}
}
