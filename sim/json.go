package sim

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/facade/wire"
)

// Error is a validation error of a scenario file: a stable code (the codes of
// facade/wire, e.g. wire.CodeInvalidValue), a sentence naming the value, and
// the JSON path of the offending field ("$" for the whole file).
type Error struct {
	Code    string
	Message string
	Path    string
}

// Error returns "<path>: <message>".
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

func errorf(code, path, msg string) *Error {
	return &Error{Code: code, Message: msg, Path: path}
}

// NB: the helpers below follow facade/wire's decoder (paths, "cannot use X:
// want Y" messages, sorted keys so that the first error is deterministic);
// wire keeps its helpers unexported, so the few the scenario needs are
// repeated here. The pool tree and the tree config are decoded by wire itself.

func decodeJSON(data []byte) (any, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errorf(wire.CodeMalformedJSON, "$", "cannot parse an empty file: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, syntaxError(data, err)
	}
	var extra any
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, syntaxError(data, err)
		}
		return nil, errorf(wire.CodeMalformedJSON, "$", "cannot parse JSON: want one value, found more after it")
	}
	return v, nil
}

func syntaxError(data []byte, err error) *Error {
	var se *json.SyntaxError
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of input"
	} else if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(data)) {
		prefix := data[:se.Offset-1]
		line := 1 + bytes.Count(prefix, []byte{'\n'})
		col := len(prefix) - bytes.LastIndexByte(prefix, '\n')
		msg = "line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + ": " + msg
	}
	return errorf(wire.CodeMalformedJSON, "$", "cannot parse JSON: "+msg)
}

// key returns path.k, or path["k"] when k is not a plain identifier.
func key(path, k string) string {
	plain := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// describe renders a JSON value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return string(v)
	case string:
		const maxLen = 64
		if len(v) > maxLen {
			v = v[:maxLen] + "…"
		}
		return strconv.Quote(v)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value"
}

func wrongType(path string, v any, want string) *Error {
	return errorf(wire.CodeWrongType, path, "cannot use "+describe(v)+": want "+want)
}

func invalid(path string, v any, want string) *Error {
	return errorf(wire.CodeInvalidValue, path, "cannot use "+describe(v)+": want "+want)
}

func asObject(path string, v any) (map[string]any, *Error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, wrongType(path, v, "an object")
	}
	return m, nil
}

func asArray(path string, v any) ([]any, *Error) {
	a, ok := v.([]any)
	if !ok {
		return nil, wrongType(path, v, "an array")
	}
	return a, nil
}

func asString(path string, v any) (string, *Error) {
	s, ok := v.(string)
	if !ok {
		return "", wrongType(path, v, "a string")
	}
	return s, nil
}

func asBool(path string, v any) (bool, *Error) {
	b, ok := v.(bool)
	if !ok {
		return false, wrongType(path, v, "true or false")
	}
	return b, nil
}

// asNumber returns a finite number.
func asNumber(path string, v any) (float64, *Error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, wrongType(path, v, "a number")
	}
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, invalid(path, v, "a finite number")
	}
	return x, nil
}

// asRange returns a number in [lo, hi].
func asRange(path string, v any, lo, hi float64, want string) (float64, *Error) {
	x, e := asNumber(path, v)
	if e != nil {
		return 0, e
	}
	if x < lo || x > hi {
		return 0, invalid(path, v, want)
	}
	return x, nil
}

// asSeconds returns a duration in seconds in [lo, maxSeconds] with at most
// millisecond resolution (the simulation's clock ticks in milliseconds).
func asSeconds(path string, v any, lo float64, want string) (float64, *Error) {
	x, e := asRange(path, v, lo, maxSeconds, want)
	if e != nil {
		return 0, e
	}
	if lo == 0 && x > 0 && x < 0.001 {
		return 0, invalid(path, v, want+" (the clock ticks in milliseconds)")
	}
	return x, nil
}

// asWhole returns a whole number in [lo, hi].
func asWhole(path string, v any, lo, hi float64, want string) (int64, *Error) {
	x, e := asNumber(path, v)
	if e != nil {
		return 0, e
	}
	if x < lo || x > hi || x != math.Trunc(x) {
		return 0, invalid(path, v, want)
	}
	return int64(x), nil
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkKeys reports the first key of m (in sorted order) that is not known.
func checkKeys(path string, m map[string]any, known []string, what string) *Error {
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) {
			return unknownKey(path, k, known, what)
		}
	}
	return nil
}

// unknownKey reports an unknown key k, suggesting the nearest known one.
func unknownKey(path, k string, known []string, what string) *Error {
	msg := "cannot use unknown attribute " + describe(k) + " of " + what
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(k, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		msg += `: did you mean "` + best + `"?`
	}
	return errorf(wire.CodeUnknownAttribute, key(path, k), msg)
}

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

// resources decodes a resource object (api.md §1: cpu in cores with two
// decimal digits, the others whole numbers); missing components are 0 and
// reported as not given.
func resources(path string, v any) (resource.Vec, [resource.Count]bool, *Error) {
	var (
		vec   resource.Vec
		given [resource.Count]bool
	)
	m, e := asObject(path, v)
	if e != nil {
		return vec, given, e
	}
	for _, name := range sortedKeys(m) {
		k, ok := resource.KindByName(name)
		p := key(path, name)
		if !ok {
			return vec, given, errorf(wire.CodeUnknownAttribute, p,
				"cannot use unknown resource "+describe(name)+": want one of user_slots, cpu, gpu, memory, network")
		}
		x, e := asNumber(p, m[name])
		if e != nil {
			return vec, given, e
		}
		if x < 0 {
			return vec, given, invalid(p, m[name], "a non-negative number")
		}
		if k == resource.CPU {
			if x*resource.CPUScale > resource.MaxAmount {
				return vec, given, invalid(p, m[name], "at most 2^53 centi-cores")
			}
			vec[k] = resource.Cores(x)
		} else {
			if x > resource.MaxAmount {
				return vec, given, invalid(p, m[name], "at most 2^53 (9007199254740992)")
			}
			if x != math.Trunc(x) {
				return vec, given, invalid(p, m[name], "a whole number")
			}
			vec[k] = int64(x)
		}
		given[k] = true
	}
	return vec, given, nil
}
