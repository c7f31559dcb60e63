package facade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
)

// End-to-end tests of resource usage reports (docs/api.md#node-heartbeats) through the HTTP server: a running
// allocation's reported resource_usage is its usage, and an allocation a
// node stops listing is finished at that heartbeat.

// runningOn starts an operation of jobs unit jobs (1 slot, 1 core, 1 GiB),
// heartbeats n until they run and returns the operation's id and the
// allocation ids in order.
func (ts *testServer) runningOn(n *simNode, jobs int) (string, []string) {
	ts.t.Helper()
	ts.heartbeat(n)
	ts.clock.advanceAndUpdate(ts.srv)
	id := ts.must(201, "POST", "/api/v1/operations", fmt.Sprintf(`{"tasks": [{"job_count": %d, "resources": {"user_slots": 1, "cpu": 1, "memory": 1073741824}}]}`, jobs))["id"].(string)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n)
	if len(n.runningIDs()) != jobs {
		ts.t.Fatalf("%d allocations run, want %d", len(n.runningIDs()), jobs)
	}
	return id, n.ids()
}

// ids returns the node's running allocations in ID order.
func (n *simNode) ids() []string {
	var ids []string
	for _, id := range n.runningIDs() {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
	return ids
}

// reports writes an allocations array of running allocations; usage[id],
// when given, is written as the allocation's resource_usage.
func reports(ids []string, usage map[string]string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %q, "state": "running"`, id)
		if u, ok := usage[id]; ok {
			b.WriteString(`, "resource_usage": ` + u)
		}
		b.WriteByte('}')
	}
	return b.String() + "]"
}

func TestReportedUsageOverHTTP(t *testing.T) {
	ts := startServer(t, "", nil)
	n := newNode("n1", 8, 32)
	id, ids := ts.runningOn(n, 4)
	hb := func(usage map[string]string) map[string]any {
		t.Helper()
		return ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": `+n.limits+`, "allocations": `+reports(ids, usage)+`}`)
	}
	check := func(cpu, memGiB float64, first string) {
		t.Helper()
		o := ts.must(200, "GET", "/api/v1/operations/"+id, "")
		if u := obj(o["usage"]); num(u["cpu"]) != cpu || num(u["memory"]) != memGiB*(1<<30) {
			t.Errorf("operation usage %v, want cpu %v memory %v GiB", u, cpu, memGiB)
		}
		nd := ts.must(200, "GET", "/api/v1/orchid/nodes/n1", "")
		if u := obj(nd["resource_usage"]); num(u["cpu"]) != cpu || num(u["memory"]) != memGiB*(1<<30) {
			t.Errorf("node usage %v, want cpu %v memory %v GiB", u, cpu, memGiB)
		}
		a := obj(nd["allocations"].([]any)[0])
		if got, _ := json.Marshal(a["resources"]); a["id"] != ids[0] || string(got) != first {
			t.Errorf("first allocation %v, want %s using %s", a, ids[0], first)
		}
	}
	check(4, 4, `{"cpu":1,"memory":1073741824,"user_slots":1}`)

	// Above the request: a node measures what the job uses.
	hb(map[string]string{ids[0]: `{"user_slots": 1, "cpu": 2.5, "memory": 3221225472}`})
	check(5.5, 6, `{"cpu":2.5,"memory":3221225472,"user_slots":1}`)
	// Absent: the usage stays.
	hb(nil)
	check(5.5, 6, `{"cpu":2.5,"memory":3221225472,"user_slots":1}`)
	// Below the request, and an empty object is zero usage.
	hb(map[string]string{ids[0]: `{"cpu": 0.25}`, ids[1]: `{}`})
	check(2.25, 2, `{"cpu":0.25}`)

	// A bad value is a 400 naming the field, and changes nothing: not the
	// usage, and not the allocations the rejected heartbeat did not list.
	f := func(usage, code, path string) {
		t.Helper()
		body := `{"resource_limits": ` + n.limits + `, "allocations": ` + reports(ids[:2], map[string]string{ids[1]: usage}) + `}`
		status, out := ts.do("POST", "/api/v1/nodes/n1/heartbeat", body)
		var e struct {
			Error struct{ Code, Path, Message string }
		}
		if err := json.Unmarshal(out, &e); err != nil || status != 400 || e.Error.Code != code || e.Error.Path != path {
			t.Errorf("usage %s: %d %s, want 400 %s at %s", usage, status, out, code, path)
		}
		check(2.25, 2, `{"cpu":0.25}`)
		if nd := ts.must(200, "GET", "/api/v1/orchid/nodes/n1", ""); len(nd["allocations"].([]any)) != 4 {
			t.Errorf("a rejected heartbeat changed the allocations: %v", nd["allocations"])
		}
	}
	f(`{"cpu": -1}`, "invalid_value", "$.allocations[1].resource_usage.cpu")
	f(`{"memory": 9007199254740993}`, "invalid_value", "$.allocations[1].resource_usage.memory")
	f(`{"cpu": 1e300}`, "invalid_value", "$.allocations[1].resource_usage.cpu")
	f(`{"memory": 1.5}`, "invalid_value", "$.allocations[1].resource_usage.memory")
	f(`{"disk": 1}`, "unknown_attribute", "$.allocations[1].resource_usage.disk")
}

func TestVanishedOverHTTP(t *testing.T) {
	ts := startServer(t, "", nil)
	n := newNode("n1", 3, 32)
	id, ids := ts.runningOn(n, 3)
	want := func(resp map[string]any, vanished []string, started int) {
		t.Helper()
		var got []string
		for _, x := range resp["allocations_to_abort"].([]any) {
			a := obj(x)
			if a["operation_id"] != id || a["reason"] != "allocation "+a["id"].(string)+" vanished: its node stopped listing it" {
				t.Errorf("abort %v", a)
			}
			got = append(got, a["id"].(string))
		}
		if fmt.Sprint(got) != fmt.Sprint(vanished) || len(resp["allocations_to_start"].([]any)) != started {
			t.Errorf("answer %v: want %v vanished and %d started", resp, vanished, started)
		}
		if o := ts.must(200, "GET", "/api/v1/operations/"+id, ""); num(obj(o["allocation_counts"])["running"]) != 3 || num(o["pending_job_count"]) != 0 {
			t.Errorf("operation %v: want its 3 jobs running again", o)
		}
	}
	// The node stops listing one allocation: it vanishes and its job starts
	// again in the same answer.
	resp := ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": `+n.limits+`, "allocations": `+reports(ids[1:], nil)+`}`)
	want(resp, ids[:1], 1)
	n.forget(ids[0])
	for _, x := range resp["allocations_to_start"].([]any) {
		n.agent.Start(obj(x)["id"].(string), clock.Never, id)
	}
	ts.heartbeat(n) // nothing vanishes: the node lists what it holds
	if len(n.aborts) != 0 || len(n.runningIDs()) != 3 {
		t.Fatalf("a heartbeat listing every allocation: aborts %v, running %v", n.aborts, n.runningIDs())
	}
	// The agent restarts: an empty list, then a heartbeat without one, are
	// a node that holds nothing.
	resp = ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": `+n.limits+`, "allocations": []}`)
	want(resp, n.ids(), 3)
	n.forget("")
	resp = ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": `+n.limits+`}`)
	var again []string
	for _, x := range resp["allocations_to_abort"].([]any) {
		again = append(again, obj(x)["id"].(string))
	}
	sort.Slice(again, func(i, j int) bool {
		return len(again[i]) < len(again[j]) || len(again[i]) == len(again[j]) && again[i] < again[j]
	})
	want(resp, again, 3)
	if len(again) != 3 {
		t.Errorf("a heartbeat without allocations: %d vanished, want 3", len(again))
	}
	status, out := ts.do("GET", "/metrics", "")
	if line := `fairsched_allocations_aborted_total{reason="allocation_vanished"} 7`; status != 200 || !bytes.Contains(out, []byte(line)) {
		t.Errorf("/metrics lacks %q:\n%s", line, out)
	}
}
