// Package clock is the core's notion of time: an integer count of virtual microseconds
// and the Clock interface through which the caller supplies it.
//
// The core has no clock of its own: it never reads the wall clock, sleeps
// or sets timers, and this package does not import "time". Entry points take a Time
// argument; the facade implements Clock with the wall clock, tests and simulations use
// Manual. Times are microseconds since an arbitrary epoch chosen by the caller, so a
// simulation can start at 0 and a server at its start-up instant.
//
// NB: integer microseconds rather than float64 seconds: sums and differences are exact,
// comparisons are total (no NaN), and ±292,000 years of range is ample. Conversions from
// seconds round to the nearest microsecond and saturate.
package clock

import (
	"math"
	"strconv"
)

// Time is an instant in virtual microseconds since the caller's epoch.
type Time int64

// Duration is a span of virtual time in microseconds; it may be negative.
type Duration int64

// Common durations.
const (
	Microsecond Duration = 1
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
	Minute               = 60 * Second
	Hour                 = 60 * Minute
)

// Sentinel instants. Never is later than any instant a clock reports and is the
// conventional "no deadline" value; Add and Sub saturate at these bounds, so arithmetic on
// Never stays Never.
const (
	MinTime Time = math.MinInt64
	Never   Time = math.MaxInt64
)

// MaxDuration and MinDuration bound Duration; Sub saturates at them.
const (
	MaxDuration Duration = math.MaxInt64
	MinDuration Duration = math.MinInt64
)

// FromSeconds returns the instant s seconds after the epoch, rounded to the nearest
// microsecond. Values beyond the range of Time saturate to MinTime or Never; NaN maps to
// 0. Callers that accept external input should reject NaN and infinities first.
func FromSeconds(s float64) Time { return Time(secondsToMicros(s)) }

// DurationFromSeconds returns a Duration of s seconds, rounded to the nearest
// microsecond, with the same saturation and NaN rules as FromSeconds.
func DurationFromSeconds(s float64) Duration { return Duration(secondsToMicros(s)) }

func secondsToMicros(s float64) int64 {
	us := math.Round(s * 1e6)
	switch {
	case us != us: // NaN
		return 0
	case us >= math.MaxInt64: // float64(MaxInt64) is 2⁶³, which is out of range
		return math.MaxInt64
	case us <= math.MinInt64:
		return math.MinInt64
	}
	return int64(us)
}

// Seconds returns t as seconds since the epoch.
func (t Time) Seconds() float64 { return float64(t) / 1e6 }

// Micros returns t as microseconds since the epoch.
func (t Time) Micros() int64 { return int64(t) }

// Add returns t+d, saturating at MinTime and Never.
func (t Time) Add(d Duration) Time {
	s := t + Time(d)
	// Overflow iff the operands have the same sign and the sum's sign differs.
	if (t >= 0) == (d >= 0) && (s >= 0) != (t >= 0) {
		if t >= 0 {
			return Never
		}
		return MinTime
	}
	return s
}

// Sub returns the duration t-u, saturating at MinDuration and MaxDuration.
func (t Time) Sub(u Time) Duration {
	d := Duration(t - u)
	// Overflow iff the operands have different signs and the difference's sign is u's.
	if (t >= 0) != (u >= 0) && (d >= 0) != (t >= 0) {
		if t >= 0 {
			return MaxDuration
		}
		return MinDuration
	}
	return d
}

// Before reports whether t is before u.
func (t Time) Before(u Time) bool { return t < u }

// After reports whether t is after u.
func (t Time) After(u Time) bool { return t > u }

// Compare returns -1, 0 or +1 as t is before, equal to or after u (for slices.SortFunc).
func (t Time) Compare(u Time) int {
	switch {
	case t < u:
		return -1
	case t > u:
		return +1
	}
	return 0
}

// String formats t as seconds since the epoch with microsecond precision, e.g.
// "12.000250s"; Never prints as "never".
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	return string(appendMicros(nil, int64(t)))
}

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return float64(d) / 1e6 }

// Micros returns d in microseconds.
func (d Duration) Micros() int64 { return int64(d) }

// Scale returns d·f rounded to the nearest microsecond, saturating like
// DurationFromSeconds (the starvation timeouts of operations with few pending
// jobs are scaled so).
func (d Duration) Scale(f float64) Duration { return Duration(secondsToMicros(float64(d) * f / 1e6)) }

// String formats d in seconds with microsecond precision, e.g. "-1.500000s".
func (d Duration) String() string { return string(appendMicros(nil, int64(d))) }

// appendMicros appends us as decimal seconds with six fractional digits and an "s" suffix.
func appendMicros(dst []byte, us int64) []byte {
	u := uint64(us)
	if us < 0 {
		dst = append(dst, '-')
		u = -u // two's complement: correct for MinInt64 too
	}
	dst = strconv.AppendUint(dst, u/1e6, 10)
	frac := u % 1e6
	dst = append(dst, '.')
	for div := uint64(1e5); div > 0; div /= 10 {
		dst = append(dst, byte('0'+frac/div%10))
	}
	return append(dst, 's')
}

// Clock supplies the current time. The facade implements it with the wall clock; the core
// only ever receives Times, never a Clock, except in harnesses that drive it.
// Implementations used from several goroutines must be safe for concurrent use.
type Clock interface {
	Now() Time
}

// Func adapts a function to the Clock interface.
type Func func() Time

// Now returns f().
func (f Func) Now() Time { return f() }

// Manual is a Clock that moves only when told to, for tests and simulations. Its zero
// value reads 0. It is not safe for concurrent use.
type Manual struct {
	now Time
}

// NewManual returns a Manual clock reading t.
func NewManual(t Time) *Manual { return &Manual{now: t} }

// Now returns the time last set.
func (m *Manual) Now() Time { return m.now }

// Set moves the clock to t, which may be earlier than the current reading (to test
// clock skew).
func (m *Manual) Set(t Time) { m.now = t }

// Advance moves the clock forward by d and returns the new reading. It panics if d is
// negative: going back in time is Set's job.
func (m *Manual) Advance(d Duration) Time {
	if d < 0 {
		panic("clock: cannot advance a Manual clock by a negative duration " + d.String())
	}
	m.now = m.now.Add(d)
	return m.now
}

var _ Clock = (*Manual)(nil)
var _ Clock = Func(nil)
