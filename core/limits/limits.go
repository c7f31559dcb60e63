// Package limits keeps the operation counts of a pool tree, decides admission
// and runs the pending queue (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations), as a deterministic state machine
// over tree IDs.
//
// Every pool and the root keep operation_count (pending, running and
// lightweight operations of the subtree), running_operation_count (Running
// operations only) and lightweight_running_operation_count (Lightweight
// operations only); a change propagates to every ancestor including the root
// [T: TestOperationCountLimits]. Limits are a pool's own
// max_operation_count / max_running_operation_count, else the per-pool
// defaults of Config; the root's come from Config (docs/semantics.md).
//
// An operation is registered after the tree holds it (CanRegister, then the
// tree mutation, then Register) and unregistered before the tree drops it
// (Unregister, then the tree mutation). It is Lightweight (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations),
// Running, or Pending in the FIFO pending list of exactly one pool on its path,
// the pool whose running limit held it back (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations). Pending lists are
// intrusive doubly linked lists threaded through per-ID slices, so removal is
// O(1) and the hot entry points use no maps.
//
// Ownership and concurrency: a Limits reads the tree it was built on and is
// not safe for concurrent use; its owner serialises access to both. The
// per-ID slices grow with tree.Tree.Len (IDs are recycled by the tree, so the
// length settles); after that, Register, Unregister and Move allocate nothing
// (asserted by TestZeroAllocs) beyond the growth of the caller's dst.
//
// Limits configured below the current counts (lowered limits, pool moves)
// stop nothing that runs; they only hold back what would start next. After a
// change that raises a limit, call RescanAll.
package limits

import (
	"fmt"
	"slices"

	"github.com/fairsched/fairsched/core/tree"
)

// Config holds the tree-level limits (docs/configuration.md). The zero value allows
// nothing; start from DefaultConfig.
type Config struct {
	MaxOperationCount               int64 // the root's max_operation_count
	MaxRunningOperationCount        int64 // the root's max_running_operation_count
	MaxOperationCountPerPool        int64 // a pool's max_operation_count when it sets none
	MaxRunningOperationCountPerPool int64 // a pool's max_running_operation_count when it sets none
}

// DefaultConfig returns the reference defaults: 50000 and 2000 at the root,
// 50 and 50 per pool (docs/configuration.md, V(2023)).
func DefaultConfig() Config {
	return Config{
		MaxOperationCount:               50000,
		MaxRunningOperationCount:        2000,
		MaxOperationCountPerPool:        50,
		MaxRunningOperationCountPerPool: 50,
	}
}

// State is an operation's admission state.
type State uint8

// Operation states.
const (
	// Unregistered: not known to the Limits (never registered, or unregistered).
	Unregistered State = iota
	// Running: counted in running_operation_count up to the root.
	Running
	// Pending: held back by a pool's running limit, waiting in its pending list.
	Pending
	// Lightweight: running without counting against running limits
	// (counted in lightweight_running_operation_count instead; docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
	Lightweight
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Pending:
		return "pending"
	case Lightweight:
		return "lightweight"
	}
	return "unregistered"
}

// poolState is what a pool (or the root) keeps; indexed by tree.ID.
type poolState struct {
	ops         int64 // operation_count of the subtree
	running     int64 // running_operation_count
	lightweight int64 // lightweight_running_operation_count
	head, tail  tree.ID
}

// opState is what an operation keeps; indexed by tree.ID.
type opState struct {
	state      State
	waitIn     tree.ID // Pending: the pool whose list holds the operation
	next, prev tree.ID // Pending: links of that list
	// seq orders operations by the time they became pending (1, 2, …; 0 when
	// not pending); RescanAll re-checks them in that order.
	seq uint64
}

// pendingRef is RescanAll's scratch entry.
type pendingRef struct {
	seq uint64
	op  tree.ID
}

// Limits holds the counts, states and pending lists of one tree. See the
// package documentation for the contract.
type Limits struct {
	t   *tree.Tree
	cfg Config

	// NB: pools and operations share the tree's ID space, so both slices are
	// indexed by any tree.ID and have the same length; the entries of the
	// other kind stay zero (a recycled ID starts from a zero entry because
	// pools are removed only when empty and operations only after
	// Unregister).
	pools []poolState
	ops   []opState

	seq     uint64
	scratch []pendingRef
}

// New returns the Limits of t, which must hold no operations yet (register
// existing ones with Register).
func New(t *tree.Tree, cfg Config) *Limits {
	l := &Limits{t: t, cfg: cfg}
	l.grow()
	return l
}

// SetConfig replaces the tree-level limits. It re-checks nothing: call
// RescanAll after raising a limit.
func (l *Limits) SetConfig(cfg Config) { l.cfg = cfg }

// Config returns the tree-level limits.
func (l *Limits) Config() Config { return l.cfg }

// grow extends the per-ID slices to the tree's length.
func (l *Limits) grow() {
	n := l.t.Len()
	if len(l.pools) >= n {
		return
	}
	l.pools = slices.Grow(l.pools, n-len(l.pools))
	for len(l.pools) < n {
		l.pools = append(l.pools, poolState{head: tree.None, tail: tree.None})
	}
	l.ops = slices.Grow(l.ops, n-len(l.ops))
	for len(l.ops) < n {
		l.ops = append(l.ops, opState{waitIn: tree.None, next: tree.None, prev: tree.None})
	}
}

// ---- admission ----

// CanRegister reports whether a new operation may be registered in pool
// (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations, [V: FindPoolWithViolatedOperationCountLimit]): it returns an
// *apierr.Error wrapping a *LimitError with CodeTooManyOperations naming the
// lowest pool on the path from pool to the root whose operation_count has
// reached its max_operation_count, or nil. It allocates only the error.
func (l *Limits) CanRegister(pool tree.ID) error {
	l.grow()
	l.mustBePool(pool)
	if p := l.overOperationLimit(pool, tree.None); p != tree.None {
		return l.limitError(CodeTooManyOperations, ActionStart, p)
	}
	return nil
}

// Register counts op, which the tree already holds under its pool, in
// operation_count up to the root and decides its state [V: OnOperationAddedToPool]:
// Lightweight if it is vanilla and its parent pool is FIFO with
// enable_lightweight_operations; else Running if no pool on its path has
// running_operation_count ≥ max_running_operation_count; else Pending,
// appended to the pending list of the lowest such pool.
//
// It must follow a successful CanRegister of op's pool: it panics with "BUG:"
// if a pool on op's path is at its max_operation_count (CanRegister would
// refuse), or if op is not an operation or is registered already.
func (l *Limits) Register(op tree.ID) State {
	l.grow()
	if l.t.Kind(op) != tree.KindOperation {
		panic(fmt.Sprintf("BUG: limits: Register of element %d, which is not an operation", op))
	}
	if s := l.ops[op].state; s != Unregistered {
		panic(fmt.Sprintf("BUG: limits: Register of operation %q, which is %v already", l.t.Name(op), s))
	}
	parent := l.t.Parent(op)
	if p := l.overOperationLimit(parent, tree.None); p != tree.None {
		panic(fmt.Sprintf("BUG: limits: Register of operation %q without a successful CanRegister: %v",
			l.t.Name(op), l.limitError(CodeTooManyOperations, ActionStart, p)))
	}
	l.addPath(parent, tree.None, 1, 0, 0)
	return l.place(op, parent)
}

// Unregister removes op (finished or aborted) from the counts and from its
// pending list. If op was Running, it walks from op's parent to the root and
// at each pool scans that pool's pending list in order while the pool's
// running_operation_count is below its max_running_operation_count: an
// operation whose path still has a pool at its running limit moves to the
// pending list of the lowest such pool; otherwise it starts (Running, or
// Lightweight if it has become eligible) [V: CheckOperationsPendingByPool].
//
// It appends the operations that started to dst, in the order they started,
// and returns it; it allocates nothing when dst has room. Call it before the
// tree drops op. It panics with "BUG:" if op is not registered.
func (l *Limits) Unregister(op tree.ID, dst []tree.ID) []tree.ID {
	l.grow()
	st := l.ops[op].state
	parent := l.t.Parent(op)
	switch st {
	case Pending:
		l.dequeue(op)
		l.addPath(parent, tree.None, -1, 0, 0)
	case Lightweight:
		l.addPath(parent, tree.None, -1, 0, -1)
	case Running:
		l.addPath(parent, tree.None, -1, -1, 0)
	default:
		panic(fmt.Sprintf("BUG: limits: Unregister of operation %d, which is not registered", op))
	}
	l.ops[op] = opState{waitIn: tree.None, next: tree.None, prev: tree.None}
	if st == Running {
		dst = l.scan(parent, dst)
	}
	return dst
}

// Move validates and applies moving op to newPool; call it before the tree
// moves op (the tree move is the caller's, and must follow a nil error).
//
// Validation (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations, [V: ValidateAllOperationsCountsOnPoolChange]),
// lowest pool first, on the pools of the new path that are not on the old one:
// operation_count < max_operation_count (else CodeTooManyOperations); and if op
// runs and will count against running limits in newPool (it is Running, or
// Lightweight and newPool makes it not), running_operation_count <
// max_running_operation_count (else CodeTooManyRunningOperations). The error
// wraps a *LimitError with Action ActionMove, and nothing changes.
//
// NB: a Lightweight operation that newPool makes not lightweight starts
// counting in running_operation_count on the whole new path, so the running
// limit is checked on the whole path: a running operation is never turned
// into a pending one by a move; the move is refused instead.
//
// On success the counts follow op; lightweight status is re-evaluated for
// newPool; a Pending operation leaves its list and is placed as Register
// would place it (lightweight, running, or pending at the new path's lowest
// pool at its running limit). Operations that started — op itself if it was
// Pending and now runs, then those started by the pending scan from op's old
// parent to the root when op stopped counting as running there — are
// appended to dst. No allocation when dst has room.
func (l *Limits) Move(op, newPool tree.ID, dst []tree.ID) ([]tree.ID, error) {
	l.grow()
	l.mustBePool(newPool)
	st := l.ops[op].state
	if st == Unregistered {
		panic(fmt.Sprintf("BUG: limits: Move of operation %d, which is not registered", op))
	}
	old := l.t.Parent(op)
	if newPool == old {
		return dst, nil
	}
	lca := l.commonAncestor(old, newPool)
	newLight := l.eligible(op, newPool)
	checkRunning := st != Pending && !newLight
	wholePath := checkRunning && st == Lightweight // op counts in no running count yet
	below := true                                  // p is not on the old path
	for p := newPool; p != tree.None; p = l.t.Parent(p) {
		if p == lca {
			below = false
			if !wholePath {
				break
			}
		}
		ps := &l.pools[p]
		if below && ps.ops >= l.maxOperations(p) {
			return dst, l.limitError(CodeTooManyOperations, ActionMove, p)
		}
		if checkRunning && ps.running >= l.maxRunning(p) {
			return dst, l.limitError(CodeTooManyRunningOperations, ActionMove, p)
		}
	}

	// NB: remove op from the whole old path and add it to the whole new one;
	// the shared ancestors end where they were.
	var dRun, dLight int64
	switch st {
	case Pending:
		l.dequeue(op)
	case Running:
		dRun = 1
	case Lightweight:
		dLight = 1
	}
	l.addPath(old, tree.None, -1, -dRun, -dLight)
	l.addPath(newPool, tree.None, 1, 0, 0)
	switch st {
	case Pending:
		if l.place(op, newPool) != Pending {
			l.ops[op].seq = 0
			dst = append(dst, op)
		}
	default:
		if newLight {
			l.ops[op].state = Lightweight
			l.addPath(newPool, tree.None, 0, 0, 1)
		} else {
			l.ops[op].state = Running
			l.addPath(newPool, tree.None, 0, 1, 0)
		}
		if st == Running {
			dst = l.scan(old, dst)
		}
	}
	return dst, nil
}

// RescanAll re-checks every pending operation, in the order they became
// pending: each starts (Running, or Lightweight if it has become eligible) if
// no pool on its path is at its running limit, else it is re-queued at the
// lowest pool that is [V: TryRunAllPendingOperations]. Call it after a change
// that raises limits (SetConfig, a pool's configuration). The operations that
// started are appended to dst, which is returned.
//
// NB: the reference walks its pools in hash-map order; the order here is
// deterministic, and leaves every pending list sorted by the time its
// operations first became pending. It allocates only to grow its scratch
// buffer and dst.
func (l *Limits) RescanAll(dst []tree.ID) []tree.ID {
	l.grow()
	sc := l.scratch[:0]
	for id := range l.ops {
		if o := &l.ops[id]; o.state == Pending {
			sc = append(sc, pendingRef{seq: o.seq, op: tree.ID(id)})
		}
	}
	slices.SortFunc(sc, func(a, b pendingRef) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	for _, r := range sc {
		l.dequeue(r.op)
	}
	for _, r := range sc {
		if l.place(r.op, l.t.Parent(r.op)) != Pending {
			l.ops[r.op].seq = 0
			dst = append(dst, r.op)
		}
	}
	l.scratch = sc[:0]
	return dst
}

// PoolMoved updates the counts after the tree moved pool (with its subtree)
// from oldParent to its current parent; call it after the tree mutation. The
// subtree's counts leave the old ancestors and join the new ones; nothing is
// refused and nothing that runs stops. It then runs RescanAll (pending
// operations of the subtree may wait in pools that are no longer on their
// path, and the old ancestors may have room) and returns what it appended.
func (l *Limits) PoolMoved(pool, oldParent tree.ID, dst []tree.ID) []tree.ID {
	l.grow()
	newParent := l.t.Parent(pool)
	if newParent == oldParent {
		return dst
	}
	ps := l.pools[pool]
	l.addPath(oldParent, tree.None, -ps.ops, -ps.running, -ps.lightweight)
	l.addPath(newParent, tree.None, ps.ops, ps.running, ps.lightweight)
	return l.RescanAll(dst)
}

// ---- queries ----

// State returns op's state (Unregistered for any ID the Limits does not know).
func (l *Limits) State(op tree.ID) State {
	if op < 0 || int(op) >= len(l.ops) {
		return Unregistered
	}
	return l.ops[op].state
}

// WaitingFor returns, for a pending op, the pool in whose pending list it
// waits and that pool's effective max_running_operation_count (the
// OperationPending alert's "pool" and "limit"); (tree.None, 0) otherwise.
func (l *Limits) WaitingFor(op tree.ID) (pool tree.ID, limit int64) {
	if l.State(op) != Pending {
		return tree.None, 0
	}
	p := l.ops[op].waitIn
	return p, l.maxRunning(p)
}

// OperationCount returns pool's operation_count: the pending, running and
// lightweight operations of its subtree.
func (l *Limits) OperationCount(pool tree.ID) int64 {
	if !l.known(pool) {
		return 0
	}
	return l.pools[pool].ops
}

// RunningOperationCount returns pool's running_operation_count: the Running
// operations of its subtree.
func (l *Limits) RunningOperationCount(pool tree.ID) int64 {
	if !l.known(pool) {
		return 0
	}
	return l.pools[pool].running
}

// LightweightRunningOperationCount returns pool's
// lightweight_running_operation_count: the Lightweight operations of its subtree.
func (l *Limits) LightweightRunningOperationCount(pool tree.ID) int64 {
	if !l.known(pool) {
		return 0
	}
	return l.pools[pool].lightweight
}

// PendingOperationCount returns the Pending operations of pool's subtree
// (wherever they wait); the length of pool's own pending list is
// len(Pending(pool, nil)).
func (l *Limits) PendingOperationCount(pool tree.ID) int64 {
	if !l.known(pool) {
		return 0
	}
	ps := &l.pools[pool]
	return ps.ops - ps.running - ps.lightweight
}

// EffectiveMaxOperationCount returns pool's max_operation_count: the root's
// from Config, a pool's own or else Config.MaxOperationCountPerPool.
func (l *Limits) EffectiveMaxOperationCount(pool tree.ID) int64 {
	l.mustBePool(pool)
	return l.maxOperations(pool)
}

// EffectiveMaxRunningOperationCount returns pool's max_running_operation_count:
// the root's from Config, a pool's own or else
// Config.MaxRunningOperationCountPerPool.
func (l *Limits) EffectiveMaxRunningOperationCount(pool tree.ID) int64 {
	l.mustBePool(pool)
	return l.maxRunning(pool)
}

// Pending appends pool's pending list, in order, to dst and returns it.
func (l *Limits) Pending(pool tree.ID, dst []tree.ID) []tree.ID {
	if !l.known(pool) {
		return dst
	}
	for op := l.pools[pool].head; op != tree.None; op = l.ops[op].next {
		dst = append(dst, op)
	}
	return dst
}

// ---- internals ----

func (l *Limits) known(id tree.ID) bool { return id >= 0 && int(id) < len(l.pools) }

func (l *Limits) mustBePool(p tree.ID) {
	if p < 0 || int(p) >= l.t.Len() {
		panic(fmt.Sprintf("BUG: limits: pool %d is out of range", p))
	}
	if k := l.t.Kind(p); k != tree.KindPool && k != tree.KindRoot {
		panic(fmt.Sprintf("BUG: limits: element %d (%q) is not a pool", p, l.t.Name(p)))
	}
}

func (l *Limits) maxOperations(p tree.ID) int64 {
	if p == tree.Root {
		return l.cfg.MaxOperationCount
	}
	return l.t.Pool(p).MaxOperationCount.Or(l.cfg.MaxOperationCountPerPool)
}

func (l *Limits) maxRunning(p tree.ID) int64 {
	if p == tree.Root {
		return l.cfg.MaxRunningOperationCount
	}
	return l.t.Pool(p).MaxRunningOperationCount.Or(l.cfg.MaxRunningOperationCountPerPool)
}

// eligible reports whether op would be lightweight under parent (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func (l *Limits) eligible(op, parent tree.ID) bool {
	if !l.t.Operation(op).Vanilla {
		return false
	}
	c := l.t.Pool(parent)
	return c.Mode == tree.ModeFIFO && c.EnableLightweightOperations
}

// overOperationLimit returns the lowest pool from p up to (not including)
// stop whose operation_count has reached its limit, or tree.None.
func (l *Limits) overOperationLimit(p, stop tree.ID) tree.ID {
	for ; p != stop; p = l.t.Parent(p) {
		if l.pools[p].ops >= l.maxOperations(p) {
			return p
		}
	}
	return tree.None
}

// violating returns the lowest pool from p to the root whose
// running_operation_count has reached its limit, or tree.None
// [V: FindPoolViolatingMaxRunningOperationCount].
func (l *Limits) violating(p tree.ID) tree.ID {
	for ; p != tree.None; p = l.t.Parent(p) {
		if l.pools[p].running >= l.maxRunning(p) {
			return p
		}
	}
	return tree.None
}

// commonAncestor returns the lowest pool on both a's and b's paths.
func (l *Limits) commonAncestor(a, b tree.ID) tree.ID {
	for p := a; p != tree.None; p = l.t.Parent(p) {
		if l.t.IsAncestor(p, b) {
			return p
		}
	}
	return tree.Root
}

// addPath adds the deltas to every pool from p up to (not including) stop.
func (l *Limits) addPath(p, stop tree.ID, dOps, dRunning, dLight int64) {
	for ; p != stop; p = l.t.Parent(p) {
		ps := &l.pools[p]
		ps.ops += dOps
		ps.running += dRunning
		ps.lightweight += dLight
		if ps.running < 0 || ps.lightweight < 0 || ps.running+ps.lightweight > ps.ops {
			panic(fmt.Sprintf("BUG: limits: pool %q has %d operations, %d running and %d lightweight",
				l.t.Name(p), ps.ops, ps.running, ps.lightweight))
		}
	}
}

// place decides the state of op, which is counted in operation_count on the
// path from parent but in no running count and no pending list.
func (l *Limits) place(op, parent tree.ID) State {
	if l.eligible(op, parent) {
		l.ops[op].state = Lightweight
		l.addPath(parent, tree.None, 0, 0, 1)
		return Lightweight
	}
	if v := l.violating(parent); v != tree.None {
		l.enqueue(v, op)
		return Pending
	}
	l.ops[op].state = Running
	l.addPath(parent, tree.None, 0, 1, 0)
	return Running
}

// scan walks from p to the root and starts or re-queues pending operations
// while each pool has room (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func (l *Limits) scan(p tree.ID, dst []tree.ID) []tree.ID {
	for ; p != tree.None; p = l.t.Parent(p) {
		for l.pools[p].head != tree.None && l.pools[p].running < l.maxRunning(p) {
			op := l.pools[p].head
			l.dequeue(op)
			if l.place(op, l.t.Parent(op)) == Pending {
				if l.ops[op].waitIn == p {
					panic(fmt.Sprintf("BUG: limits: operation %q re-queued in pool %q, which has room", l.t.Name(op), l.t.Name(p)))
				}
				continue
			}
			l.ops[op].seq = 0
			dst = append(dst, op)
		}
	}
	return dst
}

// enqueue appends op to pool's pending list and marks it Pending.
func (l *Limits) enqueue(pool, op tree.ID) {
	o := &l.ops[op]
	o.state = Pending
	o.waitIn = pool
	if o.seq == 0 {
		l.seq++
		o.seq = l.seq
	}
	ps := &l.pools[pool]
	o.prev, o.next = ps.tail, tree.None
	if ps.tail != tree.None {
		l.ops[ps.tail].next = op
	} else {
		ps.head = op
	}
	ps.tail = op
}

// dequeue removes op from its pending list; its state stays Pending until
// the caller places it.
func (l *Limits) dequeue(op tree.ID) {
	o := &l.ops[op]
	ps := &l.pools[o.waitIn]
	if o.prev != tree.None {
		l.ops[o.prev].next = o.next
	} else {
		ps.head = o.next
	}
	if o.next != tree.None {
		l.ops[o.next].prev = o.prev
	} else {
		ps.tail = o.prev
	}
	o.waitIn, o.next, o.prev = tree.None, tree.None, tree.None
}
