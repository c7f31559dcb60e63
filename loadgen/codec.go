package loadgen

import (
	"strconv"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/facade/wire"
)

// DecodeError is a heartbeat answer DecodeResponse cannot read.
type DecodeError struct {
	Offset int
	What   string
}

func (e *DecodeError) Error() string {
	return "loadgen: cannot decode the heartbeat answer at byte " + strconv.Itoa(e.Offset) + ": " + e.What
}

// maxDepth of nested values DecodeResponse skips.
const maxSkipDepth = 64

// DecodeResponse reads a heartbeat answer (api.md §4, as
// wire.AppendHeartbeatResponse writes it) into d, which it resets first:
// the ids of allocations_to_start with their operation's slot and
// generation (w.ParseOpID; -1 for operations of other runs), the ids and
// timeout_s of allocations_to_preempt and the ids of allocations_to_abort.
// Other keys and values are skipped whatever their type; the three lists
// may be missing. It allocates nothing unless d's slices must grow or the
// answer is malformed. data is not retained.
func DecodeResponse(data []byte, w *Workload, d *Decisions) error {
	d.Reset()
	s := scan{b: data}
	s.ws()
	if !s.eat('{') {
		return s.fail("want an object")
	}
	for first := true; ; first = false {
		s.ws()
		if s.eat('}') {
			break
		}
		if !first {
			if !s.eat(',') {
				return s.fail("want ',' or '}'")
			}
			s.ws()
		}
		k, ok := s.key()
		if !ok {
			return s.err
		}
		switch string(k) {
		case "allocations_to_start", "allocations_to_preempt", "allocations_to_abort":
			if !s.list(k[len("allocations_to_")], w, d) {
				return s.err
			}
		default:
			if !s.skip(0) {
				return s.err
			}
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("want the end after the object")
	}
	return nil
}

type scan struct {
	b   []byte
	i   int
	err *DecodeError
}

func (s *scan) fail(what string) *DecodeError {
	if s.err == nil {
		s.err = &DecodeError{Offset: s.i, What: what}
	}
	return s.err
}

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scan) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns its raw bytes between the quotes; esc
// says whether it holds escapes (left as they are).
func (s *scan) str() (raw []byte, esc, ok bool) {
	if !s.eat('"') {
		s.fail("want a string")
		return nil, false, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], esc, true
		case c == '\\':
			esc = true
			s.i += 2
		case c < 0x20:
			s.fail("want no control characters in a string")
			return nil, false, false
		default:
			s.i++
		}
	}
	s.fail("want the end of the string")
	return nil, false, false
}

// key reads `"name":`.
func (s *scan) key() ([]byte, bool) {
	k, _, ok := s.str()
	if !ok {
		return nil, false
	}
	s.ws()
	if !s.eat(':') {
		s.fail("want ':' after a key")
		return nil, false
	}
	s.ws()
	return k, true
}

// more reads up to the next member or element of the object or array
// being read (its opening bracket or a previous member consumed; first
// says which): it consumes the ',' before another one, or the closing
// byte. It reports whether another one follows, and ok = false after a
// syntax error.
func (s *scan) more(closing byte, first bool) (more, ok bool) {
	s.ws()
	if s.eat(closing) {
		return false, true
	}
	if !first {
		if !s.eat(',') {
			s.fail("want ',' or '" + string(closing) + "'")
			return false, false
		}
		s.ws()
	}
	return true, true
}

// list reads one of the decision lists; which is the first letter after
// "allocations_to_": 's'tart, 'p'reempt or 'a'bort.
func (s *scan) list(which byte, w *Workload, d *Decisions) bool {
	if s.literal("null") {
		return true
	}
	if !s.eat('[') {
		s.fail("want an array of allocations")
		return false
	}
	for first := true; ; first = false {
		if more, ok := s.more(']', first); !more {
			return ok
		}
		if !s.decision(which, w, d) {
			return false
		}
	}
}

func (s *scan) decision(which byte, w *Workload, d *Decisions) bool {
	if !s.eat('{') {
		s.fail("want an allocation object")
		return false
	}
	var id uint64
	var seenID bool
	slot, gen := int32(-1), uint32(0)
	timeout := 0.0
	for first := true; ; first = false {
		if more, ok := s.more('}', first); !more {
			if !ok {
				return false
			}
			break
		}
		k, ok := s.key()
		if !ok {
			return false
		}
		switch {
		case string(k) == "id":
			start := s.i
			v, esc, ok := s.str()
			if !ok {
				return false
			}
			if id, ok = wire.ParseAllocationID(v); esc || !ok {
				s.i = start
				s.fail("want an allocation id of decimal digits")
				return false
			}
			seenID = true
		case string(k) == "operation_id" && which == 's':
			v, esc, ok := s.str()
			if !ok {
				return false
			}
			if !esc && w != nil {
				if sl, g, ok := w.ParseOpID(v); ok {
					slot, gen = sl, g
				}
			}
		case string(k) == "timeout_s" && which == 'p':
			f, ok := s.number()
			if !ok {
				return false
			}
			timeout = f
		default:
			if !s.skip(1) {
				return false
			}
		}
	}
	if !seenID {
		s.fail("want an id in every allocation")
		return false
	}
	switch which {
	case 's':
		d.Start = append(d.Start, StartDecision{ID: id, Slot: slot, Gen: gen})
	case 'p':
		d.Preempt = append(d.Preempt, PreemptDecision{ID: id, TimeoutS: timeout})
	default:
		d.Abort = append(d.Abort, id)
	}
	return true
}

func (s *scan) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number reads a JSON number as a float64 (exact for the integers and
// short decimals the server writes; approximate beyond, which is enough
// for timeouts).
func (s *scan) number() (float64, bool) {
	start := s.i
	neg := s.eat('-')
	digits := 0
	var mant float64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		mant = mant*10 + float64(s.b[s.i]-'0')
		s.i++
		digits++
	}
	if digits == 0 {
		s.i = start
		s.fail("want a number")
		return 0, false
	}
	scale := 0
	if s.eat('.') {
		fd := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			mant = mant*10 + float64(s.b[s.i]-'0')
			s.i++
			fd++
		}
		if fd == 0 {
			s.fail("want digits after '.'")
			return 0, false
		}
		scale -= fd
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		eneg := false
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			eneg = s.b[s.i] == '-'
			s.i++
		}
		e, ed := 0, 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			if e < 10000 {
				e = e*10 + int(s.b[s.i]-'0')
			}
			s.i++
			ed++
		}
		if ed == 0 {
			s.fail("want digits in the exponent")
			return 0, false
		}
		if eneg {
			e = -e
		}
		scale += e
	}
	f := mant
	for ; scale > 0; scale-- {
		f *= 10
	}
	for ; scale < 0; scale++ {
		f /= 10
	}
	if neg {
		f = -f
	}
	return f, true
}

// skip skips one value of any type.
func (s *scan) skip(depth int) bool {
	if depth > maxSkipDepth {
		s.fail("want less nesting")
		return false
	}
	if s.i >= len(s.b) {
		s.fail("want a value")
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		_, ok := s.number()
		return ok
	case c == 't':
		return s.literal("true") || s.fail("want a value") == nil
	case c == 'f':
		return s.literal("false") || s.fail("want a value") == nil
	case c == 'n':
		return s.literal("null") || s.fail("want a value") == nil
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		s.i++
		for first := true; ; first = false {
			if more, ok := s.more(closing, first); !more {
				return ok
			}
			if c == '{' {
				if _, ok := s.key(); !ok {
					return false
				}
			}
			if !s.skip(depth + 1) {
				return false
			}
		}
	}
	s.fail("want a value")
	return false
}

// FromResponse converts the core's answer into Decisions (the in-process
// driver).
func FromResponse(r *schedule.Response, w *Workload, d *Decisions) {
	d.Reset()
	for i := range r.Start {
		sd := StartDecision{ID: r.Start[i].Allocation, Slot: -1}
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
// (api.md §3) for spec.
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
	dst = append(dst, `,"tasks":[`...)
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = strconv.AppendQuote(dst, t.Name)
		dst = append(dst, `,"job_count":`...)
		dst = strconv.AppendInt(dst, t.JobCount, 10)
		dst = append(dst, `,"resources":`...)
		dst = wire.AppendResources(dst, &t.Resources)
		if t.DurationHintS > 0 {
			dst = append(dst, `,"duration_hint_s":`...)
			dst = strconv.AppendFloat(dst, t.DurationHintS, 'g', -1, 64)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}
