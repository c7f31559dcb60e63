package wire

import (
	"math"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/internal/jsonscan"
)

// scanner is the heartbeat decoder's reader of one request body: the
// strict, allocation-free tokens of jsonscan, and this package's errors
// (codes and JSON paths) for what is valid JSON but not a valid heartbeat.
// Strings with escapes are unescaped into the Scanner's scratch, so a
// returned string's bytes are valid only until the next string read.
//
// NB: goccy/go-json allocates once per decoded string and once per value of
// a type with its own UnmarshalJSON (measured: 12 allocations for the
// heartbeat example of docs/api.md#node-heartbeats, ~100 for a node with 30 allocations), so
// the heartbeat, which must cost ≤ 2 allocations a request, is scanned here.
// TestHeartbeatDifferential checks it against encoding/json and go-json.
type scanner struct {
	jsonscan.Scanner
	// err is the first error of the heartbeat's own (a wrong type, a bad
	// value); the Scanner keeps syntax errors, and stops at either.
	err *Error
}

func (s *scanner) reset(data []byte) {
	s.Reset(data)
	s.err = nil
}

// fail records err unless an error is recorded already.
func (s *scanner) fail(err *Error) {
	if !s.Failed() {
		s.err = err
		s.Stop()
	}
}

// error returns the first error: the heartbeat's own, or the Scanner's
// syntax error as a malformed_json *Error with its line and column.
func (s *scanner) error() *Error {
	if s.err != nil {
		return s.err
	}
	se := s.Err()
	if se == nil {
		return nil
	}
	data := s.Input()
	if se.Offset >= len(data) {
		return jsonpath.Malformed(se.Msg) // "unexpected end of input"
	}
	return jsonpath.SyntaxAt(data[:se.Offset], se.Msg)
}

// wrongType records a wrong_type error for the next value, described as
// jsonpath.Describe describes decoded values, or the syntax error of a
// next value that is not JSON.
func (s *scanner) wrongType(path lazyPath, want string) {
	if s.Failed() {
		return
	}
	var desc string
	switch s.Next() {
	case jsonscan.Object:
		desc = "an object"
	case jsonscan.Array:
		desc = "an array"
	case jsonscan.True:
		desc = "true"
	case jsonscan.False:
		desc = "false"
	case jsonscan.Null:
		desc = "null"
	case jsonscan.Number:
		tok, ok := s.Number()
		if !ok {
			return
		}
		desc = string(tok)
	case jsonscan.String:
		b, ok := s.Str()
		if !ok {
			return
		}
		desc = jsonpath.Describe(string(b))
	default:
		s.Skip() // records the syntax error of what is not a value
		return
	}
	s.fail(jsonpath.NewError(CodeWrongType, path.String(), "cannot use "+desc+": want "+want))
}

// boolAt reads the next value, which must be true or false, reporting a
// wrong type at path otherwise.
func (s *scanner) boolAt(path lazyPath) (v, ok bool) {
	switch s.Next() {
	case jsonscan.True:
		s.Skip()
		return true, !s.Failed()
	case jsonscan.False:
		s.Skip()
		return false, !s.Failed()
	}
	s.wrongType(path, "true or false")
	return false, false
}

// stringAt reads the next value, which must be a string, reporting a wrong
// type at path with want otherwise. The bytes are valid until the next read.
func (s *scanner) stringAt(path lazyPath, want string) ([]byte, bool) {
	b, ok := s.Str()
	if !ok {
		s.wrongType(path, want)
	}
	return b, ok
}

// number reads a number and returns its token; a non-number is a
// wrong_type error at path, a number beyond float64's range an invalid one.
func (s *scanner) number(path lazyPath) (tok []byte, f float64, exact uint64, isInt, ok bool) {
	tok, ok = s.Number()
	if !ok {
		s.wrongType(path, "a number")
		return nil, 0, 0, false, false
	}
	f, exact, isInt = jsonscan.ParseNumber(tok)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s.fail(jsonpath.NewError(CodeInvalidValue, path.String(), "cannot use "+string(tok)+": want a finite number"))
		return nil, 0, 0, false, false
	}
	return tok, f, exact, isInt, true
}

// amount reads one resource amount (docs/api.md#conventions), as jsonpath.Amount does for
// decoded values: non-negative, cpu rounded to centi-cores, the others whole
// numbers, all at most 2^53.
func (s *scanner) amount(path lazyPath, k resource.Kind) (int64, bool) {
	tok, f, exact, isInt, ok := s.number(path)
	if !ok {
		return 0, false
	}
	bad := func(want string) (int64, bool) {
		s.fail(jsonpath.NewError(CodeInvalidValue, path.String(), "cannot use "+string(tok)+": want "+want))
		return 0, false
	}
	switch {
	case f < 0:
		return bad("a non-negative number")
	case k == resource.CPU:
		if f*resource.CPUScale > resource.MaxAmount {
			return bad("at most 2^53 centi-cores (90071992547409.92 cpu)")
		}
		return resource.Cores(f), true
	case isInt && exact > resource.MaxAmount || f > resource.MaxAmount:
		return bad("at most 2^53 (9007199254740992)")
	case f != math.Trunc(f):
		return bad("a whole number")
	case isInt:
		return int64(exact), true
	}
	return int64(f), true
}

// resources reads a resource object into v (missing resources are 0).
func (s *scanner) resources(path lazyPath, v *resource.Vec) bool {
	if !s.objectStart(path) {
		return false
	}
	var seen uint8
	for first := true; s.More('}', first); first = false {
		k, ok := s.Key()
		if !ok {
			return false
		}
		kind, known := kindOf(k)
		if known && !s.once(&seen, k, kindNames[:], path) {
			return false
		}
		if !known {
			s.fail(jsonpath.UnknownResource(path.String(), string(k)))
			return false
		}
		x, ok := s.amount(path.member(kindNames[kind]), kind)
		if !ok {
			return false
		}
		v[kind] = x
	}
	return !s.Failed()
}

var kindNames = resource.Names()

// once records key k of an object whose known keys are names (at most 8)
// in *seen, and records an error if the object had it already: a
// duplicate key is ambiguous (encoding/json takes the last, others the
// first), so the heartbeat refuses it, as encoding/json/v2 does. Unknown
// keys pass; the caller reports them.
func (s *scanner) once(seen *uint8, k []byte, names []string, path lazyPath) bool {
	for i, n := range names {
		if string(k) == n {
			if *seen&(1<<i) != 0 {
				s.fail(jsonpath.NewError(CodeDuplicateKey, jsonpath.Key(path.String(), n), "cannot use key "+jsonpath.Describe(n)+" twice in one object"))
				return false
			}
			*seen |= 1 << i
			return true
		}
	}
	return true
}

// kindOf returns the resource named b, without allocating.
func kindOf(b []byte) (resource.Kind, bool) {
	for k, n := range kindNames {
		if string(b) == n {
			return resource.Kind(k), true
		}
	}
	return 0, false
}

// lazyPath is a JSON path that is formatted only when an error needs it:
// base, then [idx] when idx ≥ 0, then .field and .leaf when not empty.
type lazyPath struct {
	base  string
	idx   int
	field string
	leaf  string
}

func rootPath(base string) lazyPath { return lazyPath{base: base, idx: -1} }

// index returns the path of element i of the array at p (p has no index).
func (p lazyPath) index(i int) lazyPath { p.idx = i; return p }

// member returns the path of member name of the object at p.
func (p lazyPath) member(name string) lazyPath {
	if p.field == "" {
		p.field = name
	} else {
		p.leaf = name
	}
	return p
}

func (p lazyPath) String() string {
	out := p.base
	if p.idx >= 0 {
		out = jsonpath.Index(out, p.idx)
	}
	if p.field != "" {
		out = jsonpath.Key(out, p.field)
	}
	if p.leaf != "" {
		out = jsonpath.Key(out, p.leaf)
	}
	return out
}

// objectStart reads '{' or records a wrong_type error.
func (s *scanner) objectStart(path lazyPath) bool {
	if s.OpenObject() {
		return true
	}
	s.wrongType(path, "an object")
	return false
}

// arrayStart reads '[' or records a wrong_type error (want).
func (s *scanner) arrayStart(path lazyPath, want string) bool {
	if s.OpenArray() {
		return true
	}
	s.wrongType(path, want)
	return false
}
