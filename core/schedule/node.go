package schedule

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// shard is one lock stripe of nodes.
type shard struct {
	mu    sync.Mutex
	index int
	nodes nodeTable
	// free recycles allocation structs (linked through next), so that
	// steady-state heartbeats do not allocate.
	free *allocation
	// victims is the scratch of the preemptive stages, graceful preemption
	// and the overcommit abort.
	victims []victim
	// changed is the scratch of applyUsage: the operations whose usage a
	// heartbeat changed.
	changed []*operation
	// unsettled holds the operations whose status lists wait for a
	// rebalance after releases (see Scheduler.release, settleLists).
	unsettled []*operation
	// ops finds the operation to schedule in the regular stage.
	ops opIndex
	_   [64]byte // keep one shard's mutex off the cache lines of the previous shard's fields
}

// node is a registered node and the allocations it holds.
//
// NB: the fields a heartbeat reads come first (about three and a half
// cache lines: 10,000 nodes are mostly out of cache when they heartbeat),
// those of searches, starts, preemption and orchid last.
type node struct {
	name  string
	index uint32 // registry index: the high half of its allocation IDs
	// preemptedN counts its preempted allocations.
	preemptedN int32
	// held is the set of the node's allocations by the low half of their
	// IDs (their seq), less heldBase, while heldOK: every allocation's seq
	// is within heldWindow of heldBase. A heartbeat that lists exactly the
	// held allocations, running, is recognised with it without searching
	// the IDs (see Heartbeat).
	heldBase uint32
	heldOK   bool
	// hadPreemptive and lastPreemptive: when preemptive scheduling last
	// ran on the node.
	hadPreemptive bool
	// unschedulable: its last heartbeat cordoned it (nothing starts).
	unschedulable bool
	// overcommitted: the node's usage exceeds its limits since
	// overcommitSince (docs/semantics.md#scheduling-on-a-heartbeat).
	overcommitted bool
	// adopting is set until the end of the first heartbeat after a
	// registration with NodeRegistration.Adopt: that heartbeat adopts the
	// running allocations it reports with a seq of at most adoptTo, which
	// an earlier process handed out (recovery.go).
	adopting       bool
	held           [heldWindow / 64]uint64
	lastHeartbeat  clock.Time
	lastPreemptive clock.Time
	// finishSeen is the Scheduler.finishEpoch its last heartbeat checked
	// its allocations' operations at.
	finishSeen uint64
	// tagMatch: which filter classes the tags match (tags.go); its first
	// fields share lastHeartbeat's cache line, which the sweep reads.
	tagMatch tagMatch
	limits   resource.Vec
	usage    resource.Vec // sum of its allocations' resources (their usage)
	// allocs holds the node's allocations sorted by ID (IDs grow with seq);
	// ids[i] is allocs[i].id, so that finding a reported allocation reads
	// one contiguous array instead of an allocation per probe.
	allocs []*allocation
	// graceful holds its not preempted allocations of graceful operations
	// (docs/semantics.md#graceful-preemption) in ID order, with their operations and ranks, so that
	// graceful preemption reads only their operations' published statuses.
	graceful []gracefulAlloc
	tags     []string

	// preemptedUsage is the part of usage held by preempted allocations
	// that still run: the node is told to stop them, so the preemptive
	// stages and the overcommit check treat it as free (docs/semantics.md#preemptive-stages).
	// Zero when preemptedN is.
	preemptedUsage resource.Vec
	// seq is the low half of the last allocation ID it handed out; seqEnd
	// the last it may hand out (the durable range with
	// Durable.ExternalNodeRegistry, else the largest uint32), and seqLow
	// the seq at which Durable.OnNodeSeqLow is due (past seqEnd once
	// called).
	seq, seqEnd, seqLow uint32
	adoptTo             uint32 // see adopting
	// listed is the set of the allocations (by index in allocs) that the
	// heartbeat being processed listed running; one it did not list is
	// finished. A bitmap that follows removals (unlist), cleared by each
	// heartbeat that searches its reports; up to 128 allocations it is
	// listedBuf.
	listed          []uint64
	listedBuf       [2]uint64
	ids             []uint64
	overcommitSince clock.Time
	// hash is the name's hash in its shard's nodeTable.
	hash uint64
	// refused are the operations not offered the node until their time,
	// after it refused one of their allocations (refuse); empty unless
	// it did.
	refused []refusal
}

// refusal is an operation a node refused an allocation of, until when
// the node is not offered it.
type refusal struct {
	op    *operation
	until clock.Time
}

// maxRefusals bounds a node's refusals: beyond it the one that ends first
// is forgotten.
const maxRefusals = 64

// refuses reports whether n is not to be offered o now (refused is pruned
// at the start of each heartbeat's stages).
func (n *node) refuses(o *operation) bool {
	for i := range n.refused {
		if n.refused[i].op == o {
			return true
		}
	}
	return false
}

// pruneRefused forgets the refusals that ended by now.
func (n *node) pruneRefused(now clock.Time) {
	kept := n.refused[:0]
	for _, r := range n.refused {
		if now.Before(r.until) {
			kept = append(kept, r)
		}
	}
	clear(n.refused[len(kept):]) // keep no operation alive
	n.refused = kept
}

// allocation is a slot of node resources held by an operation's job. Its
// address is stable from start to release; released allocations are
// recycled through their shard's free list.
//
// Its resources are its usage: what it was started with until its node
// reports a resource_usage (docs/api.md#node-heartbeats), then the last usage reported. They
// are written under the shard mutex and, while the allocation is listed,
// the operation's mutex too: the operation's status lists sum them from
// any shard.
type allocation struct {
	id   uint64
	op   *operation
	node *node
	task int32
	// preempted is set once the node was told to stop it; deadline is when
	// it must be gone (docs/semantics.md#preemptive-stages). Shard mutex.
	preempted bool
	// status is the status it had when it was preempted (orchid).
	status PreemptionStatus
	// listed (in its operation's status lists), seq (its rank there) and
	// prev/next are written under the operation's mutex; seq and listed
	// only change with the shard mutex held too.
	listed    bool
	resources resource.Vec // its usage: see allocation
	start     clock.Time
	deadline  clock.Time
	seq       uint64
	// NB: 112 bytes, a size class of its own.
	prev, next *allocation
}

// victim is an allocation considered for preemption or abort with the
// status it had when it was collected.
type victim struct {
	a      *allocation
	status PreemptionStatus
}

// newAllocation takes an allocation from the free list. Shard mutex held.
func (sh *shard) newAllocation() *allocation {
	a := sh.free
	if a == nil {
		return &allocation{}
	}
	sh.free = a.next
	a.next = nil
	return a
}

// recycle returns a released allocation to the free list.
func (sh *shard) recycle(a *allocation) {
	*a = allocation{next: sh.free}
	sh.free = a
}

// resetListed empties the listed set, sized for the node's allocations.
// It allocates only when the node outgrows every size it had (beyond 128
// allocations). Shard mutex held.
func (n *node) resetListed() {
	if n.listed == nil {
		n.listed = n.listedBuf[:]
	}
	w := (len(n.allocs) + 63) >> 6
	if w > cap(n.listed) {
		n.listed = make([]uint64, w, 2*w)
	}
	n.listed = n.listed[:max(w, 1)]
	clear(n.listed)
}

// list adds allocation k to the listed set and reports whether it was not
// in it.
func (n *node) list(k int) bool {
	w, bit := k>>6, uint64(1)<<uint(k&63)
	if n.listed[w]&bit != 0 {
		return false
	}
	n.listed[w] |= bit
	return true
}

// isListed reports whether allocation k is in the listed set.
func (n *node) isListed(k int) bool { return n.listed[k>>6]&(1<<uint(k&63)) != 0 }

// unlist follows the removal of allocation k from allocs: the bits above
// k move down by one.
func (n *node) unlist(k int) {
	w := k >> 6
	if w >= len(n.listed) {
		return
	}
	b := uint(k & 63)
	n.listed[w] = n.listed[w]&(1<<b-1) | n.listed[w]>>(b+1)<<b
	for j := w + 1; j < len(n.listed); j++ {
		n.listed[j-1] |= n.listed[j] << 63
		n.listed[j] >>= 1
	}
}

// effectiveUsage is the usage of the allocations that are not preempted.
func (n *node) effectiveUsage() resource.Vec {
	if n.preemptedN == 0 {
		return n.usage // NB: preemptedUsage is on a colder cache line
	}
	return n.usage.Sub(n.preemptedUsage)
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
	// Appending writes only past the length readers see (entries never
	// change), so readers of an older slice header stay consistent.
	next := append(cur, name)
	r.names.Store(&next)
	return uint32(len(cur))
}

// set records name at index (ExternalNodeRegistry): the indices come from
// the caller, so the names may have gaps ("" is no node).
func (r *registry) set(index uint32, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cur []string
	if p := r.names.Load(); p != nil {
		cur = *p
	}
	if int(index) < len(cur) {
		if cur[index] == name {
			return
		}
		// An entry changes: readers must not see it change under them.
		cur = slices.Clone(cur)
	}
	for len(cur) <= int(index) {
		cur = append(cur, "")
	}
	cur[index] = name
	r.names.Store(&cur)
}

func (r *registry) name(index uint32) (string, bool) {
	p := r.names.Load()
	if p == nil || int(index) >= len(*p) || (*p)[index] == "" {
		return "", false
	}
	return (*p)[index], true
}

// allocationNode returns the registry index of the node an allocation ID
// was issued by.
func allocationNode(id uint64) uint32 { return uint32(id >> 32) }

// shardAndHash returns the shard of a node name and the name's hash in its
// shard's nodeTable.
func (s *Scheduler) shardAndHash(name string) (*shard, uint64) {
	// FNV-1a over the name, 32 bits for the shard and 64 for the table: no
	// allocation, stable across runs.
	h32, h64 := uint32(2166136261), uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h32 ^= uint32(name[i])
		h32 *= 16777619
		h64 ^= uint64(name[i])
		h64 *= 1099511628211
	}
	// Spread the low bits, which index the table.
	h64 ^= h64 >> 33
	h64 *= 0xff51afd7ed558ccd
	h64 ^= h64 >> 33
	return &s.shards[h32%uint32(len(s.shards))], max(h64, 1)
}

// nodeTable is a shard's nodes by name: open addressing with linear
// probing over slots holding the name's hash (shardAndHash; 0 marks an
// empty slot) and the node, at most half full.
//
// NB: a Go map of names was 27% of Scheduler.Heartbeat in the in-process
// standard load (its control word, its slot and the key compared); a slot
// here is one cache line away and its hash tells the node apart without
// reading the name.
type nodeTable struct {
	slots []nodeSlot
	count int
}

type nodeSlot struct {
	hash uint64
	n    *node
}

// get returns the node of name (whose hash is h), or nil.
func (t *nodeTable) get(name string, h uint64) *node {
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.hash == h && sl.n.name == name {
			return sl.n
		}
		if sl.hash == 0 {
			return nil
		}
	}
}

// put adds n, whose name (of hash h) the table does not hold. It
// allocates when the table grows.
func (t *nodeTable) put(n *node, h uint64) {
	if 2*(t.count+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]nodeSlot, max(16, 2*len(old)))
		for _, sl := range old {
			if sl.hash != 0 {
				t.insert(sl)
			}
		}
	}
	t.insert(nodeSlot{hash: h, n: n})
	t.count++
}

func (t *nodeTable) insert(sl nodeSlot) {
	mask := uint64(len(t.slots) - 1)
	i := sl.hash & mask
	for t.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = sl
}

// remove takes node n (of hash h) out of the table, moving the slots
// after it back so that no probe sequence breaks.
func (t *nodeTable) remove(n *node, h uint64) {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].n != n {
		if t.slots[i].hash == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		if t.slots[j].hash == 0 {
			break
		}
		// The slot at j may move back to i if its home is not in (i, j].
		if home := t.slots[j].hash & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nodeSlot{}
	t.count--
}

// all calls f with every node, in table order. f must not add or remove
// nodes.
func (t *nodeTable) all(f func(*node)) {
	for _, sl := range t.slots {
		if sl.hash != 0 {
			f(sl.n)
		}
	}
}

// find returns allocation id of the node, or nil.
func (n *node) find(id uint64) *allocation {
	i, ok := n.search(id)
	if !ok {
		return nil
	}
	return n.allocs[i]
}

// searchFrom is search with a guess: nodes list their allocations in ID
// order, so the one after the previous report's is tried first (a binary
// search mispredicts about every other probe).
func (n *node) searchFrom(id uint64, hint int) (int, bool) {
	if uint(hint) < uint(len(n.ids)) && n.ids[hint] == id {
		return hint, true
	}
	return n.search(id)
}

// search returns the index of allocation id in n.ids (where it would go,
// and false, when the node does not hold it).
//
// NB: branch-free: the comparisons of a binary search for IDs in no
// particular order are coin flips, and a mispredicted branch costs more
// than the probe (nodes list their allocations in their own order: the
// node simulation's swap-removals shuffle it; search was 40% of
// BenchmarkHeartbeat/standard-load).
func (n *node) search(id uint64) (int, bool) {
	ids := n.ids
	if len(ids) == 0 {
		return 0, false
	}
	base, size := 0, len(ids)
	for size > 1 {
		half := size >> 1
		// borrow is 1 when ids[base+half-1] < id.
		_, borrow := bits.Sub64(ids[base+half-1], id, 0)
		base += half & -int(borrow)
		size -= half
	}
	_, borrow := bits.Sub64(ids[base], id, 0)
	base += int(borrow)
	return base, base < len(ids) && ids[base] == id
}

// addAlloc appends a, whose ID is greater than every ID the node holds.
func (n *node) addAlloc(a *allocation) {
	n.allocs = append(n.allocs, a)
	n.ids = append(n.ids, a.id)
	if d := uint32(a.id) - n.heldBase; n.heldOK && d < heldWindow {
		n.held[d>>6] |= 1 << (d & 63)
		return
	}
	n.rebaseHeld()
}

// insertAlloc adds a at its place in the ID order (an adopted allocation,
// whose ID is below those the node handed out in this process).
func (n *node) insertAlloc(a *allocation) {
	i, ok := n.search(a.id)
	if ok {
		panic("BUG: adopting an allocation the node holds")
	}
	n.allocs = slices.Insert(n.allocs, i, a)
	n.ids = slices.Insert(n.ids, i, a.id)
	n.rebaseHeld()
}

// removeAlloc drops a from allocs, keeping the ID order.
func (n *node) removeAlloc(a *allocation) {
	i, ok := n.search(a.id)
	if !ok {
		panic("BUG: releasing an allocation its node does not hold")
	}
	copy(n.allocs[i:], n.allocs[i+1:])
	n.allocs[len(n.allocs)-1] = nil
	n.allocs = n.allocs[:len(n.allocs)-1]
	n.ids = append(n.ids[:i], n.ids[i+1:]...)
	n.unlist(i)
	if n.heldOK {
		d := uint32(a.id) - n.heldBase
		n.held[d>>6] &^= 1 << (d & 63)
		return
	}
	n.rebaseHeld()
}

// heldWindow is the span of seqs n.held covers.
const heldWindow = 128

// rebaseHeld rebuilds n.held from the oldest allocation the node holds,
// if every one fits the window.
func (n *node) rebaseHeld() {
	n.held = [heldWindow / 64]uint64{}
	n.heldOK = false
	if len(n.ids) == 0 {
		n.heldBase, n.heldOK = 0, true
		return
	}
	base := uint32(n.ids[0])
	if uint32(n.ids[len(n.ids)-1])-base >= heldWindow {
		return
	}
	for _, id := range n.ids {
		d := uint32(id) - base
		n.held[d>>6] |= 1 << (d & 63)
	}
	n.heldBase, n.heldOK = base, true
}

// gracefulAlloc is an entry of node.graceful.
type gracefulAlloc struct {
	a   *allocation
	op  *operation
	seq uint64 // a.seq
}

// dropGraceful removes a from n.graceful.
func (n *node) dropGraceful(a *allocation) {
	for i := range n.graceful {
		if n.graceful[i].a == a {
			n.graceful = slices.Delete(n.graceful, i, i+1)
			return
		}
	}
}
