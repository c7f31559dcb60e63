package facade

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBadInputs sends requests that must be refused and checks the status,
// the error code and path, and that the state read back afterwards is
// exactly as before: a rejected request changes nothing (docs/api.md#errors).
func TestBadInputs(t *testing.T) {
	ts := startServer(t, `{"pools": [
		{"name": "prod", "strong_guarantee_resources": {"cpu": 2}},
		{"name": "prod-a", "parent": "prod"},
		{"name": "research", "integral_guarantees": {"guarantee_type": "relaxed", "resource_flow": {"cpu": 1}}},
		{"name": "empty"}
	]}`, func(o *Options) { o.MaxBodySize = 16 << 10 })
	n1, n2 := newNode("n1", 8, 16), newNode("n2", 8, 16)
	ts.heartbeat(n1)
	ts.heartbeat(n2)
	ts.clock.advanceAndUpdate(ts.srv)
	fixed := `{"id": "fixed", "pool": "prod-a", "tasks": [{"job_count": 4, "resources": {"cpu": 1}}]}`
	ts.must(201, "POST", "/api/v1/operations", fixed)
	done := ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)["id"].(string)
	ts.must(200, "POST", "/api/v1/operations/"+done+"/abort", "")
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n1)
	if len(n1.runningIDs()) == 0 {
		t.Fatal("n1 runs nothing: the foreign-allocation case needs an allocation")
	}
	var n1Alloc string
	for _, id := range n1.runningIDs() {
		n1Alloc = id
	}

	// state reads everything a request could change.
	state := func() string {
		var b bytes.Buffer
		for _, p := range []string{"/api/v1/pools", "/api/v1/operations", "/api/v1/config",
			"/api/v1/orchid/nodes/n1", "/api/v1/orchid/nodes/n2", "/api/v1/orchid/pools"} {
			status, out := ts.do("GET", p, "")
			b.WriteString(p)
			b.WriteByte(' ')
			b.WriteByte(byte('0' + status/100))
			b.Write(out)
		}
		return b.String()
	}
	before := state()

	task := `"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]`
	hb := func(limits string) string { return `{"resource_limits": ` + limits + `}` }
	cases := []struct {
		name, method, path, body string
		status                   int
		code, errPath            string
	}{
		{"malformed JSON", "POST", "/api/v1/operations", `{"pool": "prod", `, 400, "malformed_json", "$"},
		{"empty body", "POST", "/api/v1/operations", ``, 400, "malformed_json", "$"},
		{"not an object", "POST", "/api/v1/operations", `[]`, 400, "wrong_type", "$"},
		{"tasks of the wrong type", "POST", "/api/v1/operations", `{"tasks": "map"}`, 400, "wrong_type", "$.tasks"},
		{"is_gang of the wrong type", "POST", "/api/v1/operations", `{"is_gang": "yes", ` + task + `}`, 400, "wrong_type", "$.is_gang"},
		{"unknown resource", "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"tpu": 1}}]}`, 400, "unknown_attribute", "$.tasks[0].resources.tpu"},
		{"negative cpu", "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": -1}}]}`, 400, "invalid_value", "$.tasks[0].resources.cpu"},
		{"NaN", "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": NaN}}]}`, 400, "malformed_json", "$"},
		{"1e300 memory", "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"memory": 1e300}}]}`, 400, "invalid_value", "$.tasks[0].resources.memory"},
		{"2^60 memory", "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"memory": 1152921504606846976}}]}`, 400, "invalid_value", "$.tasks[0].resources.memory"},
		{"job count overflow", "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1099511627776, "resources": {"memory": 1099511627776}}]}`, 400, "invalid_value", "$.tasks[0].job_count"},
		{"unknown pool", "POST", "/api/v1/operations", `{"pool": "nope", ` + task + `}`, 400, "unknown_pool", "$.pool"},
		{"duplicate id, other body", "POST", "/api/v1/operations", strings.Replace(fixed, `"job_count": 4`, `"job_count": 5`, 1), 409, "duplicate_id", "$.id"},
		{"weight out of range", "POST", "/api/v1/operations", `{"weight": 1e9, ` + task + `}`, 400, "invalid_value", "$.weight"},
		{"unknown operation", "GET", "/api/v1/operations/nope", ``, 404, "unknown_operation", "$.url.id"},
		{"patch unknown operation", "PATCH", "/api/v1/operations/nope", `{"weight": 2}`, 404, "unknown_operation", "$.url.id"},
		{"patch negative weight", "PATCH", "/api/v1/operations/fixed", `{"weight": -1}`, 400, "invalid_value", "$.weight"},
		{"patch into unknown pool", "PATCH", "/api/v1/operations/fixed", `{"pool": "nope", "weight": 2}`, 400, "unknown_pool", "$.pool"},
		{"patch a finished operation", "PATCH", "/api/v1/operations/" + done, `{"weight": 2}`, 409, "operation_finished", "$.url.id"},
		{"abort unknown operation", "POST", "/api/v1/operations/nope/abort", ``, 404, "unknown_operation", "$.url.id"},
		{"parent cycle", "PUT", "/api/v1/pools/prod", `{"parent": "prod-a"}`, 400, "cycle", "$.parent"},
		{"parent cycle by patch", "PATCH", "/api/v1/pools/prod", `{"parent": "prod-a"}`, 400, "cycle", "$.parent"},
		{"unknown parent", "PUT", "/api/v1/pools/x", `{"parent": "nope"}`, 400, "unknown_pool", "$.parent"},
		{"operation limits inverted", "PUT", "/api/v1/pools/x", `{"max_operation_count": 1, "max_running_operation_count": 2}`, 400, "invalid_value", "$.max_operation_count"},
		{"pool weight out of range", "PUT", "/api/v1/pools/x", `{"weight": 1e9}`, 400, "invalid_value", "$.weight"},
		{"burst resources on a relaxed pool", "PATCH", "/api/v1/pools/research", `{"integral_guarantees": {"burst_guarantee_resources": {"cpu": 1}}}`, 400, "invalid_value", "$.integral_guarantees.burst_guarantee_resources"},
		{"tolerance out of range", "PATCH", "/api/v1/pools/prod", `{"fair_share_starvation_tolerance": 1.5}`, 400, "invalid_value", "$.fair_share_starvation_tolerance"},
		{"fifo pool with child pools", "PATCH", "/api/v1/pools/prod", `{"mode": "fifo"}`, 400, "fifo_pool_with_child_pools", "$.mode"},
		{"invalid pool name", "PUT", "/api/v1/pools/a%20b", `{}`, 400, "invalid_name", "$.url.name"},
		{"name differs from the URL", "PUT", "/api/v1/pools/x", `{"name": "y"}`, 400, "invalid_value", "$.name"},
		{"root with a parent", "PATCH", "/api/v1/pools/%3CRoot%3E", `{"parent": "prod"}`, 400, "invalid_value", "$.parent"},
		{"delete a pool with children", "DELETE", "/api/v1/pools/prod", ``, 409, "pool_not_empty", "$.url.name"},
		{"delete a pool with operations", "DELETE", "/api/v1/pools/prod-a", ``, 409, "pool_not_empty", "$.url.name"},
		{"delete unknown pool", "DELETE", "/api/v1/pools/nope", ``, 404, "unknown_pool", "$.url.name"},
		{"patch unknown pool", "PATCH", "/api/v1/pools/nope", `{}`, 404, "unknown_pool", "$.url.name"},
		{"get unknown pool", "GET", "/api/v1/pools/nope", ``, 404, "unknown_pool", "$.url.name"},
		{"another node's allocation", "POST", "/api/v1/nodes/n2/heartbeat", `{"resource_limits": {"cpu": 8}, "allocations": [{"id": "` + n1Alloc + `", "state": "completed"}]}`, 409, "foreign_allocation", "$.allocations[0].id"},
		{"heartbeat malformed", "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {`, 400, "malformed_json", "$"},
		{"heartbeat wrong type", "POST", "/api/v1/nodes/n1/heartbeat", hb(`{"cpu": "8"}`), 400, "wrong_type", "$.resource_limits.cpu"},
		{"heartbeat negative", "POST", "/api/v1/nodes/n1/heartbeat", hb(`{"memory": -1}`), 400, "invalid_value", "$.resource_limits.memory"},
		{"heartbeat 2^60", "POST", "/api/v1/nodes/n1/heartbeat", hb(`{"memory": 1152921504606846976}`), 400, "invalid_value", "$.resource_limits.memory"},
		{"heartbeat unknown resource", "POST", "/api/v1/nodes/n1/heartbeat", hb(`{"tpu": 1}`), 400, "unknown_attribute", "$.resource_limits.tpu"},
		{"heartbeat bad allocation id", "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {}, "allocations": [{"id": 5, "state": "running"}]}`, 400, "wrong_type", "$.allocations[0].id"},
		{"heartbeat bad state", "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {}, "allocations": [{"id": "5", "state": "lost"}]}`, 400, "invalid_value", "$.allocations[0].state"},
		{"heartbeat without limits", "POST", "/api/v1/nodes/n1/heartbeat", `{}`, 400, "missing_attribute", "$.resource_limits"},
		{"heartbeat bad node id", "POST", "/api/v1/nodes/n%201/heartbeat", hb(`{}`), 400, "invalid_name", "$.url.id"},
		{"heartbeat by GET", "GET", "/api/v1/nodes/n1/heartbeat", ``, 405, "method_not_allowed", "$"},
		{"unknown node", "GET", "/api/v1/orchid/nodes/nope", ``, 404, "unknown_node", "$.url.id"},
		// NB: small enough that the whole request fits the loopback socket
		// buffers: the server answers 413 without reading the body and
		// closes, and a client still writing a larger body could see the
		// connection reset before it reads the answer.
		{"oversize body", "POST", "/api/v1/operations", `{"x": "` + strings.Repeat("a", 16<<10) + `"}`, 413, "body_too_large", "$"},
		{"config out of range", "PATCH", "/api/v1/config", `{"fair_share_update_period_s": 0}`, 400, "invalid_value", "$.fair_share_update_period_s"},
		{"config unknown key", "PATCH", "/api/v1/config", `{"fair_share_update_period": 1}`, 400, "unknown_attribute", "$.fair_share_update_period"},
		{"list by unknown state", "GET", "/api/v1/operations?state=lost", ``, 400, "invalid_value", "state"},
		{"list with limit 0", "GET", "/api/v1/operations?limit=0", ``, 400, "invalid_value", "limit"},
		{"list with a bad cursor", "GET", "/api/v1/operations?cursor=x", ``, 400, "invalid_value", "cursor"},
		{"solve a bad snapshot", "POST", "/api/v1/solve", `{"total_resources": {"cpu": -1}, "tree": {}}`, 400, "invalid_value", "$.total_resources.cpu"},
		{"unknown endpoint", "GET", "/api/v1/nothing", ``, 404, "not_found", "$"},
		{"wrong method", "DELETE", "/api/v1/operations", ``, 405, "method_not_allowed", "$"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		status, out := ts.do(c.method, c.path, c.body)
		var body struct {
			Error struct{ Code, Message, Path string }
		}
		if err := json.Unmarshal(out, &body); err != nil {
			t.Errorf("%s: the answer is not the error JSON: %v: %.200s", c.name, err, out)
			continue
		}
		e := body.Error
		if status != c.status || e.Code != c.code || e.Path != c.errPath || e.Message == "" {
			t.Errorf("%s: %d %s at %q (%s), want %d %s at %q", c.name, status, e.Code, e.Path, e.Message, c.status, c.code, c.errPath)
		}
		if after := state(); after != before {
			t.Fatalf("%s changed the state:\nbefore %s\nafter  %s", c.name, before, after)
		}
	}
}
