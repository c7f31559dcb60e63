package limits

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/rng"
	"github.com/fairsched/fairsched/core/tree"
)

// Seeded property test: random starts, finishes, moves, raised limits and
// (in odd runs) pool moves on a random tree. After every step the counts of
// every pool equal a recount from scratch, every pending operation waits in
// a pool on its path that is at its running limit (so no pending operation
// could run), and — until a pool move — no pool is over its limits. Each
// step's outcome is checked against an oracle, and the operations reported
// as started are exactly those that left Pending. Every failure names its
// seed; rerun one with -run 'TestRandomOperations/seed=N'.

func TestRandomOperations(t *testing.T) {
	for i := range 80 {
		seed := uint64(1000 + 7919*i)
		poolMoves := i%2 == 1
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			randomRun(t, seed, poolMoves, 400)
		})
	}
}

type randomWorld struct {
	h      *harness
	r      rng.Rand
	pools  []string // "root" first
	ops    []string // live operations
	nextOp int
	strict bool
}

func randomRun(t *testing.T, seed uint64, poolMoves bool, steps int) {
	w := &randomWorld{r: rng.New(seed), strict: true}
	r := &w.r
	cfg := Config{
		MaxOperationCount:               int64(8 + r.IntN(30)),
		MaxRunningOperationCount:        int64(1 + r.IntN(8)),
		MaxOperationCountPerPool:        int64(2 + r.IntN(8)),
		MaxRunningOperationCountPerPool: int64(r.IntN(4)),
	}
	var muts []tree.Mutation
	w.pools = []string{"root"}
	fifo := map[string]bool{}
	for i := range 2 + r.IntN(9) {
		name := fmt.Sprintf("p%d", i)
		var parents []string
		for _, p := range w.pools {
			if !fifo[p] {
				parents = append(parents, p)
			}
		}
		maxOps, maxRunning := int64(-1), int64(-1)
		if r.IntN(100) < 40 {
			maxOps = int64(r.IntN(9))
		}
		if r.IntN(100) < 50 {
			maxRunning = int64(r.IntN(5))
			if maxOps >= 0 && maxRunning > maxOps {
				maxRunning = maxOps
			}
		}
		isFIFO := r.IntN(100) < 35
		m := lightPoolMut(name, parents[r.IntN(len(parents))], maxOps, maxRunning, isFIFO, r.IntN(100) < 60)
		muts = append(muts, m)
		fifo[name] = isFIFO
		w.pools = append(w.pools, name)
	}
	w.h = newHarness(t, cfg, muts...)
	for step := range steps {
		what := w.step(poolMoves)
		if t.Failed() {
			t.Fatalf("seed %d, step %d (%s) failed; tree:\n%s", seed, step, what, w.describe())
		}
		if err := checkInvariants(w.h.tr, w.h.l, w.strict); err != nil {
			t.Fatalf("seed %d, step %d (%s): %v\ntree:\n%s", seed, step, what, err, w.describe())
		}
	}
}

// describe prints the tree with limits and operation states.
func (w *randomWorld) describe() string {
	h := w.h
	var b strings.Builder
	var rec func(id tree.ID, depth int)
	rec = func(id tree.ID, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		if h.tr.IsOperation(id) {
			fmt.Fprintf(&b, "%s vanilla=%v %s\n", h.name(id), h.tr.Operation(id).Vanilla, h.stateOf(id))
		} else {
			c := h.tr.Pool(id)
			fmt.Fprintf(&b, "%s mode=%v light=%v max_ops=%d max_running=%d %s list=%s\n", h.name(id), c.Mode, c.EnableLightweightOperations,
				h.l.EffectiveMaxOperationCount(id), h.l.EffectiveMaxRunningOperationCount(id), h.counts(id), h.names(h.l.Pending(id, nil)))
		}
		for c := h.tr.FirstChild(id); c != tree.None; c = h.tr.NextSibling(c) {
			rec(c, depth+1)
		}
	}
	rec(tree.Root, 0)
	return b.String()
}

// snapshot is everything observable, to check that a refused move changes nothing.
func (w *randomWorld) snapshot() string {
	h := w.h
	var b strings.Builder
	b.WriteString(h.states())
	b.WriteString("|")
	b.WriteString(h.lists())
	for _, p := range w.pools {
		b.WriteString("|" + h.counts(h.id(p)))
	}
	return b.String()
}

// allStates maps every live operation to its state.
func (w *randomWorld) allStates() map[string]State {
	m := make(map[string]State, len(w.ops))
	for _, op := range w.ops {
		m[op] = w.h.l.State(w.h.id(op))
	}
	return m
}

// checkStarted checks that started lists exactly the operations that went
// from Pending to Running or Lightweight, each once.
func (w *randomWorld) checkStarted(before map[string]State, started []tree.ID) {
	t := w.h.t
	t.Helper()
	got := make([]string, len(started))
	for i, id := range started {
		got[i] = w.h.name(id)
	}
	var want []string
	for _, op := range w.ops {
		b, ok := before[op]
		if !ok {
			continue
		}
		a := w.h.l.State(w.h.id(op))
		if b == Pending && (a == Running || a == Lightweight) {
			want = append(want, op)
		}
	}
	slices.Sort(want)
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !slices.Equal(sorted, want) {
		t.Errorf("started %v, want (in any order) %v", got, want)
	}
}

func (w *randomWorld) eligible(vanilla bool, pool tree.ID) bool {
	c := w.h.tr.Pool(pool)
	return vanilla && c.Mode == tree.ModeFIFO && c.EnableLightweightOperations
}

// lowestAt returns the lowest pool from p up whose count reaches its limit.
func (w *randomWorld) lowestAt(p tree.ID, running bool) tree.ID {
	l := w.h.l
	for ; p != tree.None; p = w.h.tr.Parent(p) {
		if running && l.RunningOperationCount(p) >= l.EffectiveMaxRunningOperationCount(p) ||
			!running && l.OperationCount(p) >= l.EffectiveMaxOperationCount(p) {
			return p
		}
	}
	return tree.None
}

func (w *randomWorld) checkLimitError(what string, err error, wantCode string, wantPool tree.ID, action string) {
	t := w.h.t
	t.Helper()
	if wantPool == tree.None {
		if err != nil {
			t.Errorf("%s: unexpected error %v", what, err)
		}
		return
	}
	var le *LimitError
	if !errors.As(err, &le) {
		t.Errorf("%s: error %v, want a *LimitError %s at %q", what, err, wantCode, w.h.name(wantPool))
		return
	}
	l := w.h.l
	want := LimitError{Code: wantCode, Pool: w.h.tr.Name(wantPool), Action: action,
		Limit: l.EffectiveMaxOperationCount(wantPool), Count: l.OperationCount(wantPool)}
	if wantCode == CodeTooManyRunningOperations {
		want.Limit, want.Count = l.EffectiveMaxRunningOperationCount(wantPool), l.RunningOperationCount(wantPool)
	}
	if *le != want {
		t.Errorf("%s: error %+v, want %+v", what, *le, want)
	}
}

func (w *randomWorld) step(poolMoves bool) string {
	h, r := w.h, &w.r
	roll := r.IntN(100)
	switch {
	case roll < 45 || len(w.ops) == 0:
		return w.start()
	case roll < 75:
		op := w.ops[r.IntN(len(w.ops))]
		before := w.allStates()
		started := h.finish(op)
		w.ops = slices.DeleteFunc(w.ops, func(s string) bool { return s == op })
		w.checkStarted(before, started)
		return "finish " + op
	case roll < 92:
		return w.move()
	case roll < 97 || !poolMoves:
		return w.raise()
	default:
		return w.movePool()
	}
}

func (w *randomWorld) start() string {
	h, r := w.h, &w.r
	pool := w.pools[r.IntN(len(w.pools))]
	vanilla := r.IntN(100) < 40
	pid := h.id(pool)
	what := fmt.Sprintf("start in %s vanilla=%v", pool, vanilla)
	wantRefuse := w.lowestAt(pid, false)
	err := h.l.CanRegister(pid)
	w.checkLimitError(what, err, CodeTooManyOperations, wantRefuse, ActionStart)
	if err != nil {
		return what
	}
	name := fmt.Sprintf("o%d", w.nextOp)
	w.nextOp++
	m := tree.Mutation{Kind: tree.AddOperation, Name: name, Parent: treeName(pool), Op: tree.OperationSpec{Vanilla: vanilla}}
	if _, err := h.tr.Apply(m); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	wantState, wantPool := Running, w.lowestAt(pid, true)
	switch {
	case w.eligible(vanilla, pid):
		wantState, wantPool = Lightweight, tree.None
	case wantPool != tree.None:
		wantState = Pending
	}
	op := h.id(name)
	got := h.l.Register(op)
	gotPool, _ := h.l.WaitingFor(op)
	if got != wantState || gotPool != wantPool {
		h.t.Errorf("%s: Register gives %v waiting in %d, want %v waiting in %d", what, got, gotPool, wantState, wantPool)
	}
	w.ops = append(w.ops, name)
	return what + " → " + name
}

func (w *randomWorld) move() string {
	h, r := w.h, &w.r
	opName := w.ops[r.IntN(len(w.ops))]
	pool := w.pools[r.IntN(len(w.pools))]
	op, pid := h.id(opName), h.id(pool)
	what := fmt.Sprintf("move %s (%s) to %s", opName, h.stateOf(op), pool)
	old := h.tr.Parent(op)
	st := h.l.State(op)

	// Oracle: the pools of the new path not on the old one, and where op
	// newly counts as running.
	newLight := w.eligible(h.tr.Operation(op).Vanilla, pid)
	var wantCode string
	wantPool := tree.None
	if pid != old {
		for p := pid; p != tree.None && wantPool == tree.None; p = h.tr.Parent(p) {
			newOnly := !h.tr.IsAncestor(p, old)
			countsRunning := !newLight && (st == Running && newOnly || st == Lightweight)
			switch {
			case newOnly && h.l.OperationCount(p) >= h.l.EffectiveMaxOperationCount(p):
				wantCode, wantPool = CodeTooManyOperations, p
			case countsRunning && h.l.RunningOperationCount(p) >= h.l.EffectiveMaxRunningOperationCount(p):
				wantCode, wantPool = CodeTooManyRunningOperations, p
			}
		}
	}
	before, snap := w.allStates(), w.snapshot()
	started, err := h.l.Move(op, pid, nil)
	w.checkLimitError(what, err, wantCode, wantPool, ActionMove)
	if err != nil {
		if got := w.snapshot(); got != snap {
			h.t.Errorf("%s: refused, but the state changed:\n was: %s\n now: %s", what, snap, got)
		}
		return what + " → refused"
	}
	if pid != old {
		if _, err := h.tr.Apply(tree.Mutation{Kind: tree.MoveOperation, Name: opName, Parent: treeName(pool)}); err != nil {
			h.t.Fatalf("%s: %v", what, err)
		}
	}
	w.checkStarted(before, started)
	after := h.l.State(op)
	switch {
	case pid == old && after != st,
		st != Pending && newLight && after != Lightweight,
		st != Pending && !newLight && after != Running,
		st == Pending && newLight && after != Lightweight:
		h.t.Errorf("%s: state %v after the move", what, after)
	}
	return what + " → " + h.stateOf(op)
}

// raise raises the root's or a pool's limits, then rescans.
func (w *randomWorld) raise() string {
	h, r := w.h, &w.r
	pool := w.pools[r.IntN(len(w.pools))]
	dOps, dRunning := int64(r.IntN(3)), int64(r.IntN(3))
	pid := h.id(pool)
	maxOps := h.l.EffectiveMaxOperationCount(pid) + dOps + dRunning
	maxRunning := h.l.EffectiveMaxRunningOperationCount(pid) + dRunning
	if maxRunning > maxOps {
		maxOps = maxRunning
	}
	h.setLimits(pool, maxOps, maxRunning)
	before := w.allStates()
	h.buf = h.l.RescanAll(h.buf[:0])
	w.checkStarted(before, h.buf)
	return fmt.Sprintf("raise %s to ops=%d running=%d", pool, maxOps, maxRunning)
}

// movePool moves a random pool under a random other pool, if the tree allows.
func (w *randomWorld) movePool() string {
	h, r := w.h, &w.r
	if len(w.pools) < 3 {
		return "no pool move"
	}
	pool := w.pools[1+r.IntN(len(w.pools)-1)]
	parent := w.pools[r.IntN(len(w.pools))]
	id := h.id(pool)
	old := h.tr.Parent(id)
	what := fmt.Sprintf("move pool %s from %s to %s", pool, h.name(old), parent)
	m := tree.Mutation{Kind: tree.SetPool, Name: pool, Parent: treeName(parent), Pool: *h.tr.Pool(id)}
	if parent == "root" {
		// SetPool's "" parent keeps the parent; name the root explicitly.
		m.Parent = tree.RootName
	}
	if _, err := h.tr.Apply(m); err != nil {
		return what + " → refused by the tree"
	}
	before := w.allStates()
	h.buf = h.l.PoolMoved(id, old, h.buf[:0])
	w.checkStarted(before, h.buf)
	w.strict = false
	return what
}
