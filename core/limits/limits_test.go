package limits

import (
	"errors"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

// Semantics of operation counts, admission and the pending queue
// (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations). Scenario tests are scripts of "command -> output" lines run
// by harness.run (harness_test.go), which re-checks every count from scratch
// after each command.

func TestDefaultConfig(t *testing.T) {
	want := Config{MaxOperationCount: 50000, MaxRunningOperationCount: 2000, MaxOperationCountPerPool: 50, MaxRunningOperationCountPerPool: 50}
	if got := DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

func TestStateString(t *testing.T) {
	f := func(s State, want string) {
		t.Helper()
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
	f(Unregistered, "unregistered")
	f(Running, "running")
	f(Pending, "pending")
	f(Lightweight, "lightweight")
}

// TestOperationCountLimits follows the reference test of that name
// [T: pool_tree_element_ut.cpp::TestOperationCountLimits]: counts propagate
// to every ancestor including the root.
func TestOperationCountLimits(t *testing.T) {
	h := newHarness(t, DefaultConfig(),
		poolMut("pool0", "root", -1, -1),
		poolMut("pool1", "root", -1, -1),
		poolMut("pool2", "pool1", -1, -1),
	)
	h.run(`
		start op pool2   -> running
		counts root      -> ops=1 running=1 lightweight=0 pending=0
		counts pool1     -> ops=1 running=1 lightweight=0 pending=0
		counts pool2     -> ops=1 running=1 lightweight=0 pending=0
		counts pool0     -> ops=0 running=0 lightweight=0 pending=0
		start x1 pool1   -> running
		start x2 pool1   -> running
		start x3 pool1   -> running
		start x4 pool1   -> running
		start x5 pool1   -> running
		counts root      -> ops=6 running=6 lightweight=0 pending=0
		counts pool1     -> ops=6 running=6 lightweight=0 pending=0
		counts pool2     -> ops=1 running=1 lightweight=0 pending=0
		finish x1        -> []
		finish x2        -> []
		finish x3        -> []
		finish x4        -> []
		finish x5        -> []
		counts root      -> ops=1 running=1 lightweight=0 pending=0
		finish op        -> []
		counts root      -> ops=0 running=0 lightweight=0 pending=0
		counts pool1     -> ops=0 running=0 lightweight=0 pending=0
		counts pool2     -> ops=0 running=0 lightweight=0 pending=0
	`)
}

// TestCanRegister: the total limit of the lowest pool at its limit on the
// path refuses a new operation, naming that pool (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func TestCanRegister(t *testing.T) {
	cfg := Config{MaxOperationCount: 6, MaxRunningOperationCount: 100, MaxOperationCountPerPool: 4, MaxRunningOperationCountPerPool: 100}
	// root (6) ─ A (3) ─ B (default 4) ─ C (5)
	//          └ D (default 4)
	f := func(pool string, fill map[string]int, wantPool string, wantLimit, wantCount int64) {
		t.Helper()
		h := newHarness(t, cfg,
			poolMut("A", "root", 3, -1),
			poolMut("B", "A", -1, -1),
			poolMut("C", "B", 5, -1),
			poolMut("D", "root", -1, -1),
		)
		n := 0
		for _, p := range []string{"root", "A", "B", "C", "D"} {
			for range fill[p] {
				n++
				if _, _, err := h.start("f"+string(rune('a'+n)), p, false); err != nil {
					t.Fatalf("filling %s: %v", p, err)
				}
			}
		}
		err := h.l.CanRegister(h.id(pool))
		if wantPool == "" {
			if err != nil {
				t.Errorf("CanRegister(%s) with %v = %v, want nil", pool, fill, err)
			}
			return
		}
		var le *LimitError
		if !errors.As(err, &le) {
			t.Fatalf("CanRegister(%s) with %v = %v, want a *LimitError", pool, fill, err)
		}
		want := LimitError{Code: CodeTooManyOperations, Pool: wantPool, Limit: wantLimit, Count: wantCount, Action: ActionStart}
		if *le != want {
			t.Errorf("CanRegister(%s) with %v = %+v, want %+v", pool, fill, *le, want)
		}
		if !errors.Is(err, ErrTooManyOperations) || errors.Is(err, ErrTooManyRunningOperations) {
			t.Errorf("errors.Is of %v gives the wrong sentinel", err)
		}
	}
	f("C", nil, "", 0, 0)
	f("C", map[string]int{"C": 2}, "", 0, 0)
	f("C", map[string]int{"C": 3}, "A", 3, 3)         // the nested ancestor A refuses
	f("C", map[string]int{"B": 1, "C": 2}, "A", 3, 3) // counts of B and C add up in A
	f("B", map[string]int{"A": 3}, "A", 3, 3)         // A's own operations count too
	f("D", map[string]int{"D": 4}, "D", 4, 4)         // the per-pool default
	f("D", map[string]int{"A": 2, "D": 3}, "", 0, 0)  // root has 5 of 6
	f("D", map[string]int{"A": 2, "D": 3, "root": 1}, tree.RootName, 6, 6)
	f("root", map[string]int{"A": 3, "D": 3}, tree.RootName, 6, 6)
	f("A", map[string]int{"A": 3, "D": 3}, "A", 3, 3) // the lowest pool is named
}

func TestLimitErrorText(t *testing.T) {
	f := func(e LimitError, want string) {
		t.Helper()
		if got := e.Error(); got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	}
	f(LimitError{Code: CodeTooManyOperations, Pool: "x", Limit: 50, Count: 50},
		`cannot start operation: pool "x" has 50 operations, its max_operation_count is 50`)
	f(LimitError{Code: CodeTooManyOperations, Pool: "x", Limit: 50, Count: 50, Action: ActionStart},
		`cannot start operation: pool "x" has 50 operations, its max_operation_count is 50`)
	f(LimitError{Code: CodeTooManyOperations, Pool: "<Root>", Limit: 7, Count: 8, Action: ActionMove},
		`cannot move operation: pool "<Root>" has 8 operations, its max_operation_count is 7`)
	f(LimitError{Code: CodeTooManyRunningOperations, Pool: "y", Limit: 2, Count: 2, Action: ActionMove},
		`cannot move operation: pool "y" has 2 running operations, its max_running_operation_count is 2`)
}

func TestEffectiveLimits(t *testing.T) {
	h := newHarness(t, Config{MaxOperationCount: 100, MaxRunningOperationCount: 10, MaxOperationCountPerPool: 7, MaxRunningOperationCountPerPool: 3},
		poolMut("own", "root", 20, 5),
		poolMut("def", "root", -1, -1),
		poolMut("zero", "root", 0, 0),
	)
	f := func(pool string, wantOps, wantRunning int64) {
		t.Helper()
		id := h.id(pool)
		if got := h.l.EffectiveMaxOperationCount(id); got != wantOps {
			t.Errorf("EffectiveMaxOperationCount(%s) = %d, want %d", pool, got, wantOps)
		}
		if got := h.l.EffectiveMaxRunningOperationCount(id); got != wantRunning {
			t.Errorf("EffectiveMaxRunningOperationCount(%s) = %d, want %d", pool, got, wantRunning)
		}
	}
	f("root", 100, 10)
	f("own", 20, 5)
	f("def", 7, 3)
	f("zero", 0, 0)
	h.l.SetConfig(DefaultConfig())
	f("root", 50000, 2000)
	f("def", 50, 50)
	f("own", 20, 5)
}

// TestPendingQueue: the running limit makes operations pending in the
// LOWEST pool at its limit; finishing operations releases them in FIFO
// order per pool, and an operation released from an upper pool's list that
// is still blocked lower moves to the lower pool's list (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func TestPendingQueue(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRunningOperationCount = 3
	h := newHarness(t, cfg,
		poolMut("A", "root", -1, 2),
		poolMut("B", "A", -1, 1),
		poolMut("C", "root", -1, -1),
	)
	h.run(`
		start b1 B   -> running
		start b2 B   -> pending(B)
		start a1 A   -> running
		# A runs 2 of 2 now; B is not at its limit for a2, A is.
		start a2 A   -> pending(A)
		start c1 C   -> running
		# root runs 3 of 3.
		start c2 C   -> pending(root)
		start b3 B   -> pending(B)
		start a3 A   -> pending(A)
		lists        -> root=[c2] A=[a2 a3] B=[b2 b3]
		counts root  -> ops=8 running=3 lightweight=0 pending=5
		counts A     -> ops=6 running=2 lightweight=0 pending=4
		counts B     -> ops=3 running=1 lightweight=0 pending=2
		# a1 leaves: A has room for one; a2 is first.
		finish a1    -> [a2]
		states       -> a2=running a3=pending(A) b1=running b2=pending(B) b3=pending(B) c1=running c2=pending(root)
		# c1 leaves: C has no list, root has room for c2.
		finish c1    -> [c2]
		lists        -> A=[a3] B=[b2 b3]
		# b1 leaves: B has room for b2 (A and root have room after b1 left).
		finish b1    -> [b2]
		lists        -> A=[a3] B=[b3]
		# a pending operation leaving starts nothing.
		finish a3    -> []
		finish b3    -> []
		finish a2    -> []
		finish b2    -> []
		finish c2    -> []
		counts root  -> ops=0 running=0 lightweight=0 pending=0
	`)
}

// TestNestedRunningLimits: root 3, A 2, B under A 1; five operations
// finishing in different orders.
func TestNestedRunningLimits(t *testing.T) {
	build := func(t *testing.T) *harness {
		cfg := DefaultConfig()
		cfg.MaxRunningOperationCount = 3
		h := newHarness(t, cfg,
			poolMut("A", "root", -1, 2),
			poolMut("B", "A", -1, 1),
		)
		h.run(`
			start o1 B  -> running
			start o2 B  -> pending(B)
			start o3 A  -> running
			start o4 root -> running
			start o5 A  -> pending(A)
			states      -> o1=running o2=pending(B) o3=running o4=running o5=pending(A)
			counts root -> ops=5 running=3 lightweight=0 pending=2
		`)
		return h
	}
	t.Run("order=1,3,4", func(t *testing.T) {
		h := build(t)
		h.run(`
			# o1 leaves B: o2 starts (B 0<1, A 1<2, root 2<3).
			finish o1   -> [o2]
			states      -> o2=running o3=running o4=running o5=pending(A)
			# o3 leaves A: o5 starts.
			finish o3   -> [o5]
			states      -> o2=running o4=running o5=running
			finish o4   -> []
			counts root -> ops=2 running=2 lightweight=0 pending=0
		`)
	})
	t.Run("order=4,3,2", func(t *testing.T) {
		h := build(t)
		h.run(`
			# o4 leaves the root: nothing waits in the root's list.
			finish o4   -> []
			states      -> o1=running o2=pending(B) o3=running o5=pending(A)
			# o3 leaves A: o5 starts.
			finish o3   -> [o5]
			# o2 was pending: nothing starts.
			finish o2   -> []
			states      -> o1=running o5=running
			counts A    -> ops=2 running=2 lightweight=0 pending=0
		`)
	})
	t.Run("order=3,1", func(t *testing.T) {
		h := build(t)
		h.run(`
			# o3 leaves A: o5 starts and fills A again.
			finish o3   -> [o5]
			states      -> o1=running o2=pending(B) o4=running o5=running
			# o1 leaves B: B runs 0 of 1, A (o5) 1 of 2, the root (o4, o5) 2 of 3: o2 starts.
			finish o1   -> [o2]
			states      -> o2=running o4=running o5=running
			counts root -> ops=3 running=3 lightweight=0 pending=0
		`)
	})
	t.Run("order=5,1", func(t *testing.T) {
		h := build(t)
		h.run(`
			finish o5   -> []
			finish o1   -> [o2]
			states      -> o2=running o3=running o4=running
		`)
	})
}

// TestRequeueToLowerPool: an operation released from the root's list whose
// own pool has meanwhile reached its limit moves to that pool's list.
func TestRequeueToLowerPool(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRunningOperationCount = 2
	h := newHarness(t, cfg,
		poolMut("A", "root", -1, -1),
		poolMut("B", "A", -1, 1),
		poolMut("C", "root", -1, -1),
	)
	h.run(`
		start c1 C   -> running
		start c2 C   -> running
		start x B    -> pending(root)
		start y B    -> pending(root)
		# c2 moves into B: only B and A (not shared with C) are checked; B is then full.
		move c2 B    -> running []
		lists        -> root=[x y]
		# c1 leaves: the root has room for one; x is blocked by B and moves to B's list,
		# y too; nothing starts.
		finish c1    -> []
		lists        -> B=[x y]
		states       -> c2=running x=pending(B) y=pending(B)
		finish c2    -> [x]
		states       -> x=running y=pending(B)
	`)
}

// TestFIFOWithinPool: operations waiting in one pool start in the order they
// became pending, one per freed slot.
func TestFIFOWithinPool(t *testing.T) {
	h := newHarness(t, DefaultConfig(), poolMut("P", "root", -1, 2))
	h.run(`
		start r1 P -> running
		start r2 P -> running
		start w1 P -> pending(P)
		start w2 P -> pending(P)
		start w3 P -> pending(P)
		start w4 P -> pending(P)
		finish w2  -> []
		finish r2  -> [w1]
		finish r1  -> [w3]
		lists      -> P=[w4]
		limit P running=5 -> ok
		rescan     -> [w4]
		states     -> w1=running w3=running w4=running
	`)
}

// TestLightweight: vanilla operations in a FIFO pool with
// enable_lightweight_operations bypass running limits but count in
// operation_count (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func TestLightweight(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRunningOperationCount = 1
	h := newHarness(t, cfg,
		lightPoolMut("L", "root", 3, 1, true, true),
		lightPoolMut("F", "root", -1, 5, true, false), // FIFO without the flag
		lightPoolMut("S", "root", -1, 5, false, true), // flag but fair_share
	)
	h.run(`
		start r L          -> running
		start v1 L vanilla -> lightweight
		start v2 L vanilla -> lightweight
		counts L           -> ops=3 running=1 lightweight=2 pending=0
		counts root        -> ops=3 running=1 lightweight=2 pending=0
		# max_operation_count still applies.
		start v3 L vanilla -> error too_many_operations L
		# not eligible: the root's running limit holds them back.
		start f F vanilla  -> pending(root)
		start s S vanilla  -> pending(root)
		start n L          -> error too_many_operations L
		finish v1          -> []
		start n L          -> pending(L)
		counts root        -> ops=5 running=1 lightweight=1 pending=3
		finish r           -> [n]
		states             -> f=pending(root) n=running s=pending(root) v2=lightweight
		finish v2          -> []
		finish n           -> [f]
	`)
}

// TestMove: validation on the new pools not shared with the old path, state
// unchanged on refusal, pending operations re-queued (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func TestMove(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRunningOperationCount = 4
	build := func(t *testing.T) *harness {
		return newHarness(t, cfg,
			poolMut("A", "root", 3, 2),
			poolMut("A1", "A", -1, 1),
			poolMut("A2", "A", -1, 1),
			poolMut("B", "root", 2, 1),
			lightPoolMut("L", "root", 5, 0, true, true),
			lightPoolMut("F", "root", 5, 1, true, false),
		)
	}
	t.Run("refused", func(t *testing.T) {
		h := build(t)
		h.run(`
			start a1 A1   -> running
			start a2 A2   -> running
			start b1 B    -> running
			start b2 B    -> pending(B)
			start x root  -> running
			# B has 2 of 2 operations.
			move x B      -> error too_many_operations B
			# A has 3 of 3 operations after a3.
			start a3 A    -> pending(A)
			move x A      -> error too_many_operations A
			# the lowest pool is reported first: A2's running limit before A's total.
			move x A2     -> error too_many_running_operations A2
			finish a3     -> []
			# A2 runs 1 of 1: a running operation is refused.
			move x A2     -> error too_many_running_operations A2
			# A runs 2 of 2.
			move x A      -> error too_many_running_operations A
			states        -> a1=running a2=running b1=running b2=pending(B) x=running
			lists         -> B=[b2]
			counts root   -> ops=5 running=4 lightweight=0 pending=1
			counts A      -> ops=2 running=2 lightweight=0 pending=0
		`)
	})
	t.Run("shared", func(t *testing.T) {
		h := build(t)
		h.run(`
			start a1 A1   -> running
			start a2 A    -> running
			start a3 A    -> pending(A)
			# A is at 3 of 3 operations and 2 of 2 running, but shared by A1 and A2.
			move a1 A2    -> running []
			move a2 A1    -> running []
			states        -> a1=running a2=running a3=pending(A)
			counts A1     -> ops=1 running=1 lightweight=0 pending=0
			counts A2     -> ops=1 running=1 lightweight=0 pending=0
		`)
	})
	t.Run("pending", func(t *testing.T) {
		h := build(t)
		h.run(`
			start b1 B    -> running
			start b2 B    -> pending(B)
			start a1 A1   -> running
			# a pending operation is re-queued at the new path's lowest full pool...
			move b2 A1    -> pending(A1) []
			lists         -> A1=[b2]
			counts B      -> ops=1 running=1 lightweight=0 pending=0
			# ... or starts.
			move b2 A2    -> running [b2]
			lists         ->
			# a pending operation is not refused by running limits.
			start a3 A    -> pending(A)
			move a3 B     -> pending(B) []
		`)
	})
	t.Run("departure", func(t *testing.T) {
		h := build(t)
		h.run(`
			start b1 B    -> running
			start b2 B    -> pending(B)
			start b3 A1   -> running
			start b4 A1   -> pending(A1)
			# b1 leaves B: b2 starts.
			move b1 A2    -> running [b2]
			# b3 leaves A1 for A2? A2 is full now.
			move b3 A2    -> error too_many_running_operations A2
			move b3 root  -> running [b4]
			states        -> b1=running b2=running b3=running b4=running
		`)
	})
	t.Run("lightweight", func(t *testing.T) {
		h := build(t)
		h.run(`
			start v L vanilla    -> lightweight
			# B is fair_share: a vanilla operation is not lightweight there.
			start p B vanilla    -> running
			start q B            -> pending(B)
			start w root vanilla -> running
			# a running vanilla operation moved into L becomes lightweight and frees B.
			move p L             -> lightweight [q]
			move w L             -> lightweight []
			counts root          -> ops=4 running=1 lightweight=3 pending=0
			# a non-vanilla operation would count against L's running limit, 0.
			move q L             -> error too_many_running_operations L
			# a lightweight operation leaving L counts as running on the whole new path:
			# F runs 0 of 1, the root 1 of 4.
			move v F             -> running []
			move w F             -> error too_many_running_operations F
			move w root          -> running []
			start z root         -> running
			# the root is shared with L, yet p would newly count there: refused.
			move p root          -> error too_many_running_operations root
			counts root          -> ops=5 running=4 lightweight=1 pending=0
			counts L             -> ops=1 running=0 lightweight=1 pending=0
			states               -> p=lightweight q=running v=running w=running z=running
		`)
	})
	t.Run("lightweight-frees", func(t *testing.T) {
		h := build(t)
		h.run(`
			start w B vanilla -> running
			start q B         -> pending(B)
			# w becomes lightweight: B (and every old ancestor) gets a running slot back.
			move w L          -> lightweight [q]
			states            -> q=running w=lightweight
		`)
	})
	t.Run("same-pool", func(t *testing.T) {
		h := build(t)
		h.run(`
			start b1 B -> running
			move b1 B  -> running []
		`)
	})
}

// TestRescanAll: after a limit is raised, RescanAll starts what now fits, in
// the order the operations became pending.
func TestRescanAll(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRunningOperationCount = 3
	h := newHarness(t, cfg,
		poolMut("A", "root", -1, 1),
		poolMut("B", "root", -1, 1),
	)
	h.run(`
		start a1 A  -> running
		start a2 A  -> pending(A)
		start b1 B  -> running
		start b2 B  -> pending(B)
		start r1 root -> running
		start a3 A  -> pending(A)
		start r2 root -> pending(root)
		start b3 B  -> pending(B)
		rescan      -> []
		lists       -> root=[r2] A=[a2 a3] B=[b2 b3]
		limit A running=5 -> ok
		# A has room, but the root is full: a2 and a3 move to the root's list.
		rescan      -> []
		lists       -> root=[a2 a3 r2] B=[b2 b3]
		limit root running=5 -> ok
		# in the order they became pending: a2 starts, b2 stays (B), a3 starts, r2 finds
		# the root full again, b3 stays (B).
		rescan      -> [a2 a3]
		lists       -> root=[r2] B=[b2 b3]
		limit root running=10 -> ok
		rescan      -> [r2]
		limit B running=2 -> ok
		rescan      -> [b2]
		states      -> a1=running a2=running a3=running b1=running b2=running b3=pending(B) r1=running r2=running
	`)
}

// TestRescanLightweight: a pending vanilla operation starts as lightweight
// when a rescan finds its FIFO pool now allows it.
func TestRescanLightweight(t *testing.T) {
	h := newHarness(t, DefaultConfig(), lightPoolMut("L", "root", -1, 1, true, false))
	h.run(`
		start r L         -> running
		start v L vanilla -> pending(L)
	`)
	c := *h.tr.Pool(h.id("L"))
	c.EnableLightweightOperations = true
	if _, err := h.tr.Apply(tree.Mutation{Kind: tree.SetPool, Name: "L", Pool: c}); err != nil {
		t.Fatal(err)
	}
	h.run(`
		rescan   -> [v]
		states   -> r=running v=lightweight
		counts L -> ops=2 running=1 lightweight=1 pending=0
	`)
}

func TestWaitingFor(t *testing.T) {
	h := newHarness(t, DefaultConfig(), poolMut("P", "root", -1, 1))
	r, _, _ := h.start("r", "P", false)
	w, _, _ := h.start("w", "P", false)
	f := func(op tree.ID, wantPool tree.ID, wantLimit int64) {
		t.Helper()
		if p, l := h.l.WaitingFor(op); p != wantPool || l != wantLimit {
			t.Errorf("WaitingFor(%d) = %d, %d; want %d, %d", op, p, l, wantPool, wantLimit)
		}
	}
	f(r, tree.None, 0)
	f(w, h.id("P"), 1)
	f(tree.ID(1000), tree.None, 0)
	if s := h.l.State(tree.ID(1000)); s != Unregistered {
		t.Errorf("State of an unknown ID = %v", s)
	}
	if s := h.l.State(tree.None); s != Unregistered {
		t.Errorf("State(None) = %v", s)
	}
}

// TestPoolMoved: the subtree's counts move with a pool and pending
// operations are re-checked.
func TestPoolMoved(t *testing.T) {
	cfg := DefaultConfig()
	h := newHarness(t, cfg,
		poolMut("A", "root", -1, 1),
		poolMut("B", "root", -1, 5),
		poolMut("P", "A", -1, 5),
	)
	h.run(`
		start p1 P  -> running
		start p2 P  -> pending(A)
		start p3 P  -> pending(A)
		counts A    -> ops=3 running=1 lightweight=0 pending=2
	`)
	move := func(pool, parent string) []tree.ID {
		id := h.id(pool)
		old := h.tr.Parent(id)
		c := *h.tr.Pool(id)
		if i, err := h.tr.Apply(tree.Mutation{Kind: tree.SetPool, Name: pool, Parent: treeName(parent), Pool: c}); err != nil {
			t.Fatalf("mutation %d: %v", i, err)
		}
		h.buf = h.l.PoolMoved(id, old, h.buf[:0])
		return h.buf
	}
	if got := h.names(move("P", "B")); got != "[p2 p3]" {
		t.Errorf("PoolMoved(P, A→B) started %s, want [p2 p3]", got)
	}
	h.run(`
		counts A -> ops=0 running=0 lightweight=0 pending=0
		counts B -> ops=3 running=3 lightweight=0 pending=0
		counts P -> ops=3 running=3 lightweight=0 pending=0
		counts root -> ops=3 running=3 lightweight=0 pending=0
		start p4 P -> running
	`)
	// Moving it back overcommits A: nothing stops, new operations wait.
	if got := h.names(move("P", "A")); got != "[]" {
		t.Errorf("PoolMoved(P, B→A) started %s, want []", got)
	}
	if err := checkInvariants(h.tr, h.l, false); err != nil {
		t.Fatal(err)
	}
	if got, want := h.counts(h.id("A")), "ops=4 running=4 lightweight=0 pending=0"; got != want {
		t.Errorf("counts A = %s, want %s", got, want)
	}
	if got, want := h.exec("start p5 P"), "pending(A)"; got != want {
		t.Errorf("start p5 P = %s, want %s", got, want)
	}
	if got, want := h.exec("finish p1"), "[]"; got != want {
		t.Errorf("finish p1 = %s, want %s (A still runs 3 of 1)", got, want)
	}
}

// TestBugPanics: misuse that the contract forbids panics with "BUG:".
func TestBugPanics(t *testing.T) {
	f := func(name string, fn func(h *harness)) {
		t.Helper()
		h := newHarness(t, DefaultConfig(), poolMut("P", "root", 1, -1))
		defer func() {
			t.Helper()
			r := recover()
			s, _ := r.(string)
			if len(s) < 4 || s[:4] != "BUG:" {
				t.Errorf("%s: panic %v, want a BUG: panic", name, r)
			}
		}()
		fn(h)
	}
	f("register without CanRegister", func(h *harness) {
		h.start("a", "P", false)
		h.tr.Apply(tree.Mutation{Kind: tree.AddOperation, Name: "b", Parent: "P"})
		h.l.Register(h.id("b"))
	})
	f("register twice", func(h *harness) {
		op, _, _ := h.start("a", "P", false)
		h.l.Register(op)
	})
	f("register a pool", func(h *harness) { h.l.Register(h.id("P")) })
	f("unregister twice", func(h *harness) {
		op, _, _ := h.start("a", "P", false)
		h.l.Unregister(op, nil)
		h.l.Unregister(op, nil)
	})
	f("move unregistered", func(h *harness) {
		h.tr.Apply(tree.Mutation{Kind: tree.AddOperation, Name: "b", Parent: "P"})
		h.l.Move(h.id("b"), tree.Root, nil)
	})
	f("move into an operation", func(h *harness) {
		op, _, _ := h.start("a", "root", false)
		h.l.Move(op, op, nil)
	})
	f("can register in an operation", func(h *harness) {
		op, _, _ := h.start("a", "root", false)
		h.l.CanRegister(op)
	})
}
