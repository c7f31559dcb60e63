package tree

import (
	"math"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
)

// Mode is a pool's scheduling mode (docs/semantics.md#pools-and-operations).
type Mode uint8

// Pool modes.
const (
	ModeFairShare Mode = iota
	ModeFIFO
)

func (m Mode) String() string {
	if m == ModeFIFO {
		return "fifo"
	}
	return "fair_share"
}

// GuaranteeType is a pool's integral guarantee type (docs/semantics.md#integral-guarantees).
type GuaranteeType uint8

// Integral guarantee types.
const (
	GuaranteeNone GuaranteeType = iota
	GuaranteeBurst
	GuaranteeRelaxed
)

func (g GuaranteeType) String() string {
	switch g {
	case GuaranteeBurst:
		return "burst"
	case GuaranteeRelaxed:
		return "relaxed"
	}
	return "none"
}

// FifoSortParam is one key of a FIFO pool's ordering (docs/semantics.md#fifo-pools).
type FifoSortParam uint8

// FIFO sort keys.
const (
	FifoWeight FifoSortParam = iota
	FifoStartTime
	FifoPendingJobCount
)

func (p FifoSortParam) String() string {
	switch p {
	case FifoStartTime:
		return "start_time"
	case FifoPendingJobCount:
		return "pending_job_count"
	}
	return "weight"
}

// Weight bounds (docs/semantics.md#pools-and-operations): [sqrt(DBL_EPSILON), 1/sqrt(DBL_EPSILON)].
var (
	MinWeight = math.Sqrt(0x1p-52)
	MaxWeight = 1 / MinWeight
)

// OptFloat is a float64 that may be unset (inherit or default).
type OptFloat struct {
	V   float64
	Set bool
}

// Some returns a set OptFloat.
func Some(v float64) OptFloat { return OptFloat{V: v, Set: true} }

// Or returns the value if set, else def.
func (o OptFloat) Or(def float64) float64 {
	if o.Set {
		return o.V
	}
	return def
}

// OptDuration is a clock.Duration that may be unset (inherit or default).
type OptDuration struct {
	V   clock.Duration
	Set bool
}

// SomeDuration returns a set OptDuration.
func SomeDuration(v clock.Duration) OptDuration { return OptDuration{V: v, Set: true} }

// Or returns the value if set, else def.
func (o OptDuration) Or(def clock.Duration) clock.Duration {
	if o.Set {
		return o.V
	}
	return def
}

// OptBool is a bool that may be unset (inherit or default).
type OptBool struct {
	V   bool
	Set bool
}

// SomeBool returns a set OptBool.
func SomeBool(v bool) OptBool { return OptBool{V: v, Set: true} }

// Or returns the value if set, else def.
func (o OptBool) Or(def bool) bool {
	if o.Set {
		return o.V
	}
	return def
}

// OptInt is an int64 that may be unset.
type OptInt struct {
	V   int64
	Set bool
}

// SomeInt returns a set OptInt.
func SomeInt(v int64) OptInt { return OptInt{V: v, Set: true} }

// Or returns the value if set, else def.
func (o OptInt) Or(def int64) int64 {
	if o.Set {
		return o.V
	}
	return def
}

// PartialVec is a resource vector whose components may each be unspecified.
// Unspecified components mean 0 in guarantees and "no limit" in limits; the
// strong-guarantee inference (docs/semantics.md#strong-guarantees) needs to know which were given.
type PartialVec struct {
	V   resource.Vec
	Set [resource.Count]bool
}

// IsEmpty reports whether no component is specified.
func (p PartialVec) IsEmpty() bool { return p.Set == [resource.Count]bool{} }

// OrZero returns the vector with unspecified components 0.
func (p PartialVec) OrZero() resource.Vec {
	var v resource.Vec
	for i, s := range p.Set {
		if s {
			v[i] = p.V[i]
		}
	}
	return v
}

// OrInfinite returns the vector with unspecified components infinite.
func (p PartialVec) OrInfinite() resource.Vec {
	v := resource.InfiniteVec()
	for i, s := range p.Set {
		if s {
			v[i] = p.V[i]
		}
	}
	return v
}

// Full returns a PartialVec with every component specified.
func Full(v resource.Vec) PartialVec {
	return PartialVec{V: v, Set: [resource.Count]bool{true, true, true, true, true}}
}

// IntegralConfig is a pool's integral guarantee configuration (docs/semantics.md#pool-attributes).
type IntegralConfig struct {
	Type                        GuaranteeType
	ResourceFlow                PartialVec
	BurstGuarantee              PartialVec
	RelaxedShareMultiplierLimit OptFloat // [1, 10]; unset → tree
	CanAcceptFreeVolume         OptBool  // unset → true
	ShouldDistributeFreeVolume  OptBool  // unset → tree
}

// PoolConfig is the configuration of a pool (docs/semantics.md#pool-attributes, docs/api.md#pools).
// The zero value is a valid default pool.
type PoolConfig struct {
	Mode                     Mode
	Weight                   OptFloat
	StrongGuarantee          PartialVec
	ResourceLimits           PartialVec
	MaxOperationCount        OptInt
	MaxRunningOperationCount OptInt
	// FifoSortParameters is nil for the default [weight, start_time].
	FifoSortParameters          []FifoSortParam
	EnableLightweightOperations bool
	Integral                    IntegralConfig

	FairShareStarvationTimeout           OptDuration
	FairShareStarvationTolerance         OptFloat
	EnableAggressiveStarvation           OptBool
	AllowAggressivePreemption            OptBool
	AllowNormalPreemption                OptBool // unset → true
	NonPreemptibleResourceUsageThreshold PartialVec
	ComputePromisedGuaranteeFairShare    bool

	EnablePriorityStrongGuaranteeAdjustment          bool
	EnablePriorityStrongGuaranteeAdjustmentDonorship bool

	// SchedulingTagFilter restricts the pool's subtree to the nodes it
	// matches (docs/semantics.md); the empty filter matches every node.
	SchedulingTagFilter tagfilter.Filter

	// ACL and InheritACL are the pool's access control list and whether
	// its ancestors' entries apply too (unset: true). The scheduling core
	// carries them with the rest of the pool's configuration, so that they
	// are stored, reloaded and listed with it, and never reads them: the
	// HTTP facade checks them (docs/operations.md, "Access control").
	ACL        []ACLEntry
	InheritACL OptBool
}

// Permission is a set of pool permissions of an ACL entry.
type Permission uint8

// Pool permissions: use runs operations in the pool, administer changes it,
// its children and its operations.
const (
	PermUse Permission = 1 << iota
	PermAdminister
)

// ACLEntry is an entry of a pool's ACL: allow or deny the permissions to
// the subjects (user names, and "group:<name>" for a group's members).
type ACLEntry struct {
	Deny        bool
	Subjects    []string
	Permissions Permission
}

// DefaultFifoSortParameters is the FIFO order used when a pool names none.
var DefaultFifoSortParameters = []FifoSortParam{FifoWeight, FifoStartTime}

// SortParameters returns the pool's FIFO sort keys.
func (c *PoolConfig) SortParameters() []FifoSortParam {
	if c.FifoSortParameters == nil {
		return DefaultFifoSortParameters
	}
	return c.FifoSortParameters
}

// OperationSpec is the part of an operation the pool tree and the fair-share
// update need (docs/semantics.md).
type OperationSpec struct {
	Weight OptFloat
	IsGang bool
	// Vanilla operations may be lightweight in FIFO pools (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
	Vanilla        bool
	StartTime      clock.Time
	ResourceLimits PartialVec
}
