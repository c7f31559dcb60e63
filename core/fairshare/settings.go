package fairshare

import (
	"math"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tree"
)

// The fair-share settings table: every key of the tree config (docs/configuration.md)
// that shapes the fair-share update once, with its field in Config, its
// range, its default and a sentence for the reference. DefaultConfig,
// ValidateConfig, the wire decoder and encoder of the tree config and of the
// solve snapshot's "config" (wire) and the fair-share table of
// docs/configuration.md (AppendSettingsDoc) are all driven by it. The keys
// of integral_guarantees are dotted ("integral_guarantees.smooth_period_s"):
// members of that nested object (core/settings).

// Setting is one row of the fair-share settings table.
type Setting = settings.Setting[Config]

// noUpperBound is the Max of settings bounded from below only.
var noUpperBound = math.Inf(1)

// settingsTable is the fair-share settings table, in the order GET
// /api/v1/config lists the keys (before the scheduler's).
var settingsTable = settings.NewTable("fairshare",
	settings.Make(settings.Spec{Key: "main_resource", Kind: settings.KindChoice, Choices: resourceNames(),
		Default: settings.Value{Choice: resource.CPU.String()},
		Doc:     "Strong guarantees a pool does not specify are inferred from this resource: a pool with a third of its parent's guarantee of it gets a third of the parent's guarantee of each of the others."},
		func(c *Config) settings.Value { return settings.Value{Choice: c.MainResource.String()} },
		func(c *Config, v settings.Value) { c.MainResource, _ = resource.KindByName(v.Choice) }),
	settings.Seconds("integral_guarantees.smooth_period_s", func(c *Config) *float64 { return &c.SmoothPeriodS },
		60, 0, noUpperBound, true, "An integral pool's accumulated volume is worth volume / (total resources × this period) of share."),
	settings.Seconds("integral_guarantees.pool_capacity_saturation_period_s", func(c *Config) *float64 { return &c.PoolCapacitySaturationPeriodS },
		86400, 0, noUpperBound, true, "An integral pool accumulates volume up to its resource flow times this period."),
	settings.Number("integral_guarantees.relaxed_share_multiplier_limit", func(c *Config) *float64 { return &c.RelaxedShareMultiplierLimit },
		3, 1, 10, false, "A relaxed pool's integral share is at most this multiple of its resource flow; pools may set their own."),
	settings.Bool("integral_guarantees.should_distribute_free_volume_among_children", func(c *Config) *bool { return &c.ShouldDistributeFreeVolumeAmongChildren },
		false, "Whether a pool gives the volume its integral children overflow to its children that can accept it; pools may set their own."),
	settings.Bool("enable_step_function_for_gang_operations", func(c *Config) *bool { return &c.EnableStepFunctionForGangOperations },
		false, "Whether a gang operation gets all of its demand or nothing as its fair share."),
	settings.Bool("enable_improved_fair_share_by_fit_factor_computation", func(c *Config) *bool { return &c.EnableImprovedFitFactor },
		true, "Whether pools distribute their fair share with the improved fit-factor computation (else the classic one)."),
	settings.Make[Config](settings.Spec{Key: "forbid_immediate_operations_in_root", Kind: settings.KindBool, Ignored: true,
		Default: settings.Value{Bool: true},
		Doc:     "Accepted for compatibility with YTsaurus tree configs; it has no effect."}, nil, nil),
	settings.Make(settings.Spec{Key: "infer_weight_from_guarantees_share_multiplier", Kind: settings.KindNumber, Min: 1, Max: noUpperBound,
		Nullable: true, NullMeans: "unset", Default: settings.Value{Null: true},
		Doc: "When set, a pool without a weight gets this multiple of its guarantees' share of its parent's as its weight."},
		func(c *Config) settings.Value {
			if w := c.InferWeightFromGuaranteesShareMultiplier; w.Set {
				return settings.Value{Number: w.V}
			}
			return settings.Value{Null: true}
		},
		func(c *Config, v settings.Value) {
			c.InferWeightFromGuaranteesShareMultiplier = tree.OptFloat{}
			if !v.Null {
				c.InferWeightFromGuaranteesShareMultiplier = tree.Some(v.Number)
			}
		}),
)

// resourceNames are the names of the resources in their order.
func resourceNames() []string {
	names := make([]string, resource.Count)
	for k := range resource.Count {
		names[k] = resource.Kind(k).String()
	}
	return names
}

// Settings returns the fair-share settings table in the order GET
// /api/v1/config lists the keys. The slice is shared: callers must not
// modify it.
func Settings() []Setting { return settingsTable.Rows() }

// LookupSetting returns the setting with the key k, dotted for a member of a
// nested object ("integral_guarantees.smooth_period_s").
func LookupSetting(k string) (*Setting, bool) { return settingsTable.Lookup(k) }

// ValidateConfig checks every setting of c against its range. The error is
// an *apierr.Error whose Path is a key of the table (dotted for a member of
// integral_guarantees).
func ValidateConfig(c *Config) error { return settingsTable.Check(c) }

// AppendSettingsDoc appends the configuration reference of the fair-share
// settings table as a Markdown table (docs/configuration.md holds it).
func AppendSettingsDoc(dst []byte) []byte { return settingsTable.AppendDoc(dst) }
