package schedule

import (
	"math"
	"math/bits"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
)

// opIndex is a shard's index of the snapshot's operations for the regular
// stage's search (docs/semantics.md#scheduling-on-a-heartbeat: the least satisfied operation with a
// pending job that fits and whose scheduling tag filters match the node).
// Operations with pending jobs are kept in binary min-heaps, one per filter
// class (see tagTable; class 0, the operations without any filter on their
// path, is the only one when no filter is set) and need bucket (the bit
// length of the smallest cpu of their tasks with pending jobs), each keyed
// by (scheduling priority class, satisfaction with live usage, snapshot
// pre-order index), so that the high class goes first and ties go to
// the operation first in the tree as with a scan. A search walks the heaps
// whose class matches the node and whose bucket's jobs may fit its free
// cpu, and takes the best of their answers. Shard mutex.
//
// Keys are refreshed lazily. A start raises an operation's satisfaction;
// its key is recomputed when a search reaches it (and it is looked at
// again in its place if it grew), which finds the same minimum as keys
// refreshed at once. A release lowers it; this shard's releases re-key at
// once (and re-admit an operation dropped for lack of pending jobs), other
// shards' are seen when the index is rebuilt for the next snapshot.
//
// NB: so an operation whose usage fell on another shard's node may wait
// for up to one fair-share period before this shard prefers it — the
// analogue of the reference's usage snapshot (resource_usage_snapshot_
// update_period, allowed_resource_usage_staleness). The pending jobs are
// read the same way: an operation is indexed by the tasks that had pending
// jobs when this shard last looked at it (rebuild, search, release), so
// jobs that another shard returned to pending — of an operation this
// shard had dropped, or of a task that had none — are seen within one
// fair-share period too. Everything else matches a scan of the snapshot
// exactly (TestOpIndexMatchesScan: with one shard the index is exact).
type opIndex struct {
	snap  *Snapshot
	heaps []opHeap // by filter class × need bucket
	// pos is each snapshot operation's position in its heap (-1 when
	// absent) and heap the heap's index.
	pos  []int32
	heap []int32
	// mark[i] == stage says that operation i is set aside for the rest of
	// the stage: no pending job fits the node, or its start failed. It
	// stays in its heap; restore ends the stage.
	mark  []uint32
	stage uint32
	// pend holds the items of operations this shard's releases re-keyed
	// since the last stage, and pendAt[i] is 1 + operation i's place in
	// it (0: none): their keys are applied to the heaps at the end of the
	// next stage (restore), and meanwhile a search takes them from pend
	// rather than from their heap (see touch).
	pend   []heapItem
	pendAt []int32
	// since holds the operations this shard changed while it indexed an
	// older snapshot than their views': the rebuild re-keys them (the
	// snapshot's items were computed at the publish). sinceAll: too many
	// to list, the rebuild re-keys every operation.
	since    []*operation
	sinceAll bool
	// frontier and updates are the search's scratch (see top).
	frontier []frontierItem
	updates  []update
}

// maxSince bounds opIndex.since.
const maxSince = 1024

// maxPending bounds opIndex.pend: a release beyond it re-keys at once.
const maxPending = 64

// opHeap is one heap of the index.
type opHeap struct {
	items []heapItem
}

type heapItem struct {
	key float64
	idx int32
	// need is a lower bound of what a pending job of the operation needs
	// (see needBound), so that a search passes over an operation that
	// cannot fit the node without reading it.
	need needBound
	// high: the operation is in the high scheduling priority class, which
	// comes before every operation of the medium class (docs/semantics.md#scheduling-on-a-heartbeat).
	high bool
}

func itemLess(a, b *heapItem) bool {
	if a.high != b.high {
		return a.high
	}
	return a.key < b.key || a.key == b.key && a.idx < b.idx
}

// needBound is a lower bound of the cpu and memory of the jobs of some of
// an operation's tasks, in 32 bits each: centi-cores (saturated) and whole
// MiB (rounded down).
type needBound struct {
	cpu, memMiB uint32
}

// needBuckets is the number of heaps per filter class: needBound.cpu
// bucketed by bit length and the two bits below the leading one, so that
// the buckets' lower bounds grow by at most a quarter from one to the next.
const needBuckets = 33 * 4

// bucket returns the need bucket of b.
func (b needBound) bucket() int { return cpuBucket(b.cpu) }

// cpuBucket returns the bucket of cpu: buckets are ordered as their
// lower bounds, so every cpu in a bucket above cpuBucket(x) exceeds x.
func cpuBucket(cpu uint32) int {
	n := bits.Len32(cpu)
	if n <= 2 {
		return int(cpu) // 0, 1, 2 and 3 have buckets of their own
	}
	return n<<2 | int(cpu>>(n-3))&3
}

// fits reports whether free may hold a job of the tasks b bounds: false
// means that none fits.
func (b needBound) fits(free *resource.Vec) bool {
	return int64(b.cpu) <= free[resource.CPU] && int64(b.memMiB)<<20 <= free[resource.Memory]
}

// pendingNeed returns the need bound of o's tasks that have pending jobs,
// and false if none has.
func pendingNeed(o *operation) (needBound, bool) {
	cpu, mem := int64(math.MaxInt64), int64(math.MaxInt64)
	pending := false
	for i := range o.tasks {
		t := &o.tasks[i]
		if t.pending.Load() <= 0 {
			continue
		}
		pending = true
		r := &t.spec.Resources
		cpu, mem = min(cpu, r[resource.CPU]), min(mem, r[resource.Memory])
	}
	if !pending {
		return needBound{}, false
	}
	return needBound{cpu: uint32(min(max(cpu, 0), math.MaxUint32)), memMiB: uint32(min(max(mem, 0)>>20, math.MaxUint32))}, true
}

// frontierItem is an entry of a search's frontier: the item at position
// pos of the heap searched, an operation to look at again with its
// recomputed key (pos lookAgain) or a pending item (pos pendingItem).
type frontierItem struct {
	item heapItem
	pos  int32
}

const (
	lookAgain   = -1
	pendingItem = -2
)

// update is a change a search makes to an operation's item, applied after
// the walk: a new key or need, or (drop) its removal.
type update struct {
	item heapItem
	drop bool
}

func (h *opIndex) swap(q *opHeap, i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	h.pos[q.items[i].idx] = int32(i)
	h.pos[q.items[j].idx] = int32(j)
}

func (h *opIndex) up(q *opHeap, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !itemLess(&q.items[i], &q.items[p]) {
			return
		}
		h.swap(q, i, p)
		i = p
	}
}

func (h *opIndex) down(q *opHeap, i int) {
	n := len(q.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && itemLess(&q.items[r], &q.items[l]) {
			m = r
		}
		if !itemLess(&q.items[m], &q.items[i]) {
			return
		}
		h.swap(q, i, m)
		i = m
	}
}

// remove takes operation idx off its heap, if it is in one.
func (h *opIndex) remove(idx int32) {
	p := h.pos[idx]
	if p < 0 {
		return
	}
	q := &h.heaps[h.heap[idx]]
	i, last := int(p), len(q.items)-1
	if i != last {
		h.swap(q, i, last)
	}
	q.items = q.items[:last]
	h.pos[idx] = -1
	if i != last {
		h.down(q, i)
		h.up(q, i)
	}
}

// place puts it (an operation's item with its key and need) in the heap
// of its class and need bucket: it is re-keyed in place, moved, or
// inserted.
func (h *opIndex) place(it heapItem) {
	idx := it.idx
	hi := h.heapOf(&it)
	if p := h.pos[idx]; p >= 0 {
		if h.heap[idx] == hi {
			q := &h.heaps[hi]
			old := q.items[p]
			q.items[p] = it
			if itemLess(&it, &old) {
				h.up(q, int(p))
			} else {
				h.down(q, int(p))
			}
			return
		}
		h.remove(idx)
	}
	q := &h.heaps[hi]
	q.items = append(q.items, it)
	h.pos[idx], h.heap[idx] = int32(len(q.items)-1), hi
	h.up(q, len(q.items)-1)
}

// heapOf returns the index of the heap of item it: its operation's filter
// class and its need's bucket.
func (h *opIndex) heapOf(it *heapItem) int32 {
	return int32(int(h.snap.ops[it.idx].class)*needBuckets + it.need.bucket())
}

// unpend takes operation idx out of pend.
func (h *opIndex) unpend(idx int32) {
	p := h.pendAt[idx]
	if p == 0 {
		return
	}
	last := len(h.pend) - 1
	if int(p-1) != last {
		h.pend[p-1] = h.pend[last]
		h.pendAt[h.pend[p-1].idx] = p
	}
	h.pend = h.pend[:last]
	h.pendAt[idx] = 0
}

// applyPending re-keys the pending operations in their heaps with their
// satisfaction and pending jobs now (an operation released and started
// again by the same stage keeps its key and place).
func (h *opIndex) applyPending() {
	for _, it := range h.pend {
		h.pendAt[it.idx] = 0
		v := &h.snap.ops[it.idx]
		need, ok := pendingNeed(v.op)
		if !ok {
			h.remove(it.idx)
			continue
		}
		it.key, it.need = satisfaction(v, h.snap.Total), need
		h.place(it)
	}
	h.pend = h.pend[:0]
}

// satisfaction is an operation's local satisfaction with its live usage
// (docs/semantics.md).
func satisfaction(v *opView, total resource.Vec) float64 {
	return starvation.LocalSatisfaction(v.fairShare, v.demandShare, resource.FromResources(v.op.Usage(), total))
}

// sync rebuilds the index when a new snapshot was published: every
// operation that may be scheduled in it and has pending jobs, keyed by its
// satisfaction now — as the publish computed it (Snapshot.items), for
// those this shard did not change since (the others' changes are seen
// when a search reaches them, or by the next rebuild).
//
// NB: every shard computed every operation's satisfaction and pending
// tasks at each rebuild, a cache miss or two per operation and shard:
// 22% of Scheduler.Heartbeat under the HTTP standard load.
func (h *opIndex) sync(snap *Snapshot) {
	if h.snap == snap {
		return
	}
	h.snap = snap
	heaps := snap.tags.classCount() * needBuckets
	if cap(h.heaps) < heaps {
		h.heaps = append(h.heaps[:cap(h.heaps)], make([]opHeap, heaps-cap(h.heaps))...) // NB: allocates once per growth
	}
	h.heaps = h.heaps[:heaps]
	for c := range h.heaps {
		h.heaps[c].items = h.heaps[c].items[:0]
	}
	if cap(h.pos) < len(snap.ops) {
		// NB: allocates once per snapshot growth.
		h.pos = make([]int32, len(snap.ops))
		h.heap = make([]int32, len(snap.ops))
		h.mark = make([]uint32, len(snap.ops))
		h.pendAt = make([]int32, len(snap.ops))
		h.stage = 0
	}
	h.pos = h.pos[:len(snap.ops)]
	h.heap = h.heap[:len(snap.ops)]
	h.mark = h.mark[:len(snap.ops)]
	h.pendAt = h.pendAt[:len(snap.ops)]
	clear(h.pendAt)
	h.pend = h.pend[:0]
	h.nextStage()
	for i := range snap.ops {
		h.pos[i] = -1
		it := &snap.items[i]
		if it.absent {
			continue // not schedulable in this snapshot (docs/semantics.md#graceful-preemption), or no pending job
		}
		hi := h.heapOf(&it.heapItem)
		q := &h.heaps[hi]
		h.pos[i], h.heap[i] = int32(len(q.items)), hi
		q.items = append(q.items, it.heapItem)
	}
	for c := range h.heaps {
		q := &h.heaps[c]
		for i := len(q.items)/2 - 1; i >= 0; i-- {
			h.down(q, i)
		}
	}
	switch {
	case h.sinceAll:
		for i := range snap.ops {
			h.rekey(&snap.ops[i])
		}
	default:
		for _, o := range h.since {
			if v := o.view.Load(); v != nil && inSnapshot(snap, v) {
				h.rekey(v)
			}
		}
	}
	clear(h.since)
	h.since, h.sinceAll = h.since[:0], false
}

// rekey re-keys operation v of the indexed snapshot with its satisfaction
// and pending tasks now, in its heap at once.
func (h *opIndex) rekey(v *opView) {
	if v.op.graceful() && !v.belowFairShare {
		return // not schedulable in this snapshot (docs/semantics.md#graceful-preemption)
	}
	need, ok := pendingNeed(v.op)
	if !ok {
		h.remove(v.index)
		return
	}
	h.place(heapItem{key: satisfaction(v, h.snap.Total), idx: v.index, need: need, high: v.highPriority})
}

// started follows a start of o on this shard: its satisfaction rose, so
// its key is low, which a search corrects when it reaches o (as for other
// shards' starts); only an operation that was dropped is re-admitted.
// NB: re-keying at once sank the operation through the heap at every start,
// 8% of BenchmarkHeartbeat/churn.
func (h *opIndex) started(o *operation) {
	v := o.view.Load()
	if v == nil || h.snap == nil || !inSnapshot(h.snap, v) || h.pos[v.index] >= 0 || h.pendAt[v.index] != 0 {
		return
	}
	h.touch(o)
}

// touch re-keys an operation whose usage or pending jobs this shard just
// changed, re-admitting it if it was dropped: its item goes to pend, where
// searches take it from, and reaches its heap at the end of the next stage
// (applyPending).
//
// NB: a release lowers the key and a start of the same operation raises it
// back (the churn of a node: the released operation is the least
// satisfied); re-keying in the heap at each moved it up and then down
// through every level (20% of BenchmarkHeartbeat/churn).
func (h *opIndex) touch(o *operation) {
	v := o.view.Load()
	if v == nil {
		return
	}
	if h.snap == nil || !inSnapshot(h.snap, v) {
		// Not in the indexed snapshot: the next rebuild re-keys it.
		if len(h.since) < maxSince {
			h.since = append(h.since, o)
		} else {
			h.sinceAll = true
		}
		return
	}
	idx := v.index
	if h.pos[idx] < 0 && h.pendAt[idx] == 0 && v.op.graceful() && !v.belowFairShare {
		return
	}
	need, ok := pendingNeed(o)
	if !ok {
		h.unpend(idx)
		h.remove(idx)
		return
	}
	it := heapItem{key: satisfaction(v, h.snap.Total), idx: idx, need: need, high: v.highPriority}
	switch p := h.pendAt[idx]; {
	case p != 0:
		h.pend[p-1] = it
	case len(h.pend) < maxPending:
		h.pend = append(h.pend, it)
		h.pendAt[idx] = int32(len(h.pend))
	default:
		h.place(it)
	}
}

// best returns the snapshot index of the least satisfied operation whose
// filters match node n with a pending job fitting free (and its
// operation's limits), and that job's task; -1 if none. Operations that
// cannot be scheduled in this snapshot or have no pending job are dropped;
// those whose jobs do not fit free are set aside until restore.
func (h *opIndex) best(free resource.Vec, n *node) (int32, int) {
	bestIdx, bestTask := int32(-1), -1
	var bestItem heapItem
	// Buckets whose every need exceeds the free cpu hold no candidate.
	last := cpuBucket(uint32(min(max(free[resource.CPU], 0), math.MaxUint32)))
	for c := range len(h.heaps) / needBuckets {
		if c > 0 && !n.matches(h.snap.tags, int32(c)) {
			continue
		}
		for b := range last + 1 {
			hi := int32(c*needBuckets + b)
			if len(h.heaps[hi].items) == 0 && !h.pendingIn(hi) {
				continue
			}
			it, t := h.top(hi, &free)
			if t >= 0 && (bestIdx < 0 || itemLess(&it, &bestItem)) {
				bestIdx, bestTask, bestItem = it.idx, t, it
			}
		}
	}
	return bestIdx, bestTask
}

// top is best within one heap: it returns the chosen operation's item
// with its current key, and its task (-1 if none).
//
// It visits the heap's items in key order without taking them off the
// heap (a best-first walk from the root with a frontier of positions)
// and does what taking them off in turn would: an operation that is no
// longer running or has no pending job is dropped; one whose key is stale
// is re-keyed and, if its key grew, looked at again in its new place (a
// key that fell is looked at at once, as it would be at the top); one with
// pending jobs none of which fits is set aside for the stage, its need
// raised to its pending tasks'. An operation whose need does not fit free
// is passed over without being read.
//
// NB: taking each operation that did not fit off its heap and putting it
// back at restore was half of the core's time under the standard load
// (BenchmarkHeartbeat/standard-load: a node that freed a core looked at
// ~140 operations per start and set ~120 aside, mostly two-task
// operations whose small task had no pending job left). The walk changes
// the heap only after it ends (updates), operations set aside stay in it,
// and the need buckets and bounds keep most of them out of the walk.
func (h *opIndex) top(hi int32, free *resource.Vec) (heapItem, int) {
	snap := h.snap
	q := &h.heaps[hi]
	fr := h.frontier[:0]
	if len(q.items) > 0 {
		fr = append(fr, frontierItem{item: q.items[0], pos: 0})
	}
	for i := range h.pend {
		if h.heapOf(&h.pend[i]) == hi {
			fr = pushFrontier(fr, frontierItem{item: h.pend[i], pos: pendingItem})
		}
	}
	var found heapItem
	task := -1
	for len(fr) > 0 {
		e := fr[0]
		fr = popFrontier(fr)
		it := e.item
		if e.pos != lookAgain {
			if e.pos >= 0 {
				for c := 2*e.pos + 1; c <= 2*e.pos+2 && int(c) < len(q.items); c++ {
					fr = pushFrontier(fr, frontierItem{item: q.items[c], pos: c})
				}
				if h.pendAt[it.idx] != 0 {
					continue // pend has its item
				}
			}
			if h.mark[it.idx] == h.stage || !it.need.fits(free) {
				continue
			}
			v := &snap.ops[it.idx]
			if v.op.State() != StateRunning {
				h.updates = append(h.updates, update{item: it, drop: true})
				continue
			}
			if k := satisfaction(v, snap.Total); k != it.key {
				// Its usage changed since it was keyed: re-key; a key
				// that grew is looked at again in its place.
				it.key = k
				h.updates = append(h.updates, update{item: it})
				if !itemLess(&it, &e.item) {
					fr = pushFrontier(fr, frontierItem{item: it, pos: lookAgain})
					continue
				}
			}
		}
		o := snap.ops[it.idx].op
		t, pending := o.fittingTask(*free)
		if t >= 0 {
			found, task = it, t
			break
		}
		if !pending {
			h.updates = append(h.updates, update{item: it, drop: true})
			continue
		}
		h.mark[it.idx] = h.stage
		if need, ok := pendingNeed(o); ok && need != it.need {
			it.need = need
			h.updates = append(h.updates, update{item: it})
		}
	}
	h.frontier = fr[:0]
	for _, u := range h.updates {
		idx := u.item.idx
		switch p := h.pendAt[idx]; {
		case u.drop:
			h.unpend(idx)
			h.remove(idx)
		case p != 0:
			h.pend[p-1] = u.item
		case h.pos[idx] >= 0:
			h.place(u.item)
		}
	}
	h.updates = h.updates[:0]
	return found, task
}

// pendingIn reports whether a pending item belongs to heap hi.
func (h *opIndex) pendingIn(hi int32) bool {
	for i := range h.pend {
		if h.heapOf(&h.pend[i]) == hi {
			return true
		}
	}
	return false
}

// pushFrontier and popFrontier keep fr a binary min-heap by itemLess.
func pushFrontier(fr []frontierItem, e frontierItem) []frontierItem {
	fr = append(fr, e)
	for i := len(fr) - 1; i > 0; {
		p := (i - 1) / 2
		if !itemLess(&fr[i].item, &fr[p].item) {
			break
		}
		fr[i], fr[p] = fr[p], fr[i]
		i = p
	}
	return fr
}

func popFrontier(fr []frontierItem) []frontierItem {
	last := len(fr) - 1
	fr[0] = fr[last]
	fr = fr[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(fr) {
			break
		}
		m := l
		if r := l + 1; r < len(fr) && itemLess(&fr[r].item, &fr[l].item) {
			m = r
		}
		if !itemLess(&fr[m].item, &fr[i].item) {
			break
		}
		fr[i], fr[m] = fr[m], fr[i]
		i = m
	}
	return fr
}

// skip sets operation idx aside for the rest of the stage.
func (h *opIndex) skip(idx int32) {
	if h.pos[idx] >= 0 || h.pendAt[idx] != 0 {
		h.mark[idx] = h.stage
	}
}

// restore ends a stage: the operations set aside are candidates again,
// with the keys they had when they were set aside, and the pending items
// reach their heaps.
func (h *opIndex) restore() {
	h.applyPending()
	h.nextStage()
}

// nextStage starts a new stage: no operation is set aside.
func (h *opIndex) nextStage() {
	if h.stage++; h.stage == 0 {
		clear(h.mark)
		h.stage = 1
	}
}
