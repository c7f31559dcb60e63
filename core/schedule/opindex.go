package schedule

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
)

// opIndex is a shard's index of the snapshot's operations for the regular
// stage's search (spec.md §5.2: the least satisfied operation with a
// pending job that fits and whose scheduling tag filters match the node):
// one binary min-heap per filter class (see tagTable; class 0, the
// operations without any filter on their path, is the only one when no
// filter is set), each keyed by (scheduling priority class, satisfaction
// with live usage, snapshot pre-order index), so that the high class
// (§3.6) goes first and ties go to the operation first in the tree as with
// a scan. A search compares the tops of the heaps whose class matches the
// node. Shard mutex.
//
// Keys are refreshed lazily. A start raises an operation's satisfaction;
// its key is recomputed when the operation reaches the top (and it sinks
// if it grew), which finds the same minimum as keys refreshed at once. A release lowers it; this shard's releases re-key at once (and
// re-admit an operation dropped for lack of pending jobs), other shards'
// are seen when the index is rebuilt for the next snapshot.
//
// NB: so an operation whose usage fell on another shard's node may wait
// for up to one fair-share period before this shard prefers it — the
// analogue of the reference's usage snapshot (resource_usage_snapshot_
// update_period, allowed_resource_usage_staleness); everything else
// matches a scan of the snapshot exactly. A search costs O((classes + 1 +
// stale keys + skipped operations) · log n) instead of O(n); a heap per
// class keeps the operations whose filters do not match a node out of its
// searches, instead of setting them aside one by one at every heartbeat.
type opIndex struct {
	snap  *Snapshot
	heaps []opHeap // by filter class
	pos   []int32  // snapshot index → position in its class's heap, -1 when absent
	// skipped holds the operations taken off the heap during one stage
	// because no pending job fits the node; restore puts them back.
	skipped []int32
}

// opHeap is the heap of one filter class.
type opHeap struct {
	items []heapItem
}

type heapItem struct {
	key float64
	idx int32
	// high: the operation is in the high scheduling priority class, which
	// comes before every operation of the medium class (spec.md §3.6).
	high bool
}

func itemLess(a, b *heapItem) bool {
	if a.high != b.high {
		return a.high
	}
	return a.key < b.key || a.key == b.key && a.idx < b.idx
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

// removeAt takes the item at position i off heap q.
func (h *opIndex) removeAt(q *opHeap, i int) {
	last := len(q.items) - 1
	idx := q.items[i].idx
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

// heapOf returns the heap of operation idx's filter class.
func (h *opIndex) heapOf(idx int32) *opHeap { return &h.heaps[h.snap.ops[idx].class] }

// set inserts or re-keys operation idx.
func (h *opIndex) set(idx int32, key float64) {
	q := h.heapOf(idx)
	if p := h.pos[idx]; p >= 0 {
		old := q.items[p].key
		q.items[p].key = key
		if key < old {
			h.up(q, int(p))
		} else {
			h.down(q, int(p))
		}
		return
	}
	q.items = append(q.items, heapItem{key: key, idx: idx, high: h.snap.ops[idx].highPriority})
	h.pos[idx] = int32(len(q.items) - 1)
	h.up(q, len(q.items)-1)
}

// satisfaction is an operation's local satisfaction with its live usage
// (spec.md §3.1, §5.2).
func satisfaction(v *opView, total resource.Vec) float64 {
	return starvation.LocalSatisfaction(v.fairShare, v.demandShare, resource.FromResources(v.op.Usage(), total))
}

// sync rebuilds the index when a new snapshot was published: every
// operation that may be scheduled in it, keyed by its satisfaction now.
func (h *opIndex) sync(snap *Snapshot) {
	if h.snap == snap {
		return
	}
	h.snap = snap
	classes := snap.tags.classCount()
	if cap(h.heaps) < classes {
		h.heaps = append(h.heaps[:cap(h.heaps)], make([]opHeap, classes-cap(h.heaps))...) // NB: allocates once per growth
	}
	h.heaps = h.heaps[:classes]
	for c := range h.heaps {
		h.heaps[c].items = h.heaps[c].items[:0]
	}
	h.skipped = h.skipped[:0]
	if cap(h.pos) < len(snap.ops) {
		h.pos = make([]int32, len(snap.ops)) // NB: allocates once per snapshot growth
	}
	h.pos = h.pos[:len(snap.ops)]
	for i := range snap.ops {
		v := &snap.ops[i]
		h.pos[i] = -1
		if v.op.graceful() && !v.belowFairShare {
			continue // not schedulable in this snapshot (spec.md §7)
		}
		q := &h.heaps[v.class]
		h.pos[i] = int32(len(q.items))
		q.items = append(q.items, heapItem{key: satisfaction(v, snap.Total), idx: int32(i), high: v.highPriority})
	}
	for c := range h.heaps {
		q := &h.heaps[c]
		for i := len(q.items)/2 - 1; i >= 0; i-- {
			h.down(q, i)
		}
	}
}

// started follows a start of o on this shard: its satisfaction rose, so
// its key is low, which best corrects when o reaches the top (as for other
// shards' starts); only an operation that was dropped is re-admitted.
// NB: re-keying at once sank the operation through the heap at every start,
// 8% of BenchmarkHeartbeat/churn.
func (h *opIndex) started(o *operation) {
	v := o.view.Load()
	if v == nil || h.snap == nil || !inSnapshot(h.snap, v) || h.pos[v.index] >= 0 {
		return
	}
	h.touch(o)
}

// touch re-keys an operation whose usage or pending jobs this shard just
// changed, re-admitting it if it was dropped.
func (h *opIndex) touch(o *operation) {
	v := o.view.Load()
	if v == nil || h.snap == nil || !inSnapshot(h.snap, v) {
		return // not in the indexed snapshot: the next rebuild sees it
	}
	if h.pos[v.index] < 0 && v.op.graceful() && !v.belowFairShare {
		return
	}
	h.set(v.index, satisfaction(v, h.snap.Total))
}

// best returns the snapshot index of the least satisfied operation whose
// filters match node n with a pending job fitting free (and its
// operation's limits), and that job's task; -1 if none. Operations that
// cannot be scheduled in this snapshot or have no pending job are dropped;
// those whose jobs do not fit free are set aside until restore.
func (h *opIndex) best(free resource.Vec, n *node) (int32, int) {
	bestIdx, bestTask := int32(-1), -1
	var bestItem *heapItem
	for c := range h.heaps {
		q := &h.heaps[c]
		if len(q.items) == 0 || c > 0 && !n.matches(h.snap.tags, int32(c)) {
			continue
		}
		idx, t := h.top(q, free)
		if idx >= 0 && (bestItem == nil || itemLess(&q.items[0], bestItem)) {
			bestIdx, bestTask, bestItem = idx, t, &q.items[0]
		}
	}
	return bestIdx, bestTask
}

// top is best within one heap.
func (h *opIndex) top(q *opHeap, free resource.Vec) (int32, int) {
	snap := h.snap
	for len(q.items) > 0 {
		top := q.items[0]
		v := &snap.ops[top.idx]
		o := v.op
		if o.State() != StateRunning {
			h.removeAt(q, 0)
			continue
		}
		if k := satisfaction(v, snap.Total); k != top.key {
			// Its usage changed on another shard's node: re-key, and
			// take it if it is still the minimum.
			q.items[0].key = k
			h.down(q, 0)
			if q.items[0].idx != top.idx {
				continue
			}
		}
		t, pending := o.fittingTask(free)
		if t >= 0 {
			return top.idx, t
		}
		h.removeAt(q, 0)
		if pending {
			h.skipped = append(h.skipped, top.idx)
		}
	}
	return -1, -1
}

// skip sets operation idx aside for the rest of the stage.
func (h *opIndex) skip(idx int32) {
	if p := h.pos[idx]; p >= 0 {
		h.removeAt(h.heapOf(idx), int(p))
		h.skipped = append(h.skipped, idx)
	}
}

// restore puts the operations set aside during a stage back.
func (h *opIndex) restore() {
	for _, idx := range h.skipped {
		h.set(idx, satisfaction(&h.snap.ops[idx], h.snap.Total))
	}
	h.skipped = h.skipped[:0]
}
