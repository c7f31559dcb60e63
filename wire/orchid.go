package wire

import (
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

func appendStatus(dst []byte, below bool, starving string, satisfaction float64) []byte {
	dst = append(dst, `,"satisfaction_ratio":`...)
	dst = appendFloat(dst, satisfaction)
	dst = append(dst, `,"status":"`...)
	if below {
		dst = append(dst, "below_fair_share"...)
	} else {
		dst = append(dst, "normal"...)
	}
	dst = append(dst, `","starvation_status":"`...)
	dst = append(dst, starving...)
	return append(dst, '"')
}

// AppendPoolOrchid appends a pool's orchid view (docs/api.md#the-orchid): its name,
// parent, mode, the fair-share attributes of the last update, status,
// starvation status, operation counts and effective operation limits, its
// scheduling_tag_filter with the resources of the nodes it matches (when
// it has one), and for integral pools their volume attributes.
func AppendPoolOrchid(dst []byte, p *schedule.PoolInfo) []byte {
	dst = append(dst, `{"name":`...)
	dst = jsonpath.AppendString(dst, p.Name)
	if p.Parent != "" {
		dst = append(dst, `,"parent":`...)
		dst = jsonpath.AppendString(dst, p.Parent)
	}
	dst = append(dst, `,"mode":"`...)
	dst = append(dst, p.Config.Mode.String()...)
	dst = append(dst, '"')
	dst = appendShares(append(dst, ','), &p.Attrs)
	dst = appendStatus(dst, p.BelowFairShare, p.Starvation.String(), p.Satisfaction)
	dst = append(dst, `,"local_satisfaction_ratio":`...)
	dst = appendFloat(dst, p.LocalSatisfaction)
	for _, c := range [...]struct {
		k string
		v int64
	}{
		{"operation_count", p.OperationCount},
		{"running_operation_count", p.RunningOperationCount},
		{"lightweight_running_operation_count", p.LightweightRunningOperationCount},
		{"pending_operation_count", p.PendingOperationCount},
		{"max_operation_count", p.MaxOperationCount},
		{"max_running_operation_count", p.MaxRunningOperationCount},
	} {
		dst = strconv.AppendInt(appendKey(dst, c.k), c.v, 10)
	}
	if f := &p.Config.SchedulingTagFilter; !f.IsEmpty() {
		dst = appendTagFilter(dst, f)
		dst = appendPartial(dst, "scheduling_tag_filter_resource_limits", &p.SchedulingTagFilterResourceLimits)
	}
	if p.Config.Integral.Type != tree.GuaranteeNone {
		ig := p.Attrs.Integral
		// The attributes of a pool the last update has not seen yet still
		// name the configured type.
		ig.Type = p.Config.Integral.Type
		dst = appendIntegral(dst, &ig)
	}
	return append(dst, '}')
}

// AppendOperation appends an operation's view: GET /api/v1/operations/{id}
// (detailed false: state, pool, demand, usage, its scheduling_tag_filter
// when it has one, fair_share, usage_share, demand_share, status,
// starvation status, job and allocation counts) or the orchid's (detailed
// true: every fair-share attribute of docs/api.md#the-orchid, the best allocation share
// and the resources of the nodes its filter matches).
func AppendOperation(dst []byte, o *schedule.OperationInfo, detailed bool) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonpath.AppendString(dst, o.ID)
	dst = append(dst, `,"state":"`...)
	dst = append(dst, o.State.String()...)
	dst = append(dst, `","pool":`...)
	dst = jsonpath.AppendString(dst, o.Pool)
	dst = append(dst, `,"demand":`...)
	dst = AppendResources(dst, &o.Demand)
	dst = append(dst, `,"usage":`...)
	dst = AppendResources(dst, &o.Usage)
	dst = appendTagFilter(dst, &o.SchedulingTagFilter)
	if detailed {
		dst = appendShares(append(dst, ','), &o.Attrs)
		dst = append(dst, `,"best_allocation_share":`...)
		dst = appendShare(dst, &o.BestAllocationShare)
		if !o.SchedulingTagFilter.IsEmpty() {
			dst = appendPartial(dst, "scheduling_tag_filter_resource_limits", &o.SchedulingTagFilterResourceLimits)
		}
	} else {
		dst = append(dst, `,"fair_share":`...)
		dst = appendShare(dst, &o.Attrs.FairShare.Total)
		dst = append(dst, `,"usage_share":`...)
		dst = appendShare(dst, &o.Attrs.UsageShare)
		dst = append(dst, `,"demand_share":`...)
		dst = appendShare(dst, &o.Attrs.DemandShare)
	}
	dst = appendStatus(dst, o.BelowFairShare, o.Starvation.String(), o.Satisfaction)
	// An operation's satisfaction is its local one; the scheduling one is
	// what the regular stage orders by now, with the live usage.
	dst = append(dst, `,"local_satisfaction_ratio":`...)
	dst = appendFloat(dst, o.Satisfaction)
	dst = append(dst, `,"scheduling_satisfaction_ratio":`...)
	dst = appendFloat(dst, o.SchedulingSatisfaction)
	dst = append(dst, `,"scheduling_priority":"`...)
	if o.HighSchedulingPriority {
		dst = append(dst, "high"...)
	} else {
		dst = append(dst, "medium"...)
	}
	dst = append(dst, '"')
	dst = append(dst, `,"allocation_counts":{"running":`...)
	dst = strconv.AppendInt(dst, o.RunningAllocations, 10)
	for st, n := range o.AllocationsByStatus {
		dst = append(dst, `,"`...)
		dst = append(dst, schedule.PreemptionStatus(st).String()...)
		dst = append(dst, `":`...)
		dst = strconv.AppendInt(dst, n, 10)
	}
	dst = append(dst, `,"preempted":`...)
	dst = strconv.AppendInt(dst, o.PreemptedAllocations, 10)
	dst = append(dst, `},"preemption_priority":"`...)
	dst = append(dst, o.PreemptionPriority.String()...)
	dst = append(dst, `","pending_job_count":`...)
	dst = strconv.AppendInt(dst, o.PendingJobs, 10)
	dst = append(dst, `,"completed_job_count":`...)
	dst = strconv.AppendInt(dst, o.CompletedJobs, 10)
	dst = append(dst, `,"start_time_s":`...)
	dst = appendFloat(dst, o.StartTime.Seconds())
	if o.WaitingPool != "" {
		dst = append(dst, `,"waiting_for":{"pool":`...)
		dst = jsonpath.AppendString(dst, o.WaitingPool)
		dst = append(dst, `,"max_running_operation_count":`...)
		dst = strconv.AppendInt(dst, o.WaitingLimit, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// AppendNodeOrchid appends a node's orchid view: its limits, usage, the
// time and tags of its last heartbeat and its allocations with their preemption
// status (docs/semantics.md#preemption-statuses) and whether they were told to stop.
func AppendNodeOrchid(dst []byte, n *schedule.NodeInfo) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonpath.AppendString(dst, n.Name)
	dst = append(dst, `,"resource_limits":`...)
	dst = AppendResources(dst, &n.Limits)
	dst = append(dst, `,"resource_usage":`...)
	dst = AppendResources(dst, &n.Usage)
	dst = append(dst, `,"last_heartbeat_s":`...)
	dst = appendFloat(dst, n.LastHeartbeat.Seconds())
	dst = append(dst, `,"tags":[`...)
	for i, tg := range n.Tags {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonpath.AppendString(dst, tg)
	}
	dst = append(dst, `],"schedulable":`...)
	dst = strconv.AppendBool(dst, n.Schedulable)
	dst = append(dst, `,"allocations":[`...)
	for i := range n.Allocations {
		a := &n.Allocations[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendAllocationTask(dst, a.ID, a.Operation, a.Task, &a.Resources)
		dst = append(dst, `,"start_time_s":`...)
		dst = appendFloat(dst, a.Start.Seconds())
		dst = append(dst, `,"preemption_status":"`...)
		dst = append(dst, a.Status.String()...)
		dst = append(dst, `","preempted":`...)
		dst = strconv.AppendBool(dst, a.Preempted)
		if a.Preempted {
			dst = append(dst, `,"preemption_deadline_s":`...)
			dst = appendFloat(dst, a.Deadline.Seconds())
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// AppendNodeSummary writes a node of GET /api/v1/nodes: its id, resources,
// usage, tags, allocation count, and when it last sent a heartbeat (and how
// long before now that was).
func AppendNodeSummary(dst []byte, n *schedule.NodeSummary, now clock.Time) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonpath.AppendString(dst, n.Name)
	dst = append(dst, `,"resource_limits":`...)
	dst = AppendResources(dst, &n.Limits)
	dst = append(dst, `,"resource_usage":`...)
	dst = AppendResources(dst, &n.Usage)
	dst = append(dst, `,"tags":[`...)
	for i, tg := range n.Tags {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonpath.AppendString(dst, tg)
	}
	dst = append(dst, `],"allocation_count":`...)
	dst = strconv.AppendInt(dst, int64(n.AllocationCount), 10)
	dst = append(dst, `,"last_heartbeat_s":`...)
	dst = appendFloat(dst, n.LastHeartbeat.Seconds())
	dst = append(dst, `,"last_heartbeat_age_s":`...)
	dst = appendFloat(dst, max(now.Sub(n.LastHeartbeat), 0).Seconds())
	dst = append(dst, `,"schedulable":`...)
	dst = strconv.AppendBool(dst, n.Schedulable)
	return append(dst, '}')
}
