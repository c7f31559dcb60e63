package schedule

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// Explanations (docs/why-waiting.md): why an operation or a pool is in the
// state it is, read from the scheduler's own state — the limits' pending
// queues, the last fair-share update's attributes, the starvation trackers,
// the preemption statuses the heartbeats read and the nodes — never from a
// second copy of the rules: where a finding depends on a rule, it calls the
// function the scheduler decides with (starvation.OperationBelowFairShare,
// effectiveParams, blockedByAncestor, node.matches, canStartMore, ...).
// Explanations are computed on request under the control lock (and one
// shard mutex at a time for the node scan); nothing on the heartbeat path
// reads or writes anything for them.

// Finding codes: stable identifiers of the conditions an explanation names
// (docs/why-waiting.md lists them).
const (
	// The operation waits in the pending queue of a pool at its
	// max_running_operation_count (the operation's pool or an ancestor).
	FindingRunningOperationLimit = "running_operation_limit"
	// A pool at its max_operation_count accepts no new operation.
	FindingOperationLimit = "operation_limit"
	// The operation finished (completed or aborted).
	FindingFinished = "operation_finished"
	// No fair-share update has seen the operation (or the pool) yet.
	FindingNotUpdated = "not_updated_yet"
	// Every job of the operation runs: it has nothing left to start.
	FindingNoPendingJobs = "no_pending_jobs"
	// Usage and fair share per resource, and the status: at or above its
	// fair share, below it but within the starvation tolerance, or below it.
	FindingAtFairShare     = "at_fair_share"
	FindingWithinTolerance = "within_starvation_tolerance"
	FindingBelowFairShare  = "below_fair_share"
	// Starvation: starving (and since when), or when it will starve.
	FindingStarving = "starving"
	// Aggressive starvation is off where the element starves.
	FindingAggressiveStarvationDisabled = "aggressive_starvation_disabled"
	// Pool starvation is off in the tree config (enable_pool_starvation).
	FindingPoolStarvationDisabled = "pool_starvation_disabled"
	// Its or an ancestor pool's resource_limits leave no room for a job.
	FindingResourceLimit = "resource_limit"
	// No node that passes its scheduling tag filter has room for a job.
	FindingNoNodeFits = "no_node_fits"
	// Some node has room for one of its jobs: it starts at that node's
	// next heartbeat unless less satisfied operations take the room first.
	FindingNodeHasRoom = "node_has_room"
	// Every candidate victim of the preemptive stages is protected, by rule.
	FindingNoPreemptibleVictims = "no_preemptible_victims"
	// Preemption could make room (it happens at a node's heartbeat).
	FindingPreemptibleVictims = "preemptible_victims"
	// A gang operation's fair share is all of its demand or nothing.
	FindingGangWaiting = "gang_waiting"
	// What bounds the fair share: its demand, a resource limit (its own or
	// an ancestor's), the nodes its tag filter matches, a guarantee, or its
	// weight among its siblings.
	FindingBoundByDemand        = "fair_share_bound_by_demand"
	FindingBoundByResourceLimit = "fair_share_bound_by_resource_limit"
	FindingBoundByTagFilter     = "fair_share_bound_by_tag_filter"
	FindingBoundByAncestor      = "fair_share_bound_by_ancestor"
	FindingStrongGuarantee      = "fair_share_strong_guarantee"
	FindingIntegralGuarantee    = "fair_share_integral_guarantee"
	FindingWeightShare          = "fair_share_weight_share"
	// The parent is a FIFO pool: its fair share goes to its children in
	// order.
	FindingFifoOrder = "fair_share_fifo_order"
	// The only child of its parent that demands: its fair share is the
	// parent's (the parent's bound follows).
	FindingWholeParent = "fair_share_of_parent"
	// An allocation of the operation was preempted: who preempted it and why.
	FindingPreemptedAllocation = "preempted_allocation"
)

// Explanation is the answer for an operation (Operation set) or a pool
// (Pool set): its state and the findings that decide it, the binding one
// first. It is the JSON of GET /api/v1/operations/{id}/explain and
// GET /api/v1/pools/{name}/explain (docs/api.md).
type Explanation struct {
	Operation string `json:"operation,omitempty"`
	Pool      string `json:"pool,omitempty"`
	// State is an operation's state (pending, running, completed,
	// aborted) or a pool's status (normal, below_fair_share, starving,
	// aggressively_starving).
	State    string    `json:"state"`
	Findings []Finding `json:"findings"`
}

// Finding is one condition, with a stable Code, a sentence naming the
// setting and the pool, and the numbers it is about. Numbers that do not
// apply are absent (nil); shares are fractions of the cluster's resources,
// times are seconds of the scheduler's clock.
type Finding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Pool is the pool (or operation, for an operation's own setting) the
	// setting belongs to; Setting its configuration key.
	Pool     string `json:"pool,omitempty"`
	Setting  string `json:"setting,omitempty"`
	Resource string `json:"resource,omitempty"`

	// Operation counts (running_operation_limit, operation_limit).
	Running     *int64 `json:"running,omitempty"`
	Limit       *int64 `json:"limit,omitempty"`
	Position    *int64 `json:"position,omitempty"`
	QueueLength *int64 `json:"queue_length,omitempty"`
	MustFinish  *int64 `json:"must_finish,omitempty"`
	// Operations that hold the limit (running ones), or that wait.
	Operations []string `json:"operations,omitempty"`

	// Per-resource shares (the status findings and the bounds).
	Shares []ResourceShares `json:"shares,omitempty"`
	// Dominant shares and the bound's numbers.
	Usage           *float64 `json:"usage,omitempty"`
	FairShare       *float64 `json:"fair_share,omitempty"`
	Demand          *float64 `json:"demand,omitempty"`
	Bound           *float64 `json:"bound,omitempty"`
	Guarantee       *float64 `json:"guarantee,omitempty"`
	Weight          *float64 `json:"weight,omitempty"`
	WeightSum       *float64 `json:"weight_sum,omitempty"`
	ParentFairShare *float64 `json:"parent_fair_share,omitempty"`
	// Shared is what the parent shares by weight after its children's
	// guarantees.
	Shared *float64 `json:"shared,omitempty"`
	// Resource amounts (resource_limit): in the resource's unit, cpu in cores.
	Amount      *float64 `json:"amount,omitempty"`
	LimitAmount *float64 `json:"limit_amount,omitempty"`
	JobAmount   *float64 `json:"job_amount,omitempty"`

	// Starvation.
	Tolerance           *float64 `json:"tolerance,omitempty"`
	BelowSince          *float64 `json:"below_since,omitempty"`
	Timeout             *float64 `json:"timeout,omitempty"`
	StarvesIn           *float64 `json:"starves_in,omitempty"`
	AggressiveTimeout   *float64 `json:"aggressive_timeout,omitempty"`
	AggressivelyStarves *float64 `json:"aggressively_starves_in,omitempty"`

	// Nodes (no_node_fits, node_has_room).
	Nodes         *int64 `json:"nodes,omitempty"`
	MatchingNodes *int64 `json:"matching_nodes,omitempty"`
	NodesWithRoom *int64 `json:"nodes_with_room,omitempty"`
	// Victims (no_preemptible_victims, preemptible_victims): the running
	// allocations of other operations on the matching nodes, and how many
	// each rule protects.
	Candidates *int64          `json:"candidates,omitempty"`
	Protected  []ProtectedRule `json:"protected,omitempty"`

	// A preempted allocation.
	Allocation    *uint64  `json:"allocation,omitempty"`
	Node          string   `json:"node,omitempty"`
	Time          *float64 `json:"time,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	ForOperation  string   `json:"for_operation,omitempty"`
	ForAllocation *uint64  `json:"for_allocation,omitempty"`
	Status        string   `json:"status,omitempty"`
	Deadline      *float64 `json:"deadline,omitempty"`
}

// ResourceShares are an element's shares of one resource.
type ResourceShares struct {
	Resource  string  `json:"resource"`
	Usage     float64 `json:"usage"`
	FairShare float64 `json:"fair_share"`
	Demand    float64 `json:"demand"`
}

// ProtectedRule counts the candidate victims one rule protects.
type ProtectedRule struct {
	// Rule is non_preemptible (within their operation's fair share or
	// non_preemptible_resource_usage_threshold), aggressive_only (only an
	// aggressively starving operation may preempt them),
	// aggressive_not_allowed (allow_aggressive_preemption false),
	// normal_preemption_blocked (allow_normal_preemption false at Pool),
	// graceful (graceful operations are no victims) or starving (their
	// operation starves and allow_preemption_from_starving_operations is
	// false).
	Rule  string `json:"rule"`
	Count int64  `json:"count"`
	Pool  string `json:"pool,omitempty"`
}

// Finding ranks: the binding finding comes first. Lower ranks sort first;
// findings of one rank keep the order they were found in.
const (
	rankFinal = iota
	rankBinding
	rankStatus
	rankStarvation
	rankWhy
	rankBound
	rankContext
)

type rankedFinding struct {
	rank int
	f    Finding
}

func i64(v int64) *int64         { return &v }
func u64(v uint64) *uint64       { return &v }
func f64(v float64) *float64     { return &v }
func secs(t clock.Time) *float64 { return f64(t.Seconds()) }

// fmtNum writes a share or a number with up to 4 significant decimals.
func fmtNum(v float64) string { return strconv.FormatFloat(roundTo(v, 4), 'g', -1, 64) }

// roundTo rounds v to d decimals (for messages and the JSON numbers, so
// that a share reads 0.5 and not 0.49999999999999994).
func roundTo(v float64, d int) float64 {
	p := math.Pow10(d)
	if math.Abs(v) > 1e12 {
		return v
	}
	return math.Round(v*p) / p
}

func fmtSecs(d clock.Duration) string { return fmtNum(d.Seconds()) + " s" }

// ExplainOperation explains why operation id is in its state at now (the
// scheduler's clock; it says how long until a timeout from now). recent
// lists the operation's recent preemptions as the caller logged them from
// the heartbeats' answers (nil when none are kept); each becomes a
// preempted_allocation finding after those of its allocations that were
// preempted and still run.
func (s *Scheduler) ExplainOperation(id string, now clock.Time, recent []Preemption) (Explanation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookup(id)
	if err != nil {
		return Explanation{}, err
	}
	st := o.State()
	e := Explanation{Operation: o.id, State: st.String()}
	var fs []rankedFinding
	switch {
	case st.Final() || o.retired:
		fs = append(fs, rankedFinding{rankFinal, Finding{Code: FindingFinished,
			Message: "operation " + o.id + " is " + st.String() + ": it is not scheduled any more"}})
	case s.limits.State(o.treeID) == limits.Pending:
		fs = s.explainPending(o, fs)
	default:
		fs = s.explainRunning(o, now, fs)
	}
	fs = s.explainPreempted(o, recent, fs)
	e.Findings = sortFindings(fs)
	return e, nil
}

func sortFindings(fs []rankedFinding) []Finding {
	slices.SortStableFunc(fs, func(a, b rankedFinding) int { return cmp.Compare(a.rank, b.rank) })
	out := make([]Finding, len(fs))
	for i := range fs {
		out[i] = fs[i].f
	}
	return out
}

// poolLabel names a pool in a sentence.
func poolLabel(name string) string {
	if name == tree.RootName {
		return "the root pool"
	}
	return "pool " + name
}

// explainPending: the pool whose max_running_operation_count holds the
// operation back (limits.WaitingFor), its place in that pool's pending
// queue, and what must finish; then the other pools of its path at their
// running limit, which it will wait for next.
func (s *Scheduler) explainPending(o *operation, fs []rankedFinding) []rankedFinding {
	t := s.tree
	p, limit := s.limits.WaitingFor(o.treeID)
	queue := s.limits.Pending(p, nil)
	pos := int64(slices.Index(queue, o.treeID) + 1)
	running := s.limits.RunningOperationCount(p)
	must := running - limit + pos
	name := t.Name(p)
	f := Finding{Code: FindingRunningOperationLimit, Pool: name, Setting: "max_running_operation_count",
		Running: i64(running), Limit: i64(limit), Position: i64(pos), QueueLength: i64(int64(len(queue))), MustFinish: i64(must),
		Operations: s.runningBelow(p, 10)}
	f.Message = "max_running_operation_count " + strconv.FormatInt(running, 10) + " of " + strconv.FormatInt(limit, 10) +
		" at " + poolLabel(name) + ": operation " + o.id + " is " + ordinal(pos) + " of " + strconv.Itoa(len(queue)) +
		" in its pending queue and starts when " + plural(must, "running operation") + " of " + poolLabel(name) +
		finishes(must) + " (or the limit is raised)"
	fs = append(fs, rankedFinding{rankBinding, f})
	for q := t.Parent(o.treeID); q != tree.None; q = t.Parent(q) {
		if q == p {
			continue
		}
		r, l := s.limits.RunningOperationCount(q), s.limits.EffectiveMaxRunningOperationCount(q)
		if r < l {
			continue
		}
		qn := t.Name(q)
		fs = append(fs, rankedFinding{rankWhy, Finding{Code: FindingRunningOperationLimit, Pool: qn, Setting: "max_running_operation_count",
			Running: i64(r), Limit: i64(l),
			Message: "max_running_operation_count " + strconv.FormatInt(r, 10) + " of " + strconv.FormatInt(l, 10) + " at " + poolLabel(qn) +
				" too: operation " + o.id + " waits for it next"}})
	}
	return fs
}

// runningBelow lists up to n running operations of pool p's subtree (the
// ones that count against its max_running_operation_count), in tree order.
func (s *Scheduler) runningBelow(p tree.ID, n int) []string {
	var out []string
	var walk func(id tree.ID)
	walk = func(id tree.ID) {
		for c := s.tree.FirstChild(id); c != tree.None && len(out) < n; c = s.tree.NextSibling(c) {
			if s.tree.IsOperation(c) {
				if s.limits.State(c) == limits.Running {
					out = append(out, s.tree.Name(c))
				}
				continue
			}
			walk(c)
		}
	}
	walk(p)
	return out
}

func ordinal(n int64) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.FormatInt(n, 10) + suffix
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if what == "child" {
		return strconv.FormatInt(n, 10) + " children"
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

// finishes is the verb for n running operations.
func finishes(n int64) string {
	if n == 1 {
		return " finishes"
	}
	return " finish"
}

// resourceShares lists the shares of the resources the element uses,
// demands or is given a share of.
func resourceShares(a *fairshare.Attributes) []ResourceShares {
	var out []ResourceShares
	for r := range resource.Count {
		u, f, d := a.UsageShare[r], a.FairShare.Total[r], a.DemandShare[r]
		if u == 0 && f == 0 && d == 0 {
			continue
		}
		out = append(out, ResourceShares{Resource: resource.Kind(r).String(), Usage: roundTo(u, 6), FairShare: roundTo(f, 6), Demand: roundTo(d, 6)})
	}
	return out
}

// dominant returns the resource in which the element's demand share is
// largest (its fair share's, when it demands nothing).
func dominant(a *fairshare.Attributes) resource.Kind {
	v := a.DemandShare
	if v.MaxComponent() == 0 {
		v = a.FairShare.Total
	}
	k := 0
	for r := range v {
		if v[r] > v[k] {
			k = r
		}
	}
	return resource.Kind(k)
}

// explainRunning: the status (at, within tolerance of, or below its fair
// share) with the shares; starvation; why it gets no more; what bounds its
// fair share.
func (s *Scheduler) explainRunning(o *operation, now clock.Time, fs []rankedFinding) []rankedFinding {
	if v := o.view.Load(); v == nil || !inSnapshot(s.snap.Load(), v) {
		return append(fs, rankedFinding{rankBinding, Finding{Code: FindingNotUpdated,
			Message: "operation " + o.id + " started after the last fair-share update: it has no fair share yet and is scheduled from the next update on"}})
	}
	a := s.fs.Attributes(o.treeID)
	e := s.effectiveAt(o.treeID)
	k := dominant(a)
	status := rankedFinding{rankStatus, Finding{Resource: k.String(), Shares: resourceShares(a),
		Usage: f64(roundTo(a.UsageShare[k], 6)), FairShare: f64(roundTo(a.FairShare.Total[k], 6)), Demand: f64(roundTo(a.DemandShare[k], 6))}}
	sh := "usage " + fmtNum(a.UsageShare[k]) + ", fair share " + fmtNum(a.FairShare.Total[k]) + " and demand " + fmtNum(a.DemandShare[k]) + " of the cluster's " + k.String()
	below := o.starvation.belowFairShare
	sat := starvation.LocalSatisfaction(a.FairShare.Total, a.DemandShare, a.UsageShare)
	switch {
	case below:
		status.f.Code, status.f.Tolerance = FindingBelowFairShare, f64(e.tolerance)
		status.f.Message = "operation " + o.id + " is below its fair share: " + sh
	case sat < 1:
		status.f.Code, status.f.Tolerance, status.f.Setting = FindingWithinTolerance, f64(e.tolerance), "fair_share_starvation_tolerance"
		status.f.Message = "operation " + o.id + " uses less than its fair share (" + sh + ") but not less than fair_share_starvation_tolerance " +
			fmtNum(e.tolerance) + " of it: it is not below its fair share, so it neither starves nor preempts"
	default:
		status.f.Code = FindingAtFairShare
		status.f.Message = "operation " + o.id + " uses its fair share or more: " + sh
	}
	fs = append(fs, status)
	pending := o.pendingJobs()
	if pending == 0 {
		fs = append(fs, rankedFinding{rankBinding, Finding{Code: FindingNoPendingJobs,
			Message: "every job of operation " + o.id + " has started: it has nothing left to schedule"}})
	}
	if below {
		fs = s.explainStarvation(o, now, e, fs)
	}
	if o.spec.IsGang && s.cfg.FairShare.EnableStepFunctionForGangOperations && a.FairShare.Total.MaxComponent() <= resource.Epsilon &&
		a.DemandShare.MaxComponent() > resource.Epsilon {
		fs = append(fs, rankedFinding{rankBinding, Finding{Code: FindingGangWaiting, Setting: "enable_step_function_for_gang_operations",
			Demand: f64(roundTo(a.DemandShare[k], 6)),
			Message: "operation " + o.id + " is a gang: with enable_step_function_for_gang_operations its fair share is all of its demand (" +
				fmtNum(a.DemandShare[k]) + " of " + k.String() + ") or nothing, and the cluster cannot give it all of it now"}})
	}
	if pending > 0 {
		fs = s.explainRoom(o, fs)
	}
	return s.explainBound(o.treeID, fs)
}

// effectiveAt returns element id's inherited starvation and preemption
// parameters, as the last update computed them (effectiveParams down its
// path).
func (s *Scheduler) effectiveAt(id tree.ID) effective {
	var path []tree.ID
	for p := id; p != tree.None; p = s.tree.Parent(p) {
		path = append(path, p)
	}
	eff := make([]effective, s.tree.Len())
	for i := len(path) - 1; i >= 0; i-- {
		eff[path[i]] = s.effectiveParams(path[i], eff)
	}
	return eff[id]
}

// explainStarvation: since when the operation is below its fair share,
// whether it starves and when it will (its effective timeouts, scaled for
// few pending jobs as the update scales them), and aggressive starvation.
func (s *Scheduler) explainStarvation(o *operation, now clock.Time, e effective, fs []rankedFinding) []rankedFinding {
	p := e.params.ScaleForPendingJobs(o.pendingJobs(), s.cfg.AllocationCountPreemptionTimeoutCoefficient)
	tr := o.starvation.tracker
	return starvationFindings("operation "+o.id, tr, p, now, fs)
}

func starvationFindings(who string, tr starvation.Tracker, p starvation.Params, now clock.Time, fs []rankedFinding) []rankedFinding {
	f := Finding{Code: FindingStarving, Setting: "fair_share_starvation_timeout", BelowSince: secs(tr.BelowSince), Timeout: f64(p.Timeout.Seconds())}
	since := "since " + fmtNum(tr.BelowSince.Seconds()) + " s"
	switch tr.State {
	case starvation.NonStarving:
		at := tr.BelowSince.Add(p.Timeout)
		in := max(at.Sub(now), 0)
		f.StarvesIn = f64(in.Seconds())
		f.Message = who + " is below its fair share " + since + ": it starves after fair_share_starvation_timeout " + fmtSecs(p.Timeout) +
			", in " + fmtSecs(in) + "; until then it may not preempt"
	case starvation.Starving:
		f.Message = who + " starves: below its fair share " + since + ", longer than fair_share_starvation_timeout " + fmtSecs(p.Timeout) +
			"; it may preempt preemptible allocations"
	case starvation.AggressivelyStarving:
		f.Setting = "fair_share_aggressive_starvation_timeout"
		f.Timeout = f64(p.AggressiveTimeout.Seconds())
		f.Message = who + " starves aggressively: below its fair share " + since + ", longer than fair_share_aggressive_starvation_timeout " +
			fmtSecs(p.AggressiveTimeout) + "; it may preempt aggressively preemptible allocations too"
	}
	if p.Aggressive && tr.State != starvation.AggressivelyStarving {
		at := tr.BelowSince.Add(p.AggressiveTimeout)
		in := max(at.Sub(now), 0)
		f.AggressiveTimeout, f.AggressivelyStarves = f64(p.AggressiveTimeout.Seconds()), f64(in.Seconds())
	}
	fs = append(fs, rankedFinding{rankStarvation, f})
	if !p.Aggressive && tr.State == starvation.Starving {
		fs = append(fs, rankedFinding{rankStarvation, Finding{Code: FindingAggressiveStarvationDisabled, Setting: "enable_aggressive_starvation",
			Message: who + " cannot starve aggressively: enable_aggressive_starvation is false on its path, so it never preempts aggressively preemptible allocations"}})
	}
	return fs
}

// explainRoom: whether a resource limit, the nodes or the preemption rules
// keep the operation from starting its next job.
func (s *Scheduler) explainRoom(o *operation, fs []rankedFinding) []rankedFinding {
	// The smallest pending job in each resource: a limit or a node blocks
	// the operation when no pending task fits.
	var jobs []resource.Vec
	for i := range o.tasks {
		if o.tasks[i].pending.Load() > 0 {
			jobs = append(jobs, o.tasks[i].spec.Resources)
		}
	}
	if f, ok := s.limitBlocking(o, jobs); ok {
		return append(fs, rankedFinding{rankBinding, f})
	}
	snap := s.snap.Load()
	v := o.view.Load()
	if v == nil || !inSnapshot(snap, v) {
		return fs
	}
	sc := s.scanNodes(o, v, snap, jobs)
	filter := ""
	if sc.matching < sc.nodes {
		filter = " (" + plural(sc.matching, "node") + " of " + strconv.FormatInt(sc.nodes, 10) + " pass its scheduling tag filter)"
	}
	if sc.withRoom > 0 {
		return append(fs, rankedFinding{rankBinding, Finding{Code: FindingNodeHasRoom,
			Nodes: i64(sc.nodes), MatchingNodes: i64(sc.matching), NodesWithRoom: i64(sc.withRoom),
			Message: plural(sc.withRoom, "node") + " with room for a job of operation " + o.id + filter +
				": it starts there at a node's next heartbeat, after the operations less satisfied than it"}})
	}
	f := Finding{Code: FindingNoNodeFits, Setting: "scheduling_tag_filter", Nodes: i64(sc.nodes), MatchingNodes: i64(sc.matching), NodesWithRoom: i64(0),
		Message: "no node that passes the scheduling tag filter of operation " + o.id + filter + " has room for one of its jobs"}
	if sc.matching == sc.nodes {
		f.Setting = ""
		f.Message = "no node has room for a job of operation " + o.id + " (" + plural(sc.nodes, "node") + ")"
	}
	fs = append(fs, rankedFinding{rankBinding, f})
	if v.priority == PriorityNone {
		return fs
	}
	vf := Finding{Candidates: i64(sc.candidates), Protected: sc.protected}
	if sc.preemptible > 0 {
		vf.Code = FindingPreemptibleVictims
		vf.Message = plural(sc.preemptible, "allocation") + " of other operations on those nodes may be preempted for operation " + o.id +
			": a node's heartbeat preempts them when that makes room for one of its jobs"
		return append(fs, rankedFinding{rankBinding, vf})
	}
	vf.Code = FindingNoPreemptibleVictims
	var why []string
	for _, p := range sc.protected {
		why = append(why, strconv.FormatInt(p.Count, 10)+" "+protectedText(p))
	}
	vf.Message = "operation " + o.id + " starves but none of the " + plural(sc.candidates, "allocation") + " of other operations on the nodes it may use can be preempted"
	if len(why) > 0 {
		vf.Message += ": " + strings.Join(why, "; ")
	}
	return append(fs, rankedFinding{rankBinding, vf})
}

func protectedText(p ProtectedRule) string {
	switch p.Rule {
	case "non_preemptible":
		return "non-preemptible (their operations are within their fair share or non_preemptible_resource_usage_threshold)"
	case "aggressive_only":
		return "aggressively preemptible only (the operation does not starve aggressively)"
	case "aggressive_not_allowed":
		return "aggressively preemptible in operations without allow_aggressive_preemption"
	case "normal_preemption_blocked":
		return "protected by allow_normal_preemption false at " + poolLabel(p.Pool)
	case "graceful":
		return "of graceful operations (never victims)"
	case "starving":
		return "of starving operations (allow_preemption_from_starving_operations is false)"
	}
	return p.Rule
}

// limitBlocking returns a resource_limit finding when the operation's own
// resource limits or an ancestor pool's leave no room for any pending job:
// the check a heartbeat makes before starting one (fitsLimits).
func (s *Scheduler) limitBlocking(o *operation, jobs []resource.Vec) (Finding, bool) {
	if len(jobs) == 0 || o.fitsAny(jobs) {
		return Finding{}, false
	}
	type owner struct {
		name, label string
		c           *limitCounter
	}
	var owners []owner
	if o.own != nil {
		owners = append(owners, owner{o.id, "operation " + o.id, o.own})
	}
	for p := s.tree.Parent(o.treeID); p != tree.None; p = s.tree.Parent(p) {
		if c := s.counters[p]; c != nil {
			owners = append(owners, owner{s.tree.Name(p), poolLabel(s.tree.Name(p)), c})
		}
	}
	for _, ow := range owners {
		for _, j := range jobs {
			for r, x := range j {
				u := ow.c.usage[r].Load()
				if x == 0 || u+x <= ow.c.limits[r] {
					continue
				}
				k := resource.Kind(r)
				f := Finding{Code: FindingResourceLimit, Pool: ow.name, Setting: "resource_limits", Resource: k.String(),
					Amount: f64(unitAmount(k, u)), LimitAmount: f64(unitAmount(k, ow.c.limits[r])), JobAmount: f64(unitAmount(k, x))}
				f.Message = "resource_limits of " + ow.label + " in " + k.String() + ": " + fmtNum(unitAmount(k, u)) + " of " + fmtNum(unitAmount(k, ow.c.limits[r])) +
					" used, and a job of operation " + o.id + " needs " + fmtNum(unitAmount(k, x)) + " more"
				return f, true
			}
		}
	}
	return Finding{}, false
}

// fitsAny reports whether some job fits under every limit the operation
// charges.
func (o *operation) fitsAny(jobs []resource.Vec) bool {
	for _, j := range jobs {
		if o.fitsLimits(j) {
			return true
		}
	}
	return false
}

// unitAmount converts a resource amount to its unit (cpu in cores).
func unitAmount(k resource.Kind, x int64) float64 {
	if k == resource.CPU {
		return float64(x) / resource.CPUScale
	}
	return float64(x)
}

// nodeScan is what explainRoom found on the nodes.
type nodeScan struct {
	nodes, matching, withRoom int64
	candidates, preemptible   int64
	protected                 []ProtectedRule
}

// scanNodes looks at every registered node, one shard mutex at a time, as
// the regular and preemptive stages would for the operation: whether it
// matches the operation's filter class, has room for a pending job
// (canStartMore, then a free fit), and which of its allocations of other
// operations the operation's preemptive stage may take (collectVictims'
// rules: statusOf, blockedByAncestor, allow_aggressive_preemption).
func (s *Scheduler) scanNodes(o *operation, v *opView, snap *Snapshot, jobs []resource.Vec) nodeScan {
	var sc nodeScan
	st := stage{target: v.priority, aggressive: v.priority == PriorityAggressive}
	counts := map[string]int64{}
	blockedAt := map[*operation]string{}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.nodes.all(func(n *node) {
			if s.lastNow.Sub(n.lastHeartbeat) > s.cfg.NodeHeartbeatTimeout {
				return
			}
			sc.nodes++
			if !n.matches(snap.tags, v.class) {
				return
			}
			sc.matching++
			if s.canStartMore(n, n.usage, resource.Vec{}, 0) {
				free := n.limits.Sub(n.usage)
				for _, j := range jobs {
					if free.Dominates(j) {
						sc.withRoom++
						break
					}
				}
			}
			if v.priority == PriorityNone {
				return
			}
			for _, a := range n.allocs {
				if a.preempted || a.op == o {
					continue
				}
				sc.candidates++
				rule := ""
				switch a.op.pre.statusOf(a) {
				case NonPreemptible:
					rule = "non_preemptible"
				case AggressivelyPreemptible:
					if !st.aggressive {
						rule = "aggressive_only"
					} else if av := a.op.view.Load(); av == nil || !av.allowAggressive {
						rule = "aggressive_not_allowed"
					}
				}
				if rule == "" && s.blockedByAncestor(a.op, &st) {
					rule = "starving"
					switch {
					case a.op.graceful():
						rule = "graceful"
					case st.target == PriorityNormal && a.op.view.Load().normalBlocked:
						rule = "normal_preemption_blocked"
						if _, ok := blockedAt[a.op]; !ok {
							blockedAt[a.op] = s.normalBlockedAt(a.op.treeID)
						}
						rule += "\x00" + blockedAt[a.op]
					}
				}
				if rule == "" {
					sc.preemptible++
					continue
				}
				counts[rule]++
			}
		})
		sh.mu.Unlock()
	}
	for k, n := range counts {
		rule, pool, _ := strings.Cut(k, "\x00")
		sc.protected = append(sc.protected, ProtectedRule{Rule: rule, Count: n, Pool: pool})
	}
	slices.SortFunc(sc.protected, func(a, b ProtectedRule) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Pool, b.Pool))
	})
	return sc
}

// normalBlockedAt names the lowest element on id's path (the operation or
// a pool) with allow_normal_preemption false.
func (s *Scheduler) normalBlockedAt(id tree.ID) string {
	for p := s.tree.Parent(id); p != tree.None; p = s.tree.Parent(p) {
		if !s.tree.Pool(p).AllowNormalPreemption.Or(true) {
			return s.tree.Name(p)
		}
	}
	return ""
}

// explainBound says which constraint bounds element id's fair share, read
// from the last update's attributes of the element and its ancestors: its
// demand; its own resource limits or the nodes its scheduling tag filter
// matches; an ancestor's fair share bound by its limits; its strong or
// integral guarantee; or its weight among the siblings that demand
// resources.
func (s *Scheduler) explainBound(id tree.ID, fs []rankedFinding) []rankedFinding {
	t := s.tree
	a := s.fs.Attributes(id)
	f, d := a.FairShare.Total, a.DemandShare
	k := dominant(a)
	name := t.Name(id)
	who := "operation " + name
	if !t.IsOperation(id) {
		who = poolLabel(name)
	}
	if d.MaxComponent() <= resource.Epsilon {
		return fs
	}
	if f.Add(resource.Uniform(resource.LargeEpsilon)).Dominates(d) {
		return append(fs, rankedFinding{rankBound, Finding{Code: FindingBoundByDemand, Resource: k.String(),
			FairShare: f64(roundTo(f[k], 6)), Demand: f64(roundTo(d[k], 6)), Bound: f64(roundTo(d[k], 6)),
			Message: "the fair share of " + who + " is its whole demand, " + fmtNum(d[k]) + " of the cluster's " + k.String() + ": it is bounded by its demand only"}})
	}
	// Its own limits: resource_limits, or the nodes its filter matches.
	l := a.LimitsShare
	for r := range resource.Count {
		if l[r] >= 1 || f[r]+resource.LargeEpsilon < l[r] || d[r] <= f[r]+resource.LargeEpsilon {
			continue
		}
		kr := resource.Kind(r)
		var configured tree.PartialVec
		if t.IsOperation(id) {
			configured = t.Operation(id).ResourceLimits
		} else {
			configured = t.Pool(id).ResourceLimits
		}
		fd := Finding{Resource: kr.String(), Pool: name, FairShare: f64(roundTo(f[r], 6)), Demand: f64(roundTo(d[r], 6)), Bound: f64(roundTo(l[r], 6))}
		if configured.Set[r] {
			fd.Code, fd.Setting = FindingBoundByResourceLimit, "resource_limits"
			fd.Message = "the fair share of " + who + " is bounded by its resource_limits: " + fmtNum(l[r]) + " of the cluster's " + kr.String() +
				" (it demands " + fmtNum(d[r]) + ")"
		} else {
			fd.Code, fd.Setting = FindingBoundByTagFilter, "scheduling_tag_filter"
			fd.Message = "the fair share of " + who + " is bounded by the nodes its scheduling tag filter matches: " + fmtNum(l[r]) +
				" of the cluster's " + kr.String() + " (it demands " + fmtNum(d[r]) + ")"
		}
		return append(fs, rankedFinding{rankBound, fd})
	}
	// An ancestor whose fair share is at its own limits while it demands more.
	for p := t.Parent(id); p != tree.None && p != tree.Root; p = t.Parent(p) {
		pa := s.fs.Attributes(p)
		for r := range resource.Count {
			pl := pa.LimitsShare[r]
			if pl >= 1 || pa.FairShare.Total[r]+resource.LargeEpsilon < pl || pa.DemandShare[r] <= pa.FairShare.Total[r]+resource.LargeEpsilon {
				continue
			}
			kr := resource.Kind(r)
			pn := t.Name(p)
			setting := "resource_limits"
			if !t.Pool(p).ResourceLimits.Set[r] {
				setting = "scheduling_tag_filter"
			}
			return append(fs, rankedFinding{rankBound, Finding{Code: FindingBoundByAncestor, Pool: pn, Setting: setting, Resource: kr.String(),
				FairShare: f64(roundTo(f[r], 6)), Demand: f64(roundTo(d[r], 6)), Bound: f64(roundTo(pl, 6)), ParentFairShare: f64(roundTo(pa.FairShare.Total[r], 6)),
				Message: "the fair share of " + who + " is bounded by " + setting + " of its ancestor " + poolLabel(pn) + ": " + fmtNum(pl) +
					" of the cluster's " + kr.String() + " for its whole subtree, which demands " + fmtNum(pa.DemandShare[r])}})
		}
	}
	if g := a.FairShare.StrongGuarantee[k]; g > resource.LargeEpsilon && a.FairShare.WeightProportional[k] <= resource.LargeEpsilon {
		return append(fs, rankedFinding{rankBound, Finding{Code: FindingStrongGuarantee, Pool: s.guaranteeOwner(id, k), Setting: "strong_guarantee_resources",
			Resource: k.String(), FairShare: f64(roundTo(f[k], 6)), Demand: f64(roundTo(d[k], 6)), Guarantee: f64(roundTo(g, 6)),
			Message: "the fair share of " + who + " is its strong guarantee: " + fmtNum(g) + " of the cluster's " + k.String() +
				" (from " + poolLabel(s.guaranteeOwner(id, k)) + "), and nothing is left to share by weight; it demands " + fmtNum(d[k])}})
	}
	if g := a.FairShare.IntegralGuarantee[k]; g > resource.LargeEpsilon && a.FairShare.WeightProportional[k] <= resource.LargeEpsilon {
		return append(fs, rankedFinding{rankBound, Finding{Code: FindingIntegralGuarantee, Setting: "integral_guarantees",
			Resource: k.String(), FairShare: f64(roundTo(f[k], 6)), Demand: f64(roundTo(d[k], 6)), Guarantee: f64(roundTo(g, 6)),
			Message: "the fair share of " + who + " is its integral guarantee: " + fmtNum(g) + " of the cluster's " + k.String() +
				", and nothing is left to share by weight; it demands " + fmtNum(d[k])}})
	}
	p := t.Parent(id)
	if p == tree.None {
		return fs
	}
	pa := s.fs.Attributes(p)
	sum, guaranteed := 0.0, 0.0
	n := 0
	for c := t.FirstChild(p); c != tree.None; c = t.NextSibling(c) {
		ca := s.fs.Attributes(c)
		if ca.DemandShare.MaxComponent() > resource.Epsilon && (!t.IsOperation(c) || s.byTree[c] != nil && s.byTree[c].fsGen == s.fsGen) {
			sum += ca.Weight
			n++
			guaranteed += ca.FairShare.StrongGuarantee[k] + ca.FairShare.IntegralGuarantee[k]
		}
	}
	pn := t.Name(p)
	if t.Pool(p).Mode == tree.ModeFIFO && n > 1 {
		// A FIFO pool gives its fair share to its children in its order
		// (fifo_sort_parameters): name the ones that hold a share.
		var ahead []string
		for c := t.FirstChild(p); c != tree.None; c = t.NextSibling(c) {
			if c != id && s.fs.Attributes(c).FairShare.Total.MaxComponent() > resource.LargeEpsilon && len(ahead) < 10 {
				ahead = append(ahead, t.Name(c))
			}
		}
		return append(fs, rankedFinding{rankBound, Finding{Code: FindingFifoOrder, Pool: pn, Setting: "mode", Resource: k.String(),
			FairShare: f64(roundTo(f[k], 6)), Demand: f64(roundTo(d[k], 6)), ParentFairShare: f64(roundTo(pa.FairShare.Total[k], 6)), Operations: ahead,
			Message: poolLabel(pn) + " is in fifo mode: its fair share, " + fmtNum(pa.FairShare.Total[k]) + " of the cluster's " + k.String() +
				", goes to its children in the order of fifo_sort_parameters, and " + who + " gets " + fmtNum(f[k]) + " of it" + after(ahead) +
				"; it demands " + fmtNum(d[k])}})
	}
	if n == 1 && p != tree.Root {
		// The only child of its parent that demands: its fair share is the
		// parent's, bounded by what bounds the parent's.
		fs = append(fs, rankedFinding{rankBound, Finding{Code: FindingWholeParent, Pool: pn, Resource: k.String(),
			FairShare: f64(roundTo(f[k], 6)), ParentFairShare: f64(roundTo(pa.FairShare.Total[k], 6)),
			Message: "the fair share of " + who + " is all of the fair share of " + poolLabel(pn) + ", " + fmtNum(pa.FairShare.Total[k]) +
				" of the cluster's " + k.String() + ": it is the only child of " + poolLabel(pn) + " that demands resources"}})
		return s.explainBound(p, fs)
	}
	fd := Finding{Code: FindingWeightShare, Pool: pn, Setting: "weight", Resource: k.String(),
		FairShare: f64(roundTo(f[k], 6)), Demand: f64(roundTo(d[k], 6)), Weight: f64(a.Weight), WeightSum: f64(sum),
		ParentFairShare: f64(roundTo(pa.FairShare.Total[k], 6))}
	rest := pa.FairShare.Total[k]
	of := fmtNum(rest) + " of the cluster's " + k.String() + " that " + poolLabel(pn) + " has"
	if guaranteed > resource.LargeEpsilon {
		rest = max(rest-guaranteed, 0)
		fd.Shared = f64(roundTo(rest, 6))
		of = fmtNum(rest) + " of the cluster's " + k.String() + " that the children's guarantees leave of the " + fmtNum(pa.FairShare.Total[k]) + " " + poolLabel(pn) + " has"
	}
	fd.Message = "the fair share of " + who + " is shared by weight among the " + plural(int64(n), "child") + " of " + poolLabel(pn) +
		" that demand resources: weight " + fmtNum(a.Weight) + " of " + fmtNum(sum) + " of the " + of + ", " + fmtNum(a.FairShare.WeightProportional[k])
	if g := a.FairShare.StrongGuarantee[k] + a.FairShare.IntegralGuarantee[k]; g > resource.LargeEpsilon {
		fd.Guarantee = f64(roundTo(g, 6))
		fd.Message += ", on top of its guarantee " + fmtNum(g)
	}
	fd.Message += "; it demands " + fmtNum(d[k])
	return append(fs, rankedFinding{rankBound, fd})
}

// after names the children that hold a FIFO pool's share besides the element.
func after(ahead []string) string {
	if len(ahead) == 0 {
		return ""
	}
	return " (the rest goes to " + strings.Join(ahead, ", ") + ")"
}

// guaranteeOwner names the element or the lowest ancestor that configures
// a strong guarantee in resource k (an operation's is inferred from its
// pool's).
func (s *Scheduler) guaranteeOwner(id tree.ID, k resource.Kind) string {
	for p := id; p != tree.None; p = s.tree.Parent(p) {
		if !s.tree.IsOperation(p) && s.tree.Pool(p).StrongGuarantee.Set[k] {
			return s.tree.Name(p)
		}
	}
	return s.tree.Name(s.tree.Parent(id))
}

// Preemption is one preemption of an operation's allocation as a heartbeat
// decided it (PreemptDecision), with the node and the time, for
// ExplainOperation.
type Preemption struct {
	Time     clock.Time
	Node     string
	Decision PreemptDecision
}

// explainPreempted lists the operation's allocations that were preempted
// and still run (from the nodes), then the recent preemptions the caller
// logged, with who preempted them and why.
func (s *Scheduler) explainPreempted(o *operation, recent []Preemption, fs []rankedFinding) []rankedFinding {
	type running struct {
		a    AllocationInfo
		node string
	}
	var found []running
	if o.preemptedCount.Load() > 0 {
		for i := range s.shards {
			sh := &s.shards[i]
			sh.mu.Lock()
			sh.nodes.all(func(n *node) {
				for _, a := range n.allocs {
					if a.op == o && a.preempted {
						found = append(found, running{AllocationInfo{ID: a.id, Status: a.status, Deadline: a.deadline}, n.name})
					}
				}
			})
			sh.mu.Unlock()
		}
		slices.SortFunc(found, func(x, y running) int { return cmp.Compare(x.a.ID, y.a.ID) })
	}
	deadline := func(f *Finding, d clock.Time) {
		f.Deadline = secs(d)
		f.Message += "; it still runs and must stop by " + fmtNum(d.Seconds()) + " s"
	}
	logged := map[uint64]bool{}
	for _, p := range recent {
		f := PreemptionFinding(p)
		for _, r := range found {
			if r.a.ID == p.Decision.Allocation {
				deadline(&f, r.a.Deadline)
			}
		}
		logged[p.Decision.Allocation] = true
		fs = append(fs, rankedFinding{rankContext, f})
	}
	for _, r := range found {
		if logged[r.a.ID] {
			continue
		}
		f := Finding{Code: FindingPreemptedAllocation, Allocation: u64(r.a.ID), Node: r.node, Status: r.a.Status.String(),
			Message: "allocation " + strconv.FormatUint(r.a.ID, 10) + " of operation " + o.id + " on node " + r.node + " was preempted (" +
				r.a.Status.String() + ")"}
		deadline(&f, r.a.Deadline)
		fs = append(fs, rankedFinding{rankContext, f})
	}
	return fs
}

// PreemptionFinding is the preempted_allocation finding of one logged
// preemption: who preempted the allocation and why.
func PreemptionFinding(p Preemption) Finding {
	d := &p.Decision
	f := Finding{Code: FindingPreemptedAllocation, Allocation: u64(d.Allocation), Node: p.Node, Time: secs(p.Time),
		Reason: d.Reason.String(), Status: d.Status.String()}
	f.Message = "allocation " + strconv.FormatUint(d.Allocation, 10) + " of operation " + d.Operation + " on node " + p.Node +
		" was preempted at " + fmtNum(p.Time.Seconds()) + " s (" + d.Status.String() + "): " + d.Reason.String()
	if d.ForOperation != "" {
		f.ForOperation, f.ForAllocation = d.ForOperation, u64(d.ForAllocation)
		f.Message += ", to make room for allocation " + strconv.FormatUint(d.ForAllocation, 10) + " of operation " + d.ForOperation
	}
	return f
}

// ExplainPool explains a pool's fair share and starvation at now: its
// shares, starvation, operation counts against its limits, resource
// limits, and what bounds its fair share.
func (s *Scheduler) ExplainPool(name string, now clock.Time) (Explanation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tree
	id, ok := t.Lookup(name)
	if !ok || t.IsOperation(id) {
		return Explanation{}, errorf(tree.CodeUnknownPool, "name", "cannot find pool \"%s\"", name)
	}
	info := s.poolInfo(id)
	e := Explanation{Pool: name, State: "normal"}
	switch {
	case info.Starvation != starvation.NonStarving:
		e.State = info.Starvation.String()
	case info.BelowFairShare:
		e.State = "below_fair_share"
	}
	var fs []rankedFinding
	who := poolLabel(name)
	if running, limit := info.RunningOperationCount, info.MaxRunningOperationCount; running >= limit || info.PendingOperationCount > 0 {
		queue := s.limits.Pending(id, nil)
		f := Finding{Code: FindingRunningOperationLimit, Pool: name, Setting: "max_running_operation_count", Running: i64(running), Limit: i64(limit),
			QueueLength: i64(int64(len(queue)))}
		for _, q := range queue[:min(len(queue), 10)] {
			f.Operations = append(f.Operations, t.Name(q))
		}
		f.Message = "max_running_operation_count " + strconv.FormatInt(running, 10) + " of " + strconv.FormatInt(limit, 10) + " at " + who + ": " +
			plural(int64(len(queue)), "operation") + " wait in its pending queue (" + strconv.FormatInt(info.PendingOperationCount, 10) + " in its subtree)"
		if running < limit {
			f.Message = strconv.FormatInt(running, 10) + " of max_running_operation_count " + strconv.FormatInt(limit, 10) + " run at " + who + ": " +
				plural(info.PendingOperationCount, "operation") + " of its subtree wait behind the limits of pools below it"
		}
		fs = append(fs, rankedFinding{rankBinding, f})
	}
	if c, l := info.OperationCount, info.MaxOperationCount; c >= l {
		fs = append(fs, rankedFinding{rankBinding, Finding{Code: FindingOperationLimit, Pool: name, Setting: "max_operation_count", Running: i64(c), Limit: i64(l),
			Message: "max_operation_count " + strconv.FormatInt(c, 10) + " of " + strconv.FormatInt(l, 10) + " at " + who + ": it accepts no new operation"}})
	}
	if s.fsGen == 0 || s.poolsAtUpdate != t.StructureVersion() {
		fs = append(fs, rankedFinding{rankBinding, Finding{Code: FindingNotUpdated,
			Message: "the pool tree changed after the last fair-share update: " + who + " has its shares from the next update on"}})
		e.Findings = sortFindings(fs)
		return e, nil
	}
	a := s.fs.Attributes(id)
	k := dominant(a)
	sh := "usage " + fmtNum(a.UsageShare[k]) + ", fair share " + fmtNum(a.FairShare.Total[k]) + " and demand " + fmtNum(a.DemandShare[k]) + " of the cluster's " + k.String()
	status := Finding{Code: FindingAtFairShare, Resource: k.String(), Shares: resourceShares(a),
		Usage: f64(roundTo(a.UsageShare[k], 6)), FairShare: f64(roundTo(a.FairShare.Total[k], 6)), Demand: f64(roundTo(a.DemandShare[k], 6)),
		Message: who + " uses its fair share or more: " + sh}
	if id != tree.Root {
		e := s.effectiveAt(id)
		status.Tolerance = f64(e.tolerance)
		switch {
		case !s.cfg.EnablePoolStarvation:
			if info.LocalSatisfaction < 1 {
				status.Code, status.Message = FindingBelowFairShare, who+" uses less than its fair share: "+sh
			}
			fs = append(fs, rankedFinding{rankStatus, status})
			fs = append(fs, rankedFinding{rankStarvation, Finding{Code: FindingPoolStarvationDisabled, Setting: "enable_pool_starvation",
				Message: "enable_pool_starvation is false: pools do not starve, only operations do"}})
		case info.BelowFairShare:
			status.Code, status.Message = FindingBelowFairShare, who+" is below its fair share: "+sh
			fs = append(fs, rankedFinding{rankStatus, status})
			if st := s.poolStarvation[name]; st != nil {
				fs = starvationFindings(who, st.tracker, e.params, now, fs)
			}
		case info.LocalSatisfaction < 1:
			status.Code, status.Setting = FindingWithinTolerance, "fair_share_starvation_tolerance"
			status.Message = who + " uses less than its fair share (" + sh + ") but not less than fair_share_starvation_tolerance " +
				fmtNum(e.tolerance) + " of it: it is not below its fair share"
			fs = append(fs, rankedFinding{rankStatus, status})
		default:
			fs = append(fs, rankedFinding{rankStatus, status})
		}
	} else {
		fs = append(fs, rankedFinding{rankStatus, status})
	}
	if c := s.counters[id]; c != nil {
		for r := range resource.Count {
			u, l := c.usage[r].Load(), c.limits[r]
			if l >= resource.Infinite || u < l {
				continue
			}
			kr := resource.Kind(r)
			fs = append(fs, rankedFinding{rankWhy, Finding{Code: FindingResourceLimit, Pool: name, Setting: "resource_limits", Resource: kr.String(),
				Amount: f64(unitAmount(kr, u)), LimitAmount: f64(unitAmount(kr, l)),
				Message: "resource_limits of " + who + " in " + kr.String() + ": " + fmtNum(unitAmount(kr, u)) + " of " + fmtNum(unitAmount(kr, l)) +
					" used: no operation below it starts a job that needs more " + kr.String()}})
		}
	}
	if id != tree.Root {
		fs = s.explainBound(id, fs)
	}
	e.Findings = sortFindings(fs)
	return e, nil
}
