package wire

import "github.com/fairsched/fairsched/core/schedule"

// AppendPreemptReason appends the sentence of a preemption, without quotes,
// as the answer to a heartbeat writes it in allocations_to_preempt[].reason
// ("preempted to start allocation 1802 of operation op-21 (starving)"); the
// orchid's recent_preemptions repeat it. It allocates only to grow dst.
func AppendPreemptReason(dst []byte, d *schedule.PreemptDecision) []byte {
	return appendPreemptReason(dst, d)
}
