// Package jsonpath is the toolkit of fairsched's JSON decoders (wire,
// sim, loadgen): parse a document into generic values, read those values
// with typed accessors, and report the first problem as an *Error naming the
// JSON path of the offending field (docs/api.md#conventions), e.g.
//
//	$.tree.children[1].demand.cpu: cannot use -1: want a non-negative number
//
// Decoders built on it walk objects with SortedKeys, so that the first error
// of a document does not depend on map order, and wrap each accessor's
// result in their own switch:
//
//	for _, k := range jsonpath.SortedKeys(m) {
//		p, x := jsonpath.Key(path, k), m[k]
//		switch k {
//		case "weight":
//			c.Weight, e = jsonpath.Number(p, x)
//		default:
//			e = jsonpath.UnknownKey(path, k, known, "a pool")
//		}
//	}
//
// Messages take one form: "cannot use <value>: want <what>", the value
// rendered by Describe. The package is stateless and safe for concurrent use.
// It allocates on the decoding paths (generic values, paths, messages) and
// is meant for control-plane bodies and files; hot paths scan bytes instead
// (internal/jsonscan, under wire's heartbeat decoder) and share only
// the error text.
//
// NB: it imports core/resource for the resource objects of docs/api.md#conventions,
// core/apierr for its error type and internal/jsonscan for the tokenizer,
// and nothing else of the module; core/ must never import it
// (internal/lint).
package jsonpath

import (
	"bytes"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/internal/jsonscan"
)

// Error is a validation error of a JSON document (docs/api.md#conventions): apierr.Error,
// the type of the core's validation errors too. Code is stable snake_case,
// Message a sentence naming the field and the value, Path the absolute JSON
// path of the offending field ("$" for the whole document); Error() returns
// "<path>: <message>".
type Error = apierr.Error

// Error codes of the toolkit. Decoders add their own domain codes
// (wire.CodeUnknownElement, …).
const (
	// CodeMalformedJSON: the document is not one JSON value.
	CodeMalformedJSON = "malformed_json"
	// CodeWrongType: a value has the wrong JSON type (a string for a number, …).
	CodeWrongType = "wrong_type"
	// CodeInvalidValue: a value of the right type is out of range or unknown.
	CodeInvalidValue = apierr.CodeInvalidValue
	// CodeUnknownAttribute: an object has a key the format does not know.
	CodeUnknownAttribute = "unknown_attribute"
	// CodeMissingAttribute: a required key is absent.
	CodeMissingAttribute = "missing_attribute"
	// CodeDuplicateKey: an object has a key twice (Decode refuses it).
	CodeDuplicateKey = "duplicate_key"
	// CodeDuplicateName: two entries of a list share a name.
	CodeDuplicateName = apierr.CodeDuplicateName
)

// NewError returns an *Error with code, path and message msg.
func NewError(code, path, msg string) *Error {
	return &Error{Code: code, Message: msg, Path: path}
}

// Decode parses data, which must be exactly one JSON value, into generic
// values: map[string]any, []any, string, bool, nil, and json.Number for
// numbers (github.com/goccy/go-json's type), so that no number is rounded
// before its accessor checks it. what names the document in the error for
// empty input ("body", "file"). Syntax errors are malformed_json at "$",
// with the line and column of the offending byte; an object with a key
// twice is a duplicate_key error at the second one's path (which of two
// values to take is ambiguous: encoding/json takes the last, other parsers
// the first, so a reviewer and the server could read different bodies).
// Nesting deeper than jsonscan.MaxDepth is a syntax error. data is not
// retained.
func Decode(data []byte, what string) (any, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, NewError(CodeMalformedJSON, "$", "cannot parse an empty "+what+": want a JSON object")
	}
	d := &decoder{}
	d.s.Reset(data)
	v := d.value()
	if d.err == nil && !d.s.End() {
		d.syntaxError()
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.dup != nil {
		return nil, d.dup
	}
	return v, nil
}

// DecodeObject is Decode for a document that must be a JSON object: a
// request body, a scenario file.
func DecodeObject(data []byte, what string) (map[string]any, *Error) {
	v, e := Decode(data, what)
	if e != nil {
		return nil, e
	}
	return Object("$", v)
}

// decoder builds generic values from a jsonscan.Scanner, keeping the path
// of the value being read as a stack of segments that becomes a string only
// for an error.
type decoder struct {
	s    jsonscan.Scanner
	path []segment
	err  *Error // the syntax error that stopped it
	// dup is the first duplicate key: reported when the rest is valid
	// JSON (a syntax error anywhere wins, as encoding/json checks the
	// whole input first).
	dup *Error
}

// segment is a member name (key) or an array index.
type segment struct {
	key   string
	index int
	isKey bool
}

func (d *decoder) pathString() string {
	p := "$"
	for _, sg := range d.path {
		if sg.isKey {
			p = Key(p, sg.key)
		} else {
			p = Index(p, sg.index)
		}
	}
	return p
}

// syntaxError records the scanner's error (or one of its own when the
// scanner has none) as a malformed_json error.
func (d *decoder) syntaxError() {
	if d.err != nil {
		return
	}
	se := d.s.Err()
	switch {
	case se == nil:
		d.err = Malformed("unexpected input")
	case se.Offset >= len(d.s.Input()):
		d.err = Malformed("unexpected end of input")
	case se.Msg == "want one value, found more after it":
		d.err = Malformed(se.Msg)
	default:
		d.err = SyntaxAt(d.s.Input()[:se.Offset], se.Msg)
	}
}

func (d *decoder) value() any {
	s := &d.s
	switch s.Next() {
	case jsonscan.Object:
		if !s.OpenObject() {
			d.syntaxError()
			return nil
		}
		m := map[string]any{}
		for first := true; s.More('}', first); first = false {
			kb, ok := s.Key()
			if !ok {
				break
			}
			k := string(kb)
			d.path = append(d.path, segment{key: k, isKey: true})
			_, dup := m[k]
			if dup && d.dup == nil {
				d.dup = NewError(CodeDuplicateKey, d.pathString(), "cannot use key "+Describe(k)+" twice in one object")
			}
			v := d.value()
			d.path = d.path[:len(d.path)-1]
			if d.err != nil {
				return nil
			}
			if !dup {
				m[k] = v
			}
		}
		if s.Failed() {
			d.syntaxError()
			return nil
		}
		return m
	case jsonscan.Array:
		if !s.OpenArray() {
			d.syntaxError()
			return nil
		}
		a := []any{}
		for i, first := 0, true; s.More(']', first); i, first = i+1, false {
			d.path = append(d.path, segment{index: i})
			v := d.value()
			d.path = d.path[:len(d.path)-1]
			if d.err != nil {
				return nil
			}
			a = append(a, v)
		}
		if s.Failed() {
			d.syntaxError()
			return nil
		}
		return a
	case jsonscan.String:
		b, ok := s.Str()
		if !ok {
			d.syntaxError()
			return nil
		}
		return string(b)
	case jsonscan.Number:
		b, ok := s.Number()
		if !ok {
			d.syntaxError()
			return nil
		}
		return json.Number(b)
	case jsonscan.True, jsonscan.False, jsonscan.Null:
		c := s.Peek()
		if !s.Skip() {
			d.syntaxError()
			return nil
		}
		switch c {
		case 't':
			return true
		case 'f':
			return false
		}
		return nil
	}
	s.Skip() // records the syntax error of a byte that starts no value
	d.syntaxError()
	return nil
}

// Malformed returns a malformed_json error at "$": "cannot parse JSON: what".
func Malformed(what string) *Error {
	return NewError(CodeMalformedJSON, "$", "cannot parse JSON: "+what)
}

// SyntaxAt returns a malformed_json error at "$" for a problem just after
// prefix, the input before the offending byte: "cannot parse JSON: line L,
// column C: what" (1-based, the column in bytes).
func SyntaxAt(prefix []byte, what string) *Error {
	line := 1 + bytes.Count(prefix, []byte{'\n'})
	col := len(prefix) - bytes.LastIndexByte(prefix, '\n')
	return Malformed("line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + ": " + what)
}

// ---- paths and values ----

// Key returns the path of member k of the object at path: path.k, or
// path["k"] (k as a JSON string) when k is not a plain identifier.
func Key(path, k string) string {
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
	return string(AppendString(append([]byte(path), '['), k)) + "]"
}

// Index returns the path of element i of the array at path: path[i].
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// Describe renders a generic JSON value for an error message: null, true,
// a number as written, a string as a JSON string cut to 64 bytes ("…"
// after), "an object", "an array".
func Describe(v any) string {
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
		return string(AppendString(nil, v))
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value"
}

// WrongType returns a wrong_type error at path: "cannot use <v>: want <want>".
func WrongType(path string, v any, want string) *Error {
	return NewError(CodeWrongType, path, "cannot use "+Describe(v)+": want "+want)
}

// Invalid returns an invalid_value error at path: "cannot use <v>: want <want>".
func Invalid(path string, v any, want string) *Error {
	return NewError(CodeInvalidValue, path, "cannot use "+Describe(v)+": want "+want)
}
