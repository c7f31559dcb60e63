package fairshare

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Config holds the tree options that shape the fair-share update
// (docs/configuration.md). Each field is a row of the fair-share settings table (settings.go),
// which holds its key, range and default.
type Config struct {
	// MainResource drives strong-guarantee inference (docs/semantics.md#strong-guarantees):
	// main_resource.
	MainResource resource.Kind
	// SmoothPeriodS is integral_guarantees.smooth_period_s (docs/semantics.md#integral-guarantees).
	SmoothPeriodS float64
	// PoolCapacitySaturationPeriodS is the "k" of integral pool capacity:
	// integral_guarantees.pool_capacity_saturation_period_s.
	PoolCapacitySaturationPeriodS float64
	// RelaxedShareMultiplierLimit is the tree default of the pools' limit:
	// integral_guarantees.relaxed_share_multiplier_limit (docs/semantics.md#integral-guarantees).
	RelaxedShareMultiplierLimit float64
	// ShouldDistributeFreeVolumeAmongChildren is the tree default of the
	// pools' flag: integral_guarantees.should_distribute_free_volume_among_children.
	ShouldDistributeFreeVolumeAmongChildren bool
	// EnableStepFunctionForGangOperations gives gang operations an
	// all-or-nothing fair share (docs/semantics.md#fair-share).
	EnableStepFunctionForGangOperations bool
	// EnableImprovedFitFactor selects the improved fit-factor computation
	// (docs/semantics.md#fair-share): enable_improved_fair_share_by_fit_factor_computation.
	EnableImprovedFitFactor bool
	// InferWeightFromGuaranteesShareMultiplier, when set (≥ 1), infers the
	// weight of pools without one from their guarantees (docs/semantics.md#fair-share).
	InferWeightFromGuaranteesShareMultiplier tree.OptFloat
}

// DefaultConfig returns the defaults of docs/configuration.md: the settings
// table's.
func DefaultConfig() Config {
	var c Config
	settingsTable.ApplyDefaults(&c)
	return c
}

// Attributes are the per-element results of an update, the orchid attributes
// of docs/api.md#the-orchid. Shares are fractions of the total resources.
type Attributes struct {
	FairShare Detailed
	// PromisedGuaranteeFairShare is set inside pools that compute it.
	PromisedGuaranteeFairShare Detailed

	UsageShare            resource.Share
	DemandShare           resource.Share
	LimitsShare           resource.Share
	StrongGuaranteeShare  resource.Share
	ProposedIntegralShare resource.Share
	DominantResource      resource.Kind
	Weight                float64

	// Integral pools only (Integral.Type != none).
	Integral IntegralAttributes
}

// Detailed is a fair share and its decomposition (docs/semantics.md#fair-share).
type Detailed struct {
	Total              resource.Share
	StrongGuarantee    resource.Share
	IntegralGuarantee  resource.Share
	WeightProportional resource.Share
}

// IntegralAttributes describe an integral pool's volume (docs/api.md#the-orchid).
type IntegralAttributes struct {
	Type tree.GuaranteeType
	// AccumulatedVolume is in resource·seconds, cpu in cores·seconds.
	AccumulatedVolume                  [resource.Count]float64
	AccumulatedResourceRatioVolume     float64
	Capacity                           [resource.Count]float64
	SpecifiedBurstRatio                float64
	SpecifiedResourceFlowRatio         float64
	TotalBurstRatio                    float64
	TotalResourceFlowRatio             float64
	EstimatedBurstUsageDurationSeconds float64
	LastShareRatio                     float64
}
