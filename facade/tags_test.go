package facade

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSchedulingTagFilters drives scheduling tag filters through the HTTP
// API (docs/semantics.md#scheduling-tag-filters): a pool and an operation take a filter, a bad
// formula is a 400 naming the field and the offset and changes nothing,
// allocations land only on nodes that match the operation's filter and its
// pool's, and the config and orchid answers show the filter, the resources
// of its nodes and the best allocation share.
func TestSchedulingTagFilters(t *testing.T) {
	ts := startServer(t, "", nil)
	p := ts.must(201, "PUT", "/api/v1/pools/gpu", `{"scheduling_tag_filter": "gpu&!preemptible"}`)
	if p["scheduling_tag_filter"] != "gpu & !preemptible" {
		t.Fatalf("PUT answered %v", p)
	}
	// A bad formula: 400 at the field, the offset in the message, nothing
	// changed (the pool keeps its filter, no pool is created).
	bad := func(method, path, body, field, msg string) {
		t.Helper()
		status, out := ts.do(method, path, body)
		var e struct {
			Error struct{ Code, Message, Path string }
		}
		if err := json.Unmarshal(out, &e); err != nil || status != 400 || e.Error.Code != "invalid_value" || e.Error.Path != field || !strings.Contains(e.Error.Message, msg) {
			t.Fatalf("%s %s %s: %d %s; want 400 invalid_value at %s with %q", method, path, body, status, out, field, msg)
		}
	}
	bad("PATCH", "/api/v1/pools/gpu", `{"weight": 2, "scheduling_tag_filter": "gpu & (ssd"}`, "$.scheduling_tag_filter", `at offset 10: unexpected end of formula: want ")" to close the "(" at offset 6`)
	bad("PUT", "/api/v1/pools/other", `{"scheduling_tag_filter": "| gpu"}`, "$.scheduling_tag_filter", `unexpected '|'`)
	bad("POST", "/api/v1/operations", `{"pool": "gpu", "scheduling_tag_filter": "a b", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`,
		"$.scheduling_tag_filter", `at offset 2: unexpected 'b': want "&", "|" or the end`)
	if p := ts.must(200, "GET", "/api/v1/pools/gpu", ""); p["scheduling_tag_filter"] != "gpu & !preemptible" || p["weight"] != nil {
		t.Fatalf("after rejected changes: %v", p)
	}
	ts.must(404, "GET", "/api/v1/pools/other", "")
	if ops := ts.must(200, "GET", "/api/v1/operations", "")["operations"].([]any); len(ops) != 0 {
		t.Fatalf("a rejected start left operations: %v", ops)
	}
	// The root holds every node.
	bad("PATCH", "/api/v1/pools/<Root>", `{"scheduling_tag_filter": "gpu"}`, "$.scheduling_tag_filter", "root")

	plain := newNode("plain", 8, 32)
	plain.tags = []string{}
	gpu := newNode("gpu1", 8, 32)
	gpu.tags = []string{"gpu", "ssd"}
	spot := newNode("spot", 8, 32)
	spot.tags = []string{"gpu", "preemptible", "ssd"}
	nodes := []*simNode{plain, gpu, spot}
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	op := ts.must(201, "POST", "/api/v1/operations", `{"pool": "gpu", "scheduling_tag_filter": "ssd",
		"tasks": [{"job_count": 20, "resources": {"user_slots": 1, "cpu": 1, "memory": 1073741824}}]}`)
	id := op["id"].(string)
	ts.clock.advanceAndUpdate(ts.srv)
	for range 3 {
		for _, n := range nodes {
			ts.heartbeat(n)
		}
		ts.clock.advanceAndUpdate(ts.srv)
	}
	if len(plain.runningIDs()) != 0 || len(spot.runningIDs()) != 0 || len(gpu.runningIDs()) != 8 {
		t.Fatalf("allocations on plain %d, spot %d, gpu1 %d; want only gpu1's 8", len(plain.runningIDs()), len(spot.runningIDs()), len(gpu.runningIDs()))
	}

	o := ts.must(200, "GET", "/api/v1/orchid/operations/"+id, "")
	if o["scheduling_tag_filter"] != "ssd" {
		t.Fatalf("orchid operation: %v", o)
	}
	// ssd matches gpu1 and spot: 16 of 24 cores.
	if lim := obj(o["scheduling_tag_filter_resource_limits"]); num(lim["cpu"]) != 16 {
		t.Fatalf("orchid operation's scheduling_tag_filter_resource_limits: %v", o["scheduling_tag_filter_resource_limits"])
	}
	// Its best allocation share counts the memory of the nodes its own
	// filter matches (2 of 3), where its 1 GiB jobs fit exactly.
	if best := obj(o["best_allocation_share"]); num(best["memory"]) != 64.0/96 || num(best["cpu"]) != 1 {
		t.Fatalf("orchid operation's best_allocation_share: %v", o["best_allocation_share"])
	}
	if g := ts.must(200, "GET", "/api/v1/operations/"+id, ""); g["scheduling_tag_filter"] != "ssd" {
		t.Fatalf("operation: %v", g)
	}
	pool := ts.must(200, "GET", "/api/v1/orchid/pools/gpu", "")
	if pool["scheduling_tag_filter"] != "gpu & !preemptible" || num(obj(pool["scheduling_tag_filter_resource_limits"])["cpu"]) != 8 {
		t.Fatalf("orchid pool: %v", pool)
	}
	// The pool's limits share is its one node of three.
	if ls := num(obj(pool["limits_share"])["cpu"]); ls < 0.333 || ls > 0.334 {
		t.Fatalf("orchid pool's limits_share: %v", pool["limits_share"])
	}
	if tags := ts.must(200, "GET", "/api/v1/orchid/nodes/spot", "")["tags"]; len(tags.([]any)) != 3 {
		t.Fatalf("orchid node's tags: %v", tags)
	}

	// Taking the pool's filter away lets the operation on spot too (its
	// own filter ssd still keeps it off plain).
	ts.must(200, "PATCH", "/api/v1/pools/gpu", `{"scheduling_tag_filter": null}`)
	ts.clock.advanceAndUpdate(ts.srv)
	for range 3 {
		for _, n := range nodes {
			ts.heartbeat(n)
		}
		ts.clock.advanceAndUpdate(ts.srv)
	}
	if len(plain.runningIDs()) != 0 || len(spot.runningIDs()) != 8 {
		t.Fatalf("without the pool's filter: plain %d, spot %d allocations; want 0 and 8", len(plain.runningIDs()), len(spot.runningIDs()))
	}
	if p := ts.must(200, "GET", "/api/v1/pools/gpu", ""); p["scheduling_tag_filter"] != nil {
		t.Fatalf("the filter is still there: %v", p)
	}
}
