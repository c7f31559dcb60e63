package loadgen

import (
	"math"
	"strconv"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/wire"
)

// PoolSpec is one pool of the workload; Parent is "" for the root.
type PoolSpec struct {
	Name   string
	Parent string
	Config tree.PoolConfig
}

// Workload is the seeded part of a load run: the pool tree, every
// operation's specification and the nodes' random streams. It is immutable
// after NewWorkload and safe for concurrent use.
type Workload struct {
	// Pools in creation order (parents first).
	Pools []PoolSpec
	// RunID makes the operation ids of a run unique on a server that has
	// seen earlier runs; it is not part of the seeded workload.
	RunID string

	cfg      Config
	leaves   []int32   // pools that host operations
	leafCum  []float64 // cumulative popularity of leaves, normalised to 1
	opSeed   uint64
	nodeSeed uint64
	// origins caches the report fields of an operation's tasks by slot
	// (origin), for the current generation of each slot.
	origins []atomic.Pointer[originEntry]
}

// originEntry is the encoded origins of one operation's tasks.
type originEntry struct {
	gen     uint32
	tasks   [][]byte
	origins []schedule.AllocationOrigin // the same, decoded
}

// origin returns the report fields of a running allocation of task t of
// the gen-th operation of a slot, as allocations_to_start gave them:
// `,"operation_id":"…","task_index":t,"resources":{…}`. It allocates only
// for a slot's new generation.
func (w *Workload) origin(slot int32, gen uint32, t int32) []byte {
	e := w.originEntry(slot, gen)
	if e == nil || int(t) >= len(e.tasks) || t < 0 {
		return nil
	}
	return e.tasks[t]
}

// originOf is origin decoded (the in-process driver's).
func (w *Workload) originOf(slot int32, gen uint32, t int32) schedule.AllocationOrigin {
	e := w.originEntry(slot, gen)
	if e == nil || int(t) >= len(e.origins) || t < 0 {
		return schedule.AllocationOrigin{}
	}
	return e.origins[t]
}

// originEntry returns the origins of the gen-th operation of a slot.
func (w *Workload) originEntry(slot int32, gen uint32) *originEntry {
	if slot < 0 || int(slot) >= len(w.origins) {
		return nil
	}
	p := &w.origins[slot]
	e := p.Load()
	if e == nil || e.gen != gen {
		spec := w.Operation(int(slot), gen)
		e = &originEntry{gen: gen}
		for i := range spec.Tasks {
			b := append([]byte(`,"operation_id":`), strconv.Quote(spec.ID)...)
			b = append(b, `,"task_index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"resources":`...)
			e.tasks = append(e.tasks, wire.AppendResources(b, &spec.Tasks[i].Resources))
			e.origins = append(e.origins, schedule.AllocationOrigin{Operation: []byte(spec.ID), Task: i, Resources: spec.Tasks[i].Resources})
		}
		p.Store(e)
	}
	return e
}

const (
	golden   = 0x9E3779B97F4A7C15
	golden2  = 0xD1B54A32D192ED03
	maxDepth = 3
)

// NewWorkload derives the workload of cfg from cfg.Seed (see the package
// documentation). The pool tree, in short: Pools/10 top-level pools (at
// least one), the others under a random earlier pool no deeper than 3;
// weights on 30% of pools (0.5–4), 10% of the leaves fifo, strong cpu
// guarantees on a tenth of the top-level pools sharing 30% of the
// cluster's cpu; operations in leaf pools with log-normal popularity.
func NewWorkload(cfg *Config) *Workload {
	r := rng.New(cfg.Seed)
	w := &Workload{cfg: *cfg, RunID: "0", origins: make([]atomic.Pointer[originEntry], cfg.Operations)}
	n := cfg.Pools
	top := max(1, n/10)
	parent := make([]int32, n)
	depth := make([]int8, n)
	children := make([]int32, n)
	for i := range n {
		if i < top {
			parent[i], depth[i] = -1, 1
			continue
		}
		for {
			p := r.Int32N(int32(i))
			if depth[p] < maxDepth {
				parent[i], depth[i] = p, depth[p]+1
				children[p]++
				break
			}
		}
	}
	w.Pools = make([]PoolSpec, n)
	// Operation counts: generous enough that admission never refuses the
	// workload's operations (the defaults allow 50 per pool, ancestors
	// included), bounded by the root's own limits.
	maxOps := tree.SomeInt(int64(min(2*cfg.Operations+100, 50000)))
	maxRunning := tree.SomeInt(int64(min(cfg.Operations+100, 50000)))
	var guaranteed []int
	for i := range n {
		p := &w.Pools[i]
		p.Name = PoolName(i)
		if parent[i] >= 0 {
			p.Parent = PoolName(int(parent[i]))
		}
		p.Config.MaxOperationCount = maxOps
		p.Config.MaxRunningOperationCount = maxRunning
		if r.Float64() < 0.3 {
			p.Config.Weight = tree.Some(math.Round(logUniform(&r, 0.5, 4)*100) / 100)
		}
		if children[i] == 0 {
			if r.Float64() < 0.1 {
				p.Config.Mode = tree.ModeFIFO
			}
			w.leaves = append(w.leaves, int32(i))
		}
		if i < top && r.Float64() < 0.1 {
			guaranteed = append(guaranteed, i)
		}
	}
	if len(guaranteed) > 0 {
		cpu := 0.3 * float64(cfg.Nodes) * cfg.NodeCPU / float64(len(guaranteed))
		for _, i := range guaranteed {
			g := &w.Pools[i].Config.StrongGuarantee
			g.V[resource.CPU], g.Set[resource.CPU] = resource.Cores(math.Floor(cpu)), true
		}
	}
	w.leafCum = make([]float64, len(w.leaves))
	sum := 0.0
	for i := range w.leaves {
		sum += math.Exp(r.NormFloat64())
		w.leafCum[i] = sum
	}
	for i := range w.leafCum {
		w.leafCum[i] /= sum
	}
	w.opSeed = r.Uint64()
	w.nodeSeed = r.Uint64()
	return w
}

// PoolName is the name of the i-th pool of a workload.
func PoolName(i int) string { return "lg-p" + strconv.Itoa(i) }

// NodeName is the name of the i-th node of a workload.
func NodeName(i int) string { return "lg-n" + strconv.Itoa(i) }

func logUniform(r *rng.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// OpID is the id of the gen-th operation of a slot: lg<run>-<slot>-<gen>.
func (w *Workload) OpID(slot int, gen uint32) string {
	b := make([]byte, 0, 32)
	b = append(b, "lg"...)
	b = append(b, w.RunID...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(slot), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(gen), 10)
	return string(b)
}

// ParseOpID returns the slot and generation of an operation id of this
// run (OpID); ok is false for any other id. It allocates nothing.
func (w *Workload) ParseOpID(id []byte) (slot int32, gen uint32, ok bool) {
	if len(id) < 2+len(w.RunID)+4 || string(id[:2]) != "lg" || string(id[2:2+len(w.RunID)]) != w.RunID || id[2+len(w.RunID)] != '-' {
		return 0, 0, false
	}
	rest := id[3+len(w.RunID):]
	var s, g uint64
	i := 0
	for ; i < len(rest) && rest[i] != '-'; i++ {
		c := rest[i]
		if c < '0' || c > '9' || i >= 9 {
			return 0, 0, false
		}
		s = s*10 + uint64(c-'0')
	}
	if i == 0 || i >= len(rest)-1 {
		return 0, 0, false
	}
	for j, c := range rest[i+1:] {
		if c < '0' || c > '9' || j >= 9 {
			return 0, 0, false
		}
		g = g*10 + uint64(c-'0')
	}
	if s >= uint64(w.cfg.Operations) {
		return 0, 0, false
	}
	return int32(s), uint32(g), true
}

// Operation returns the specification of the gen-th operation of a slot
// (its id is OpID(slot, gen)): a leaf pool by popularity; one task (80%)
// or two; per task 1–4 cores (sometimes half a core), 2 or 4 GiB per core,
// one user slot, a log-uniform job count in [MinJobs, MaxJobs] and the job
// distribution's median as duration hint; weights on 10% of operations;
// graceful preemption on 5%. The same (slot, gen) always gives the same
// specification.
func (w *Workload) Operation(slot int, gen uint32) schedule.OperationSpec {
	r := rng.New(w.opSeed + uint64(slot)*golden + uint64(gen)*golden2)
	x := r.Float64()
	li := 0
	for li < len(w.leafCum)-1 && w.leafCum[li] < x {
		li++
	}
	spec := schedule.OperationSpec{
		ID:   w.OpID(slot, gen),
		Pool: w.Pools[w.leaves[li]].Name,
		Type: "map",
	}
	nTasks := 1
	if r.Float64() < 0.2 {
		nTasks, spec.Type = 2, "map_reduce"
	}
	if r.Float64() < 0.1 {
		spec.Weight = tree.Some(math.Round(logUniform(&r, 0.5, 3)*100) / 100)
	}
	if r.Float64() < 0.05 {
		spec.PreemptionMode = schedule.PreemptionGraceful
	}
	cores := [...]float64{0.5, 1, 1, 1, 1, 2, 2, 4}
	names := [...]string{"map", "reduce"}
	for t := range nTasks {
		c := cores[r.IntN(len(cores))]
		var res resource.Vec
		res[resource.UserSlots] = 1
		res[resource.CPU] = resource.Cores(c)
		res[resource.Memory] = int64(c*float64(2+2*r.IntN(2))) << 30
		jobs := int64(math.Round(logUniform(&r, float64(w.cfg.MinJobs), float64(w.cfg.MaxJobs))))
		spec.Tasks = append(spec.Tasks, schedule.TaskSpec{
			Name:          names[t],
			JobCount:      min(max(jobs, w.cfg.MinJobs), w.cfg.MaxJobs),
			Resources:     res,
			DurationHintS: math.Round(w.cfg.JobDuration.Median()*100) / 100,
		})
	}
	return spec
}

// Jobs returns the total job count of a specification.
func Jobs(spec *schedule.OperationSpec) int64 {
	n := int64(0)
	for i := range spec.Tasks {
		n += spec.Tasks[i].JobCount
	}
	return n
}

// NodeRand returns node i's random stream (job durations, preemption
// delays).
func (w *Workload) NodeRand(i int) rng.Rand { return rng.New(w.nodeSeed + uint64(i)*golden) }

// NodeLimits returns every node's resources.
func (w *Workload) NodeLimits() resource.Vec {
	var v resource.Vec
	v[resource.UserSlots] = w.cfg.NodeSlots
	v[resource.CPU] = resource.Cores(w.cfg.NodeCPU)
	v[resource.Memory] = w.cfg.NodeMemory
	return v
}

// NodeTag is node i's tag (its rack, 40 nodes per rack).
func NodeTag(i int) string { return "rack-" + strconv.Itoa(i/40) }
