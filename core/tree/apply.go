package tree

import (
	"fmt"
	"math"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
)

// Error codes of the tree's *apierr.Error values; the shared ones are
// apierr's.
const (
	CodeInvalidName      = "invalid_name"
	CodeDuplicateName    = apierr.CodeDuplicateName
	CodeUnknownPool      = "unknown_pool"
	CodeUnknownOperation = apierr.CodeUnknownOperation
	CodeCycle            = "cycle"
	CodeInvalidValue     = apierr.CodeInvalidValue
	CodePoolNotEmpty     = "pool_not_empty"
	CodeFifoChildPool    = "fifo_pool_with_child_pools"
)

// errorf returns the tree's validation error: Path is field, the offending
// attribute relative to the mutated element (a JSON key of docs/api.md), which
// callers join to the element's path.
func errorf(code, field, format string, args ...any) *apierr.Error {
	return &apierr.Error{Code: code, Path: field, Message: fmt.Sprintf(format, args...), Pkg: "tree"}
}

// MutationKind selects what a Mutation does.
type MutationKind uint8

// Mutation kinds.
const (
	// AddPool creates pool Name under Parent ("" = root) with Pool.
	AddPool MutationKind = iota
	// SetPool replaces pool Name's configuration with Pool and moves it under
	// Parent ("" = keep). The root's configuration may be set too.
	SetPool
	// RemovePool removes the empty pool Name.
	RemovePool
	// AddOperation creates operation Name in pool Parent ("" = root).
	AddOperation
	// RemoveOperation removes operation Name.
	RemoveOperation
	// MoveOperation moves operation Name to pool Parent.
	MoveOperation
)

// Mutation is one change of the tree; see Apply.
type Mutation struct {
	Kind   MutationKind
	Name   string
	Parent string
	Pool   PoolConfig
	Op     OperationSpec
	Demand resource.Vec
	Usage  resource.Vec
}

// Apply validates and applies the mutations in order. If any is invalid, the
// ones already applied are undone and the tree is exactly as before; the
// returned error is an *apierr.Error. The index of the failing mutation is
// returned too (-1 on success).
func (t *Tree) Apply(ms ...Mutation) (int, error) {
	defer t.checkLinks()
	var undo []func()
	for i := range ms {
		u, err := t.apply(&ms[i])
		if err != nil {
			for j := len(undo) - 1; j >= 0; j-- {
				undo[j]()
			}
			return i, err
		}
		undo = append(undo, u)
	}
	return -1, nil
}

func (t *Tree) apply(m *Mutation) (undo func(), err error) {
	switch m.Kind {
	case AddPool:
		return t.addPool(m)
	case SetPool:
		return t.setPool(m)
	case RemovePool:
		return t.removePool(m)
	case AddOperation:
		return t.addOperation(m)
	case RemoveOperation:
		return t.removeOperation(m)
	case MoveOperation:
		return t.moveOperation(m)
	}
	panic(fmt.Sprintf("BUG: unknown mutation kind %d", m.Kind))
}

// MaxNodeNameLength is the longest node id: a Kubernetes node name (a DNS
// subdomain) fits.
const MaxNodeNameLength = 253

// ValidNodeName reports whether s is a valid node id: 1–253 characters of
// [A-Za-z0-9._:-], not "." or "..". Every pool and operation name is one.
func ValidNodeName[S ~string | ~[]byte](s S) bool {
	return validName(s, MaxNodeNameLength)
}

// ValidName reports whether s is a valid pool or operation name: 1–128
// characters of [A-Za-z0-9._:-] other than "." and ".." (docs/api.md#conventions), so
// that a name is carried unchanged by a URL path (a client or proxy
// resolves the dot segments away). It takes bytes too, so that a request
// path is checked without a conversion.
func ValidName[S ~string | ~[]byte](s S) bool { return validName(s, 128) }

func validName[S ~string | ~[]byte](s S, maxLen int) bool {
	if len(s) == 0 || len(s) > maxLen || string(s) == "." || string(s) == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// newName checks the name of a new element of kind k: pools (and the root)
// and operations are separate namespaces.
func (t *Tree) newName(name string, k Kind) error {
	if !ValidName(name) {
		return errorf(CodeInvalidName, "name", "cannot use %q as a name: want 1-128 characters of [A-Za-z0-9._:-], not . or ..", name)
	}
	if _, ok := t.names(k)[name]; ok {
		if k == KindOperation {
			return errorf(CodeDuplicateName, "name", "cannot create operation %q: an operation with that name exists", name)
		}
		return errorf(CodeDuplicateName, "name", "cannot create pool %q: a pool with that name exists", name)
	}
	return nil
}

// names is the namespace of elements of kind k.
func (t *Tree) names(k Kind) map[string]ID {
	if k == KindOperation {
		return t.byOp
	}
	return t.byName
}

func (t *Tree) lookupPool(name, field string) (ID, error) {
	if name == "" {
		return Root, nil
	}
	id, ok := t.byName[name]
	if !ok {
		return None, errorf(CodeUnknownPool, field, "cannot find pool %q", name)
	}
	return id, nil
}

func (t *Tree) lookupOperation(name string) (ID, error) {
	id, ok := t.byOp[name]
	if !ok {
		return None, errorf(CodeUnknownOperation, "name", "cannot find operation %q", name)
	}
	return id, nil
}

func (t *Tree) addPool(m *Mutation) (func(), error) {
	if err := t.newName(m.Name, KindPool); err != nil {
		return nil, err
	}
	p, err := t.lookupPool(m.Parent, "parent")
	if err != nil {
		return nil, err
	}
	if t.pools[t.slot[p]].Mode == ModeFIFO {
		return nil, errorf(CodeFifoChildPool, "parent", "cannot create pool %q in fifo pool %q: fifo pools hold only operations", m.Name, t.name[p])
	}
	if err := ValidatePool(&m.Pool); err != nil {
		return nil, err
	}
	id := t.allocID(KindPool, m.Name)
	t.slot[id] = t.allocPoolSlot(id, m.Pool)
	t.byName[m.Name] = id
	t.link(id, p)
	t.structVersion++
	return func() {
		t.unlink(id)
		delete(t.byName, m.Name)
		t.freePoolSlots = append(t.freePoolSlots, t.slot[id])
		t.freeID(id)
		t.structVersion++
	}, nil
}

func (t *Tree) setPool(m *Mutation) (func(), error) {
	id, ok := t.byName[m.Name]
	if !ok || t.kind[id] == KindOperation {
		return nil, errorf(CodeUnknownPool, "name", "cannot find pool %q", m.Name)
	}
	if err := ValidatePool(&m.Pool); err != nil {
		return nil, err
	}
	newParent := t.parent[id]
	if m.Parent != "" {
		if id == Root {
			return nil, errorf(CodeInvalidValue, "parent", "cannot give the root pool a parent")
		}
		p, err := t.lookupPool(m.Parent, "parent")
		if err != nil {
			return nil, err
		}
		if t.IsAncestor(id, p) {
			return nil, errorf(CodeCycle, "parent", "cannot move pool %q under %q: that makes a cycle", m.Name, m.Parent)
		}
		newParent = p
	}
	if id == Root && m.Pool.Mode == ModeFIFO {
		return nil, errorf(CodeInvalidValue, "mode", "cannot make the root pool fifo: the root is always fair_share")
	}
	if id == Root && !m.Pool.SchedulingTagFilter.IsEmpty() {
		return nil, errorf(CodeInvalidValue, "scheduling_tag_filter", "cannot give the root pool a scheduling_tag_filter: the root holds every node")
	}
	if m.Pool.Mode == ModeFIFO && t.childPools[id] > 0 {
		return nil, errorf(CodeFifoChildPool, "mode", "cannot make pool %q fifo: it has child pools", m.Name)
	}
	if id != Root && t.pools[t.slot[newParent]].Mode == ModeFIFO {
		return nil, errorf(CodeFifoChildPool, "parent", "cannot move pool %q into fifo pool %q: fifo pools hold only operations", m.Name, t.name[newParent])
	}
	old := t.pools[t.slot[id]]
	oldParent, oldPrev := t.parent[id], t.prevSibling[id]
	t.pools[t.slot[id]] = m.Pool
	if newParent != oldParent {
		t.unlink(id)
		t.link(id, newParent)
	}
	t.structVersion++
	return func() {
		t.pools[t.slot[id]] = old
		if newParent != oldParent {
			t.unlink(id)
			t.relink(id, oldParent, oldPrev)
		}
		t.structVersion++
	}, nil
}

func (t *Tree) removePool(m *Mutation) (func(), error) {
	id, ok := t.byName[m.Name]
	if !ok || t.kind[id] != KindPool {
		if id == Root && ok {
			return nil, errorf(CodeInvalidValue, "name", "cannot remove the root pool")
		}
		return nil, errorf(CodeUnknownPool, "name", "cannot find pool %q", m.Name)
	}
	if n := t.childCount[id]; n > 0 {
		return nil, errorf(CodePoolNotEmpty, "name", "cannot remove pool %q: it has %d children", m.Name, n)
	}
	p, prev := t.parent[id], t.prevSibling[id]
	cfg := t.pools[t.slot[id]]
	t.unlink(id)
	delete(t.byName, m.Name)
	t.freePoolSlots = append(t.freePoolSlots, t.slot[id])
	t.freeID(id)
	t.structVersion++
	return func() {
		nid := t.allocID(KindPool, m.Name)
		if nid != id {
			panic("BUG: undo of RemovePool did not get its ID back")
		}
		t.slot[id] = t.allocPoolSlot(id, cfg)
		t.byName[m.Name] = id
		t.relink(id, p, prev)
		t.structVersion++
	}, nil
}

func (t *Tree) addOperation(m *Mutation) (func(), error) {
	if err := t.newName(m.Name, KindOperation); err != nil {
		return nil, err
	}
	p, err := t.lookupPool(m.Parent, "pool")
	if err != nil {
		return nil, err
	}
	if err := ValidateOperation(&m.Op, m.Demand, m.Usage); err != nil {
		return nil, err
	}
	id := t.allocID(KindOperation, m.Name)
	t.slot[id] = t.allocOpSlot(id, opState{spec: m.Op, demand: m.Demand, usage: m.Usage})
	t.byOp[m.Name] = id
	t.link(id, p)
	t.structVersion++
	return func() { t.dropOperation(id) }, nil
}

func (t *Tree) dropOperation(id ID) {
	t.unlink(id)
	delete(t.byOp, t.name[id])
	t.freeOpSlots = append(t.freeOpSlots, t.slot[id])
	t.freeID(id)
	t.structVersion++
}

func (t *Tree) removeOperation(m *Mutation) (func(), error) {
	id, err := t.lookupOperation(m.Name)
	if err != nil {
		return nil, err
	}
	p, prev := t.parent[id], t.prevSibling[id]
	st, nodes := t.ops[t.slot[id]], t.opNodes[t.slot[id]]
	t.dropOperation(id)
	return func() {
		nid := t.allocID(KindOperation, m.Name)
		if nid != id {
			panic("BUG: undo of RemoveOperation did not get its ID back")
		}
		t.slot[id] = t.allocOpSlot(id, st)
		t.opNodes[t.slot[id]] = nodes
		t.byOp[m.Name] = id
		t.relink(id, p, prev)
		t.structVersion++
	}, nil
}

func (t *Tree) moveOperation(m *Mutation) (func(), error) {
	id, err := t.lookupOperation(m.Name)
	if err != nil {
		return nil, err
	}
	p, err := t.lookupPool(m.Parent, "pool")
	if err != nil {
		return nil, err
	}
	oldParent, oldPrev := t.parent[id], t.prevSibling[id]
	if p == oldParent {
		return func() {}, nil
	}
	t.unlink(id)
	t.link(id, p)
	t.structVersion++
	return func() {
		t.unlink(id)
		t.relink(id, oldParent, oldPrev)
		t.structVersion++
	}, nil
}

// ---- validation ----

func validateWeight(w OptFloat, field string) error {
	if !w.Set {
		return nil
	}
	if math.IsNaN(w.V) || w.V < MinWeight || w.V > MaxWeight {
		return errorf(CodeInvalidValue, field, "cannot use weight %v: want a number in [%.3g, %.3g]", w.V, MinWeight, MaxWeight)
	}
	return nil
}

func validatePartial(p PartialVec, field string) error {
	for k, set := range p.Set {
		if set && (p.V[k] < 0 || p.V[k] > resource.MaxAmount) {
			return errorf(CodeInvalidValue, field+"."+resource.Kind(k).String(),
				"cannot use %s %d for %s: want a non-negative amount of at most 2^53", resource.Kind(k), p.V[k], field)
		}
	}
	return nil
}

func validateVec(v resource.Vec, field string) error {
	for k, x := range v {
		if x < 0 || x > resource.MaxAmount {
			return errorf(CodeInvalidValue, field+"."+resource.Kind(k).String(),
				"cannot use %s %d for %s: want a non-negative amount of at most 2^53", resource.Kind(k), x, field)
		}
	}
	return nil
}

func validateRange(o OptFloat, field string, lo, hi float64) error {
	if o.Set && (math.IsNaN(o.V) || o.V < lo || o.V > hi) {
		return errorf(CodeInvalidValue, field, "cannot use %s %v: want a number in [%g, %g]", field, o.V, lo, hi)
	}
	return nil
}

// MaxDuration bounds every configurable duration: 10⁹ seconds, about 31.7 years.
const MaxDuration = 1e9 * clock.Second

func validateDuration(o OptDuration, field string, lo, hi clock.Duration) error {
	if o.Set && (o.V < lo || o.V > hi) {
		return errorf(CodeInvalidValue, field, "cannot use %s %v: want a number in [%g, %g]", field, o.V.Seconds(), lo.Seconds(), hi.Seconds())
	}
	return nil
}

// ValidatePool checks a pool configuration on its own (docs/semantics.md#pool-attributes, docs/api.md#pools).
func ValidatePool(c *PoolConfig) error {
	if c.Mode > ModeFIFO {
		return errorf(CodeInvalidValue, "mode", "cannot use mode %d", c.Mode)
	}
	if err := validateWeight(c.Weight, "weight"); err != nil {
		return err
	}
	if err := validatePartial(c.StrongGuarantee, "strong_guarantee_resources"); err != nil {
		return err
	}
	if err := validatePartial(c.ResourceLimits, "resource_limits"); err != nil {
		return err
	}
	if err := validatePartial(c.NonPreemptibleResourceUsageThreshold, "non_preemptible_resource_usage_threshold"); err != nil {
		return err
	}
	if c.MaxOperationCount.Set && c.MaxOperationCount.V < 0 {
		return errorf(CodeInvalidValue, "max_operation_count", "cannot use max_operation_count %d: want a non-negative count", c.MaxOperationCount.V)
	}
	if c.MaxRunningOperationCount.Set && c.MaxRunningOperationCount.V < 0 {
		return errorf(CodeInvalidValue, "max_running_operation_count", "cannot use max_running_operation_count %d: want a non-negative count", c.MaxRunningOperationCount.V)
	}
	if c.MaxOperationCount.Set && c.MaxRunningOperationCount.Set && c.MaxOperationCount.V < c.MaxRunningOperationCount.V {
		return errorf(CodeInvalidValue, "max_operation_count",
			"cannot use max_operation_count %d below max_running_operation_count %d", c.MaxOperationCount.V, c.MaxRunningOperationCount.V)
	}
	ig := &c.Integral
	if ig.Type > GuaranteeRelaxed {
		return errorf(CodeInvalidValue, "integral_guarantees.guarantee_type", "cannot use guarantee type %d", ig.Type)
	}
	if err := validatePartial(ig.ResourceFlow, "integral_guarantees.resource_flow"); err != nil {
		return err
	}
	if err := validatePartial(ig.BurstGuarantee, "integral_guarantees.burst_guarantee_resources"); err != nil {
		return err
	}
	if ig.Type == GuaranteeRelaxed && !ig.BurstGuarantee.OrZero().IsZero() {
		return errorf(CodeInvalidValue, "integral_guarantees.burst_guarantee_resources",
			"cannot give a relaxed pool burst_guarantee_resources: only burst pools have them")
	}
	if err := validateRange(ig.RelaxedShareMultiplierLimit, "integral_guarantees.relaxed_share_multiplier_limit", 1, 10); err != nil {
		return err
	}
	if err := validateRange(c.FairShareStarvationTolerance, "fair_share_starvation_tolerance", 0, 1); err != nil {
		return err
	}
	if err := validateDuration(c.FairShareStarvationTimeout, "fair_share_starvation_timeout_s", 0, MaxDuration); err != nil {
		return err
	}
	for _, p := range c.FifoSortParameters {
		if p > FifoPendingJobCount {
			return errorf(CodeInvalidValue, "fifo_sort_parameters", "cannot use fifo sort parameter %d", p)
		}
	}
	if c.FifoSortParameters != nil && len(c.FifoSortParameters) == 0 {
		return errorf(CodeInvalidValue, "fifo_sort_parameters", "cannot use an empty fifo_sort_parameters list")
	}
	return nil
}

// ValidateOperation checks an operation spec and its demand and usage.
func ValidateOperation(s *OperationSpec, demand, usage resource.Vec) error {
	if err := validateWeight(s.Weight, "weight"); err != nil {
		return err
	}
	if err := validatePartial(s.ResourceLimits, "resource_limits"); err != nil {
		return err
	}
	if err := validateVec(demand, "demand"); err != nil {
		return err
	}
	return validateVec(usage, "usage")
}
