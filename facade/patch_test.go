package facade

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
)

// TestPatchTasks: PATCH tasks changes job counts and appends tasks, over
// HTTP; a bad entry is a 400 naming it and changes nothing; a rise past
// the live demand bound is 409 demand_overflow; the change survives a
// restart.
func TestPatchTasks(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	mc.set(clock.Time(5_000_000))
	ts := startDurable(t, dir, mc, twoPools, nil)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "x", "pool": "prod", "tasks": [{"name": "w", "job_count": 2, "resources": {"cpu": 1}}]}`)
	// 2^52 bytes of memory demanded by another operation.
	ts.must(201, "POST", "/api/v1/operations", `{"id": "big", "tasks": [{"job_count": 1099511627776, "resources": {"memory": 4096}}]}`)
	for _, tc := range []struct {
		body   string
		status int
		code   string
		path   string
	}{
		{`{"tasks": [{"job_count": 2, "resources": {"cpu": 2}}]}`, 400, "invalid_value", "$.tasks[0].resources"},
		{`{"tasks": [{"name": "v"}]}`, 400, "invalid_value", "$.tasks[0].name"},
		{`{"tasks": [{}, {"job_count": 1}]}`, 400, "missing_attribute", "$.tasks[1].resources"},
		{`{"tasks": [{"job_count": -1}]}`, 400, "invalid_value", "$.tasks[0].job_count"},
		{`{"tasks": [{"job_count": "3"}]}`, 400, "wrong_type", "$.tasks[0].job_count"},
		{`{"tasks": [{"jobs": 3}]}`, 400, "unknown_attribute", "$.tasks[0].jobs"},
		{`{"weight": 2, "tasks": [{}, {"job_count": 1099511627776, "resources": {"memory": 8192}}]}`, 409, "demand_overflow", "$.tasks"},
	} {
		status, body := ts.do("PATCH", "/api/v1/operations/x", tc.body)
		if status != tc.status || errorCode(body) != tc.code || !strings.Contains(string(body), `"path":"`+tc.path+`"`) {
			t.Errorf("PATCH %s: %d %s, want %d %s at %s", tc.body, status, body, tc.status, tc.code, tc.path)
		}
	}
	if o := ts.must(200, "GET", "/api/v1/operations/x", ""); num(o["pending_job_count"]) != 2 {
		t.Fatalf("after refused patches: %v pending jobs, want 2", o["pending_job_count"])
	}
	ts.must(200, "PATCH", "/api/v1/operations/x", `{"tasks": [{"name": "w", "job_count": 5, "resources": {"cpu": 1}}, {"name": "ps", "job_count": 1, "resources": {"cpu": 2, "memory": 1073741824}}]}`)
	want := `[{"job_count":5,"name":"w","resources":{"cpu":1}},{"job_count":1,"name":"ps","resources":{"cpu":2,"memory":1073741824}}]`
	check := func(when string, s *durableServer) {
		t.Helper()
		o := s.must(200, "GET", "/api/v1/orchid/operations/x", "")
		if got := jsonText(t, o["tasks"]); got != want || num(o["pending_job_count"]) != 6 {
			t.Fatalf("%s: tasks %s, %v pending jobs; want %s, 6", when, got, o["pending_job_count"], want)
		}
	}
	check("after the patch", ts)
	ts.stop()
	b := startDurable(t, dir, mc, twoPools, nil)
	check("after a restart", b)
	// Down to 0 with nothing running: x completes.
	if o := b.must(200, "PATCH", "/api/v1/operations/x", `{"tasks": [{"job_count": 0}, {"job_count": 0}]}`); o["state"] != "completed" {
		t.Fatalf("x with no job left: %v, want completed", o["state"])
	}
}

// TestRefusedAndCordonOverHTTP: a node reports a start refused (with a
// reason): the job is pending again, counted in
// fairsched_allocations_refused_total, and not offered that node within the
// back-off; a cordoned node ("schedulable": false) gets no start, keeps its
// allocations and shows schedulable false; both over the single and the
// batched heartbeat.
func TestRefusedAndCordonOverHTTP(t *testing.T) {
	ts := startServer(t, "", nil)
	ts.must(200, "PATCH", "/api/v1/config", `{"refused_allocation_backoff_s": 30}`)
	limits := `{"user_slots": 10, "cpu": 10, "memory": 10737418240}`
	hb := func(batched bool, node, rest string) map[string]any {
		t.Helper()
		body := `{"resource_limits": ` + limits + rest + `}`
		if !batched {
			return ts.must(200, "POST", "/api/v1/nodes/"+node+"/heartbeat", body)
		}
		out := ts.must(200, "POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "`+node+`", `+body[1:]+`]}`)
		return out["responses"].([]any)[0].(map[string]any)
	}
	starts := func(r map[string]any) []any { return r["allocations_to_start"].([]any) }
	for _, batched := range []bool{false, true} {
		node := "n-" + strconv.FormatBool(batched)
		hb(batched, node, "")
		ts.clock.advanceAndUpdate(ts.srv)
		op := ts.must(201, "POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)["id"].(string)
		ts.clock.advanceAndUpdate(ts.srv)
		s := starts(hb(batched, node, ""))
		if len(s) != 1 {
			t.Fatalf("starts %v, want one", s)
		}
		id := s[0].(map[string]any)["id"].(string)
		if r := hb(batched, node, `, "allocations": [{"id": "`+id+`", "state": "refused", "reason": "node selector does not match"}]`); len(starts(r)) != 0 {
			t.Fatalf("the refused start came back at once: %v", r)
		}
		if o := ts.must(200, "GET", "/api/v1/operations/"+op, ""); num(o["pending_job_count"]) != 1 {
			t.Fatalf("after the refusal: %v pending, want 1", o["pending_job_count"])
		}
		// Cordoned, the node gets nothing, refused or not.
		ts.clock.AdvanceSeconds(31)
		ts.srv.UpdateFairShare()
		if r := hb(batched, node, `, "schedulable": false`); len(starts(r)) != 0 {
			t.Fatalf("a cordoned node got %v", starts(r))
		}
		if n := ts.must(200, "GET", "/api/v1/orchid/nodes/"+node, ""); n["schedulable"] != false {
			t.Fatalf("orchid of a cordoned node: schedulable %v", n["schedulable"])
		}
		// Uncordoned after the back-off: offered again.
		if r := hb(batched, node, ""); len(starts(r)) != 1 {
			t.Fatalf("after the back-off: starts %v, want one", starts(r))
		}
		ts.must(200, "POST", "/api/v1/operations/"+op+"/abort", "")
	}
	if _, body := ts.do("GET", "/metrics", ""); !strings.Contains(string(body), "fairsched_allocations_refused_total 2") {
		t.Fatalf("/metrics has no fairsched_allocations_refused_total 2")
	}
	for _, tc := range []struct{ body, code, path string }{
		{`{"resource_limits": ` + limits + `, "schedulable": "no"}`, "wrong_type", "$.schedulable"},
		{`{"resource_limits": ` + limits + `, "allocations": [{"id": "1", "state": "refused", "reason": 3}]}`, "wrong_type", "$.allocations[0].reason"},
		{`{"resource_limits": ` + limits + `, "allocations": [{"id": "1", "state": "refused", "reason": "` + strings.Repeat("x", 1025) + `"}]}`, "invalid_value", "$.allocations[0].reason"},
	} {
		status, body := ts.do("POST", "/api/v1/nodes/n9/heartbeat", tc.body)
		if status != 400 || errorCode(body) != tc.code || !strings.Contains(string(body), `"path":"`+tc.path+`"`) {
			t.Errorf("heartbeat %.80s: %d %s, want 400 %s at %s", tc.body, status, body, tc.code, tc.path)
		}
	}
}

// TestLongNodeIDs: node ids of up to 253 characters (a Kubernetes node
// name) send heartbeats, single and batched, and are read back; 254 are
// refused, naming the id.
func TestLongNodeIDs(t *testing.T) {
	ts := startServer(t, "", nil)
	long := strings.Repeat("node-1.zone-a.", 19)[:253]
	ts.must(200, "POST", "/api/v1/nodes/"+long+"/heartbeat", `{"resource_limits": {"cpu": 1}}`)
	if n := ts.must(200, "GET", "/api/v1/nodes/"+long, ""); n["id"] != long {
		t.Fatalf("GET of a 253-character node: %v", n["id"])
	}
	ts.must(200, "GET", "/api/v1/orchid/nodes/"+long, "")
	r := ts.batch(`{"heartbeats": [{"node_id": "` + long[:252] + `x", "resource_limits": {"cpu": 1}}, {"node_id": "` + long + `y", "resource_limits": {"cpu": 1}}]}`)
	if r[0]["error"] != nil || obj(r[1]["error"])["code"] != "invalid_name" {
		t.Fatalf("a batch with node ids of 253 and 254 characters: %v", r)
	}
	status, body := ts.do("POST", "/api/v1/nodes/"+long+"y/heartbeat", `{"resource_limits": {"cpu": 1}}`)
	if status != 400 || errorCode(body) != "invalid_name" || !strings.Contains(string(body), `"path":"$.url.id"`) {
		t.Fatalf("a 254-character node id: %d %s", status, body)
	}
}
