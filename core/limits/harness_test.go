package limits

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

// harness drives a tree and its Limits the way the facade does: CanRegister,
// tree AddOperation, Register; Unregister, tree RemoveOperation; Move, tree
// MoveOperation. Elements are named; "root" names the root.

type harness struct {
	t   testing.TB
	tr  *tree.Tree
	l   *Limits
	buf []tree.ID
}

// poolMut returns an AddPool mutation; limits < 0 are unset.
func poolMut(name, parent string, maxOps, maxRunning int64) tree.Mutation {
	c := tree.PoolConfig{}
	if maxOps >= 0 {
		c.MaxOperationCount = tree.SomeInt(maxOps)
	}
	if maxRunning >= 0 {
		c.MaxRunningOperationCount = tree.SomeInt(maxRunning)
	}
	return tree.Mutation{Kind: tree.AddPool, Name: name, Parent: treeName(parent), Pool: c}
}

// lightPoolMut returns an AddPool mutation of a FIFO pool with lightweight
// operations enabled or not.
func lightPoolMut(name, parent string, maxOps, maxRunning int64, fifo, light bool) tree.Mutation {
	m := poolMut(name, parent, maxOps, maxRunning)
	if fifo {
		m.Pool.Mode = tree.ModeFIFO
	}
	m.Pool.EnableLightweightOperations = light
	return m
}

func treeName(pool string) string {
	if pool == "root" {
		return ""
	}
	return pool
}

func newHarness(t testing.TB, cfg Config, pools ...tree.Mutation) *harness {
	t.Helper()
	tr := tree.New(tree.PoolConfig{})
	if len(pools) > 0 {
		if i, err := tr.Apply(pools...); err != nil {
			t.Fatalf("cannot build the tree: mutation %d: %v", i, err)
		}
	}
	return &harness{t: t, tr: tr, l: New(tr, cfg)}
}

func (h *harness) id(name string) tree.ID {
	h.t.Helper()
	if name == "root" {
		return tree.Root
	}
	id, ok := h.tr.Lookup(name)
	if !ok {
		h.t.Fatalf("no element %q", name)
	}
	return id
}

func (h *harness) name(id tree.ID) string {
	if id == tree.Root {
		return "root"
	}
	return h.tr.Name(id)
}

func (h *harness) names(ids []tree.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = h.name(id)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func (h *harness) stateOf(op tree.ID) string {
	s := h.l.State(op)
	if s == Pending {
		p, _ := h.l.WaitingFor(op)
		return fmt.Sprintf("pending(%s)", h.name(p))
	}
	return s.String()
}

func (h *harness) errString(err error) string {
	var le *LimitError
	if !errors.As(err, &le) {
		return "error " + err.Error()
	}
	pool := le.Pool
	if pool == tree.RootName {
		pool = "root"
	}
	return fmt.Sprintf("error %s %s", le.Code, pool)
}

// start registers operation name in pool.
func (h *harness) start(name, pool string, vanilla bool) (tree.ID, State, error) {
	h.t.Helper()
	pid := h.id(pool)
	if err := h.l.CanRegister(pid); err != nil {
		return tree.None, Unregistered, err
	}
	m := tree.Mutation{Kind: tree.AddOperation, Name: name, Parent: treeName(pool), Op: tree.OperationSpec{Vanilla: vanilla}}
	if i, err := h.tr.Apply(m); err != nil {
		h.t.Fatalf("mutation %d: %v", i, err)
	}
	op := h.id(name)
	return op, h.l.Register(op), nil
}

// finish unregisters and removes operation name and returns what started.
func (h *harness) finish(name string) []tree.ID {
	h.t.Helper()
	op := h.id(name)
	h.buf = h.l.Unregister(op, h.buf[:0])
	if i, err := h.tr.Apply(tree.Mutation{Kind: tree.RemoveOperation, Name: name}); err != nil {
		h.t.Fatalf("mutation %d: %v", i, err)
	}
	return h.buf
}

// move moves operation name to pool and returns what started.
func (h *harness) move(name, pool string) ([]tree.ID, error) {
	h.t.Helper()
	op := h.id(name)
	var err error
	h.buf, err = h.l.Move(op, h.id(pool), h.buf[:0])
	if err != nil {
		return nil, err
	}
	if i, err := h.tr.Apply(tree.Mutation{Kind: tree.MoveOperation, Name: name, Parent: treeName(pool)}); err != nil {
		h.t.Fatalf("mutation %d: %v", i, err)
	}
	return h.buf, nil
}

// states lists every operation as name=state, sorted by name.
func (h *harness) states() string {
	var s []string
	h.tr.Walk(func(id tree.ID) {
		if h.tr.IsOperation(id) {
			s = append(s, h.name(id)+"="+h.stateOf(id))
		}
	})
	slices.Sort(s)
	return strings.Join(s, " ")
}

// lists shows the non-empty pending lists in tree order.
func (h *harness) lists() string {
	var s []string
	h.tr.Walk(func(id tree.ID) {
		if !h.tr.IsOperation(id) {
			if p := h.l.Pending(id, nil); len(p) > 0 {
				s = append(s, h.name(id)+"="+h.names(p))
			}
		}
	})
	return strings.Join(s, " ")
}

func (h *harness) counts(pool tree.ID) string {
	return fmt.Sprintf("ops=%d running=%d lightweight=%d pending=%d",
		h.l.OperationCount(pool), h.l.RunningOperationCount(pool),
		h.l.LightweightRunningOperationCount(pool), h.l.PendingOperationCount(pool))
}

// setLimits changes a pool's limits (root: the Config) without rescanning.
func (h *harness) setLimits(pool string, maxOps, maxRunning int64) {
	h.t.Helper()
	if pool == "root" {
		c := h.l.Config()
		if maxOps >= 0 {
			c.MaxOperationCount = maxOps
		}
		if maxRunning >= 0 {
			c.MaxRunningOperationCount = maxRunning
		}
		h.l.SetConfig(c)
		return
	}
	c := *h.tr.Pool(h.id(pool))
	if maxOps >= 0 {
		c.MaxOperationCount = tree.SomeInt(maxOps)
	}
	if maxRunning >= 0 {
		c.MaxRunningOperationCount = tree.SomeInt(maxRunning)
	}
	if i, err := h.tr.Apply(tree.Mutation{Kind: tree.SetPool, Name: pool, Pool: c}); err != nil {
		h.t.Fatalf("mutation %d: %v", i, err)
	}
}

// exec runs one script command and returns its output:
//
//	start NAME POOL [vanilla]  → running | lightweight | pending(POOL) | error CODE POOL
//	finish NAME                → [started ...]
//	move NAME POOL             → STATE [started ...] | error CODE POOL
//	rescan                     → [started ...]
//	limit POOL ops=N running=N → ok (no rescan)
//	states                     → name=state ... (sorted by name)
//	lists                      → POOL=[op ...] ... (non-empty pending lists, tree order)
//	counts POOL                → ops=N running=N lightweight=N pending=N
func (h *harness) exec(cmd string) string {
	h.t.Helper()
	f := strings.Fields(cmd)
	switch f[0] {
	case "start":
		op, s, err := h.start(f[1], f[2], len(f) > 3 && f[3] == "vanilla")
		if err != nil {
			return h.errString(err)
		}
		if got := h.l.State(op); got != s {
			h.t.Fatalf("%s: Register returned %v, State gives %v", cmd, s, got)
		}
		return h.stateOf(op)
	case "finish":
		return h.names(h.finish(f[1]))
	case "move":
		started, err := h.move(f[1], f[2])
		if err != nil {
			return h.errString(err)
		}
		return h.stateOf(h.id(f[1])) + " " + h.names(started)
	case "rescan":
		h.buf = h.l.RescanAll(h.buf[:0])
		return h.names(h.buf)
	case "limit":
		maxOps, maxRunning := int64(-1), int64(-1)
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				h.t.Fatalf("bad number in %q", cmd)
			}
			switch k {
			case "ops":
				maxOps = n
			case "running":
				maxRunning = n
			default:
				h.t.Fatalf("bad key in %q", cmd)
			}
		}
		h.setLimits(f[1], maxOps, maxRunning)
		return "ok"
	case "states":
		return h.states()
	case "lists":
		return h.lists()
	case "counts":
		return h.counts(h.id(f[1]))
	}
	h.t.Fatalf("unknown command %q", cmd)
	return ""
}

// run executes a script of "command -> want" lines (blank lines and lines
// starting with # are skipped) and checks the invariants after every
// command but limit (a raised limit leaves pending operations that could run
// until the next rescan).
func (h *harness) run(script string) {
	h.t.Helper()
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, want, ok := strings.Cut(line, "->")
		if !ok {
			h.t.Fatalf("line %d: no -> in %q", n+1, line)
		}
		cmd, want = strings.TrimSpace(cmd), strings.TrimSpace(want)
		if got := h.exec(cmd); got != want {
			h.t.Errorf("line %d: %s\n got: %s\nwant: %s", n+1, cmd, got, want)
		}
		if strings.HasPrefix(cmd, "limit ") {
			continue // pending operations are re-checked by the rescan that follows
		}
		if err := checkInvariants(h.tr, h.l, true); err != nil {
			h.t.Fatalf("line %d: %s: %v", n+1, cmd, err)
		}
	}
}

// checkInvariants recounts everything from the tree and the operation
// states and checks the pending lists (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations). strict adds the checks
// that hold only while no limit was lowered and no pool was moved: no pool
// over its limits.
func checkInvariants(tr *tree.Tree, l *Limits, strict bool) error {
	type counts struct{ ops, running, light int64 }
	want := make([]counts, tr.Len())
	var err error
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf(format, args...)
		}
	}
	pending := 0
	tr.Walk(func(id tree.ID) {
		if !tr.IsOperation(id) {
			return
		}
		s := l.State(id)
		parent := tr.Parent(id)
		eligible := tr.Operation(id).Vanilla && tr.Pool(parent).Mode == tree.ModeFIFO && tr.Pool(parent).EnableLightweightOperations
		switch s {
		case Unregistered:
			fail("operation %q is in the tree but unregistered", tr.Name(id))
		case Lightweight:
			if !eligible {
				fail("operation %q is lightweight in pool %q, which does not allow it", tr.Name(id), tr.Name(parent))
			}
		case Running, Pending:
			if eligible {
				fail("operation %q is %v although it is eligible to be lightweight", tr.Name(id), s)
			}
		}
		for p := parent; p != tree.None; p = tr.Parent(p) {
			want[p].ops++
			switch s {
			case Running:
				want[p].running++
			case Lightweight:
				want[p].light++
			}
		}
		if s != Pending {
			return
		}
		pending++
		w, limit := l.WaitingFor(id)
		if w == tree.None || tr.IsOperation(w) || !tr.IsAncestor(w, parent) {
			fail("pending operation %q waits in %d, which is not on its path", tr.Name(id), w)
			return
		}
		if limit != l.EffectiveMaxRunningOperationCount(w) {
			fail("WaitingFor(%q) gives limit %d, want %d", tr.Name(id), limit, l.EffectiveMaxRunningOperationCount(w))
		}
		if r := l.RunningOperationCount(w); r < limit {
			fail("pending operation %q waits in pool %q, which has %d running of %d: it could run",
				tr.Name(id), tr.Name(w), r, limit)
		}
		if !slices.Contains(l.Pending(w, nil), id) {
			fail("pending operation %q is not in the list of pool %q", tr.Name(id), tr.Name(w))
		}
	})
	listed := 0
	tr.Walk(func(id tree.ID) {
		if tr.IsOperation(id) {
			return
		}
		c := want[id]
		if got := (counts{l.OperationCount(id), l.RunningOperationCount(id), l.LightweightRunningOperationCount(id)}); got != c {
			fail("pool %q has counts %+v, a recount gives %+v", tr.Name(id), got, c)
		}
		if got, w := l.PendingOperationCount(id), c.ops-c.running-c.light; got != w {
			fail("pool %q has %d pending operations, a recount gives %d", tr.Name(id), got, w)
		}
		list := l.Pending(id, nil)
		listed += len(list)
		prev := tree.None
		for _, op := range list {
			if w, _ := l.WaitingFor(op); w != id {
				fail("operation %q is in the list of pool %q but waits in %d", tr.Name(op), tr.Name(id), w)
			}
			if l.ops[op].prev != prev {
				fail("pool %q: broken back link at %q", tr.Name(id), tr.Name(op))
			}
			prev = op
		}
		if l.pools[id].tail != prev {
			fail("pool %q: tail is %d, want %d", tr.Name(id), l.pools[id].tail, prev)
		}
		if strict {
			if c.running > l.EffectiveMaxRunningOperationCount(id) {
				fail("pool %q runs %d operations, its limit is %d", tr.Name(id), c.running, l.EffectiveMaxRunningOperationCount(id))
			}
			if c.ops > l.EffectiveMaxOperationCount(id) {
				fail("pool %q has %d operations, its limit is %d", tr.Name(id), c.ops, l.EffectiveMaxOperationCount(id))
			}
		}
	})
	if listed != pending {
		fail("%d operations in pending lists, %d pending", listed, pending)
	}
	return err
}
