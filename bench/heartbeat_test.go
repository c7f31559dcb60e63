package bench

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/loadgen"
	"github.com/fairsched/fairsched/wire"
)

const gib = int64(1) << 30

// heartbeatCluster is the cluster of BenchmarkHeartbeat (bench/README.md#heartbeat):
// 10,000 nodes of 32 cpu, 1,000 pools, 10,000 running operations and
// 200,000 running allocations (20 jobs of 1.6 cpu fill each node exactly).
type heartbeatCluster struct {
	s      *schedule.Scheduler
	nodes  []benchNode
	limits resource.Vec
	now    clock.Time
}

type benchNode struct {
	// now is the node's own virtual clock: it advances by a millisecond per
	// heartbeat, so that per-node gates such as the preemptive backoff open.
	now    clock.Time
	hb     schedule.NodeHeartbeat
	allocs []schedule.AllocationReport
	resp   schedule.Response
}

var benchJob = resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1.6), resource.Memory: 4 * gib}

// heartbeatLimits are the resources of every node of the cluster.
var heartbeatLimits = resource.Vec{resource.UserSlots: 32, resource.CPU: resource.Cores(32), resource.Memory: 128 * gib}

// benchPools are the pools of the heartbeat and memory benchmarks: 20 at
// the top, the others under them, none with operation limits to speak of.
func benchPools(pools int) []tree.Mutation {
	var ms []tree.Mutation
	for i := range pools {
		parent := ""
		if i >= 20 {
			parent = fmt.Sprintf("pool%d", i%20)
		}
		ms = append(ms, tree.Mutation{Kind: tree.AddPool, Name: fmt.Sprintf("pool%d", i), Parent: parent,
			Pool: tree.PoolConfig{MaxOperationCount: tree.SomeInt(1 << 20), MaxRunningOperationCount: tree.SomeInt(1 << 20)}})
	}
	return ms
}

func newHeartbeatCluster(b *testing.B, nodes, pools, ops int, cfg schedule.Config) *heartbeatCluster {
	b.Helper()
	// 10,000 running operations need more than the default root limits.
	cfg.Limits.MaxOperationCount = 1 << 20
	cfg.Limits.MaxRunningOperationCount = 1 << 20
	s := schedule.New(tree.New(tree.PoolConfig{}), cfg)
	if _, err := s.ApplyPools(benchPools(pools)...); err != nil {
		b.Fatal(err)
	}
	for i := range ops {
		// Many pending jobs, so that churn always finds one to start.
		spec := schedule.OperationSpec{Pool: fmt.Sprintf("pool%d", 20+i%(pools-20)),
			Tasks: []schedule.TaskSpec{{Name: "map", JobCount: 1000, Resources: benchJob}}}
		if _, _, err := s.StartOperation(0, spec); err != nil {
			b.Fatal(err)
		}
	}
	c := &heartbeatCluster{s: s, limits: heartbeatLimits}
	c.nodes = make([]benchNode, nodes)
	for i := range c.nodes {
		n := &c.nodes[i]
		n.hb = schedule.NodeHeartbeat{Node: fmt.Sprintf("node-%05d", i), Limits: c.limits}
		c.heartbeat(i) // registers the node
	}
	s.UpdateFairShare(c.now)
	for i := range c.nodes {
		c.heartbeat(i) // fills the node
	}
	s.UpdateFairShare(c.now)
	return c
}

// heartbeat sends node i's heartbeat and applies the answer like a node:
// finished reports are dropped, preempted and aborted allocations stop,
// started ones run.
func (c *heartbeatCluster) heartbeat(i int) error {
	n := &c.nodes[i]
	n.resp.Reset()
	n.hb.Allocations = n.allocs
	n.now = max(n.now, c.now).Add(clock.Millisecond)
	if err := c.s.Heartbeat(n.now, &n.hb, &n.resp); err != nil {
		return err
	}
	kept := n.allocs[:0]
	for _, a := range n.allocs {
		if a.State != schedule.AllocRunning {
			continue
		}
		stop := false
		for _, p := range n.resp.Preempt {
			stop = stop || p.Allocation == a.ID
		}
		for _, p := range n.resp.Abort {
			stop = stop || p.Allocation == a.ID
		}
		if stop {
			// Reported as aborted in the next heartbeat.
			a.State = schedule.AllocAborted
		}
		kept = append(kept, a)
	}
	for _, st := range n.resp.Start {
		kept = append(kept, schedule.AllocationReport{ID: st.Allocation, State: schedule.AllocRunning})
	}
	n.allocs = kept
	return nil
}

// runParallel spreads the nodes over the parallel workers: each worker owns
// a contiguous block of nodes, so a node never heartbeats twice at once.
func runParallel(b *testing.B, c *heartbeatCluster, each func(i int)) {
	var workers atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// RunParallel starts GOMAXPROCS goroutines: worker w owns the w-th
		// contiguous block of nodes and cycles through it, so together they
		// visit every node, and no two workers heartbeat neighbouring nodes
		// in lock step (interleaved ownership made the workers write
		// adjacent nodes' cache lines at the same moments: false sharing
		// that no real cluster's heartbeats have).
		p := runtime.GOMAXPROCS(0)
		w := int(workers.Add(1)-1) % p
		lo, hi := w*len(c.nodes)/p, (w+1)*len(c.nodes)/p
		i := lo
		for pb.Next() {
			each(i)
			if i++; i >= hi {
				i = lo
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
}

// BenchmarkHeartbeat: steady (a heartbeat reports its allocations and
// nothing changes), churn (one completed allocation, one new one) and
// preempt (a starving operation; the preemptive stage runs on every
// heartbeat). See bench/README.md#heartbeat.
func BenchmarkHeartbeat(b *testing.B) {
	const nodes, pools, ops = 10000, 1000, 10000
	b.Run("steady/nodes=10000", func(b *testing.B) {
		c := newHeartbeatCluster(b, nodes, pools, ops, schedule.DefaultConfig())
		runParallel(b, c, func(i int) {
			if err := c.heartbeat(i); err != nil {
				b.Error(err)
			}
		})
	})
	b.Run("churn/nodes=10000", func(b *testing.B) {
		c := newHeartbeatCluster(b, nodes, pools, ops, schedule.DefaultConfig())
		runParallel(b, c, func(i int) {
			n := &c.nodes[i]
			n.allocs[0].State = schedule.AllocCompleted
			if err := c.heartbeat(i); err != nil {
				b.Error(err)
			}
		})
	})
	b.Run("preempt/nodes=10000", func(b *testing.B) {
		cfg := schedule.DefaultConfig()
		cfg.PreemptiveSchedulingBackoff = 0
		c := newHeartbeatCluster(b, nodes, pools, ops, cfg)
		// A heavy operation arrives in its own top-level pool and starves.
		if _, err := c.s.ApplyPools(tree.Mutation{Kind: tree.AddPool, Name: "starving", Pool: tree.PoolConfig{Weight: tree.Some(1000)}}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.s.StartOperation(c.now, schedule.OperationSpec{Pool: "starving",
			Tasks: []schedule.TaskSpec{{Name: "big", JobCount: 1 << 20, Resources: benchJob}}}); err != nil {
			b.Fatal(err)
		}
		// Past the starvation timeout, with every node heartbeating so that
		// none is unregistered (the preemptive stage is off meanwhile: the
		// node already had its first preemptive attempt at setup).
		for range 4 {
			c.now = c.now.Add(15 * clock.Second)
			for i := range c.nodes {
				c.heartbeat(i)
			}
			c.s.UpdateFairShare(c.now)
		}
		c.now = c.now.Add(100 * clock.Millisecond)
		if info := c.s.Operations(nil); info[len(info)-1].Starvation == 0 {
			b.Fatalf("the heavy operation does not starve: %+v", info[len(info)-1])
		}
		var preempted atomic.Int64
		runParallel(b, c, func(i int) {
			if err := c.heartbeat(i); err != nil {
				b.Error(err)
			}
			if k := len(c.nodes[i].resp.Preempt); k > 0 {
				preempted.Add(int64(k))
			}
		})
		b.ReportMetric(float64(preempted.Load())/float64(b.N), "preemptions/heartbeat")
	})
	// The standard load's shape (see standardLoad), after 60 s of virtual
	// time (the cluster filled, completions and replacements running),
	// with the nodes heartbeating 300,000 times per second of virtual time
	// (the batched endpoint's target): one goroutine, so ns/op includes
	// loadgen's node simulation; core-ns/heartbeat is the time inside
	// Scheduler.Heartbeat (with two clock reads), cpu-ns/heartbeat the
	// process's CPU time per heartbeat (node simulation included), which
	// other processes on the machine disturb less. The fair-share updates
	// are outside the timer and the CPU time.
	b.Run("standard-load", func(b *testing.B) {
		l := newStandardLoad(b)
		l.warmUp(b, 60*time.Second)
		dt := time.Second / 300000
		b.ReportAllocs()
		b.ResetTimer()
		c0 := cpuTime(b)
		for b.Loop() {
			l.heartbeat(b)
			l.advance(b, dt, b)
		}
		cpu := cpuTime(b) - c0 - l.updateCPU
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(l.heartbeats), "cpu-ns/heartbeat")
		b.ReportMetric(float64(l.core.Nanoseconds())/float64(l.heartbeats), "core-ns/heartbeat")
		b.ReportMetric(float64(l.starts)/float64(l.heartbeats), "starts/heartbeat")
		b.ReportMetric(float64(l.completed)/float64(l.heartbeats), "completions/heartbeat")
		b.ReportMetric(float64(l.preempt)/float64(l.heartbeats), "preemptions/heartbeat")
	})
}

// BenchmarkSchedulingThroughput is YuniKorn's BenchmarkScheduling shape:
// pools a and b with strong guarantees, one operation each of 5,000 jobs
// {cpu 1, memory 10}, N nodes of {cpu 10000/N+1, memory 10× that}; nodes
// heartbeat round-robin until all 10,000 jobs run. The minimum spare
// resources are one job, since these nodes have bytes of memory.
func BenchmarkSchedulingThroughput(b *testing.B) {
	for _, n := range []int{500, 1000, 2000, 5000} {
		b.Run(fmt.Sprintf("yunikorn-shape/nodes=%d", n), func(b *testing.B) {
			cpu := int64(10000/n + 1)
			job := resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1), resource.Memory: 10}
			node := resource.Vec{resource.UserSlots: cpu, resource.CPU: resource.Cores(float64(cpu)), resource.Memory: 10 * cpu}
			cfg := schedule.DefaultConfig()
			cfg.MinSpareAllocationResources = job
			b.ReportAllocs()
			allocations := 0
			for b.Loop() {
				b.StopTimer()
				s := schedule.New(tree.New(tree.PoolConfig{}), cfg)
				half := resource.Vec{resource.CPU: resource.Cores(5000), resource.Memory: 50000}
				if _, err := s.ApplyPools(
					tree.Mutation{Kind: tree.AddPool, Name: "a", Pool: tree.PoolConfig{StrongGuarantee: tree.PartialVec{V: half, Set: [5]bool{1: true, 3: true}}}},
					tree.Mutation{Kind: tree.AddPool, Name: "b", Pool: tree.PoolConfig{StrongGuarantee: tree.PartialVec{V: half, Set: [5]bool{1: true, 3: true}}}},
				); err != nil {
					b.Fatal(err)
				}
				for _, p := range []string{"a", "b"} {
					if _, _, err := s.StartOperation(0, schedule.OperationSpec{Pool: p, Tasks: []schedule.TaskSpec{{JobCount: 5000, Resources: job}}}); err != nil {
						b.Fatal(err)
					}
				}
				hbs := make([]schedule.NodeHeartbeat, n)
				var resp schedule.Response
				for i := range hbs {
					hbs[i] = schedule.NodeHeartbeat{Node: fmt.Sprintf("n%d", i), Limits: node}
					s.Heartbeat(0, &hbs[i], &resp) // registration
				}
				s.UpdateFairShare(0)
				b.StartTimer()
				started := 0
				for round := 0; started < 10000 && round < 100; round++ {
					for i := range hbs {
						resp.Reset()
						if err := s.Heartbeat(1, &hbs[i], &resp); err != nil {
							b.Fatal(err)
						}
						started += len(resp.Start)
					}
				}
				if started != 10000 {
					b.Fatalf("started %d of 10000 jobs", started)
				}
				allocations += started
			}
			b.ReportMetric(float64(allocations)/b.Elapsed().Seconds(), "allocations/s")
		})
	}
}

// standardLoad is the standard load of README.md ("Load generator: the
// standard load": loadgen.Standard, seed 1 — 10,000 nodes of 32 cores,
// 200 pools on top of the embedded serve.json, 2,000 operations of 1–2
// tasks replaced as they complete, jobs of 5–120 s) driven straight against
// the core on virtual time, without HTTP, JSON or goroutines: loadgen's
// simulated nodes (Prepare, AppendReports, Apply) heartbeat round-robin,
// and the fair-share update runs every fair_share_update_period_s of
// virtual time, when finished operations are replaced.
type standardLoad struct {
	w      *loadgen.Workload
	s      *schedule.Scheduler
	nodes  []*loadgen.Node
	hbs    []schedule.NodeHeartbeat
	gen    []uint32 // per operation slot
	period time.Duration

	now, nextUpdate time.Duration // virtual, since the start
	next            int           // the node to heartbeat next

	reports []schedule.AllocationReport
	resp    schedule.Response
	d       loadgen.Decisions

	// core is the time spent in Scheduler.Heartbeat (with two clock reads
	// per heartbeat); updateCPU the process CPU time of the fair-share
	// updates; the counts are those of the decisions.
	core, updateCPU                        time.Duration
	heartbeats, starts, completed, preempt int64
}

// cpuTime returns the process's CPU time (user and system).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newStandardLoad(tb testing.TB) *standardLoad {
	tb.Helper()
	cfg := loadgen.Standard()
	w := loadgen.NewWorkload(&cfg)
	sc, err := wire.DecodeServeConfig(examples.ServeConfig)
	if err != nil {
		tb.Fatal(err)
	}
	root, ms, _, werr := sc.Tree()
	if werr != nil {
		tb.Fatal(werr)
	}
	for i := range w.Pools {
		p := &w.Pools[i]
		ms = append(ms, tree.Mutation{Kind: tree.AddPool, Name: p.Name, Parent: p.Parent, Pool: p.Config})
	}
	l := &standardLoad{w: w, s: schedule.New(tree.New(root), sc.Scheduler), gen: make([]uint32, cfg.Operations),
		period: time.Duration(sc.Scheduler.FairShareUpdatePeriod.Micros()) * time.Microsecond}
	if i, err := l.s.ApplyPools(ms...); err != nil {
		tb.Fatalf("pool %s: %v", ms[i].Name, err)
	}
	for slot := range cfg.Operations {
		spec := w.Operation(slot, 0)
		if _, _, err := l.s.StartOperation(0, spec); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range cfg.Nodes {
		n := loadgen.NewNode(w, i)
		l.nodes = append(l.nodes, n)
		l.hbs = append(l.hbs, schedule.NodeHeartbeat{Node: n.Name, Limits: w.NodeLimits(), Tags: []string{loadgen.NodeTag(i)}})
	}
	return l
}

// heartbeat sends the next node's heartbeat at the current virtual time
// and carries out the answer.
func (l *standardLoad) heartbeat(tb testing.TB) {
	i := l.next
	if l.next++; l.next == len(l.nodes) {
		l.next = 0
	}
	n, hb := l.nodes[i], &l.hbs[i]
	n.Prepare(l.now)
	l.reports = n.AppendReports(l.reports[:0])
	hb.Allocations = l.reports
	l.resp.Reset()
	t0 := time.Now()
	err := l.s.Heartbeat(clock.Time(l.now.Microseconds()), hb, &l.resp)
	l.core += time.Since(t0)
	if err != nil {
		tb.Fatal(err)
	}
	l.d.Reset()
	loadgen.FromResponse(&l.resp, l.w, &l.d)
	completed, _ := n.Acknowledge(nil)
	n.Apply(l.now, &l.d, nil)
	l.heartbeats++
	l.starts += int64(len(l.resp.Start))
	l.completed += int64(completed)
	l.preempt += int64(len(l.resp.Preempt))
}

// advance moves the virtual time on by dt, running the fair-share update
// (and replacing finished operations) when its period is due.
func (l *standardLoad) advance(tb testing.TB, dt time.Duration, timer *testing.B) {
	l.now += dt
	if l.now < l.nextUpdate {
		return
	}
	if timer != nil {
		timer.StopTimer()
		defer timer.StartTimer()
	}
	c0 := cpuTime(tb)
	defer func() { l.updateCPU += cpuTime(tb) - c0 }()
	l.nextUpdate = l.now + l.period
	now := clock.Time(l.now.Microseconds())
	l.s.UpdateFairShare(now)
	for _, o := range l.s.Operations(nil) {
		if !o.State.Final() {
			continue
		}
		slot, gen, ok := l.w.ParseOpID([]byte(o.ID))
		if !ok || gen != l.gen[slot] {
			continue
		}
		if o.RunningAllocations == 0 {
			if err := l.s.ForgetOperation(o.ID); err != nil {
				tb.Fatal(err)
			}
		}
		l.gen[slot]++
		if _, _, err := l.s.StartOperation(now, l.w.Operation(int(slot), l.gen[slot])); err != nil {
			tb.Fatal(err)
		}
	}
}

// warmUp fills the cluster and plays the load until virtual time until,
// each node heartbeating once per virtual second (the fair-share update
// as configured), so that completions and starts reach their steady rate.
func (l *standardLoad) warmUp(tb testing.TB, until time.Duration) {
	dt := time.Second / time.Duration(len(l.nodes))
	for l.now < until {
		l.heartbeat(tb)
		l.advance(tb, dt, nil)
	}
	l.core, l.updateCPU, l.heartbeats, l.starts, l.completed, l.preempt = 0, 0, 0, 0, 0, 0
}
