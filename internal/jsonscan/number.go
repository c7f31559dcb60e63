package jsonscan

import (
	"math"
	"strconv"
)

// Number reads a number by the JSON grammar and returns its bytes (a slice
// of the input; ParseNumber converts them). It returns false, recording
// nothing, when the next value is not a number, and false with a syntax
// error for a malformed one ("-", "1.", "1e+").
func (s *Scanner) Number() ([]byte, bool) {
	s.skipSpace()
	d := s.data
	start, i := s.pos, s.pos
	if i < len(d) && d[i] == '-' {
		i++
	} else if i >= len(d) || d[i] < '0' || d[i] > '9' {
		return nil, false
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		s.syntax("invalid number")
		return nil, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			s.syntax("invalid number: want a digit after the decimal point")
			return nil, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			s.syntax("invalid number: want a digit in the exponent")
			return nil, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	s.pos = i
	return d[start:i], true
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// ParseNumber converts a number token that Number returned to a float64,
// correctly rounded (as strconv.ParseFloat; ±Inf beyond its range). Plain
// integers of at most 2^53 and decimals with few digits take an exact fast
// path; the rest go through strconv.ParseFloat, which allocates for tokens
// longer than 32 bytes. exact is the integer value when the token is a
// plain non-negative integer below 2^63 (isInt), for exact range checks
// beyond 2^53.
func ParseNumber(tok []byte) (f float64, exact uint64, isInt bool) {
	neg := tok[0] == '-'
	i := 0
	if neg {
		i++
	}
	var mant uint64
	exp10 := 0
	overflow := false
	for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
		if mant > (math.MaxUint64-9)/10 {
			overflow = true
			continue
		}
		mant = mant*10 + uint64(tok[i]-'0')
	}
	if i == len(tok) && !neg && !overflow && mant < 1<<63 {
		exact, isInt = mant, true
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
			if mant > (math.MaxUint64-9)/10 {
				overflow = true
				continue
			}
			mant = mant*10 + uint64(tok[i]-'0')
			exp10--
		}
	}
	if i == len(tok) && !overflow && mant <= 1<<53 && exp10 >= -22 {
		f = float64(mant)
		if exp10 < 0 {
			f /= pow10[-exp10]
		}
		if neg {
			f = -f
		}
		return f, exact, isInt
	}
	// Out of range: ±Inf (or ±0) with an error that says so; callers that
	// want finite numbers check the result.
	f, _ = strconv.ParseFloat(string(tok), 64)
	return f, exact, isInt
}
