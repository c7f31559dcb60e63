package tree

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/resource"
)

// Tests of the pool tree: validation codes and fields, all-or-nothing
// batches, ID recycling and walk order.

func mkPool(name, parent string, c PoolConfig) Mutation {
	return Mutation{Kind: AddPool, Name: name, Parent: parent, Pool: c}
}

func mkOp(name, parent string) Mutation {
	return Mutation{Kind: AddOperation, Name: name, Parent: parent, Demand: resource.Vec{0, 100, 0, 1 << 20, 0}}
}

func mkSetPool(name, parent string, c PoolConfig) Mutation {
	return Mutation{Kind: SetPool, Name: name, Parent: parent, Pool: c}
}

func mkRemovePool(name string) Mutation { return Mutation{Kind: RemovePool, Name: name} }

func mkRemoveOp(name string) Mutation { return Mutation{Kind: RemoveOperation, Name: name} }

func mkMoveOp(name, to string) Mutation { return Mutation{Kind: MoveOperation, Name: name, Parent: to} }

func onlyRes(k resource.Kind, v int64) PartialVec {
	var p PartialVec
	p.V[k], p.Set[k] = v, true
	return p
}

func mustApply(t *testing.T, tr *Tree, ms ...Mutation) {
	t.Helper()
	if i, err := tr.Apply(ms...); err != nil {
		t.Fatalf("mutation %d (%+v): %v", i, ms[i], err)
	}
}

// testBaseTree is
//
//	<Root>
//	├── a (weight 2)
//	│   ├── a1 (fifo)
//	│   │   ├── op1
//	│   │   └── op2
//	│   ├── a2
//	│   │   └── a2x
//	│   └── opA
//	├── b
//	└── opR
func testBaseTree(t *testing.T) *Tree {
	t.Helper()
	tr := New(PoolConfig{})
	mustApply(t, tr,
		mkPool("a", "", PoolConfig{Weight: Some(2)}),
		mkPool("a1", "a", PoolConfig{Mode: ModeFIFO}),
		mkOp("op1", "a1"),
		mkOp("op2", "a1"),
		mkPool("a2", "a", PoolConfig{}),
		mkPool("a2x", "a2", PoolConfig{StrongGuarantee: onlyRes(resource.CPU, 500)}),
		mkOp("opA", "a"),
		mkPool("b", "", PoolConfig{}),
		mkOp("opR", ""),
	)
	return tr
}

// treeElemDump is everything the tree stores about one live element.
type treeElemDump struct {
	ID                          ID
	Kind                        Kind
	Name                        string
	Parent, First, Last         ID
	Next, Prev                  ID
	ChildCount, ChildPools      int32
	Children                    []string
	Pool                        *PoolConfig
	Op                          *opState
	LookupID                    ID
	PoolOwnerOK, OpOwnerOK      bool
	ChildrenBackwardsConsistent bool
}

// dump returns every live element's full state, by ID.
func dumpTree(tr *Tree) []treeElemDump {
	var out []treeElemDump
	for i := range tr.Len() {
		id := ID(i)
		k := tr.kind[id]
		if k == KindFree {
			continue
		}
		d := treeElemDump{
			ID: id, Kind: k, Name: tr.name[id],
			Parent: tr.parent[id], First: tr.firstChild[id], Last: tr.lastChild[id],
			Next: tr.nextSibling[id], Prev: tr.prevSibling[id],
			ChildCount: tr.childCount[id], ChildPools: tr.childPools[id],
		}
		var fwd, bwd []string
		for c := tr.firstChild[id]; c != None; c = tr.nextSibling[c] {
			fwd = append(fwd, tr.name[c])
		}
		for c := tr.lastChild[id]; c != None; c = tr.prevSibling[c] {
			bwd = append(bwd, tr.name[c])
		}
		slices.Reverse(bwd)
		d.Children = fwd
		d.ChildrenBackwardsConsistent = slices.Equal(fwd, bwd)
		if k == KindOperation {
			o := tr.ops[tr.slot[id]]
			d.Op = &o
			d.OpOwnerOK = tr.opOwner[tr.slot[id]] == id
		} else {
			c := tr.pools[tr.slot[id]]
			d.Pool = &c
			d.PoolOwnerOK = tr.poolOwner[tr.slot[id]] == id
		}
		d.LookupID, _ = tr.Lookup(tr.name[id])
		out = append(out, d)
	}
	return out
}

// checkTreeConsistent asserts the structural invariants of the flat arrays.
func checkTreeConsistent(t *testing.T, tr *Tree) {
	t.Helper()
	live := 0
	for i := range tr.Len() {
		id := ID(i)
		if tr.kind[id] == KindFree {
			continue
		}
		live++
		lookup := tr.Lookup
		if tr.kind[id] == KindOperation {
			lookup = tr.LookupOperation
		}
		if got, ok := lookup(tr.name[id]); !ok || got != id {
			t.Errorf("Lookup(%q) = %d, %v, want %d", tr.name[id], got, ok, id)
		}
		var n, pools int32
		prev := None
		for c := tr.firstChild[id]; c != None; c = tr.nextSibling[c] {
			if tr.parent[c] != id {
				t.Errorf("child %s of %s has parent %d", tr.name[c], tr.name[id], tr.parent[c])
			}
			if tr.prevSibling[c] != prev {
				t.Errorf("child %s of %s has prev %d, want %d", tr.name[c], tr.name[id], tr.prevSibling[c], prev)
			}
			if tr.kind[c] == KindPool {
				pools++
			}
			prev = c
			n++
		}
		if tr.lastChild[id] != prev {
			t.Errorf("%s: last child %d, want %d", tr.name[id], tr.lastChild[id], prev)
		}
		if n != tr.childCount[id] || pools != tr.childPools[id] {
			t.Errorf("%s: child count %d/%d pools, want %d/%d", tr.name[id], tr.childCount[id], tr.childPools[id], n, pools)
		}
		if tr.kind[id] == KindPool || tr.kind[id] == KindRoot {
			if tr.pools[tr.slot[id]].Mode == ModeFIFO && pools > 0 {
				t.Errorf("fifo pool %s has child pools", tr.name[id])
			}
		}
	}
	if live != len(tr.byName)+len(tr.byOp) {
		t.Errorf("%d live elements, %d names", live, len(tr.byName)+len(tr.byOp))
	}
}

func walkNames(tr *Tree) []string {
	var names []string
	tr.Walk(func(id ID) { names = append(names, tr.Name(id)) })
	return names
}

func checkTreeError(t *testing.T, err error, code, field string) {
	t.Helper()
	var te *apierr.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want *apierr.Error %s at %s", err, err, code, field)
	}
	if te.Code != code || te.Path != field {
		t.Errorf("error %q: code %q field %q, want code %q field %q", te.Message, te.Code, te.Path, code, field)
	}
	if !strings.HasPrefix(te.Error(), "tree: cannot ") {
		t.Errorf("error text %q, want \"tree: cannot …\"", te.Error())
	}
}

func TestValidation(t *testing.T) {
	f := func(name string, m Mutation, code, field string) {
		t.Helper()
		tr := testBaseTree(t)
		before := dumpTree(tr)
		i, err := tr.Apply(m)
		if err == nil {
			t.Errorf("%s: Apply(%+v) succeeded, want %s", name, m, code)
			return
		}
		if i != 0 {
			t.Errorf("%s: failing index %d, want 0", name, i)
		}
		checkTreeError(t, err, code, field)
		if after := dumpTree(tr); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: the rejected mutation changed the tree", name)
		}
	}
	// Names.
	f("duplicate pool", mkPool("a2", "b", PoolConfig{}), CodeDuplicateName, "name")
	f("duplicate operation", mkOp("op1", "b"), CodeDuplicateName, "name")
	f("dot", mkPool(".", "", PoolConfig{}), CodeInvalidName, "name")
	f("dot dot", mkOp("..", ""), CodeInvalidName, "name")
	f("root name", mkPool(RootName, "", PoolConfig{}), CodeInvalidName, "name")
	f("empty name", mkPool("", "", PoolConfig{}), CodeInvalidName, "name")
	f("space", mkPool("a b", "", PoolConfig{}), CodeInvalidName, "name")
	f("slash", mkOp("x/y", ""), CodeInvalidName, "name")
	f("non-ascii", mkPool("pööl", "", PoolConfig{}), CodeInvalidName, "name")
	f("129 characters", mkPool(strings.Repeat("x", 129), "", PoolConfig{}), CodeInvalidName, "name")
	// Parents.
	f("unknown parent", mkPool("x", "nope", PoolConfig{}), CodeUnknownPool, "parent")
	f("operation as parent", mkPool("x", "op1", PoolConfig{}), CodeUnknownPool, "parent")
	f("operation in unknown pool", mkOp("x", "nope"), CodeUnknownPool, "pool")
	f("operation in an operation", mkOp("x", "opR"), CodeUnknownPool, "pool")
	f("move to unknown pool", mkMoveOp("op1", "nope"), CodeUnknownPool, "pool")
	f("move unknown operation", mkMoveOp("nope", "b"), CodeUnknownOperation, "name")
	f("move a pool as an operation", mkMoveOp("a2", "b"), CodeUnknownOperation, "name")
	f("set unknown pool", mkSetPool("nope", "", PoolConfig{}), CodeUnknownPool, "name")
	f("set an operation", mkSetPool("opR", "", PoolConfig{}), CodeUnknownPool, "name")
	f("set under unknown parent", mkSetPool("b", "nope", PoolConfig{}), CodeUnknownPool, "parent")
	f("give the root a parent", mkSetPool(RootName, "b", PoolConfig{}), CodeInvalidValue, "parent")
	// Cycles.
	f("move under itself", mkSetPool("a", "a", PoolConfig{}), CodeCycle, "parent")
	f("move under its child", mkSetPool("a", "a2", PoolConfig{}), CodeCycle, "parent")
	f("move under its grandchild", mkSetPool("a", "a2x", PoolConfig{}), CodeCycle, "parent")
	// FIFO pools hold only operations.
	f("pool under a fifo pool", mkPool("x", "a1", PoolConfig{}), CodeFifoChildPool, "parent")
	f("move a pool into a fifo pool", mkSetPool("b", "a1", PoolConfig{}), CodeFifoChildPool, "parent")
	f("fifo with child pools", mkSetPool("a", "", PoolConfig{Mode: ModeFIFO}), CodeFifoChildPool, "mode")
	f("fifo root", mkSetPool(RootName, "", PoolConfig{Mode: ModeFIFO}), CodeInvalidValue, "mode")
	f("unknown mode", mkPool("x", "", PoolConfig{Mode: 7}), CodeInvalidValue, "mode")
	// Counts.
	f("max_operation_count < max_running_operation_count",
		mkPool("x", "", PoolConfig{MaxOperationCount: SomeInt(3), MaxRunningOperationCount: SomeInt(4)}), CodeInvalidValue, "max_operation_count")
	f("negative max_operation_count", mkPool("x", "", PoolConfig{MaxOperationCount: SomeInt(-1)}), CodeInvalidValue, "max_operation_count")
	f("negative max_running_operation_count", mkPool("x", "", PoolConfig{MaxRunningOperationCount: SomeInt(-1)}), CodeInvalidValue, "max_running_operation_count")
	// Weights.
	for _, w := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), MinWeight / 2, MaxWeight * 2, 1e8} {
		f(fmt.Sprintf("pool weight %v", w), mkPool("x", "", PoolConfig{Weight: Some(w)}), CodeInvalidValue, "weight")
		f(fmt.Sprintf("set pool weight %v", w), mkSetPool("b", "", PoolConfig{Weight: Some(w)}), CodeInvalidValue, "weight")
		m := mkOp("x", "")
		m.Op.Weight = Some(w)
		f(fmt.Sprintf("operation weight %v", w), m, CodeInvalidValue, "weight")
	}
	// Resources.
	f("negative strong guarantee", mkPool("x", "", PoolConfig{StrongGuarantee: onlyRes(resource.CPU, -1)}), CodeInvalidValue, "strong_guarantee_resources.cpu")
	f("strong guarantee > 2^53", mkPool("x", "", PoolConfig{StrongGuarantee: onlyRes(resource.Memory, resource.MaxAmount+1)}), CodeInvalidValue, "strong_guarantee_resources.memory")
	f("negative limit", mkPool("x", "", PoolConfig{ResourceLimits: onlyRes(resource.GPU, -5)}), CodeInvalidValue, "resource_limits.gpu")
	f("limit > 2^53", mkPool("x", "", PoolConfig{ResourceLimits: onlyRes(resource.Network, math.MaxInt64)}), CodeInvalidValue, "resource_limits.network")
	f("negative threshold", mkPool("x", "", PoolConfig{NonPreemptibleResourceUsageThreshold: onlyRes(resource.UserSlots, -1)}), CodeInvalidValue, "non_preemptible_resource_usage_threshold.user_slots")
	f("negative flow", mkPool("x", "", PoolConfig{Integral: IntegralConfig{Type: GuaranteeBurst, ResourceFlow: onlyRes(resource.CPU, -1)}}), CodeInvalidValue, "integral_guarantees.resource_flow.cpu")
	f("burst > 2^53", mkPool("x", "", PoolConfig{Integral: IntegralConfig{Type: GuaranteeBurst, BurstGuarantee: onlyRes(resource.CPU, resource.MaxAmount+1)}}), CodeInvalidValue, "integral_guarantees.burst_guarantee_resources.cpu")
	m := mkOp("x", "")
	m.Demand[resource.CPU] = -1
	f("negative demand", m, CodeInvalidValue, "demand.cpu")
	m = mkOp("x", "")
	m.Usage[resource.Memory] = resource.MaxAmount + 1
	f("usage > 2^53", m, CodeInvalidValue, "usage.memory")
	m = mkOp("x", "")
	m.Op.ResourceLimits = onlyRes(resource.CPU, -1)
	f("negative operation limit", m, CodeInvalidValue, "resource_limits.cpu")
	// Integral guarantees.
	f("relaxed pool with burst resources",
		mkPool("x", "", PoolConfig{Integral: IntegralConfig{Type: GuaranteeRelaxed, BurstGuarantee: onlyRes(resource.CPU, 100)}}),
		CodeInvalidValue, "integral_guarantees.burst_guarantee_resources")
	f("set relaxed with burst resources",
		mkSetPool("b", "", PoolConfig{Integral: IntegralConfig{Type: GuaranteeRelaxed, BurstGuarantee: onlyRes(resource.Memory, 1)}}),
		CodeInvalidValue, "integral_guarantees.burst_guarantee_resources")
	f("relaxed multiplier 0.5", mkPool("x", "", PoolConfig{Integral: IntegralConfig{Type: GuaranteeRelaxed, RelaxedShareMultiplierLimit: Some(0.5)}}),
		CodeInvalidValue, "integral_guarantees.relaxed_share_multiplier_limit")
	f("unknown guarantee type", mkPool("x", "", PoolConfig{Integral: IntegralConfig{Type: 9}}), CodeInvalidValue, "integral_guarantees.guarantee_type")
	f("tolerance 1.5", mkPool("x", "", PoolConfig{FairShareStarvationTolerance: Some(1.5)}), CodeInvalidValue, "fair_share_starvation_tolerance")
	f("empty fifo sort parameters", mkPool("x", "", PoolConfig{FifoSortParameters: []FifoSortParam{}}), CodeInvalidValue, "fifo_sort_parameters")
	// Removal.
	f("remove a non-empty pool", mkRemovePool("a2"), CodePoolNotEmpty, "name")
	f("remove a pool with operations", mkRemovePool("a1"), CodePoolNotEmpty, "name")
	f("remove the root", mkRemovePool(RootName), CodeInvalidValue, "name")
	f("remove an unknown pool", mkRemovePool("nope"), CodeUnknownPool, "name")
	f("remove an operation as a pool", mkRemovePool("opR"), CodeUnknownPool, "name")
	f("remove an unknown operation", mkRemoveOp("nope"), CodeUnknownOperation, "name")
	f("remove a pool as an operation", mkRemoveOp("b"), CodeUnknownOperation, "name")

	// Boundary values that are valid.
	ok := func(name string, m Mutation) {
		t.Helper()
		tr := testBaseTree(t)
		if _, err := tr.Apply(m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		checkTreeConsistent(t, tr)
	}
	ok("128 characters", mkPool(strings.Repeat("x", 128), "", PoolConfig{}))
	ok("all name characters", mkPool("azAZ09._:-", "", PoolConfig{}))
	ok("root parent by name", mkPool("x", RootName, PoolConfig{}))
	ok("min weight", mkPool("x", "", PoolConfig{Weight: Some(MinWeight)}))
	ok("max weight", mkPool("x", "", PoolConfig{Weight: Some(MaxWeight)}))
	ok("2^53", mkPool("x", "", PoolConfig{ResourceLimits: onlyRes(resource.Memory, resource.MaxAmount)}))
	ok("equal operation counts", mkPool("x", "", PoolConfig{MaxOperationCount: SomeInt(4), MaxRunningOperationCount: SomeInt(4)}))
	ok("unset negative component", mkPool("x", "", PoolConfig{StrongGuarantee: PartialVec{V: resource.Vec{-1, -1, -1, -1, -1}}}))
	ok("relaxed with zero burst", mkPool("x", "", PoolConfig{Integral: IntegralConfig{Type: GuaranteeRelaxed, BurstGuarantee: onlyRes(resource.CPU, 0)}}))
	ok("fifo pool of operations", mkSetPool("a2x", "", PoolConfig{Mode: ModeFIFO}))
	ok("operation into a fifo pool", mkMoveOp("opR", "a1"))
	ok("pool back to the root", mkSetPool("a2x", RootName, PoolConfig{}))
	ok("remove an empty pool", mkRemovePool("b"))

	// Runtime setters validate too.
	tr := testBaseTree(t)
	id, _ := tr.Lookup("op1")
	checkTreeError(t, tr.SetOperationWeight(id, Some(math.NaN())), CodeInvalidValue, "weight")
	checkTreeError(t, tr.SetOperationLimits(id, onlyRes(resource.CPU, -1)), CodeInvalidValue, "resource_limits.cpu")
	if w := tr.Operation(id).Weight; w.Set {
		t.Errorf("rejected SetOperationWeight changed the weight to %v", w)
	}
}

func TestRootIsAlwaysFairShare(t *testing.T) {
	// docs/semantics.md#pools-and-operations: "root is always fair_share". A root without child pools
	// can currently be switched to fifo, and the update then treats the
	// root's children as a FIFO queue.
	tr := New(PoolConfig{})
	mustApply(t, tr, mkOp("x", ""))
	_, err := tr.Apply(mkSetPool(RootName, "", PoolConfig{Mode: ModeFIFO}))
	if err == nil {
		t.Fatal("SetPool(<Root>, mode=fifo) was accepted; docs/semantics.md#pools-and-operations says the root is always fair_share")
	}
	checkTreeError(t, err, CodeInvalidValue, "mode")
}

func TestBatchAtomicity(t *testing.T) {
	// Each batch's third mutation (or a later one) is invalid: the whole
	// batch is undone and the tree is exactly as before, down to IDs, links,
	// configurations and the name index; a later valid batch still works.
	f := func(name string, failAt int, code string, ms ...Mutation) {
		t.Helper()
		tr := testBaseTree(t)
		// Churn first so that the free lists are not empty.
		mustApply(t, tr, mkPool("tmp1", "b", PoolConfig{}), mkOp("tmpop", "a2"))
		mustApply(t, tr, mkRemoveOp("tmpop"), mkRemovePool("tmp1"))
		before := dumpTree(tr)
		beforeWalk := walkNames(tr)
		i, err := tr.Apply(ms...)
		if err == nil {
			t.Fatalf("%s: batch succeeded", name)
		}
		if i != failAt {
			t.Errorf("%s: failed at %d, want %d", name, i, failAt)
		}
		var te *apierr.Error
		if !errors.As(err, &te) || te.Code != code {
			t.Errorf("%s: error %v, want code %s", name, err, code)
		}
		after := dumpTree(tr)
		if !reflect.DeepEqual(before, after) {
			for k := range max(len(before), len(after)) {
				var b, a any
				if k < len(before) {
					b = before[k]
				}
				if k < len(after) {
					a = after[k]
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s: element changed:\nbefore %+v\nafter  %+v", name, b, a)
				}
			}
		}
		if w := walkNames(tr); !slices.Equal(w, beforeWalk) {
			t.Errorf("%s: walk %v, want %v", name, w, beforeWalk)
		}
		checkTreeConsistent(t, tr)
		// The same batch without its failing tail applies.
		if _, err := tr.Apply(ms[:failAt]...); err != nil {
			t.Errorf("%s: the valid prefix fails after the rollback: %v", name, err)
		}
		checkTreeConsistent(t, tr)
		mustApply(t, tr, mkPool("after", "", PoolConfig{}), mkOp("afterop", "after"))
		checkTreeConsistent(t, tr)
	}
	f("adds then duplicate", 2, CodeDuplicateName,
		mkPool("x", "b", PoolConfig{}), mkOp("xo", "x"), mkPool("x", "", PoolConfig{}))
	f("removes then unknown parent", 2, CodeUnknownPool,
		mkRemoveOp("opA"), mkRemovePool("b"), mkPool("y", "nope", PoolConfig{}))
	f("remove middle children then invalid", 2, CodeInvalidName,
		mkRemoveOp("op1"), mkRemovePool("a2x"), mkOp("bad name", ""))
	f("moves then cycle", 2, CodeCycle,
		mkSetPool("a2", "b", PoolConfig{Weight: Some(3)}), mkMoveOp("op2", "b"), mkSetPool("b", "a2", PoolConfig{}))
	f("remove, re-add same name elsewhere, invalid weight", 2, CodeInvalidValue,
		mkRemovePool("b"), mkPool("b", "a2", PoolConfig{}), mkPool("z", "", PoolConfig{Weight: Some(math.NaN())}))
	f("config change, move, remove non-empty", 2, CodePoolNotEmpty,
		mkSetPool("a", "", PoolConfig{Weight: Some(5), ResourceLimits: onlyRes(resource.CPU, 10)}), mkMoveOp("opR", "a2x"), mkRemovePool("a2x"))
	f("add, remove it, invalid", 2, CodeInvalidName,
		mkOp("tmp", "b"), mkRemoveOp("tmp"), mkPool("", "", PoolConfig{}))
	f("remove then add into fifo then pool under fifo", 2, CodeFifoChildPool,
		mkRemoveOp("op1"), mkOp("op9", "a1"), mkPool("p", "a1", PoolConfig{}))
	f("move pool to root and back, then fifo with children", 3, CodeFifoChildPool,
		mkSetPool("a2", RootName, PoolConfig{}), mkSetPool("a2", "a", PoolConfig{}), mkMoveOp("opA", "a2x"), mkSetPool("a", "", PoolConfig{Mode: ModeFIFO}))
	f("long batch failing late", 6, CodeDuplicateName,
		mkRemoveOp("op2"), mkRemoveOp("op1"), mkRemovePool("a1"), mkPool("a1", "b", PoolConfig{Mode: ModeFIFO}), mkOp("op1", "a1"), mkSetPool("b", "a2x", PoolConfig{}), mkOp("op1", ""))
	f("remove everything removable then fail", 7, CodeUnknownOperation,
		mkRemoveOp("op1"), mkRemoveOp("op2"), mkRemovePool("a1"), mkRemoveOp("opA"), mkRemovePool("a2x"), mkRemovePool("a2"), mkRemovePool("a"), mkRemoveOp("nope"))
}

func TestIDRecycling(t *testing.T) {
	tr := New(PoolConfig{})
	mustApply(t, tr, mkPool("a", "", PoolConfig{}), mkPool("b", "", PoolConfig{}), mkOp("o", ""), mkPool("c", "", PoolConfig{}))
	ids := map[string]ID{}
	for _, n := range []string{"a", "b", "o", "c"} {
		ids[n], _ = tr.Lookup(n)
	}
	if ids["a"] != 1 || ids["b"] != 2 || ids["o"] != 3 || ids["c"] != 4 {
		t.Fatalf("IDs %v, want a=1 b=2 o=3 c=4", ids)
	}
	n := tr.Len()

	// A freed ID is reused by the next element, of any kind.
	mustApply(t, tr, mkRemovePool("b"))
	if _, ok := tr.Lookup("b"); ok {
		t.Errorf("removed pool b still found")
	}
	if tr.Kind(ids["b"]) != KindFree {
		t.Errorf("kind of a freed ID %v, want KindFree", tr.Kind(ids["b"]))
	}
	mustApply(t, tr, mkOp("p", "a"))
	if id, _ := tr.Lookup("p"); id != ids["b"] || tr.Len() != n {
		t.Errorf("operation p got ID %d (len %d), want the freed %d (len %d)", id, tr.Len(), ids["b"], n)
	}
	// Last freed, first reused.
	mustApply(t, tr, mkRemoveOp("o"), mkRemovePool("c"))
	mustApply(t, tr, mkPool("q", "", PoolConfig{Weight: Some(7)}), mkPool("r", "", PoolConfig{}))
	q, _ := tr.Lookup("q")
	r, _ := tr.Lookup("r")
	if q != ids["c"] || r != ids["o"] || tr.Len() != n {
		t.Errorf("q=%d r=%d (len %d), want q=%d r=%d (len %d)", q, r, tr.Len(), ids["c"], ids["o"], n)
	}
	// A recycled slot carries the new element's data, not the old one's.
	if c := tr.Pool(q); c.Weight != Some(7) {
		t.Errorf("recycled pool q weight %v, want 7", c.Weight)
	}
	if c := tr.Pool(r); c.Weight.Set {
		t.Errorf("pool r in the operation's old ID has weight %v", c.Weight)
	}
	if tr.FirstChild(r) != None || tr.ChildCount(r) != 0 || tr.Parent(r) != Root {
		t.Errorf("recycled ID keeps stale links: first %d count %d parent %d", tr.FirstChild(r), tr.ChildCount(r), tr.Parent(r))
	}
	// An operation in a recycled pool slot and vice versa.
	mustApply(t, tr, mkRemovePool("r"), Mutation{Kind: AddOperation, Name: "o2", Parent: "q", Demand: resource.Vec{1, 2, 3, 4, 5}, Usage: resource.Vec{1, 1, 1, 1, 1}})
	o2, _ := tr.Lookup("o2")
	if o2 != ids["o"] || tr.Demand(o2) != (resource.Vec{1, 2, 3, 4, 5}) || tr.Usage(o2) != (resource.Vec{1, 1, 1, 1, 1}) {
		t.Errorf("o2: ID %d demand %v usage %v", o2, tr.Demand(o2), tr.Usage(o2))
	}
	if p, _ := tr.Lookup("p"); tr.Demand(p) != (resource.Vec{0, 100, 0, 1 << 20, 0}) {
		t.Errorf("operation p's demand changed to %v", tr.Demand(p))
	}
	checkTreeConsistent(t, tr)
	if w, want := walkNames(tr), []string{RootName, "a", "p", "q", "o2"}; !slices.Equal(w, want) {
		t.Errorf("walk %v, want %v", w, want)
	}
}

func TestWalkOrder(t *testing.T) {
	tr := testBaseTree(t)
	f := func(step string, want ...string) {
		t.Helper()
		if got := walkNames(tr); !slices.Equal(got, want) {
			t.Errorf("%s: walk %v, want %v", step, got, want)
		}
		checkTreeConsistent(t, tr)
	}
	f("initial", RootName, "a", "a1", "op1", "op2", "a2", "a2x", "opA", "b", "opR")
	// A moved element becomes its new parent's last child.
	mustApply(t, tr, mkSetPool("a2", "b", PoolConfig{}))
	f("pool moved", RootName, "a", "a1", "op1", "op2", "opA", "b", "a2", "a2x", "opR")
	mustApply(t, tr, mkMoveOp("op1", "a1")) // no-op move keeps the position
	f("no-op move", RootName, "a", "a1", "op1", "op2", "opA", "b", "a2", "a2x", "opR")
	mustApply(t, tr, mkMoveOp("op1", ""))
	f("operation moved", RootName, "a", "a1", "op2", "opA", "b", "a2", "a2x", "opR", "op1")
	mustApply(t, tr, mkSetPool("b", "", PoolConfig{Weight: Some(4)})) // config only: position kept
	f("config changed", RootName, "a", "a1", "op2", "opA", "b", "a2", "a2x", "opR", "op1")
	mustApply(t, tr, mkPool("c", "a", PoolConfig{}), mkRemoveOp("op2"))
	f("added and removed", RootName, "a", "a1", "opA", "c", "b", "a2", "a2x", "opR", "op1")

	// Ancestors: nearest first, root last.
	id, _ := tr.Lookup("a2x")
	var anc []string
	tr.Ancestors(id, func(p ID) { anc = append(anc, tr.Name(p)) })
	if want := []string{"a2", "b", RootName}; !slices.Equal(anc, want) {
		t.Errorf("ancestors of a2x %v, want %v", anc, want)
	}
	b, _ := tr.Lookup("b")
	a, _ := tr.Lookup("a")
	if !tr.IsAncestor(b, id) || !tr.IsAncestor(id, id) || !tr.IsAncestor(Root, id) || tr.IsAncestor(a, id) {
		t.Errorf("IsAncestor wrong for a2x")
	}
}

// TestSeparateNamespaces: pools and operations are separate namespaces
// (issue 14: an operation "team-a" stopped a pool "team-a"); Lookup finds
// the pool, LookupOperation the operation, and each is removed alone.
func TestSeparateNamespaces(t *testing.T) {
	tr := testBaseTree(t)
	if _, err := tr.Apply(mkOp("team-a", ""), mkPool("team-a", "", PoolConfig{}), mkPool("op1", "b", PoolConfig{}), mkOp("b", "b")); err != nil {
		t.Fatal(err)
	}
	checkTreeConsistent(t, tr)
	pool, ok1 := tr.Lookup("team-a")
	op, ok2 := tr.LookupOperation("team-a")
	if !ok1 || !ok2 || tr.Kind(pool) != KindPool || tr.Kind(op) != KindOperation {
		t.Fatalf("Lookup: %d %v, LookupOperation: %d %v", pool, ok1, op, ok2)
	}
	if _, err := tr.Apply(Mutation{Kind: RemoveOperation, Name: "team-a"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.LookupOperation("team-a"); ok {
		t.Error("the operation is still there")
	}
	if id, ok := tr.Lookup("team-a"); !ok || id != pool {
		t.Error("removing the operation removed the pool")
	}
	// An operation moves to the pool, not to the operation of that name.
	if _, err := tr.Apply(Mutation{Kind: MoveOperation, Name: "b", Parent: "op1"}); err != nil {
		t.Fatal(err)
	}
	checkTreeConsistent(t, tr)
	for _, n := range []string{".", "..", ""} {
		if ValidName(n) {
			t.Errorf("ValidName(%q)", n)
		}
	}
	for _, n := range []string{"...", ".a", "a..b", "x.", "-"} {
		if !ValidName(n) {
			t.Errorf("!ValidName(%q)", n)
		}
	}
}

// TestChangesSince checks the change log: each reader gets the changes
// after its cursor, in order; a change of the last logged operation takes
// no entry until a reader has seen it; a reader the log no longer reaches
// back to is told so.
func TestChangesSince(t *testing.T) {
	tr := New(PoolConfig{})
	mustApply(t, tr, mkPool("p", RootName, PoolConfig{}), mkOp("x", "p"), mkOp("y", "p"))
	x, _ := tr.LookupOperation("x")
	y, _ := tr.LookupOperation("y")
	d := func(n int64) resource.Vec { return resource.Vec{0, n, 0, 1 << 20, 0} }
	f := func(c uint64, want ...ID) uint64 {
		t.Helper()
		ids, ok := tr.ChangesSince(c)
		if !ok || !slices.Equal(ids, want) {
			t.Fatalf("ChangesSince(%d) = %v, %v; want %v, true", c, ids, ok, want)
		}
		return tr.ChangeCursor()
	}
	a := f(tr.ChangeCursor())
	tr.SetDemandUsage(x, d(200), resource.Vec{})
	tr.SetPendingJobCount(x, 3)                  // x again, unseen: no entry
	tr.SetDemandUsage(x, d(200), resource.Vec{}) // no change
	b := f(a, x)
	tr.SetPendingJobCount(x, 4) // seen by b's reader: a new entry
	tr.SetNodeLimits(y, NodeLimits{HasBestAllocationShare: true})
	if err := tr.SetOperationWeight(x, Some(2)); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetOperationLimits(y, onlyRes(resource.CPU, 100)); err != nil {
		t.Fatal(err)
	}
	f(b, x, y, x, y)
	f(a, x, x, y, x, y)
	// The log starts afresh beyond minChangeLog entries: old cursors are
	// refused, and the reader looks at everything.
	c := tr.ChangeCursor()
	for i := range minChangeLog {
		tr.SetPendingJobCount([]ID{x, y}[i%2], int64(10+i))
	}
	if ids, ok := tr.ChangesSince(c); ok {
		t.Fatalf("ChangesSince(%d) after %d changes = %d entries, true; want false", c, minChangeLog, len(ids))
	}
	if _, ok := tr.ChangesSince(tr.ChangeCursor() + 1); ok {
		t.Fatal("ChangesSince(a cursor ahead of the log) is ok")
	}
	f(tr.ChangeCursor())
}
