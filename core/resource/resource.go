// Package resource holds fairsched's fixed-size resource vectors (docs/semantics.md#the-cluster-and-its-resources).
//
// A Vec is an absolute amount of the five resources, in their fixed order
// user_slots, cpu, gpu, memory, network. Every component is an int64; cpu is
// kept in centi-cores so that fractional amounts such as 11.17 cores are exact.
// A Share is the same five resources as fractions of the cluster's total.
//
// Both are plain arrays: they are compared with ==, copied by value and never
// allocate. The package is the leaf of core/ and imports nothing of fairsched.
package resource

import (
	"math"
	"strconv"
)

// Kind names one resource dimension. The order is fixed (docs/semantics.md#the-cluster-and-its-resources).
type Kind int

// The five resources, in the order of the reference's vectors.
const (
	UserSlots Kind = iota
	CPU
	GPU
	Memory
	Network
)

// Count is the number of resource dimensions.
const Count = 5

// CPUScale is the number of cpu units in one core: cpu is stored in centi-cores.
const CPUScale = 100

var kindNames = [Count]string{"user_slots", "cpu", "gpu", "memory", "network"}

// String returns the resource's wire name.
func (k Kind) String() string {
	if k < 0 || k >= Count {
		return "resource(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// KindByName returns the resource with the given wire name.
func KindByName(name string) (Kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// Names returns the wire names in resource order.
func Names() [Count]string { return kindNames }

// MaxAmount is the largest amount a single component may hold: 2^53, the
// largest integer a JSON number carries exactly (docs/api.md#conventions). cpu is bounded by
// the same number of centi-cores.
const MaxAmount = 1 << 53

// Infinite is the "no limit" amount of every component: the reference uses
// max/4 of each type, which keeps sums of a few infinities from overflowing.
const Infinite = math.MaxInt64 / 4

// Vec is an absolute resource vector; Vec[CPU] is in centi-cores.
type Vec [Count]int64

// InfiniteVec returns a vector with every component infinite.
func InfiniteVec() Vec {
	return Vec{Infinite, Infinite, Infinite, Infinite, Infinite}
}

// Add returns a+b.
func (a Vec) Add(b Vec) Vec {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// AddCapped returns a+b with every component capped at MaxAmount, for sums
// whose number of terms nothing bounds (the resources of every registered
// node): they never wrap, whatever the terms are (each in [0, MaxAmount]).
func (a Vec) AddCapped(b Vec) Vec {
	for i := range a {
		a[i] = min(a[i]+b[i], MaxAmount)
	}
	return a
}

// Sub returns a-b.
func (a Vec) Sub(b Vec) Vec {
	for i := range a {
		a[i] -= b[i]
	}
	return a
}

// Min returns the component-wise minimum.
func (a Vec) Min(b Vec) Vec {
	for i := range a {
		a[i] = min(a[i], b[i])
	}
	return a
}

// Max returns the component-wise maximum.
func (a Vec) Max(b Vec) Vec {
	for i := range a {
		a[i] = max(a[i], b[i])
	}
	return a
}

// Mul returns a×k with every component rounded to the nearest integer, as the
// reference's job-resources multiplication does.
func (a Vec) Mul(k float64) Vec {
	for i := range a {
		a[i] = int64(math.Round(float64(a[i]) * k))
	}
	return a
}

// Scale returns a×n.
func (a Vec) Scale(n int64) Vec {
	for i := range a {
		a[i] *= n
	}
	return a
}

// IsZero reports whether every component is zero.
func (a Vec) IsZero() bool { return a == Vec{} }

// Dominates reports whether a[r] ≥ b[r] for every resource.
func (a Vec) Dominates(b Vec) bool {
	for i := range a {
		if a[i] < b[i] {
			return false
		}
	}
	return true
}

// StrictlyDominates reports whether a[r] > b[r] for every resource.
func (a Vec) StrictlyDominates(b Vec) bool {
	for i := range a {
		if a[i] <= b[i] {
			return false
		}
	}
	return true
}

// Float returns component k as a plain number (cpu in cores).
func (a Vec) Float(k Kind) float64 {
	if k == CPU {
		return float64(a[k]) / CPUScale
	}
	return float64(a[k])
}

// SetFloat sets component k from a plain number (cpu in cores), rounding cpu
// to the nearest centi-core and the others to the nearest integer.
func (a *Vec) SetFloat(k Kind, v float64) {
	if k == CPU {
		v *= CPUScale
	}
	a[k] = int64(math.Round(v))
}

// Cores returns a cpu amount in centi-cores for a number of cores.
func Cores(c float64) int64 { return int64(math.Round(c * CPUScale)) }

// String formats the vector with resource names, cpu in cores.
func (a Vec) String() string {
	b := make([]byte, 0, 96)
	b = append(b, '{')
	for k := Kind(0); k < Count; k++ {
		if k > 0 {
			b = append(b, ", "...)
		}
		b = append(b, kindNames[k]...)
		b = append(b, ": "...)
		b = strconv.AppendFloat(b, a.Float(k), 'g', -1, 64)
	}
	return string(append(b, '}'))
}

// GetMaxResourceRatio returns max over resources with total > 0 of x/total
// (0 when total has no positive component).
func GetMaxResourceRatio(x, total Vec) float64 {
	r := 0.0
	for i := range x {
		if total[i] > 0 {
			r = max(r, float64(x[i])/float64(total[i]))
		}
	}
	return r
}

// GetMinResourceRatio returns min over resources with total > 0 of x/total
// (0 when total has no positive component).
func GetMinResourceRatio(x, total Vec) float64 {
	r, any := 0.0, false
	for i := range x {
		if total[i] > 0 {
			v := float64(x[i]) / float64(total[i])
			if !any || v < r {
				r = v
			}
			any = true
		}
	}
	return r
}

// DominantResource returns argmax over resources with total > 0 of
// demand/total; ties go to the first in order and an all-zero demand gives cpu.
func DominantResource(demand, total Vec) Kind {
	best, bestRatio := CPU, -1.0
	for i := range demand {
		if total[i] > 0 {
			v := float64(demand[i]) / float64(total[i])
			if v > bestRatio {
				best, bestRatio = Kind(i), v
			}
		}
	}
	if bestRatio <= 0 {
		return CPU
	}
	return best
}
