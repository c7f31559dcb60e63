package clock

import (
	"math"
	"slices"
	"testing"
)

func TestFromSeconds(t *testing.T) {
	f := func(s float64, want Time) {
		t.Helper()
		if got := FromSeconds(s); got != want {
			t.Fatalf("FromSeconds(%v): got %d, want %d", s, got, want)
		}
		if got := DurationFromSeconds(s); got != Duration(want) {
			t.Fatalf("DurationFromSeconds(%v): got %d, want %d", s, got, want)
		}
	}
	f(0, 0)
	f(1, 1_000_000)
	f(-1, -1_000_000)
	f(0.2, 200_000)
	f(1.5, 1_500_000)
	f(1e-6, 1)
	f(4e-7, 0)   // rounds down
	f(6e-7, 1)   // rounds up
	f(-6e-7, -1) // rounds away from zero
	f(86400.000001, 86_400_000_001)
	f(math.Inf(1), Never)
	f(math.Inf(-1), MinTime)
	f(1e300, Never)
	f(-1e300, MinTime)
	f(math.NaN(), 0)
	f(9.223372036854775e12, Never) // just past the range after rounding to float64
}

func TestSecondsRoundTrip(t *testing.T) {
	for _, us := range []int64{0, 1, -1, 999_999, 1_000_000, 123_456_789, -987_654_321, 1 << 52} {
		if got := FromSeconds(Time(us).Seconds()); got != Time(us) {
			t.Fatalf("FromSeconds(Time(%d).Seconds()) = %d", us, got)
		}
		if got := DurationFromSeconds(Duration(us).Seconds()); got != Duration(us) {
			t.Fatalf("DurationFromSeconds(Duration(%d).Seconds()) = %d", us, got)
		}
	}
	if got := (90 * Second).Seconds(); got != 90 {
		t.Fatalf("(90*Second).Seconds() = %v", got)
	}
	if got := Time(2_500_000).Micros(); got != 2_500_000 {
		t.Fatalf("Micros() = %d", got)
	}
}

func TestConstants(t *testing.T) {
	if Hour != 3_600_000_000 || Minute != 60_000_000 || Second != 1_000_000 || Millisecond != 1000 {
		t.Fatalf("unexpected constants: h=%d m=%d s=%d ms=%d", Hour, Minute, Second, Millisecond)
	}
}

func TestAddSub(t *testing.T) {
	f := func(a Time, d Duration, want Time) {
		t.Helper()
		if got := a.Add(d); got != want {
			t.Fatalf("%d.Add(%d): got %d, want %d", a, d, got, want)
		}
	}
	f(0, Second, 1_000_000)
	f(5*Time(Second), -2*Second, 3_000_000)
	f(-10, 3, -7)
	f(Never, Second, Never)
	f(Never, -1, Never-1)
	f(Never-5, 10, Never)
	f(MinTime, -1, MinTime)
	f(MinTime+5, -10, MinTime)
	f(MinTime, MaxDuration, -1)
	f(1, MinDuration, MinTime+1)

	g := func(a, b Time, want Duration) {
		t.Helper()
		if got := a.Sub(b); got != want {
			t.Fatalf("%d.Sub(%d): got %d, want %d", a, b, got, want)
		}
	}
	g(3_000_000, 1_000_000, 2*Second)
	g(1_000_000, 3_000_000, -2*Second)
	g(Never, Never, 0)
	g(Never, 0, MaxDuration)
	g(Never, -1, MaxDuration)
	g(0, MinTime, MaxDuration)
	g(-1, MinTime, MaxDuration)
	g(MinTime, 1, MinDuration)
	g(-2, Never, MinDuration)
	g(-1, Never, MinDuration)
	g(MinTime, MinTime, 0)
}

func TestCompare(t *testing.T) {
	ts := []Time{Never, 3, -1, 0, MinTime, 3}
	slices.SortFunc(ts, Time.Compare)
	if want := []Time{MinTime, -1, 0, 3, 3, Never}; !slices.Equal(ts, want) {
		t.Fatalf("sorted: got %v, want %v", ts, want)
	}
	if !Time(1).Before(2) || Time(2).Before(2) || !Time(3).After(2) || Time(2).After(2) {
		t.Fatalf("Before/After disagree with <, >")
	}
}

func TestString(t *testing.T) {
	f := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	f(Time(0).String(), "0.000000s")
	f(Time(12_000_250).String(), "12.000250s")
	f(Time(-1).String(), "-0.000001s")
	f(Never.String(), "never")
	f(MinTime.String(), "-9223372036854.775808s")
	f((1500 * Millisecond).String(), "1.500000s")
	f((-90 * Second).String(), "-90.000000s")
	f(MaxDuration.String(), "9223372036854.775807s")
}

func TestManual(t *testing.T) {
	var z Manual
	if z.Now() != 0 {
		t.Fatalf("zero Manual reads %v", z.Now())
	}
	m := NewManual(FromSeconds(10))
	var c Clock = m
	if got := c.Now(); got != 10*Time(Second) {
		t.Fatalf("Now() = %v, want 10s", got)
	}
	if got := m.Advance(250 * Millisecond); got != 10_250_000 || c.Now() != 10_250_000 {
		t.Fatalf("Advance returned %v, Now %v; want 10.25s", got, c.Now())
	}
	m.Advance(0)
	m.Set(5)
	if got := c.Now(); got != 5 {
		t.Fatalf("after Set(5): Now() = %v", got)
	}
	m.Set(Never - 1)
	if got := m.Advance(Hour); got != Never {
		t.Fatalf("Advance past Never: %v", got)
	}

	defer func() {
		if r := recover(); r == nil {
			t.Fatalf("Advance(-1) did not panic")
		}
	}()
	m.Advance(-1)
}

func TestFunc(t *testing.T) {
	n := Time(0)
	var c Clock = Func(func() Time { n += 7; return n })
	if a, b := c.Now(), c.Now(); a != 7 || b != 14 {
		t.Fatalf("Func clock returned %v, %v", a, b)
	}
}
