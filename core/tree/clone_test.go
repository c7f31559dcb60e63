package tree

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/resource"
)

// A clone is the same tree (every element's state, the same IDs for the
// same later mutations), and mutations of either leave the other as it
// was.
func TestClone(t *testing.T) {
	seed := uint64(7)
	r := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)
	orig := New(PoolConfig{})
	var pools, ops []string
	mutate := func(tr *Tree, i int) {
		switch r.IntN(5) {
		case 0, 1:
			parent := ""
			if len(pools) > 0 && r.IntN(2) == 0 {
				parent = pools[r.IntN(len(pools))]
			}
			name := "p" + strconv.Itoa(i)
			if _, err := tr.Apply(Mutation{Kind: AddPool, Name: name, Parent: parent, Pool: PoolConfig{Weight: Some(float64(1 + r.IntN(3)))}}); err == nil {
				pools = append(pools, name)
			}
		case 2:
			parent := ""
			if len(pools) > 0 {
				parent = pools[r.IntN(len(pools))]
			}
			name := "o" + strconv.Itoa(i)
			if _, err := tr.Apply(Mutation{Kind: AddOperation, Name: name, Parent: parent}); err == nil {
				ops = append(ops, name)
				id, _ := tr.LookupOperation(name)
				tr.SetDemandUsage(id, resource.Vec{resource.CPU: int64(r.IntN(1000))}, resource.Vec{})
			}
		case 3:
			if len(ops) > 0 {
				k := r.IntN(len(ops))
				if _, err := tr.Apply(Mutation{Kind: RemoveOperation, Name: ops[k]}); err == nil {
					ops = append(ops[:k], ops[k+1:]...)
				}
			}
		case 4:
			if len(pools) > 0 {
				k := r.IntN(len(pools))
				if _, err := tr.Apply(Mutation{Kind: RemovePool, Name: pools[k]}); err == nil {
					pools = append(pools[:k], pools[k+1:]...)
				}
			}
		}
	}
	for i := range 300 {
		mutate(orig, i)
	}
	c := orig.Clone()
	if !reflect.DeepEqual(dumpTree(c), dumpTree(orig)) || c.StructureVersion() != orig.StructureVersion() {
		t.Fatal("the clone differs from the tree")
	}
	want := dumpTree(orig)
	savedPools, savedOps := append([]string(nil), pools...), append([]string(nil), ops...)
	r = rand.New(rand.NewPCG(seed, 1))
	for i := 300; i < 600; i++ {
		mutate(c, i)
	}
	if !reflect.DeepEqual(dumpTree(orig), want) {
		t.Fatal("mutating the clone changed the tree")
	}
	// The same mutations on the tree give the same elements, IDs included.
	pools, ops = savedPools, savedOps
	r = rand.New(rand.NewPCG(seed, 1))
	for i := 300; i < 600; i++ {
		mutate(orig, i)
	}
	if !reflect.DeepEqual(dumpTree(orig), dumpTree(c)) {
		t.Fatal("the same mutations gave the tree and its clone different elements")
	}
}
