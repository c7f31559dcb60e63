package schedule

import (
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// Scheduling tag filters (docs/semantics.md#scheduling-tag-filters) and the best allocation
// share (docs/semantics.md#best-allocation-share): what the nodes allow each element.
//
// Semantics:
//
//   - An operation's allocations go only to nodes that match its own
//     scheduling_tag_filter and the filter of every ancestor pool, in the
//     regular and the preemptive stages (the reference deactivates a pool
//     whose filter does not match the node, and with it its subtree). The
//     victims of preemption may be any allocations of the node.
//   - An element's scheduling-tag-filter resource limits are the total
//     resources of the nodes matching its own filter only (no filter: it has
//     none; the reference's TestSchedulingTagFilterResourceLimits). They
//     bound its limits share in the fair-share update (tree.NodeLimits).
//   - An operation's best allocation share is the share of the
//     cluster its allocations could use given how many fit on each node
//     that matches its own filter, by memory: with m = demand.memory /
//     demand.user_slots (whole bytes; tasks of different sizes are
//     averaged so), memory is Σ over those nodes of ⌊M/m⌋·m, every other
//     resource the total; it caps its limits share.
//
// # Compiled filters
//
// The control plane keeps a tagTable, rebuilt only when the set of filters
// or their arrangement in the tree changes: a dictionary of every tag a
// filter names (tag → bit), each distinct filter compiled once to a
// tagfilter.Program over it, and filter classes. A class is a distinct
// conjunction along a path of the tree — the filters of an element and its
// ancestors — kept as a trie: class c is (parent class, own filter), class
// 0 the empty conjunction. Every operation's view carries its class.
//
// A node keeps its tags as bits of the table it last saw and memoizes, per
// class, whether it matches (tagMatch): evaluated the first time a search
// asks, reset when its tags or the table change. So a heartbeat on a
// steady node costs a bit test per class it looks at, without allocating,
// and nothing at all when no filter is set anywhere (Snapshot.tags nil).

// tagTable is the compiled form of every scheduling tag filter in the tree.
// Immutable once built: snapshots share it with heartbeats.
type tagTable struct {
	gen     uint64            // unique per table; 0 is "none" in tagMatch
	bit     map[string]uint32 // tag → bit
	own     map[string]int32  // canonical filter → own filter index
	progs   []tagfilter.Program
	classOf map[[2]int32]int32 // (parent class, own filter) → class
	classes []filterClass      // [0] is the empty class
	// rootClass is the class (0, own) of each own filter: a node matches
	// it when it matches that filter alone.
	rootClass []int32
	words     int // length of a node's tag bit set
}

// filterClass is a conjunction: the parent class's filters and own.
type filterClass struct {
	parent, own int32
}

func newTagTable(gen uint64) *tagTable {
	return &tagTable{gen: gen, bit: map[string]uint32{}, own: map[string]int32{},
		classOf: map[[2]int32]int32{}, classes: []filterClass{{parent: -1, own: -1}}}
}

// classCount returns the number of filter classes (1 without a table).
func (tb *tagTable) classCount() int {
	if tb == nil {
		return 1
	}
	return len(tb.classes)
}

// ownIndex returns the index of filter f, adding it when add is set
// (-1 when it is missing and add is not).
func (tb *tagTable) ownIndex(f *tagfilter.Filter, add bool) int32 {
	k, ok := tb.own[f.String()]
	if ok || !add {
		if !ok {
			return -1
		}
		return k
	}
	k = int32(len(tb.progs))
	tb.own[f.String()] = k
	tb.progs = append(tb.progs, f.Compile(func(tag string) uint32 {
		b, ok := tb.bit[tag]
		if !ok {
			b = uint32(len(tb.bit))
			tb.bit[tag] = b
		}
		return b
	}))
	tb.words = (len(tb.bit) + 63) / 64
	tb.rootClass = append(tb.rootClass, tb.class(0, k, true))
	return k
}

// class returns the class (parent, own), adding it when add is set (-1 when
// it is missing and add is not).
func (tb *tagTable) class(parent, own int32, add bool) int32 {
	key := [2]int32{parent, own}
	c, ok := tb.classOf[key]
	if ok || !add {
		if !ok {
			return -1
		}
		return c
	}
	c = int32(len(tb.classes))
	tb.classOf[key] = c
	tb.classes = append(tb.classes, filterClass{parent: parent, own: own})
	return c
}

// tagMatch is a node's state for filters and node limits (shard mutex):
// small, since the sweep reads it of every node.
type tagMatch struct {
	// changed is set when the node's limits or tags changed since the
	// last collectNodes.
	changed bool
	// memo is which filter classes the node matches; nil until a class is
	// first evaluated on it.
	memo *tagMemo
}

// tagMemo is a node's memo of which filter classes it matches.
type tagMemo struct {
	gen   uint64   // the table the memo is for; 0: none
	bits  []uint64 // the node's tags, as the table's bits
	known []uint64 // classes evaluated, one bit each
	match []uint64 // classes matched, one bit each
}

// setLimits records the limits a node reported.
func (n *node) setLimits(l resource.Vec) {
	if n.limits != l {
		n.limits = l
		n.tagMatch.changed = true
	}
}

// setTags records the tags a node reported. The memo survives a heartbeat
// that reports the same tags in the same order.
func (n *node) setTags(tags []string) {
	if slices.Equal(n.tags, tags) {
		return
	}
	n.tags = append(n.tags[:0], tags...)
	n.tagMatch.changed = true
	if n.tagMatch.memo != nil {
		n.tagMatch.memo.gen = 0
	}
}

// matches reports whether node n matches every filter of class c of table
// tb. Shard mutex held; it allocates only when the memo grows (a node's
// first filter, a table with more tags or classes).
func (n *node) matches(tb *tagTable, c int32) bool {
	if c == 0 {
		return true
	}
	m := n.tagMatch.memo
	if m == nil {
		m = &tagMemo{} // NB: allocates once per node
		n.tagMatch.memo = m
	}
	if m.gen != tb.gen {
		m.reset(tb, n.tags)
	}
	w, b := c>>6, uint64(1)<<(c&63)
	if m.known[w]&b == 0 {
		fc := &tb.classes[c]
		ok := tb.progs[fc.own].Match(m.bits) && n.matches(tb, fc.parent)
		m.known[w] |= b
		if ok {
			m.match[w] |= b
		}
	}
	return m.match[w]&b != 0
}

func (m *tagMemo) reset(tb *tagTable, tags []string) {
	m.gen = tb.gen
	m.bits = resetWords(m.bits, tb.words)
	for _, t := range tags {
		if b, ok := tb.bit[t]; ok {
			m.bits[b>>6] |= 1 << (b & 63)
		}
	}
	cw := (len(tb.classes) + 63) / 64
	m.known = resetWords(m.known, cw)
	m.match = resetWords(m.match, cw)
}

// resetWords returns s with n zero words, reusing its storage.
func resetWords(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n) // NB: allocates once per growth
	}
	s = s[:n]
	clear(s)
	return s
}

// tagState is the control plane's state of filters and node limits.
type tagState struct {
	table *tagTable // nil: no filter anywhere
	// at is the tree structure version class and own were computed at.
	at    uint64
	valid bool
	gen   uint64  // the last table generation handed out
	class []int32 // by tree.ID: filter class (0: none)
	own   []int32 // by tree.ID: own filter index (-1: none)
	// pools lists the pools with a filter; limited, those whose node
	// limits the last update set.
	pools, limited []tree.ID
	// poolFilters and opFilters count pools and live operations with a
	// filter: with none, nothing of this runs.
	poolFilters, opFilters int

	// From the last collectNodes, which runs when a node came, went or
	// changed its limits or tags, or the table changed.
	collected  bool
	sweptTable *tagTable
	sweptCount int
	totals     []resource.Vec // by own filter: resources of the matching nodes
	nodeMem    []int64        // every registered node's memory
	nodeOwn    []uint64       // per node, ownWords words: own filters it matches
	ownWords   int
	// dists are the memory distributions of the best allocation share:
	// [0] of every node, [1+k] of the nodes that match own filter k.
	dists   []memDist
	fp      []uint64 // the sweep's fingerprints, one per distribution
	distSeq uint64
	sweep   uint64 // counts sweeps, for memDist.builtAt
	counts  map[int64]int64
}

// memDist is a distribution of node memory: how many nodes have each size.
type memDist struct {
	fp      uint64 // fingerprint of the multiset of sizes
	table   uint64 // the table generation fp was computed with
	gen     uint64 // changes with fp: operations recompute then
	builtAt uint64 // the sweep pairs was built at
	pairs   []memCount
}

type memCount struct{ memory, count int64 }

// mix is splitmix64's finalizer: sizes are summed through it into an
// order-independent fingerprint of the multiset.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// filterOf returns element id's own scheduling tag filter.
func (s *Scheduler) filterOf(id tree.ID) *tagfilter.Filter {
	if s.tree.IsOperation(id) {
		if o := s.byTree[id]; o != nil {
			return &o.spec.SchedulingTagFilter
		}
		return &tagfilter.Filter{}
	}
	return &s.tree.Pool(id).SchedulingTagFilter
}

// countPoolFilters recounts the pools with a filter (after pool changes).
func (s *Scheduler) countPoolFilters() {
	t := s.tree
	n := 0
	t.Walk(func(id tree.ID) {
		if !t.IsOperation(id) && !t.Pool(id).SchedulingTagFilter.IsEmpty() {
			n++
		}
	})
	s.tags.poolFilters = n
}

// prepareTags brings the filter classes up to date with the tree before an
// update: it reuses the table while every filter and class is in it (and
// it holds no more than twice the live ones), else builds a new one.
func (s *Scheduler) prepareTags() {
	ts := &s.tags
	if ts.poolFilters == 0 && ts.opFilters == 0 {
		ts.table, ts.valid = nil, false
		ts.pools = ts.pools[:0]
		return
	}
	v := s.tree.StructureVersion()
	if ts.table != nil && ts.valid && ts.at == v {
		return
	}
	ts.at, ts.valid = v, true
	if ts.table != nil && s.assignClasses(ts.table, false) {
		return
	}
	ts.gen++
	tb := newTagTable(ts.gen)
	s.assignClasses(tb, true)
	ts.table = tb
}

// assignClasses gives every element its own filter index and class in tb,
// adding what is missing when add is set. Without add it reports false
// when something is missing or tb holds more than twice the live filters
// and classes (then a new table is due).
func (s *Scheduler) assignClasses(tb *tagTable, add bool) bool {
	ts := &s.tags
	t := s.tree
	n := t.Len()
	ts.class = slices.Grow(ts.class[:0], n)[:n]
	ts.own = slices.Grow(ts.own[:0], n)[:n]
	ts.pools = ts.pools[:0]
	ok := true
	live := 0
	t.Walk(func(id tree.ID) {
		if !ok {
			return
		}
		pc := int32(0)
		if p := t.Parent(id); p != tree.None {
			pc = ts.class[p]
		}
		ts.class[id], ts.own[id] = pc, -1
		f := s.filterOf(id)
		if f.IsEmpty() {
			return
		}
		live++
		k := tb.ownIndex(f, add)
		c := int32(-1)
		if k >= 0 {
			c = tb.class(pc, k, add)
		}
		if c < 0 {
			ok = false
			return
		}
		ts.class[id], ts.own[id] = c, k
		if !t.IsOperation(id) {
			ts.pools = append(ts.pools, id)
		}
	})
	return ok && (add || len(tb.classes) <= 2*live+16)
}

// collectNodes records every node for the tag-filter limits and the memory
// distributions, when sweepNodes found a change (see tagState): in steady
// state the sweep does no work per node for them.
func (s *Scheduler) collectNodes() {
	ts := &s.tags
	fp := ts.beginSweep()
	count := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.nodes.all(func(n *node) {
			ts.sweepTags(n, fp)
			n.tagMatch.changed = false
			count++
		})
		sh.mu.Unlock()
	}
	ts.endSweep(fp)
	ts.collected, ts.sweptTable, ts.sweptCount = true, ts.table, count
}

// sweepTags is the part of collectNodes (shard mutex held) that records
// node n for the tag-filter limits and the memory distributions.
func (ts *tagState) sweepTags(n *node, fp []uint64) {
	mem := n.limits[resource.Memory]
	ts.nodeMem = append(ts.nodeMem, mem)
	h := mix(uint64(mem))
	fp[0] += h
	tb := ts.table
	if tb == nil {
		return
	}
	base := len(ts.nodeOwn)
	for range ts.ownWords {
		ts.nodeOwn = append(ts.nodeOwn, 0)
	}
	for k, c := range tb.rootClass {
		if n.matches(tb, c) {
			ts.totals[k] = ts.totals[k].AddCapped(n.limits)
			ts.nodeOwn[base+k/64] |= 1 << (k % 64)
			fp[1+k] += h
		}
	}
}

// beginSweep resets the per-sweep state and returns the fingerprint
// accumulators, one per memory distribution.
func (ts *tagState) beginSweep() []uint64 {
	ts.sweep++
	ts.nodeMem, ts.nodeOwn = ts.nodeMem[:0], ts.nodeOwn[:0]
	owns := 0
	if ts.table != nil {
		owns = len(ts.table.progs)
	}
	ts.ownWords = (owns + 63) / 64
	ts.totals = slices.Grow(ts.totals[:0], owns)[:owns]
	clear(ts.totals)
	if len(ts.dists) < 1+owns {
		ts.dists = append(ts.dists, make([]memDist, 1+owns-len(ts.dists))...)
	}
	ts.fp = slices.Grow(ts.fp[:0], 1+owns)[:1+owns]
	clear(ts.fp)
	return ts.fp
}

// endSweep gives every memory distribution whose nodes changed a new
// generation (so that operations recompute their best allocation share).
func (ts *tagState) endSweep(fp []uint64) {
	gen := uint64(0)
	if ts.table != nil {
		gen = ts.table.gen
	}
	for f, x := range fp {
		d := &ts.dists[f]
		x += uint64(len(ts.nodeMem)) // as many sizes, so that an empty one differs
		if d.gen == 0 || d.fp != x || f > 0 && d.table != gen {
			ts.distSeq++
			d.fp, d.table, d.gen = x, gen, ts.distSeq
			d.builtAt = 0
		}
	}
}

// dist returns memory distribution f, built from the last sweep.
func (ts *tagState) dist(f int) *memDist {
	d := &ts.dists[f]
	if d.builtAt == ts.sweep {
		return d
	}
	d.builtAt = ts.sweep
	if ts.counts == nil {
		ts.counts = map[int64]int64{}
	}
	clear(ts.counts)
	for i, mem := range ts.nodeMem {
		if f > 0 {
			k := f - 1
			if ts.nodeOwn[i*ts.ownWords+k/64]>>(k%64)&1 == 0 {
				continue
			}
		}
		ts.counts[mem]++
	}
	d.pairs = d.pairs[:0]
	for mem, c := range ts.counts {
		d.pairs = append(d.pairs, memCount{mem, c})
	}
	return d
}

// bestShare is an operation's best allocation share (control plane only).
type bestShare struct {
	// What the update checks first (one cache line with operation.retired).
	valid bool
	at    clock.Time // when it was computed
	gen   uint64     // the generation of the memory distribution it used
	// swept is the collection (tagState.sweep) whose tag-filter resources
	// the tree has, for an operation with a filter.
	swept uint64
	share resource.Share
}

// nodeLimits returns what the nodes allow operation o at an update at now
// with demand (docs/semantics.md): the resources of the nodes that match
// its own filter, and its best allocation share, recomputed when it has
// none yet, when best_allocation_share_update_period passed since it was,
// or when the memory distribution of its nodes changed; and whether they
// changed since the tree got them (else the caller need not set them: in
// steady state this reads a few fields next to operation.retired).
//
// NB: the reference recomputes only by the period, and only once the node
// set is stable (node_reconnection_timeout after the scheduler connects);
// fairsched has no such delay, so a share computed while nodes were still
// registering (or leaving) is redone as soon as their sizes change.
func (s *Scheduler) nodeLimits(o *operation, demand resource.Vec, now clock.Time) (tree.NodeLimits, bool) {
	ts := &s.tags
	f, k := 0, int32(-1)
	if ts.table != nil {
		if k = ts.own[o.treeID]; k >= 0 {
			f = 1 + int(k)
		}
	}
	b := &o.best
	d := &ts.dists[f]
	changed := false
	if !b.valid || b.gen != d.gen || now.Sub(b.at) >= s.cfg.BestAllocationShareUpdatePeriod {
		share := bestAllocationShare(demand, s.total, ts.dist(f).pairs)
		changed = !b.valid || share != b.share
		b.share, b.valid, b.gen, b.at = share, true, d.gen, now
	}
	if k >= 0 && b.swept != ts.sweep {
		// The resources of the filter's nodes may have changed.
		b.swept, changed = ts.sweep, true
	}
	if !changed {
		return tree.NodeLimits{}, false
	}
	l := tree.NodeLimits{BestAllocationShare: b.share, HasBestAllocationShare: true}
	if k >= 0 {
		l.TagFilter = tree.Full(ts.totals[k])
	}
	return l, true
}

// bestAllocationShare is docs/semantics.md#best-allocation-share (the reference's
// GetAdjustedResourceLimits): total with memory replaced by the memory
// that whole allocations of demand.memory/demand.user_slots bytes can use
// on nodes of the distribution, as a share of total. Demands without slots
// or memory leave the total.
func bestAllocationShare(demand, total resource.Vec, nodes []memCount) resource.Share {
	adjusted := total
	if slots := demand[resource.UserSlots]; slots > 0 {
		if per := demand[resource.Memory] / slots; per > 0 {
			mem := int64(0)
			for _, p := range nodes {
				mem += p.memory / per * per * p.count
			}
			adjusted[resource.Memory] = mem
		}
	}
	return resource.FromResources(adjusted, total)
}

// setPoolNodeLimits gives the pools with a filter the resources of the
// nodes that match it, and takes them from those that no longer have one.
func (s *Scheduler) setPoolNodeLimits() {
	ts := &s.tags
	t := s.tree
	for _, id := range ts.limited {
		if int(id) < t.Len() && t.Kind(id) == tree.KindPool {
			t.SetNodeLimits(id, tree.NodeLimits{})
		}
	}
	ts.limited = ts.limited[:0]
	if ts.table == nil {
		return
	}
	for _, id := range ts.pools {
		t.SetNodeLimits(id, tree.NodeLimits{TagFilter: tree.Full(ts.totals[ts.own[id]])})
		ts.limited = append(ts.limited, id)
	}
}

// classOf returns element id's filter class for the snapshot.
func (s *Scheduler) classOf(id tree.ID) int32 {
	if s.tags.table == nil {
		return 0
	}
	return s.tags.class[id]
}
