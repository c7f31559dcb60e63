package schedule

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// PreemptionPriorityScope is scheduling_preemption_priority_scope
// (docs/semantics.md#starvation): whether an operation may preempt because an ancestor pool starves.
type PreemptionPriorityScope uint8

// Preemption priority scopes.
const (
	ScopeOperationAndAncestors PreemptionPriorityScope = iota // default
	ScopeOperationOnly
)

func (s PreemptionPriorityScope) String() string {
	if s == ScopeOperationOnly {
		return "operation_only"
	}
	return "operation_and_ancestors"
}

// Config is the scheduler's configuration; DefaultConfig gives docs/configuration.md.
type Config struct {
	// Shards is the number of node shards (lock stripes).
	Shards int
	// NodeHeartbeatTimeout unregisters a node silent for this long (60 s).
	NodeHeartbeatTimeout clock.Duration
	// FairShareUpdatePeriod is how often the caller should run UpdateFairShare.
	FairShareUpdatePeriod clock.Duration
	// MinSpareAllocationResources must stay free on a node for more
	// allocations to start ({user_slots 1, cpu 1, memory 256 MB}).
	MinSpareAllocationResources resource.Vec
	// MaxStartedAllocationsPerHeartbeat bounds starts per heartbeat (1024
	// by the settings table, so that one heartbeat's answer stays well
	// under 1 MiB; 0 in a Config built in code: no bound).
	MaxStartedAllocationsPerHeartbeat int
	// MaxNodeResourceLimits bounds the resource_limits a node may report:
	// a heartbeat above it is refused (the settings table's default is
	// finite in every resource; the zero vector of a Config built in code
	// means no bound).
	MaxNodeResourceLimits resource.Vec
	// MaxHeartbeatsPerBatch bounds the heartbeats of one batch (POST
	// /api/v1/heartbeats, docs/api.md#batched-heartbeats; 1024). The facade enforces it; the
	// core does not read it.
	MaxHeartbeatsPerBatch int

	// RecoveryTimeout bounds the recovery window after a restart (10 s;
	// see BeginRecovery).
	RecoveryTimeout clock.Duration
	// CheckpointPeriod is how often the durable facade writes progress
	// checkpoints (5 s); the core does not read it.
	CheckpointPeriod                     clock.Duration
	FairShareStarvationTimeout           clock.Duration // 30 s
	FairShareAggressiveStarvationTimeout clock.Duration // 120 s
	FairShareStarvationTolerance         float64        // 0.8
	EnableAggressiveStarvation           bool           // false
	EnablePoolStarvation                 bool           // true
	// AllocationCountPreemptionTimeoutCoefficient shortens the starvation
	// timeouts of operations with few pending jobs (1.0).
	AllocationCountPreemptionTimeoutCoefficient float64

	PreemptionSatisfactionThreshold           float64        // 1.0
	AggressivePreemptionSatisfactionThreshold float64        // 0.2
	PreemptiveSchedulingBackoff               clock.Duration // 5 s
	// RefusedAllocationBackoff is how long an operation is not offered a
	// node that refused one of its allocations (10 s; 0: offered again at
	// once).
	RefusedAllocationBackoff            clock.Duration
	AllocationPreemptionTimeout         clock.Duration // 10 s
	AllocationGracefulPreemptionTimeout clock.Duration // 60 s

	// NonPreemptibleResourceUsageThreshold is the tree default of
	// non_preemptible_resource_usage_threshold (docs/semantics.md#preemption-statuses): while an
	// operation's usage strictly stays below it in every resource, its
	// allocations are not preemptible. Empty (the default) means no
	// threshold; unspecified components of a partial one are infinite.
	// Pools override it, operations may only lower it per resource.
	NonPreemptibleResourceUsageThreshold tree.PartialVec
	// MaxUnpreemptibleRunningAllocationCount fills the threshold's
	// user_slots when that is unspecified (docs/configuration.md; unset by default).
	MaxUnpreemptibleRunningAllocationCount tree.OptInt
	// AllowPreemptionFromStarvingOperations lets the preemptive stages take
	// allocations of an operation that is itself starving (docs/semantics.md#preemptive-stages;
	// false: a starving operation's allocations are no victims).
	AllowPreemptionFromStarvingOperations bool
	// EnableGuaranteePriorityScheduling puts operations whose
	// promised-guarantee fair share strictly dominates their usage on
	// non-blocked resources in the high scheduling priority class, which
	// the regular stage serves first (docs/semantics.md; false).
	EnableGuaranteePriorityScheduling bool
	// AllowAggressivePreemption is the root's allow_aggressive_preemption,
	// inherited by pools that set none (docs/semantics.md#preemption-statuses; docs: true).
	AllowAggressivePreemption bool
	// SchedulingPreemptionPriorityScope is docs/semantics.md#starvation's scope.
	SchedulingPreemptionPriorityScope PreemptionPriorityScope
	// AllowedNodeResourcesOvercommitDuration is how long a node's usage may
	// exceed its limits before allocations are aborted (docs/semantics.md#scheduling-on-a-heartbeat; 0).
	AllowedNodeResourcesOvercommitDuration clock.Duration
	// BestAllocationShareUpdatePeriod is how often an operation's best
	// allocation share is recomputed (docs/semantics.md; 60 s); it is
	// also recomputed when its nodes' memory sizes change.
	BestAllocationShareUpdatePeriod clock.Duration

	FairShare fairshare.Config
	Limits    limits.Config
}

// DefaultConfig returns the defaults of docs/configuration.md: the settings
// table's, and those of the fair-share update and the limits.
func DefaultConfig() Config {
	c := Config{FairShare: fairshare.DefaultConfig(), Limits: limits.DefaultConfig()}
	applyDefaults(&c)
	return c
}
