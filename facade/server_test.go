package facade

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/wire"
)

// manualClock is a clock.Clock for tests, safe for concurrent use.
type manualClock struct{ us atomic.Int64 }

func (c *manualClock) Now() clock.Time            { return clock.Time(c.us.Load()) }
func (c *manualClock) Advance(d clock.Duration)   { c.us.Add(int64(d)) }
func (c *manualClock) AdvanceSeconds(s float64)   { c.Advance(clock.DurationFromSeconds(s)) }
func (c *manualClock) set(t clock.Time)           { c.us.Store(int64(t)) }
func (c *manualClock) advanceAndUpdate(s *Server) { c.AdvanceSeconds(0.2); s.UpdateFairShare() }

// testServer is a Server on a real loopback listener with a manual clock and
// manual fair-share updates; it stops when the test ends.
type testServer struct {
	t     *testing.T
	srv   *Server
	clock *manualClock
	base  string
	hc    *http.Client
}

func startServer(t *testing.T, config string, opt func(*Options)) *testServer {
	t.Helper()
	mc := &manualClock{}
	mc.set(clock.Time(1_000_000))
	opts := Options{Config: testConfig(t, config), Clock: mc, ManualUpdates: true, Logger: quietLogger(t)}
	if opt != nil {
		opt(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts, stop := serveForTest(t, srv, mc)
	t.Cleanup(stop)
	return ts
}

// testConfig decodes a serve config (nil for "").
func testConfig(t *testing.T, config string) *wire.ServeConfig {
	t.Helper()
	if config == "" {
		return nil
	}
	sc, err := wire.DecodeServeConfig([]byte(config))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return sc
}

// serveForTest serves srv on a free loopback port; stop (which may be
// called more than once) shuts it down and checks that Serve ended well.
func serveForTest(t *testing.T, srv *Server, mc *manualClock) (*testServer, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ts := &testServer{t: t, srv: srv, clock: mc, base: "http://" + ln.Addr().String(),
		hc: &http.Client{Timeout: 10 * time.Second}}
	var once sync.Once
	return ts, func() {
		once.Do(func() {
			ts.hc.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if err := <-done; err != nil {
				t.Errorf("Serve returned %v after Shutdown", err)
			}
			ts.hc.CloseIdleConnections()
		})
	}
}

// do sends a request and returns the status and body.
func (ts *testServer) do(method, path, body string) (int, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.base+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ts.hc.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// must sends a request that must answer want, and decodes the JSON body.
func (ts *testServer) must(want int, method, path, body string) map[string]any {
	ts.t.Helper()
	status, out := ts.do(method, path, body)
	if status != want {
		ts.t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, status, want, out)
	}
	if len(out) == 0 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		ts.t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, out)
	}
	return v
}

// simNode is a simulated node: a coretest.Node agent (each allocation's
// Meta its operation's id) that runs what it is told to start until it is
// stopped, stops a preempted allocation at once and reports it aborted
// next time; it reports its allocations in ID order in every heartbeat and
// follows the answers.
type simNode struct {
	name     string
	limits   string
	tags     []string // nil: ["ssd"]
	agent    coretest.Node[string, string]
	preempts []map[string]any // every preemption received
	aborts   []map[string]any
}

func newNode(name string, cpu, memGiB int) *simNode {
	return &simNode{name: name, limits: fmt.Sprintf(`{"user_slots": 100, "cpu": %d, "memory": %d}`, cpu, int64(memGiB)<<30)}
}

// The simulated nodes of these tests live at one instant: a preempted
// allocation stops at once (StopDelay 0) and none ends by itself.
const simNow clock.Time = 0

var simStates = [...]string{
	coretest.AllocRunning: "running", coretest.AllocCompleted: "completed", coretest.AllocFailed: "failed",
	coretest.AllocAborted: "aborted", coretest.AllocRefused: "refused",
}

func (n *simNode) body() string {
	var b strings.Builder
	tags := `["ssd"]`
	if n.tags != nil {
		out, _ := json.Marshal(n.tags)
		tags = string(out)
	}
	fmt.Fprintf(&b, `{"resource_limits": %s, "tags": %s, "allocations": [`, n.limits, tags)
	n.agent.Advance(simNow, nil)
	allocs := slices.Clone(n.agent.Allocs())
	slices.SortFunc(allocs, func(x, y coretest.Alloc[string, string]) int { return strings.Compare(x.ID, y.ID) })
	for i, a := range allocs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %q, "state": %q}`, a.ID, simStates[a.State])
	}
	b.WriteString("]}")
	return b.String()
}

// heartbeat sends one heartbeat and applies the answer: started allocations
// run, aborted ones stop, preempted ones stop (reported aborted next time).
func (ts *testServer) heartbeat(n *simNode) map[string]any {
	ts.t.Helper()
	resp := ts.must(200, "POST", "/api/v1/nodes/"+n.name+"/heartbeat", n.body())
	n.apply(resp)
	return resp
}

// running reports whether the node runs allocation id: it holds it and was
// not told to preempt it.
func (n *simNode) running(id string) bool {
	a := n.agent.Find(id)
	return a != nil && a.State == coretest.AllocRunning && !a.Preempted
}

// runningIDs returns the allocations the node runs, in string order.
func (n *simNode) runningIDs() []string {
	var ids []string
	for _, a := range n.agent.Allocs() {
		if n.running(a.ID) {
			ids = append(ids, a.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// end makes allocation id end in state st (reported next time).
func (n *simNode) end(id string, st coretest.AllocState) { n.agent.Finish(id, st) }

// forget makes the node stop listing allocation id (every allocation, for
// ""), as an agent that lost it.
func (n *simNode) forget(id string) {
	n.agent.Forget(func(a *coretest.Alloc[string, string]) bool { return id == "" || a.ID == id })
}

// complete reports every running allocation of op as completed next time.
func (n *simNode) complete(op string) int {
	k := 0
	for _, a := range n.agent.Allocs() {
		if a.Meta == op && n.running(a.ID) {
			n.end(a.ID, coretest.AllocCompleted)
			k++
		}
	}
	return k
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

const twoPools = `{"pools": [
	{"name": "prod", "weight": 1},
	{"name": "research", "weight": 1}
]}`

// TestLifecycle builds a tree over HTTP, starts an operation, heartbeats
// simulated nodes until its allocations run, completes them and sees the
// operation complete by itself.
func TestLifecycle(t *testing.T) {
	ts := startServer(t, "", nil)
	ts.must(201, "PUT", "/api/v1/pools/prod", `{"weight": 2, "strong_guarantee_resources": {"cpu": 4}}`)
	ts.must(201, "PUT", "/api/v1/pools/prod-etl", `{"parent": "prod", "max_running_operation_count": 3}`)
	p := ts.must(200, "PATCH", "/api/v1/pools/prod-etl", `{"weight": 3}`)
	if p["parent"] != "prod" || num(p["weight"]) != 3 || num(p["max_running_operation_count"]) != 3 {
		t.Fatalf("PATCH kept the wrong attributes: %v", p)
	}
	pools := ts.must(200, "GET", "/api/v1/pools", "")["pools"].([]any)
	if len(pools) != 3 || obj(pools[0])["name"] != "<Root>" {
		t.Fatalf("pools: %v", pools)
	}

	nodes := []*simNode{newNode("n1", 4, 16), newNode("n2", 4, 16)}
	for _, n := range nodes {
		ts.heartbeat(n) // registers the node
	}
	ts.clock.advanceAndUpdate(ts.srv)

	op := ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod-etl", "type": "map",
		"tasks": [{"name": "map", "job_count": 6, "resources": {"user_slots": 1, "cpu": 1, "memory": 1073741824}}]}`)
	id := op["id"].(string)
	if op["state"] != "running" || !strings.HasPrefix(id, "op-") {
		t.Fatalf("start: %v", op)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	running := 0
	for i := 0; i < 10 && running < 6; i++ {
		running = 0
		for _, n := range nodes {
			ts.heartbeat(n)
			running += len(n.runningIDs())
		}
		ts.clock.advanceAndUpdate(ts.srv)
	}
	if running != 6 {
		t.Fatalf("%d allocations run after 10 rounds, want 6", running)
	}
	o := ts.must(200, "GET", "/api/v1/operations/"+id, "")
	if o["state"] != "running" || num(obj(o["usage"])["cpu"]) != 6 || num(obj(o["allocation_counts"])["running"]) != 6 {
		t.Fatalf("operation: %v", o)
	}
	node := ts.must(200, "GET", "/api/v1/orchid/nodes/n1", "")
	if len(node["allocations"].([]any)) != len(nodes[0].runningIDs()) {
		t.Fatalf("orchid node: %v", node)
	}

	for _, n := range nodes {
		n.complete(id)
		ts.heartbeat(n)
	}
	o = ts.must(200, "GET", "/api/v1/operations/"+id, "")
	if o["state"] != "completed" || num(o["completed_job_count"]) != 6 {
		t.Fatalf("after completing every job: %v", o)
	}
	// A repeated completed report counts once.
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	if o = ts.must(200, "GET", "/api/v1/operations/"+id, ""); num(o["completed_job_count"]) != 6 {
		t.Fatalf("after a repeated heartbeat: %v", o)
	}
	list := ts.must(200, "GET", "/api/v1/operations?state=completed", "")
	if ops := list["operations"].([]any); len(ops) != 1 || obj(ops[0])["id"] != id {
		t.Fatalf("list: %v", list)
	}
	// NB: the core retires an operation finished by a heartbeat on its next
	// control-plane call; ApplyPools does not retire them (yet).
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(204, "DELETE", "/api/v1/pools/prod-etl", "")
}

// TestAbortTellsNodes aborts a running operation and sees its allocations
// aborted on the next heartbeat, with the reason.
func TestAbortTellsNodes(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	n := newNode("n1", 8, 32)
	ts.heartbeat(n)
	ts.clock.advanceAndUpdate(ts.srv)
	id := ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 3, "resources": {"cpu": 1}}]}`)["id"].(string)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n)
	if len(n.runningIDs()) != 3 {
		t.Fatalf("%d running, want 3", len(n.runningIDs()))
	}
	if o := ts.must(200, "POST", "/api/v1/operations/"+id+"/abort", ""); o["state"] != "aborted" {
		t.Fatalf("abort: %v", o)
	}
	ts.heartbeat(n)
	if len(n.runningIDs()) != 0 || len(n.aborts) != 3 || n.aborts[0]["reason"] != "operation "+id+" aborted" {
		t.Fatalf("aborts %v, still running %v", n.aborts, n.runningIDs())
	}
}

// TestPendingQueueAndTotalLimit: the running limit makes an operation
// pending, the total limit answers 409 naming the pool and its limit.
func TestPendingQueueAndTotalLimit(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "q", "max_operation_count": 2, "max_running_operation_count": 1}]}`, nil)
	body := `{"pool": "q", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`
	a := ts.must(201, "POST", "/api/v1/operations", body)
	b := ts.must(201, "POST", "/api/v1/operations", body)
	if a["state"] != "running" || b["state"] != "pending" {
		t.Fatalf("states %v and %v, want running and pending", a["state"], b["state"])
	}
	e := obj(ts.must(409, "POST", "/api/v1/operations", body)["error"])
	if e["code"] != "too_many_operations" || !strings.Contains(e["message"].(string), `"q"`) ||
		!strings.Contains(e["message"].(string), "max_operation_count is 2") || e["path"] != "$.pool" {
		t.Fatalf("error %v", e)
	}
	bo := ts.must(200, "GET", "/api/v1/operations/"+b["id"].(string), "")
	if w := obj(bo["waiting_for"]); w["pool"] != "q" || num(w["max_running_operation_count"]) != 1 {
		t.Fatalf("pending operation: %v", bo)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	q := ts.must(200, "GET", "/api/v1/orchid/pools/q", "")
	if num(q["pending_operation_count"]) != 1 || num(q["running_operation_count"]) != 1 || num(q["operation_count"]) != 2 {
		t.Fatalf("orchid pool: %v", q)
	}
	pending := ts.must(200, "GET", "/api/v1/operations?pool=q&state=pending", "")["operations"].([]any)
	if len(pending) != 1 {
		t.Fatalf("pending list: %v", pending)
	}
	ts.must(200, "POST", "/api/v1/operations/"+a["id"].(string)+"/complete", "")
	if bo = ts.must(200, "GET", "/api/v1/operations/"+b["id"].(string), ""); bo["state"] != "running" {
		t.Fatalf("after the first completes: %v", bo)
	}
}

// TestFinishedOperationRetention: a finished operation stays visible for
// the retention (on the server's clock) and is forgotten after it, while a
// running one is kept however old it is.
func TestFinishedOperationRetention(t *testing.T) {
	ts := startServer(t, twoPools, func(o *Options) { o.FinishedOperationRetention = 30 * time.Second })
	body := `{"pool": "prod", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`
	done := ts.must(201, "POST", "/api/v1/operations", body)["id"].(string)
	live := ts.must(201, "POST", "/api/v1/operations", body)["id"].(string)
	ts.must(200, "POST", "/api/v1/operations/"+done+"/complete", "")
	// advance runs updates on the server's clock for the given seconds.
	advance := func(seconds float64) {
		for end := ts.clock.Now().Add(clock.DurationFromSeconds(seconds)); ts.clock.Now().Before(end); {
			ts.clock.advanceAndUpdate(ts.srv)
		}
	}
	advance(35) // seen finished by the janitor at ≤ 10 s, kept 30 s from then
	if got := ts.must(200, "GET", "/api/v1/operations/"+done, ""); got["state"] != "completed" {
		t.Fatalf("within the retention: %v", got)
	}
	advance(15)
	e := obj(ts.must(404, "GET", "/api/v1/operations/"+done, "")["error"])
	if e["code"] != "unknown_operation" {
		t.Fatalf("after the retention: %v", e)
	}
	ops := ts.must(200, "GET", "/api/v1/operations", "")["operations"].([]any)
	if len(ops) != 1 || obj(ops[0])["id"] != live {
		t.Fatalf("listing after the retention: %v, want only %s", ops, live)
	}
}

// TestIdempotentStart: the same client id and body returns the same
// operation; a different body is a 409.
func TestIdempotentStart(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	body := `{"id": "etl-2026-11-22", "pool": "prod", "tasks": [{"job_count": 2, "resources": {"cpu": 1}}]}`
	a := ts.must(201, "POST", "/api/v1/operations", body)
	b := ts.must(201, "POST", "/api/v1/operations", strings.ReplaceAll(body, " ", ""))
	if a["id"] != "etl-2026-11-22" || b["id"] != a["id"] {
		t.Fatalf("%v %v", a, b)
	}
	e := obj(ts.must(409, "POST", "/api/v1/operations", strings.Replace(body, `"job_count": 2`, `"job_count": 3`, 1))["error"])
	if e["code"] != "duplicate_id" || e["path"] != "$.id" {
		t.Fatalf("error %v", e)
	}
	if ops := ts.must(200, "GET", "/api/v1/operations", "")["operations"].([]any); len(ops) != 1 {
		t.Fatalf("%d operations, want 1", len(ops))
	}
}

// TestListPaging pages through operations with limit and cursor.
func TestListPaging(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "p", "max_operation_count": 20, "max_running_operation_count": 20}]}`, nil)
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, ts.must(201, "POST", "/api/v1/operations", `{"pool": "p", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)["id"].(string))
	}
	var got []string
	cursor := ""
	for page := 0; page < 10; page++ {
		path := "/api/v1/operations?limit=3"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := ts.must(200, "GET", path, "")
		for _, o := range r["operations"].([]any) {
			got = append(got, obj(o)["id"].(string))
		}
		next, ok := r["next_cursor"].(string)
		if !ok {
			break
		}
		cursor = next
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("pages gave %v, want %v", got, ids)
	}
}

// TestPatchOperation moves an operation and changes its weight.
func TestPatchOperation(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	id := ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)["id"].(string)
	o := ts.must(200, "PATCH", "/api/v1/operations/"+id, `{"pool": "research", "weight": 4}`)
	if o["pool"] != "research" {
		t.Fatalf("after the move: %v", o)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	if o := ts.must(200, "GET", "/api/v1/orchid/operations/"+id, ""); num(o["weight"]) != 4 {
		t.Fatalf("orchid after the weight change: %v", o)
	}
}

// TestOrchidMatchesSolve: the fair shares of the orchid equal POST
// /api/v1/solve's on a snapshot of the same tree, demands and usage.
func TestOrchidMatchesSolve(t *testing.T) {
	ts := startServer(t, `{"pools": [
		{"name": "prod", "weight": 2, "strong_guarantee_resources": {"cpu": 6}},
		{"name": "prod-a", "parent": "prod"},
		{"name": "research", "resource_limits": {"memory": 8589934592}},
		{"name": "adhoc", "mode": "fifo"}
	]}`, nil)
	nodes := []*simNode{newNode("n1", 8, 16), newNode("n2", 8, 16), newNode("n3", 4, 64)}
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	starts := []string{
		`{"pool": "prod-a", "tasks": [{"job_count": 10, "resources": {"cpu": 1, "memory": 1073741824}}]}`,
		`{"pool": "prod", "weight": 3, "tasks": [{"job_count": 4, "resources": {"cpu": 2, "memory": 536870912}}]}`,
		`{"pool": "research", "tasks": [{"job_count": 20, "resources": {"cpu": 0.5, "memory": 2147483648}}]}`,
		`{"pool": "adhoc", "tasks": [{"job_count": 3, "resources": {"cpu": 1, "memory": 1073741824}}]}`,
		`{"pool": "adhoc", "tasks": [{"job_count": 2, "resources": {"cpu": 3, "memory": 1073741824}}]}`,
	}
	for _, b := range starts {
		ts.must(201, "POST", "/api/v1/operations", b)
		ts.clock.AdvanceSeconds(1)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.clock.advanceAndUpdate(ts.srv)

	// The snapshot: total resources, the pools' configs, every operation's
	// demand, usage, weight and start time as the scheduler saw them.
	pools := ts.must(200, "GET", "/api/v1/pools", "")["pools"].([]any)
	ops := ts.must(200, "GET", "/api/v1/operations", "")["operations"].([]any)
	children := map[string][]any{}
	for _, p := range pools[1:] {
		pm := obj(p)
		el := map[string]any{"pool": pm["name"]}
		for k, v := range pm {
			if k != "name" && k != "parent" {
				el[k] = v
			}
		}
		children[pm["parent"].(string)] = append(children[pm["parent"].(string)], el)
	}
	for _, o := range ops {
		om := obj(o)
		detail := ts.must(200, "GET", "/api/v1/orchid/operations/"+om["id"].(string), "")
		children[om["pool"].(string)] = append(children[om["pool"].(string)], map[string]any{
			"operation": om["id"], "demand": om["demand"], "usage": om["usage"],
			"weight": detail["weight"], "start_time_s": om["start_time_s"],
		})
	}
	var nest func(name string) []any
	nest = func(name string) []any {
		els := children[name]
		for _, e := range els {
			if em := obj(e); em["pool"] != nil {
				em["children"] = nest(em["pool"].(string))
			}
		}
		if els == nil {
			return []any{}
		}
		return els
	}
	snap, _ := json.Marshal(map[string]any{
		"total_resources": map[string]any{"user_slots": 300, "cpu": 20, "memory": int64(96) << 30},
		"tree":            map[string]any{"children": nest("<Root>")},
	})
	solved := ts.must(200, "POST", "/api/v1/solve", string(snap))
	elements := obj(obj(solved["updates"].([]any)[0])["elements"])

	orchid := ts.must(200, "GET", "/api/v1/orchid/pools", "")["pools"].([]any)
	check := func(name string, got map[string]any) {
		t.Helper()
		want := obj(elements[name])
		if want == nil {
			t.Fatalf("solve has no element %q", name)
		}
		for _, attr := range []string{"fair_share", "demand_share", "usage_share"} {
			for r, v := range obj(want[attr]) {
				if g := num(obj(got[attr])[r]); g-num(v) > 1e-9 || num(v)-g > 1e-9 {
					t.Errorf("%s %s.%s: orchid %v, solve %v", name, attr, r, g, v)
				}
			}
		}
	}
	nonZero := false
	for _, p := range orchid {
		pm := obj(p)
		check(pm["name"].(string), pm)
		nonZero = nonZero || num(obj(pm["fair_share"])["cpu"]) > 0
	}
	for _, o := range ops {
		id := obj(o)["id"].(string)
		check(id, ts.must(200, "GET", "/api/v1/orchid/operations/"+id, ""))
	}
	if !nonZero {
		t.Fatal("every fair share is 0: the test compares nothing")
	}
}

// TestPreemption: an operation starving below its fair share gets its
// allocation through preemption, and the victim's node hears the reason.
func TestPreemption(t *testing.T) {
	ts := startServer(t, `{"config": {"fair_share_starvation_timeout_s": 1, "fair_share_aggressive_starvation_timeout_s": 2,
			"preemptive_scheduling_backoff_s": 0, "fair_share_starvation_tolerance": 0.9},
		"pools": [{"name": "greedy"}, {"name": "starving"}]}`, nil)
	nodes := []*simNode{newNode("n1", 8, 32), newNode("n2", 8, 32)}
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "greedy", "tasks": [{"job_count": 100, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	victim := ts.must(201, "POST", "/api/v1/operations", `{"pool": "starving", "tasks": [{"job_count": 6, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	var got map[string]any
	for round := 0; round < 40 && got == nil; round++ {
		ts.clock.AdvanceSeconds(0.5)
		ts.srv.UpdateFairShare()
		for _, n := range nodes {
			ts.heartbeat(n)
			if len(n.preempts) > 0 {
				got = n.preempts[0]
				break
			}
		}
	}
	if got == nil {
		t.Skip("no preemption after 20 s of virtual time: core/schedule has no preemptive stage yet (docs/api.md#node-heartbeats, docs/semantics.md#preemptive-stages)")
	}
	reason, _ := got["reason"].(string)
	if !strings.HasPrefix(reason, "preempted") || !strings.Contains(reason, "starving") || num(got["timeout_s"]) <= 0 {
		t.Fatalf("preemption %v", got)
	}
	if !strings.Contains(reason, victim["id"].(string)) {
		t.Logf("the reason names no operation of the starving pool: %q", reason)
	}
	t.Logf("preemption: %v", got)
}

// TestMetricsHealthAndPprof checks /metrics, /healthz and /debug/pprof/.
func TestMetricsHealthAndPprof(t *testing.T) {
	ts := startServer(t, twoPools, func(o *Options) { o.Pprof = true })
	ts.must(200, "GET", "/healthz", "")
	n := newNode("n1", 4, 8)
	ts.heartbeat(n)
	ts.clock.advanceAndUpdate(ts.srv)
	status, out := ts.do("GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	for _, want := range []string{"fairsched_heartbeats_total 1", "fairsched_heartbeat_duration_seconds_count 1",
		"fairsched_fair_share_update_duration_seconds_count", `fairsched_operations{state="running"} 0`,
		`fairsched_pool_fair_share{pool="prod",resource="cpu"}`, `fairsched_pool_usage_share{pool="research",resource="memory"}`,
		`fairsched_pool_demand_share{pool="<Root>",resource="cpu"}`, `fairsched_allocations_preempted_total{reason="starving"} 0`,
		`fairsched_allocations_preempted_total{reason="node_resources_overcommitted"} 0`,
		`fairsched_allocations_aborted_total{reason="unknown_allocation"} 0`, "fairsched_allocations_started_total 0", "fairsched_cpu_info{"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if status, out := ts.do("GET", "/debug/pprof/", ""); status != 200 || !bytes.Contains(out, []byte("goroutine")) {
		t.Fatalf("/debug/pprof/: %d", status)
	}
	if status, _ := ts.do("GET", "/debug/pprof/heap", ""); status != 200 {
		t.Fatalf("/debug/pprof/heap: %d", status)
	}
	off := startServer(t, "", nil)
	if status, _ := off.do("GET", "/debug/pprof/", ""); status != 404 {
		t.Fatalf("pprof off: %d, want 404", status)
	}
}

// TestSolveEndpoint: POST /api/v1/solve gives `fairsched solve`'s bytes.
func TestSolveEndpoint(t *testing.T) {
	ts := startServer(t, "", nil)
	snap := `{"total_resources": {"cpu": 9, "memory": 18}, "tree": {"children": [
		{"operation": "A", "demand": {"cpu": 3, "memory": 12}}, {"operation": "B", "demand": {"cpu": 9, "memory": 6}}]}}`
	r := ts.must(200, "POST", "/api/v1/solve", snap)
	el := obj(obj(r["updates"].([]any)[0])["elements"])
	if fs := obj(obj(el["A"])["fair_share"]); fs["cpu"] == nil {
		t.Fatalf("solve: %v", r)
	}
}

// quietLogger drops the server's log lines (they would outlive the test).
func quietLogger(*testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// check that the answer for a request header that is too large is JSON too.
func TestFastHTTPErrorsAreJSON(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.MaxBodySize = 1 << 16 })
	raw := func(req string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := raw("GARBAGE\r\n\r\n")
	if status != 400 || !strings.Contains(body, `"code":"bad_request"`) {
		t.Fatalf("bad request line: %d %s", status, body)
	}
	status, body = raw("POST /api/v1/operations HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(1<<20) + "\r\n\r\n")
	if status != 413 || !strings.Contains(body, `"code":"body_too_large"`) {
		t.Fatalf("oversize body: %d %s", status, body)
	}
	status, body = raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8192) + "\r\n\r\n")
	if status != 431 || !strings.Contains(body, `"error"`) {
		t.Fatalf("oversize header: %d %s", status, body)
	}
}

// TestPanicIsA500 recovers a handler's panic into a 500 JSON error, and the
// server goes on serving.
func TestPanicIsA500(t *testing.T) {
	ts := startServer(t, "", nil)
	hook := func(path []byte) {
		if string(path) == "/api/v1/pools" {
			panic("boom")
		}
	}
	ts.srv.panicHook.Store(&hook)
	e := obj(ts.must(500, "GET", "/api/v1/pools", "")["error"])
	if e["code"] != "internal_error" {
		t.Fatalf("error %v", e)
	}
	ts.must(200, "GET", "/healthz", "")
	ts.srv.panicHook.Store(nil)
	ts.must(200, "GET", "/api/v1/pools", "")
}

// TestOverloadIs429: solves beyond MaxConcurrentSolves are refused.
func TestOverloadIs429(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.MaxConcurrentSolves = 1 })
	ts.srv.solves <- struct{}{} // one solve in flight
	e := obj(ts.must(429, "POST", "/api/v1/solve", `{"total_resources": {}, "tree": {}}`)["error"])
	if e["code"] != "overloaded" {
		t.Fatalf("error %v", e)
	}
	<-ts.srv.solves
	ts.must(200, "POST", "/api/v1/solve", `{"total_resources": {"cpu": 1}, "tree": {}}`)
}

// TestConfig reads the config and changes the update period.
func TestConfig(t *testing.T) {
	ts := startServer(t, "", nil)
	c := ts.must(200, "GET", "/api/v1/config", "")
	if num(c["fair_share_update_period_s"]) != 0.2 || c["main_resource"] != "cpu" {
		t.Fatalf("config %v", c)
	}
	c = ts.must(200, "PATCH", "/api/v1/config", `{"fair_share_update_period_s": 0.5}`)
	if num(c["fair_share_update_period_s"]) != 0.5 || int64(ts.srv.Core().Period()) != int64(500*time.Millisecond) {
		t.Fatalf("config %v", c)
	}
	c = ts.must(200, "PATCH", "/api/v1/config", `{"max_operation_count": 100000, "preemptive_scheduling_backoff_s": 2.5}`)
	if num(c["max_operation_count"]) != 100000 || num(c["preemptive_scheduling_backoff_s"]) != 2.5 {
		t.Fatalf("config %v", c)
	}
	if got := ts.srv.sched.Config(); got.Limits.MaxOperationCount != 100000 || got.PreemptiveSchedulingBackoff != 2500*clock.Millisecond {
		t.Fatalf("the core's config %+v", got)
	}
	// A refused patch changes nothing, not even its valid keys.
	e := obj(ts.must(400, "PATCH", "/api/v1/config",
		`{"fair_share_update_period_s": 1, "fair_share_starvation_timeout_s": 200}`)["error"])
	if e["code"] != "invalid_value" || e["path"] != "$.fair_share_aggressive_starvation_timeout_s" {
		t.Fatalf("error %v", e)
	}
	if c := ts.must(200, "GET", "/api/v1/config", ""); num(c["fair_share_update_period_s"]) != 0.5 || num(c["fair_share_starvation_timeout_s"]) != 30 {
		t.Fatalf("config after a refused patch %v", c)
	}
}

// TestShutdownRacingServe: Shutdown stops a Serve that it overtook (the
// listener not yet registered with fasthttp) and a Serve that comes after
// it, instead of leaving either serving for ever.
func TestShutdownRacingServe(t *testing.T) {
	for _, first := range []string{"serve", "shutdown"} {
		t.Run(first+" first", func(t *testing.T) {
			srv, err := New(Options{ManualUpdates: first == "shutdown", Logger: quietLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if first == "shutdown" {
				if err := srv.Shutdown(ctx); err != nil {
					t.Fatalf("shutdown: %v", err)
				}
				go func() { done <- srv.Serve(ln) }()
			} else {
				go func() { done <- srv.Serve(ln) }()
				if err := srv.Shutdown(ctx); err != nil {
					t.Fatalf("shutdown: %v", err)
				}
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Serve returned %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve still runs after Shutdown")
			}
			if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
				c.Close()
				t.Fatal("the listener still accepts after Shutdown")
			}
		})
	}
}

// TestGuaranteeChangeUpdatesBreakdown: a PATCH of a pool's strong guarantee
// that leaves its total fair share alone still moves the split of the fair
// share into its parts at the next update (docs/semantics.md#fair-share).
func TestGuaranteeChangeUpdatesBreakdown(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "P", "strong_guarantee_resources": {"cpu": 10}}]}`, nil)
	ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"user_slots": 100, "cpu": 100, "memory": 1099511627776}}`)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "op", "pool": "P", "tasks": [{"job_count": 30, "resources": {"cpu": 1}}]}`)
	detailed := func() (strong, weight float64) {
		t.Helper()
		ts.clock.advanceAndUpdate(ts.srv)
		p := ts.must(200, "GET", "/api/v1/orchid/pools/P", "")
		d := obj(p["detailed"])
		if total := num(obj(p["fair_share"])["cpu"]); math.Abs(total-0.3) > 1e-9 {
			t.Fatalf("P's fair share %v, want 0.3 cpu", p["fair_share"])
		}
		return num(obj(d["strong_guarantee"])["cpu"]), num(obj(d["weight_proportional"])["cpu"])
	}
	if s, w := detailed(); math.Abs(s-0.1) > 1e-9 || math.Abs(w-0.2) > 1e-9 {
		t.Fatalf("before: strong %v, weight-proportional %v; want 0.1 and 0.2", s, w)
	}
	ts.must(200, "PATCH", "/api/v1/pools/P", `{"strong_guarantee_resources": {"cpu": 20}}`)
	if s, w := detailed(); math.Abs(s-0.2) > 1e-9 || math.Abs(w-0.1) > 1e-9 {
		t.Fatalf("after the PATCH: strong %v, weight-proportional %v; want 0.2 and 0.1", s, w)
	}
}

// TestSatisfactionAndSchedulingPriorityOrchid: a pool's satisfaction_ratio
// is the minimum over its schedulable children (an empty pool's is 1e9),
// beside its own local_satisfaction_ratio (docs/semantics.md#satisfaction-and-status); with
// enable_guarantee_priority_scheduling an operation below its promised
// guarantee is in the high scheduling class (docs/semantics.md#scheduling-on-a-heartbeat).
func TestSatisfactionAndSchedulingPriorityOrchid(t *testing.T) {
	ts := startServer(t, `{"config": {"enable_guarantee_priority_scheduling": true}, "pools": [
		{"name": "a"}, {"name": "empty"},
		{"name": "g", "strong_guarantee_resources": {"cpu": 50}, "compute_promised_guarantee_fair_share": true}]}`, nil)
	ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"user_slots": 100, "cpu": 100, "memory": 1099511627776}}`)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "busy", "pool": "a", "tasks": [{"job_count": 20, "resources": {"cpu": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"user_slots": 100, "cpu": 100, "memory": 1099511627776}}`)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "idle", "pool": "a", "tasks": [{"job_count": 20, "resources": {"cpu": 1}}]}`)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "guaranteed", "pool": "g", "tasks": [{"job_count": 20, "resources": {"cpu": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	a := ts.must(200, "GET", "/api/v1/orchid/pools/a", "")
	if num(a["satisfaction_ratio"]) != 0 || num(a["local_satisfaction_ratio"]) <= 0 {
		t.Fatalf("pool a: satisfaction %v, local %v; want 0 (its idle operation's) and its own positive ratio", a["satisfaction_ratio"], a["local_satisfaction_ratio"])
	}
	if e := ts.must(200, "GET", "/api/v1/orchid/pools/empty", ""); num(e["satisfaction_ratio"]) != 1e9 {
		t.Fatalf("empty pool: satisfaction %v, want 1e9", e["satisfaction_ratio"])
	}
	for id, want := range map[string]string{"busy": "medium", "idle": "medium", "guaranteed": "high"} {
		o := ts.must(200, "GET", "/api/v1/orchid/operations/"+id, "")
		if o["scheduling_priority"] != want {
			t.Errorf("operation %s: scheduling_priority %v, want %s", id, o["scheduling_priority"], want)
		}
		if _, ok := o["scheduling_satisfaction_ratio"]; !ok {
			t.Errorf("operation %s: no scheduling_satisfaction_ratio in %v", id, o)
		}
	}
}

// TestStatusBoundaryIsExact: the reference's conditional-preemption case
// over HTTP, in both fit-factor modes. The donor's fair share is exactly a
// third of the cluster (a few ulps above it in the improved mode); its
// first 10 allocations add up to it, so exactly 5 of its 15 are Preemptible
// (docs/semantics.md#preemption-statuses), and the first 2 (up to aggressive_preemption_satisfaction_
// threshold 0.2 of it) are NonPreemptible.
func TestStatusBoundaryIsExact(t *testing.T) {
	for _, improved := range []bool{true, false} {
		t.Run(fmt.Sprintf("improved=%v", improved), func(t *testing.T) {
			ts := startServer(t, fmt.Sprintf(`{"config": {"enable_improved_fair_share_by_fit_factor_computation": %v,
				"min_spare_allocation_resources": {"user_slots": 1, "cpu": 1}},
				"pools": [{"name": "blocking", "strong_guarantee_resources": {"cpu": 10}},
					{"name": "guaranteed", "strong_guarantee_resources": {"cpu": 20}}]}`, improved), nil)
			n := newNode("n1", 30, 0)
			n.limits = `{"user_slots": 30, "cpu": 30, "memory": 314572800}`
			ts.heartbeat(n)
			ts.must(201, "POST", "/api/v1/operations", `{"id": "blocker", "pool": "blocking", "tasks": [{"job_count": 1, "resources": {"user_slots": 15, "cpu": 15, "memory": 157286400}}]}`)
			ts.clock.advanceAndUpdate(ts.srv)
			ts.heartbeat(n)
			ts.must(201, "POST", "/api/v1/operations", `{"id": "donor", "pool": "guaranteed", "tasks": [{"job_count": 20, "resources": {"user_slots": 1, "cpu": 1, "memory": 10485760}}]}`)
			ts.clock.advanceAndUpdate(ts.srv)
			ts.heartbeat(n)
			ts.must(201, "POST", "/api/v1/operations", `{"id": "starving", "pool": "guaranteed", "tasks": [{"job_count": 10, "resources": {"user_slots": 1, "cpu": 1, "memory": 10485760}}]}`)
			ts.clock.advanceAndUpdate(ts.srv)
			ts.heartbeat(n)
			d := ts.must(200, "GET", "/api/v1/orchid/operations/donor", "")
			c := obj(d["allocation_counts"])
			if num(c["running"]) != 15 || num(c["non_preemptible"]) != 2 || num(c["aggressively_preemptible"]) != 8 || num(c["preemptible"]) != 5 {
				t.Fatalf("donor: allocation counts %v, want 15 running: 2 non-preemptible, 8 aggressively preemptible, 5 preemptible", c)
			}
		})
	}
}

// TestStarvingOperationNeverPreemptsItself: issue 18's case over HTTP. b
// runs 3 of 8 slots, below its fair share of 4, and starves aggressively;
// a's pool keeps a's allocations non-preemptible, so the only candidates
// are b's own aggressively preemptible allocations: nothing may be
// preempted, on any heartbeat, and no preemption ever names its own
// operation as the beneficiary.
func TestStarvingOperationNeverPreemptsItself(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_preemption_from_starving_operations=%v", allow), func(t *testing.T) {
			ts := startServer(t, fmt.Sprintf(`{"config": {"enable_aggressive_starvation": true, "preemptive_scheduling_backoff_s": 0,
				"allow_preemption_from_starving_operations": %v},
				"pools": [{"name": "pa", "non_preemptible_resource_usage_threshold": {"user_slots": 8}}, {"name": "pb"}]}`, allow), nil)
			n := newNode("n1", 8, 80)
			n.limits = `{"user_slots": 8, "cpu": 8, "memory": 85899345920}`
			ts.heartbeat(n)
			ts.must(201, "POST", "/api/v1/operations", `{"id": "a", "pool": "pa", "tasks": [{"job_count": 5, "resources": {"cpu": 1}}]}`)
			ts.clock.advanceAndUpdate(ts.srv)
			ts.heartbeat(n)
			ts.must(201, "POST", "/api/v1/operations", `{"id": "b", "pool": "pb", "tasks": [{"job_count": 1000, "resources": {"cpu": 1}}]}`)
			for range 200 {
				ts.clock.AdvanceSeconds(1)
				ts.srv.UpdateFairShare()
				ts.heartbeat(n)
			}
			for _, p := range n.preempts {
				reason, _ := p["reason"].(string)
				if p["operation_id"] == "b" || strings.Contains(reason, fmt.Sprintf("of operation %v ", p["operation_id"])) {
					t.Errorf("preemption %v", p)
				}
			}
			b := ts.must(200, "GET", "/api/v1/orchid/operations/b", "")
			if b["starvation_status"] != "aggressively_starving" || num(obj(b["allocation_counts"])["running"]) != 3 {
				t.Fatalf("b: %v; want it aggressively starving with its 3 allocations", b)
			}
		})
	}
}
