package fairshare

import (
	"slices"

	"github.com/fairsched/fairsched/core/tree"
)

// layout sizes the per-element state to the tree, resets the state of
// recycled IDs and rebuilds the pre-order and children lists after
// structural changes.
func (u *Updater) layout() {
	if u.layoutValid && u.layoutVersion == u.tree.StructureVersion() {
		return
	}
	n := u.tree.Len()
	if len(u.elems) < n {
		grow := n - len(u.elems)
		u.attrs = append(u.attrs, make([]Attributes, grow)...)
		u.elems = append(u.elems, make([]elem, grow)...)
		u.opRaw = append(u.opRaw, make([]opRaw, grow)...)
		u.names = append(u.names, make([]string, grow)...)
		u.childStart = append(u.childStart, make([]int32, grow)...)
		u.childEnd = append(u.childEnd, make([]int32, grow)...)
		u.pos = append(u.pos, make([]int32, grow)...)
		for i := n - grow; i < n; i++ {
			u.elems[i].pool = -1
			u.pos[i] = -1
		}
	}
	for i := range n {
		id := tree.ID(i)
		e := &u.elems[id]
		k, name := u.tree.Kind(id), u.tree.Name(id)
		if e.kind == k && u.names[id] == name {
			continue
		}
		// A new element, or a recycled ID: start afresh, keeping buffers.
		if e.pool >= 0 {
			u.freePools = append(u.freePools, e.pool)
		}
		*e = elem{kind: k, pool: -1}
		u.pos[id] = -1 // no state to keep
		u.names[id] = name
		u.attrs[id] = Attributes{}
		u.opRaw[id] = opRaw{}
		if k == tree.KindPool || k == tree.KindRoot {
			e.pool = u.newPool(id)
		}
	}
	u.prePools = u.prePools[:0]
	u.childBuf = u.childBuf[:0]
	u.poolKids = u.poolKids[:0]
	u.burst, u.relaxed = u.burst[:0], u.relaxed[:0]
	u.tree.Walk(func(id tree.ID) {
		if u.tree.Kind(id) == tree.KindOperation {
			return
		}
		u.prePools = append(u.prePools, u.elems[id].pool)
		if u.tree.Kind(id) == tree.KindPool {
			switch u.tree.Pool(id).Integral.Type {
			case tree.GuaranteeBurst:
				u.burst = append(u.burst, id)
			case tree.GuaranteeRelaxed:
				u.relaxed = append(u.relaxed, id)
			}
		}
	})
	for _, p := range u.prePools {
		ps := &u.pools[p]
		id := ps.id
		u.childStart[id] = int32(len(u.childBuf))
		ps.kidStart = int32(len(u.poolKids))
		h := uint64(14695981039346656037)
		for c := u.tree.FirstChild(id); c != tree.None; c = u.tree.NextSibling(c) {
			u.childBuf = append(u.childBuf, c)
			h = mix(h, uint64(c))
			if u.tree.Kind(c) != tree.KindOperation {
				u.poolKids = append(u.poolKids, u.elems[c].pool)
			}
		}
		u.childEnd[id] = int32(len(u.childBuf))
		ps.kidEnd = int32(len(u.poolKids))
		if h != ps.kidsSig {
			ps.kidsSig, ps.kidsDirty = h, true
		}
	}
	u.fifoBuf = append(u.fifoBuf[:0], u.childBuf...)
	// Move the state kept by position to the new positions.
	m := len(u.childBuf) + 1
	fs := slices.Grow(u.fsbsSpare[:0], m)[:m]
	clear(fs)
	node := slices.Grow(u.nodeSpare[:0], m)[:m]
	clear(node)
	opIn := slices.Grow(u.opInSpare[:0], m)[:m]
	clear(opIn)
	kw := slices.Grow(u.weightByPos[:0:0], m)[:m]
	place := func(id tree.ID, p int32) {
		if old := u.pos[id]; old >= 0 {
			fs[p], node[p], opIn[p] = u.fsbsByPos[old], u.node[old], u.opIn[old]
		}
		u.pos[id] = p
		kw[p] = u.attrs[id].Weight
	}
	for i, c := range u.childBuf {
		place(c, int32(i))
		node[i].isOp = u.tree.Kind(c) == tree.KindOperation
	}
	place(tree.Root, int32(m-1))
	clear(u.fsbsByPos)
	u.fsbsByPos, u.fsbsSpare, u.weightByPos = fs, u.fsbsByPos, kw
	u.node, u.nodeSpare = node, u.node
	u.opIn, u.opInSpare = opIn, u.opIn
	// The pieces kept by position are gone.
	u.pieceByPos = slices.Grow(u.pieceByPos[:0], m)[:m]
	for i := range u.pools {
		u.pools[i].fit.pieceLo = -1
	}
	// The operations in ID order (updateOps); by position they are grouped
	// by parent, parents in pre-order, so their functions are allocated, and
	// read by their parents, in one sweep.
	u.opIDs, u.poolsByID = u.opIDs[:0], u.poolsByID[:0]
	for i := range n {
		switch u.tree.Kind(tree.ID(i)) {
		case tree.KindOperation:
			u.opIDs = append(u.opIDs, tree.ID(i))
		case tree.KindPool, tree.KindRoot:
			u.poolsByID = append(u.poolsByID, u.elems[i].pool)
		}
	}
	u.checkPools = u.checkPools[:0]
	for _, p := range u.prePools {
		if c := u.tree.Pool(u.pools[p].id); c.ComputePromisedGuaranteeFairShare || c.EnablePriorityStrongGuaranteeAdjustment {
			u.checkPools = append(u.checkPools, p)
		}
	}
	u.split()
	u.opScanAll = true
	u.layoutVersion = u.tree.StructureVersion()
	u.layoutValid = true
}

// newPool returns a fresh pool slot for id, reusing freed slots' buffers.
func (u *Updater) newPool(id tree.ID) int32 {
	if n := len(u.freePools); n > 0 {
		p := u.freePools[n-1]
		u.freePools = u.freePools[:n-1]
		old := &u.pools[p]
		*old = poolState{id: id, fsbff: old.fsbff, mffbs: old.mffbs,
			critSuggestion: old.critSuggestion[:0], critOwner: old.critOwner[:0], kidsDirty: true}
		return p
	}
	u.pools = append(u.pools, poolState{id: id, kidsDirty: true})
	return int32(len(u.pools) - 1)
}

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 1099511628211
	h ^= h >> 29
	return h
}
