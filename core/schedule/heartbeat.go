package schedule

import (
	"slices"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
)

// AllocationState is what a node reports about an allocation.
type AllocationState uint8

// Reported allocation states (docs/api.md#node-heartbeats).
const (
	AllocRunning AllocationState = iota
	AllocCompleted
	AllocFailed
	AllocAborted
	// AllocRefused: the node did not start an allocation it was told to
	// start (docs/api.md): its job returns to pending, and its operation
	// is not offered the node for Config.RefusedAllocationBackoff.
	AllocRefused
)

// AllocationReport is one allocation in a heartbeat.
type AllocationReport struct {
	ID    uint64
	State AllocationState
	// HasUsage says that the node measured the allocation's usage: it is
	// NodeHeartbeat.AllocationUsage at the report's index. Without it a
	// running allocation keeps the usage it had.
	HasUsage bool
	// HasOrigin says that the node reported what allocations_to_start gave
	// it (docs/api.md#node-heartbeats): NodeHeartbeat.AllocationOrigins at the report's
	// index. A restarted scheduler adopts running allocations by it.
	HasOrigin bool
}

// AllocationOrigin is what a node reports back of an allocation's start:
// its operation, task and resources (docs/api.md#node-heartbeats).
type AllocationOrigin struct {
	// Operation is the operation's id; the scheduler does not retain it.
	Operation []byte
	Task      int
	Resources resource.Vec
}

// NodeHeartbeat is a node's heartbeat (docs/api.md#node-heartbeats). The scheduler does
// not retain it or its slices.
//
// Allocations lists every allocation the node holds (running, preempted
// ones that still run included) and those it finished since its last
// heartbeat: a held allocation that is not listed has vanished from the
// node and is finished at this heartbeat (see Heartbeat). An empty list
// says that the node holds none.
type NodeHeartbeat struct {
	Node        string
	Limits      resource.Vec
	Tags        []string
	Allocations []AllocationReport
	// AllocationUsage[i] is the resource_usage of Allocations[i] where its
	// HasUsage is set; it may be shorter than Allocations (nil when no
	// report has a usage) but must cover every report with HasUsage.
	AllocationUsage []resource.Vec
	// AllocationOrigins[i] is the origin of Allocations[i] where its
	// HasOrigin is set; like AllocationUsage it may be shorter than
	// Allocations but must cover every report with HasOrigin.
	AllocationOrigins []AllocationOrigin
	// Unschedulable cordons the node: nothing new starts there (neither
	// stage), its allocations keep running and may still be preempted or
	// aborted.
	Unschedulable bool
}

// StartDecision tells the node to start an allocation.
type StartDecision struct {
	Allocation uint64
	Operation  string
	Task       int
	Resources  resource.Vec
}

// AbortReason says why an allocation must stop at once.
type AbortReason uint8

// Abort reasons.
const (
	AbortUnknownAllocation AbortReason = iota
	AbortOperationFinished
	AbortPreemptionTimedOut
	AbortNodeOvercommit
	// AbortVanished: the node stopped listing the allocation (docs/api.md#node-heartbeats),
	// say because its agent restarted; the scheduler finished it as
	// aborted. The node is told in case it still runs it.
	AbortVanished

	// AbortNotAdopted: after a restart, a reported running allocation of
	// an operation that is not running, or of a task with no job left for
	// it, is not adopted (recovery.go).
	AbortNotAdopted

	// AbortReasonCount is the number of abort reasons (for tables indexed
	// by reason).
	AbortReasonCount = int(iota)
)

func (r AbortReason) String() string {
	switch r {
	case AbortOperationFinished:
		return "operation finished"
	case AbortPreemptionTimedOut:
		return "preempted allocation outlived its preemption timeout"
	case AbortNodeOvercommit:
		return "node resources overcommitted"
	case AbortVanished:
		return "allocation vanished"
	case AbortNotAdopted:
		return "allocation not adopted after a restart"
	}
	return "unknown allocation"
}

// AbortDecision tells the node to abort an allocation.
type AbortDecision struct {
	Allocation uint64
	Reason     AbortReason
	Operation  string // the allocation's operation, when known
	// OperationState is the operation's final state when Reason is
	// AbortOperationFinished.
	OperationState OperationState
}

// PreemptReason says why an allocation is preempted (docs/semantics.md).
type PreemptReason uint8

// Preemption reasons. The first three name why the operation an
// allocation made room for was allowed to preempt: it starves itself, it
// starves aggressively, or an ancestor pool starves (docs/semantics.md#starvation scope
// operation_and_ancestors).
const (
	PreemptForStarving PreemptReason = iota
	PreemptForAggressivelyStarving
	PreemptForStarvingAncestor
	// PreemptLimitViolated: the allocation's operation or an ancestor pool
	// uses more than its specified resource limits.
	PreemptLimitViolated
	// PreemptGraceful: a graceful operation sheds an allocation above its
	// fair share (docs/semantics.md#graceful-preemption).
	PreemptGraceful
	// PreemptNodeOvercommit: the node's usage exceeds its limits and the
	// preemptive stage started nothing (docs/semantics.md#preemptive-stages).
	PreemptNodeOvercommit

	// PreemptReasonCount is the number of preemption reasons (for tables
	// indexed by reason).
	PreemptReasonCount = int(iota)
)

func (r PreemptReason) String() string {
	switch r {
	case PreemptForAggressivelyStarving:
		return "aggressively starving"
	case PreemptForStarvingAncestor:
		return "ancestor pool starving"
	case PreemptLimitViolated:
		return "resource limits violated"
	case PreemptGraceful:
		return "graceful preemption"
	case PreemptNodeOvercommit:
		return "node resources overcommitted"
	}
	return "starving"
}

// PreemptDecision tells the node to stop an allocation within Timeout
// seconds; ForAllocation and ForOperation name what it made room for (zero
// for graceful, overcommit and pure limit-violation preemptions). Status is
// the allocation's preemption status when it was preempted.
type PreemptDecision struct {
	Allocation    uint64
	Operation     string
	Reason        PreemptReason
	Timeout       clock.Duration
	ForAllocation uint64
	ForOperation  string
	Status        PreemptionStatus
}

// Response is a heartbeat's answer. It is owned by the caller and reused:
// Heartbeat appends to it after Reset.
type Response struct {
	Start   []StartDecision
	Preempt []PreemptDecision
	Abort   []AbortDecision
}

// Reset empties the response, keeping its storage.
func (r *Response) Reset() {
	r.Start, r.Preempt, r.Abort = r.Start[:0], r.Preempt[:0], r.Abort[:0]
}

// Heartbeat processes a node heartbeat at virtual time now and appends the
// decisions to resp (docs/semantics.md#scheduling-on-a-heartbeat):
//
//  1. reported allocations are settled: completed jobs count once; failed
//     and aborted jobs return to pending; a running allocation's reported
//     usage becomes its usage; unknown allocations, allocations of
//     finished operations and preempted allocations past their deadline
//     are told to abort; allocations the node holds but no longer lists
//     are finished as vanished (both rules below);
//  2. graceful preemption (docs/semantics.md#graceful-preemption);
//  3. the regular stage starts allocations on the node's free resources,
//     least satisfied operation first;
//  4. at most every Config.PreemptiveSchedulingBackoff seconds per node,
//     the preemptive stages start at most one allocation using
//     the resources of preemptible allocations and preempt those;
//  5. a node whose limits no longer hold its allocations aborts the most
//     preemptible ones.
//
// Reported usage (docs/api.md#node-heartbeats): the usage a running allocation reports
// (AllocationReport.HasUsage) is its usage from this heartbeat on,
// whatever it is — above what the allocation was started with (the node
// measures what it uses), below it, or zero. The node's usage, the
// operation's usage (so its demand and satisfaction), the usage charged to
// the resource limits of the operation and its ancestor pools and the
// usage summed by the operation's preemption status lists follow at once,
// and the lists are rebalanced (docs/semantics.md#preemption-statuses). A report without a usage
// keeps the allocation's current usage (nothing restores what it started
// with). A preempted allocation is out of the status lists and the limit
// counters already: its usage changes the node's and the operation's usage
// and the node's preempted usage (what the node is about to free). The
// usage of a completed, failed or aborted report and of an unknown
// allocation is ignored. A usage above the request is not refused: it can
// take the node above its limits (then the preemptive stage and the
// overcommit abort, docs/semantics.md#preemptive-stages, act as for any overcommit) and the operation
// or a pool above its resource limits (its allocations become preemptible
// as limit violations).
//
// Vanished allocations (docs/api.md#node-heartbeats): an allocation the node holds that the
// heartbeat does not list, neither running nor finished, is finished at
// this heartbeat: its job returns to pending as for an aborted report and
// its resources are free for this heartbeat's stages. A not preempted
// one is answered with an abort (AbortVanished), in case the node still
// runs it; a preempted one was told to stop and is settled as if reported
// aborted, without an answer. Every heartbeat's list counts: an empty
// list finishes all the node's allocations, and an allocation started in
// one answer must be listed from the next heartbeat on (a node that lost
// the answer gets its jobs back to pending at once, and an abort for each).
//
// A heartbeat that reports an allocation of another node is rejected with
// an *apierr.Error (code foreign_allocation), and one whose reported usage
// has a component below 0 or above 2^53 (code invalid_value, naming the
// report and the resource), before anything changes.
//
// Heartbeats of one node's shard are serialised; others run in parallel.
// In steady state (a registered node, a Response reused, the shard's
// scratch grown) a heartbeat does not allocate, whether it changes
// nothing, starts, completes and preempts allocations, changes their usage
// or finishes vanished ones; registering a node, the first search after a
// snapshot with more operations and rejected heartbeats do.
func (s *Scheduler) Heartbeat(now clock.Time, hb *NodeHeartbeat, resp *Response) error {
	sh, hash := s.shardAndHash(hb.Node)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n, same, usage, err := s.admit(now, sh, hash, hb)
	if err != nil {
		return err
	}
	s.reconcile(now, sh, n, hb, same, usage, resp)
	if s.recoveryGate(now, sh, n) {
		return nil
	}
	if snap := s.snap.Load(); !snap.Total.IsZero() {
		s.runStages(now, sh, n, snap, resp)
	}
	s.abortOvercommitted(now, sh, n, resp)
	s.settleLists(sh)
	if invariants.Enabled {
		checkNode(n)
	}
	return nil
}

// admit checks a heartbeat before anything changes (the node's limits,
// foreign allocations, reported usage), registers a new node and records
// the node's limits, tags and cordon. same reports that every report is a
// running allocation the node holds, listed once; usage that some report
// has a usage. Shard mutex held.
func (s *Scheduler) admit(now clock.Time, sh *shard, hash uint64, hb *NodeHeartbeat) (n *node, same, usage bool, err error) {
	if err := s.checkNodeLimits(hb); err != nil {
		return nil, false, false, err
	}
	n = sh.nodes.get(hb.Node, hash)
	if n == nil && s.dur.ExternalNodeRegistry {
		return nil, false, false, ErrNodeNotRegistered
	}
	// same: so far every report is a running allocation the node holds,
	// listed once (seen), by the node's window of held seqs.
	same = n != nil && n.heldOK && len(hb.Allocations) == len(n.allocs)
	var seen [heldWindow / 64]uint64
	for i, rep := range hb.Allocations {
		owner := allocationNode(rep.ID)
		if (n == nil || owner != n.index) && rep.ID != 0 {
			if other, ok := s.registry.name(owner); ok && other != hb.Node {
				return nil, false, false, errorf(CodeForeignAllocation, "allocations["+strconv.Itoa(i)+"].id", "cannot accept allocation %d from node %q: it belongs to node %q", rep.ID, hb.Node, other)
			}
		}
		usage = usage || rep.HasUsage
		if same {
			d := uint32(rep.ID) - n.heldBase
			w, bit := d>>6&(heldWindow/64-1), uint64(1)<<(d&63)
			same = owner == n.index && d < heldWindow && rep.State == AllocRunning && n.held[w]&^seen[w]&bit != 0
			seen[w] |= bit
		}
	}
	if usage {
		if err := checkUsage(hb); err != nil {
			return nil, false, false, err
		}
	}
	if n == nil {
		n = &node{name: hb.Node, heldOK: true, hash: hash, seqEnd: noSeqLimit}
		n.index = s.registry.add(hb.Node)
		sh.nodes.put(n, hash) // NB: allocates when the table grows
	}
	n.setLimits(hb.Limits)
	n.lastHeartbeat = now
	n.setTags(hb.Tags)
	n.unschedulable = hb.Unschedulable
	return n, same, usage, nil
}

// reconcile settles the heartbeat's reports against the allocations node
// n holds (step 1 of Heartbeat): ended and refused reports release their
// allocations, allocations of finished operations and preempted ones past
// their deadline are aborted, unknown running ones are told to abort,
// reported usage is applied and the allocations not listed finish as
// vanished. Shard mutex held.
//
// Collect the allocations listed running (n.listed) and count them:
// when fewer than the node holds remain, some vanished. NB: reported
// usage is applied by a second pass (applyUsage) over the allocations
// this loop kept: with the call in this loop, a heartbeat that reports
// no usage took 145 ns instead of 130 in BenchmarkHeartbeatReports/
// steady (120 before usage and vanishing; single runs, not kept: the
// kept A/B is bench/results/usage-vanished-ab.txt). Marks on the allocations
// would dirty a cache line per allocation, marks in an array of the
// node's cost a cache miss per heartbeat in BenchmarkHeartbeat: the
// bitmap is in the node's hot fields.
// NB: the allocations' own state is read only when it can matter: an
// operation finished since the node's last heartbeat (finishEpoch), or
// a preempted allocation whose deadline may have passed. A heartbeat
// that lists exactly the allocations the node holds, running, and
// reports no usage (same) changes nothing here and reads neither the
// IDs nor the allocations or their operations (each one a cache miss
// at 10,000 nodes).
func (s *Scheduler) reconcile(now clock.Time, sh *shard, n *node, hb *NodeHeartbeat, same, usage bool, resp *Response) {
	var skip []bool // reports answered by the adoption
	if n.adopting {
		// The node's first heartbeat after a restart (recovery.go).
		skip = s.adopt(now, sh, n, hb, resp)
		same = false
	}
	epoch := s.finishEpoch.Load()
	check := epoch != n.finishSeen || n.preemptedN > 0
	listed, hint := 0, 0
	reports := hb.Allocations
	if same && !check && !usage {
		listed, reports = len(n.allocs), nil
	} else {
		n.resetListed()
	}
	for i, rep := range reports {
		if skip != nil && skip[i] {
			continue
		}
		k, ok := n.searchFrom(rep.ID, hint)
		if !ok {
			if rep.State == AllocRunning {
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: rep.ID, Reason: AbortUnknownAllocation})
			}
			continue
		}
		hint = k + 1
		if st := rep.State; st != AllocRunning {
			if n.isListed(k) {
				listed-- // listed running, then finished
			}
			if st == AllocRefused {
				s.refuse(now, n, n.allocs[k])
			}
			s.release(sh, n, n.allocs[k], rep.State == AllocCompleted)
			hint = k
			continue
		}
		if check {
			a := n.allocs[k]
			if st := a.op.State(); st.Final() {
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortOperationFinished, Operation: a.op.id, OperationState: st})
				s.release(sh, n, a, false)
				hint = k
				continue
			}
			if a.preempted && now >= a.deadline {
				resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortPreemptionTimedOut, Operation: a.op.id})
				s.release(sh, n, a, false)
				hint = k
				continue
			}
		}
		if n.list(k) {
			listed++
		}
	}
	// Every allocation of an operation finished up to epoch was listed and
	// aborted above, or is not listed and finishes as vanished below.
	n.finishSeen = epoch
	if usage {
		s.applyUsage(sh, n, hb)
	}
	if listed < len(n.allocs) {
		s.finishVanished(sh, n, resp)
	}
}

// recoveryGate ends a node's adoption with its first heartbeat after a
// restart, and reports whether the recovery window is open: then the
// heartbeat only reports, and nothing starts, is preempted or aborted for
// overcommit (recovery.go). Shard mutex held.
func (s *Scheduler) recoveryGate(now clock.Time, sh *shard, n *node) bool {
	if n.adopting {
		n.adopting = false
		s.rec.nodeReported(now, n.name)
	}
	if s.recovering(now) {
		s.settleLists(sh)
		return true
	}
	return false
}

// runStages runs the scheduling stages on node n (steps 2–4 of
// Heartbeat): graceful preemption, then, unless the node is cordoned, the
// regular stage and, at most every PreemptiveSchedulingBackoff, the
// preemptive stages. Operations the node refused lately are not offered
// it (refuse). Shard mutex held.
func (s *Scheduler) runStages(now clock.Time, sh *shard, n *node, snap *Snapshot, resp *Response) {
	if len(n.graceful) > 0 {
		s.settleLists(sh)
		s.preemptGracefully(now, sh, n, resp)
	}
	if n.unschedulable {
		return
	}
	if len(n.refused) > 0 {
		n.pruneRefused(now)
	}
	started := s.scheduleRegular(now, sh, n, snap, resp)
	if !n.hadPreemptive || now.Sub(n.lastPreemptive) > s.cfg.PreemptiveSchedulingBackoff {
		n.hadPreemptive, n.lastPreemptive = true, now
		s.settleLists(sh)
		s.schedulePreemptive(now, sh, n, snap, started, resp)
	}
}

// checkUsage validates the usage of the reports that have one (docs/api.md#conventions:
// non-negative amounts of at most 2^53). It allocates only to reject.
func checkUsage(hb *NodeHeartbeat) error {
	for i := range hb.Allocations {
		rep := &hb.Allocations[i]
		if !rep.HasUsage {
			continue
		}
		if i >= len(hb.AllocationUsage) {
			return errorf(CodeInvalidValue, "allocations["+strconv.Itoa(i)+"].resource_usage", "cannot read the usage of allocation %d: AllocationUsage has %d entries for %d reports", rep.ID, len(hb.AllocationUsage), len(hb.Allocations))
		}
		for r, x := range hb.AllocationUsage[i] {
			if x < 0 || x > resource.MaxAmount {
				k := resource.Kind(r)
				return errorf(CodeInvalidValue, "allocations["+strconv.Itoa(i)+"].resource_usage."+k.String(), "cannot use %s %d as the usage of allocation %d: want a non-negative amount of at most 2^53", k, x, rep.ID)
			}
		}
	}
	return nil
}

// applyUsage makes the usage each report has the usage of its allocation
// (see Heartbeat), if the heartbeat kept the allocation running (it is
// listed): the node's and the operation's usage follow and, unless the
// allocation is preempted, the limit counters (without a check: a measured
// usage is a fact, an excess shows as a limit violation) and the sums of
// the operation's status lists. Then the lists of every operation whose
// usage changed are rebalanced, once each (docs/semantics.md#preemption-statuses). Shard mutex held.
func (s *Scheduler) applyUsage(sh *shard, n *node, hb *NodeHeartbeat) {
	var locked *operation // consecutive allocations of one operation share its lock
	changed := sh.changed[:0]
	for i := range hb.Allocations {
		rep := &hb.Allocations[i]
		if !rep.HasUsage || rep.State != AllocRunning {
			continue
		}
		k, ok := n.search(rep.ID)
		if !ok || !n.isListed(k) {
			continue
		}
		a, u := n.allocs[k], &hb.AllocationUsage[i]
		d := u.Sub(a.resources)
		if d.IsZero() {
			continue
		}
		o := a.op
		n.usage = n.usage.Add(d)
		o.addUsage(d, 1)
		if a.preempted {
			n.preemptedUsage = n.preemptedUsage.Add(d)
			for r, x := range d {
				if x != 0 {
					o.preempted[r].Add(x)
				}
			}
			a.resources = *u
		} else {
			o.recharge(d)
			if locked != o {
				if locked != nil {
					locked.pre.mu.Unlock()
				}
				o.pre.mu.Lock()
				locked = o
			}
			o.pre.resize(a, *u)
		}
		if len(changed) == 0 || changed[len(changed)-1] != o && !slices.Contains(changed, o) {
			changed = append(changed, o)
		}
	}
	if locked != nil {
		locked.pre.mu.Unlock()
	}
	for _, o := range changed {
		o.pre.mu.Lock()
		o.pre.rebalance()
		o.pre.mu.Unlock()
		sh.ops.touch(o)
	}
	clear(changed) // keep no finished operation alive
	sh.changed = changed[:0]
}

// finishVanished finishes the allocations of node n that the heartbeat did
// not list as aborted: a not preempted one is answered with AbortVanished,
// in ID order (see Heartbeat). Shard mutex held.
func (s *Scheduler) finishVanished(sh *shard, n *node, resp *Response) {
	for i, a := range n.allocs {
		if !n.isListed(i) && !a.preempted {
			resp.Abort = append(resp.Abort, AbortDecision{Allocation: a.id, Reason: AbortVanished, Operation: a.op.id})
		}
	}
	// From the end: releasing the last allocation moves nothing.
	for i := len(n.allocs) - 1; i >= 0; i-- {
		if !n.isListed(i) {
			s.release(sh, n, n.allocs[i], false)
		}
	}
}

// checkNode asserts, under -race and the invariants tag, that the node's
// usage is the sum of its allocations, that it exceeds the limits only by
// preempted allocations (or within the allowed overcommit duration), that
// exactly its not preempted allocations are in their operations' status
// lists, and that ids mirrors allocs in increasing order.
func checkNode(n *node) {
	var u, pu resource.Vec
	preempted := 0
	invariants.Check(len(n.ids) == len(n.allocs), "node %s: %d ids for %d allocations", n.name, len(n.ids), len(n.allocs))
	for i, a := range n.allocs {
		if n.ids[i] != a.id || i > 0 && n.ids[i-1] >= a.id {
			invariants.Check(false, "node %s: ids[%d] = %d, allocation %d", n.name, i, n.ids[i], a.id)
		}
		u = u.Add(a.resources)
		if a.preempted {
			pu = pu.Add(a.resources)
			preempted++
		}
	}
	invariants.Check(int(n.preemptedN) == preempted, "node %s: %d preempted allocations counted, %d held", n.name, n.preemptedN, preempted)
	invariants.Check(u == n.usage && pu == n.preemptedUsage, "node %s: usage %v and preempted %v, its allocations say %v and %v", n.name, n.usage, n.preemptedUsage, u, pu)
	invariants.Check(n.overcommitted || n.limits.Dominates(u.Sub(pu)), "node %s: usage %v less preempted %v exceeds limits %v", n.name, u, pu, n.limits)
	graceful := 0
	for _, a := range n.allocs {
		invariants.Check(a.listed != a.preempted && a.node == n, "node %s: allocation %d listed %v preempted %v", n.name, a.id, a.listed, a.preempted)
		if a.op.graceful() && !a.preempted {
			ok := graceful < len(n.graceful) && n.graceful[graceful] == gracefulAlloc{a: a, op: a.op, seq: a.seq}
			invariants.Check(ok, "node %s: allocation %d of a graceful operation is not graceful[%d]", n.name, a.id, graceful)
			graceful++
		}
	}
	invariants.Check(graceful == len(n.graceful), "node %s: %d graceful allocations listed, %d held", n.name, len(n.graceful), graceful)
	if n.heldOK {
		var held [heldWindow / 64]uint64
		for _, id := range n.ids {
			d := uint32(id) - n.heldBase
			invariants.Check(d < heldWindow, "node %s: allocation %d outside the held window at %d", n.name, id, n.heldBase)
			held[d>>6&(heldWindow/64-1)] |= 1 << (d & 63)
		}
		invariants.Check(held == n.held, "node %s: held %x, its allocations say %x", n.name, n.held, held)
	} else {
		invariants.Check(len(n.ids) > 0 && uint32(n.ids[len(n.ids)-1])-uint32(n.ids[0]) >= heldWindow, "node %s: held window off for %d allocations", n.name, len(n.ids))
	}
}

// release settles allocation a of node n: its resources return to the node,
// the operation and its limited ancestors; a completed job counts as done,
// any other job returns to pending unless its operation has finished. The
// allocation is recycled. Shard mutex held.
//
// The operation's status lists are rebalanced later, at most once per
// operation and heartbeat (settleLists): before anything reads this
// node's statuses and at the end of the heartbeat; a start of the same
// operation in between rebalances them at once. Until then they publish
// the statuses of before the release. NB: a completion and a start of the
// same operation on a node (the usual churn: the released operation is
// the least satisfied) rebalanced twice.

func (s *Scheduler) release(sh *shard, n *node, a *allocation, completed bool) {
	o := a.op
	n.usage = n.usage.Sub(a.resources)
	if a.preempted {
		// Already out of the status lists and the limit counters.
		n.preemptedUsage = n.preemptedUsage.Sub(a.resources)
		for r, x := range a.resources {
			if x != 0 {
				o.preempted[r].Add(-x)
			}
		}
		o.preemptedCount.Add(-1)
		n.preemptedN--
	} else {
		o.pre.mu.Lock()
		unsettled := o.pre.drop(a)
		o.pre.mu.Unlock()
		if unsettled && (len(sh.unsettled) == 0 || sh.unsettled[len(sh.unsettled)-1] != o) {
			sh.unsettled = append(sh.unsettled, o)
		}
		o.uncharge(a.resources)
	}
	o.addUsage(a.resources, -1)
	o.running.Add(-1)
	s.endJob(o, &o.tasks[a.task], completed)
	if o.graceful() && !a.preempted {
		n.dropGraceful(a)
	}
	n.removeAlloc(a)
	sh.recycle(a)
	sh.ops.touch(o)
}

// settleLists rebalances the status lists that releases of this shard left
// waiting (docs/semantics.md#preemption-statuses), once per operation. Shard mutex held.
func (s *Scheduler) settleLists(sh *shard) {
	for _, o := range sh.unsettled {
		o.pre.mu.Lock()
		o.pre.settle()
		o.pre.mu.Unlock()
	}
	clear(sh.unsettled) // keep no finished operation alive
	sh.unsettled = sh.unsettled[:0]
}
