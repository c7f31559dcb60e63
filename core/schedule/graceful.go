package schedule

import "github.com/fairsched/fairsched/core/clock"

// preemptGracefully preempts every Preemptible allocation of a graceful
// operation on the node with the graceful timeout (docs/semantics.md#graceful-preemption): a graceful
// operation continuously sheds what it runs above its fair share.
func (s *Scheduler) preemptGracefully(now clock.Time, sh *shard, n *node, resp *Response) {
	if len(n.graceful) == 0 {
		return
	}
	// In ID order; preempting one allocation rebalances its operation's
	// lists, which may make a later one no longer Preemptible (preempt
	// checks under the operation's mutex).
	sh.victims = sh.victims[:0]
	for _, g := range n.graceful {
		if g.op.pre.statusOfRank(g.seq) == Preemptible {
			sh.victims = append(sh.victims, victim{a: g.a, status: Preemptible})
		}
	}
	for _, v := range sh.victims {
		a := v.a
		if a.op.State().Final() {
			continue // aborted on its next report
		}
		s.preempt(now, n, a, PreemptGraceful, a.op.gracefulTimeout(&s.cfg), 0, "", true, resp)
	}
}

func (o *operation) gracefulTimeout(cfg *Config) clock.Duration {
	return o.spec.AllocationGracefulPreemptionTimeout.Or(cfg.AllocationGracefulPreemptionTimeout)
}
