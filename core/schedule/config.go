package schedule

import (
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
)

// Config is the scheduler's configuration; DefaultConfig gives spec.md §8.
type Config struct {
	// Shards is the number of node shards (lock stripes).
	Shards int
	// NodeHeartbeatTimeout unregisters a node silent for this long (60 s).
	NodeHeartbeatTimeout float64
	// FairShareUpdatePeriod is how often the caller should run UpdateFairShare.
	FairShareUpdatePeriod float64
	// MinSpareAllocationResources must stay free on a node for more
	// allocations to start ({user_slots 1, cpu 1, memory 256 MB}).
	MinSpareAllocationResources resource.Vec
	// MaxStartedAllocationsPerHeartbeat bounds starts per heartbeat (0 = no bound).
	MaxStartedAllocationsPerHeartbeat int

	FairShareStarvationTimeout           float64 // 30 s
	FairShareAggressiveStarvationTimeout float64 // 120 s
	FairShareStarvationTolerance         float64 // 0.8
	EnableAggressiveStarvation           bool    // false
	EnablePoolStarvation                 bool    // true
	// AllocationCountPreemptionTimeoutCoefficient shortens the starvation
	// timeouts of operations with few pending jobs (1.0).
	AllocationCountPreemptionTimeoutCoefficient float64

	PreemptionSatisfactionThreshold           float64 // 1.0
	AggressivePreemptionSatisfactionThreshold float64 // 0.2
	PreemptiveSchedulingBackoff               float64 // 5 s
	AllocationPreemptionTimeout               float64 // 10 s
	AllocationGracefulPreemptionTimeout       float64 // 60 s

	FairShare fairshare.Config
	Limits    limits.Config
}

// DefaultConfig returns the defaults of spec.md §8 and §11.
func DefaultConfig() Config {
	return Config{
		Shards:                                      16,
		NodeHeartbeatTimeout:                        60,
		FairShareUpdatePeriod:                       0.2,
		MinSpareAllocationResources:                 resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1), resource.Memory: 256 << 20},
		FairShareStarvationTimeout:                  30,
		FairShareAggressiveStarvationTimeout:        120,
		FairShareStarvationTolerance:                0.8,
		EnablePoolStarvation:                        true,
		AllocationCountPreemptionTimeoutCoefficient: 1,
		PreemptionSatisfactionThreshold:             1,
		AggressivePreemptionSatisfactionThreshold:   0.2,
		PreemptiveSchedulingBackoff:                 5,
		AllocationPreemptionTimeout:                 10,
		AllocationGracefulPreemptionTimeout:         60,
		FairShare:                                   fairshare.DefaultConfig(),
		Limits:                                      limits.DefaultConfig(),
	}
}
