// Package tree is the pool tree in flat arrays indexed by element ID.
//
// Every element — the root, pools and operations — has an int32 ID that
// indexes parallel slices (struct of arrays): kind, name, parent and the
// first/last child and next/previous sibling links. Pool configurations and
// operation specs live in dense side tables reached through slot indices, and
// freed IDs and slots are recycled through free lists.
//
// Mutations (Apply) are validated as a whole: a batch either applies
// completely or leaves the tree exactly as it was. Changes that matter to the
// fair-share update are recorded as dirty elements and a structure version,
// which core/fairshare consumes to update incrementally.
//
// A Tree is not safe for concurrent use; its owner serialises access.
package tree

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
)

// ID identifies an element of the tree.
type ID int32

// None is the absent element.
const None ID = -1

// Root is the ID of the root pool, which always exists.
const Root ID = 0

// RootName is the name of the root pool.
const RootName = "<Root>"

// Kind is an element's kind.
type Kind uint8

// Element kinds. KindFree marks a recycled slot.
const (
	KindFree Kind = iota
	KindRoot
	KindPool
	KindOperation
)

// Tree is the pool tree. See the package documentation.
type Tree struct {
	kind        []Kind
	name        []string
	parent      []ID
	firstChild  []ID
	lastChild   []ID
	nextSibling []ID
	prevSibling []ID
	childCount  []int32
	childPools  []int32 // number of children that are pools
	slot        []int32 // index into pools or ops

	pools     []PoolConfig
	poolOwner []ID
	poolNodes []NodeLimits // by pool slot
	ops       []opState
	opNodes   []NodeLimits // by operation slot
	opOwner   []ID

	freeIDs       []ID
	freePoolSlots []int32
	freeOpSlots   []int32

	// byName maps the names of the root and the pools to their IDs, byOp
	// those of the operations: separate namespaces (docs/api.md#conventions), so that an
	// operation "team-a" does not stop a pool "team-a".
	byName map[string]ID
	byOp   map[string]ID

	structVersion uint64
	nodesSeq      uint64 // last opState.nodesGen handed out
	// poolNodesVersion counts the changes of the pools' node limits.
	poolNodesVersion uint64
	dirty            []ID
	isDirty          []bool
	// The change log (ChangesSince): every change markDirty records, in
	// order; changeBase is the cursor of changeLog[0], changeRead the
	// furthest cursor a reader has been handed.
	changeLog  []ID
	changeBase uint64
	changeRead uint64
}

type opState struct {
	spec    OperationSpec
	demand  resource.Vec
	usage   resource.Vec
	pending int64 // pending job count, a FIFO sort key
	// nodesGen changes whenever the operation's node limits (Tree.opNodes,
	// kept apart: the fair-share update reads them only when they change)
	// do; unique across operations.
	nodesGen uint64
}

// New returns a tree holding only the root pool, configured by root.
// The root is always in fair-share mode (docs/semantics.md#pools-and-operations) and holds every
// node: a fifo mode or a scheduling tag filter in root is ignored.
func New(root PoolConfig) *Tree {
	root.Mode = ModeFairShare
	root.SchedulingTagFilter = tagfilter.Filter{}
	t := &Tree{byName: make(map[string]ID), byOp: make(map[string]ID)}
	id := t.allocID(KindRoot, RootName)
	t.slot[id] = t.allocPoolSlot(id, root)
	t.byName[RootName] = id
	return t
}

// Len returns one past the largest ID in use (the length of per-ID arrays).
func (t *Tree) Len() int { return len(t.kind) }

// Kind returns the element's kind (KindFree for an unused ID).
func (t *Tree) Kind(id ID) Kind { return t.kind[id] }

// IsOperation reports whether id is an operation.
func (t *Tree) IsOperation(id ID) bool { return t.kind[id] == KindOperation }

// Name returns the element's name.
func (t *Tree) Name(id ID) string { return t.name[id] }

// Lookup returns the pool (or the root) with the given name or, when no
// pool has it, the operation: pools and operations are separate namespaces,
// and a name may be both (LookupOperation finds the operation).
func (t *Tree) Lookup(name string) (ID, bool) {
	if id, ok := t.byName[name]; ok {
		return id, ok
	}
	id, ok := t.byOp[name]
	return id, ok
}

// LookupOperation returns the operation with the given name.
func (t *Tree) LookupOperation(name string) (ID, bool) {
	id, ok := t.byOp[name]
	return id, ok
}

// Parent returns the element's parent (None for the root).
func (t *Tree) Parent(id ID) ID { return t.parent[id] }

// FirstChild returns the element's first child, or None.
func (t *Tree) FirstChild(id ID) ID { return t.firstChild[id] }

// NextSibling returns the next child of the same parent, or None.
func (t *Tree) NextSibling(id ID) ID { return t.nextSibling[id] }

// ChildCount returns the number of children.
func (t *Tree) ChildCount(id ID) int { return int(t.childCount[id]) }

// Pool returns the configuration of a pool or the root. The caller must not
// modify it; use Apply.
func (t *Tree) Pool(id ID) *PoolConfig { return &t.pools[t.slot[id]] }

// Operation returns an operation's spec. The caller must not modify it.
func (t *Tree) Operation(id ID) *OperationSpec { return &t.ops[t.slot[id]].spec }

// Demand returns an operation's demand.
func (t *Tree) Demand(id ID) resource.Vec { return t.ops[t.slot[id]].demand }

// Usage returns an operation's usage.
func (t *Tree) Usage(id ID) resource.Vec { return t.ops[t.slot[id]].usage }

// PendingJobCount returns an operation's pending job count.
func (t *Tree) PendingJobCount(id ID) int64 { return t.ops[t.slot[id]].pending }

// SetDemandUsage sets an operation's demand and usage and marks it dirty if
// either changed. Usage must not exceed demand; callers keep that invariant.
func (t *Tree) SetDemandUsage(id ID, demand, usage resource.Vec) {
	o := &t.ops[t.slot[id]]
	if o.demand == demand && o.usage == usage {
		return
	}
	o.demand, o.usage = demand, usage
	t.markDirty(id)
}

// SetPendingJobCount sets an operation's pending job count.
func (t *Tree) SetPendingJobCount(id ID, n int64) {
	o := &t.ops[t.slot[id]]
	if o.pending == n {
		return
	}
	o.pending = n
	// Only FIFO order depends on it; the parent re-sorts when its child is dirty.
	t.markDirty(id)
}

// NodeLimits is what the cluster's nodes allow an element, besides its
// configured resource limits (docs/semantics.md). The scheduler computes
// it from its nodes before each fair-share update; the zero value limits
// nothing.
type NodeLimits struct {
	// TagFilter is the total resources of the nodes that match the
	// element's own scheduling tag filter; empty when it has none.
	TagFilter PartialVec
	// BestAllocationShare (operations only, when HasBestAllocationShare)
	// is the share of the cluster the operation's allocations could use
	// given how many of them fit on each node (docs/semantics.md#best-allocation-share).
	BestAllocationShare    resource.Share
	HasBestAllocationShare bool
}

// NodeLimits returns the element's node limits (see SetNodeLimits).
func (t *Tree) NodeLimits(id ID) NodeLimits {
	if t.kind[id] == KindOperation {
		return t.opNodes[t.slot[id]]
	}
	return t.poolNodes[t.slot[id]]
}

// SetNodeLimits sets an element's node limits; an operation whose limits
// change is marked dirty, a pool's change moves PoolNodeLimitsVersion. The
// root's are ignored by the fair-share update (the total is the root's
// limit).
func (t *Tree) SetNodeLimits(id ID, l NodeLimits) {
	if t.kind[id] != KindOperation {
		if s := t.slot[id]; t.poolNodes[s] != l {
			t.poolNodes[s] = l
			t.poolNodesVersion++
		}
		return
	}
	s := t.slot[id]
	if t.opNodes[s] != l {
		t.opNodes[s] = l
		t.nodesSeq++
		t.ops[s].nodesGen = t.nodesSeq
		t.markDirty(id)
	}
}

// PoolNodeLimitsVersion changes whenever the node limits of a pool (or the
// root) do.
func (t *Tree) PoolNodeLimitsVersion() uint64 { return t.poolNodesVersion }

// NodeLimitsGen returns a number that changes whenever operation id's node
// limits do, so that a reader can tell without comparing them.
func (t *Tree) NodeLimitsGen(id ID) uint64 { return t.ops[t.slot[id]].nodesGen }

// SetOperationWeight sets an operation's runtime weight.
func (t *Tree) SetOperationWeight(id ID, w OptFloat) error {
	if err := validateWeight(w, "weight"); err != nil {
		return err
	}
	o := &t.ops[t.slot[id]]
	if o.spec.Weight != w {
		o.spec.Weight = w
		t.markDirty(id)
	}
	return nil
}

// SetOperationLimits sets an operation's runtime resource limits.
func (t *Tree) SetOperationLimits(id ID, l PartialVec) error {
	if err := validatePartial(l, "resource_limits"); err != nil {
		return err
	}
	o := &t.ops[t.slot[id]]
	if o.spec.ResourceLimits != l {
		o.spec.ResourceLimits = l
		t.markDirty(id)
	}
	return nil
}

// StructureVersion changes whenever elements are added, removed or moved, or
// a pool's configuration changes.
func (t *Tree) StructureVersion() uint64 { return t.structVersion }

// Dirty returns the elements changed since the last ClearDirty, in the order
// they were first changed. The slice is owned by the tree.
func (t *Tree) Dirty() []ID { return t.dirty }

// ClearDirty forgets the dirty elements.
func (t *Tree) ClearDirty() {
	for _, id := range t.dirty {
		if int(id) < len(t.isDirty) {
			t.isDirty[id] = false
		}
	}
	t.dirty = t.dirty[:0]
}

func (t *Tree) markDirty(id ID) {
	if !t.isDirty[id] {
		t.isDirty[id] = true
		t.dirty = append(t.dirty, id)
	}
	n := len(t.changeLog)
	if n > 0 && t.changeLog[n-1] == id && t.changeBase+uint64(n) > t.changeRead {
		// The same operation's next setter (demand, pending, node
		// limits), and no reader has seen the last entry yet.
		return
	}
	if n >= max(minChangeLog, changeLogPerElement*len(t.kind)) {
		// Readers more than this far behind look at every operation.
		t.changeBase += uint64(n)
		t.changeLog = t.changeLog[:0]
	}
	t.changeLog = append(t.changeLog, id)
}

// The change log keeps at most changeLogPerElement entries per element (and
// at least minChangeLog) before it starts afresh.
const (
	changeLogPerElement = 2
	minChangeLog        = 1024
)

// ChangeCursor returns the position after the last change recorded so far,
// for ChangesSince.
func (t *Tree) ChangeCursor() uint64 { return t.changeBase + uint64(len(t.changeLog)) }

// ChangesSince returns the operations changed since cursor c (a
// ChangeCursor): those whose demand, usage, pending job count, node limits,
// weight or resource limits a setter changed, in the order of the changes,
// an operation possibly more than once. ok is false when the log no longer
// reaches back to c (it holds about two changes per element): the reader
// must then look at every operation. Structural changes (Apply) are not
// logged; StructureVersion tells them. The slice is owned by the tree and
// valid until the next change.
//
// Any number of readers may follow the log, each with its own cursor; it is
// what lets the fair-share update look at the changed operations only
// instead of at all of them. (The log notes how far readers have read, so
// that consecutive changes of one operation take one entry only while no
// reader has seen it.)
func (t *Tree) ChangesSince(c uint64) (ids []ID, ok bool) {
	end := t.ChangeCursor()
	t.changeRead = end
	if c < t.changeBase || c > end {
		return nil, false
	}
	return t.changeLog[c-t.changeBase:], true
}

// Walk calls fn for every element in pre-order (children in order), starting
// at the root.
func (t *Tree) Walk(fn func(id ID)) { t.walk(Root, fn) }

func (t *Tree) walk(id ID, fn func(id ID)) {
	fn(id)
	for c := t.firstChild[id]; c != None; c = t.nextSibling[c] {
		t.walk(c, fn)
	}
}

// Ancestors calls fn for each proper ancestor of id, nearest first, the root last.
func (t *Tree) Ancestors(id ID, fn func(id ID)) {
	for p := t.parent[id]; p != None; p = t.parent[p] {
		fn(p)
	}
}

// IsAncestor reports whether a is id or one of its ancestors.
func (t *Tree) IsAncestor(a, id ID) bool {
	for ; id != None; id = t.parent[id] {
		if id == a {
			return true
		}
	}
	return false
}

// ---- low-level storage ----

func (t *Tree) allocID(k Kind, name string) ID {
	var id ID
	if n := len(t.freeIDs); n > 0 {
		id = t.freeIDs[n-1]
		t.freeIDs = t.freeIDs[:n-1]
	} else {
		id = ID(len(t.kind))
		t.kind = append(t.kind, KindFree)
		t.name = append(t.name, "")
		t.parent = append(t.parent, None)
		t.firstChild = append(t.firstChild, None)
		t.lastChild = append(t.lastChild, None)
		t.nextSibling = append(t.nextSibling, None)
		t.prevSibling = append(t.prevSibling, None)
		t.childCount = append(t.childCount, 0)
		t.childPools = append(t.childPools, 0)
		t.slot = append(t.slot, -1)
		t.isDirty = append(t.isDirty, false)
	}
	t.kind[id] = k
	t.name[id] = name
	t.parent[id], t.firstChild[id], t.lastChild[id] = None, None, None
	t.nextSibling[id], t.prevSibling[id] = None, None
	t.childCount[id], t.childPools[id] = 0, 0
	return id
}

func (t *Tree) freeID(id ID) {
	t.kind[id] = KindFree
	t.name[id] = ""
	t.slot[id] = -1
	t.freeIDs = append(t.freeIDs, id)
}

func (t *Tree) allocPoolSlot(owner ID, c PoolConfig) int32 {
	if n := len(t.freePoolSlots); n > 0 {
		s := t.freePoolSlots[n-1]
		t.freePoolSlots = t.freePoolSlots[:n-1]
		t.pools[s], t.poolOwner[s], t.poolNodes[s] = c, owner, NodeLimits{}
		return s
	}
	t.pools = append(t.pools, c)
	t.poolOwner = append(t.poolOwner, owner)
	t.poolNodes = append(t.poolNodes, NodeLimits{})
	return int32(len(t.pools) - 1)
}

func (t *Tree) allocOpSlot(owner ID, o opState) int32 {
	if n := len(t.freeOpSlots); n > 0 {
		s := t.freeOpSlots[n-1]
		t.freeOpSlots = t.freeOpSlots[:n-1]
		t.ops[s], t.opOwner[s], t.opNodes[s] = o, owner, NodeLimits{}
		return s
	}
	t.ops = append(t.ops, o)
	t.opNodes = append(t.opNodes, NodeLimits{})
	t.opOwner = append(t.opOwner, owner)
	return int32(len(t.ops) - 1)
}

// link appends id as the last child of p.
func (t *Tree) link(id, p ID) {
	t.parent[id] = p
	t.prevSibling[id] = t.lastChild[p]
	t.nextSibling[id] = None
	if t.lastChild[p] != None {
		t.nextSibling[t.lastChild[p]] = id
	} else {
		t.firstChild[p] = id
	}
	t.lastChild[p] = id
	t.childCount[p]++
	if t.kind[id] == KindPool {
		t.childPools[p]++
	}
}

// unlink removes id from its parent's children.
func (t *Tree) unlink(id ID) {
	p := t.parent[id]
	if prev := t.prevSibling[id]; prev != None {
		t.nextSibling[prev] = t.nextSibling[id]
	} else {
		t.firstChild[p] = t.nextSibling[id]
	}
	if next := t.nextSibling[id]; next != None {
		t.prevSibling[next] = t.prevSibling[id]
	} else {
		t.lastChild[p] = t.prevSibling[id]
	}
	t.childCount[p]--
	if t.kind[id] == KindPool {
		t.childPools[p]--
	}
	t.parent[id], t.nextSibling[id], t.prevSibling[id] = None, None, None
}

// relink puts id back at a remembered position: after prev under p.
func (t *Tree) relink(id, p, prev ID) {
	t.parent[id] = p
	t.prevSibling[id] = prev
	var next ID
	if prev == None {
		next = t.firstChild[p]
		t.firstChild[p] = id
	} else {
		next = t.nextSibling[prev]
		t.nextSibling[prev] = id
	}
	t.nextSibling[id] = next
	if next == None {
		t.lastChild[p] = id
	} else {
		t.prevSibling[next] = id
	}
	t.childCount[p]++
	if t.kind[id] == KindPool {
		t.childPools[p]++
	}
}
