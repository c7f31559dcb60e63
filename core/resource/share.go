package resource

import "math"

// Share constants (docs/semantics.md#the-cluster-and-its-resources).
const (
	Epsilon                   = 1e-9
	LargeEpsilon              = 1e-4
	InfiniteResourceAmount    = 1e10
	InfiniteSatisfactionRatio = 1e9
)

// Share is a resource vector of fractions of the cluster's total resources.
type Share [Count]float64

// Ones is the share with every component 1.
func Ones() Share { return Share{1, 1, 1, 1, 1} }

// Uniform returns the share with every component v (the reference's FromDouble).
func Uniform(v float64) Share { return Share{v, v, v, v, v} }

// EpsilonShare is Uniform(Epsilon).
func EpsilonShare() Share { return Uniform(Epsilon) }

// FromResources returns x/total per component; a component whose total is 0
// is 0, both for 0/0 and for x/0 (docs/semantics.md#the-cluster-and-its-resources).
func FromResources(x, total Vec) Share {
	var s Share
	for i := range x {
		if total[i] != 0 {
			s[i] = float64(x[i]) / float64(total[i])
		}
	}
	return s
}

// Add returns a+b.
func (a Share) Add(b Share) Share {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// Sub returns a-b.
func (a Share) Sub(b Share) Share {
	for i := range a {
		a[i] -= b[i]
	}
	return a
}

// Mul returns a×k.
func (a Share) Mul(k float64) Share {
	for i := range a {
		a[i] *= k
	}
	return a
}

// Min returns the component-wise minimum.
func (a Share) Min(b Share) Share {
	for i := range a {
		a[i] = min(a[i], b[i])
	}
	return a
}

// Max returns the component-wise maximum.
func (a Share) Max(b Share) Share {
	for i := range a {
		a[i] = max(a[i], b[i])
	}
	return a
}

// Dominates reports whether a[r] ≥ b[r] for every resource.
func (a Share) Dominates(b Share) bool {
	for i := range a {
		if a[i] < b[i] {
			return false
		}
	}
	return true
}

// StrictlyDominates reports whether a[r] > b[r] for every resource.
func (a Share) StrictlyDominates(b Share) bool {
	for i := range a {
		if a[i] <= b[i] {
			return false
		}
	}
	return true
}

// Near reports whether |a[r]-b[r]| ≤ eps for every resource.
func (a Share) Near(b Share, eps float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > eps {
			return false
		}
	}
	return true
}

// MaxComponent returns the largest component.
func (a Share) MaxComponent() float64 {
	m := a[0]
	for _, v := range a[1:] {
		m = max(m, v)
	}
	return m
}

// MinComponent returns the smallest component.
func (a Share) MinComponent() float64 {
	m := a[0]
	for _, v := range a[1:] {
		m = min(m, v)
	}
	return m
}

// IsZero reports whether every component is zero.
func (a Share) IsZero() bool { return a == Share{} }

// Less is the component order used where a total order of shares is needed
// (sorting, deduplication): lexicographic.
func (a Share) Less(b Share) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
