package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairsched/fairsched/core/schedule"
)

// driver is what differs between HTTP and in process.
type driver interface {
	// setup creates the pools (and, in process, the scheduler).
	setup(ctx context.Context) error
	// startOperation starts an operation; pending reports its admission.
	startOperation(spec *schedule.OperationSpec) (pending bool, err error)
	// newWorker returns driver goroutine i's heartbeat sender.
	newWorker(i int) heartbeater
	// begin is called when the heartbeats start; end when they stopped.
	begin(start time.Time)
	end()
}

// heartbeater sends the heartbeats of nodes — one, or a batch
// (Config.Batch) — and decodes the answer to the i-th into ds[i], or sets
// errs[i] when it failed (every one of them when the request failed).
// Errors carry a kind for the report.
type heartbeater interface {
	heartbeat(nodes []*Node, ds []Decisions, errs []*hbError)
}

type hbError struct {
	kind string
	msg  string
}

// opTable tracks the operations of the run's slots, shared by the driver
// goroutines (atomics) and the control goroutine.
type opTable struct {
	gen      []atomic.Uint32
	jobs     []atomic.Int64
	done     []atomic.Int64
	pending  []atomic.Bool
	queued   []atomic.Bool // the slot is in finished (at most once)
	finished chan int32    // slots to (re)start; capacity = slots

	pendingCount atomic.Int64
	startedOps   atomic.Int64
	completedOps atomic.Int64
}

func newOpTable(n int) *opTable {
	return &opTable{
		gen:      make([]atomic.Uint32, n),
		jobs:     make([]atomic.Int64, n),
		done:     make([]atomic.Int64, n),
		pending:  make([]atomic.Bool, n),
		queued:   make([]atomic.Bool, n),
		finished: make(chan int32, n),
	}
}

// prepare records the operation about to start in a slot.
func (t *opTable) prepare(slot int32, gen uint32, jobs int64) {
	t.jobs[slot].Store(jobs)
	t.done[slot].Store(0)
	t.gen[slot].Store(gen)
}

// admitted records the state the server gave a started operation.
func (t *opTable) admitted(slot int32, pending bool) {
	t.startedOps.Add(1)
	if pending && !t.pending[slot].Swap(true) {
		t.pendingCount.Add(1)
	}
}

// started is called for every allocation started for (slot, gen): a
// pending operation that gets an allocation runs.
func (t *opTable) started(slot int32, gen uint32) {
	if slot < 0 || t.gen[slot].Load() != gen {
		return
	}
	if t.pending[slot].Load() && t.pending[slot].CompareAndSwap(true, false) {
		t.pendingCount.Add(-1)
	}
}

// complete counts a completed job of (slot, gen); the operation's last job
// queues the slot for a replacement.
func (t *opTable) complete(slot int32, gen uint32) {
	if slot < 0 || t.gen[slot].Load() != gen {
		return
	}
	if t.done[slot].Add(1) == t.jobs[slot].Load() {
		t.completedOps.Add(1)
		if t.pending[slot].CompareAndSwap(true, false) {
			t.pendingCount.Add(-1)
		}
		t.enqueue(slot)
	}
}

// enqueue queues a slot for a new operation, unless it is queued already
// (an operation that was started after its start timed out can complete
// while its slot waits for a retry).
func (t *opTable) enqueue(slot int32) {
	if !t.queued[slot].CompareAndSwap(false, true) {
		return
	}
	select {
	case t.finished <- slot:
	default:
		panic("BUG: loadgen: the finished-operations queue is full")
	}
}

// dequeue is called by the control goroutine for a slot it took from
// finished.
func (t *opTable) dequeue(slot int32) { t.queued[slot].Store(false) }

// Run sets up the workload of cfg and plays it until cfg.Duration or
// cfg.MaxHeartbeats or ctx ends (see the package documentation). An error
// is returned only when the run cannot start (bad config, the server is
// unreachable or refuses the setup); errors during the run are counted in
// the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r, err := setup(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	m := r.drive(ctx)
	r.report(m)
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return r.rep, err
	}
	return r.rep, nil
}

// setup validates cfg, builds the workload and the driver, creates the pools
// and starts the first generation of every operation slot.
func setup(ctx context.Context, cfg *Config) (*runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := NewWorkload(cfg)
	w.RunID = strconv.FormatInt(time.Now().UnixNano()/1e6%(36*36*36*36*36*36), 36)
	r := &runner{cfg: cfg, w: w, st: newStats(cfg.Connections), ops: newOpTable(cfg.Operations)}
	r.rep = &Report{
		Mode:      "http",
		Target:    cfg.Target,
		StartedAt: time.Now().UTC().Format(time.RFC3339),
		Config:    reportConfig(cfg),
		Machine:   machine(),
		Labels:    cfg.Labels,
	}
	if cfg.InProcess {
		r.rep.Mode, r.rep.Target = "inprocess", ""
		r.d = newInProcess(cfg, w)
	} else {
		addr, _ := CheckTarget(cfg.Target)
		r.hd = newHTTPDriver(cfg, w, addr)
		r.d = r.hd
	}

	setupStart := time.Now()
	if err := r.d.setup(ctx); err != nil {
		return nil, err
	}
	for slot := range cfg.Operations {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		spec := w.Operation(slot, 0)
		r.ops.prepare(int32(slot), 0, Jobs(&spec))
		pending, err := r.d.startOperation(&spec)
		if err != nil {
			if slot == 0 {
				return nil, fmt.Errorf("loadgen: cannot start the first operation: %w", err)
			}
			r.st.error(-1, "control start_operation", err.Error())
			r.ops.enqueue(int32(slot)) // retried by the control goroutine
			continue
		}
		r.ops.admitted(int32(slot), pending)
	}
	r.rep.SetupS = since(setupStart)

	r.nodes = make([]*Node, cfg.Nodes)
	for i := range r.nodes {
		r.nodes[i] = NewNode(w, i)
	}
	r.budget.Store(math.MaxInt64)
	if cfg.MaxHeartbeats > 0 {
		r.budget.Store(cfg.MaxHeartbeats)
	}
	return r, nil
}

// measured is what drive measures around the heartbeats.
type measured struct {
	elapsed  time.Duration
	ru0, ru1 syscall.Rusage
}

// drive plays the nodes from cfg.Connections goroutines, beside the control,
// progress, memory-sampling and profiling goroutines, until the run stops.
func (r *runner) drive(ctx context.Context) measured {
	var m measured
	cfg := r.cfg
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &m.ru0)
	if r.hd != nil {
		r.mem = newMemSampler(r.hd, cfg)
		r.mem.sample(0, 0) // before the heartbeats
	}
	r.start = time.Now()
	r.d.begin(r.start)
	runCtx, cancel := context.WithDeadline(ctx, r.start.Add(cfg.Duration))
	defer cancel()
	stopWatch := context.AfterFunc(runCtx, func() { r.stop.Store(true) })
	defer stopWatch()

	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); r.control(runCtx) }()
	go func() { defer bg.Done(); r.progress(runCtx) }()
	if r.mem != nil && cfg.SampleEvery > 0 {
		bg.Add(1)
		go func() { defer bg.Done(); r.mem.loop(runCtx, r) }()
	}
	if r.hd != nil && cfg.Profiles != nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			r.rep.Profiles = r.hd.captureProfiles(runCtx, cfg.Profiles, r.st)
		}()
	}

	var wg sync.WaitGroup
	for i := range cfg.Connections {
		var mine []*Node
		for j := i; j < len(r.nodes); j += cfg.Connections {
			mine = append(mine, r.nodes[j])
		}
		wg.Add(1)
		go func() { defer wg.Done(); r.work(i, mine) }()
	}
	wg.Wait()
	m.elapsed = time.Since(r.start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &m.ru1)
	r.stop.Store(true)
	cancel()
	bg.Wait()
	r.d.end()
	return m
}

// report fills the run's report from the counters, the latency histograms
// and the CPU and memory measurements.
func (r *runner) report(m measured) {
	rep, st, ops, cfg := r.rep, r.st, r.ops, r.cfg
	elapsed := m.elapsed
	t := st.sum()
	rep.DurationS = elapsed.Seconds()
	rep.Heartbeats = t.heartbeats
	rep.HeartbeatsPerS = float64(t.heartbeats) / elapsed.Seconds()
	rep.AllocationsStarted = t.started
	rep.AllocationsStartedPerS = float64(t.started) / elapsed.Seconds()
	rep.AllocationsCompleted = t.completed
	rep.Preemptions = t.preempted
	rep.AbortsReceived = t.aborts
	rep.AbortedReported = t.abortedReported
	rep.RunningAllocations = t.running
	rep.OperationsStarted = ops.startedOps.Load()
	rep.OperationsCompleted = ops.completedOps.Load()
	rep.PendingOperations = ops.pendingCount.Load()
	rep.Errors = t.errors
	st.mu.Lock()
	if len(st.kinds) > 0 {
		rep.ErrorsByKind = make(map[string]int64, len(st.kinds))
		for k, v := range st.kinds {
			rep.ErrorsByKind[k] = v
		}
	}
	rep.ErrorSamples = append(rep.ErrorSamples, st.samples...)
	st.mu.Unlock()
	rep.LatencyMS = st.latency()
	rep.LatencyOf = latencyOf(cfg)
	rep.Requests = t.requests
	rep.RequestsPerS = float64(t.requests) / elapsed.Seconds()
	r.mu.Lock()
	rep.PerSecond = append(rep.PerSecond, r.perSecond...)
	r.mu.Unlock()

	loadgenS := cpuSeconds(&m.ru1) - cpuSeconds(&m.ru0)
	cpu := &CPUUse{ServerS: -1, LoadgenS: loadgenS, MachineCores: rep.Machine.Cores}
	if t.heartbeats > 0 {
		cpu.LoadgenUSPerHB = loadgenS / float64(t.heartbeats) * 1e6
	}
	cpu.CoresBusy = loadgenS / elapsed.Seconds()
	if r.mem != nil {
		r.mem.sample(elapsed.Seconds(), t.running)
		rep.Memory = r.mem.report(t.running, cfg.Nodes, cfg.Operations)
		if s0, s1 := r.mem.cpuAt(0), r.mem.cpuAt(-1); s0 >= 0 && s1 >= 0 {
			cpu.ServerS = s1 - s0
			if t.heartbeats > 0 {
				cpu.ServerUSPerHB = cpu.ServerS / float64(t.heartbeats) * 1e6
			}
			cpu.CoresBusy = (cpu.ServerS + loadgenS) / elapsed.Seconds()
		}
	}
	rep.CPU = cpu
	rep.Machine.LoadAvgEnd = loadAvg()
}

// latencyOf says what Report.LatencyMS measures.
func latencyOf(cfg *Config) string {
	switch {
	case cfg.Batch > 0 && cfg.InProcess:
		return fmt.Sprintf("per batch of up to %d heartbeats: the %d Heartbeat calls", cfg.Batch, cfg.Batch)
	case cfg.Batch > 0:
		return fmt.Sprintf("per batch of up to %d heartbeats: one request's round trip", cfg.Batch)
	case cfg.InProcess:
		return "per heartbeat: the Heartbeat call"
	}
	return "per heartbeat: one request's round trip"
}

func cpuSeconds(ru *syscall.Rusage) float64 {
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// runner holds a run's shared state.
type runner struct {
	cfg    *Config
	w      *Workload
	d      driver
	hd     *httpDriver // d when it is the HTTP driver, else nil
	st     *stats
	ops    *opTable
	nodes  []*Node
	mem    *memSampler // the server's memory and CPU samples (HTTP only)
	rep    *Report
	start  time.Time
	stop   atomic.Bool
	budget atomic.Int64

	mu        sync.Mutex
	perSecond []int64
}

// now returns the time since the heartbeats started.
func (r *runner) now() time.Duration { return time.Since(r.start) }

// sleepUntil sleeps until t (since start) in slices of at most 100 ms,
// so that a stop is noticed; it reports false when the run stops.
func (r *runner) sleepUntil(t time.Duration) bool {
	for {
		if r.stop.Load() {
			return false
		}
		d := t - r.now()
		if d <= 0 {
			return true
		}
		time.Sleep(min(d, 100*time.Millisecond))
	}
}

// work plays nodes from driver goroutine wi until the run stops: one
// heartbeat per request, or Config.Batch of its nodes per request, in turn.
func (r *runner) work(wi int, nodes []*Node) {
	if len(nodes) == 0 {
		return
	}
	hb := r.d.newWorker(wi)
	c := &r.st.workers[wi]
	h := r.st.hists[wi]
	k := max(r.cfg.Batch, 1)
	ds := make([]Decisions, k)
	errs := make([]*hbError, k)
	before := make([]int, k)
	period := r.cfg.HeartbeatPeriod
	var interval, next time.Duration
	if r.cfg.Rate > 0 {
		interval = seconds(float64(r.cfg.Connections*k) / r.cfg.Rate)
		next = time.Duration(wi) * interval / time.Duration(r.cfg.Connections)
	}
	if period > 0 {
		// Spread the nodes' first heartbeats over one period.
		for j, n := range nodes {
			n.next = time.Duration(j) * period / time.Duration(len(nodes))
		}
	}
	for at := 0; !r.stop.Load(); at += k {
		if at >= len(nodes) {
			at = 0
		}
		group := nodes[at:min(at+k, len(nodes))]
		if period > 0 && group[0].next > r.now() && !r.sleepUntil(group[0].next) {
			return
		}
		if interval > 0 {
			if !r.sleepUntil(next) {
				return
			}
			next += interval
			if now := r.now(); now-next > time.Second {
				next = now // far behind: do not burst to catch up
			}
		}
		if r.budget.Add(-int64(len(group))) < 0 {
			r.stop.Store(true)
			return
		}
		now := r.now()
		for i, n := range group {
			before[i] = n.Running()
			n.Prepare(now)
			errs[i] = nil
		}
		t0 := time.Now()
		hb.heartbeat(group, ds, errs)
		lat := time.Since(t0)
		var t totals // this request's, added to the worker's counters once
		failed := 0
		after := r.now()
		for i, n := range group {
			if err := errs[i]; err != nil {
				n.Failed()
				failed++
				t.running += int64(n.Running() - before[i])
				r.st.error(wi, err.kind, err.msg)
				continue
			}
			d := &ds[i]
			completed, aborted := n.Acknowledge(r.ops)
			n.Apply(after, d, r.ops)
			if period > 0 {
				n.next = now + period
			}
			t.heartbeats++
			t.started += int64(len(d.Start))
			t.completed += int64(completed)
			t.abortedReported += int64(aborted)
			t.preempted += int64(len(d.Preempt))
			t.aborts += int64(len(d.Abort))
			t.running += int64(n.Running() - before[i])
		}
		c.add(&t)
		if failed == len(group) {
			// The request failed (or every heartbeat of it): pause.
			time.Sleep(time.Millisecond)
			continue
		}
		_ = h.RecordValue(max(int64(lat), 1))
		c.requests.Add(1)
	}
}

// control replaces completed operations by the next generation of their
// slot, until the run stops.
func (r *runner) control(ctx context.Context) {
	for {
		var slot int32
		select {
		case <-ctx.Done():
			return
		case slot = <-r.ops.finished:
		}
		r.ops.dequeue(slot)
		gen := r.ops.gen[slot].Load() + 1
		spec := r.w.Operation(int(slot), gen)
		r.ops.prepare(slot, gen, Jobs(&spec))
		pending, err := r.d.startOperation(&spec)
		if err != nil {
			r.st.error(-1, "control start_operation", err.Error())
			// Try the slot again later (its generation moves on).
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			r.ops.enqueue(slot)
			continue
		}
		r.ops.admitted(slot, pending)
	}
}

// progress records the heartbeats of every second and prints a progress
// line (Config.Progress) until the run stops.
func (r *runner) progress(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last totals
	var lastSec int64
	for sec := 1; ; sec++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := r.st.sum()
		r.mu.Lock()
		r.perSecond = append(r.perSecond, cur.heartbeats-lastSec)
		r.mu.Unlock()
		lastSec = cur.heartbeats
		every := max(int(r.cfg.ProgressEvery/time.Second), 1)
		if r.cfg.Progress == nil || sec%every != 0 {
			continue
		}
		r.cfg.Progress(fmt.Sprintf("loadgen: %3ds %7d heartbeats/s  running allocations %7d  started %6d/s  completed %6d/s  preempted %d  operations pending %d, completed %d, to replace %d  errors %d",
			sec, (cur.heartbeats-last.heartbeats)/int64(every), cur.running, (cur.started-last.started)/int64(every), (cur.completed-last.completed)/int64(every),
			cur.preempted, r.ops.pendingCount.Load(), r.ops.completedOps.Load(), len(r.ops.finished), cur.errors))
		last = cur
	}
}
