package facade

import (
	dto "github.com/prometheus/client_model/go"
)

// A Server of a replica (docs/operations.md, "Replicas on etcd") lives for
// one leadership term: the replica builds it on the term's fenced store
// with New, starts its fair-share updater with Run, hands it the requests
// of its own listener through Handle while it leads, and Shutdown ends it
// when the term ends. Options.Replica names the role and the leader at
// /healthz.

// ReplicaStatus is what /healthz says of a replica: its role ("leader",
// "follower", "candidate") and the leader's advertised URL ("" when none is
// known).
type ReplicaStatus struct {
	Role, Leader string
}

// Run starts the fair-share updater (unless Options.ManualUpdates) of a
// Server whose requests come through Handle from the caller's listener;
// Shutdown stops it. It runs one update before it returns. A Server that
// was shut down already stays stopped.
func (s *Server) Run() {
	select {
	case <-s.stop:
		return
	default:
	}
	s.core.Run()
}

// FairShareUpdates returns how many fair-share updates have completed: a
// replica keeps its lease alive only while this grows, so that a leader
// whose update loop is wedged loses the leadership.
func (s *Server) FairShareUpdates() uint64 {
	var m dto.Metric
	if err := s.m.fairShareUpdate.Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}

// replicaStatus is Options.Replica's answer, or the standalone server's.
func (s *Server) replicaStatus() (st ReplicaStatus, ok bool) {
	if s.opts.Replica == nil {
		return ReplicaStatus{Role: "standalone"}, false
	}
	return s.opts.Replica(), true
}
