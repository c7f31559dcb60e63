// Package jsonpath is the toolkit of fairsched's JSON decoders (facade/wire,
// sim, loadgen): parse a document into generic values, read those values
// with typed accessors, and report the first problem as an *Error naming the
// JSON path of the offending field (api.md §1), e.g.
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
// Messages follow style.md §10: "cannot use <value>: want <what>", the value
// rendered by Describe. The package is stateless and safe for concurrent use.
// It allocates on the decoding paths (generic values, paths, messages) and
// is meant for control-plane bodies and files; hot paths scan bytes instead
// (internal/jsonscan, under facade/wire's heartbeat decoder) and share only
// the error text.
//
// NB: it imports core/resource for the resource objects of api.md §1 and
// core/apierr for its error type, and nothing else of the module; core/ must
// never import it (internal/lint).
package jsonpath

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/apierr"
)

// Error is a validation error of a JSON document (api.md §1): apierr.Error,
// the type of the core's validation errors too. Code is stable snake_case,
// Message a sentence naming the field and the value, Path the absolute JSON
// path of the offending field ("$" for the whole document); Error() returns
// "<path>: <message>".
type Error = apierr.Error

// Error codes of the toolkit. Decoders add their own domain codes
// (facade/wire.CodeUnknownElement, …).
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
	// CodeDuplicateKey: an object has a key twice (decoders that refuse it).
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
// numbers (github.com/goccy/go-json), so that no number is rounded before
// its accessor checks it. what names the document in the error for empty
// input ("body", "file"). Errors are malformed_json at "$", with the line and
// column of a syntax error. data is not retained.
func Decode(data []byte, what string) (any, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, NewError(CodeMalformedJSON, "$", "cannot parse an empty "+what+": want a JSON object")
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
		return nil, Malformed("want one value, found more after it")
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

func syntaxError(data []byte, err error) *Error {
	var se *json.SyntaxError
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return Malformed("unexpected end of input")
	}
	if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(data)) {
		return SyntaxAt(data[:se.Offset-1], msg)
	}
	return Malformed(msg)
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
