package server

import (
	"errors"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// Heartbeat runs node hb.Node's heartbeat at now, the core's decisions in
// resp (reset by the caller), and records its preemptions. A durable
// server's node that has not registered in this process is registered
// first (recovery.go); a failed registration is CodeStoreUnavailable.
// Steady heartbeats allocate nothing here.
func (s *Server) Heartbeat(now clock.Time, hb *schedule.NodeHeartbeat, resp *schedule.Response) error {
	return s.BatchHeartbeat(now, hb, resp, nil)
}

// BatchHeartbeat is Heartbeat for an entry of a batch whose entries from
// this one on are rest: when its node must register, it and the later
// unregistered nodes of rest (those without an error) are registered
// together, in one group of writes.
func (s *Server) BatchHeartbeat(now clock.Time, hb *schedule.NodeHeartbeat, resp *schedule.Response, rest []wire.BatchEntry) error {
	err := s.sched.Heartbeat(now, hb, resp)
	if errors.Is(err, schedule.ErrNodeNotRegistered) {
		names := []string{hb.Node}
		if rest != nil {
			names = s.unregistered(rest)
		}
		if err := s.registerNodes(names); err != nil {
			return err
		}
		resp.Reset()
		err = s.sched.Heartbeat(now, hb, resp)
	}
	if err == nil {
		s.preemptions.observeAt(now, hb.Node, resp)
	}
	return err
}

// unregistered returns the nodes of entries that are not registered (and
// have no error).
func (s *Server) unregistered(entries []wire.BatchEntry) []string {
	var names []string
	for i := range entries {
		if e := &entries[i]; e.Err == nil && !s.sched.NodeRegistered(e.Node) {
			names = append(names, e.Node)
		}
	}
	return names
}
