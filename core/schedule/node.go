package schedule

import (
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/resource"
)

// shard is one lock stripe of nodes.
type shard struct {
	mu    sync.Mutex
	index int
	nodes map[string]*node
	_     [40]byte // keep shards' mutexes on separate cache lines
}

// node is a registered node and the allocations it holds.
type node struct {
	name          string
	index         uint32 // registry index: the high half of its allocation IDs
	limits        resource.Vec
	usage         resource.Vec // sum of its allocations' resources
	tags          []string
	lastHeartbeat float64
	seq           uint32
	allocs        []allocation
	// lastPreemptive is when preemptive scheduling last ran on the node.
	lastPreemptive float64
	hadPreemptive  bool
}

// allocation is a slot of node resources held by an operation's job.
type allocation struct {
	id        uint64
	op        *operation
	task      int32
	resources resource.Vec
	start     float64
	// preempted is set once the node was told to stop it; deadline is when
	// it must be gone (spec.md §5.5).
	preempted bool
	deadline  float64
}

// registry maps node indices to names, for telling a node that an
// allocation it reports belongs to another node. Append-only; readers load
// the slice atomically.
type registry struct {
	mu    sync.Mutex // leaf
	names atomic.Pointer[[]string]
}

func (r *registry) add(name string) uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cur []string
	if p := r.names.Load(); p != nil {
		cur = *p
	}
	next := make([]string, len(cur)+1, len(cur)+1)
	copy(next, cur)
	next[len(cur)] = name
	r.names.Store(&next)
	return uint32(len(cur))
}

func (r *registry) name(index uint32) (string, bool) {
	p := r.names.Load()
	if p == nil || int(index) >= len(*p) {
		return "", false
	}
	return (*p)[index], true
}

// allocationNode returns the registry index of the node an allocation ID
// was issued by.
func allocationNode(id uint64) uint32 { return uint32(id >> 32) }

func (s *Scheduler) shardOf(name string) *shard {
	// FNV-1a over the name: no allocation, stable across runs.
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return &s.shards[h%uint32(len(s.shards))]
}

// find returns the index of allocation id in the node, or -1.
func (n *node) find(id uint64) int {
	for i := range n.allocs {
		if n.allocs[i].id == id {
			return i
		}
	}
	return -1
}

// remove drops allocation i (order is not kept).
func (n *node) remove(i int) {
	last := len(n.allocs) - 1
	n.allocs[i] = n.allocs[last]
	n.allocs[last] = allocation{}
	n.allocs = n.allocs[:last]
}
