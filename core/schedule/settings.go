package schedule

import (
	"math"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The scheduler's settings table: every key of the scheduler config (spec.md
// §8.1–§8.2) once, with its field in Config, its range, its default and
// whether it may change at run time. DefaultConfig, validation, the wire
// decoder and encoder (facade/wire) and the configuration reference
// (docs/configuration.md, written by AppendSettingsDoc) are all driven by it,
// so a setting is added by adding one row. The fair-share keys
// (fairshare.Config: main_resource, integral_guarantees, …) belong to the
// snapshot format as well and are decoded with it.

// SettingKind is the type of a setting's value.
type SettingKind uint8

// Setting kinds.
const (
	// KindDuration is a clock.Duration, written in seconds (the key ends in _s).
	KindDuration SettingKind = iota
	// KindNumber is a float64.
	KindNumber
	// KindCount is a whole number.
	KindCount
	// KindBool is true or false.
	KindBool
	// KindChoice is one of the setting's Choices.
	KindChoice
	// KindResources is a full resource vector (resource.Vec).
	KindResources
	// KindPartialResources is a resource vector whose components may be
	// unspecified (tree.PartialVec).
	KindPartialResources
)

// Value is a setting's value in the representation of its kind: Number for
// KindDuration (in seconds), KindNumber and KindCount; Bool; Choice;
// Resources; Partial. Null is true for the JSON null of a Nullable setting.
type Value struct {
	Null      bool
	Number    float64
	Bool      bool
	Choice    string
	Resources resource.Vec
	Partial   tree.PartialVec
}

// A Setting is one row of the settings table.
type Setting struct {
	// Key is the JSON key (api.md: GET and PATCH /api/v1/config).
	Key  string
	Kind SettingKind
	// Min and Max bound a duration (in seconds), number or count; MinOpen
	// excludes Min itself.
	Min, Max float64
	MinOpen  bool
	// Nullable settings accept null; NullMeans says what it stands for.
	Nullable  bool
	NullMeans string
	// Choices are the accepted strings of a KindChoice setting.
	Choices []string
	// Startup settings can only be set when the scheduler is created
	// (fairsched serve --config), never by PATCH.
	Startup bool
	// Doc is one sentence for the configuration reference.
	Doc string

	def Value
	get func(*Config) Value
	set func(*Config, Value)
}

// maxSeconds bounds every configurable duration: 10⁹ s, about 31.7 years.
const maxSeconds = 1e9

// settings is the table, in the order GET /api/v1/config lists the keys.
var settings = []Setting{
	duration("fair_share_update_period_s", func(c *Config) *clock.Duration { return &c.FairShareUpdatePeriod },
		200*clock.Millisecond, 0.01, 60, "How often the fair-share update runs."),
	duration("node_heartbeat_timeout_s", func(c *Config) *clock.Duration { return &c.NodeHeartbeatTimeout },
		60*clock.Second, 0.001, maxSeconds, "A node silent for longer is unregistered and its allocations are aborted."),
	{Key: "node_shards", Kind: KindCount, Min: 1, Max: 4096, Startup: true, def: Value{Number: 16},
		Doc: "The number of node shards (lock stripes) of the scheduling core.",
		get: func(c *Config) Value { return Value{Number: float64(c.Shards)} },
		set: func(c *Config, v Value) { c.Shards = int(v.Number) }},
	{Key: "min_spare_allocation_resources", Kind: KindResources,
		def: Value{Resources: resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1), resource.Memory: 256 << 20}},
		Doc: "Resources that must stay free on a node for another allocation to start there.",
		get: func(c *Config) Value { return Value{Resources: c.MinSpareAllocationResources} },
		set: func(c *Config, v Value) { c.MinSpareAllocationResources = v.Resources }},
	{Key: "max_started_allocations_per_heartbeat", Kind: KindCount, Min: 1, Max: 1 << 30, Nullable: true, NullMeans: "no bound",
		def: Value{Null: true}, Doc: "The most allocations one heartbeat may start.",
		get: func(c *Config) Value {
			if c.MaxStartedAllocationsPerHeartbeat <= 0 {
				return Value{Null: true}
			}
			return Value{Number: float64(c.MaxStartedAllocationsPerHeartbeat)}
		},
		set: func(c *Config, v Value) { c.MaxStartedAllocationsPerHeartbeat = int(v.Number) }},
	duration("fair_share_starvation_timeout_s", func(c *Config) *clock.Duration { return &c.FairShareStarvationTimeout },
		30*clock.Second, 0, maxSeconds, "How long an element must stay below its fair share (within the tolerance) before it is starving."),
	duration("fair_share_aggressive_starvation_timeout_s", func(c *Config) *clock.Duration { return &c.FairShareAggressiveStarvationTimeout },
		120*clock.Second, 0, maxSeconds, "The same for aggressive starvation; at least fair_share_starvation_timeout_s."),
	number("fair_share_starvation_tolerance", func(c *Config) *float64 { return &c.FairShareStarvationTolerance },
		0.8, 0, 1, false, "An element is below its fair share when its usage is below this fraction of it."),
	boolean("enable_aggressive_starvation", func(c *Config) *bool { return &c.EnableAggressiveStarvation },
		false, "Whether elements may become aggressively starving."),
	boolean("enable_pool_starvation", func(c *Config) *bool { return &c.EnablePoolStarvation },
		true, "Whether pools (not only operations) may starve."),
	number("allocation_count_preemption_timeout_coefficient", func(c *Config) *float64 { return &c.AllocationCountPreemptionTimeoutCoefficient },
		1, 1, 1e6, false, "Operations with fewer pending jobs than this starve after proportionally shorter timeouts."),
	number("preemption_satisfaction_threshold", func(c *Config) *float64 { return &c.PreemptionSatisfactionThreshold },
		1, 0, 1e6, true, "Allocations of operations whose satisfaction is above it are preemptible."),
	number("aggressive_preemption_satisfaction_threshold", func(c *Config) *float64 { return &c.AggressivePreemptionSatisfactionThreshold },
		0.2, 0, 1e6, false, "The same for aggressive preemption; at most preemption_satisfaction_threshold."),
	duration("preemptive_scheduling_backoff_s", func(c *Config) *clock.Duration { return &c.PreemptiveSchedulingBackoff },
		5*clock.Second, 0, maxSeconds, "The least time between two preemptive scheduling passes on one node."),
	duration("allocation_preemption_timeout_s", func(c *Config) *clock.Duration { return &c.AllocationPreemptionTimeout },
		10*clock.Second, 0, maxSeconds, "How long a preempted allocation may keep running before it is aborted."),
	duration("allocation_graceful_preemption_timeout_s", func(c *Config) *clock.Duration { return &c.AllocationGracefulPreemptionTimeout },
		60*clock.Second, 0, maxSeconds, "The same for graceful preemption."),
	duration("allowed_node_resources_overcommit_duration_s", func(c *Config) *clock.Duration { return &c.AllowedNodeResourcesOvercommitDuration },
		0, 0, maxSeconds, "How long a node's usage may exceed its limits before allocations are aborted."),
	duration("best_allocation_share_update_period_s", func(c *Config) *clock.Duration { return &c.BestAllocationShareUpdatePeriod },
		60*clock.Second, 0, maxSeconds, "How often an operation's best allocation share (the part of the cluster whole allocations of its size can use) is recomputed; also whenever its nodes' memory sizes change."),
	boolean("allow_aggressive_preemption", func(c *Config) *bool { return &c.AllowAggressivePreemption },
		true, "The root's allow_aggressive_preemption, inherited by pools that set none."),
	boolean("enable_guarantee_priority_scheduling", func(c *Config) *bool { return &c.EnableGuaranteePriorityScheduling },
		false, "Whether operations below their promised-guarantee fair share are scheduled before all others."),
	boolean("allow_preemption_from_starving_operations", func(c *Config) *bool { return &c.AllowPreemptionFromStarvingOperations },
		false, "Whether the preemptive stages may take allocations of an operation that is starving itself."),
	{Key: "scheduling_preemption_priority_scope", Kind: KindChoice, Choices: []string{"operation_and_ancestors", "operation_only"},
		def: Value{Choice: "operation_and_ancestors"},
		Doc: "Whether an operation may preempt because an ancestor pool starves (operation_and_ancestors) or only because it starves itself.",
		get: func(c *Config) Value { return Value{Choice: c.SchedulingPreemptionPriorityScope.String()} },
		set: func(c *Config, v Value) {
			c.SchedulingPreemptionPriorityScope = ScopeOperationAndAncestors
			if v.Choice == "operation_only" {
				c.SchedulingPreemptionPriorityScope = ScopeOperationOnly
			}
		}},
	{Key: "non_preemptible_resource_usage_threshold", Kind: KindPartialResources, Nullable: true, NullMeans: "no threshold",
		def: Value{Null: true},
		Doc: "While an operation's usage stays below it in every resource, its allocations are not preemptible; unspecified resources are unbounded.",
		get: func(c *Config) Value { return Value{Partial: c.NonPreemptibleResourceUsageThreshold} },
		set: func(c *Config, v Value) { c.NonPreemptibleResourceUsageThreshold = v.Partial }},
	{Key: "max_unpreemptible_running_allocation_count", Kind: KindCount, Max: resource.MaxAmount, Nullable: true, NullMeans: "unset",
		def: Value{Null: true},
		Doc: "Fills the user_slots of non_preemptible_resource_usage_threshold when that is unspecified.",
		get: func(c *Config) Value {
			if n := c.MaxUnpreemptibleRunningAllocationCount; n.Set {
				return Value{Number: float64(n.V)}
			}
			return Value{Null: true}
		},
		set: func(c *Config, v Value) {
			c.MaxUnpreemptibleRunningAllocationCount = tree.OptInt{}
			if !v.Null {
				c.MaxUnpreemptibleRunningAllocationCount = tree.SomeInt(int64(v.Number))
			}
		}},
	count("max_operation_count", func(c *Config) *int64 { return &c.Limits.MaxOperationCount },
		limits.DefaultConfig().MaxOperationCount, "The most operations the cluster holds, running and pending."),
	count("max_running_operation_count", func(c *Config) *int64 { return &c.Limits.MaxRunningOperationCount },
		limits.DefaultConfig().MaxRunningOperationCount, "The most operations that run at once in the cluster."),
	count("max_operation_count_per_pool", func(c *Config) *int64 { return &c.Limits.MaxOperationCountPerPool },
		limits.DefaultConfig().MaxOperationCountPerPool, "The default max_operation_count of a pool."),
	count("max_running_operation_count_per_pool", func(c *Config) *int64 { return &c.Limits.MaxRunningOperationCountPerPool },
		limits.DefaultConfig().MaxRunningOperationCountPerPool, "The default max_running_operation_count of a pool."),
}

func duration(key string, field func(*Config) *clock.Duration, def clock.Duration, lo, hi float64, doc string) Setting {
	return Setting{Key: key, Kind: KindDuration, Min: lo, Max: hi, Doc: doc, def: Value{Number: def.Seconds()},
		get: func(c *Config) Value { return Value{Number: field(c).Seconds()} },
		set: func(c *Config, v Value) { *field(c) = clock.DurationFromSeconds(v.Number) }}
}

func number(key string, field func(*Config) *float64, def, lo, hi float64, minOpen bool, doc string) Setting {
	return Setting{Key: key, Kind: KindNumber, Min: lo, Max: hi, MinOpen: minOpen, Doc: doc, def: Value{Number: def},
		get: func(c *Config) Value { return Value{Number: *field(c)} },
		set: func(c *Config, v Value) { *field(c) = v.Number }}
}

func count(key string, field func(*Config) *int64, def int64, doc string) Setting {
	return Setting{Key: key, Kind: KindCount, Max: resource.MaxAmount, Doc: doc, def: Value{Number: float64(def)},
		get: func(c *Config) Value { return Value{Number: float64(*field(c))} },
		set: func(c *Config, v Value) { *field(c) = int64(v.Number) }}
}

func boolean(key string, field func(*Config) *bool, def bool, doc string) Setting {
	return Setting{Key: key, Kind: KindBool, Doc: doc, def: Value{Bool: def},
		get: func(c *Config) Value { return Value{Bool: *field(c)} },
		set: func(c *Config, v Value) { *field(c) = v.Bool }}
}

// Settings returns the settings table in the order GET /api/v1/config lists
// the keys. The slice is shared: callers must not modify it.
func Settings() []Setting { return settings }

// LookupSetting returns the setting with the JSON key k.
func LookupSetting(k string) (*Setting, bool) {
	for i := range settings {
		if settings[i].Key == k {
			return &settings[i], true
		}
	}
	return nil, false
}

// Default returns the setting's default value.
func (s *Setting) Default() Value { return s.def }

// Get returns the setting's value in c.
func (s *Setting) Get(c *Config) Value { return s.get(c) }

// Set validates v against the setting's range and stores it in c; on error c
// is unchanged. The error's Field is the key and its message says what the
// setting wants (Want). Cross-setting rules (an aggressive timeout below
// the normal one, …) are ValidateConfig's.
func (s *Setting) Set(c *Config, v Value) error {
	if err := s.check(v); err != nil {
		return err
	}
	s.set(c, v)
	return nil
}

// check validates v.
func (s *Setting) check(v Value) error {
	if v.Null {
		if !s.Nullable {
			return s.invalid("null")
		}
		return nil
	}
	switch s.Kind {
	case KindDuration, KindNumber, KindCount:
		x := v.Number
		ok := x == x && x <= s.Max && (x > s.Min || !s.MinOpen && x == s.Min)
		if s.Kind == KindCount && x != math.Trunc(x) {
			ok = false
		}
		if !ok {
			return s.invalid(strconv.FormatFloat(x, 'g', -1, 64))
		}
	case KindChoice:
		for _, c := range s.Choices {
			if v.Choice == c {
				return nil
			}
		}
		return s.invalid(strconv.Quote(v.Choice))
	case KindResources:
		for k, x := range v.Resources {
			if x < 0 || x > resource.MaxAmount {
				return errorf(CodeInvalidValue, s.Key+"."+resource.Kind(k).String(),
					"cannot use %s %d for %s: want a non-negative amount of at most 2^53", resource.Kind(k), x, s.Key)
			}
		}
	case KindPartialResources:
		for k, x := range v.Partial.V {
			if v.Partial.Set[k] && (x < 0 || x > resource.MaxAmount) {
				return errorf(CodeInvalidValue, s.Key+"."+resource.Kind(k).String(),
					"cannot use %s %d for %s: want a non-negative amount of at most 2^53", resource.Kind(k), x, s.Key)
			}
		}
	}
	return nil
}

func (s *Setting) invalid(v string) error {
	return errorf(CodeInvalidValue, s.Key, "cannot use %s %s: want %s", s.Key, v, s.Want())
}

// Want describes the values the setting accepts, for error messages and the
// configuration reference: "a number of seconds in [0.01, 60]".
func (s *Setting) Want() string {
	var w string
	switch s.Kind {
	case KindDuration:
		w = "a number of seconds" + s.interval()
	case KindNumber:
		w = "a number" + s.interval()
	case KindCount:
		w = "a whole number" + s.interval()
	case KindBool:
		w = "true or false"
	case KindChoice:
		for i, c := range s.Choices {
			switch {
			case i == 0:
			case i == len(s.Choices)-1:
				w += " or "
			default:
				w += ", "
			}
			w += strconv.Quote(c)
		}
	case KindResources, KindPartialResources:
		w = "an object of resource amounts"
	}
	if s.Nullable {
		w = "null (" + s.NullMeans + ") or " + w
	}
	return w
}

// interval formats [Min, Max] (or (Min, Max]) with 2^53 and 2^30 spelled so.
func (s *Setting) interval() string {
	open := "["
	if s.MinOpen {
		open = "("
	}
	return " in " + open + formatBound(s.Min) + ", " + formatBound(s.Max) + "]"
}

func formatBound(x float64) string {
	switch x {
	case resource.MaxAmount:
		return "2^53"
	case 1 << 30:
		return "2^30"
	}
	if e := math.Log10(x); x >= 1e6 && e == math.Trunc(e) {
		return "1e" + strconv.Itoa(int(e)) // not strconv's "1e+06"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// defaultConfig applies every setting's default to c.
func applyDefaults(c *Config) {
	for i := range settings {
		settings[i].set(c, settings[i].def)
	}
}

// ValidateConfig checks every setting of c against its range, then the rules
// that relate settings (spec.md §8.1). The error's Field is a key of the
// settings table.
func ValidateConfig(c *Config) error {
	for i := range settings {
		if err := settings[i].check(settings[i].get(c)); err != nil {
			return err
		}
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
	return nil
}

// AppendSettingsDoc appends the configuration reference of the settings
// table as a Markdown table (docs/configuration.md holds it).
func AppendSettingsDoc(dst []byte) []byte {
	dst = append(dst, "| key | default | accepts | at run time | what it does |\n|---|---|---|---|---|\n"...)
	for i := range settings {
		s := &settings[i]
		dst = append(dst, "| `"...)
		dst = append(dst, s.Key...)
		dst = append(dst, "` | "...)
		dst = appendDocValue(dst, s, s.def)
		dst = append(dst, " | "...)
		dst = append(dst, s.Want()...)
		if s.Startup {
			dst = append(dst, " | no (start-up only) | "...)
		} else {
			dst = append(dst, " | yes | "...)
		}
		dst = append(dst, s.Doc...)
		dst = append(dst, " |\n"...)
	}
	return dst
}

func appendDocValue(dst []byte, s *Setting, v Value) []byte {
	if v.Null {
		return append(dst, "null"...)
	}
	switch s.Kind {
	case KindDuration, KindNumber, KindCount:
		return strconv.AppendFloat(dst, v.Number, 'g', -1, 64)
	case KindBool:
		return strconv.AppendBool(dst, v.Bool)
	case KindChoice:
		return strconv.AppendQuote(dst, v.Choice)
	case KindResources:
		dst = append(dst, '{')
		first := true
		for k, x := range v.Resources {
			if x == 0 {
				continue
			}
			if !first {
				dst = append(dst, ", "...)
			}
			first = false
			dst = append(dst, resource.Kind(k).String()...)
			dst = append(dst, ": "...)
			if resource.Kind(k) == resource.CPU {
				dst = strconv.AppendFloat(dst, float64(x)/resource.CPUScale, 'g', -1, 64)
			} else {
				dst = strconv.AppendInt(dst, x, 10)
			}
		}
		return append(dst, '}')
	}
	return append(dst, "{}"...)
}
