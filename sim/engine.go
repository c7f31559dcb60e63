package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// Virtual time is the core's clock.Time (whole microseconds), so that periods
// add up exactly and a run is reproducible bit for bit. The scenario's
// seconds are converted once, by seconds.
func seconds(s float64) clock.Duration { return clock.DurationFromSeconds(s) }

// at is the instant s seconds into the run.
func at(s float64) clock.Time { return clock.FromSeconds(s) }

func cores(x int64) float64 { return float64(x) / resource.CPUScale }
func absolute(share float64, total int64, r int) float64 {
	if r == int(resource.CPU) {
		return share * cores(total)
	}
	return share * float64(total)
}

// engine is one run of a scenario. It drives the scheduler through the entry
// points a server uses (StartOperation, Heartbeat, UpdateFairShare) on a
// single goroutine, so that the run is a pure function of the scenario.
type engine struct {
	sc    *Scenario
	sched *schedule.Scheduler
	end   clock.Time

	nodes  []simNode
	phase  []clock.Duration // heartbeat phase of each node within a period
	hbNext int              // index of the next heartbeat: node hbNext%len, period hbNext/len

	works  []workState
	ops    map[string]*simOp
	forget []string // finished operations to drop from the scheduler
	queue  arrivalQueue
	seq    uint64

	resp    schedule.Response
	hb      schedule.NodeHeartbeat
	pools   []schedule.PoolInfo
	opInfos []schedule.OperationInfo
	// finished is heartbeat scratch: the jobs a node reports as done.
	finished []jobAlloc

	rec recorder

	// A trace replay streams its jobs from trace: next is the one to
	// arrive, live the trace operations that will finish.
	trace     TraceReader
	traceNext TraceJob
	traceMore bool
	origin    float64 // the trace's first submit time: time 0
	live      int
	byPool    map[string]int // workload index of each trace pool
	// pending counts the jobs waiting to start; a trace replay skips the
	// heartbeats that cannot change anything (see idleHeartbeat).
	pending   int64
	keepAlive clock.Duration
	// progress is when a trace job last arrived, started or finished;
	// maxRun the longest finite run time seen; ended why the replay ended.
	progress clock.Time
	maxRun   clock.Duration
	ended    string
	// dirty says that something the fair share depends on changed since
	// the last update; integral says that the tree has integral pools.
	dirty, integral bool
}

// simNode is a node of the cluster: a coretest.Node agent that runs jobs
// until their end and stops a preempted one at once (or at its timeout,
// with StopAtTimeout).
type simNode struct {
	name   string
	limits resource.Vec
	tags   []string
	agent  coretest.Node[uint64, job]
	sent   clock.Time // the last heartbeat sent
}

// job is what the simulation keeps of a running allocation; the agent keeps
// its end (the natural completion) and its preemption.
type job struct {
	op    *simOp
	task  int
	res   resource.Vec // what the start gave it
	start clock.Time
}

// jobAlloc is an allocation of a simulated node.
type jobAlloc = coretest.Alloc[uint64, job]

type workState struct {
	w        *Workload
	index    int
	pool     int // index into the recorder's pools
	arrivals rng.Rand
	tasks    []rng.Rand // job durations, one stream per task
	inFlight int        // unfinished operations (concurrent arrivals)
	started  int
}

type simOp struct {
	id         string
	idBytes    []byte // id, for the reports' origins
	work       *workState
	unfinished int64
	tasks      [][]pendingRun // per task: when its pending jobs became pending, FIFO
	taskHead   []int
	trace      *traceOp
}

// traceOp is what a trace job's operation tracks for the report.
type traceOp struct {
	submit    clock.Time
	run       clock.Duration
	forever   bool
	runS      float64
	recorded  float64 // the production wait, -1 unknown
	lastStart clock.Time
	lastEnd   clock.Time
	started   int64
}

// pendingRun is n jobs that became pending at t.
type pendingRun struct {
	t clock.Time
	n int64
}

// arrival is an event of the workload: an operation to start, or the opening
// of a concurrent workload's window.
type arrival struct {
	t      clock.Time
	seq    uint64
	work   int
	window bool
}

type arrivalQueue []arrival

func (q arrivalQueue) Len() int { return len(q) }
func (q arrivalQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q arrivalQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *arrivalQueue) Push(x any)   { *q = append(*q, x.(arrival)) }
func (q *arrivalQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func (e *engine) push(t clock.Time, work int, window bool) {
	e.seq++
	heap.Push(&e.queue, arrival{t: t, seq: e.seq, work: work, window: window})
}

// Run simulates the scenario and returns what it recorded. The result
// depends only on the scenario (its seed included): equal scenarios give
// equal results.
func Run(sc *Scenario) (*Result, error) {
	e := &engine{sc: sc, end: at(sc.DurationS), ops: make(map[string]*simOp)}
	if sc.Trace != nil {
		if sc.DurationS == 0 {
			e.end = clock.Never
		}
		r, c, err := sc.Trace.Open()
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		defer c.Close()
		e.trace, e.origin = r, sc.Trace.Info.FirstS
		e.keepAlive = sc.Scheduler.NodeHeartbeatTimeout / 2
		for _, m := range sc.Pools {
			e.integral = e.integral || m.Pool.Integral.Type != tree.GuaranteeNone
		}
		e.byPool = make(map[string]int, len(sc.Workload))
		for i := range sc.Workload {
			e.byPool[sc.Workload[i].Pool] = i
		}
		if err := e.pullTrace(); err != nil {
			return nil, err
		}
	}
	e.sched = schedule.New(tree.New(tree.PoolConfig{}), sc.Scheduler)
	if len(sc.Pools) > 0 {
		if _, err := e.sched.ApplyPools(sc.Pools...); err != nil {
			return nil, fmt.Errorf("sim: cannot create the pool tree: %w", err)
		}
	}
	e.pools = e.sched.Pools(e.pools[:0])
	e.rec.init(sc, e.pools, e.end)

	for gi, g := range sc.Nodes {
		var tags []string
		if gi < len(sc.NodeTags) {
			tags = sc.NodeTags[gi]
		}
		for range g.Count {
			e.nodes = append(e.nodes, simNode{name: "node-" + strconv.Itoa(len(e.nodes)), limits: g.Resources, tags: tags})
		}
	}
	period := seconds(sc.HeartbeatPeriodS)
	for i := range e.nodes {
		// Nodes heartbeat staggered over the period, as real ones do.
		e.phase = append(e.phase, period*clock.Duration(i)/clock.Duration(len(e.nodes)))
	}

	master := rng.New(sc.Seed)
	e.works = make([]workState, len(sc.Workload))
	for i := range sc.Workload {
		w := &sc.Workload[i]
		ws := &e.works[i]
		ws.w, ws.index = w, i
		ws.pool = e.rec.poolIndex(w.Pool)
		ws.arrivals = master.Fork()
		for range w.Tasks {
			ws.tasks = append(ws.tasks, master.Fork())
		}
		e.scheduleArrivals(i)
	}

	// Registration: every node heartbeats once before the first update, so
	// that the first fair-share update sees the whole cluster. With a
	// warm-up, the first update runs at -warm_up_s on the idle cluster and
	// the nodes heartbeat again at 0 to stay registered across the gap.
	start := at(-sc.WarmUpS)
	e.heartbeatAll(start)
	e.update(start)
	if start < 0 {
		e.heartbeatAll(0)
	}
	fsPeriod := seconds(sc.FairShareUpdatePeriodS)
	nextUpdate := clock.Time(0)
	if start == 0 {
		nextUpdate = nextUpdate.Add(fsPeriod)
	}
	for {
		t := min(nextUpdate, e.hbTime())
		if len(e.queue) > 0 {
			t = min(t, e.queue[0].t)
		}
		if e.traceMore {
			t = min(t, e.traceTime())
		}
		if t >= e.end {
			e.ended = EndedDuration
			break
		}
		if e.trace != nil && !e.traceMore {
			if e.live == 0 {
				e.ended = EndedDone
				break
			}
			if t.Sub(e.progress) > e.maxRun+stallMargin {
				// No job started or finished for longer than the longest
				// run: nothing runs that will finish, and what waits
				// cannot start (jobs still running at the trace's end
				// hold what it needs).
				e.ended = EndedStalled
				break
			}
		}
		switch {
		case e.traceMore && e.traceTime() == t:
			if err := e.traceArrive(t); err != nil {
				return nil, err
			}
		case len(e.queue) > 0 && e.queue[0].t == t:
			a := heap.Pop(&e.queue).(arrival)
			e.arrive(t, a)
		case e.hbTime() == t:
			i := e.hbNext % len(e.nodes)
			e.hbNext++
			if e.trace != nil && skipIdle && e.idleHeartbeat(t, i) {
				e.rec.stats.SkippedHeartbeats++
				continue
			}
			if err := e.heartbeat(t, i); err != nil {
				return nil, err
			}
		default:
			e.update(t)
			nextUpdate = nextUpdate.Add(fsPeriod)
		}
	}
	return e.rec.result(e), nil
}

// Why a trace replay ended (TraceReport.Ended).
const (
	EndedDone     = "every job that could finish finished"
	EndedDuration = "duration_s reached"
	EndedStalled  = "stalled: the jobs left wait for resources that jobs running at the trace's end hold"
)

// stallMargin is how long past the longest run time a replay waits for
// progress before it calls itself stalled.
const stallMargin = clock.Duration(3600 * clock.Second)

// skipIdle lets trace replays skip the heartbeats and fair-share updates
// that cannot change anything; tests turn it off to prove that skipping
// changes no result.
var skipIdle = true

// idleHeartbeat reports whether node i's heartbeat at t cannot change
// anything: no job waits to start anywhere (so no start and no preemption
// can follow), none of the node's jobs has ended or stopped, and the node
// heartbeated less than half the core's node_heartbeat_timeout_s ago (so
// it stays registered). A trace replay skips such heartbeats: months of
// an idle cluster's heartbeats would cost most of its time and change no
// result.
func (e *engine) idleHeartbeat(t clock.Time, i int) bool {
	n := &e.nodes[i]
	if e.pending > 0 || t.Sub(n.sent) >= e.keepAlive {
		return false
	}
	return !n.agent.Due(t)
}

// pullTrace reads the trace's next job.
func (e *engine) pullTrace() error {
	j, err := e.trace.Next()
	if err == io.EOF {
		e.traceMore = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	e.traceNext, e.traceMore = j, true
	return nil
}

// traceTime is when the next trace job arrives.
func (e *engine) traceTime() clock.Time { return at(e.traceNext.SubmitS - e.origin) }

// traceArrive starts the next trace job's operation at t and reads the one
// after it.
func (e *engine) traceArrive(t clock.Time) error {
	j := &e.traceNext
	ws := &e.works[e.byPool[j.Pool]]
	e.rec.traceSubmitted(ws.pool)
	fits := false
	for i := range e.nodes {
		n := &e.nodes[i]
		if n.limits.Dominates(j.Resources) && (j.Filter.IsEmpty() || j.Filter.Match(n.tags)) {
			fits = true
			break
		}
	}
	if !fits {
		e.rec.skip("larger than every node of the configured cluster")
		return e.pullTrace()
	}
	spec := schedule.OperationSpec{Pool: ws.w.Pool, Type: "vanilla", IsGang: j.Gang, SchedulingTagFilter: j.Filter,
		Tasks: []schedule.TaskSpec{{Name: "job", JobCount: j.Jobs, Resources: j.Resources}}}
	if j.Jobs > 1 {
		spec.Type = "map"
	}
	id, _, err := e.sched.StartOperation(t, spec)
	if err != nil {
		e.rec.count(ws.pool, func(p *poolRec) *int64 { return &p.opsRejected })
		reason := "rejected by the scheduler: " + err.Error()
		if le := (*limits.LimitError)(nil); errors.As(err, &le) {
			reason = "rejected by the scheduler's operation limits"
		}
		e.rec.skip(reason)
		return e.pullTrace()
	}
	e.rec.count(ws.pool, func(p *poolRec) *int64 { return &p.opsStarted })
	ws.started++
	ws.inFlight++
	o := &simOp{id: id, idBytes: []byte(id), work: ws, tasks: [][]pendingRun{{{t: t, n: j.Jobs}}}, taskHead: []int{0}, unfinished: j.Jobs}
	o.trace = &traceOp{submit: t, run: seconds(j.RunS), forever: j.Forever, runS: j.RunS, recorded: j.RecordedWaitS}
	e.progress = t
	if !j.Forever {
		e.maxRun = max(e.maxRun, o.trace.run)
	}
	e.pending += j.Jobs
	e.dirty = true
	if !j.Forever {
		e.live++
	}
	e.ops[id] = o
	return e.pullTrace()
}

// hbTime is the time of the next regular heartbeat.
func (e *engine) hbTime() clock.Time {
	n := len(e.nodes)
	period := seconds(e.sc.HeartbeatPeriodS)
	return clock.Time(0).Add(clock.Duration(e.hbNext/n)*period + e.phase[e.hbNext%n])
}

// scheduleArrivals queues the arrivals of workload i.
func (e *engine) scheduleArrivals(i int) {
	ws := &e.works[i]
	a := &ws.w.Arrivals
	for base := 0.0; base < e.sc.DurationS; base += a.RepeatEveryS {
		lo, hi := base+a.StartS, base+a.EndS
		switch a.Kind {
		case ArriveAt:
			for _, t := range a.AtS {
				e.pushIn(base+t, i)
			}
		case ArriveEvery:
			for k := 0.0; lo+k*a.EveryS < hi; k++ {
				e.pushIn(lo+k*a.EveryS, i)
			}
		case ArrivePoisson:
			mean := 3600 / a.RatePerHour
			for t := lo + mean*ws.arrivals.ExpFloat64(); t < hi; t += mean * ws.arrivals.ExpFloat64() {
				e.pushIn(t, i)
			}
		case ArriveConcurrent:
			if t := at(lo); t < e.end {
				e.push(t, i, true)
			}
		}
		if a.RepeatEveryS == 0 {
			break
		}
	}
}

func (e *engine) pushIn(s float64, work int) {
	if t := at(s); t >= 0 && t < e.end {
		e.push(t, work, false)
	}
}

// inWindow reports whether t lies in one of workload w's arrival windows.
func inWindow(a *Arrivals, t clock.Time) bool {
	s := t.Seconds()
	if a.RepeatEveryS > 0 {
		s = math.Mod(s, a.RepeatEveryS)
	}
	return s >= a.StartS && s < a.EndS
}

func (e *engine) arrive(t clock.Time, a arrival) {
	ws := &e.works[a.work]
	if a.window {
		for ws.inFlight < ws.w.Arrivals.Concurrent {
			if !e.startOp(t, ws) {
				return
			}
		}
		return
	}
	e.startOp(t, ws)
}

// startOp starts one operation of ws; it reports whether the scheduler
// accepted it.
func (e *engine) startOp(t clock.Time, ws *workState) bool {
	w := ws.w
	spec := schedule.OperationSpec{Pool: w.Pool, Type: w.Type, Weight: w.Weight, PreemptionMode: w.PreemptionMode}
	spec.Tasks = make([]schedule.TaskSpec, len(w.Tasks))
	for i, tk := range w.Tasks {
		spec.Tasks[i] = schedule.TaskSpec{Name: tk.Name, JobCount: tk.JobCount, Resources: tk.Resources}
	}
	id, _, err := e.sched.StartOperation(t, spec)
	if err != nil {
		// Too many operations in the pool (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations) and the like: the
		// simulated user sees the rejection; the run goes on.
		e.rec.count(ws.pool, func(p *poolRec) *int64 { return &p.opsRejected })
		return false
	}
	e.rec.count(ws.pool, func(p *poolRec) *int64 { return &p.opsStarted })
	ws.started++
	ws.inFlight++
	o := &simOp{id: id, idBytes: []byte(id), work: ws, tasks: make([][]pendingRun, len(w.Tasks)), taskHead: make([]int, len(w.Tasks))}
	for i, tk := range w.Tasks {
		o.tasks[i] = append(o.tasks[i], pendingRun{t: t, n: tk.JobCount})
		o.unfinished += tk.JobCount
	}
	e.ops[id] = o
	return true
}

// heartbeatAll heartbeats every node at t (registration).
func (e *engine) heartbeatAll(t clock.Time) {
	for i := range e.nodes {
		if err := e.heartbeat(t, i); err != nil {
			panic("BUG: registration heartbeat failed: " + err.Error())
		}
	}
}

// heartbeat sends node i's heartbeat at t and carries out the answer.
func (e *engine) heartbeat(t clock.Time, i int) error {
	n := &e.nodes[i]
	n.sent = t
	reports := e.hb.Allocations[:0]
	origins := e.hb.AllocationOrigins[:0]
	finished := e.finished[:0]
	n.agent.Advance(t, nil)
	for _, a := range n.agent.Allocs() {
		switch a.State {
		case coretest.AllocCompleted:
			reports = append(reports, schedule.AllocationReport{ID: a.ID, State: schedule.AllocCompleted})
			finished = append(finished, a)
		case coretest.AllocAborted:
			reports = append(reports, schedule.AllocationReport{ID: a.ID, State: schedule.AllocAborted})
			finished = append(finished, a)
			e.rec.lostWork(a.Meta.op.work.pool, t.Sub(a.Meta.start), a.Meta.res)
		default:
			// With its origin, as nodes should report it (docs/api.md#node-heartbeats).
			reports = append(reports, schedule.AllocationReport{ID: a.ID, State: schedule.AllocRunning, HasOrigin: true})
			for len(origins) < len(reports)-1 {
				origins = append(origins, schedule.AllocationOrigin{})
			}
			origins = append(origins, schedule.AllocationOrigin{Operation: a.Meta.op.idBytes, Task: a.Meta.task, Resources: a.Meta.res})
		}
	}
	e.hb = schedule.NodeHeartbeat{Node: n.name, Limits: n.limits, Tags: n.tags, Allocations: reports, AllocationOrigins: origins}
	e.resp.Reset()
	if err := e.sched.Heartbeat(t, &e.hb, &e.resp); err != nil {
		return fmt.Errorf("sim: heartbeat of %s at %v s: %w", n.name, t.Seconds(), err)
	}
	n.agent.Delivered(nil)
	if len(finished) > 0 || len(e.resp.Start) > 0 || len(e.resp.Preempt) > 0 || len(e.resp.Abort) > 0 {
		e.dirty = true
	}
	for k := range finished {
		if a := &finished[k]; a.State == coretest.AllocCompleted {
			e.jobCompleted(t, a)
		} else {
			e.jobReturned(t, a)
		}
	}
	for _, ab := range e.resp.Abort {
		a, held := n.agent.Abort(ab.Allocation)
		if !held {
			continue
		}
		e.rec.count(a.Meta.op.work.pool, func(p *poolRec) *int64 { return &p.jobsAborted })
		switch ab.Reason {
		case schedule.AbortPreemptionTimedOut, schedule.AbortNodeOvercommit:
			// The scheduler released the allocation: its job is pending again.
			e.rec.lostWork(a.Meta.op.work.pool, t.Sub(a.Meta.start), a.Meta.res)
			e.jobReturned(t, &a)
		}
	}
	for _, p := range e.resp.Preempt {
		a := n.agent.Preempt(t, p.Allocation)
		if a == nil {
			continue
		}
		if e.sc.StopAtTimeout {
			a.StopAt = t.Add(p.Timeout)
		}
		e.rec.preempted(a.Meta.op.work.pool, p, e.poolOf(p.ForOperation))
	}
	for _, st := range e.resp.Start {
		o := e.ops[st.Operation]
		if o == nil {
			return fmt.Errorf("sim: heartbeat of %s started a job of unknown operation %q", n.name, st.Operation)
		}
		ws := o.work
		var end clock.Time
		if tr := o.trace; tr != nil {
			end = t.Add(tr.run)
			if tr.forever {
				end = clock.Never
			}
			tr.lastStart = max(tr.lastStart, t)
			e.progress = t
			tr.started++
		} else {
			end = t.Add(drawDuration(&ws.tasks[st.Task], ws.w.Tasks[st.Task].Duration))
		}
		n.agent.Start(st.Allocation, end, job{op: o, task: st.Task, res: st.Resources, start: t})
		e.pending--
		since := o.popPending(st.Task)
		if since < 0 {
			since = t
		}
		e.rec.jobStarted(ws.pool, t.Sub(since))
	}
	e.hb.Allocations = reports[:0]
	e.finished = finished[:0]
	return nil
}

// poolOf returns the recorder index of an operation's pool, or -1.
func (e *engine) poolOf(op string) int {
	if o := e.ops[op]; o != nil {
		return o.work.pool
	}
	return -1
}

func (e *engine) jobCompleted(t clock.Time, j *jobAlloc) {
	o := j.Meta.op
	e.rec.count(o.work.pool, func(p *poolRec) *int64 { return &p.jobsCompleted })
	o.unfinished--
	if tr := o.trace; tr != nil {
		tr.lastEnd = max(tr.lastEnd, j.End)
		e.progress = t
		if o.unfinished == 0 {
			e.live--
			e.rec.traceCompleted(o.work.pool, tr)
		}
	}
	if o.unfinished == 0 {
		ws := o.work
		ws.inFlight--
		e.rec.count(ws.pool, func(p *poolRec) *int64 { return &p.opsCompleted })
		e.forget = append(e.forget, o.id)
		if ws.w.Arrivals.Kind == ArriveConcurrent && inWindow(&ws.w.Arrivals, t) {
			e.push(t, ws.index, false)
		}
	}
}

// jobReturned records that a job stopped before completing: it is pending
// again (core/schedule returns it to its task).
func (e *engine) jobReturned(t clock.Time, j *jobAlloc) {
	o := j.Meta.op
	o.tasks[j.Meta.task] = append(o.tasks[j.Meta.task], pendingRun{t: t, n: 1})
	e.pending++
}

// popPending takes the longest-pending job of task i and returns when it
// became pending.
func (o *simOp) popPending(i int) clock.Time {
	runs := o.tasks[i]
	h := o.taskHead[i]
	if h >= len(runs) {
		// NB: the scheduler started a job the simulation did not see
		// return to pending (a release it was not told about); count it
		// as not having waited rather than failing the run.
		return -1
	}
	t := runs[h].t
	runs[h].n--
	if runs[h].n == 0 {
		o.taskHead[i]++
		if o.taskHead[i] > 64 && o.taskHead[i]*2 > len(runs) {
			n := copy(runs, runs[o.taskHead[i]:])
			o.tasks[i] = runs[:n]
			o.taskHead[i] = 0
		}
	}
	return t
}

// drawDuration draws a job duration (at least 1 ms).
func drawDuration(r *rng.Rand, d Dist) clock.Duration {
	var s float64
	switch d.Kind {
	case DistFixed:
		s = d.A
	case DistUniform:
		s = d.A + (d.B-d.A)*r.Float64()
	case DistExponential:
		s = d.A * r.ExpFloat64()
	case DistLognormal:
		s = d.A * math.Exp(d.B*r.NormFloat64())
	}
	return max(clock.Millisecond, seconds(min(s, maxSeconds)))
}

// update runs the fair-share update at t and records the cluster's state.
func (e *engine) update(t clock.Time) {
	// Drop finished operations from the scheduler's table; one that still
	// settles (an allocation not yet reported) is tried again next time.
	kept := e.forget[:0]
	for _, id := range e.forget {
		if e.sched.ForgetOperation(id) == nil {
			delete(e.ops, id)
			e.dirty = true
		} else {
			kept = append(kept, id)
		}
	}
	e.forget = kept
	if e.trace != nil && skipIdle && !e.dirty && e.pending == 0 && !e.integral && len(e.forget) == 0 && t > 0 {
		// Nothing changed since the last update and no job waits: the
		// update would give the same fair shares (see idleUpdate).
		e.rec.repeat(e, t)
		return
	}
	e.dirty = false
	e.sched.UpdateFairShare(t)
	if t < 0 {
		return
	}
	e.pools = e.sched.Pools(e.pools[:0])
	total := e.sched.Total()
	if e.rec.observe(e, t, total, e.pools) {
		e.opInfos = e.sched.Operations(e.opInfos[:0])
		e.rec.observeWorkloads(e, t, total, e.opInfos)
	}
}
