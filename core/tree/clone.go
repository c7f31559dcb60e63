package tree

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of the tree: the same elements with the same
// IDs, configurations, demand, usage, pending job counts and node limits,
// and the same free lists, so that mutations applied to the copy allocate
// the IDs they would allocate in the original. The copy shares nothing
// that either tree writes; pool configurations share their slices
// (FifoSortParameters, ACL, SchedulingTagFilter), which the tree never
// changes in place (a mutation replaces a configuration whole). The copy's
// change log starts empty: a reader of the copy looks at every operation
// first (a new fair-share updater does anyway).
//
// It allocates the copy: O(elements). It is meant for previews (the
// scheduler's what-if), not for a hot path.
func (t *Tree) Clone() *Tree {
	c := &Tree{
		kind:        slices.Clone(t.kind),
		name:        slices.Clone(t.name),
		parent:      slices.Clone(t.parent),
		firstChild:  slices.Clone(t.firstChild),
		lastChild:   slices.Clone(t.lastChild),
		nextSibling: slices.Clone(t.nextSibling),
		prevSibling: slices.Clone(t.prevSibling),
		childCount:  slices.Clone(t.childCount),
		childPools:  slices.Clone(t.childPools),
		slot:        slices.Clone(t.slot),

		pools:     slices.Clone(t.pools),
		poolOwner: slices.Clone(t.poolOwner),
		poolNodes: slices.Clone(t.poolNodes),
		ops:       slices.Clone(t.ops),
		opNodes:   slices.Clone(t.opNodes),
		opOwner:   slices.Clone(t.opOwner),

		freeIDs:       slices.Clone(t.freeIDs),
		freePoolSlots: slices.Clone(t.freePoolSlots),
		freeOpSlots:   slices.Clone(t.freeOpSlots),

		byName: maps.Clone(t.byName),
		byOp:   maps.Clone(t.byOp),

		structVersion:    t.structVersion,
		nodesSeq:         t.nodesSeq,
		poolNodesVersion: t.poolNodesVersion,
		dirty:            slices.Clone(t.dirty),
		isDirty:          slices.Clone(t.isDirty),
	}
	c.changeBase = t.ChangeCursor()
	c.changeRead = c.changeBase
	return c
}
