// Package apierr holds fairsched's validation error (docs/api.md#conventions):
// a stable snake_case code, the JSON path of the offending value and a
// sentence naming it ("cannot use weight -1: want …"). Every package that
// validates input returns it — the core's tree, schedule, limits and
// snapshot, and the JSON decoders (internal/jsonpath, wire, sim) — so
// that the facade maps one type to its HTTP answers, and it holds the codes
// that more than one of them uses. Codes of one package's domain stay in that
// package (tree.CodeCycle, schedule.CodeFinished, …).
//
// NB: it is a leaf of the module (internal/lint): it imports nothing of
// fairsched and no I/O, so that every layer of the core and the decoders
// outside it can share it.
package apierr

// Error is a rejected input. It is used by pointer; the fields are set once
// by the package that rejects and only read afterwards.
type Error struct {
	// Code is stable snake_case: one of the codes here or the rejecting
	// package's own.
	Code string
	// Path is the JSON path of the offending value. It is absolute when it
	// starts with "$": the root of the document the error is about (a
	// request body, a snapshot, a scenario file). Otherwise it is relative
	// to the element the caller validated, which only the caller can name:
	// a key of docs/api.md ("weight", "tasks[0].job_count"; see Join), or "" for
	// the element itself.
	Path string
	// Message is a sentence naming the field and the value: "cannot …".
	Message string
	// Pkg is the package that rejected the input ("tree", "schedule"), the
	// prefix of Error(); "" for none.
	Pkg string
	// Err is a structured detail or cause (limits.LimitError), or nil;
	// errors.Is and errors.As see it through Unwrap.
	Err error
}

// Error returns "<pkg>: <path>: <message>", where the package is left out when
// Pkg is empty and the path when it is not absolute: a relative path means
// nothing without its element, and the message names the field anyway.
func (e *Error) Error() string {
	s := e.Message
	if e.Absolute() {
		s = e.Path + ": " + s
	}
	if e.Pkg != "" {
		s = e.Pkg + ": " + s
	}
	return s
}

// Unwrap returns Err, so that errors.Is matches the sentinels of the detail
// (limits.ErrTooManyOperations) and errors.As finds it (*limits.LimitError).
func (e *Error) Unwrap() error { return e.Err }

// Absolute reports whether Path is an absolute JSON path (it starts with "$").
func (e *Error) Absolute() bool { return len(e.Path) > 0 && e.Path[0] == '$' }

// Join returns the path of rel (a relative Path) inside the element at base:
// base when rel is empty, base+rel when rel starts with an index ("[2].cpu"),
// else base.rel.
func Join(base, rel string) string {
	switch {
	case rel == "":
		return base
	case rel[0] == '[':
		return base + rel
	}
	return base + "." + rel
}

// Codes that more than one package returns. The packages re-export those
// they name (tree.CodeInvalidValue = CodeInvalidValue), so that each
// package's list of codes stays complete.
const (
	// CodeInvalidValue: a value of the right type is out of range, unknown or
	// not allowed where it is.
	CodeInvalidValue = "invalid_value"
	// CodeDuplicateName: a pool or operation name that is taken already.
	CodeDuplicateName = "duplicate_name"
	// CodeUnknownOperation: no operation has that name or id.
	CodeUnknownOperation = "unknown_operation"
	// CodeUnknownElement: no pool or operation has that name (a snapshot's
	// assignment).
	CodeUnknownElement = "unknown_element"
)
