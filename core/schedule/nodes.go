package schedule

import (
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// NodeSummary is a registered node without its allocations (the node
// listing of the API).
type NodeSummary struct {
	Name          string
	Limits, Usage resource.Vec
	LastHeartbeat clock.Time
	// Tags are the tags of its last heartbeat (a copy).
	Tags            []string
	AllocationCount int
	// Schedulable is false while its last heartbeat cordoned it.
	Schedulable bool
}

// Nodes appends to dst the registered nodes whose names sort after after
// ("": from the first), in name order, at most limit of them (limit ≤ 0:
// all), and reports whether more follow. Each shard is locked in turn: the
// page is consistent per node, not across nodes.
func (s *Scheduler) Nodes(dst []NodeSummary, after string, limit int) ([]NodeSummary, bool) {
	var names []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.nodes.all(func(n *node) {
			if n.name > after {
				names = append(names, n.name)
			}
		})
		sh.mu.Unlock()
	}
	slices.Sort(names)
	more := limit > 0 && len(names) > limit
	if more {
		names = names[:limit]
	}
	for _, name := range names {
		if n, ok := s.NodeSummary(name); ok { // unregistered since: skip
			dst = append(dst, n)
		}
	}
	return dst, more
}

// NodeSummary returns one registered node without its allocations.
func (s *Scheduler) NodeSummary(name string) (NodeSummary, bool) {
	sh, hash := s.shardAndHash(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.nodes.get(name, hash)
	if n == nil {
		return NodeSummary{}, false
	}
	count := len(n.allocs)
	return NodeSummary{Name: n.name, Limits: n.limits, Usage: n.usage, LastHeartbeat: n.lastHeartbeat,
		Tags: slices.Clone(n.tags), AllocationCount: count, Schedulable: !n.unschedulable}, true
}

// NodeCount is the number of registered nodes.
func (s *Scheduler) NodeCount() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.nodes.count
		sh.mu.Unlock()
	}
	return n
}
