package facade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
)

// batchOf returns the body of POST /api/v1/heartbeats with the heartbeat
// bodies of the nodes, each given its node_id first.
func batchOf(names []string, bodies []string) string {
	var b strings.Builder
	b.WriteString(`{"heartbeats": [`)
	for i, body := range bodies {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(withNodeID(names[i], body))
	}
	b.WriteString("]}")
	return b.String()
}

// withNodeID puts "node_id" first in a heartbeat body (an object).
func withNodeID(name, body string) string {
	id, _ := json.Marshal(name)
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body), "{"))
	if rest == "}" {
		return `{"node_id": ` + string(id) + `}`
	}
	return `{"node_id": ` + string(id) + `, ` + rest
}

// batch sends a batch that must answer 200 and returns its responses.
func (ts *testServer) batch(body string) []map[string]any {
	ts.t.Helper()
	out := ts.must(200, "POST", "/api/v1/heartbeats", body)
	rs, ok := out["responses"].([]any)
	if !ok {
		ts.t.Fatalf("answer without responses: %v", out)
	}
	res := make([]map[string]any, len(rs))
	for i, r := range rs {
		res[i] = obj(r)
	}
	return res
}

// apply makes a node follow a heartbeat's answer, as testServer.heartbeat
// does: started allocations run, aborted ones stop, preempted ones stop
// (reported aborted next time); finished ones were reported. An error
// changes nothing: the node reports the same next time.
func (n *simNode) apply(resp map[string]any) {
	if _, failed := resp["error"]; failed {
		return
	}
	n.agent.Delivered(nil)
	for _, x := range resp["allocations_to_start"].([]any) {
		a := x.(map[string]any)
		n.agent.Start(a["id"].(string), clock.Never, a["operation_id"].(string))
	}
	for _, x := range resp["allocations_to_abort"].([]any) {
		a := x.(map[string]any)
		n.agent.Abort(a["id"].(string))
		n.aborts = append(n.aborts, a)
	}
	for _, x := range resp["allocations_to_preempt"].([]any) {
		a := x.(map[string]any)
		n.preempts = append(n.preempts, a)
		n.agent.Preempt(simNow, a["id"].(string))
	}
}

// TestHeartbeatBatch: a batch registers its nodes, starts allocations on
// them and answers each node in order, as their own heartbeats would.
func TestHeartbeatBatch(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	nodes := []*simNode{newNode("n1", 4, 16), newNode("n2", 4, 16), newNode("n3", 4, 16)}
	send := func() []map[string]any {
		t.Helper()
		var names, bodies []string
		for _, n := range nodes {
			names, bodies = append(names, n.name), append(bodies, n.body())
		}
		rs := ts.batch(batchOf(names, bodies))
		if len(rs) != len(nodes) {
			t.Fatalf("%d responses for %d heartbeats", len(rs), len(nodes))
		}
		for i, r := range rs {
			if r["node_id"] != nodes[i].name {
				t.Fatalf("response %d is of node %v, want %s", i, r["node_id"], nodes[i].name)
			}
			nodes[i].apply(r)
		}
		return rs
	}
	send()
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 6, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	send()
	running := 0
	for _, n := range nodes {
		running += len(n.runningIDs())
		if o := ts.must(200, "GET", "/api/v1/orchid/nodes/"+n.name, ""); len(o["allocations"].([]any)) != len(n.runningIDs()) {
			t.Fatalf("orchid of %s: %v, the node runs %v", n.name, o, n.runningIDs())
		}
	}
	if running != 6 {
		t.Fatalf("%d allocations started, want 6", running)
	}
	// Steady: nothing to do for anyone.
	for _, r := range send() {
		for _, k := range []string{"allocations_to_start", "allocations_to_preempt", "allocations_to_abort"} {
			if l, ok := r[k].([]any); !ok || len(l) != 0 {
				t.Fatalf("steady batch: %v", r)
			}
		}
	}
	if rs := ts.batch(`{"heartbeats": []}`); len(rs) != 0 {
		t.Fatalf("an empty batch answers %v", rs)
	}
	m := metricValues(t, ts)
	if m["fairsched_heartbeats_total"] != 9 || m["fairsched_heartbeat_batches_total"] != 4 || m["fairsched_heartbeat_errors_total"] != 0 ||
		m["fairsched_allocations_started_total"] != 6 || m["fairsched_heartbeat_duration_seconds_count"] != 9 {
		t.Fatalf("metrics after 3 batches of 3 and an empty one: %v", m)
	}
}

// metricValues returns the unlabelled samples of /metrics.
func metricValues(t *testing.T, ts *testServer) map[string]float64 {
	t.Helper()
	status, out := ts.do("GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[name] = f
		}
	}
	return m
}

// TestHeartbeatBatchEnvelopeErrors: a batch that is refused as a whole is a
// 400 (413 when too large) naming the JSON path of the problem, and changes
// nothing, although its other heartbeats are valid and would change the
// state.
func TestHeartbeatBatchEnvelopeErrors(t *testing.T) {
	ts := startServer(t, twoPools, func(o *Options) { o.MaxBodySize = 16 << 10 })
	n1, n2 := newNode("n1", 8, 16), newNode("n2", 8, 16)
	ts.heartbeat(n1)
	ts.heartbeat(n2)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 20, "resources": {"cpu": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n1)
	if len(n1.runningIDs()) == 0 {
		t.Fatal("n1 runs nothing")
	}
	ts.must(200, "PATCH", "/api/v1/config", `{"max_heartbeats_per_batch": 3}`)
	// A valid heartbeat that changes the state: n1 completes everything,
	// n2 (empty) would get allocations.
	for _, id := range n1.runningIDs() {
		n1.end(id, coretest.AllocCompleted)
	}
	good1, good2 := withNodeID("n1", n1.body()), withNodeID("n2", n2.body())
	state := func() string {
		var b bytes.Buffer
		for _, p := range []string{"/api/v1/pools", "/api/v1/operations", "/api/v1/orchid/nodes/n1",
			"/api/v1/orchid/nodes/n2", "/api/v1/orchid/nodes/n3", "/api/v1/orchid/pools"} {
			status, out := ts.do("GET", p, "")
			fmt.Fprintf(&b, "%s %d %s\n", p, status, out)
		}
		m := metricValues(t, ts)
		for _, k := range []string{"fairsched_heartbeats_total", "fairsched_heartbeat_errors_total", "fairsched_allocations_started_total"} {
			fmt.Fprintf(&b, "%s %v\n", k, m[k])
		}
		return b.String()
	}
	before := state()
	bad := `{"node_id": "n3", "resource_limits": {"cpu": -1}}` // an entry's own error
	f := func(name, body string, status int, code, path string) {
		t.Helper()
		st, out := ts.do("POST", "/api/v1/heartbeats", body)
		var e struct {
			Error struct{ Code, Message, Path string }
		}
		_ = json.Unmarshal(out, &e)
		if st != status || e.Error.Code != code || e.Error.Path != path {
			t.Errorf("%s: %d %s at %q (%s), want %d %s at %q", name, st, e.Error.Code, e.Error.Path, out, status, code, path)
		}
		if after := state(); after != before {
			t.Fatalf("%s changed the state:\nbefore %s\nafter %s", name, before, after)
		}
	}
	wrap := func(entries ...string) string { return `{"heartbeats": [` + strings.Join(entries, ", ") + `]}` }
	f("empty body", ``, 400, "malformed_json", "$")
	f("not JSON", `{"heartbeats": [`+good1, 400, "malformed_json", "$")
	f("a syntax error after the valid entries", wrap(good1, good2)+` x`, 400, "malformed_json", "$")
	f("a syntax error after an entry's error", wrap(good1, bad, `{"node_id": "n4", "resource_limits": {}, }`), 400, "malformed_json", "$")
	f("not an object", `[]`, 400, "wrong_type", "$")
	f("no heartbeats", `{}`, 400, "missing_attribute", "$.heartbeats")
	f("heartbeats not an array", `{"heartbeats": {}}`, 400, "wrong_type", "$.heartbeats")
	f("an unknown key", `{"heartbeats": [`+good1+`], "nodes": []}`, 400, "unknown_attribute", "$.nodes")
	f("heartbeats twice", `{"heartbeats": [`+good1+`], "heartbeats": []}`, 400, "duplicate_key", "$.heartbeats")
	f("an entry not an object", wrap(good1, `"n2"`), 400, "wrong_type", "$.heartbeats[1]")
	f("an entry without node_id", wrap(good1, `{"resource_limits": {}}`), 400, "missing_attribute", "$.heartbeats[1].node_id")
	f("an entry with an error and no node_id", wrap(good1, `{"resource_limits": {"cpu": -1}}`), 400, "missing_attribute", "$.heartbeats[1].node_id")
	f("node_id not a string", wrap(good1, `{"node_id": 2, "resource_limits": {}}`), 400, "wrong_type", "$.heartbeats[1].node_id")
	f("node_id not a string after an error", wrap(good1, `{"resource_limits": {"cpu": -1}, "node_id": null}`), 400, "wrong_type", "$.heartbeats[1].node_id")
	f("node_id twice", wrap(good1, `{"node_id": "n2", "node_id": "n3", "resource_limits": {}}`), 400, "duplicate_key", "$.heartbeats[1].node_id")
	f("a node twice", wrap(good1, good2, withNodeID("n1", `{"resource_limits": {}}`)), 400, "duplicate_name", "$.heartbeats[2].node_id")
	f("a node twice, escaped", wrap(good1, `{"node_id": "n\u0031", "resource_limits": {}}`), 400, "duplicate_name", "$.heartbeats[1].node_id")
	f("a node twice, the first with an error", wrap(bad, good1, `{"node_id": "n3", "resource_limits": {}}`), 400, "duplicate_name", "$.heartbeats[2].node_id")
	f("an invalid name twice", wrap(good1, `{"node_id": "a b", "resource_limits": {}}`, `{"node_id": "a b", "resource_limits": {}}`), 400, "duplicate_name", "$.heartbeats[2].node_id")
	f("more than max_heartbeats_per_batch", wrap(good1, good2, bad, `{"node_id": "n4", "resource_limits": {}}`), 400, "invalid_value", "$.heartbeats")
	f("too large", wrap(good1, withNodeID("n2", `{"resource_limits": {}, "tags": [`+strings.Repeat(`"x", `, 4000)+`"x"]}`)), 413, "body_too_large", "$")
	if st, _ := ts.do("GET", "/api/v1/heartbeats", ""); st != 405 {
		t.Errorf("GET /api/v1/heartbeats: %d, want 405", st)
	}
	if st, _ := ts.do("POST", "/api/v1/heartbeats/n1", good1); st != 404 {
		t.Errorf("POST /api/v1/heartbeats/n1: %d, want 404", st)
	}
	// The limit is live: at 4 the same batch is taken.
	ts.must(200, "PATCH", "/api/v1/config", `{"max_heartbeats_per_batch": 4}`)
	if rs := ts.batch(wrap(good1, good2, bad, `{"node_id": "n4", "resource_limits": {}}`)); len(rs) != 4 || rs[2]["error"] == nil {
		t.Fatalf("answer: %v", rs)
	}
}

// TestHeartbeatBatchEntryErrors: an entry refused on its own gets its
// error, with the JSON path in the batch, and the other entries are
// processed as if it were not there.
func TestHeartbeatBatchEntryErrors(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	n1 := newNode("n1", 8, 16)
	ts.heartbeat(n1)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 4, "resources": {"cpu": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n1)
	if len(n1.runningIDs()) == 0 {
		t.Fatal("n1 runs nothing")
	}
	var n1Alloc string
	for _, id := range n1.runningIDs() {
		n1Alloc = id
	}
	ok := func(name string) string {
		return withNodeID(name, `{"resource_limits": {"cpu": 4, "memory": 17179869184}}`)
	}
	entries := []struct {
		body       string
		code, path string // "": answered
	}{
		{ok("a1"), "", ""},
		{`{"node_id": "a2", "resource_limits": {}, "allocations": [{"id": "1", "state": "lost"}]}`, "invalid_value", "$.heartbeats[1].allocations[0].state"},
		{`{"allocations": [{"id": "07", "state": "running"}], "node_id": "a3", "resource_limits": {}}`, "invalid_value", "$.heartbeats[2].allocations[0].id"},
		{`{"node_id": "a 4", "resource_limits": {}}`, "invalid_name", "$.heartbeats[3].node_id"},
		{`{"node_id": "a-5!", "resource_limits": {"cpu": -1}}`, "invalid_name", "$.heartbeats[4].node_id"},
		{`{"node_id": "a6", "resource_limits": {}, "allocations": [{"id": "` + n1Alloc + `", "state": "running"}]}`, "foreign_allocation", "$.heartbeats[5].allocations[0].id"},
		{`{"node_id": "a7"}`, "missing_attribute", "$.heartbeats[6].resource_limits"},
		{`{"node_id": "a8", "resource_limits": {}, "tag": []}`, "unknown_attribute", "$.heartbeats[7].tag"},
		{`{"node_id": "a9", "resource_limits": {"cpu": 1, "cpu": 2}}`, "duplicate_key", "$.heartbeats[8].resource_limits.cpu"},
		{`{"node_id": "a10", "resource_limits": {}, "tags": [""]}`, "invalid_value", "$.heartbeats[9].tags[0]"},
		{withNodeID("n1", n1.body()), "", ""},
		{ok("a12"), "", ""},
	}
	var bodies []string
	for _, e := range entries {
		bodies = append(bodies, e.body)
	}
	before := metricValues(t, ts)
	rs := ts.batch(`{"heartbeats": [` + strings.Join(bodies, ",\n") + `]}`)
	if len(rs) != len(entries) {
		t.Fatalf("%d responses for %d heartbeats", len(rs), len(entries))
	}
	var wantNode struct {
		Heartbeats []struct {
			NodeID string `json:"node_id"`
		}
	}
	if err := json.Unmarshal([]byte(`{"heartbeats": [`+strings.Join(bodies, ",")+`]}`), &wantNode); err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		r := rs[i]
		if r["node_id"] != wantNode.Heartbeats[i].NodeID {
			t.Errorf("response %d: node_id %v, want %q", i, r["node_id"], wantNode.Heartbeats[i].NodeID)
		}
		er := obj(r["error"])
		switch {
		case e.code == "" && er != nil:
			t.Errorf("entry %d: %v, want an answer", i, er)
		case e.code == "" && r["allocations_to_start"] == nil:
			t.Errorf("entry %d: %v, want an answer", i, r)
		case e.code != "" && (er["code"] != e.code || er["path"] != e.path || er["message"] == ""):
			t.Errorf("entry %d: %v, want %s at %s", i, r, e.code, e.path)
		case e.code != "" && len(r) != 2:
			t.Errorf("entry %d: %v, want node_id and error only", i, r)
		}
	}
	// Answered entries took effect, refused ones did not.
	for _, name := range []string{"a1", "a12", "n1"} {
		ts.must(200, "GET", "/api/v1/orchid/nodes/"+name, "")
	}
	for _, name := range []string{"a2", "a3", "a6", "a7", "a8", "a9", "a10"} {
		ts.must(404, "GET", "/api/v1/orchid/nodes/"+name, "")
	}
	after := metricValues(t, ts)
	if d := after["fairsched_heartbeats_total"] - before["fairsched_heartbeats_total"]; d != 3 {
		t.Errorf("fairsched_heartbeats_total grew by %v, want 3", d)
	}
	if d := after["fairsched_heartbeat_errors_total"] - before["fairsched_heartbeat_errors_total"]; d != 9 {
		t.Errorf("fairsched_heartbeat_errors_total grew by %v, want 9", d)
	}
	if d := after[`fairsched_http_errors_total{code="400"}`] - before[`fairsched_http_errors_total{code="400"}`]; d != 0 {
		t.Errorf("a batch answered 200 counted %v HTTP errors", d)
	}
}

// TestHeartbeatBatchMatchesSingle is a seeded property test: a cluster
// whose heartbeats arrive in batches (server a) and the same cluster whose
// nodes send the same heartbeats one by one in the same order (server b)
// answer the same (entry by entry, errors with their paths in the batch)
// and end in the same state (orchid, operations, counters), round after
// round, with heartbeats that complete, fail, vanish and report usage of
// allocations, report unknown and foreign allocations, and have invalid
// bodies or node names.
func TestHeartbeatBatchMatchesSingle(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) { batchMatchesSingle(t, seed) })
	}
}

func batchMatchesSingle(t *testing.T, seed uint64) {
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	const cfg = `{"config": {"fair_share_starvation_timeout_s": 1, "preemptive_scheduling_backoff_s": 0},
		"pools": [{"name": "prod", "weight": 3}, {"name": "research", "weight": 1}, {"name": "adhoc", "mode": "fifo"}]}`
	a, b := startServer(t, cfg, nil), startServer(t, cfg, nil)
	const nodeCount = 16
	var na, nb []*simNode
	for i := range nodeCount {
		name := fmt.Sprintf("node-%02d", i)
		na, nb = append(na, newNode(name, 8, 32)), append(nb, newNode(name, 8, 32))
	}
	both := func(method, path, body string, want int) {
		t.Helper()
		a.must(want, method, path, body)
		b.must(want, method, path, body)
	}
	update := func() {
		a.clock.advanceAndUpdate(a.srv)
		b.clock.advanceAndUpdate(b.srv)
	}
	pools := []string{"prod", "research", "adhoc"}
	ops := 0
	startOp := func() {
		ops++
		both("POST", "/api/v1/operations", fmt.Sprintf(`{"id": "op-%d", "pool": %q, "tasks": [{"job_count": %d, "resources": {"cpu": %d, "memory": %d}}]}`,
			ops, pools[r.IntN(len(pools))], 5+r.IntN(40), 1+r.IntN(3), int64(1+r.IntN(4))<<30), 201)
	}
	for range 3 {
		startOp()
	}
	for round := range 40 {
		if r.IntN(4) == 0 {
			startOp()
		}
		// Both simulations are the same: draw the round once, apply it to each.
		order := r.Perm(nodeCount)[:1+r.IntN(nodeCount)]
		var names, bodies []string
		badName := false
		for _, k := range order {
			x, y := na[k], nb[k]
			body := x.body()
			if yb := y.body(); yb != body {
				t.Fatalf("round %d: the simulations differ: %s / %s", round, body, yb)
			}
			name := x.name
			switch p := r.IntN(100); {
			case p < 10 && len(x.runningIDs()) > 0: // a job ends
				ids := x.runningIDs()
				id := ids[r.IntN(len(ids))]
				st := []coretest.AllocState{coretest.AllocCompleted, coretest.AllocFailed, coretest.AllocAborted}[r.IntN(3)]
				for _, n := range []*simNode{x, y} {
					n.end(id, st)
				}
				body = x.body()
			case p < 14 && len(x.runningIDs()) > 0: // one vanishes
				id := x.runningIDs()[0]
				for _, n := range []*simNode{x, y} {
					n.forget(id)
				}
				body = x.body()
			case p < 18 && len(x.runningIDs()) > 0: // one reports its usage
				id := x.runningIDs()[0]
				body = strings.Replace(body, `{"id": "`+id+`", "state": "running"}`,
					`{"id": "`+id+`", "state": "running", "resource_usage": {"cpu": 0.5, "memory": 536870912}}`, 1)
			case p < 22: // an unknown allocation
				body = strings.Replace(body, `"allocations": [`, `"allocations": [{"id": "987654321", "state": "running"}, `, 1)
				body = strings.Replace(body, `}, ]`, `}]`, 1)
			case p < 25: // a bad state
				body = strings.Replace(body, `"allocations": [`, `"allocations": [{"id": "5", "state": "lost"}, `, 1)
				body = strings.Replace(body, `}, ]`, `}]`, 1)
			case p < 28: // negative limits
				body = strings.Replace(body, `"cpu": 8`, `"cpu": -8`, 1)
			case p < 32: // a foreign allocation, if another node runs one
				other := na[(k+1+r.IntN(nodeCount-1))%nodeCount]
				if ids := other.runningIDs(); len(ids) > 0 {
					body = strings.Replace(body, `"allocations": [`, `"allocations": [{"id": "`+ids[0]+`", "state": "running"}, `, 1)
					body = strings.Replace(body, `}, ]`, `}]`, 1)
				}
			case p < 35 && !badName: // an invalid node name
				name, badName = "bad!"+x.name, true
			}
			names, bodies = append(names, name), append(bodies, body)
		}
		// a: one batch.
		rs := a.batch(batchOf(names, bodies))
		if len(rs) != len(order) {
			t.Fatalf("round %d: %d responses for %d heartbeats", round, len(rs), len(order))
		}
		// b: one by one, in the same order.
		for i, k := range order {
			status, out := b.do("POST", "/api/v1/nodes/"+names[i]+"/heartbeat", bodies[i])
			var single map[string]any
			if err := json.Unmarshal(out, &single); err != nil {
				t.Fatalf("round %d: %s: %v", round, out, err)
			}
			got := rs[i]
			if got["node_id"] != names[i] {
				t.Fatalf("round %d: response %d is of %v, want %s", round, i, got["node_id"], names[i])
			}
			want := map[string]any{"node_id": names[i]}
			if status == 200 {
				for k, v := range single {
					want[k] = v
				}
			} else {
				e := obj(single["error"])
				path, _ := e["path"].(string)
				ep := "$.heartbeats[" + strconv.Itoa(i) + "]"
				switch {
				case e["code"] == CodeInvalidName && path == "$.url.id":
					path = ep + ".node_id"
				case path == "":
					path = ep
				default:
					path = ep + strings.TrimPrefix(path, "$")
				}
				e["path"] = path
				want["error"] = e
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, entry %d (%s):\nbatch  %v\nsingle %v (status %d)\nbody %s", round, i, names[i], got, want, status, bodies[i])
			}
			if names[i] == na[k].name {
				na[k].apply(got)
				nb[k].apply(single)
			}
		}
		// The same state.
		if sa, sb := clusterState(t, a, na), clusterState(t, b, nb); sa != sb {
			t.Fatalf("round %d: the states differ:\nbatched  %s\none by one %s", round, sa, sb)
		}
		update()
	}
	m := metricValues(t, a)
	if m["fairsched_heartbeats_total"] == 0 || m["fairsched_heartbeat_errors_total"] == 0 || m["fairsched_allocations_started_total"] == 0 {
		t.Fatalf("the rounds had no heartbeats, no errors or no allocations: %v", m)
	}
	t.Logf("%v heartbeats answered, %v refused, %v allocations started, %v preempted for starving",
		m["fairsched_heartbeats_total"], m["fairsched_heartbeat_errors_total"], m["fairsched_allocations_started_total"],
		m[`fairsched_allocations_preempted_total{reason="starving"}`])
}

// clusterState reads everything the heartbeats change, and the heartbeat
// counters of /metrics (not the HTTP errors: a batch answers 200).
func clusterState(t *testing.T, ts *testServer, nodes []*simNode) string {
	t.Helper()
	var b bytes.Buffer
	paths := []string{"/api/v1/orchid/pools", "/api/v1/operations?limit=1000"}
	for _, n := range nodes {
		paths = append(paths, "/api/v1/orchid/nodes/"+n.name)
	}
	for _, p := range paths {
		status, out := ts.do("GET", p, "")
		fmt.Fprintf(&b, "%s %d %s\n", p, status, out)
	}
	m := metricValues(t, ts)
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, "fairsched_allocations_") || k == "fairsched_heartbeats_total" || k == "fairsched_heartbeat_errors_total" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %v\n", k, m[k])
	}
	return b.String()
}
