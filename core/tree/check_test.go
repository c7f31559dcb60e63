package tree

import (
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/internal/invariants"
)

// TestCheckLinksCatchesCorruption: under -tags invariants, checkLinks
// panics on each kind of broken link it guards.
func TestCheckLinksCatchesCorruption(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("needs -tags invariants or -race")
	}
	build := func() *Tree {
		tr := New(PoolConfig{})
		if _, err := tr.Apply(
			Mutation{Kind: AddPool, Name: "a"},
			Mutation{Kind: AddPool, Name: "b", Parent: "a"},
			Mutation{Kind: AddOperation, Name: "op", Parent: "b"},
		); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	f := func(name string, corrupt func(tr *Tree), want string) {
		t.Helper()
		tr := build()
		corrupt(tr)
		var msg string
		func() {
			defer func() {
				if r := recover(); r != nil {
					msg, _ = r.(string)
				}
			}()
			tr.checkLinks()
		}()
		if !strings.Contains(msg, want) {
			t.Errorf("%s: panic %q, want one containing %q", name, msg, want)
		}
	}
	a, _ := build().Lookup("a")
	b, _ := build().Lookup("b")
	op, _ := build().Lookup("op")
	f("wrong parent", func(tr *Tree) { tr.parent[op] = a }, "is in the child list")
	f("child count", func(tr *Tree) { tr.childCount[a]++ }, "counts")
	f("last child", func(tr *Tree) { tr.lastChild[b] = None }, "last child")
	f("cycle", func(tr *Tree) {
		tr.parent[a] = b
		tr.firstChild[Root] = None
		tr.lastChild[Root] = None
		tr.childCount[Root] = 0
		tr.childPools[Root] = 0
	}, "cycle")
	f("name", func(tr *Tree) { delete(tr.byName, "b") }, "byName")
}
