package scenario

import (
	"math"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// fmtShare formats component k of a share (the largest component when k < 0)
// with 4 significant digits, so that float noise does not reach the golden
// files.
func fmtShare(s resource.Share, k resource.Kind) string {
	v := s.MaxComponent()
	if k >= 0 {
		v = s[k]
	}
	if math.Abs(v) < 5e-10 {
		v = 0
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// fmtVec formats a resource vector with the script's resource names, leaving
// out zero components: {slots:10 cpu:10 memory:100G}.
func fmtVec(v resource.Vec) string {
	var b strings.Builder
	b.WriteByte('{')
	for k := resource.Kind(0); k < resource.Count; k++ {
		if v[k] == 0 {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(' ')
		}
		b.WriteString(kindName(k) + ":" + fmtAmount(k, v[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func fmtAmount(k resource.Kind, n int64) string {
	switch k {
	case resource.CPU:
		return fmtFloat(float64(n) / resource.CPUScale)
	case resource.Memory, resource.Network:
		for _, u := range []struct {
			suffix string
			size   int64
		}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
			if n != 0 && n%u.size == 0 {
				return fmtInt(n/u.size) + u.suffix
			}
		}
	}
	return fmtInt(n)
}

// formatEvents writes one line per event, "time node kind allocation
// attributes", merging runs of events that differ only in consecutive
// allocation IDs, ascending or descending, into one line with an ID range
// (0:1..0:10, or 0:10..0:8 for victims taken newest first).
func formatEvents(evs []Event) string {
	var b strings.Builder
	for i := 0; i < len(evs); {
		e := &evs[i]
		attrs := eventAttrs(e)
		j := i + 1
		var step uint64 // +1 or -1 (as a uint64) once the run has two events
		for j < len(evs) && evs[j].T == e.T && evs[j].Node == e.Node && evs[j].Kind == e.Kind && eventAttrs(&evs[j]) == attrs {
			d := evs[j].Allocation - evs[j-1].Allocation
			if (step == 0 && d != 1 && d != ^uint64(0)) || (step != 0 && d != step) {
				break
			}
			step = d
			j++
		}
		b.WriteString(fmtFloat(e.T) + " " + e.Node + " " + e.Kind.String() + " " + allocName(e.Allocation))
		if j > i+1 {
			b.WriteString(".." + allocName(evs[j-1].Allocation))
		}
		b.WriteString(attrs + "\n")
		i = j
	}
	return b.String()
}

// eventAttrs formats what an event says besides its time, node, kind and allocation.
func eventAttrs(e *Event) string {
	s := " op=" + e.Operation
	switch e.Kind {
	case EventStart:
		s += " task=" + strconv.Itoa(e.Start.Task)
	case EventPreempt:
		p := &e.Preempt
		s += " status=" + p.Status.String() + " timeout=" + fmtFloat(p.Timeout.Seconds()) + " reason=" + strconv.Quote(p.Reason.String())
		if p.ForAllocation != 0 || p.ForOperation != "" {
			s += " for=" + allocName(p.ForAllocation) + "/" + p.ForOperation
		}
	case EventAbort:
		s += " reason=" + strconv.Quote(e.Abort.Reason.String())
		if e.Abort.Reason == schedule.AbortOperationFinished {
			s += " state=" + e.Abort.OperationState.String()
		}
	}
	return s
}

// formatStats counts the events per operation, in the order operations first
// appear in the log.
func formatStats(evs []Event) string {
	type counts struct {
		kinds   [len(eventKindNames)]int
		reasons [schedule.PreemptReasonCount]int
	}
	var order []string
	per := map[string]*counts{}
	for i := range evs {
		e := &evs[i]
		c := per[e.Operation]
		if c == nil {
			c = &counts{}
			per[e.Operation] = c
			order = append(order, e.Operation)
		}
		c.kinds[e.Kind]++
		if e.Kind == EventPreempt {
			c.reasons[e.Preempt.Reason]++
		}
	}
	var b strings.Builder
	for _, op := range order {
		c := per[op]
		b.WriteString(op + ":")
		for k, n := range c.kinds {
			if n == 0 {
				continue
			}
			b.WriteString(" " + eventKindNames[k] + "=" + strconv.Itoa(n))
			if EventKind(k) == EventPreempt {
				sep := " ("
				for r, m := range c.reasons {
					if m > 0 {
						b.WriteString(sep + schedule.PreemptReason(r).String() + ": " + strconv.Itoa(m))
						sep = ", "
					}
				}
				b.WriteString(")")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func status(below bool) string {
	if below {
		return "below_fair_share"
	}
	return "normal"
}

// formatTree writes the pool tree after an update: every pool and every
// operation that is not finished, indented by depth; shares are component k.
func (c *Cluster) formatTree(k resource.Kind) string {
	pools := c.s.Pools(nil)
	ops := c.s.Operations(nil)
	childPools := map[string][]int{}
	opsOf := map[string][]int{}
	for i := range pools {
		if pools[i].Parent != "" {
			childPools[pools[i].Parent] = append(childPools[pools[i].Parent], i)
		}
	}
	for i := range ops {
		if !ops[i].State.Final() {
			opsOf[ops[i].Pool] = append(opsOf[ops[i].Pool], i)
		}
	}
	var b strings.Builder
	var walk func(p *schedule.PoolInfo, indent string)
	walk = func(p *schedule.PoolInfo, indent string) {
		a := &p.Attrs
		b.WriteString(indent + p.Name + ": fair_share=" + fmtShare(a.FairShare.Total, k) + " usage=" + fmtShare(a.UsageShare, k) + " demand=" + fmtShare(a.DemandShare, k))
		if p.Name != tree.RootName {
			b.WriteString(" status=" + status(p.BelowFairShare) + " starvation=" + p.Starvation.String())
		}
		b.WriteString("\n")
		for _, i := range opsOf[p.Name] {
			o := &ops[i]
			b.WriteString(indent + "  " + o.ID + ": ")
			if o.State != schedule.StateRunning {
				b.WriteString(o.State.String() + "\n")
				continue
			}
			a := &o.Attrs
			b.WriteString("fair_share=" + fmtShare(a.FairShare.Total, k) + " usage=" + fmtShare(a.UsageShare, k) + " demand=" + fmtShare(a.DemandShare, k) +
				" status=" + status(o.BelowFairShare) + " starvation=" + o.Starvation.String() + " priority=" + o.PreemptionPriority.String() + "\n")
		}
		for _, i := range childPools[p.Name] {
			walk(&pools[i], indent+"  ")
		}
	}
	walk(&pools[0], "")
	return b.String()
}

// formatOperation writes an operation's view.
func formatOperation(b *strings.Builder, o *schedule.OperationInfo, k resource.Kind) {
	b.WriteString(o.ID + ": state=" + o.State.String() + " pool=" + o.Pool +
		" running_allocations=" + fmtInt(o.RunningAllocations) + " preempted_allocations=" + fmtInt(o.PreemptedAllocations) +
		" pending_jobs=" + fmtInt(o.PendingJobs) + " completed_jobs=" + fmtInt(o.CompletedJobs))
	if o.WaitingPool != "" {
		b.WriteString(" waiting_in=" + o.WaitingPool + " (max_running_operation_count=" + fmtInt(o.WaitingLimit) + ")")
	}
	a := &o.Attrs
	b.WriteString("\n  fair_share=" + fmtShare(a.FairShare.Total, k) + " usage=" + fmtShare(a.UsageShare, k) + " demand=" + fmtShare(a.DemandShare, k) +
		" satisfaction=" + strconv.FormatFloat(o.Satisfaction, 'g', 4, 64) + " status=" + status(o.BelowFairShare) +
		" starvation=" + o.Starvation.String() + " priority=" + o.PreemptionPriority.String())
	if o.HighSchedulingPriority {
		b.WriteString(" scheduling_priority=high")
	}
	b.WriteString("\n")
	if f := o.SchedulingTagFilter; !f.IsEmpty() {
		b.WriteString("  scheduling_tag_filter=" + strings.ReplaceAll(f.String(), " ", "") +
			" resource_limits=" + fmtVec(o.SchedulingTagFilterResourceLimits.V) + " limits_share=" + fmtShare(a.LimitsShare, k) + "\n")
	}
	// Only memory granularity makes it less than the whole cluster.
	if m := o.BestAllocationShare[resource.Memory]; m > 0 && m < 1 {
		b.WriteString("  best_allocation_share=" + fmtShare(o.BestAllocationShare, resource.Memory) + " limits_share=" + fmtShare(a.LimitsShare, resource.Memory) + " (memory)\n")
	}
	b.WriteString("  allocations by status:")
	for st, n := range o.AllocationsByStatus {
		b.WriteString(" " + schedule.PreemptionStatus(st).String() + "=" + fmtInt(n))
	}
	b.WriteString("\n")
}

// formatPool writes a pool's view.
func formatPool(b *strings.Builder, p *schedule.PoolInfo, k resource.Kind) {
	b.WriteString(p.Name + ":")
	if p.Parent != "" {
		b.WriteString(" parent=" + p.Parent)
	}
	b.WriteString(" operations=" + fmtInt(p.OperationCount) + " running_operations=" + fmtInt(p.RunningOperationCount) +
		" lightweight_running_operations=" + fmtInt(p.LightweightRunningOperationCount) + " pending_operations=" + fmtInt(p.PendingOperationCount) +
		" max_operation_count=" + fmtInt(p.MaxOperationCount) + " max_running_operation_count=" + fmtInt(p.MaxRunningOperationCount) + "\n")
	a := &p.Attrs
	b.WriteString("  fair_share=" + fmtShare(a.FairShare.Total, k) + " usage=" + fmtShare(a.UsageShare, k) + " demand=" + fmtShare(a.DemandShare, k) +
		" satisfaction=" + strconv.FormatFloat(p.Satisfaction, 'g', 4, 64) + " local_satisfaction=" + strconv.FormatFloat(p.LocalSatisfaction, 'g', 4, 64) +
		" status=" + status(p.BelowFairShare) + " starvation=" + p.Starvation.String() + "\n")
	b.WriteString("  fair_share: strong_guarantee=" + fmtShare(a.FairShare.StrongGuarantee, k) + " integral_guarantee=" + fmtShare(a.FairShare.IntegralGuarantee, k) +
		" weight_proportional=" + fmtShare(a.FairShare.WeightProportional, k) + "\n")
	if f := p.Config.SchedulingTagFilter; !f.IsEmpty() {
		b.WriteString("  scheduling_tag_filter=" + strings.ReplaceAll(f.String(), " ", "") +
			" resource_limits=" + fmtVec(p.SchedulingTagFilterResourceLimits.V) + " limits_share=" + fmtShare(a.LimitsShare, k) + "\n")
	}
	if in := &a.Integral; in.Type != tree.GuaranteeNone {
		b.WriteString("  integral: type=" + in.Type.String() + " accumulated_resource_ratio_volume=" + strconv.FormatFloat(in.AccumulatedResourceRatioVolume, 'g', 4, 64) + "\n")
	}
}

// formatNode writes a node's view, merging runs of allocations that differ
// only in consecutive IDs. An allocation whose usage is not what it was
// started with (requested) shows its usage.
func formatNode(b *strings.Builder, n *schedule.NodeInfo, requested map[uint64]resource.Vec) {
	b.WriteString(n.Name + ": limits=" + fmtVec(n.Limits) + " usage=" + fmtVec(n.Usage) + " preempted_usage=" + fmtVec(n.PreemptedUsage) +
		" allocations=" + strconv.Itoa(len(n.Allocations)) + " last_heartbeat=" + fmtFloat(n.LastHeartbeat.Seconds()))
	if len(n.Tags) > 0 {
		b.WriteString(" tags=" + strings.Join(n.Tags, ","))
	}
	if !n.Schedulable {
		b.WriteString(" unschedulable")
	}
	b.WriteString("\n")
	attrs := func(a *schedule.AllocationInfo) string {
		s := " op=" + a.Operation + " task=" + strconv.Itoa(a.Task) + " start=" + fmtFloat(a.Start.Seconds()) + " status=" + a.Status.String()
		if a.Preempted {
			s += " preempted deadline=" + fmtFloat(a.Deadline.Seconds())
		}
		if r, ok := requested[a.ID]; ok && r != a.Resources {
			s += " usage=" + fmtVec(a.Resources)
		}
		return s
	}
	as := n.Allocations
	for i := 0; i < len(as); {
		s := attrs(&as[i])
		j := i + 1
		for j < len(as) && as[j].ID == as[j-1].ID+1 && attrs(&as[j]) == s {
			j++
		}
		b.WriteString("  " + allocName(as[i].ID))
		if j > i+1 {
			b.WriteString(".." + allocName(as[j-1].ID))
		}
		b.WriteString(s + "\n")
		i = j
	}
}
