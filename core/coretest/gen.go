// Package coretest holds deterministic helpers shared by core tests, the
// benchmarks under bench/ and the simulator: generators of realistic pool
// trees and workloads, the golden-script format, and Node, the one model of
// a simulated node agent. Everything is seeded and reproducible; nothing
// reads a clock or global randomness.
package coretest

import (
	"math"
	"slices"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/tree"
)

// The shape of the generated cluster (see GenTree).
const (
	// NodeCores, NodeMemory and NodeSlots are one node's resources.
	NodeCores  = 32
	NodeMemory = 128 << 30
	NodeSlots  = 32
	// GPUNodeEvery is how often a node carries GPUNodeGPUs gpus (every 10th).
	GPUNodeEvery = 10
	GPUNodeGPUs  = 8
	// OpsPerNode is the number of operations GenTree generates per node: the
	// cluster of GenTree(seed, pools, ops) has max(1, ops/OpsPerNode) nodes.
	OpsPerNode = 10
	// MaxPoolDepth is the deepest pool GenTree creates; the root's children
	// are at depth 1.
	MaxPoolDepth = 5
)

const gib = 1 << 30

// ClusterTotal returns the total resources of a cluster of n nodes of
// NodeCores cores, NodeMemory bytes and NodeSlots user slots, every
// GPUNodeEvery-th of which has GPUNodeGPUs gpus. Network is zero.
func ClusterTotal(n int) resource.Vec {
	var v resource.Vec
	v[resource.UserSlots] = int64(n) * NodeSlots
	v[resource.CPU] = int64(n) * resource.Cores(NodeCores)
	v[resource.GPU] = int64(n/GPUNodeEvery) * GPUNodeGPUs
	v[resource.Memory] = int64(n) * NodeMemory
	return v
}

// genPool is a pool while GenTree decides its configuration.
type genPool struct {
	parent     int32 // index into the pools slice; -1 is the root
	depth      int8
	childPools int32
	guaranteed bool
	fifo       bool
	integral   tree.GuaranteeType
	integralIn bool // an integral pool is this one or below it
	cfg        tree.PoolConfig
}

// genOp is an operation while GenTree decides its demand and usage.
type genOp struct {
	pool int32
	job  resource.Vec // one job's resources
	n    int64        // jobs in the demand
	k    int64        // running jobs: usage = k × job
	spec tree.OperationSpec
}

// GenTree builds the "realistic random tree" of bench/README.md#workload: exactly pools
// pools under the root and exactly ops operations, and returns the tree with
// the total resources of its cluster. Equal arguments give equal trees
// (names, configurations, demands and usages; IDs too, since elements are
// added in a fixed order). The tree's dirty set is cleared before returning.
//
// The distribution, with every draw from one rng.New(seed) stream:
//
//   - Cluster: max(1, ops/OpsPerNode) nodes (10,000 nodes for 100,000
//     operations) of ClusterTotal's shape: 32 cores, 128 GiB, 32 user slots,
//     8 gpus on every 10th node; network 0.
//   - Shape: max(min(pools, 3), pools/50) top-level pools (20 for 1,000
//     pools); every further pool picks its parent uniformly among the pools
//     created so far that may still take child pools (not fifo, depth < 5),
//     a random recursive tree whose older pools gather more children
//     (heavy-tailed fan-out). Pools nest at most MaxPoolDepth = 5 deep, so
//     the longest root-to-operation path has 6 edges; depths 1–5 hold about
//     2/9/20/32/37% of the pools (seed 1, 1,000 or 10,000 pools).
//   - Strong guarantees: exactly round(20%) of the pools, closed upwards (a
//     guaranteed pool's parent is the root or guaranteed), chosen at random.
//     The root hands 60% of the cluster, and every guaranteed pool its own
//     guarantee, to its guaranteed children in proportion to log-uniform
//     weights in [1/4, 4], scaled by a per-parent fill factor uniform in
//     [0.5, 0.95) (feasible) or, for 10% of parents, in [1.05, 1.4)
//     (overcommitted: the children ask for more than the parent has). cpu
//     is always specified; memory on 60%, gpu on 30% of those with a gpu
//     budget, user_slots on 10%; unspecified components are inferred (spec
//     docs/semantics.md#strong-guarantees).
//   - FIFO pools: exactly round(10%) of the pools, chosen among the pools
//     without child pools (fifo pools hold only operations); a quarter sort
//     by [weight, pending_job_count], the rest by the default order.
//   - Integral pools: exactly round(5%) of the pools (fewer if too few
//     qualify), chosen among non-guaranteed, non-fifo pools with no integral
//     ancestor or descendant; the first half burst, the rest relaxed. Their
//     resource_flow (cpu and memory) adds up to about 15% of the cluster and
//     the burst pools' burst_guarantee_resources to about 25%, each pool's
//     part varying uniformly by ×[0.5, 1.5); a third of the relaxed pools set
//     relaxed_share_multiplier_limit in [1, 5).
//   - Weights: 30% of the pools and 10% of the operations have a weight,
//     log-uniform in [0.1, 10].
//   - Resource limits: 10% of the pools limit cpu to a log-uniform 0.5–10%
//     of the cluster (memory too on half of them), never below 1.5× their
//     guarantee; 2% of the operations limit cpu to a random number of their
//     jobs.
//   - Operations: placed in pools without child pools (fifo or not), each
//     pool drawn with a log-normal popularity exp(1.5·N(0,1)), so a few pools
//     hold many operations and some none. Demand is n jobs × one job size
//     with n = ⌈Pareto(α = 1.5, x_m = 1)⌉ capped at 5,000 (mean ≈ 3.5,
//     median 2); a job has 1, 2, 4, 8 or 16 cores (35/25/20/12/8%), 1, 2, 4
//     or 8 GiB per core (memory clamped to [1, 64] GiB), user_slots 1 and,
//     on 3% of the operations, 1, 2, 4 or 8 gpus. Demand is thus ≈ 4.5× the
//     cluster's cpu, ≈ 3.8× its memory and ≈ 5× its gpus (user slots ≈ 1.1×):
//     the fair-share update has to ration.
//   - Usage: 40% of the operations run no job; the others run a uniform
//     0..n jobs (usage = running jobs × job size ≤ demand). The gpu
//     operations' running job counts then shrink by a common factor if their
//     gpu usage would exceed 90% of the cluster's gpus, and everyone's if the
//     usage would exceed 90% of any resource, which it does at these
//     proportions: the cluster runs at just under 90% of its cpu (about 78%
//     of its memory, 60% of its gpus). Pending job count = n − running jobs.
//   - Operations started at a uniform time in the day before virtual time 0;
//     2% are gang operations, 20% vanilla.
//
// Names are "pool<i>" and "op<i>" with i the creation index. GenTree panics
// (BUG) if the tree rejects a generated mutation. It allocates the tree and
// scratch proportional to pools + ops; 100,000 operations take well under a
// second.
func GenTree(seed uint64, pools, ops int) (*tree.Tree, resource.Vec) {
	r := rng.New(seed)
	total := ClusterTotal(max(1, ops/OpsPerNode))
	ps := genShape(&r, pools)
	genGuarantees(&r, ps, total)
	genFifo(&r, ps)
	genIntegral(&r, ps, total)
	genPoolMisc(&r, ps, total)
	gops := genOps(&r, ps, ops, total)

	t := tree.New(tree.PoolConfig{})
	// One batch of pools and one of operations: under -tags invariants and
	// -race the tree checks its links after every batch, which one
	// mutation at a time made quadratic (minutes for 10,000 operations).
	names := make([]string, len(ps))
	muts := make([]tree.Mutation, 0, max(len(ps), len(gops)))
	for i := range ps {
		names[i] = "pool" + strconv.Itoa(i)
		parent := ""
		if p := ps[i].parent; p >= 0 {
			parent = names[p]
		}
		muts = append(muts, tree.Mutation{Kind: tree.AddPool, Name: names[i], Parent: parent, Pool: ps[i].cfg})
	}
	mustApply(t, muts...)
	muts = muts[:0]
	for i := range gops {
		o := &gops[i]
		parent := ""
		if o.pool >= 0 {
			parent = names[o.pool]
		}
		muts = append(muts, tree.Mutation{
			Kind: tree.AddOperation, Name: "op" + strconv.Itoa(i), Parent: parent,
			Op: o.spec, Demand: o.job.Scale(o.n), Usage: o.job.Scale(o.k),
		})
	}
	mustApply(t, muts...)
	for i := range gops {
		id, _ := t.Lookup("op" + strconv.Itoa(i))
		t.SetPendingJobCount(id, gops[i].n-gops[i].k)
	}
	t.ClearDirty()
	return t, total
}

func mustApply(t *tree.Tree, ms ...tree.Mutation) {
	if _, err := t.Apply(ms...); err != nil {
		panic("BUG: coretest: generated mutation rejected: " + err.Error())
	}
}

// logUniform returns a log-uniform number in [lo, hi).
func logUniform(r *rng.Rand, lo, hi float64) float64 {
	return lo * math.Exp(r.Float64()*math.Log(hi/lo))
}

// uniform returns a uniform number in [lo, hi).
func uniform(r *rng.Rand, lo, hi float64) float64 { return lo + r.Float64()*(hi-lo) }

// genShape draws the pool hierarchy; pools come parents first.
func genShape(r *rng.Rand, n int) []genPool {
	ps := make([]genPool, n)
	top := max(min(n, 3), n/50)
	open := make([]int32, 0, n) // pools that may take child pools
	for i := range ps {
		p := &ps[i]
		p.parent, p.depth = -1, 1
		if i >= top {
			p.parent = open[r.IntN(len(open))]
			p.depth = ps[p.parent].depth + 1
			ps[p.parent].childPools++
		}
		if p.depth < MaxPoolDepth {
			open = append(open, int32(i))
		}
	}
	return ps
}

// genGuarantees marks round(20%) of the pools, closed upwards, and sizes
// their strong guarantees top-down.
func genGuarantees(r *rng.Rand, ps []genPool, total resource.Vec) {
	target := int(math.Round(0.2 * float64(len(ps))))
	count := 0
	perm := r.Perm(len(ps))
	for progress := true; count < target && progress; {
		progress = false
		for _, i := range perm {
			cost := 0
			for j := int32(i); j >= 0 && !ps[j].guaranteed; j = ps[j].parent {
				cost++
			}
			if cost == 0 || count+cost > target {
				continue
			}
			for j := int32(i); j >= 0 && !ps[j].guaranteed; j = ps[j].parent {
				ps[j].guaranteed = true
			}
			count += cost
			progress = true
		}
	}

	// Budgets: the root's is 60% of the cluster; a guaranteed pool's is its
	// full (hypothetical) guarantee vector. Parents precede children.
	n := len(ps)
	budget := make([]resource.Vec, n+1) // index 0 is the root, i+1 pool i
	sumW := make([]float64, n+1)
	fill := make([]float64, n+1)
	w := make([]float64, n)
	budget[0] = total.Mul(0.6)
	for i := range ps {
		if ps[i].guaranteed {
			w[i] = logUniform(r, 0.25, 4)
			sumW[ps[i].parent+1] += w[i]
		}
	}
	for i := range fill {
		if r.Float64() < 0.1 {
			fill[i] = uniform(r, 1.05, 1.4)
		} else {
			fill[i] = uniform(r, 0.5, 0.95)
		}
	}
	for i := range ps {
		p := &ps[i]
		if !p.guaranteed {
			continue
		}
		par := p.parent + 1
		g := budget[par].Mul(w[i] / sumW[par] * fill[par])
		budget[i+1] = g
		sg := &p.cfg.StrongGuarantee
		set := func(k resource.Kind) { sg.V[k], sg.Set[k] = g[k], true }
		set(resource.CPU)
		if r.Float64() < 0.6 {
			set(resource.Memory)
		}
		if g[resource.GPU] > 0 && r.Float64() < 0.3 {
			set(resource.GPU)
		}
		if r.Float64() < 0.1 {
			set(resource.UserSlots)
		}
	}
}

// genFifo makes round(10%) of the pools fifo, among pools without child pools.
func genFifo(r *rng.Rand, ps []genPool) {
	target := int(math.Round(0.1 * float64(len(ps))))
	var leaves []int32
	for i := range ps {
		if ps[i].childPools == 0 {
			leaves = append(leaves, int32(i))
		}
	}
	r.Shuffle(len(leaves), func(i, j int) { leaves[i], leaves[j] = leaves[j], leaves[i] })
	for _, i := range leaves[:min(target, len(leaves))] {
		p := &ps[i]
		p.fifo = true
		p.cfg.Mode = tree.ModeFIFO
		if r.IntN(4) == 0 {
			p.cfg.FifoSortParameters = []tree.FifoSortParam{tree.FifoWeight, tree.FifoPendingJobCount}
		}
	}
}

// genIntegral makes round(5%) of the pools integral (half burst, half
// relaxed), never nested in one another.
func genIntegral(r *rng.Rand, ps []genPool, total resource.Vec) {
	target := int(math.Round(0.05 * float64(len(ps))))
	var chosen []int32
	for _, i := range r.Perm(len(ps)) {
		if len(chosen) == target {
			break
		}
		p := &ps[i]
		if p.guaranteed || p.fifo || p.integralIn {
			continue
		}
		ok := true
		for j := p.parent; j >= 0; j = ps[j].parent {
			if ps[j].integral != tree.GuaranteeNone {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for j := int32(i); j >= 0; j = ps[j].parent {
			ps[j].integralIn = true
		}
		p.integral = tree.GuaranteeBurst // the type is drawn below
		chosen = append(chosen, int32(i))
	}
	nBurst := (len(chosen) + 1) / 2
	for n, i := range chosen {
		p := &ps[i]
		ig := &p.cfg.Integral
		flow := 0.15 / float64(len(chosen)) * uniform(r, 0.5, 1.5)
		ig.ResourceFlow = cpuMemory(total.Mul(flow))
		if n < nBurst {
			p.integral, ig.Type = tree.GuaranteeBurst, tree.GuaranteeBurst
			burst := 0.25 / float64(nBurst) * uniform(r, 0.5, 1.5)
			ig.BurstGuarantee = cpuMemory(total.Mul(burst))
		} else {
			p.integral, ig.Type = tree.GuaranteeRelaxed, tree.GuaranteeRelaxed
			if r.IntN(3) == 0 {
				ig.RelaxedShareMultiplierLimit = tree.Some(uniform(r, 1, 5))
			}
		}
	}
}

// cpuMemory returns v's cpu and memory as a PartialVec.
func cpuMemory(v resource.Vec) tree.PartialVec {
	var p tree.PartialVec
	for _, k := range [...]resource.Kind{resource.CPU, resource.Memory} {
		p.V[k], p.Set[k] = v[k], true
	}
	return p
}

// genPoolMisc draws pool weights and resource limits.
func genPoolMisc(r *rng.Rand, ps []genPool, total resource.Vec) {
	for i := range ps {
		p := &ps[i]
		if r.Float64() < 0.3 {
			p.cfg.Weight = tree.Some(logUniform(r, 0.1, 10))
		}
		if r.Float64() < 0.1 {
			g := p.cfg.StrongGuarantee.V
			lim := total.Mul(logUniform(r, 0.005, 0.1))
			l := &p.cfg.ResourceLimits
			l.V[resource.CPU] = max(lim[resource.CPU], g[resource.CPU]*3/2)
			l.Set[resource.CPU] = true
			if r.IntN(2) == 0 {
				l.V[resource.Memory] = max(lim[resource.Memory], g[resource.Memory]*3/2)
				l.Set[resource.Memory] = true
			}
		}
	}
}

// Job sizes: cores per job and GiB per core.
var (
	jobCores   = [...]int64{1, 2, 4, 8, 16}
	jobCoresPc = [...]int{35, 25, 20, 12, 8}
	gibPerCore = [...]int64{1, 2, 4, 8}
	jobGPUs    = [...]int64{1, 2, 4, 8}
)

// genOps draws the operations, their pools, demands and usages.
func genOps(r *rng.Rand, ps []genPool, n int, total resource.Vec) []genOp {
	var leaves []int32
	var cum []float64
	sum := 0.0
	for i := range ps {
		if ps[i].childPools == 0 {
			sum += math.Exp(1.5 * r.NormFloat64())
			leaves = append(leaves, int32(i))
			cum = append(cum, sum)
		}
	}
	gops := make([]genOp, n)
	if len(leaves) == 0 {
		// No pools: operations go to the root.
		for i := range gops {
			gops[i].pool = -1
		}
	}
	var usage [resource.Count]float64
	for i := range gops {
		o := &gops[i]
		if len(leaves) > 0 {
			j, _ := slices.BinarySearch(cum, r.Float64()*sum)
			o.pool = leaves[min(j, len(leaves)-1)]
		}
		pc := r.IntN(100)
		cores := jobCores[len(jobCores)-1]
		for k, c := range jobCoresPc {
			if pc < c {
				cores = jobCores[k]
				break
			}
			pc -= c
		}
		o.job[resource.UserSlots] = 1
		o.job[resource.CPU] = resource.Cores(float64(cores))
		o.job[resource.Memory] = min(max(cores*gibPerCore[r.IntN(len(gibPerCore))], 1), 64) * gib
		if r.Float64() < 0.03 {
			o.job[resource.GPU] = jobGPUs[r.IntN(len(jobGPUs))]
		}
		o.n = min(int64(math.Ceil(math.Pow(1-r.Float64(), -1/1.5))), 5000)
		if r.Float64() >= 0.4 {
			o.k = r.Int64N(o.n + 1)
		}
		for k := range usage {
			usage[k] += float64(o.job[k] * o.k)
		}
		s := &o.spec
		if r.Float64() < 0.1 {
			s.Weight = tree.Some(logUniform(r, 0.1, 10))
		}
		s.StartTime = clock.FromSeconds(-86400 * r.Float64())
		s.IsGang = r.Float64() < 0.02
		s.Vanilla = r.Float64() < 0.2
		if r.Float64() < 0.02 {
			s.ResourceLimits.V[resource.CPU] = o.job[resource.CPU] * (1 + r.Int64N(o.n))
			s.ResourceLimits.Set[resource.CPU] = true
		}
	}
	// Keep the cluster's usage within 90% of its resources: first the gpu
	// operations' (gpus are scarcer), then everyone's. NB: running job
	// counts are mostly small, so they are rounded at random (unbiased) for
	// a few rounds, then down until the usage fits.
	for _, gpuOnly := range [...]bool{true, false} {
		for round := 0; ; round++ {
			f := 1.0
			for k, u := range usage {
				if u > 0.9*float64(total[k]) && (!gpuOnly || k == int(resource.GPU)) {
					f = min(f, 0.9*float64(total[k])/u)
				}
			}
			if f == 1 {
				break
			}
			usage = [resource.Count]float64{}
			for i := range gops {
				o := &gops[i]
				if !gpuOnly || o.job[resource.GPU] > 0 {
					x := float64(o.k) * f
					if round < 3 {
						x += r.Float64()
					}
					o.k = int64(x)
				}
				for k := range usage {
					usage[k] += float64(o.job[k] * o.k)
				}
			}
		}
	}
	return gops
}

// DemandChanges draws the workload of incremental fair-share benchmarks and
// tests: one random operation at a time and a new demand for it. It is
// deterministic given the tree and the seed, and not safe for concurrent use.
type DemandChanges struct {
	r   rng.Rand
	t   *tree.Tree
	ops []tree.ID
}

// NewDemandChanges returns a DemandChanges over the operations t holds now
// (collected once, in pre-order). Operations must keep demand = n jobs × one
// job size with user_slots 1 per job, as GenTree makes them, and must not be
// removed while the DemandChanges is in use.
func NewDemandChanges(t *tree.Tree, seed uint64) *DemandChanges {
	c := &DemandChanges{r: rng.New(seed), t: t}
	t.Walk(func(id tree.ID) {
		if t.IsOperation(id) {
			c.ops = append(c.ops, id)
		}
	})
	return c
}

// Next picks an operation uniformly and returns it with a new demand and
// usage, both whole jobs of the operation's job size: the job count n moves
// by a uniform amount in [-⌈n/2⌉, +⌈n/2⌉] other than 0, staying ≥ 1, and
// the running jobs are clipped to it. Next reads the tree but does not change
// it (apply the result with t.SetDemandUsage) and does not allocate. It
// returns tree.None if there are no operations.
func (c *DemandChanges) Next() (id tree.ID, demand, usage resource.Vec) {
	if len(c.ops) == 0 {
		return tree.None, resource.Vec{}, resource.Vec{}
	}
	id = c.ops[c.r.IntN(len(c.ops))]
	d, u := c.t.Demand(id), c.t.Usage(id)
	n, k := max(d[resource.UserSlots], 1), u[resource.UserSlots]
	var job resource.Vec
	for i := range job {
		job[i] = d[i] / n
	}
	h := (n + 1) / 2
	delta := c.r.Int64N(2*h) - h // in [-h, h-1]
	if delta >= 0 {
		delta++ // in [-h, h] \ {0}
	}
	m := max(n+delta, 1)
	if m == n {
		m = n + 1
	}
	return id, job.Scale(m), job.Scale(min(k, m))
}
