package sim

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
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
	finished []job

	rec recorder
}

type simNode struct {
	name   string
	limits resource.Vec
	jobs   []job
}

type job struct {
	alloc     uint64
	op        *simOp
	task      int
	res       resource.Vec // what the start gave it
	start     clock.Time
	end       clock.Time // natural completion
	preempted bool
	stopAt    clock.Time // when a preempted job stops (reported aborted)
}

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
	e.sched = schedule.New(tree.New(tree.PoolConfig{}), sc.Scheduler)
	if len(sc.Pools) > 0 {
		if _, err := e.sched.ApplyPools(sc.Pools...); err != nil {
			return nil, fmt.Errorf("sim: cannot create the pool tree: %w", err)
		}
	}
	e.pools = e.sched.Pools(e.pools[:0])
	e.rec.init(sc, e.pools)

	for _, g := range sc.Nodes {
		for range g.Count {
			e.nodes = append(e.nodes, simNode{name: "node-" + strconv.Itoa(len(e.nodes)), limits: g.Resources})
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
		if t >= e.end {
			break
		}
		switch {
		case len(e.queue) > 0 && e.queue[0].t == t:
			a := heap.Pop(&e.queue).(arrival)
			e.arrive(t, a)
		case e.hbTime() == t:
			i := e.hbNext % len(e.nodes)
			e.hbNext++
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
	reports := e.hb.Allocations[:0]
	origins := e.hb.AllocationOrigins[:0]
	kept := n.jobs[:0]
	finished := e.finished[:0]
	for _, j := range n.jobs {
		switch {
		case j.end <= t:
			reports = append(reports, schedule.AllocationReport{ID: j.alloc, State: schedule.AllocCompleted})
			finished = append(finished, j)
		case j.preempted && j.stopAt <= t:
			reports = append(reports, schedule.AllocationReport{ID: j.alloc, State: schedule.AllocAborted})
			finished = append(finished, j)
		default:
			// With its origin, as nodes should report it (docs/api.md#node-heartbeats).
			reports = append(reports, schedule.AllocationReport{ID: j.alloc, State: schedule.AllocRunning, HasOrigin: true})
			for len(origins) < len(reports)-1 {
				origins = append(origins, schedule.AllocationOrigin{})
			}
			origins = append(origins, schedule.AllocationOrigin{Operation: j.op.idBytes, Task: j.task, Resources: j.res})
			kept = append(kept, j)
		}
	}
	e.hb = schedule.NodeHeartbeat{Node: n.name, Limits: n.limits, Allocations: reports, AllocationOrigins: origins}
	e.resp.Reset()
	if err := e.sched.Heartbeat(t, &e.hb, &e.resp); err != nil {
		return fmt.Errorf("sim: heartbeat of %s at %v s: %w", n.name, t.Seconds(), err)
	}
	n.jobs = kept
	for _, j := range finished {
		if j.end <= t {
			e.jobCompleted(t, j)
		} else {
			e.jobReturned(t, j)
		}
	}
	for _, ab := range e.resp.Abort {
		k := slices.IndexFunc(n.jobs, func(j job) bool { return j.alloc == ab.Allocation })
		if k < 0 {
			continue
		}
		j := n.jobs[k]
		n.jobs = slices.Delete(n.jobs, k, k+1)
		e.rec.count(j.op.work.pool, func(p *poolRec) *int64 { return &p.jobsAborted })
		switch ab.Reason {
		case schedule.AbortPreemptionTimedOut, schedule.AbortNodeOvercommit:
			// The scheduler released the allocation: its job is pending again.
			e.jobReturned(t, j)
		}
	}
	for _, p := range e.resp.Preempt {
		k := slices.IndexFunc(n.jobs, func(j job) bool { return j.alloc == p.Allocation })
		if k < 0 || n.jobs[k].preempted {
			continue
		}
		j := &n.jobs[k]
		j.preempted = true
		j.stopAt = t
		if e.sc.StopAtTimeout {
			j.stopAt = t.Add(p.Timeout)
		}
		e.rec.preempted(j.op.work.pool, p, e.poolOf(p.ForOperation))
	}
	for _, st := range e.resp.Start {
		o := e.ops[st.Operation]
		if o == nil {
			return fmt.Errorf("sim: heartbeat of %s started a job of unknown operation %q", n.name, st.Operation)
		}
		ws := o.work
		d := drawDuration(&ws.tasks[st.Task], ws.w.Tasks[st.Task].Duration)
		n.jobs = append(n.jobs, job{alloc: st.Allocation, op: o, task: st.Task, res: st.Resources, start: t, end: t.Add(d)})
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

func (e *engine) jobCompleted(t clock.Time, j job) {
	o := j.op
	e.rec.count(o.work.pool, func(p *poolRec) *int64 { return &p.jobsCompleted })
	o.unfinished--
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
func (e *engine) jobReturned(t clock.Time, j job) {
	o := j.op
	o.tasks[j.task] = append(o.tasks[j.task], pendingRun{t: t, n: 1})
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
		} else {
			kept = append(kept, id)
		}
	}
	e.forget = kept
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
