package jsonpath

import (
	"math"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/resource"
)

// The accessors below take a generic value v (as Decode returns it) at path
// and return it typed, or a wrong_type error ("want an object", …) when it has
// another JSON type and an invalid_value error when it is out of range. None
// of them accepts null; decoders that give null a meaning check for nil first.

// Object returns v as an object.
func Object(path string, v any) (map[string]any, *Error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, WrongType(path, v, "an object")
	}
	return m, nil
}

// Array returns v as an array.
func Array(path string, v any) ([]any, *Error) {
	a, ok := v.([]any)
	if !ok {
		return nil, WrongType(path, v, "an array")
	}
	return a, nil
}

// String returns v as a string.
func String(path string, v any) (string, *Error) {
	s, ok := v.(string)
	if !ok {
		return "", WrongType(path, v, "a string")
	}
	return s, nil
}

// Bool returns v as true or false.
func Bool(path string, v any) (bool, *Error) {
	b, ok := v.(bool)
	if !ok {
		return false, WrongType(path, v, "true or false")
	}
	return b, nil
}

// MaxMagnitude is the largest magnitude a number may have: 2^53, the
// largest range in which float64 holds every integer exactly (docs/api.md#conventions).
const MaxMagnitude = 1 << 53

// Number returns v as a finite float64 of magnitude at most 2^53. A number
// written above 2^53 is refused even when it rounds to 2^53
// (9007199254740993 would otherwise be taken as 9007199254740992): every
// endpoint refuses such values alike, as the heartbeat's scanner does.
func Number(path string, v any) (float64, *Error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, WrongType(path, v, "a number")
	}
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, Invalid(path, v, "a finite number")
	}
	if a := math.Abs(x); a > MaxMagnitude || a == MaxMagnitude && !atMostTwoPow53(string(n)) {
		if x < 0 {
			return 0, Invalid(path, v, "at least -2^53 (-9007199254740992)")
		}
		return 0, Invalid(path, v, "at most 2^53 (9007199254740992)")
	}
	return x, nil
}

// atMostTwoPow53 reports whether the number token lit, which ParseFloat
// rounds to ±2^53, is at most 2^53 in magnitude however it is written
// (9.007199254740992e15, 9007199254740991.5): its significant digits and
// the position of its decimal point are compared with 2^53's, without
// arithmetic on the literal.
func atMostTwoPow53(lit string) bool {
	const p53 = "9007199254740992"
	lit = strings.TrimPrefix(lit, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) // digits before the decimal point
	if exp != "" {
		if len(exp) > 12 {
			return false // ±2^53 needs no such exponent
		}
		e, err := strconv.Atoi(exp)
		if err != nil {
			return false
		}
		point += e
	}
	lead := len(digits) - len(strings.TrimLeft(digits, "0"))
	digits, point = strings.TrimRight(digits[lead:], "0"), point-lead
	switch {
	case point != len(p53):
		return point < len(p53)
	case len(digits) <= len(p53):
		return digits+strings.Repeat("0", len(p53)-len(digits)) <= p53
	}
	return digits[:len(p53)] < p53
}

// Float returns v as a finite float64 of any magnitude. Number bounds
// amounts by 2^53 so that they stay whole and exact; a measured quantity
// such as an accumulated volume in resource·seconds is a float that the
// server itself lets grow past 2^53, and needs only to be finite.
func Float(path string, v any) (float64, *Error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, WrongType(path, v, "a number")
	}
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, Invalid(path, v, "a finite number")
	}
	return x, nil
}

// Range returns v as a number in [lo, hi] (hi may be +Inf); want describes
// the range in the error.
func Range(path string, v any, lo, hi float64, want string) (float64, *Error) {
	x, e := Number(path, v)
	if e != nil {
		return 0, e
	}
	if x < lo || x > hi {
		return 0, Invalid(path, v, want)
	}
	return x, nil
}

// Positive returns v as a finite number > 0.
func Positive(path string, v any) (float64, *Error) {
	// NB: every float64 > 0 is at least the smallest denormal.
	return Range(path, v, math.SmallestNonzeroFloat64, math.MaxFloat64, "a positive number")
}

// Whole returns v as a whole number in [lo, hi]; want describes the range in
// the error. lo and hi must lie in [-2^53, 2^53].
func Whole(path string, v any, lo, hi float64, want string) (int64, *Error) {
	x, e := Number(path, v)
	if e != nil {
		return 0, e
	}
	if x < lo || x > hi || x != math.Trunc(x) {
		return 0, Invalid(path, v, want)
	}
	return int64(x), nil
}

// Count returns v as a whole number in [0, 2^53].
func Count(path string, v any) (int64, *Error) {
	return Whole(path, v, 0, resource.MaxAmount, "a whole number in [0, 2^53]")
}

// Lookup returns values[s] for the string v; want lists the accepted strings
// in the error when v is none of them.
func Lookup[T any](path string, v any, values map[string]T, want string) (T, *Error) {
	s, e := String(path, v)
	if e != nil {
		var zero T
		return zero, e
	}
	x, ok := values[s]
	if !ok {
		return x, Invalid(path, v, want)
	}
	return x, nil
}

// ---- keys ----

// SortedKeys returns m's keys in order, so that decoders walking an object
// report the same first error for the same document.
func SortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// CheckKeys reports the first key of m (in sorted order) that is not in
// known, as UnknownKey does; what names the object ("a scenario").
func CheckKeys(path string, m map[string]any, known []string, what string) *Error {
	for _, k := range SortedKeys(m) {
		if !slices.Contains(known, k) {
			return UnknownKey(path, k, known, what)
		}
	}
	return nil
}

// UnknownKey returns an unknown_attribute error at path.k for the key k of an
// object whose keys are known, suggesting the nearest known key (an edit
// distance of at most 2): `cannot use unknown attribute "wieght" of a pool:
// did you mean "weight"?`.
func UnknownKey(path, k string, known []string, what string) *Error {
	msg := "cannot use unknown attribute " + Describe(k) + " of " + what
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(k, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		msg += `: did you mean "` + best + `"?`
	}
	return NewError(CodeUnknownAttribute, Key(path, k), msg)
}

// editDistance returns the Levenshtein distance of a and b, or limit when it
// is at least limit. Strings longer than 64 bytes are at limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	var rowBuf [65]int
	row := rowBuf[:len(b)+1]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return min(row[len(b)], limit)
}
