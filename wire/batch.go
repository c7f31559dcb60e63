package wire

import (
	"hash/maphash"
	"strconv"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/internal/jsonscan"
)

// HeartbeatBatch is a decoded batch of heartbeats, the body of POST
// /api/v1/heartbeats (docs/api.md#batched-heartbeats):
//
//	{"heartbeats": [{"node_id": "n-1", …a heartbeat (docs/api.md#node-heartbeats)…}, …]}
//
// It is meant to be reused: Decode keeps the storage of Entries and of each
// entry's slices, so a pooled HeartbeatBatch decodes without allocating
// once they have grown.
//
// Errors come in two kinds. The batch's own (the envelope's) make Decode
// fail, and the whole request is refused: a body that is not JSON, not an
// object with exactly the key "heartbeats" holding an array, more entries
// than the limit, an entry that is not an object or has no node_id string
// (or two), a node named by two entries. An entry's own error — a node_id
// that is not a valid name, or anything its heartbeat's own POST
// /api/v1/nodes/{id}/heartbeat would refuse when decoding — is kept in
// BatchEntry.Err, with its JSON path in the batch body
// ("$.heartbeats[3].allocations[0].state"), and the other entries are
// decoded as if it were not there.
type HeartbeatBatch struct {
	// Entries are the batch's heartbeats, in the order of the body.
	Entries []BatchEntry

	sc    scanner
	nodes nodeSet
	// While an entry is decoded: its index, and whether the batch itself
	// has failed (its node_id is not a string, or is given twice).
	cur     int
	envFail bool
}

// BatchEntry is one heartbeat of a batch.
type BatchEntry struct {
	// Node is the entry's node_id as decoded: an interned string
	// (Interner) when it is a valid node name.
	Node string
	// Err is the entry's own error (see HeartbeatBatch), nil when its
	// heartbeat decoded; Heartbeat is then in an unspecified state.
	Err *Error
	// Heartbeat is the entry's heartbeat, as Heartbeat.Decode decodes the
	// body of POST /api/v1/nodes/{node_id}/heartbeat.
	Heartbeat Heartbeat

	hasNode, badName bool
}

// batchKeys are the keys of a batch body; batchEntryKeys those of one of
// its heartbeats.
var (
	batchKeys      = []string{"heartbeats"}
	batchEntryKeys = []string{"resource_limits", "resource_usage", "tags", "allocations", "schedulable", "node_id"}
)

// Decode decodes and validates a batch body into b; max is the most
// entries it may have (max_heartbeats_per_batch). The returned error is the
// batch's own, an *Error with the JSON path of the first problem (b's
// entries are then unspecified); entries' errors are in their Err. Strings
// that the result keeps (node ids, tags) come from in, which may be nil
// (then each is a new string). data is not retained.
//
// Decode allocates nothing when b's slices are large enough, in knows
// every node and tag and no entry has an error.
func (b *HeartbeatBatch) Decode(data []byte, in *Interner, max int) error {
	b.Entries = b.Entries[:0]
	s := &b.sc
	s.reset(data)
	e := b.decode(s, in, max)
	s.reset(nil) // keep no reference to the body
	if e != nil {
		return e
	}
	return nil
}

func (b *HeartbeatBatch) decode(s *scanner, in *Interner, max int) *Error {
	if s.Peek() == 0 && len(s.Rest()) == 0 {
		return jsonpath.NewError(CodeMalformedJSON, "$", "cannot parse an empty body: want a JSON object")
	}
	root := rootPath("$")
	if !s.objectStart(root) {
		return failed(s)
	}
	var seen uint8
	for first := true; s.More('}', first); first = false {
		k, ok := s.Key()
		if !ok || !s.once(&seen, k, batchKeys, root) {
			return failed(s)
		}
		if string(k) != "heartbeats" {
			s.fail(jsonpath.UnknownKey("$", string(k), batchKeys, "a batch of heartbeats"))
			return failed(s)
		}
		if !b.entries(s, in, max) {
			return failed(s)
		}
	}
	if !s.End() {
		return failed(s)
	}
	if seen == 0 {
		return jsonpath.NewError(CodeMissingAttribute, "$.heartbeats", `cannot read a batch without heartbeats: want {"heartbeats": [{"node_id": …, …a heartbeat…}, …]}`)
	}
	return nil
}

// failed returns the scanner's error; a semantic error in a body that is
// not valid JSON after it is reported as the syntax error, as
// encoding/json checks the whole input first.
func failed(s *scanner) *Error {
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

func (b *HeartbeatBatch) entries(s *scanner, in *Interner, max int) bool {
	b.Entries = b.Entries[:0]
	if !s.arrayStart(rootPath("$").member("heartbeats"), "an array of heartbeats") {
		return false
	}
	b.nodes.reset()
	for i, first := 0, true; s.More(']', first); i, first = i+1, false {
		if i >= max {
			s.fail(jsonpath.NewError(CodeInvalidValue, "$.heartbeats", "cannot accept more than "+strconv.Itoa(max)+
				" heartbeats in one batch: want at most max_heartbeats_per_batch ("+strconv.Itoa(max)+"); split the batch"))
			return false
		}
		if !b.entry(s, in, i) {
			return false
		}
	}
	return !s.Failed()
}

// entry decodes entry i of the heartbeats array, the next value. It reports
// false when the batch fails (s keeps the error); an error of the entry's
// own goes to its Err.
func (b *HeartbeatBatch) entry(s *scanner, in *Interner, i int) bool {
	e := b.add()
	b.cur, b.envFail = i, false
	start := s.Mark()
	if !s.objectStart(rootPath("$.heartbeats").index(i)) {
		return false
	}
	h := &e.Heartbeat
	h.clear()
	if !h.members(s, in, batchEntryKeys, b) {
		if b.envFail {
			return false
		}
		// The entry's own error: keep it, then read the entry again from
		// its start, to skip it (a syntax error in it fails the batch)
		// and to find its node_id.
		e.Err = inEntry(s.error(), i)
		if !s.restore(start) || !b.skipEntry(s, in) {
			return false
		}
	}
	if !e.hasNode {
		s.fail(jsonpath.NewError(CodeMissingAttribute, entryPath(i)+".node_id", "cannot answer a heartbeat without its node_id: want the node's id"))
		return false
	}
	if e.badName {
		// Checked first, as the URL's id is for POST …/{id}/heartbeat.
		e.Err = jsonpath.NewError(CodeInvalidName, entryPath(i)+".node_id",
			"cannot use "+strconv.Quote(truncate(e.Node, 64))+" as a node id: want 1-253 characters of [A-Za-z0-9._:-]")
	}
	if j, dup := b.nodes.add(b.Entries, i); dup {
		s.fail(jsonpath.NewError(CodeDuplicateName, entryPath(i)+".node_id", "cannot take two heartbeats of node "+
			jsonpath.Describe(e.Node)+" in one batch: "+entryPath(j)+" has one already"))
		return false
	}
	return true
}

// add appends an entry to b.Entries, reusing the storage of one that was
// there before.
func (b *HeartbeatBatch) add() *BatchEntry {
	n := len(b.Entries)
	if n < cap(b.Entries) {
		b.Entries = b.Entries[:n+1]
	} else {
		b.Entries = append(b.Entries, BatchEntry{})
	}
	e := &b.Entries[n]
	e.Node, e.Err, e.hasNode, e.badName = "", nil, false, false
	return e
}

// nodeID reads the node_id of the current entry, the next value. A value
// that is not a string fails the batch; a string that is not a node name
// is the entry's error (entry).
func (b *HeartbeatBatch) nodeID(s *scanner, in *Interner) {
	e := &b.Entries[b.cur]
	v, ok := s.Str()
	if !ok {
		b.envFail = true
		s.wrongType(rootPath(entryPath(b.cur)).member("node_id"), "a node id: a string of 1-253 characters of [A-Za-z0-9._:-]")
		return
	}
	e.hasNode = true
	if tree.ValidNodeName(v) {
		e.Node, e.badName = in.Intern(v), false
		return
	}
	e.Node, e.badName = string(v), true
}

// skipEntry reads the object of the current entry, from its '{', skipping
// every member but node_id, which it reads. A second node_id fails the
// batch: which node it is would be ambiguous.
func (b *HeartbeatBatch) skipEntry(s *scanner, in *Interner) bool {
	e := &b.Entries[b.cur]
	e.hasNode = false
	s.OpenObject()
	for first := true; s.More('}', first); first = false {
		k, ok := s.Key()
		if !ok {
			return false
		}
		if string(k) != "node_id" {
			if !s.Skip() {
				return false
			}
			continue
		}
		if e.hasNode {
			s.fail(jsonpath.NewError(CodeDuplicateKey, entryPath(b.cur)+".node_id", `cannot use key "node_id" twice in one object`))
			return false
		}
		if b.nodeID(s, in); b.envFail {
			return false
		}
	}
	return !s.Failed()
}

// truncate cuts s to n bytes, with "…" after, as the facade's messages about
// names in URLs do.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// entryPath is the JSON path of entry i: $.heartbeats[i].
func entryPath(i int) string { return jsonpath.Index("$.heartbeats", i) }

// inEntry returns err, an error with a path of a heartbeat body ("$…"),
// with the path of the same value in entry i of a batch.
func inEntry(err *Error, i int) *Error {
	if err == nil { // BUG: a failure without an error
		err = jsonpath.NewError(CodeInvalidValue, "$", "cannot decode the heartbeat")
	}
	c := *err
	c.Path = entryPath(i) + err.Path[min(1, len(err.Path)):]
	return &c
}

// restore moves s back to m, undoing an error of the heartbeat's own (not a
// syntax error: see jsonscan.Scanner.Restore).
func (s *scanner) restore(m jsonscan.Mark) bool {
	if !s.Restore(m) {
		return false
	}
	s.err = nil
	return true
}

// clear empties h, keeping the storage of its slices.
func (h *Heartbeat) clear() {
	h.Limits, h.Usage = resource.Vec{}, resource.Vec{}
	h.Tags, h.Allocations, h.AllocationUsage = h.Tags[:0], h.Allocations[:0], h.AllocationUsage[:0]
	h.AllocationOrigins, h.opBuf = h.AllocationOrigins[:0], h.opBuf[:0]
	h.Unschedulable, h.Refused, h.Reasons, h.reasonBuf = false, 0, h.Reasons[:0], h.reasonBuf[:0]
}

// nodeSet finds a node named twice in a batch: an open-addressing table of
// entry indices (plus one; 0 is empty) by the hash of the node's name,
// emptied for each batch.
type nodeSet struct {
	slots []int32
	n     int
	seed  maphash.Seed
	init  bool
}

func (t *nodeSet) reset() {
	if !t.init {
		t.seed, t.init = maphash.MakeSeed(), true
		t.slots = make([]int32, 128)
	}
	clear(t.slots)
	t.n = 0
}

// add adds entry i of entries; when an earlier entry j has the same node,
// it reports j and true instead.
func (t *nodeSet) add(entries []BatchEntry, i int) (int, bool) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow(entries, i)
	}
	name := entries[i].Node
	mask := uint64(len(t.slots) - 1)
	for k := maphash.String(t.seed, name) & mask; ; k = (k + 1) & mask {
		j := t.slots[k]
		if j == 0 {
			t.slots[k] = int32(i + 1)
			t.n++
			return 0, false
		}
		if entries[j-1].Node == name {
			return int(j - 1), true
		}
	}
}

// grow doubles the table and adds entries[:i] again.
func (t *nodeSet) grow(entries []BatchEntry, i int) {
	t.slots = make([]int32, 2*len(t.slots))
	t.n = 0
	for j := range i {
		t.add(entries, j)
	}
}
