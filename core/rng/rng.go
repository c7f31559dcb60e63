// Package rng is the seeded pseudo-random state the core uses wherever it needs
// randomness (tie-breaking, victim sampling, simulation).
//
// The core has no global randomness: every random decision draws from a
// Rand owned by the caller and seeded explicitly, so a run is reproducible from its seed.
//
// Rand is a small value type (16 bytes) holding a math/rand/v2 PCG (PCG-DXSM, 128 bits of
// state). It can be embedded in other structs, copied to replay an identical stream, and
// never allocates. Its zero value is a valid, deterministic generator (PCG state (0, 0)),
// distinct from New(0). A Rand is not safe for concurrent use; give each goroutine or shard
// its own, derived with Fork.
//
// NB: the derived distributions are implemented here rather than through rand.Rand, for
// two reasons. rand.Rand reaches its source through an interface, which makes every
// *Rand passed to it escape to the heap; and owning the algorithms keeps sequences stable
// across Go releases and architectures. The bounded-integer, Float64 and Shuffle
// algorithms are math/rand/v2's (Lemire's multiply-shift with rejection), so on 64-bit
// platforms they return exactly what rand.New(pcg) would for the same PCG state (asserted
// by TestMatchesMathRandV2). ExpFloat64 and NormFloat64 use inversion and Box–Muller
// instead of math/rand/v2's ziggurat tables: same distributions, different sequences.
package rng

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// Rand is a seeded PCG generator. See the package documentation for the contract.
type Rand struct {
	pcg rand.PCG
}

// New returns a generator seeded with seed. Equal seeds give equal sequences.
//
// NB: the 64-bit seed is expanded into PCG's two 64-bit state words with splitmix64, so
// that small neighbouring seeds (1, 2, 3, …) start from well-separated states.
func New(seed uint64) Rand {
	var r Rand
	r.Seed(seed)
	return r
}

// Seed resets r to the state New(seed) returns.
func (r *Rand) Seed(seed uint64) {
	s1 := splitmix64(&seed)
	s2 := splitmix64(&seed)
	r.pcg.Seed(s1, s2)
}

// Fork returns a new generator seeded from two draws of r, advancing r. Use it to hand
// separate streams to shards or simulated entities without sharing state; the child is
// deterministic given r's state.
func (r *Rand) Fork() Rand {
	var c Rand
	c.pcg.Seed(r.pcg.Uint64(), r.pcg.Uint64())
	return c
}

// Uint64 returns a uniformly distributed 64-bit value.
func (r *Rand) Uint64() uint64 { return r.pcg.Uint64() }

// Uint32 returns a uniformly distributed 32-bit value.
func (r *Rand) Uint32() uint32 { return uint32(r.pcg.Uint64() >> 32) }

// Int64 returns a uniformly distributed non-negative int64.
func (r *Rand) Int64() int64 { return int64(r.pcg.Uint64() &^ (1 << 63)) }

// IntN returns a uniformly distributed int in [0, n). It panics if n <= 0.
func (r *Rand) IntN(n int) int {
	if n <= 0 {
		panic("rng: invalid argument to IntN")
	}
	return int(r.uint64n(uint64(n)))
}

// Int32N returns a uniformly distributed int32 in [0, n), for picking int32 element ids.
// It panics if n <= 0.
func (r *Rand) Int32N(n int32) int32 {
	if n <= 0 {
		panic("rng: invalid argument to Int32N")
	}
	return int32(r.uint64n(uint64(n)))
}

// Int64N returns a uniformly distributed int64 in [0, n). It panics if n <= 0.
func (r *Rand) Int64N(n int64) int64 {
	if n <= 0 {
		panic("rng: invalid argument to Int64N")
	}
	return int64(r.uint64n(uint64(n)))
}

// Uint64N returns a uniformly distributed uint64 in [0, n). It panics if n == 0.
func (r *Rand) Uint64N(n uint64) uint64 {
	if n == 0 {
		panic("rng: invalid argument to Uint64N")
	}
	return r.uint64n(n)
}

// uint64n is Uint64N without the argument check: Lemire's multiply-shift reduction with
// rejection, exactly uniform (math/rand/v2's uint64n without its 32-bit special case).
func (r *Rand) uint64n(n uint64) uint64 {
	if n&(n-1) == 0 { // power of two: mask
		return r.pcg.Uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(r.pcg.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), n)
		}
	}
	return hi
}

// Float64 returns a uniformly distributed float64 in [0.0, 1.0), a multiple of 2⁻⁵³.
func (r *Rand) Float64() float64 {
	return float64(r.pcg.Uint64()<<11>>11) / (1 << 53)
}

// ExpFloat64 returns an exponentially distributed float64 in [0, 37) with rate 1
// (mean 1). Divide by λ for rate λ, e.g. Poisson inter-arrival times. It draws exactly
// one Uint64.
func (r *Rand) ExpFloat64() float64 {
	// Inversion: -ln(1-U) with U in [0, 1), so the argument of Log is in (0, 1].
	return -math.Log(1 - r.Float64())
}

// NormFloat64 returns a normally distributed float64 with mean 0 and standard
// deviation 1. It draws exactly two Uint64s (Box–Muller; the second variate is
// discarded so that Rand carries no extra state).
func (r *Rand) NormFloat64() float64 {
	u1 := 1 - r.Float64() // (0, 1]
	u2 := r.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// Perm returns a random permutation of [0, n) in a newly allocated slice. Use AppendPerm
// to reuse a buffer. It panics if n < 0.
func (r *Rand) Perm(n int) []int { return r.AppendPerm(nil, n) }

// AppendPerm appends a random permutation of [0, n) to dst and returns the extended
// slice; it allocates only when dst lacks capacity. It panics if n < 0.
func (r *Rand) AppendPerm(dst []int, n int) []int {
	if n < 0 {
		panic("rng: invalid argument to Perm")
	}
	base := len(dst)
	for i := range n {
		dst = append(dst, i)
	}
	p := dst[base:]
	for i := len(p) - 1; i > 0; i-- {
		j := int(r.uint64n(uint64(i + 1)))
		p[i], p[j] = p[j], p[i]
	}
	return dst
}

// Shuffle pseudo-randomizes the order of n elements with a Fisher–Yates shuffle; swap
// swaps the elements with indexes i and j. It panics if n < 0.
func (r *Rand) Shuffle(n int, swap func(i, j int)) {
	if n < 0 {
		panic("rng: invalid argument to Shuffle")
	}
	for i := n - 1; i > 0; i-- {
		j := int(r.uint64n(uint64(i + 1)))
		swap(i, j)
	}
}

// splitmix64 advances *x and returns the next splitmix64 output.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
