package loadgen

import (
	"math"
	"strconv"
	"time"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// Decisions is a heartbeat's answer as a node needs it (docs/api.md#node-heartbeats):
// allocations to start (with their operation's slot and generation when
// the operation is one of this run's), to preempt and to abort. It is
// reused: Reset keeps the storage.
type Decisions struct {
	Start   []StartDecision
	Preempt []PreemptDecision
	Abort   []uint64
}

// StartDecision is an allocation to start. Slot is -1 when the operation
// is not one of this run's (ParseOpID).
type StartDecision struct {
	ID   uint64
	Slot int32
	Gen  uint32
	Task int32 // task_index
}

// PreemptDecision is an allocation to stop within TimeoutS seconds.
type PreemptDecision struct {
	ID       uint64
	TimeoutS float64
}

// Reset empties d, keeping its storage.
func (d *Decisions) Reset() { d.Start, d.Preempt, d.Abort = d.Start[:0], d.Preempt[:0], d.Abort[:0] }

// alloc is an allocation a node runs. Times are nanoseconds since the run
// started.
type alloc struct {
	id   uint64
	end  time.Duration // the job completes then (since the run started)
	stop time.Duration // > 0: preempted, the node stops it then
	slot int32
	gen  uint32
	task int32
}

// finished is an allocation that ended and is still to be reported.
type finished struct {
	id    uint64
	slot  int32
	gen   uint32
	state schedule.AllocationState
}

// Node is a simulated node (see the package documentation). It is owned by
// one goroutine.
type Node struct {
	// NB: the fields every heartbeat reads come first, in two cache lines:
	// a driver touches 64 nodes per batch, before and after a round trip
	// that leaves little of them in the caches.
	running []alloc
	done    []finished
	// nextEnd is when the first of running ends (completes, or stops
	// after a preemption): Prepare has nothing to do before.
	nextEnd time.Duration
	next    time.Duration // next heartbeat due (with a heartbeat period)
	// runEnc is the running allocations as the heartbeat lists them, valid
	// while encOK: a node's list changes in few of its heartbeats.
	runEnc []byte
	encOK  bool
	// origins: the next heartbeat reports the running allocations' origins
	// (a first heartbeat, the first after a failed one, or every one with
	// originsAlways); runEnc holds them when encOrigins.
	origins, originsAlways, encOrigins bool
	batchPrefix                        []byte // the request body up to the allocations' '[' as an entry of a batch, with its node_id
	prefix                             []byte // the same as a heartbeat of its own
	path                               []byte // /api/v1/nodes/<name>/heartbeat

	Index int
	Name  string

	limits   resource.Vec
	tags     []string
	w        *Workload // its origins (the report fields of a running allocation)
	r        rng.Rand
	dist     Dist
	stopFrac float64
}

// NewNode returns node i of the workload w.
func NewNode(w *Workload, i int) *Node {
	n := &Node{
		Index:  i,
		Name:   NodeName(i),
		limits: w.NodeLimits(),
		tags:   []string{NodeTag(i)},
		w:      w,

		origins:       true,
		originsAlways: w.cfg.OriginsAlways,
		r:             w.NodeRand(i),
		dist:          w.cfg.JobDuration,
		stopFrac:      w.cfg.PreemptStopFraction,
	}
	b := append([]byte(nil), `{"resource_limits":`...)
	b = wire.AppendResources(b, &n.limits)
	b = append(b, `,"tags":[`...)
	for j, t := range n.tags {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, t)
	}
	n.prefix = append(b, `],"allocations":[`...)
	n.batchPrefix = append(strconv.AppendQuote([]byte(`{"node_id":`), n.Name), ',')
	n.batchPrefix = append(n.batchPrefix, n.prefix[1:]...)
	n.path = []byte("/api/v1/nodes/" + n.Name + "/heartbeat")
	n.nextEnd = math.MaxInt64
	return n
}

// Running returns the number of allocations the node holds (preempted ones
// that have not stopped yet included).
func (n *Node) Running() int { return len(n.running) }

// Prepare moves the allocations that have ended by now (completed jobs,
// stopped preempted ones) to the list reported in the next heartbeat.
func (n *Node) Prepare(now time.Duration) {
	if now < n.nextEnd {
		return
	}
	next := time.Duration(math.MaxInt64)
	for i := 0; i < len(n.running); {
		a := &n.running[i]
		end, st := a.ends()
		if now < end {
			next = min(next, end)
			i++
			continue
		}
		n.done = append(n.done, finished{id: a.id, slot: a.slot, gen: a.gen, state: st})
		last := len(n.running) - 1
		n.running[i] = n.running[last]
		n.running = n.running[:last]
		n.encOK = false
	}
	n.nextEnd = next
}

// ends returns when the allocation ends and how: completed at its end, or
// aborted when it is stopped first after a preemption.
func (a *alloc) ends() (time.Duration, schedule.AllocationState) {
	if a.stop > 0 && a.stop < a.end {
		return a.stop, schedule.AllocAborted
	}
	return a.end, schedule.AllocCompleted
}

// AppendHeartbeat appends the node's heartbeat body (docs/api.md#node-heartbeats): its
// limits, its tags and every allocation it holds ("running") or finished
// since its last successful heartbeat ("completed", "aborted").
func (n *Node) AppendHeartbeat(dst []byte) []byte {
	return n.appendBody(append(dst, n.prefix...))
}

// AppendBatchEntry appends the node's heartbeat as an entry of a batch
// (docs/api.md#node-heartbeats): the body of AppendHeartbeat with the node's node_id first.
func (n *Node) AppendBatchEntry(dst []byte) []byte {
	return n.appendBody(append(dst, n.batchPrefix...))
}

// appendBody appends the allocations of the heartbeat's body and its end.
func (n *Node) appendBody(dst []byte) []byte {
	if !n.encOK || n.encOrigins != n.origins {
		n.encOrigins = n.origins
		n.runEnc = n.runEnc[:0]
		for i := range n.running {
			if i > 0 {
				n.runEnc = append(n.runEnc, ',')
			}
			n.runEnc = append(n.runEnc, `{"id":"`...)
			a := &n.running[i]
			n.runEnc = strconv.AppendUint(n.runEnc, a.id, 10)
			n.runEnc = append(n.runEnc, `","state":"running"`...)
			if n.origins && a.slot >= 0 {
				// What allocations_to_start said, so that a restarted
				// server adopts it (docs/api.md#node-heartbeats).
				n.runEnc = append(n.runEnc, n.w.origin(a.slot, a.gen, a.task)...)
			}
			n.runEnc = append(n.runEnc, '}')
		}
		n.encOK = true
	}
	dst = append(dst, n.runEnc...)
	first := len(n.running) == 0
	for i := range n.done {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, `{"id":"`...)
		dst = strconv.AppendUint(dst, n.done[i].id, 10)
		dst = append(dst, `","state":"`...)
		dst = append(dst, wire.AllocationStateName(n.done[i].state)...)
		dst = append(dst, `"}`...)
	}
	return append(dst, "]}"...)
}

// AppendReports appends the heartbeat's allocation reports, for the
// in-process driver: the same list AppendHeartbeat encodes.
func (n *Node) AppendReports(dst []schedule.AllocationReport) []schedule.AllocationReport {
	for i := range n.running {
		dst = append(dst, schedule.AllocationReport{ID: n.running[i].id, State: schedule.AllocRunning, HasOrigin: n.origins && n.running[i].slot >= 0})
	}
	for i := range n.done {
		dst = append(dst, schedule.AllocationReport{ID: n.done[i].id, State: n.done[i].state})
	}
	return dst
}

// AppendOrigins appends the origins of the reports AppendReports appends
// (schedule.NodeHeartbeat.AllocationOrigins), for the in-process driver.
func (n *Node) AppendOrigins(dst []schedule.AllocationOrigin) []schedule.AllocationOrigin {
	if !n.origins {
		return dst
	}
	for i := range n.running {
		a := &n.running[i]
		var o schedule.AllocationOrigin
		if a.slot >= 0 {
			o = n.w.originOf(a.slot, a.gen, a.task)
		}
		dst = append(dst, o)
	}
	return dst
}

// Acknowledge records that the last heartbeat was answered: the finished
// allocations it reported are forgotten (reported once), and completed
// jobs are counted towards their operations in ops (which may be nil). It
// returns the number of completed and aborted allocations reported. After
// a failed heartbeat, do not call it: the next heartbeat reports them
// again (the server settles a repeated report once).
func (n *Node) Acknowledge(ops *opTable) (completed, aborted int) {
	for i := range n.done {
		f := &n.done[i]
		if f.state == schedule.AllocCompleted {
			completed++
			if ops != nil {
				ops.complete(f.slot, f.gen)
			}
		} else {
			aborted++
		}
	}
	n.done = n.done[:0]
	n.origins = n.originsAlways
	return completed, aborted
}

// Failed records that the last heartbeat got no answer: the next one
// reports the origins, in case the server restarted or another replica
// leads now.
func (n *Node) Failed() { n.origins = true }

// Apply carries out a heartbeat's answer at time now (ns): it starts the
// allocations with a duration drawn from the job distribution, marks the
// preempted ones to stop (at once, or within PreemptStopFraction of their
// timeout), and drops the aborted ones without reporting them again.
func (n *Node) Apply(now time.Duration, d *Decisions, ops *opTable) {
	for i := range d.Start {
		s := &d.Start[i]
		dur := n.dist.Draw(&n.r)
		n.running = append(n.running, alloc{id: s.ID, end: now + seconds(dur), slot: s.Slot, gen: s.Gen, task: s.Task})
		n.nextEnd = min(n.nextEnd, now+seconds(dur))
		n.encOK = false
		if ops != nil {
			ops.started(s.Slot, s.Gen)
		}
	}
	for i := range d.Preempt {
		p := &d.Preempt[i]
		for j := range n.running {
			a := &n.running[j]
			if a.id != p.ID {
				continue
			}
			if a.stop == 0 {
				delay := 0.0
				if n.stopFrac > 0 && p.TimeoutS > 0 {
					delay = n.r.Float64() * n.stopFrac * p.TimeoutS
				}
				a.stop = max(now+seconds(delay), 1)
				n.nextEnd = min(n.nextEnd, a.stop)
			}
			break
		}
	}
	for _, id := range d.Abort {
		for j := range n.running {
			if n.running[j].id == id {
				last := len(n.running) - 1
				n.running[j] = n.running[last]
				n.running = n.running[:last]
				n.encOK = false
				break
			}
		}
	}
}

// seconds converts a drawn number of seconds to a time.Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
