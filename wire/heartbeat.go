package wire

import (
	"strconv"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// Heartbeat is a decoded node heartbeat request (docs/api.md#node-heartbeats). It is meant to
// be reused: Decode resets it and keeps the storage of its slices, so a
// pooled Heartbeat decodes without allocating once its slices have grown.
//
// AllocationUsage[i] is the resource_usage reported for Allocations[i] (zero
// when not given; its HasUsage says whether it was), as
// schedule.NodeHeartbeat takes them: it ends at the last report with a
// usage, and is empty when none has one. Tags
// are interned strings (see Interner) and never refer to the request body.
type Heartbeat struct {
	Limits          resource.Vec
	Usage           resource.Vec
	Tags            []string
	Allocations     []schedule.AllocationReport
	AllocationUsage []resource.Vec
	// AllocationOrigins[i] is the operation_id, task_index and resources
	// reported for Allocations[i] (its HasOrigin says whether they were),
	// covering the reports up to the last with an origin, like
	// AllocationUsage. Their Operation bytes are h's own (opBuf), valid
	// until the next Decode.
	AllocationOrigins []schedule.AllocationOrigin
	// Unschedulable: the heartbeat said "schedulable": false (cordon).
	Unschedulable bool
	// Refused counts the reports of state refused.
	Refused int
	// Reasons are the reasons given with reports (a refusal's), in report
	// order; their Text bytes are h's own, valid until the next Decode.
	Reasons []Reason

	opBuf     []byte
	reasonBuf []byte
	sc        scanner
}

// Reason is the reason a report gave: Allocations[Index]'s.
type Reason struct {
	Index int
	Text  []byte
}

// MaxReasonLength bounds a report's reason, in bytes.
const MaxReasonLength = 1024

// Limits of a heartbeat request beyond the body size limit.
const (
	MaxHeartbeatTags        = 256
	MaxTagLength            = 256
	MaxHeartbeatAllocations = 1 << 20
)

var heartbeatKeys = []string{"resource_limits", "resource_usage", "tags", "allocations", "schedulable"}
var allocationKeys = []string{"id", "state", "resource_usage", "operation_id", "task_index", "resources", "reason"}

// allocationStates lists the states of a report, for errors.
const allocationStates = "one of running, completed, failed, aborted, refused"

// maxTaskIndex bounds a reported task_index (an operation has far fewer
// tasks).
const maxTaskIndex = 1<<31 - 1

// Decode decodes and validates a heartbeat body into h. Strings that the
// result keeps (tags) come from in, which may be nil (then every tag is a
// new string). The returned error is an *Error with the JSON path of the
// first problem; h is then in an unspecified state. data is not retained.
//
// Decode allocates nothing when h's slices are large enough and in knows
// every tag.
func (h *Heartbeat) Decode(data []byte, in *Interner) error {
	h.Limits, h.Usage = resource.Vec{}, resource.Vec{}
	h.Tags, h.Allocations, h.AllocationUsage = h.Tags[:0], h.Allocations[:0], h.AllocationUsage[:0]
	h.AllocationOrigins, h.opBuf = h.AllocationOrigins[:0], h.opBuf[:0]
	h.Unschedulable, h.Refused, h.Reasons, h.reasonBuf = false, 0, h.Reasons[:0], h.reasonBuf[:0]
	s := &h.sc
	s.reset(data)
	e := h.decode(s, in)
	s.reset(nil) // keep no reference to the body
	if e != nil {
		return e
	}
	return nil
}

func (h *Heartbeat) decode(s *scanner, in *Interner) *Error {
	if s.Peek() == 0 && len(s.Rest()) == 0 {
		return jsonpath.NewError(CodeMalformedJSON, "$", "cannot parse an empty body: want a JSON object")
	}
	if !s.objectStart(rootPath("$")) || !h.members(s, in, heartbeatKeys, nil) || !s.End() {
		return h.fail(s)
	}
	return nil
}

// members decodes the members of a heartbeat object whose '{' has been
// read, up to and with its '}', and checks that resource_limits was given.
// keys are the object's known keys: heartbeatKeys, or batchEntryKeys
// (a heartbeat of a batch), whose node_id goes to b's entry. It reports
// false on an error, which s keeps; JSON paths are those of a heartbeat
// body ("$.allocations[0].id").
func (h *Heartbeat) members(s *scanner, in *Interner, keys []string, b *HeartbeatBatch) bool {
	root := rootPath("$")
	var seenLimits bool
	var seen uint8
	for first := true; s.More('}', first); first = false {
		k, ok := s.Key()
		if !ok {
			return false
		}
		if !s.once(&seen, k, keys, root) {
			return false
		}
		switch string(k) {
		case "resource_limits":
			h.Limits = resource.Vec{}
			s.resources(root.member("resource_limits"), &h.Limits)
			seenLimits = true
		case "resource_usage":
			h.Usage = resource.Vec{}
			s.resources(root.member("resource_usage"), &h.Usage)
		case "tags":
			h.Tags = h.Tags[:0]
			h.tags(s, in)
		case "allocations":
			h.Allocations, h.AllocationUsage = h.Allocations[:0], h.AllocationUsage[:0]
			h.AllocationOrigins, h.opBuf = h.AllocationOrigins[:0], h.opBuf[:0]
			h.Refused, h.Reasons, h.reasonBuf = 0, h.Reasons[:0], h.reasonBuf[:0]
			h.allocations(s)
		case "schedulable":
			v, _ := s.boolAt(root.member("schedulable"))
			h.Unschedulable = !v
		default:
			if b != nil && string(k) == "node_id" {
				b.nodeID(s, in)
				break
			}
			s.fail(jsonpath.UnknownKey("$", string(k), keys, "a heartbeat"))
		}
		if s.Failed() {
			return false
		}
	}
	if s.Failed() {
		return false
	}
	if !seenLimits {
		s.fail(jsonpath.NewError(CodeMissingAttribute, "$.resource_limits", "cannot register a node without resource_limits: want the node's resources"))
		return false
	}
	return true
}

// fail returns the scanner's error; a semantic error in a body that is not
// valid JSON after it is reported as the syntax error, as encoding/json
// checks the whole input first.
func (h *Heartbeat) fail(s *scanner) *Error {
	e := s.error()
	if e == nil {
		e = jsonpath.NewError(CodeMalformedJSON, "$", "cannot parse JSON")
	}
	if e.Code != CodeMalformedJSON {
		if _, se := jsonpath.Decode(s.Input(), "body"); se != nil && se.Code == CodeMalformedJSON {
			return se
		}
	}
	return e
}

func (h *Heartbeat) tags(s *scanner, in *Interner) {
	p := rootPath("$.tags")
	if !s.arrayStart(rootPath("$").member("tags"), "an array of strings") {
		return
	}
	for i, first := 0, true; s.More(']', first); i, first = i+1, false {
		b, ok := s.stringAt(p.index(i), "a string")
		if !ok {
			return
		}
		if len(h.Tags) >= MaxHeartbeatTags {
			s.fail(jsonpath.NewError(CodeInvalidValue, p.index(i).String(), "cannot accept more than "+strconv.Itoa(MaxHeartbeatTags)+" tags"))
			return
		}
		if len(b) == 0 || len(b) > MaxTagLength {
			s.fail(jsonpath.NewError(CodeInvalidValue, p.index(i).String(), "cannot use tag "+jsonpath.Describe(string(b))+": want 1-"+strconv.Itoa(MaxTagLength)+" bytes"))
			return
		}
		h.Tags = append(h.Tags, in.Intern(b))
	}
}

func (h *Heartbeat) allocations(s *scanner) {
	p := rootPath("$.allocations")
	if !s.arrayStart(rootPath("$").member("allocations"), "an array of allocations") {
		return
	}
	for i, first := 0, true; s.More(']', first); first = false {
		if len(h.Allocations) >= MaxHeartbeatAllocations {
			s.fail(jsonpath.NewError(CodeInvalidValue, p.index(i).String(), "cannot accept more than "+strconv.Itoa(MaxHeartbeatAllocations)+" allocations"))
			return
		}
		if n := h.compactAllocations(s, MaxHeartbeatAllocations-len(h.Allocations)); n > 0 {
			i += n
			continue
		}
		if !h.allocation(s, p.index(i)) {
			return
		}
		i++
	}
}

// allocation decodes one allocation object in the general path: any key
// order, spaces, resource_usage, and the errors.
func (h *Heartbeat) allocation(s *scanner, p lazyPath) bool {
	if !s.objectStart(p) {
		return false
	}
	var a schedule.AllocationReport
	var usage resource.Vec
	var org schedule.AllocationOrigin
	var seenID, seenState, seenOp, seenTask, seenRes, seenReason bool
	var reason []byte
	var seen uint8
	for first := true; s.More('}', first); first = false {
		k, ok := s.Key()
		if !ok || !s.once(&seen, k, allocationKeys, p) {
			return false
		}
		switch string(k) {
		case "id":
			ip := p.member("id")
			b, ok := s.stringAt(ip, "a decimal string such as \"1783\"")
			if !ok {
				return false
			}
			id, ok := ParseAllocationID(b)
			if !ok {
				s.fail(jsonpath.NewError(CodeInvalidValue, ip.String(), "cannot use "+jsonpath.Describe(string(b))+" as an allocation id: want a decimal string of a 64-bit number"))
				return false
			}
			a.ID, seenID = id, true
		case "state":
			sp := p.member("state")
			b, ok := s.stringAt(sp, allocationStates)
			if !ok {
				return false
			}
			st, ok := allocationState(b)
			if !ok {
				s.fail(jsonpath.NewError(CodeInvalidValue, sp.String(), "cannot use "+jsonpath.Describe(string(b))+": want "+allocationStates))
				return false
			}
			a.State, seenState = st, true
		case "resource_usage":
			usage = resource.Vec{}
			if !s.resources(p.member("resource_usage"), &usage) {
				return false
			}
			a.HasUsage = true
		case "operation_id":
			op := p.member("operation_id")
			b, ok := s.stringAt(op, "an operation id")
			if !ok {
				return false
			}
			if !tree.ValidName(b) {
				s.fail(jsonpath.NewError(CodeInvalidName, op.String(), "cannot use "+jsonpath.Describe(string(b))+" as an operation id: want 1-128 characters of [A-Za-z0-9._:-]"))
				return false
			}
			start := len(h.opBuf)
			h.opBuf = append(h.opBuf, b...)
			org.Operation, seenOp = h.opBuf[start:len(h.opBuf):len(h.opBuf)], true
		case "task_index":
			tp := p.member("task_index")
			tok, _, exact, isInt, ok := s.number(tp)
			if !ok {
				return false
			}
			if !isInt || exact > maxTaskIndex || len(tok) > 0 && tok[0] == '-' {
				s.fail(jsonpath.NewError(CodeInvalidValue, tp.String(), "cannot use "+string(tok)+" as a task index: want a whole number from 0 to "+strconv.Itoa(maxTaskIndex)))
				return false
			}
			org.Task, seenTask = int(exact), true
		case "resources":
			if !s.resources(p.member("resources"), &org.Resources) {
				return false
			}
			seenRes = true
		case "reason":
			rp := p.member("reason")
			b, ok := s.stringAt(rp, "a string")
			if !ok {
				return false
			}
			if len(b) > MaxReasonLength {
				s.fail(jsonpath.NewError(CodeInvalidValue, rp.String(), "cannot use a reason of "+strconv.Itoa(len(b))+" bytes: want at most "+strconv.Itoa(MaxReasonLength)))
				return false
			}
			start := len(h.reasonBuf)
			h.reasonBuf = append(h.reasonBuf, b...)
			reason = h.reasonBuf[start:len(h.reasonBuf):len(h.reasonBuf)]
			seenReason = true
		default:
			s.fail(jsonpath.UnknownKey(p.String(), string(k), allocationKeys, "an allocation"))
			return false
		}
	}
	if s.Failed() {
		return false
	}
	if !seenID {
		s.fail(jsonpath.NewError(CodeMissingAttribute, p.member("id").String(), "cannot settle an allocation without its id"))
		return false
	}
	if !seenState {
		s.fail(jsonpath.NewError(CodeMissingAttribute, p.member("state").String(), "cannot settle an allocation without its state: want "+allocationStates))
		return false
	}
	if seenOp || seenTask || seenRes {
		// The origin is all three or none (docs/api.md#node-heartbeats).
		for _, f := range []struct {
			seen bool
			key  string
		}{{seenOp, "operation_id"}, {seenTask, "task_index"}, {seenRes, "resources"}} {
			if !f.seen {
				s.fail(jsonpath.NewError(CodeMissingAttribute, p.member(f.key).String(), "cannot take the origin of an allocation without its "+f.key+": send operation_id, task_index and resources together, as allocations_to_start gave them"))
				return false
			}
		}
		a.HasOrigin = true
		for len(h.AllocationOrigins) < len(h.Allocations) {
			h.AllocationOrigins = append(h.AllocationOrigins, schedule.AllocationOrigin{})
		}
		h.AllocationOrigins = append(h.AllocationOrigins, org)
	}
	if a.HasUsage {
		// AllocationUsage covers the reports up to the last with a usage.
		for len(h.AllocationUsage) < len(h.Allocations) {
			h.AllocationUsage = append(h.AllocationUsage, resource.Vec{})
		}
		h.AllocationUsage = append(h.AllocationUsage, usage)
	}
	if seenReason {
		h.Reasons = append(h.Reasons, Reason{Index: len(h.Allocations), Text: reason})
	}
	if a.State == schedule.AllocRefused {
		h.Refused++
	}
	h.Allocations = append(h.Allocations, a)
	return true
}

// compactAllocations decodes the allocations at the scanner's position,
// and the commas between them, while they are written exactly as
// {"id":"<id>","state":"<state>"}, the form nodes (and loadgen) write, with
// a valid id and state; it stops after limit of them, and returns how many
// it decoded, leaving the scanner right after the last. Anything else
// (spaces, another key order, resource_usage, escapes, a bad value) is left
// where it is for the general path, which also words the errors. It saves
// the general path's key matching and the scanner's calls on the hot path:
// a heartbeat carries every allocation of its node.
//
// NB: the id's digits are read here, not by ParseAllocationID, whose
// overflow check divides at every digit; ids of 20 digits go to the
// general path.
func (h *Heartbeat) compactAllocations(s *scanner, limit int) int {
	d := s.Rest()
	allocs := h.Allocations
	n, used := 0, 0
	for n < limit {
		k, id, st := compactAllocation(d[used:], n > 0)
		if k == 0 {
			break
		}
		rep := schedule.AllocationReport{ID: id, State: st}
		if d[used+k-1] != '}' {
			// running", then the origin: `,"operation_id":…}`.
			h.Allocations = allocs
			m := h.compactOrigin(d[used+k:], len(allocs))
			if m == 0 {
				break
			}
			k += m
			rep.HasOrigin = true
		}
		allocs = append(allocs, rep)
		used += k
		n++
	}
	h.Allocations = allocs
	s.Advance(used)
	return n
}

// compactAllocation parses one allocation in the compact form at the start
// of d, after a comma when comma is set, and returns the bytes it takes
// (0: d does not start with one).
func compactAllocation(d []byte, comma bool) (int, uint64, schedule.AllocationState) {
	const idPrefix, statePrefix = `{"id":"`, `","state":"`
	i := 0
	if comma {
		if len(d) == 0 || d[0] != ',' {
			return 0, 0, 0
		}
		i = 1
	}
	if len(d)-i < len(idPrefix)+1+len(statePrefix)+len(`failed"}`) || string(d[i:i+len(idPrefix)]) != idPrefix {
		return 0, 0, 0
	}
	i += len(idPrefix)
	start := i
	var id uint64
	for ; i < len(d) && i < start+19; i++ {
		c := d[i] - '0'
		if c > 9 {
			break
		}
		id = id*10 + uint64(c)
	}
	if n := i - start; n == 0 || n > 1 && d[start] == '0' ||
		len(d)-i < len(statePrefix)+len(`failed"}`) || string(d[i:i+len(statePrefix)]) != statePrefix {
		return 0, 0, 0
	}
	i += len(statePrefix)
	switch rest := d[i:]; {
	case len(rest) >= len(`running"}`) && string(rest[:len(`running"}`)]) == `running"}`:
		return i + len(`running"}`), id, schedule.AllocRunning
	case len(rest) >= len(`running",`) && string(rest[:len(`running",`)]) == `running",`:
		// The origin follows (compactOrigin): the caller sees no '}'.
		return i + len(`running"`), id, schedule.AllocRunning
	case len(rest) >= len(`completed"}`) && string(rest[:len(`completed"}`)]) == `completed"}`:
		return i + len(`completed"}`), id, schedule.AllocCompleted
	case string(rest[:len(`failed"}`)]) == `failed"}`:
		return i + len(`failed"}`), id, schedule.AllocFailed
	case len(rest) >= len(`aborted"}`) && string(rest[:len(`aborted"}`)]) == `aborted"}`:
		return i + len(`aborted"}`), id, schedule.AllocAborted
	}
	return 0, 0, 0
}

// compactOrigin decodes the origin of the allocation being decoded (report
// index i), written exactly as nodes (and loadgen) echo
// allocations_to_start: `,"operation_id":"<id>","task_index":<n>,
// "resources":{"<kind>":<amount>,…}}` up to and with the allocation's '}',
// amounts whole numbers (cpu with at most two decimals) below 10^15, each
// kind once. It returns the bytes it takes, 0 (and h as it was) when d
// holds anything else: the general path then decodes the allocation and
// words the errors.
//
// NB: one pass over the bytes, no lookups: when every running allocation
// carries an origin this is most of a heartbeat's decoding.
// BenchmarkDecodeHeartbeat/origins (20 allocations, 5 runs, median and
// range): 6,759 ns (6,694–6,874, 3 runs) through the general path; 1,802
// (1,775–1,830, 3 runs)
// with a memo of recent origins and resource.KindByName; 1,090
// (1,078–1,099) in one pass; the compact form without origins 433
// (431–438).
func (h *Heartbeat) compactOrigin(d []byte, i int) int {
	const opPrefix, taskPrefix, resPrefix = `,"operation_id":"`, `","task_index":`, `,"resources":{`
	if len(d) < len(opPrefix) || string(d[:len(opPrefix)]) != opPrefix {
		return 0
	}
	j := len(opPrefix)
	opStart := j
	for j < len(d) && nameChar[d[j]] {
		j++
	}
	op := d[opStart:j]
	if n := len(op); n == 0 || n > 128 || op[0] == '.' && (n == 1 || n == 2 && op[1] == '.') ||
		len(d)-j < len(taskPrefix) || string(d[j:j+len(taskPrefix)]) != taskPrefix {
		return 0
	}
	j += len(taskPrefix)
	task, digits := 0, 0
	for ; j < len(d) && d[j] >= '0' && d[j] <= '9'; j++ {
		task = task*10 + int(d[j]-'0')
		digits++
	}
	if digits == 0 || digits > 9 || digits > 1 && d[j-digits] == '0' || len(d)-j < len(resPrefix) || string(d[j:j+len(resPrefix)]) != resPrefix {
		return 0
	}
	j += len(resPrefix)
	var org schedule.AllocationOrigin
	var seen uint8
	if j < len(d) && d[j] == '}' {
		j++
	} else {
		for {
			kind, m := compactKind(d[j:])
			if m == 0 || seen&(1<<kind) != 0 {
				return 0
			}
			seen |= 1 << kind
			j += m
			v, m := compactAmount(d[j:], kind == resource.CPU)
			if m == 0 {
				return 0
			}
			org.Resources[kind] = v
			j += m
			if j < len(d) && d[j] == ',' {
				j++
				continue
			}
			if j < len(d) && d[j] == '}' {
				j++
				break
			}
			return 0
		}
	}
	if j >= len(d) || d[j] != '}' {
		return 0
	}
	j++
	org.Task = task
	start := len(h.opBuf)
	h.opBuf = append(h.opBuf, op...)
	org.Operation = h.opBuf[start:len(h.opBuf):len(h.opBuf)]
	for len(h.AllocationOrigins) < i {
		h.AllocationOrigins = append(h.AllocationOrigins, schedule.AllocationOrigin{})
	}
	h.AllocationOrigins = append(h.AllocationOrigins, org)
	return j
}

// nameChar marks the bytes of a valid name (tree.ValidName).
var nameChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = tree.ValidName([]byte{byte(c)}) || c == '.'
	}
	return t
}()

// compactKind reads `"<kind>":` at the start of d and returns the kind and
// the bytes it takes (0: anything else).
func compactKind(d []byte) (resource.Kind, int) {
	if len(d) < 6 || d[0] != '"' {
		return 0, 0
	}
	var kind resource.Kind
	var name string
	switch d[1] {
	case 'c':
		kind, name = resource.CPU, `"cpu":`
	case 'm':
		kind, name = resource.Memory, `"memory":`
	case 'u':
		kind, name = resource.UserSlots, `"user_slots":`
	case 'g':
		kind, name = resource.GPU, `"gpu":`
	case 'n':
		kind, name = resource.Network, `"network":`
	default:
		return 0, 0
	}
	if len(d) < len(name) || string(d[:len(name)]) != name {
		return 0, 0
	}
	return kind, len(name)
}

// compactAmount reads a resource amount at the start of d written as
// digits, with at most two decimals for cpu (returned in centi-cores), no
// leading zero, below 2^53; it returns the bytes it takes (0: anything
// else).
func compactAmount(d []byte, cpu bool) (int64, int) {
	var v int64
	j := 0
	for ; j < len(d) && d[j] >= '0' && d[j] <= '9'; j++ {
		if j >= 15 {
			return 0, 0 // beyond 2^53 possibly: the general path decides
		}
		v = v*10 + int64(d[j]-'0')
	}
	if j == 0 || j > 1 && d[0] == '0' {
		return 0, 0
	}
	if !cpu {
		if j < len(d) && (d[j] == '.' || d[j] == 'e' || d[j] == 'E') {
			return 0, 0
		}
		return v, j
	}
	v *= resource.CPUScale
	if j < len(d) && d[j] == '.' {
		f := 0
		for k := j + 1; k < len(d) && d[k] >= '0' && d[k] <= '9'; k++ {
			f++
			if f > 2 {
				return 0, 0
			}
			scale := int64(10)
			if f == 2 {
				scale = 1
			}
			v += int64(d[k]-'0') * scale
		}
		if f == 0 {
			return 0, 0
		}
		j += 1 + f
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		return 0, 0
	}
	return v, j
}

// ParseAllocationID parses a decimal allocation id as heartbeats and their
// responses write it (docs/api.md#node-heartbeats): 1-20 digits, no sign, no leading zero, at
// most 2^64-1. It does not allocate; loadgen may use it for the ids of a
// response.
func ParseAllocationID(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

func allocationState(b []byte) (schedule.AllocationState, bool) {
	switch string(b) {
	case "running":
		return schedule.AllocRunning, true
	case "completed":
		return schedule.AllocCompleted, true
	case "failed":
		return schedule.AllocFailed, true
	case "aborted":
		return schedule.AllocAborted, true
	case "refused":
		return schedule.AllocRefused, true
	}
	return 0, false
}

// AllocationStateName is the wire name of a reported allocation state.
func AllocationStateName(st schedule.AllocationState) string {
	switch st {
	case schedule.AllocCompleted:
		return "completed"
	case schedule.AllocFailed:
		return "failed"
	case schedule.AllocAborted:
		return "aborted"
	case schedule.AllocRefused:
		return "refused"
	}
	return "running"
}

// AppendHeartbeatResponse appends the JSON answer to a heartbeat (docs/api.md#node-heartbeats):
//
//	{"allocations_to_start":[{"id":"1802","operation_id":"op-17","task_index":0,"resources":{"cpu":1,…}}],
//	 "allocations_to_preempt":[{"id":"1783","operation_id":"op-3","reason":"preempted to start allocation 1802 of operation op-21 (starving)","timeout_s":10}],
//	 "allocations_to_abort":[{"id":"1650","operation_id":"op-9","reason":"operation op-9 aborted"}]}
//
// Allocation ids are decimal strings; resources list their non-zero
// components, cpu in cores. Every list is present,
// empty when there is nothing to do. The encoder allocates only to grow dst.
func AppendHeartbeatResponse(dst []byte, r *schedule.Response) []byte {
	dst = append(dst, '{')
	dst = AppendHeartbeatResponseMembers(dst, r)
	return append(dst, '}')
}

// AppendHeartbeatResponseMembers appends the members of the answer to a
// heartbeat, as AppendHeartbeatResponse writes them, without the braces:
// "allocations_to_start":[…],"allocations_to_preempt":[…],"allocations_to_abort":[…].
// A batch's answer puts them after the node's id.
func AppendHeartbeatResponseMembers(dst []byte, r *schedule.Response) []byte {
	if len(r.Start) == 0 && len(r.Preempt) == 0 && len(r.Abort) == 0 {
		return append(dst, emptyResponseMembers...)
	}
	dst = append(dst, `"allocations_to_start":[`...)
	for i := range r.Start {
		d := &r.Start[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendAllocationTask(dst, d.Allocation, d.Operation, d.Task, &d.Resources)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"allocations_to_preempt":[`...)
	for i := range r.Preempt {
		d := &r.Preempt[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendAllocationRef(dst, d.Allocation, d.Operation)
		dst = append(dst, `,"reason":"`...)
		dst = appendPreemptReason(dst, d)
		dst = append(dst, `","timeout_s":`...)
		dst = appendFloat(dst, d.Timeout.Seconds())
		dst = append(dst, '}')
	}
	dst = append(dst, `],"allocations_to_abort":[`...)
	for i := range r.Abort {
		d := &r.Abort[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendAllocationRef(dst, d.Allocation, d.Operation)
		dst = append(dst, `,"reason":`...)
		dst = jsonpath.AppendString(dst, abortReason(d))
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// emptyResponseMembers are the members of an answer with nothing to do,
// the common case.
const emptyResponseMembers = `"allocations_to_start":[],"allocations_to_preempt":[],"allocations_to_abort":[]`

// appendAllocationRef opens an allocation's object with its id (a decimal
// string) and, when known, its operation: {"id":"1783","operation_id":"op-3"
func appendAllocationRef(dst []byte, id uint64, op string) []byte {
	dst = append(dst, `{"id":"`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, '"')
	if op != "" {
		dst = append(dst, `,"operation_id":`...)
		dst = jsonpath.AppendString(dst, op)
	}
	return dst
}

// appendAllocationTask opens an allocation's object with its id, operation,
// task and resources, as a start decision and the node orchid write them.
func appendAllocationTask(dst []byte, id uint64, op string, task int, res *resource.Vec) []byte {
	dst = appendAllocationRef(dst, id, op)
	dst = append(dst, `,"task_index":`...)
	dst = strconv.AppendInt(dst, int64(task), 10)
	dst = append(dst, `,"resources":`...)
	return AppendResources(dst, res)
}

// appendPreemptReason appends the sentence of a preemption, without quotes:
// "preempted to start allocation 1802 of operation op-21 (starving)".
// Operation names are [A-Za-z0-9._:-] (tree.ValidName) and reasons plain
// words, so nothing needs escaping.
func appendPreemptReason(dst []byte, d *schedule.PreemptDecision) []byte {
	dst = append(dst, "preempted"...)
	switch {
	case d.ForAllocation != 0:
		dst = append(dst, " to start allocation "...)
		dst = strconv.AppendUint(dst, d.ForAllocation, 10)
		if d.ForOperation != "" {
			dst = append(dst, " of operation "...)
			dst = appendStringBody(dst, d.ForOperation)
		}
	case d.ForOperation != "":
		dst = append(dst, " for operation "...)
		dst = appendStringBody(dst, d.ForOperation)
	}
	dst = append(dst, " ("...)
	dst = appendStringBody(dst, d.Reason.String())
	return append(dst, ')')
}

// appendStringBody appends s JSON-escaped, without the quotes.
func appendStringBody(dst []byte, s string) []byte {
	n := len(dst)
	dst = jsonpath.AppendString(dst, s)
	// AppendString wrote "…": drop the quotes.
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// abortReason is the sentence of an abort decision. It allocates; aborts
// are rare.
func abortReason(d *schedule.AbortDecision) string {
	id := strconv.FormatUint(d.Allocation, 10)
	switch d.Reason {
	case schedule.AbortUnknownAllocation:
		return "allocation " + id + " is unknown to the scheduler"
	case schedule.AbortOperationFinished:
		return "operation " + d.Operation + " " + d.OperationState.String()
	case schedule.AbortPreemptionTimedOut:
		return "allocation " + id + " was preempted and outlived its preemption timeout"
	case schedule.AbortNodeOvercommit:
		return "node resources overcommitted: allocation " + id + " aborted"
	case schedule.AbortVanished:
		return "allocation " + id + " vanished: its node stopped listing it"
	case schedule.AbortNotAdopted:
		return "allocation " + id + " not adopted after the scheduler's restart: operation " + d.Operation + " is not running or has no job left for it"
	}
	return d.Reason.String()
}

// AppendResources appends a resource object with the non-zero components
// of v, cpu in cores: {"cpu":1.5,"memory":4294967296}.
func AppendResources(dst []byte, v *resource.Vec) []byte {
	var nonZero [resource.Count]bool
	for k, x := range v {
		nonZero[k] = x != 0
	}
	return appendResourceMap(dst, v, &nonZero)
}

// appendResourceMap appends a resource object with the components of v
// that have, cpu in cores.
func appendResourceMap(dst []byte, v *resource.Vec, have *[resource.Count]bool) []byte {
	dst = append(dst, '{')
	first := true
	for k := range v {
		if !have[k] {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, kindNames[k]...)
		dst = append(dst, `":`...)
		dst = appendAmount(dst, resource.Kind(k), v[k])
	}
	return append(dst, '}')
}

// AppendFullResources appends every component of v, cpu in cores.
func AppendFullResources(dst []byte, v *resource.Vec) []byte {
	for k := range v {
		dst = append(dst, resourceKeys[k]...)
		dst = appendAmount(dst, resource.Kind(k), v[k])
	}
	return append(dst, '}')
}

func appendAmount(dst []byte, k resource.Kind, x int64) []byte {
	if k == resource.CPU {
		// Centi-cores as a decimal: exact, no float rounding.
		if x < 0 {
			dst = append(dst, '-')
			x = -x
		}
		dst = strconv.AppendInt(dst, x/resource.CPUScale, 10)
		if f := x % resource.CPUScale; f != 0 {
			dst = append(dst, '.', byte('0'+f/10))
			if f%10 != 0 {
				dst = append(dst, byte('0'+f%10))
			}
		}
		return dst
	}
	return strconv.AppendInt(dst, x, 10)
}
