// Package poolcrd is the Pool custom resource (pools.fairsched.io,
// v1alpha1, cluster-scoped): its spec, which fairsched-kube mirrors to
// fairsched serve's PUT /api/v1/pools/{name}, and its status, the live
// fair-share state it writes back.
package poolcrd

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fairsched/fairsched/client"
)

// Resource is the Pool resource's group, version and plural.
var Resource = schema.GroupVersionResource{Group: "fairsched.io", Version: "v1alpha1", Resource: "pools"}

// Spec is a Pool's spec: the attributes of PUT /api/v1/pools/{name}
// (docs/api.md#pools) in the API server's camelCase, ACLs excepted.
type Spec struct {
	Parent                               string              `json:"parent,omitempty"`
	Mode                                 string              `json:"mode,omitempty"`
	Weight                               *float64            `json:"weight,omitempty"`
	StrongGuaranteeResources             *Resources          `json:"strongGuaranteeResources,omitempty"`
	ResourceLimits                       *Resources          `json:"resourceLimits,omitempty"`
	MaxOperationCount                    *int64              `json:"maxOperationCount,omitempty"`
	MaxRunningOperationCount             *int64              `json:"maxRunningOperationCount,omitempty"`
	FifoSortParameters                   []string            `json:"fifoSortParameters,omitempty"`
	IntegralGuarantees                   *IntegralGuarantees `json:"integralGuarantees,omitempty"`
	FairShareStarvationTimeoutSeconds    *float64            `json:"fairShareStarvationTimeoutSeconds,omitempty"`
	FairShareStarvationTolerance         *float64            `json:"fairShareStarvationTolerance,omitempty"`
	EnableAggressiveStarvation           *bool               `json:"enableAggressiveStarvation,omitempty"`
	AllowAggressivePreemption            *bool               `json:"allowAggressivePreemption,omitempty"`
	AllowNormalPreemption                *bool               `json:"allowNormalPreemption,omitempty"`
	NonPreemptibleResourceUsageThreshold *Resources          `json:"nonPreemptibleResourceUsageThreshold,omitempty"`
	SchedulingTagFilter                  string              `json:"schedulingTagFilter,omitempty"`
}

// Resources are amounts as Kubernetes quantities: cpu in cores ("500m",
// "4"), memory in bytes ("16Gi"), gpu, userSlots (pods) and network as whole
// numbers.
type Resources struct {
	UserSlots *resource.Quantity `json:"userSlots,omitempty"`
	CPU       *resource.Quantity `json:"cpu,omitempty"`
	GPU       *resource.Quantity `json:"gpu,omitempty"`
	Memory    *resource.Quantity `json:"memory,omitempty"`
	Network   *resource.Quantity `json:"network,omitempty"`
}

// IntegralGuarantees are an integral pool's settings.
type IntegralGuarantees struct {
	GuaranteeType                           string     `json:"guaranteeType,omitempty"`
	ResourceFlow                            *Resources `json:"resourceFlow,omitempty"`
	BurstGuaranteeResources                 *Resources `json:"burstGuaranteeResources,omitempty"`
	RelaxedShareMultiplierLimit             *float64   `json:"relaxedShareMultiplierLimit,omitempty"`
	CanAcceptFreeVolume                     *bool      `json:"canAcceptFreeVolume,omitempty"`
	ShouldDistributeFreeVolumeAmongChildren *bool      `json:"shouldDistributeFreeVolumeAmongChildren,omitempty"`
}

// Status is what fairsched-kube writes back: the pool as of the server's
// last fair-share update (shares are of the dominant resource, in [0, 1]).
type Status struct {
	FairShare          float64 `json:"fairShare"`
	Usage              float64 `json:"usage"`
	Demand             float64 `json:"demand"`
	Satisfaction       float64 `json:"satisfaction"`
	Starving           bool    `json:"starving"`
	StarvationStatus   string  `json:"starvationStatus,omitempty"`
	DominantResource   string  `json:"dominantResource,omitempty"`
	RunningOperations  int64   `json:"runningOperations"`
	PendingOperations  int64   `json:"pendingOperations"`
	ObservedGeneration int64   `json:"observedGeneration,omitempty"`
	// Message is why the pool could not be mirrored to the server ("":
	// it is).
	Message string `json:"message,omitempty"`
}

// Pool is one Pool object: its name, generation and spec.
type Pool struct {
	Name       string
	Generation int64
	Spec       Spec
}

// FromUnstructured reads a Pool object; an error names the field.
func FromUnstructured(u *unstructured.Unstructured) (Pool, error) {
	p := Pool{Name: u.GetName(), Generation: u.GetGeneration()}
	spec, ok := u.Object["spec"]
	if !ok {
		return p, nil
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return p, fmt.Errorf("cannot read pool %s: %w", p.Name, err)
	}
	if err := json.Unmarshal(b, &p.Spec); err != nil {
		return p, fmt.Errorf("cannot read pool %s's spec: %w", p.Name, err)
	}
	return p, nil
}

// ToAPI is the body of PUT /api/v1/pools/{name} for spec.
func (s Spec) ToAPI() client.Pool {
	p := client.Pool{
		Parent:                               s.Parent,
		Mode:                                 s.Mode,
		StrongGuaranteeResources:             s.StrongGuaranteeResources.toAPI(),
		MaxOperationCount:                    s.MaxOperationCount,
		MaxRunningOperationCount:             s.MaxRunningOperationCount,
		FifoSortParameters:                   slices.Clone(s.FifoSortParameters),
		FairShareStarvationTimeoutS:          s.FairShareStarvationTimeoutSeconds,
		FairShareStarvationTolerance:         s.FairShareStarvationTolerance,
		EnableAggressiveStarvation:           s.EnableAggressiveStarvation,
		AllowAggressivePreemption:            s.AllowAggressivePreemption,
		AllowNormalPreemption:                s.AllowNormalPreemption,
		NonPreemptibleResourceUsageThreshold: s.NonPreemptibleResourceUsageThreshold.toAPI(),
		SchedulingTagFilter:                  s.SchedulingTagFilter,
	}
	if s.Weight != nil {
		p.Weight = *s.Weight
	}
	if s.ResourceLimits != nil {
		p.ResourceLimits = s.ResourceLimits.limits()
	}
	if g := s.IntegralGuarantees; g != nil {
		p.IntegralGuarantees = &client.IntegralGuarantees{
			GuaranteeType:                           g.GuaranteeType,
			ResourceFlow:                            g.ResourceFlow.toAPI(),
			BurstGuaranteeResources:                 g.BurstGuaranteeResources.toAPI(),
			RelaxedShareMultiplierLimit:             g.RelaxedShareMultiplierLimit,
			CanAcceptFreeVolume:                     g.CanAcceptFreeVolume,
			ShouldDistributeFreeVolumeAmongChildren: g.ShouldDistributeFreeVolumeAmongChildren,
		}
	}
	return p
}

func (r *Resources) toAPI() *client.Resources {
	if r == nil {
		return nil
	}
	return &client.Resources{
		UserSlots: whole(r.UserSlots),
		CPU:       cores(r.CPU),
		GPU:       whole(r.GPU),
		Memory:    whole(r.Memory),
		Network:   whole(r.Network),
	}
}

// limits are r as resource limits: only the amounts it sets limit.
func (r *Resources) limits() client.Limits {
	l := client.Limits{}
	if r.UserSlots != nil {
		l[client.ResourceUserSlots] = float64(whole(r.UserSlots))
	}
	if r.CPU != nil {
		l[client.ResourceCPU] = cores(r.CPU)
	}
	if r.GPU != nil {
		l[client.ResourceGPU] = float64(whole(r.GPU))
	}
	if r.Memory != nil {
		l[client.ResourceMemory] = float64(whole(r.Memory))
	}
	if r.Network != nil {
		l[client.ResourceNetwork] = float64(whole(r.Network))
	}
	return l
}

func whole(q *resource.Quantity) int64 {
	if q == nil {
		return 0
	}
	return q.Value()
}

func cores(q *resource.Quantity) float64 {
	if q == nil {
		return 0
	}
	return float64(q.MilliValue()) / 1000
}

// StatusOf is the status of a pool from its orchid.
func StatusOf(o client.PoolOrchid, generation int64) Status {
	d := dominant(o.DominantResource)
	return Status{
		FairShare:          d(o.FairShare),
		Usage:              d(o.UsageShare),
		Demand:             d(o.DemandShare),
		Satisfaction:       min(o.SatisfactionRatio, 1e9),
		Starving:           o.StarvationStatus != "" && o.StarvationStatus != "non_starving",
		StarvationStatus:   o.StarvationStatus,
		DominantResource:   o.DominantResource,
		RunningOperations:  o.RunningOperationCount,
		PendingOperations:  o.PendingOperationCount,
		ObservedGeneration: generation,
	}
}

// dominant picks a share's amount of resource name (the largest amount
// when name is not one of the five).
func dominant(name string) func(client.Share) float64 {
	return func(s client.Share) float64 {
		switch name {
		case client.ResourceUserSlots:
			return s.UserSlots
		case client.ResourceCPU:
			return s.CPU
		case client.ResourceGPU:
			return s.GPU
		case client.ResourceMemory:
			return s.Memory
		case client.ResourceNetwork:
			return s.Network
		}
		return max(s.UserSlots, s.CPU, s.GPU, s.Memory, s.Network)
	}
}

// ParentFirst orders pools so that each comes after its parent when the
// parent is among them (a pool whose parent is not among them comes in
// name order with the roots); a cycle's members come last, in name order.
func ParentFirst(pools []Pool) []Pool {
	byName := map[string]Pool{}
	for _, p := range pools {
		byName[p.Name] = p
	}
	names := make([]string, 0, len(pools))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]Pool, 0, len(pools))
	done := map[string]bool{}
	for len(out) < len(byName) {
		progressed := false
		for _, n := range names {
			if done[n] {
				continue
			}
			parent := byName[n].Spec.Parent
			if _, ours := byName[parent]; ours && !done[parent] && parent != n {
				continue
			}
			done[n] = true
			out = append(out, byName[n])
			progressed = true
		}
		if !progressed {
			for _, n := range names {
				if !done[n] {
					done[n] = true
					out = append(out, byName[n])
				}
			}
		}
	}
	return out
}
