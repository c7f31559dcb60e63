package schedule

// The counters a durable server keeps across restarts (the facade stores
// them; the core only hands them out).

// OperationIDSeq is n of the last server-chosen operation id, op-<n>.
func (s *Scheduler) OperationIDSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idSeq
}

// AdvanceOperationIDSeq makes every later server-chosen operation id at
// least op-<n+1>; it never moves the counter back.
func (s *Scheduler) AdvanceOperationIDSeq(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idSeq = max(s.idSeq, n)
}
