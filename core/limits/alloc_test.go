//go:build !race

package limits

import (
	"runtime"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

// Zero allocations in steady state: once the per-ID slices
// have grown to the tree and dst has room, the admission path allocates
// nothing.

// TestZeroAllocs cycles two operations through one running slot: each
// Unregister starts the pending one (a pending scan from the pool to the
// root), each Register makes the finished one pending again.
func TestZeroAllocs(t *testing.T) {
	cfg := DefaultConfig()
	h := newHarness(t, cfg,
		poolMut("A", "root", -1, -1),
		poolMut("B", "A", -1, -1),
		poolMut("P", "B", -1, 1),
		lightPoolMut("L", "B", -1, 0, true, true),
	)
	x, _, _ := h.start("x", "P", false)
	y, _, _ := h.start("y", "P", false)
	v, _, _ := h.start("v", "L", true)
	if h.l.State(x) != Running || h.l.State(y) != Pending || h.l.State(v) != Lightweight {
		t.Fatalf("unexpected start: %s", h.states())
	}
	l := h.l
	dst := make([]tree.ID, 0, 8)
	p := h.id("P")
	var sink int64
	allocs := testing.AllocsPerRun(1000, func() {
		dst = l.Unregister(x, dst[:0])
		if len(dst) != 1 || dst[0] != y {
			panic("the pending operation did not start")
		}
		if l.CanRegister(p) != nil {
			panic("refused")
		}
		if l.Register(x) != Pending {
			panic("not pending")
		}
		x, y = y, x

		dst = l.Unregister(v, dst[:0])
		if l.Register(v) != Lightweight {
			panic("not lightweight")
		}

		dst = l.RescanAll(dst[:0])
		wp, _ := l.WaitingFor(y)
		sink += int64(wp) + l.OperationCount(p) + l.RunningOperationCount(p) + l.PendingOperationCount(p) +
			l.LightweightRunningOperationCount(tree.Root) + l.EffectiveMaxRunningOperationCount(p) + int64(l.State(x))
		dst = l.Pending(p, dst[:0])
	})
	if allocs != 0 {
		t.Fatalf("got %v allocs per run, want 0", allocs)
	}
	_ = sink
	if err := checkInvariants(h.tr, h.l, true); err != nil {
		t.Fatal(err)
	}
}

// mallocsPerRun is testing.AllocsPerRun for a function whose setup (here: the
// tree mutation that must follow Move) allocates: it counts only f.
func mallocsPerRun(runs int, f, setup func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	setup()
	var before, after runtime.MemStats
	var total uint64
	for range runs {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		total += after.Mallocs - before.Mallocs
		setup()
	}
	return float64(total) / float64(runs)
}

// TestZeroAllocsMove moves a running, a pending and a lightweight operation
// back and forth between pools.
func TestZeroAllocsMove(t *testing.T) {
	if n := mallocsPerRun(100, func() {}, func() {}); n != 0 {
		t.Skipf("the malloc counter is not quiet (%v per empty run)", n)
	}
	cfg := DefaultConfig()
	cfg.MaxRunningOperationCount = 1
	h := newHarness(t, cfg,
		poolMut("A", "root", -1, -1),
		poolMut("P", "A", -1, -1),
		poolMut("Q", "root", -1, -1),
		lightPoolMut("L1", "A", -1, 0, true, true),
		lightPoolMut("L2", "root", -1, 0, true, true),
	)
	a, _, _ := h.start("a", "P", false)
	b, _, _ := h.start("b", "P", false)
	v, _, _ := h.start("v", "L1", true)
	if h.l.State(a) != Running || h.l.State(b) != Pending || h.l.State(v) != Lightweight {
		t.Fatalf("unexpected start: %s", h.states())
	}
	l := h.l
	dst := make([]tree.ID, 0, 8)
	to := [2]tree.ID{h.id("Q"), h.id("L2")}
	back := [2]tree.ID{h.id("P"), h.id("L1")}
	toName, backName := [2]string{"Q", "L2"}, [2]string{"P", "L1"}
	var err error
	allocs := mallocsPerRun(100, func() {
		for _, op := range [2]tree.ID{a, b} {
			if dst, err = l.Move(op, to[0], dst[:0]); err != nil || len(dst) != 0 {
				panic("move refused or started something")
			}
		}
		if dst, err = l.Move(v, to[1], dst[:0]); err != nil {
			panic(err)
		}
	}, func() {
		for _, op := range []string{"a", "b"} {
			if _, err := h.tr.Apply(tree.Mutation{Kind: tree.MoveOperation, Name: op, Parent: toName[0]}); err != nil {
				panic(err)
			}
		}
		if _, err := h.tr.Apply(tree.Mutation{Kind: tree.MoveOperation, Name: "v", Parent: toName[1]}); err != nil {
			panic(err)
		}
		to, back = back, to
		toName, backName = backName, toName
	})
	if allocs != 0 {
		t.Fatalf("got %v allocs per run, want 0", allocs)
	}
	if err := checkInvariants(h.tr, h.l, true); err != nil {
		t.Fatal(err)
	}
	if h.l.State(a) != Running || h.l.State(b) != Pending || h.l.State(v) != Lightweight {
		t.Fatalf("unexpected end: %s", h.states())
	}
}
