package loadgen

import (
	"strconv"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/internal/jsonscan"
	"github.com/fairsched/fairsched/wire"
)

// DecodeError is a heartbeat answer DecodeResponse cannot read.
type DecodeError struct {
	Offset int
	What   string
}

func (e *DecodeError) Error() string {
	return "loadgen: cannot decode the heartbeat answer at byte " + strconv.Itoa(e.Offset) + ": " + e.What
}

// DecodeResponse reads a heartbeat answer (docs/api.md#node-heartbeats, as
// wire.AppendHeartbeatResponse writes it) into d, which it resets first:
// the ids of allocations_to_start with their operation's slot and
// generation (w.ParseOpID; -1 for operations of other runs), the ids and
// timeout_s of allocations_to_preempt and the ids of allocations_to_abort.
// Other keys and values are skipped whatever their type; the three lists
// may be missing. The answer must be JSON (jsonscan checks it as it reads);
// ids and operation ids are matched as written, so an id with an escape
// is an error and an operation id with one is another run's. It allocates
// nothing unless d's slices must grow or the answer is malformed. data is
// not retained.
func DecodeResponse(data []byte, w *Workload, d *Decisions) error {
	d.Reset()
	var s scan
	s.Reset(data)
	if s.response(w, d) {
		return nil
	}
	return s.error()
}

// scan reads a heartbeat answer: jsonscan's tokens, DecodeError's errors.
type scan struct {
	jsonscan.Scanner
	// err is the first error of the answer's own (a wrong type, a bad id);
	// the Scanner keeps syntax errors, and stops at either.
	err *DecodeError
}

// failAt records an error at off unless one is recorded already, and
// returns false.
func (s *scan) failAt(off int, what string) bool {
	if !s.Failed() {
		s.err = &DecodeError{Offset: off, What: what}
		s.Stop()
	}
	return false
}

// fail records an error at the current position.
func (s *scan) fail(what string) bool { return s.failAt(s.Pos(), what) }

// error returns the first error; s has stopped.
func (s *scan) error() *DecodeError {
	if s.err != nil {
		return s.err
	}
	if se := s.Err(); se != nil {
		return &DecodeError{Offset: se.Offset, What: se.Msg}
	}
	return &DecodeError{Offset: s.Pos(), What: "cannot read on"} // BUG: a read failed without an error
}

func (s *scan) response(w *Workload, d *Decisions) bool {
	if !s.OpenObject() {
		return s.fail("want an object")
	}
	for first := true; s.More('}', first); first = false {
		k, _, ok := s.RawKey()
		if !ok {
			return false
		}
		switch string(k) {
		case "allocations_to_start", "allocations_to_preempt", "allocations_to_abort":
			if !s.list(k[len("allocations_to_")], w, d) {
				return false
			}
		default:
			if !s.Skip() {
				return false
			}
		}
	}
	return s.End()
}

// list reads one of the decision lists; which is the first letter after
// "allocations_to_": 's'tart, 'p'reempt or 'a'bort.
func (s *scan) list(which byte, w *Workload, d *Decisions) bool {
	if !s.OpenArray() {
		if s.Next() == jsonscan.Null {
			return s.Skip()
		}
		return s.fail("want an array of allocations")
	}
	for first := true; s.More(']', first); first = false {
		if !s.decision(which, w, d) {
			return false
		}
	}
	return !s.Failed()
}

func (s *scan) decision(which byte, w *Workload, d *Decisions) bool {
	if !s.OpenObject() {
		return s.fail("want an allocation object")
	}
	var id uint64
	var seenID bool
	slot, gen, task := int32(-1), uint32(0), int32(0)
	timeout := 0.0
	for first := true; s.More('}', first); first = false {
		k, _, ok := s.RawKey()
		if !ok {
			return false
		}
		switch {
		case string(k) == "id":
			v, esc, ok := s.RawStr()
			if !ok {
				return s.fail("want a string")
			}
			if id, ok = wire.ParseAllocationID(v); esc || !ok {
				// The string, quotes and all, ends where the Scanner is.
				return s.failAt(s.Pos()-len(v)-2, "want an allocation id of decimal digits")
			}
			seenID = true
		case string(k) == "operation_id" && which == 's':
			v, esc, ok := s.RawStr()
			if !ok {
				return s.fail("want a string")
			}
			if !esc && w != nil {
				if sl, g, ok := w.ParseOpID(v); ok {
					slot, gen = sl, g
				}
			}
		case string(k) == "task_index" && which == 's':
			tok, ok := s.Number()
			if !ok {
				return s.fail("want a number")
			}
			t, _, _ := jsonscan.ParseNumber(tok)
			task = int32(t)
		case string(k) == "timeout_s" && which == 'p':
			tok, ok := s.Number()
			if !ok {
				return s.fail("want a number")
			}
			timeout, _, _ = jsonscan.ParseNumber(tok)
		default:
			if !s.Skip() {
				return false
			}
		}
	}
	if s.Failed() {
		return false
	}
	if !seenID {
		return s.fail("want an id in every allocation")
	}
	switch which {
	case 's':
		d.Start = append(d.Start, StartDecision{ID: id, Slot: slot, Gen: gen, Task: task})
	case 'p':
		d.Preempt = append(d.Preempt, PreemptDecision{ID: id, TimeoutS: timeout})
	default:
		d.Abort = append(d.Abort, id)
	}
	return true
}

// FromResponse converts the core's answer into Decisions (the in-process
// driver).
func FromResponse(r *schedule.Response, w *Workload, d *Decisions) {
	d.Reset()
	for i := range r.Start {
		sd := StartDecision{ID: r.Start[i].Allocation, Slot: -1, Task: int32(r.Start[i].Task)}
		if sl, g, ok := w.parseOpIDString(r.Start[i].Operation); ok {
			sd.Slot, sd.Gen = sl, g
		}
		d.Start = append(d.Start, sd)
	}
	for i := range r.Preempt {
		d.Preempt = append(d.Preempt, PreemptDecision{ID: r.Preempt[i].Allocation, TimeoutS: r.Preempt[i].Timeout.Seconds()})
	}
	for i := range r.Abort {
		d.Abort = append(d.Abort, r.Abort[i].Allocation)
	}
}

// parseOpIDString is ParseOpID on a string, without a copy.
func (w *Workload) parseOpIDString(id string) (int32, uint32, bool) {
	var buf [64]byte
	if len(id) > len(buf) {
		return 0, 0, false
	}
	n := copy(buf[:], id)
	return w.ParseOpID(buf[:n])
}

// AppendStartOperation appends the body of POST /api/v1/operations
// (docs/api.md#operations) for spec.
func AppendStartOperation(dst []byte, spec *schedule.OperationSpec) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendQuote(dst, spec.ID)
	dst = append(dst, `,"pool":`...)
	dst = strconv.AppendQuote(dst, spec.Pool)
	dst = append(dst, `,"type":`...)
	dst = strconv.AppendQuote(dst, spec.Type)
	if spec.Weight.Set {
		dst = append(dst, `,"weight":`...)
		dst = strconv.AppendFloat(dst, spec.Weight.V, 'g', -1, 64)
	}
	if spec.PreemptionMode == schedule.PreemptionGraceful {
		dst = append(dst, `,"preemption_mode":"graceful"`...)
	}
	dst = append(dst, `,"tasks":`...)
	dst = wire.AppendTasks(dst, spec.Tasks)
	return append(dst, '}')
}

// EntryError is the error of a heartbeat of a batch, as the answer gives
// it (docs/api.md#node-heartbeats).
type EntryError struct {
	Code, Message, Path string
}

func (e *EntryError) Error() string {
	if e.Path == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + " at " + e.Path + ": " + e.Message
}

// DecodeBatchResponse reads the answer to a batch of heartbeats (docs/api.md#batched-heartbeats,
// POST /api/v1/heartbeats) for the nodes names, in order: the decisions of
// the i-th into ds[i] (reset first), as DecodeResponse reads them, or its
// error into errs[i] (nil when it was answered). The answer must have one
// response per heartbeat, each with the node_id of its heartbeat. It
// allocates nothing unless ds's slices must grow, a heartbeat was refused
// or the answer is malformed. data is not retained.
func DecodeBatchResponse(data []byte, w *Workload, names []string, ds []Decisions, errs []*EntryError) error {
	var s scan
	s.Reset(data)
	if s.batch(w, names, ds, errs) {
		return nil
	}
	return s.error()
}

func (s *scan) batch(w *Workload, names []string, ds []Decisions, errs []*EntryError) bool {
	if !s.OpenObject() {
		return s.fail("want an object")
	}
	seen := false
	for first := true; s.More('}', first); first = false {
		k, _, ok := s.RawKey()
		if !ok {
			return false
		}
		if string(k) != "responses" {
			if !s.Skip() {
				return false
			}
			continue
		}
		seen = true
		if !s.OpenArray() {
			return s.fail("want an array of responses")
		}
		i := 0
		for first := true; s.More(']', first); first = false {
			if i == len(names) {
				return s.fail("want " + strconv.Itoa(len(names)) + " responses, one per heartbeat: found more")
			}
			if !s.entry(w, names[i], &ds[i], &errs[i]) {
				return false
			}
			i++
		}
		if s.Failed() {
			return false
		}
		if i != len(names) {
			return s.fail("want " + strconv.Itoa(len(names)) + " responses, one per heartbeat: found " + strconv.Itoa(i))
		}
	}
	if !seen && !s.Failed() {
		return s.fail("want responses")
	}
	return s.End()
}

// emptyEntryTail is the end of a response with nothing to do, after its
// node_id: the common one.
const emptyEntryTail = `","allocations_to_start":[],"allocations_to_preempt":[],"allocations_to_abort":[]}`

// entry reads the response to the heartbeat of node name.
func (s *scan) entry(w *Workload, name string, d *Decisions, e **EntryError) bool {
	d.Reset()
	*e = nil
	// NB: a response with nothing to do is matched whole, without the
	// scanner (most responses of a steady load).
	const head = `{"node_id":"`
	if r := s.Rest(); len(r) >= len(head)+len(name)+len(emptyEntryTail) && string(r[:len(head)]) == head &&
		string(r[len(head):len(head)+len(name)]) == name && string(r[len(head)+len(name):len(head)+len(name)+len(emptyEntryTail)]) == emptyEntryTail {
		s.Advance(len(head) + len(name) + len(emptyEntryTail))
		return true
	}
	if !s.OpenObject() {
		return s.fail("want a response object")
	}
	seenNode := false
	for first := true; s.More('}', first); first = false {
		k, _, ok := s.RawKey()
		if !ok {
			return false
		}
		switch string(k) {
		case "node_id":
			v, esc, ok := s.RawStr()
			if !ok || esc || string(v) != name {
				return s.failAt(s.Pos(), "want the response of node "+strconv.Quote(name))
			}
			seenNode = true
		case "allocations_to_start", "allocations_to_preempt", "allocations_to_abort":
			if !s.list(k[len("allocations_to_")], w, d) {
				return false
			}
		case "error":
			if *e = s.entryError(); *e == nil {
				return false
			}
		default:
			if !s.Skip() {
				return false
			}
		}
	}
	if s.Failed() {
		return false
	}
	if !seenNode {
		return s.fail("want the node_id of every response")
	}
	return true
}

// entryError reads the error object of a response; nil when it cannot.
func (s *scan) entryError() *EntryError {
	if !s.OpenObject() {
		s.fail("want an error object")
		return nil
	}
	e := &EntryError{}
	for first := true; s.More('}', first); first = false {
		k, _, ok := s.RawKey()
		if !ok {
			return nil
		}
		var dst *string
		switch string(k) {
		case "code":
			dst = &e.Code
		case "message":
			dst = &e.Message
		case "path":
			dst = &e.Path
		default:
			if !s.Skip() {
				return nil
			}
			continue
		}
		v, ok := s.Str()
		if !ok {
			s.fail("want a string")
			return nil
		}
		*dst = string(v)
	}
	if s.Failed() {
		return nil
	}
	return e
}
