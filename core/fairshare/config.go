package fairshare

import (
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Config holds the tree options that shape the fair-share update (spec.md §8.1).
type Config struct {
	// MainResource drives strong-guarantee inference (spec.md §2.2). Default cpu.
	MainResource resource.Kind
	// SmoothPeriodS is integral_guarantees.smooth_period (default 60 s).
	SmoothPeriodS float64
	// PoolCapacitySaturationPeriodS is the "k" of integral pool capacity
	// (default 86400 s).
	PoolCapacitySaturationPeriodS float64
	// RelaxedShareMultiplierLimit is the tree default (3).
	RelaxedShareMultiplierLimit float64
	// ShouldDistributeFreeVolumeAmongChildren is the tree default (false).
	ShouldDistributeFreeVolumeAmongChildren bool
	// EnableStepFunctionForGangOperations gives gang operations an
	// all-or-nothing fair share (spec.md §2.8). Default false.
	EnableStepFunctionForGangOperations bool
	// EnableImprovedFitFactor selects the improved fit-factor computation
	// (spec.md §2.9, §11). Default true.
	EnableImprovedFitFactor bool
	// InferWeightFromGuaranteesShareMultiplier, when set (≥ 1), infers the
	// weight of pools without one from their guarantees (spec.md §2.13).
	InferWeightFromGuaranteesShareMultiplier tree.OptFloat
}

// DefaultConfig returns the defaults of spec.md §8 and §11.
func DefaultConfig() Config {
	return Config{
		MainResource:                  resource.CPU,
		SmoothPeriodS:                 60,
		PoolCapacitySaturationPeriodS: 86400,
		RelaxedShareMultiplierLimit:   3,
		EnableImprovedFitFactor:       true,
	}
}

// Attributes are the per-element results of an update, the orchid attributes
// of api.md §5. Shares are fractions of the total resources.
type Attributes struct {
	FairShare Detailed
	// PromisedGuaranteeFairShare is set inside pools that compute it (§2.11).
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

// Detailed is a fair share and its decomposition (spec.md §2.10).
type Detailed struct {
	Total              resource.Share
	StrongGuarantee    resource.Share
	IntegralGuarantee  resource.Share
	WeightProportional resource.Share
}

// IntegralAttributes describe an integral pool's volume (api.md §5).
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
