package limits

import (
	"errors"
	"fmt"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/tree"
)

// Error codes of LimitError (docs/api.md#operations: 409 too_many_operations).
const (
	CodeTooManyOperations        = "too_many_operations"
	CodeTooManyRunningOperations = "too_many_running_operations"
)

// Sentinel errors: errors.Is(err, ErrTooManyOperations) holds for a *LimitError
// with CodeTooManyOperations (and for the *apierr.Error that wraps it), and
// likewise for the running limit.
var (
	ErrTooManyOperations        = errors.New("limits: too many operations")
	ErrTooManyRunningOperations = errors.New("limits: too many running operations")
)

// Actions named by LimitError.Action.
const (
	ActionStart = "start"
	ActionMove  = "move"
)

// LimitError reports the lowest pool on an operation's path whose operation
// count (Code CodeTooManyOperations) or running operation count
// (CodeTooManyRunningOperations) has reached its limit (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
//
// NB: it is the structured detail of the error that CanRegister and Move
// return, an *apierr.Error (Code, Path "pool", Message e.Error()) whose Err
// it is: callers that map errors to answers see one type, and errors.As
// finds the *LimitError through Unwrap for those that want the numbers.
type LimitError struct {
	Code  string
	Pool  string // the pool's name; tree.RootName for the root
	Limit int64  // the pool's effective max_operation_count or max_running_operation_count
	Count int64  // the pool's count when the check failed (≥ Limit)
	// Action is what was refused: ActionStart (CanRegister; also the zero
	// value) or ActionMove (Move).
	Action string
}

func (e *LimitError) Error() string {
	action := e.Action
	if action == "" {
		action = ActionStart
	}
	if e.Code == CodeTooManyRunningOperations {
		return fmt.Sprintf("cannot %s operation: pool %q has %d running operations, its max_running_operation_count is %d",
			action, e.Pool, e.Count, e.Limit)
	}
	return fmt.Sprintf("cannot %s operation: pool %q has %d operations, its max_operation_count is %d",
		action, e.Pool, e.Count, e.Limit)
}

// Is makes errors.Is match the sentinel of the error's code.
func (e *LimitError) Is(target error) bool {
	switch target {
	case ErrTooManyOperations:
		return e.Code == CodeTooManyOperations
	case ErrTooManyRunningOperations:
		return e.Code == CodeTooManyRunningOperations
	}
	return false
}

// limitError describes pool p's count and limit for code: an *apierr.Error
// about the operation's "pool" that wraps the *LimitError.
func (l *Limits) limitError(code, action string, p tree.ID) *apierr.Error {
	e := &LimitError{Code: code, Pool: l.t.Name(p), Action: action}
	if code == CodeTooManyRunningOperations {
		e.Limit, e.Count = l.maxRunning(p), l.pools[p].running
	} else {
		e.Limit, e.Count = l.maxOperations(p), l.pools[p].ops
	}
	return &apierr.Error{Code: code, Path: "pool", Message: e.Error(), Err: e}
}
