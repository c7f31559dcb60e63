package schedule

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tree"
)

// The scheduler's settings table: every key of the scheduler config
// (docs/configuration.md) once, with its field in Config, its range, its default and
// whether it may change at run time. DefaultConfig, validation, the wire
// decoder and encoder (wire) and the configuration reference
// (docs/configuration.md, written by AppendSettingsDoc) are all driven by it,
// so a setting is added by adding one row. The kinds, the range checks and
// the reference's rendering are core/settings'. The fair-share keys of the
// same tree config (main_resource, integral_guarantees, …) are
// fairshare.Settings: they belong to the snapshot format as well.

// Bounds of a heartbeat (security: no request may cost more than a
// documented amount).
const (
	// DefaultMaxStartedAllocations is max_started_allocations_per_heartbeat's
	// default and MaxStartedAllocationsBound its largest value: an answer
	// writes at most about 330 bytes per start (an id of 128 characters,
	// five resources), so 4096 starts stay under 1.5 MiB.
	DefaultMaxStartedAllocations = 1024
	MaxStartedAllocationsBound   = 4096
	// MaxNodeAllocations bounds the allocations one node holds: no start
	// beyond it, so that an answer that aborts them all is bounded too.
	MaxNodeAllocations = 1 << 16
)

// DefaultMaxNodeResourceLimits is max_node_resource_limits' default: a
// large machine's resources with room to spare.
var DefaultMaxNodeResourceLimits = resource.Vec{
	resource.UserSlots: 1 << 16,
	resource.CPU:       resource.Cores(16384),
	resource.GPU:       1024,
	resource.Memory:    1 << 46, // 64 TiB
	resource.Network:   1 << 40,
}

// Setting is one row of the settings table.
type Setting = settings.Setting[Config]

// maxSeconds bounds every configurable duration: 10⁹ s, about 31.7 years.
const maxSeconds = 1e9

// settingsTable is the settings table, in the order GET /api/v1/config
// lists the keys.
var settingsTable = settings.NewTable("schedule",
	settings.Duration("fair_share_update_period_s", func(c *Config) *clock.Duration { return &c.FairShareUpdatePeriod },
		200*clock.Millisecond, 0.01, 60, "How often the fair-share update runs."),
	settings.Duration("node_heartbeat_timeout_s", func(c *Config) *clock.Duration { return &c.NodeHeartbeatTimeout },
		60*clock.Second, 0.001, maxSeconds, "A node silent for longer is unregistered and its allocations are aborted."),
	settings.Make(settings.Spec{Key: "node_shards", Kind: settings.KindCount, Min: 1, Max: 4096, Startup: true,
		Default: settings.Value{Number: 16}, Doc: "The number of node shards (lock stripes) of the scheduling core."},
		func(c *Config) settings.Value { return settings.Value{Number: float64(c.Shards)} },
		func(c *Config, v settings.Value) { c.Shards = int(v.Number) }),
	settings.Make(settings.Spec{Key: "min_spare_allocation_resources", Kind: settings.KindResources,
		Default: settings.Value{Resources: resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1), resource.Memory: 256 << 20}},
		Doc:     "Resources that must stay free on a node for another allocation to start there."},
		func(c *Config) settings.Value { return settings.Value{Resources: c.MinSpareAllocationResources} },
		func(c *Config, v settings.Value) { c.MinSpareAllocationResources = v.Resources }),
	settings.Make(settings.Spec{Key: "max_started_allocations_per_heartbeat", Kind: settings.KindCount, Min: 1, Max: MaxStartedAllocationsBound,
		Nullable: true, NullMeans: "the default, 1024", Default: settings.Value{Number: DefaultMaxStartedAllocations},
		Doc: "The most allocations one heartbeat may start, so that its answer stays small (1024 starts are about 300 KiB at most); also the most one preemptive stage starts."},
		func(c *Config) settings.Value {
			if c.MaxStartedAllocationsPerHeartbeat <= 0 {
				return settings.Value{Null: true} // a Config built in code: no bound
			}
			return settings.Value{Number: float64(c.MaxStartedAllocationsPerHeartbeat)}
		},
		func(c *Config, v settings.Value) {
			c.MaxStartedAllocationsPerHeartbeat = int(v.Number)
			if v.Null {
				c.MaxStartedAllocationsPerHeartbeat = DefaultMaxStartedAllocations
			}
		}),
	settings.Make(settings.Spec{Key: "max_node_resource_limits", Kind: settings.KindResources,
		Default: settings.Value{Resources: DefaultMaxNodeResourceLimits},
		Doc:     "The most of each resource a node may report in its resource_limits: a heartbeat above it is refused (400), so that no node can claim the cluster. Resources left out are 0."},
		func(c *Config) settings.Value { return settings.Value{Resources: c.MaxNodeResourceLimits} },
		func(c *Config, v settings.Value) { c.MaxNodeResourceLimits = v.Resources }),
	settings.Duration("recovery_timeout_s", func(c *Config) *clock.Duration { return &c.RecoveryTimeout },
		10*clock.Second, 0, 3600, "After a restart of a durable server, how long heartbeats only report (their running allocations are adopted) before anything is started, preempted or aborted for overcommit; it ends earlier once every node seen before the stop has reported."),
	settings.Duration("checkpoint_period_s", func(c *Config) *clock.Duration { return &c.CheckpointPeriod },
		5*clock.Second, 0.1, 3600, "How often a durable server writes completed job counts and integral volumes; a crash re-runs at most this much finished work."),
	settings.Make(settings.Spec{Key: "max_heartbeats_per_batch", Kind: settings.KindCount, Min: 1, Max: 65536,
		Default: settings.Value{Number: 1024}, Doc: "The most heartbeats one POST /api/v1/heartbeats may carry; the HTTP facade enforces it (the scheduling core does not use it)."},
		func(c *Config) settings.Value { return settings.Value{Number: float64(c.MaxHeartbeatsPerBatch)} },
		func(c *Config, v settings.Value) { c.MaxHeartbeatsPerBatch = int(v.Number) }),
	settings.Duration("fair_share_starvation_timeout_s", func(c *Config) *clock.Duration { return &c.FairShareStarvationTimeout },
		30*clock.Second, 0, maxSeconds, "How long an element must stay below its fair share (within the tolerance) before it is starving."),
	settings.Duration("fair_share_aggressive_starvation_timeout_s", func(c *Config) *clock.Duration { return &c.FairShareAggressiveStarvationTimeout },
		120*clock.Second, 0, maxSeconds, "The same for aggressive starvation; at least fair_share_starvation_timeout_s."),
	settings.Number("fair_share_starvation_tolerance", func(c *Config) *float64 { return &c.FairShareStarvationTolerance },
		0.8, 0, 1, false, "An element is below its fair share when its usage is below this fraction of it."),
	settings.Bool("enable_aggressive_starvation", func(c *Config) *bool { return &c.EnableAggressiveStarvation },
		false, "Whether elements may become aggressively starving."),
	settings.Bool("enable_pool_starvation", func(c *Config) *bool { return &c.EnablePoolStarvation },
		true, "Whether pools (not only operations) may starve."),
	settings.Number("allocation_count_preemption_timeout_coefficient", func(c *Config) *float64 { return &c.AllocationCountPreemptionTimeoutCoefficient },
		1, 1, 1e6, false, "Operations with fewer pending jobs than this starve after proportionally shorter timeouts."),
	settings.Number("preemption_satisfaction_threshold", func(c *Config) *float64 { return &c.PreemptionSatisfactionThreshold },
		1, 0, 1e6, true, "Allocations of operations whose satisfaction is above it are preemptible."),
	settings.Number("aggressive_preemption_satisfaction_threshold", func(c *Config) *float64 { return &c.AggressivePreemptionSatisfactionThreshold },
		0.2, 0, 1e6, false, "The same for aggressive preemption; at most preemption_satisfaction_threshold."),
	settings.Duration("preemptive_scheduling_backoff_s", func(c *Config) *clock.Duration { return &c.PreemptiveSchedulingBackoff },
		5*clock.Second, 0, maxSeconds, "The least time between two preemptive scheduling passes on one node."),
	settings.Duration("refused_allocation_backoff_s", func(c *Config) *clock.Duration { return &c.RefusedAllocationBackoff },
		10*clock.Second, 0, maxSeconds, "After a node refuses an allocation it was told to start (a heartbeat reports it refused), how long that operation is not offered that node again."),
	settings.Duration("allocation_preemption_timeout_s", func(c *Config) *clock.Duration { return &c.AllocationPreemptionTimeout },
		10*clock.Second, 0, maxSeconds, "How long a preempted allocation may keep running before it is aborted."),
	settings.Duration("allocation_graceful_preemption_timeout_s", func(c *Config) *clock.Duration { return &c.AllocationGracefulPreemptionTimeout },
		60*clock.Second, 0, maxSeconds, "The same for graceful preemption."),
	settings.Duration("allowed_node_resources_overcommit_duration_s", func(c *Config) *clock.Duration { return &c.AllowedNodeResourcesOvercommitDuration },
		0, 0, maxSeconds, "How long a node's usage may exceed its limits before allocations are aborted."),
	settings.Duration("best_allocation_share_update_period_s", func(c *Config) *clock.Duration { return &c.BestAllocationShareUpdatePeriod },
		60*clock.Second, 0, maxSeconds, "How often an operation's best allocation share (the part of the cluster whole allocations of its size can use) is recomputed; also whenever its nodes' memory sizes change."),
	settings.Bool("allow_aggressive_preemption", func(c *Config) *bool { return &c.AllowAggressivePreemption },
		true, "The root's allow_aggressive_preemption, inherited by pools that set none."),
	settings.Bool("enable_guarantee_priority_scheduling", func(c *Config) *bool { return &c.EnableGuaranteePriorityScheduling },
		false, "Whether operations below their promised-guarantee fair share are scheduled before all others."),
	settings.Bool("allow_preemption_from_starving_operations", func(c *Config) *bool { return &c.AllowPreemptionFromStarvingOperations },
		false, "Whether the preemptive stages may take allocations of an operation that is starving itself."),
	settings.Make(settings.Spec{Key: "scheduling_preemption_priority_scope", Kind: settings.KindChoice,
		Choices: []string{"operation_and_ancestors", "operation_only"}, Default: settings.Value{Choice: "operation_and_ancestors"},
		Doc: "Whether an operation may preempt because an ancestor pool starves (operation_and_ancestors) or only because it starves itself."},
		func(c *Config) settings.Value {
			return settings.Value{Choice: c.SchedulingPreemptionPriorityScope.String()}
		},
		func(c *Config, v settings.Value) {
			c.SchedulingPreemptionPriorityScope = ScopeOperationAndAncestors
			if v.Choice == "operation_only" {
				c.SchedulingPreemptionPriorityScope = ScopeOperationOnly
			}
		}),
	settings.Make(settings.Spec{Key: "non_preemptible_resource_usage_threshold", Kind: settings.KindPartialResources,
		Nullable: true, NullMeans: "no threshold", Default: settings.Value{Null: true},
		Doc: "While an operation's usage stays below it in every resource, its allocations are not preemptible; unspecified resources are unbounded."},
		func(c *Config) settings.Value { return settings.Value{Partial: c.NonPreemptibleResourceUsageThreshold} },
		func(c *Config, v settings.Value) { c.NonPreemptibleResourceUsageThreshold = v.Partial }),
	settings.Make(settings.Spec{Key: "max_unpreemptible_running_allocation_count", Kind: settings.KindCount, Max: resource.MaxAmount,
		Nullable: true, NullMeans: "unset", Default: settings.Value{Null: true},
		Doc: "Fills the user_slots of non_preemptible_resource_usage_threshold when that is unspecified."},
		func(c *Config) settings.Value {
			if n := c.MaxUnpreemptibleRunningAllocationCount; n.Set {
				return settings.Value{Number: float64(n.V)}
			}
			return settings.Value{Null: true}
		},
		func(c *Config, v settings.Value) {
			c.MaxUnpreemptibleRunningAllocationCount = tree.OptInt{}
			if !v.Null {
				c.MaxUnpreemptibleRunningAllocationCount = tree.SomeInt(int64(v.Number))
			}
		}),
	count("max_operation_count", func(c *Config) *int64 { return &c.Limits.MaxOperationCount },
		limits.DefaultConfig().MaxOperationCount, "The most operations the cluster holds, running and pending."),
	count("max_running_operation_count", func(c *Config) *int64 { return &c.Limits.MaxRunningOperationCount },
		limits.DefaultConfig().MaxRunningOperationCount, "The most operations that run at once in the cluster."),
	count("max_operation_count_per_pool", func(c *Config) *int64 { return &c.Limits.MaxOperationCountPerPool },
		limits.DefaultConfig().MaxOperationCountPerPool, "The default max_operation_count of a pool."),
	count("max_running_operation_count_per_pool", func(c *Config) *int64 { return &c.Limits.MaxRunningOperationCountPerPool },
		limits.DefaultConfig().MaxRunningOperationCountPerPool, "The default max_running_operation_count of a pool."),
)

// count is a row of the limits' operation counts: a whole number in [0, 2^53].
func count(key string, field func(*Config) *int64, def int64, doc string) Setting {
	return settings.Count(key, field, def, 0, resource.MaxAmount, doc)
}

// Settings returns the settings table in the order GET /api/v1/config lists
// the keys. The slice is shared: callers must not modify it.
func Settings() []Setting { return settingsTable.Rows() }

// LookupSetting returns the setting with the JSON key k.
func LookupSetting(k string) (*Setting, bool) { return settingsTable.Lookup(k) }

// applyDefaults applies every setting's default to c.
func applyDefaults(c *Config) { settingsTable.ApplyDefaults(c) }

// ValidateConfig checks every setting of c against its range, then the rules
// that relate settings (docs/configuration.md), then c.FairShare
// (fairshare.ValidateConfig). The error is an *apierr.Error whose Path is a
// key of the settings tables.
func ValidateConfig(c *Config) error {
	if err := settingsTable.Check(c); err != nil {
		return err
	}
	switch {
	case c.FairShareAggressiveStarvationTimeout < c.FairShareStarvationTimeout:
		return errorf(CodeInvalidValue, "fair_share_aggressive_starvation_timeout_s",
			"cannot use fair_share_aggressive_starvation_timeout_s %v below fair_share_starvation_timeout_s %v",
			c.FairShareAggressiveStarvationTimeout.Seconds(), c.FairShareStarvationTimeout.Seconds())
	case c.AggressivePreemptionSatisfactionThreshold > c.PreemptionSatisfactionThreshold:
		return errorf(CodeInvalidValue, "aggressive_preemption_satisfaction_threshold",
			"cannot use aggressive_preemption_satisfaction_threshold %v above preemption_satisfaction_threshold %v",
			c.AggressivePreemptionSatisfactionThreshold, c.PreemptionSatisfactionThreshold)
	case c.Limits.MaxOperationCount < c.Limits.MaxRunningOperationCount:
		return errorf(CodeInvalidValue, "max_operation_count",
			"cannot use max_operation_count %d below max_running_operation_count %d",
			c.Limits.MaxOperationCount, c.Limits.MaxRunningOperationCount)
	case c.Limits.MaxOperationCountPerPool < c.Limits.MaxRunningOperationCountPerPool:
		return errorf(CodeInvalidValue, "max_operation_count_per_pool",
			"cannot use max_operation_count_per_pool %d below max_running_operation_count_per_pool %d",
			c.Limits.MaxOperationCountPerPool, c.Limits.MaxRunningOperationCountPerPool)
	}
	return fairshare.ValidateConfig(&c.FairShare)
}

// AppendSettingsDoc appends the configuration reference of the settings
// table as a Markdown table (docs/configuration.md holds it).
func AppendSettingsDoc(dst []byte) []byte { return settingsTable.AppendDoc(dst) }
