package sim

import "github.com/fairsched/fairsched/internal/jsonpath"

// Error is a validation error of a scenario file: a stable code (the codes of
// wire, e.g. wire.CodeInvalidValue), a sentence naming the value, and
// the JSON path of the offending field ("$" for the whole file). It is
// jsonpath.Error, the type of wire's errors too.
type Error = jsonpath.Error

// NB: the scenario is decoded with internal/jsonpath, as wire's
// decoders are (paths, "cannot use X: want Y" messages, sorted keys so that
// the first error is deterministic). The pool tree and the tree config are
// decoded by wire itself.

// asSeconds returns a duration in seconds in [lo, maxSeconds] with at most
// millisecond resolution (the simulation's clock ticks in milliseconds).
func asSeconds(path string, v any, lo float64, want string) (float64, *Error) {
	x, e := jsonpath.Range(path, v, lo, maxSeconds, want)
	if e != nil {
		return 0, e
	}
	if lo == 0 && x > 0 && x < 0.001 {
		return 0, jsonpath.Invalid(path, v, want+" (the clock ticks in milliseconds)")
	}
	return x, nil
}
