package coretest

import (
	"fmt"
	"math"
	"testing"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// poolEqual compares two pool configurations. NB: PoolConfig holds a slice,
// so it is not comparable; %+v prints every field, floats exactly.
func poolEqual(a, b *tree.PoolConfig) bool {
	return fmt.Sprintf("%+v", *a) == fmt.Sprintf("%+v", *b)
}

// sameTree reports the first difference between two trees, or "".
func sameTree(a, b *tree.Tree) string {
	if a.Len() != b.Len() {
		return "different lengths"
	}
	for i := range a.Len() {
		id := tree.ID(i)
		switch {
		case a.Kind(id) != b.Kind(id):
			return "kind of " + a.Name(id)
		case a.Kind(id) == tree.KindFree:
			continue
		case a.Name(id) != b.Name(id):
			return "name of " + a.Name(id)
		case a.Parent(id) != b.Parent(id):
			return "parent of " + a.Name(id)
		}
		if a.IsOperation(id) {
			switch {
			case *a.Operation(id) != *b.Operation(id):
				return "spec of " + a.Name(id)
			case a.Demand(id) != b.Demand(id):
				return "demand of " + a.Name(id)
			case a.Usage(id) != b.Usage(id):
				return "usage of " + a.Name(id)
			case a.PendingJobCount(id) != b.PendingJobCount(id):
				return "pending job count of " + a.Name(id)
			}
		} else if !poolEqual(a.Pool(id), b.Pool(id)) {
			return "config of " + a.Name(id)
		}
	}
	return ""
}

func TestGenTreeDeterministic(t *testing.T) {
	a, ta := GenTree(7, 300, 3000)
	b, tb := GenTree(7, 300, 3000)
	if ta != tb {
		t.Fatalf("totals differ: %v vs %v", ta, tb)
	}
	if d := sameTree(a, b); d != "" {
		t.Fatalf("same seed, different trees: %s", d)
	}
	c, _ := GenTree(8, 300, 3000)
	if sameTree(a, c) == "" {
		t.Fatalf("seeds 7 and 8 gave the same tree")
	}
}

func TestGenTreeShape(t *testing.T) {
	f := func(seed uint64, pools, ops int) {
		t.Helper()
		tr, total := GenTree(seed, pools, ops)
		if want := ClusterTotal(max(1, ops/OpsPerNode)); total != want {
			t.Fatalf("GenTree(%d, %d, %d): total %v, want %v", seed, pools, ops, total, want)
		}
		if n := len(tr.Dirty()); n != 0 {
			t.Fatalf("GenTree(%d, %d, %d): %d dirty elements, want 0", seed, pools, ops, n)
		}
		var nPools, nOps, nFifo, nGuaranteed, nBurst, nRelaxed int
		var demand, usage resource.Vec
		tr.Walk(func(id tree.ID) {
			depth := 0
			tr.Ancestors(id, func(tree.ID) { depth++ })
			parent := tr.Parent(id)
			switch tr.Kind(id) {
			case tree.KindRoot:
				return
			case tree.KindOperation:
				nOps++
				if k := tr.Kind(parent); k == tree.KindPool {
					for c := tr.FirstChild(parent); c != tree.None; c = tr.NextSibling(c) {
						if !tr.IsOperation(c) {
							t.Fatalf("GenTree(%d, %d, %d): operation %s in pool %s, which has child pools", seed, pools, ops, tr.Name(id), tr.Name(parent))
						}
					}
				} else if pools > 0 {
					t.Fatalf("GenTree(%d, %d, %d): operation %s outside the pools", seed, pools, ops, tr.Name(id))
				}
				d, u := tr.Demand(id), tr.Usage(id)
				n, k := d[resource.UserSlots], u[resource.UserSlots]
				if n < 1 || k < 0 || k > n || d.Scale(k) != u.Scale(n) || tr.PendingJobCount(id) != n-k {
					t.Fatalf("GenTree(%d, %d, %d): operation %s: demand %v, usage %v, pending %d: want n ≥ 1 jobs, k ≤ n of them running, pending n-k",
						seed, pools, ops, tr.Name(id), d, u, tr.PendingJobCount(id))
				}
				demand, usage = demand.Add(d), usage.Add(u)
				return
			}
			nPools++
			if depth > MaxPoolDepth {
				t.Fatalf("GenTree(%d, %d, %d): pool %s at depth %d > %d", seed, pools, ops, tr.Name(id), depth, MaxPoolDepth)
			}
			c := tr.Pool(id)
			if c.Mode == tree.ModeFIFO {
				nFifo++
				for ch := tr.FirstChild(id); ch != tree.None; ch = tr.NextSibling(ch) {
					if !tr.IsOperation(ch) {
						t.Fatalf("GenTree(%d, %d, %d): fifo pool %s has child pool %s", seed, pools, ops, tr.Name(id), tr.Name(ch))
					}
				}
			}
			if !c.StrongGuarantee.IsEmpty() {
				nGuaranteed++
				if parent != tree.Root && tr.Pool(parent).StrongGuarantee.IsEmpty() {
					t.Fatalf("GenTree(%d, %d, %d): guaranteed pool %s under pool %s without a guarantee", seed, pools, ops, tr.Name(id), tr.Name(parent))
				}
			}
			switch c.Integral.Type {
			case tree.GuaranteeBurst:
				nBurst++
			case tree.GuaranteeRelaxed:
				nRelaxed++
			}
			if c.Integral.Type != tree.GuaranteeNone {
				tr.Ancestors(id, func(a tree.ID) {
					if tr.Pool(a).Integral.Type != tree.GuaranteeNone {
						t.Fatalf("GenTree(%d, %d, %d): integral pool %s inside integral pool %s", seed, pools, ops, tr.Name(id), tr.Name(a))
					}
				})
			}
		})
		if nPools != pools || nOps != ops {
			t.Fatalf("GenTree(%d, %d, %d): %d pools and %d operations", seed, pools, ops, nPools, nOps)
		}
		pct := func(p float64) int { return int(math.Round(p * float64(pools))) }
		if nFifo != pct(0.1) || nGuaranteed != pct(0.2) {
			t.Fatalf("GenTree(%d, %d, %d): %d fifo and %d guaranteed pools, want %d and %d", seed, pools, ops, nFifo, nGuaranteed, pct(0.1), pct(0.2))
		}
		if nBurst+nRelaxed != pct(0.05) || nBurst-nRelaxed > 1 || nBurst < nRelaxed {
			t.Fatalf("GenTree(%d, %d, %d): %d burst and %d relaxed pools, want %d in all, half burst", seed, pools, ops, nBurst, nRelaxed, pct(0.05))
		}
		for k := range usage {
			if float64(usage[k]) > 0.9*float64(total[k]) {
				t.Fatalf("GenTree(%d, %d, %d): usage %v exceeds 90%% of the total %v", seed, pools, ops, usage, total)
			}
		}
		if ops >= 1000 {
			// The cluster is overcommitted: the update has to ration.
			for _, k := range []resource.Kind{resource.CPU, resource.Memory, resource.GPU} {
				if ratio := float64(demand[k]) / float64(total[k]); ratio < 2 {
					t.Fatalf("GenTree(%d, %d, %d): %s demand/total %.2f, want ≥ 2", seed, pools, ops, k, ratio)
				}
			}
		}
	}
	f(1, 0, 0)
	f(1, 0, 5)
	f(1, 1, 5)
	f(2, 10, 50)
	f(3, 100, 1000)
	for seed := range uint64(5) {
		f(seed, 1000, 10000)
	}
}

func TestDemandChanges(t *testing.T) {
	tr, _ := GenTree(1, 100, 1000)
	a, b := NewDemandChanges(tr, 5), NewDemandChanges(tr, 5)
	for range 1000 {
		id, d, u := a.Next()
		id2, d2, u2 := b.Next()
		if id != id2 || d != d2 || u != u2 {
			t.Fatalf("same seed, different changes: %d %v %v vs %d %v %v", id, d, u, id2, d2, u2)
		}
		if !tr.IsOperation(id) {
			t.Fatalf("Next returned %d, not an operation", id)
		}
		old := tr.Demand(id)
		n, k := d[resource.UserSlots], u[resource.UserSlots]
		if d == old || n < 1 || k > n || !d.Dominates(u) {
			t.Fatalf("Next for %s: demand %v → %v, usage %v", tr.Name(id), old, d, u)
		}
		job := old
		for i := range job {
			job[i] /= old[resource.UserSlots]
		}
		if d != job.Scale(n) || u != job.Scale(k) {
			t.Fatalf("Next for %s: demand %v and usage %v are not whole jobs of %v", tr.Name(id), d, u, job)
		}
		tr.SetDemandUsage(id, d, u)
	}
	empty := tree.New(tree.PoolConfig{})
	if id, _, _ := NewDemandChanges(empty, 1).Next(); id != tree.None {
		t.Fatalf("Next on an empty tree returned %d, want None", id)
	}
}
