package scenario

import (
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// coreTime converts a script time (float64 seconds) to the core's clock.Time,
// the time argument of its entry points (StartOperation, Heartbeat,
// UpdateFairShare): the runner's one conversion.
func coreTime(s float64) clock.Time { return clock.FromSeconds(s) }

// Cluster is a simulated cluster on virtual time driven by script commands:
// a schedule.Scheduler, simulated nodes that run what they are told to start
// and report it finished, and the log of every decision. It is not safe for
// concurrent use.
//
// Simulated nodes are coretest.Node agents: they run an allocation until its
// task's duration passed (never, for a task without one) and report it
// completed at their first heartbeat at or after that time; they stop a
// preempted allocation stop_delay seconds after being told (0: at their next
// heartbeat; never, when negative) and report it aborted. A report is
// delivered once; an allocation the scheduler tells a node to abort is gone
// from the node at once. A node reports the resource_usage of a running
// allocation once a script set one (usage), and lists nothing of an
// allocation it was made to forget (forget).
type Cluster struct {
	s         *schedule.Scheduler
	now       float64 // script seconds
	nodes     []simNode
	byName    map[string]int
	durations map[string][]float64 // operation → its tasks' durations
	// requested holds the resources each running allocation was started
	// with, so that the node view can show a usage that differs.
	requested map[uint64]resource.Vec
	resp      schedule.Response
	reports   []schedule.AllocationReport // scratch: NodeHeartbeat.Allocations
	usage     []resource.Vec              // scratch: NodeHeartbeat.AllocationUsage
	events    []Event
}

type simNode struct {
	name      string
	limits    resource.Vec
	stopDelay float64 // < 0: never stops a preempted allocation
	tags      []string
	// unschedulable cordons the node in its heartbeats.
	unschedulable bool
	agent         coretest.Node[uint64, simAlloc]
	// extra are reports the next heartbeat lists after the agent's (report).
	extra []extraReport
}

type simAlloc struct {
	op string
	// usage is reported as the allocation's resource_usage while it runs
	// and in its final report, when hasUsage.
	usage    resource.Vec
	hasUsage bool
	// finished says that a script ended it (finish): its report is logged
	// when delivered.
	finished bool
}

// extraReport is a report a script adds to a node's next heartbeat.
type extraReport struct {
	id       uint64
	state    schedule.AllocationState
	usage    resource.Vec
	hasUsage bool
}

// EventKind is what an Event records.
type EventKind uint8

// Event kinds: the scheduler's decisions, and what simulated nodes report.
const (
	// EventStart, EventPreempt and EventAbort are decisions of a heartbeat's answer.
	EventStart EventKind = iota
	EventPreempt
	EventAbort
	// EventCompleted: a node reports an allocation's job completed.
	EventCompleted
	// EventStopped: a node reports a preempted allocation stopped, or an
	// allocation a script ended as aborted (finish).
	EventStopped
	// EventFailed and EventRefused: a node reports an allocation that a
	// script ended as failed or refused (finish).
	EventFailed
	EventRefused
)

var eventKindNames = [...]string{"start", "preempt", "abort", "completed", "stopped", "failed", "refused"}

func (k EventKind) String() string { return eventKindNames[k] }

// Event is one entry of the cluster's log. Start, Preempt and Abort hold the
// decision of the matching kind.
type Event struct {
	T          float64 // script seconds
	Node       string
	Kind       EventKind
	Allocation uint64
	Operation  string
	Start      schedule.StartDecision
	Preempt    schedule.PreemptDecision
	Abort      schedule.AbortDecision
}

// New returns an empty cluster at time 0 whose scheduler has the default
// configuration and a root pool with the default configuration.
func New() *Cluster {
	return &Cluster{
		s:         schedule.New(tree.New(tree.PoolConfig{}), schedule.DefaultConfig()),
		byName:    map[string]int{},
		durations: map[string][]float64{},
		requested: map[uint64]resource.Vec{},
	}
}

// Scheduler returns the scheduler under test, for checks a script cannot express.
func (c *Cluster) Scheduler() *schedule.Scheduler { return c.s }

// Now returns the current virtual time in seconds.
func (c *Cluster) Now() float64 { return c.now }

// Events returns the log of every decision and node report so far, in order.
// The slice is the cluster's own: callers must not modify it.
func (c *Cluster) Events() []Event { return c.events }

// Run parses the script and runs it on a new cluster; the returned script
// holds each command's actual output (see coretest.Script's Diff and Rewrite).
func Run(name, text string) (*coretest.Script, error) {
	s, err := coretest.ParseScript(name, text)
	if err != nil {
		return nil, err
	}
	c := New()
	return s, s.Run(c.Exec)
}

// setTime moves the virtual clock to t; it never goes back.
func (c *Cluster) setTime(t float64) error {
	if t < c.now {
		return errorf("cannot move the time back from %g to %g", c.now, t)
	}
	c.now = t
	return nil
}

func (c *Cluster) update() { c.s.UpdateFairShare(coreTime(c.now)) }

// heartbeatAll sends one heartbeat per node in the order the nodes were added.
func (c *Cluster) heartbeatAll() error {
	for i := range c.nodes {
		if err := c.heartbeat(i); err != nil {
			return err
		}
	}
	return nil
}

// rejectedHeartbeat is the scheduler's rejection of a node's heartbeat,
// which the heartbeat command prints: the node's state is as before it,
// its reports not delivered.
type rejectedHeartbeat struct {
	node string
	err  error
}

func (r *rejectedHeartbeat) Error() string { return "heartbeat of " + r.node + ": " + r.err.Error() }

func (r *rejectedHeartbeat) Unwrap() error { return r.err }

// heartbeat sends node i's heartbeat at the current time, applies the answer
// to the simulated node and logs the node's reports and the decisions. A
// rejection by the scheduler is a *rejectedHeartbeat.
func (c *Cluster) heartbeat(i int) error {
	n := &c.nodes[i]
	now := coreTime(c.now)
	n.agent.Advance(now, func(a *coretest.Alloc[uint64, simAlloc]) {
		kind := EventCompleted
		if a.State == coretest.AllocAborted {
			kind = EventStopped
		}
		c.log(Event{Kind: kind, Node: n.name, Allocation: a.ID, Operation: a.Meta.op})
	})
	c.resp.Reset()
	c.reports, c.usage = c.reports[:0], c.usage[:0]
	for _, a := range n.agent.Allocs() {
		c.reports = append(c.reports, schedule.AllocationReport{ID: a.ID, State: reportState[a.State], HasUsage: a.Meta.hasUsage})
		c.usage = append(c.usage, a.Meta.usage)
	}
	for _, e := range n.extra {
		c.reports = append(c.reports, schedule.AllocationReport{ID: e.id, State: e.state, HasUsage: e.hasUsage})
		c.usage = append(c.usage, e.usage)
	}
	n.extra = nil
	hb := schedule.NodeHeartbeat{Node: n.name, Limits: n.limits, Tags: n.tags, Unschedulable: n.unschedulable, Allocations: c.reports, AllocationUsage: c.usage}
	if err := c.s.Heartbeat(now, &hb, &c.resp); err != nil {
		return &rejectedHeartbeat{n.name, err}
	}
	// Finished reports are delivered once; aborted allocations are gone.
	n.agent.Delivered(func(a *coretest.Alloc[uint64, simAlloc]) {
		delete(c.requested, a.ID)
		if a.Meta.finished {
			c.log(Event{Kind: finishedKind[a.State], Node: n.name, Allocation: a.ID, Operation: a.Meta.op})
		}
	})
	for _, ab := range c.resp.Abort {
		if _, held := n.agent.Abort(ab.Allocation); held {
			delete(c.requested, ab.Allocation)
		}
	}
	for _, ab := range c.resp.Abort {
		c.log(Event{Kind: EventAbort, Node: n.name, Allocation: ab.Allocation, Operation: ab.Operation, Abort: ab})
	}
	for _, st := range c.resp.Start {
		c.log(Event{Kind: EventStart, Node: n.name, Allocation: st.Allocation, Operation: st.Operation, Start: st})
	}
	n.agent.StopDelay = -1
	if n.stopDelay >= 0 {
		n.agent.StopDelay = clock.DurationFromSeconds(n.stopDelay)
	}
	for _, p := range c.resp.Preempt {
		// A property of every scenario: no operation is preempted to make
		// room for itself (docs/semantics.md#preemptive-stages).
		if p.ForOperation != "" && p.ForOperation == p.Operation {
			return errorf("heartbeat of %s at %g preempted allocation %d of %s to start allocation %d of the same operation",
				n.name, c.now, p.Allocation, p.Operation, p.ForAllocation)
		}
		c.log(Event{Kind: EventPreempt, Node: n.name, Allocation: p.Allocation, Operation: p.Operation, Preempt: p})
		n.agent.Preempt(now, p.Allocation)
	}
	for _, st := range c.resp.Start {
		end := clock.Never
		if ds := c.durations[st.Operation]; st.Task < len(ds) && ds[st.Task] > 0 {
			end = coreTime(c.now + ds[st.Task])
		}
		n.agent.Start(st.Allocation, end, simAlloc{op: st.Operation})
		c.requested[st.Allocation] = st.Resources
	}
	return nil
}

// reportState is the core's report state of a simulated allocation's.
var reportState = [...]schedule.AllocationState{
	coretest.AllocRunning:   schedule.AllocRunning,
	coretest.AllocCompleted: schedule.AllocCompleted,
	coretest.AllocFailed:    schedule.AllocFailed,
	coretest.AllocAborted:   schedule.AllocAborted,
	coretest.AllocRefused:   schedule.AllocRefused,
}

// finishedKind is the event that logs a report of an allocation a script
// ended in that state.
var finishedKind = [...]EventKind{
	coretest.AllocCompleted: EventCompleted,
	coretest.AllocFailed:    EventFailed,
	coretest.AllocAborted:   EventStopped,
	coretest.AllocRefused:   EventRefused,
}

// forget makes node i forget the allocations for which drop is true, as an
// agent that restarts or lost an answer: it neither runs nor lists them.
func (c *Cluster) forget(i int, drop func(id uint64) bool) {
	c.nodes[i].agent.Forget(func(a *coretest.Alloc[uint64, simAlloc]) bool {
		if drop(a.ID) {
			delete(c.requested, a.ID)
			return true
		}
		return false
	})
}

func (c *Cluster) log(e Event) {
	e.T = c.now
	c.events = append(c.events, e)
}

// run advances the time in steps of dt up to until, running a fair-share
// update and (with heartbeats) a heartbeat of every node at each step.
func (c *Cluster) run(until, dt float64, heartbeats bool) error {
	// NB: the 1e-9 slack lets float steps such as 0.1 reach until.
	for c.now+dt <= until+1e-9 {
		c.now += dt
		c.update()
		if heartbeats {
			if err := c.heartbeatAll(); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkGates reports the nodes on which preemption for a starving operation
// (a preemption that made room for an allocation) happened twice less than
// backoff apart, within one heartbeat excepted (docs/semantics.md#preemptive-stages).
func (c *Cluster) checkGates(backoff float64) []string {
	var bad []string
	last := map[string]float64{}
	for _, e := range c.events {
		if e.Kind != EventPreempt || e.Preempt.ForAllocation == 0 {
			continue
		}
		if l, seen := last[e.Node]; seen && e.T != l && e.T-l <= backoff {
			bad = append(bad, e.Node+" preempted at "+fmtFloat(l)+" and "+fmtFloat(e.T)+": not more than the backoff "+fmtFloat(backoff)+" apart")
		}
		last[e.Node] = e.T
	}
	return bad
}

// parseAllocs parses a list of allocations written as node-index:sequence,
// or ranges of them such as 0:1..0:5, separated by commas.
func parseAllocs(s string) ([]uint64, error) {
	var ids []uint64
	for item := range strings.SplitSeq(s, ",") {
		from, to, isRange := strings.Cut(item, "..")
		lo, err := parseAlloc(from)
		if err != nil {
			return nil, err
		}
		hi := lo
		if isRange {
			if hi, err = parseAlloc(to); err != nil {
				return nil, err
			}
			if hi>>32 != lo>>32 || hi < lo {
				return nil, errorf("cannot use allocation range %s: want N:S..N:T with S <= T", item)
			}
		}
		for id := lo; id <= hi; id++ {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func parseAlloc(s string) (uint64, error) {
	node, seq, ok := strings.Cut(s, ":")
	n, err1 := strconv.ParseUint(node, 10, 32)
	q, err2 := strconv.ParseUint(seq, 10, 32)
	if !ok || err1 != nil || err2 != nil || q == 0 {
		return 0, errorf("cannot use allocation %q: want node-index:sequence such as 0:1", s)
	}
	return n<<32 | q, nil
}

// allocName writes an allocation ID as node-index:sequence ("-" for none).
func allocName(id uint64) string {
	if id == 0 {
		return "-"
	}
	return strconv.FormatUint(id>>32, 10) + ":" + strconv.FormatUint(id&(1<<32-1), 10)
}
