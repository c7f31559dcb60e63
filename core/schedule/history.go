package schedule

import (
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/core/tree"
)

// PoolSamples appends every pool's history sample (core/history) as of the
// last fair-share update — dominant usage, fair share and demand shares,
// starvation and status, the root excluded — in tree pre-order. ok is
// false, and nothing is appended, when the pool tree changed since that
// update (the attributes are then not every pool's): the caller records
// after UpdateFairShare, off the heartbeat path, under the control lock
// like the orchid's views.
func (s *Scheduler) PoolSamples(dst []history.PoolSample) (_ []history.PoolSample, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tree
	if s.fsGen == 0 || s.poolsAtUpdate != t.StructureVersion() {
		return dst, false
	}
	t.Walk(func(id tree.ID) {
		if id == tree.Root || t.IsOperation(id) {
			return
		}
		a := s.fs.Attributes(id)
		p := history.PoolSample{Name: t.Name(id), Usage: a.UsageShare.MaxComponent(), FairShare: a.FairShare.Total.MaxComponent(),
			Demand: a.DemandShare.MaxComponent()}
		for c := t.FirstChild(id); c != tree.None && !p.Inner; c = t.NextSibling(c) {
			p.Inner = !t.IsOperation(c)
		}
		if st := s.poolStarvation[p.Name]; st != nil {
			p.Starvation, p.BelowFairShare = st.tracker.State, st.belowFairShare
		}
		dst = append(dst, p)
	})
	return dst, true
}
