package schedule

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
)

// opIndex is a shard's index of the snapshot's operations for the regular
// stage's search (spec.md §5.2: the least satisfied operation with a
// pending job that fits): a binary min-heap keyed by (scheduling priority
// class, satisfaction with live usage, snapshot pre-order index), so that
// the high class (§3.6) goes first and ties go to the operation first in
// the tree as with a scan. Shard mutex.
//
// Keys are refreshed lazily. A start raises an operation's satisfaction;
// this shard's starts re-key at once, other shards' are found when the
// operation reaches the top (its key is recomputed there, and it sinks if
// it grew). A release lowers it; this shard's releases re-key at once (and
// re-admit an operation dropped for lack of pending jobs), other shards'
// are seen when the index is rebuilt for the next snapshot.
//
// NB: so an operation whose usage fell on another shard's node may wait
// for up to one fair-share period before this shard prefers it — the
// analogue of the reference's usage snapshot (resource_usage_snapshot_
// update_period, allowed_resource_usage_staleness); everything else
// matches a scan of the snapshot exactly. A search costs O((1 + stale
// keys + skipped operations) · log n) instead of O(n).
type opIndex struct {
	snap  *Snapshot
	items []heapItem
	pos   []int32 // snapshot index → position in items, -1 when absent
	// skipped holds the operations taken off the heap during one stage
	// because no pending job fits the node; restore puts them back.
	skipped []int32
}

type heapItem struct {
	key float64
	idx int32
	// high: the operation is in the high scheduling priority class, which
	// comes before every operation of the medium class (spec.md §3.6).
	high bool
}

func (h *opIndex) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	if a.high != b.high {
		return a.high
	}
	return a.key < b.key || a.key == b.key && a.idx < b.idx
}

func (h *opIndex) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].idx] = int32(i)
	h.pos[h.items[j].idx] = int32(j)
}

func (h *opIndex) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *opIndex) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// removeAt takes the item at position i off the heap.
func (h *opIndex) removeAt(i int) {
	last := len(h.items) - 1
	idx := h.items[i].idx
	if i != last {
		h.swap(i, last)
	}
	h.items = h.items[:last]
	h.pos[idx] = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// set inserts or re-keys operation idx.
func (h *opIndex) set(idx int32, key float64) {
	if p := h.pos[idx]; p >= 0 {
		old := h.items[p].key
		h.items[p].key = key
		if key < old {
			h.up(int(p))
		} else {
			h.down(int(p))
		}
		return
	}
	h.items = append(h.items, heapItem{key: key, idx: idx, high: h.snap.ops[idx].highPriority})
	h.pos[idx] = int32(len(h.items) - 1)
	h.up(len(h.items) - 1)
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
	h.items = h.items[:0]
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
		h.pos[i] = int32(len(h.items))
		h.items = append(h.items, heapItem{key: satisfaction(v, snap.Total), idx: int32(i), high: v.highPriority})
	}
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
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

// best returns the snapshot index of the least satisfied operation with a
// pending job fitting free (and its operation's limits), and that job's
// task; -1 if none. Operations that cannot be scheduled in this snapshot
// or have no pending job are dropped; those whose jobs do not fit free
// are set aside until restore.
func (h *opIndex) best(free resource.Vec) (int32, int) {
	snap := h.snap
	for len(h.items) > 0 {
		top := h.items[0]
		v := &snap.ops[top.idx]
		o := v.op
		if o.State() != StateRunning {
			h.removeAt(0)
			continue
		}
		if k := satisfaction(v, snap.Total); k != top.key {
			// Its usage changed on another shard's node: re-key, and
			// take it if it is still the minimum.
			h.items[0].key = k
			h.down(0)
			if h.items[0].idx != top.idx {
				continue
			}
		}
		t, pending := o.fittingTask(free)
		if t >= 0 {
			return top.idx, t
		}
		h.removeAt(0)
		if pending {
			h.skipped = append(h.skipped, top.idx)
		}
	}
	return -1, -1
}

// skip sets operation idx aside for the rest of the stage.
func (h *opIndex) skip(idx int32) {
	if p := h.pos[idx]; p >= 0 {
		h.removeAt(int(p))
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
