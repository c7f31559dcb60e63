package tree

import "github.com/fairsched/fairsched/core/internal/invariants"

// checkLinks verifies the tree's structure: every live
// element but the root has a live parent; each parent's child list, walked
// both ways, holds exactly the elements that name it as their parent, with
// childCount and childPools to match; following parents from any element
// reaches the root; byName maps every live pool's name to it and byOp
// every live operation's, and only those; pool and operation slots point back at their owners. It runs after
// every batch under -tags invariants and -race and compiles to nothing
// otherwise.
func (t *Tree) checkLinks() {
	if !invariants.Enabled {
		return
	}
	n := ID(len(t.kind))
	live := 0
	for id := ID(0); id < n; id++ {
		k := t.kind[id]
		if k == KindFree {
			continue
		}
		live++
		ns := t.names(k)
		invariants.Check(ns[t.name[id]] == id, "tree: byName or byOp: the name %q maps to %d, want %d", t.name[id], ns[t.name[id]], id)
		switch k {
		case KindRoot:
			invariants.Check(id == Root && t.parent[id] == None, "tree: root %d has parent %d", id, t.parent[id])
		default:
			p := t.parent[id]
			invariants.Check(p >= 0 && p < n && t.kind[p] != KindFree && t.kind[p] != KindOperation,
				"tree: element %q has parent %d, which is no live pool", t.name[id], p)
		}
		if k == KindOperation {
			s := t.slot[id]
			invariants.Check(t.opOwner[s] == id, "tree: operation %q has slot %d owned by %d", t.name[id], s, t.opOwner[s])
			invariants.Check(t.firstChild[id] == None && t.childCount[id] == 0, "tree: operation %q has children", t.name[id])
		} else {
			s := t.slot[id]
			invariants.Check(t.poolOwner[s] == id, "tree: pool %q has slot %d owned by %d", t.name[id], s, t.poolOwner[s])
		}
		// The child list, forwards and backwards.
		count, pools, prev := int32(0), int32(0), None
		for c := t.firstChild[id]; c != None; c = t.nextSibling[c] {
			invariants.Check(count <= int32(n), "tree: the child list of %q has a cycle", t.name[id])
			invariants.Check(t.parent[c] == id, "tree: %q is in the child list of %q but its parent is %d", t.name[c], t.name[id], t.parent[c])
			invariants.Check(t.prevSibling[c] == prev, "tree: %q's previous sibling is %d, want %d", t.name[c], t.prevSibling[c], prev)
			if t.kind[c] == KindPool {
				pools++
			}
			count, prev = count+1, c
		}
		invariants.Check(t.lastChild[id] == prev, "tree: %q's last child is %d, want %d", t.name[id], t.lastChild[id], prev)
		invariants.Check(t.childCount[id] == count && t.childPools[id] == pools,
			"tree: %q counts %d children (%d pools), its list has %d (%d)", t.name[id], t.childCount[id], t.childPools[id], count, pools)
		// The path to the root.
		steps := ID(0)
		for a := id; a != Root; a = t.parent[a] {
			steps++
			invariants.Check(steps <= n, "tree: the parents of %q form a cycle", t.name[id])
		}
	}
	invariants.Check(len(t.byName)+len(t.byOp) == live, "tree: byName and byOp have %d names for %d elements", len(t.byName)+len(t.byOp), live)
}
