package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// batchEntry returns the entry object of a batch for node with the members
// of the heartbeat body hb (an object), node_id first or last.
func batchEntry(node, hb string, last bool) string {
	inner := strings.TrimSpace(hb)
	inner = strings.TrimSpace(inner[1 : len(inner)-1])
	id := `"node_id": ` + strconv.Quote(node)
	switch {
	case inner == "":
		return "{" + id + "}"
	case last:
		return "{" + inner + ", " + id + "}"
	}
	return "{" + id + ", " + inner + "}"
}

func TestDecodeHeartbeatBatch(t *testing.T) {
	body := `{"heartbeats": [` + batchEntry("n-1", apiHeartbeat, false) + `, ` +
		batchEntry("n-2", `{"resource_limits": {"cpu": 4}}`, true) + `, {"node_id": "n\u002d3", "resource_limits": {}}]}`
	var b HeartbeatBatch
	in := NewInterner(16)
	if err := b.Decode([]byte(body), in, 3); err != nil {
		t.Fatal(err)
	}
	if len(b.Entries) != 3 {
		t.Fatalf("%d entries, want 3", len(b.Entries))
	}
	var want Heartbeat
	if err := want.Decode([]byte(apiHeartbeat), nil); err != nil {
		t.Fatal(err)
	}
	e := &b.Entries[0]
	if e.Node != "n-1" || e.Err != nil || fmt.Sprint(e.Heartbeat.Limits, e.Heartbeat.Usage, e.Heartbeat.Tags, e.Heartbeat.Allocations, e.Heartbeat.AllocationUsage) !=
		fmt.Sprint(want.Limits, want.Usage, want.Tags, want.Allocations, want.AllocationUsage) {
		t.Fatalf("entry 0: %+v, want the heartbeat %+v", e, want)
	}
	if e := &b.Entries[1]; e.Node != "n-2" || e.Err != nil || e.Heartbeat.Limits[1] != 400 || len(e.Heartbeat.Allocations) != 0 {
		t.Fatalf("entry 1: %+v", e)
	}
	if e := &b.Entries[2]; e.Node != "n-3" || e.Err != nil {
		t.Fatalf("entry 2: %+v", e)
	}
	if in.Intern([]byte("n-2")) != b.Entries[1].Node || in.Len() != 5 { // 3 nodes, 2 tags
		t.Fatalf("the interner holds %d strings", in.Len())
	}
	// Reused: the entries' storage stays, their contents do not.
	if err := b.Decode([]byte(`{"heartbeats": [{"node_id": "n-9", "resource_limits": {}}]}`), in, 3); err != nil {
		t.Fatal(err)
	}
	if len(b.Entries) != 1 || b.Entries[0].Node != "n-9" || len(b.Entries[0].Heartbeat.Allocations) != 0 || len(b.Entries[0].Heartbeat.Tags) != 0 {
		t.Fatalf("reused: %+v", b.Entries)
	}
}

// TestDecodeHeartbeatBatchErrors: the batch's own errors fail Decode with
// their code and path.
func TestDecodeHeartbeatBatchErrors(t *testing.T) {
	f := func(body, code, path string) {
		t.Helper()
		var b HeartbeatBatch
		err := b.Decode([]byte(body), nil, 3)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: got %v, want an *Error", body, err)
		}
		if e.Code != code || e.Path != path {
			t.Fatalf("%s: got %s at %q (%s), want %s at %q", body, e.Code, e.Path, e.Message, code, path)
		}
	}
	ok := `{"node_id": "a", "resource_limits": {}}`
	bad := `{"node_id": "b", "resource_limits": {"cpu": -1}}`
	f(``, CodeMalformedJSON, "$")
	f(` `, CodeMalformedJSON, "$")
	f(`{`, CodeMalformedJSON, "$")
	f(`{"heartbeats": [`+ok+`]} x`, CodeMalformedJSON, "$")
	f(`{"heartbeats": [`+ok+`, `+bad+`, {"node_id": "c", "resource_limits": {}, }]}`, CodeMalformedJSON, "$")
	f(`{"heartbeats": [`+bad+`, `+ok+`, `+ok+`]`, CodeMalformedJSON, "$")
	f(`{"heartbeats": [{"node_id": "b", "resource_limits": {"cpu": -1} x}]}`, CodeMalformedJSON, "$")
	f(`{"heartbeats": [{"node_id": "b", "resource_limits": {"cpu": "x}]}`, CodeMalformedJSON, "$")
	f(`[]`, CodeWrongType, "$")
	f(`null`, CodeWrongType, "$")
	f(`{}`, CodeMissingAttribute, "$.heartbeats")
	f(`{"heartbeats": null}`, CodeWrongType, "$.heartbeats")
	f(`{"heartbeats": [], "more": 1}`, CodeUnknownAttribute, "$.more")
	f(`{"heartbeats": [], "heartbeats": []}`, CodeDuplicateKey, "$.heartbeats")
	f(`{"heartbeats": [`+ok+`, []]}`, CodeWrongType, "$.heartbeats[1]")
	f(`{"heartbeats": [`+ok+`, {"resource_limits": {}}]}`, CodeMissingAttribute, "$.heartbeats[1].node_id")
	f(`{"heartbeats": [`+ok+`, {}]}`, CodeMissingAttribute, "$.heartbeats[1].node_id")
	f(`{"heartbeats": [`+ok+`, {"resource_limits": {"cpu": -1}, "tags": 7}]}`, CodeMissingAttribute, "$.heartbeats[1].node_id")
	f(`{"heartbeats": [{"node_id": ["a"]}]}`, CodeWrongType, "$.heartbeats[0].node_id")
	f(`{"heartbeats": [{"resource_limits": {"cpu": -1}, "node_id": 1}]}`, CodeWrongType, "$.heartbeats[0].node_id")
	f(`{"heartbeats": [{"node_id": "a", "node_id": "b", "resource_limits": {}}]}`, CodeDuplicateKey, "$.heartbeats[0].node_id")
	f(`{"heartbeats": [{"node_id": "a", "resource_limits": {}, "node_\u0069d": "a"}]}`, CodeDuplicateKey, "$.heartbeats[0].node_id")
	f(`{"heartbeats": [`+ok+`, `+ok+`]}`, CodeDuplicateName, "$.heartbeats[1].node_id")
	f(`{"heartbeats": [`+ok+`, {"node_id": "\u0061", "resource_limits": {"cpu": -1}}]}`, CodeDuplicateName, "$.heartbeats[1].node_id")
	f(`{"heartbeats": [{"node_id": "a b", "resource_limits": {}}, {"node_id": "a b", "resource_limits": {}}]}`, CodeDuplicateName, "$.heartbeats[1].node_id")
	f(`{"heartbeats": [`+ok+`, `+bad+`, {"node_id": "c", "resource_limits": {}}, {"node_id": "d", "resource_limits": {}}]}`, CodeInvalidValue, "$.heartbeats")
	// A semantic error followed by broken JSON is reported as the syntax error.
	f(`{"heartbeats": [`+ok+`, `+ok+`], `, CodeMalformedJSON, "$")
}

// TestDecodeHeartbeatBatchEntryErrors: an entry's error is the one its
// heartbeat alone gets (Heartbeat.Decode), at its path in the batch, for
// every heartbeat of the differential's seeds with node_id first or last;
// the entries around it decode.
func TestDecodeHeartbeatBatchEntryErrors(t *testing.T) {
	for _, s := range heartbeatSeeds {
		checkBatchEntry(t, []byte(s))
	}
	f := func(entry, code, path string) {
		t.Helper()
		var b HeartbeatBatch
		body := `{"heartbeats": [{"node_id": "a", "resource_limits": {}}, ` + entry + `]}`
		if err := b.Decode([]byte(body), nil, 3); err != nil {
			t.Fatalf("%s: %v", entry, err)
		}
		e := b.Entries[1].Err
		if b.Entries[0].Err != nil || e == nil || e.Code != code || e.Path != path {
			t.Fatalf("%s: entry error %+v, want %s at %s", entry, e, code, path)
		}
	}
	f(`{"node_id": "a b", "resource_limits": {}}`, CodeInvalidName, "$.heartbeats[1].node_id")
	f(`{"node_id": "", "resource_limits": {}}`, CodeInvalidName, "$.heartbeats[1].node_id")
	f(`{"resource_limits": {"cpu": -1}, "node_id": "`+strings.Repeat("x", 254)+`"}`, CodeInvalidName, "$.heartbeats[1].node_id")
	f(`{"node_id": "b", "resource_limits": {}, "allocations": [{"id": "1", "state": "running"}, {"id": "1", "state": "lost"}]}`, CodeInvalidValue, "$.heartbeats[1].allocations[1].state")
	f(`{"node_id": "b", "resource_limits": {}, "resource_limits": {}}`, CodeDuplicateKey, "$.heartbeats[1].resource_limits")
	f(`{"node_id": "b", "resource_limits": {}, "nodeid": "b"}`, CodeUnknownAttribute, "$.heartbeats[1].nodeid")
	f(`{"node_id": "b"}`, CodeMissingAttribute, "$.heartbeats[1].resource_limits")
}

// checkBatchEntry puts the heartbeat body hb into a batch between two valid
// entries, node_id first and then last, and checks the batch against
// Heartbeat.Decode of hb: the same heartbeat, or the same error at its
// path in the batch, or — when hb is not a JSON object — the batch refused.
func checkBatchEntry(t *testing.T, hb []byte) {
	t.Helper()
	var single Heartbeat
	serr := single.Decode(hb, nil)
	var se *Error
	errors.As(serr, &se)
	trimmed := bytes.TrimSpace(hb)
	isObject := json.Valid(hb) && len(trimmed) > 0 && trimmed[0] == '{'
	var m map[string]json.RawMessage
	if isObject && json.Unmarshal(hb, &m) == nil {
		if _, has := m["node_id"]; has {
			return // a heartbeat of its own has no node_id; in a batch it would be twice
		}
	}
	for _, last := range []bool{false, true} {
		entry := string(hb)
		if isObject {
			entry = batchEntry("x", string(hb), last)
		}
		body := `{"heartbeats": [{"node_id": "a", "resource_limits": {}}, ` + entry + `, {"node_id": "b", "resource_limits": {"cpu": 1}}]}`
		var b HeartbeatBatch
		err := b.Decode([]byte(body), NewInterner(64), 16)
		if !isObject {
			// A JSON value that is not an object is refused with the batch;
			// what is not JSON may make any batch, or none.
			var e *Error
			if json.Valid(hb) && (!errors.As(err, &e) || e.Code != CodeWrongType || e.Path != "$.heartbeats[1]") {
				t.Fatalf("%q (not an object) in a batch: %v", hb, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q in a batch: %v", hb, err)
		}
		if len(b.Entries) != 3 || b.Entries[0].Err != nil || b.Entries[2].Err != nil || b.Entries[1].Node != "x" || b.Entries[2].Heartbeat.Limits[1] != 100 {
			t.Fatalf("%q in a batch: entries %+v", hb, b.Entries)
		}
		e := &b.Entries[1]
		if se == nil {
			if e.Err != nil {
				t.Fatalf("%q: alone it decodes, in a batch: %v", hb, e.Err)
			}
			got := fmt.Sprint(e.Heartbeat.Limits, e.Heartbeat.Usage, e.Heartbeat.Tags, e.Heartbeat.Allocations, e.Heartbeat.AllocationUsage)
			want := fmt.Sprint(single.Limits, single.Usage, single.Tags, single.Allocations, single.AllocationUsage)
			if got != want {
				t.Fatalf("%q: in a batch %s, alone %s", hb, got, want)
			}
			continue
		}
		if e.Err == nil {
			t.Fatalf("%q: alone %v, in a batch no error", hb, se)
		}
		want := *se
		want.Path = "$.heartbeats[1]" + se.Path[1:]
		if e.Err.Code != want.Code || e.Err.Path != want.Path || e.Err.Code != CodeUnknownAttribute && e.Err.Message != want.Message {
			t.Fatalf("%q: in a batch %+v, alone %+v", hb, *e.Err, want)
		}
	}
}

// FuzzHeartbeatBatchEntry: any heartbeat body in a batch decodes as it does
// alone (checkBatchEntry), with node_id first or last.
func FuzzHeartbeatBatchEntry(f *testing.F) {
	for _, s := range heartbeatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkBatchEntry(t, data)
	})
}

// FuzzHeartbeatBatch: any body. Decode accepts only JSON; what it accepts
// has exactly as many entries as the body's heartbeats array, each node
// once, each entry answered or refused on its own; what it refuses is
// refused with a code and a JSON path; a body that is not JSON is
// malformed_json.
func FuzzHeartbeatBatch(f *testing.F) {
	f.Add([]byte(`{"heartbeats": []}`))
	f.Add([]byte(`{"heartbeats": [` + batchEntry("n-1", apiHeartbeat, false) + `, ` + batchEntry("n-2", apiHeartbeat, true) + `]}`))
	f.Add([]byte(`{"heartbeats": [{"node_id": "a", "resource_limits": {"cpu": -1}}, {"node_id": "b b", "resource_limits": {}}, {"node_id": "c"}]}`))
	f.Add([]byte(`{"heartbeats": [{"node_id": "a", "resource_limits": {}}, {"node_id": "a", "resource_limits": {}}]}`))
	f.Add([]byte(`{"heartbeats": [{"node_id":"n-1","resource_limits":{"cpu":32},"tags":["r"],"allocations":[{"id":"7","state":"running"},{"id":"8","state":"completed"}]}]}`))
	f.Add([]byte(`{"heartbeats": [{"resource_limits": {"cpu": "x"}, "tags": [1], "node_id": "z"}, 1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b HeartbeatBatch
		err := b.Decode(data, NewInterner(1024), 8)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || !strings.HasPrefix(e.Path, "$") {
				t.Fatalf("%q: error %#v has no code or path", data, err)
			}
			if !json.Valid(data) && e.Code != CodeMalformedJSON {
				t.Fatalf("%q is not JSON, and the error is %v", data, e)
			}
			return
		}
		var v struct {
			Heartbeats []json.RawMessage `json:"heartbeats"`
		}
		if !json.Valid(data) || json.Unmarshal(data, &v) != nil {
			t.Fatalf("%q: Decode accepts what encoding/json refuses", data)
		}
		if len(b.Entries) != len(v.Heartbeats) {
			t.Fatalf("%q: %d entries, the body has %d heartbeats", data, len(b.Entries), len(v.Heartbeats))
		}
		seen := map[string]bool{}
		for i := range b.Entries {
			e := &b.Entries[i]
			if seen[e.Node] {
				t.Fatalf("%q: node %q twice", data, e.Node)
			}
			seen[e.Node] = true
			var id struct {
				NodeID *string `json:"node_id"`
			}
			if json.Unmarshal(v.Heartbeats[i], &id) != nil || id.NodeID == nil || *id.NodeID != e.Node {
				t.Fatalf("%q: entry %d is of node %q, the body says %s", data, i, e.Node, v.Heartbeats[i])
			}
			if e.Err != nil && !strings.HasPrefix(e.Err.Path, "$.heartbeats["+strconv.Itoa(i)+"]") {
				t.Fatalf("%q: entry %d: error %+v not at the entry's path", data, i, e.Err)
			}
		}
	})
}
