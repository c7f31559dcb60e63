package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsched/fairsched/facade/facadetest"
)

// newClient is a strict client of base with fast retries.
func newClient(t *testing.T, base string, opts ...Option) *Client {
	t.Helper()
	c, err := New(base, append([]Option{WithBackoff(time.Microsecond, time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c.strict = true
	return c
}

const testConfig = `{"pools": [
	{"name": "prod", "weight": 3, "strong_guarantee_resources": {"cpu": 16}},
	{"name": "etl", "parent": "prod", "max_running_operation_count": 1},
	{"name": "fifo", "mode": "fifo", "resource_limits": {"gpu": 0}},
	{"name": "burst", "integral_guarantees": {"guarantee_type": "burst",
		"resource_flow": {"cpu": 4}, "burst_guarantee_resources": {"cpu": 16}}}
]}`

// TestEveryEndpointAgainstTheServer drives every endpoint through the client
// against a real server, decoding strictly: an answer key the client's types
// lack fails the test.
func TestEveryEndpointAgainstTheServer(t *testing.T) {
	ts := facadetest.Start(t, testConfig)
	c := newClient(t, ts.URL)
	ctx := context.Background()

	if h, err := c.Health(ctx); err != nil || h.Status != "ok" || h.Role != "standalone" || h.Store != "memory" {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if v, err := c.Version(ctx); err != nil || v.Version == "" || v.GoVersion == "" || v.Commit == "" {
		t.Fatalf("Version = %+v, %v", v, err)
	}
	doc, err := c.OpenAPI(ctx)
	if err != nil || !json.Valid(doc) || !strings.Contains(string(doc), `"openapi"`) {
		t.Fatalf("OpenAPI: %v (%d bytes)", err, len(doc))
	}

	// The tree config.
	cfg, err := c.Config(ctx)
	if err != nil || cfg["max_operation_count"] == nil {
		t.Fatalf("Config = %v, %v", cfg, err)
	}
	cfg, err = c.PatchConfig(ctx, Config{"preemptive_scheduling_backoff_s": 2.5})
	if err != nil || cfg["preemptive_scheduling_backoff_s"] != 2.5 {
		t.Fatalf("PatchConfig = %v, %v", cfg["preemptive_scheduling_backoff_s"], err)
	}

	// Pools.
	pools, err := c.Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range pools {
		names = append(names, p.Name)
	}
	if want := []string{RootPool, "burst", "fifo", "prod", "etl"}; !sameSet(names, want) || names[0] != RootPool {
		t.Fatalf("Pools = %v, want %v with the root first", names, want)
	}
	p, err := c.Pool(ctx, "fifo")
	if err != nil || p.Mode != "fifo" || p.ResourceLimits == nil || p.ResourceLimits[ResourceGPU] != 0 {
		t.Fatalf("Pool(fifo) = %+v, %v", p, err)
	}
	if _, ok := p.ResourceLimits[ResourceCPU]; ok {
		t.Fatalf("fifo's cpu is unlimited, got %v", p.ResourceLimits)
	}
	p, created, err := c.PutPool(ctx, "adhoc", Pool{Name: "ignored", Weight: 2, ResourceLimits: Limits{ResourceCPU: 8}})
	if err != nil || !created || p.Name != "adhoc" || p.Weight != 2 || p.ResourceLimits[ResourceCPU] != 8 {
		t.Fatalf("PutPool(adhoc) = %+v, %v, %v", p, created, err)
	}
	if _, created, err = c.PutPool(ctx, "adhoc", Pool{Weight: 3}); err != nil || created {
		t.Fatalf("PutPool(adhoc) again: created %v, %v", created, err)
	}
	p, err = c.PatchPool(ctx, "adhoc", PoolPatch{Parent: Set("prod"), Weight: Reset[float64](),
		ResourceLimits: Set(Limits{ResourceMemory: 1 << 30})})
	if err != nil || p.Parent != "prod" || p.Weight != 0 || p.ResourceLimits[ResourceMemory] != 1<<30 {
		t.Fatalf("PatchPool = %+v, %v", p, err)
	}
	if err := c.DeletePool(ctx, "adhoc"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool(ctx, "adhoc"); !IsNotFound(err) || ErrorCode(err) != "unknown_pool" {
		t.Fatalf("Pool(adhoc) after delete: %v", err)
	}

	// Operations.
	job := Resources{CPU: 1, Memory: 1 << 30, UserSlots: 1}
	for _, id := range []string{"etl-1", "etl-2"} {
		st, err := c.StartOperation(ctx, OperationSpec{ID: id, Pool: "etl", Tasks: []Task{{Name: "map", JobCount: 4, Resources: job}}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"etl-1": "running", "etl-2": "pending"}[id]
		if st.ID != id || st.State != want {
			t.Fatalf("StartOperation(%s) = %+v, want state %s", id, st, want)
		}
	}
	if _, err := c.StartOperation(ctx, OperationSpec{Pool: "burst", Tasks: []Task{{JobCount: 2, Resources: job}}}); err != nil {
		t.Fatal(err)
	}
	op, err := c.Operation(ctx, "etl-2")
	if err != nil || op.State != "pending" || op.WaitingFor == nil || op.WaitingFor.Pool != "etl" {
		t.Fatalf("Operation(etl-2) = %+v, %v", op, err)
	}
	op, err = c.PatchOperation(ctx, "etl-1", OperationPatch{Weight: 5, ResourceLimits: Set(Limits{ResourceCPU: 2})})
	if err != nil || op.ID != "etl-1" {
		t.Fatalf("PatchOperation = %+v, %v", op, err)
	}
	var ids []string
	for op, err := range c.Operations(ctx, OperationFilter{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, op.ID)
	}
	if len(ids) != 3 || ids[0] != "etl-1" || ids[1] != "etl-2" {
		t.Fatalf("Operations (pages of 1) = %v", ids)
	}
	page, err := c.ListOperations(ctx, OperationFilter{Pool: "etl", State: "pending"})
	if err != nil || len(page.Operations) != 1 || page.Operations[0].ID != "etl-2" || page.NextCursor != nil {
		t.Fatalf("ListOperations(etl, pending) = %+v, %v", page, err)
	}

	// A node heartbeats, the update runs, the node is given allocations.
	ts.Update()
	hb := Heartbeat{ResourceLimits: Resources{CPU: 32, Memory: 128 << 30, UserSlots: 32}, Tags: []string{"rack-1"}}
	resp, err := c.Heartbeat(ctx, "node-1", hb)
	if err != nil {
		t.Fatal(err)
	}
	ts.Update()
	resp, err = c.Heartbeat(ctx, "node-1", hb)
	if err != nil || len(resp.AllocationsToStart) == 0 {
		t.Fatalf("Heartbeat = %+v, %v", resp, err)
	}
	for _, a := range resp.AllocationsToStart {
		hb.Allocations = append(hb.Allocations, AllocationReport{ID: a.ID, State: "running"})
	}
	if _, err := c.Heartbeat(ctx, "node-1", hb); err != nil {
		t.Fatal(err)
	}
	ts.Update()

	// A batch: one good heartbeat, one refused; the good one applies.
	results, err := c.Heartbeats(ctx, []NodeHeartbeat{
		{NodeID: "node-2", Heartbeat: Heartbeat{ResourceLimits: Resources{CPU: 8, UserSlots: 8}}},
		{NodeID: "node-3", Heartbeat: Heartbeat{ResourceLimits: Resources{CPU: 8},
			Allocations: []AllocationReport{{ID: "1", State: "sleeping"}}}},
	})
	if err != nil || len(results) != 2 || results[0].NodeID != "node-2" || results[0].Err != nil ||
		results[1].Err == nil || results[1].Err.Code != "invalid_value" || results[1].Err.Path != "$.heartbeats[1].allocations[0].state" {
		t.Fatalf("Heartbeats = %+v, %v (second error %+v)", results, err, results[1].Err)
	}
	if _, err := c.NodeOrchid(ctx, "node-2"); err != nil {
		t.Fatalf("node-2 after the batch: %v", err)
	}
	if _, err := c.NodeOrchid(ctx, "node-3"); !IsNotFound(err) {
		t.Fatalf("node-3 after its refused heartbeat: %v", err)
	}
	_, err = c.Heartbeats(ctx, []NodeHeartbeat{{NodeID: "a"}, {NodeID: "a"}})
	if e := (*Error)(nil); !errors.As(err, &e) || e.StatusCode != 400 {
		t.Fatalf("a batch with a node twice: %v", err)
	}

	// The orchid.
	orchids, err := c.PoolOrchids(ctx)
	if err != nil || len(orchids) != 5 || orchids[0].Name != RootPool {
		t.Fatalf("PoolOrchids = %d pools, %v", len(orchids), err)
	}
	list, err := c.PoolOrchidList(ctx)
	if err != nil || len(list.Pools) != 5 || list.FairnessError < 0 || list.FairnessErrorIntegral < 0 {
		t.Fatalf("PoolOrchidList = %+v, %v", list, err)
	}
	h, err := c.PoolHistory(ctx, "burst", -60, 20)
	if err != nil || h.Pool != "burst" || h.StepS != 20 || len(h.Points) == 0 {
		t.Fatalf("PoolHistory(burst) = %+v, %v", h, err)
	}
	if _, err := c.PoolHistory(ctx, "burst", 0, -1); err == nil {
		t.Fatal("PoolHistory with step -1: no error")
	}
	po, err := c.PoolOrchid(ctx, "burst")
	if err != nil || po.IntegralGuaranteeType != "burst" || po.AccumulatedResourceVolume == nil || po.FairShare.CPU <= 0 {
		t.Fatalf("PoolOrchid(burst) = %+v, %v", po, err)
	}
	oo, err := c.OperationOrchid(ctx, "etl-1")
	if err != nil || oo.ID != "etl-1" || oo.Usage.CPU == 0 || oo.Weight != 5 {
		t.Fatalf("OperationOrchid(etl-1) = %+v, %v", oo, err)
	}
	var nodeIDs []string
	for n, err := range c.Nodes(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		nodeIDs = append(nodeIDs, n.ID)
	}
	if !slices.Equal(nodeIDs, []string{"node-1", "node-2"}) {
		t.Fatalf("Nodes = %v", nodeIDs)
	}
	if np, err := c.ListNodes(ctx, "", 1); err != nil || len(np.Nodes) != 1 || np.NextCursor == nil || *np.NextCursor != "node-1" {
		t.Fatalf("ListNodes(limit 1) = %+v, %v", np, err)
	}
	if n, err := c.Node(ctx, "node-1"); err != nil || n.AllocationCount != int64(len(hb.Allocations)) || n.ResourceLimits.CPU != 32 {
		t.Fatalf("Node(node-1) = %+v, %v", n, err)
	}
	no, err := c.NodeOrchid(ctx, "node-1")
	if err != nil || no.ID != "node-1" || len(no.Allocations) != len(hb.Allocations) || !slices.Equal(no.Tags, []string{"rack-1"}) {
		t.Fatalf("NodeOrchid(node-1) = %+v, %v", no, err)
	}

	// Explanations and what-if.
	ex, err := c.Explain(ctx, "etl-2")
	if err != nil || ex.Operation != "etl-2" || ex.State != "pending" || len(ex.Findings) == 0 {
		t.Fatalf("Explain(etl-2) = %+v, %v", ex, err)
	}
	if f := ex.Findings[0]; f.Code != "running_operation_limit" || f.Pool != "etl" || f.Limit == nil || *f.Limit != 1 || f.Position == nil || *f.Position != 1 {
		t.Fatalf("Explain(etl-2)'s binding finding = %+v", f)
	}
	if ex, err = c.ExplainPool(ctx, "prod"); err != nil || ex.Pool != "prod" || len(ex.Findings) == 0 || ex.Findings[0].Message == "" {
		t.Fatalf("ExplainPool(prod) = %+v, %v", ex, err)
	}
	if _, err := c.Explain(ctx, "nope"); !IsNotFound(err) || ErrorCode(err) != "unknown_operation" {
		t.Fatalf("Explain(nope): %v", err)
	}
	wi, err := c.WhatIf(ctx, []WhatIfChange{
		{Method: http.MethodPatch, Path: PoolPath("fifo"), Body: PoolPatch{Weight: Set(4.0)}},
		{Method: http.MethodPut, Path: PoolPath("new"), Body: Pool{Parent: "prod"}},
		{Method: http.MethodPatch, Path: ConfigPath, Body: Config{"preemptive_scheduling_backoff_s": 3}},
	})
	if err != nil || len(wi.Pools) != 6 || wi.Pools[0].Name != RootPool || wi.Pools[5].Name != "new" || wi.Pools[5].Before != nil {
		t.Fatalf("WhatIf = %+v, %v", wi, err)
	}
	for _, p := range wi.Pools {
		if p.Name == "fifo" && (p.Before.Weight != 1 || p.After.Weight != 4) {
			t.Fatalf("WhatIf: fifo's weight %v → %v, want 1 → 4", p.Before.Weight, p.After.Weight)
		}
	}
	if _, err := c.Pool(ctx, "new"); !IsNotFound(err) {
		t.Fatalf("the what-if made pool new: %v", err)
	}
	_, err = c.WhatIf(ctx, []WhatIfChange{{Method: http.MethodDelete, Path: PoolPath("etl")}})
	if e := (*Error)(nil); !errors.As(err, &e) || e.StatusCode != 409 || e.Code != "pool_not_empty" || e.Path != "$.changes[0].path" {
		t.Fatalf("WhatIf(delete etl): %v", err)
	}

	// Finishing.
	if op, err = c.CompleteOperation(ctx, "etl-1"); err != nil || op.State != "completed" {
		t.Fatalf("CompleteOperation = %+v, %v", op, err)
	}
	// A retry of a finish answers the final state.
	if op, err = c.AbortOperation(ctx, "etl-1"); err != nil || op.State != "completed" {
		t.Fatalf("AbortOperation(completed) = %+v, %v", op, err)
	}
	if op, err = c.AbortOperation(ctx, "etl-2"); err != nil || op.State != "aborted" {
		t.Fatalf("AbortOperation(etl-2) = %+v, %v", op, err)
	}

	// Solve.
	snap := json.RawMessage(`{"total_resources": {"cpu": 10}, "tree": {"children": [
		{"pool": "a", "children": [{"operation": "x", "demand": {"cpu": 8}}]},
		{"pool": "b", "weight": 3, "children": [{"operation": "y", "demand": {"cpu": 8}}]}]}}`)
	sr, err := c.Solve(ctx, snap)
	if err != nil || len(sr.Updates) != 1 {
		t.Fatalf("Solve = %+v, %v", sr, err)
	}
	u := sr.Updates[0]
	if !slices.Equal(u.Order, []string{RootPool, "a", "x", "b", "y"}) || u.Elements["b"].FairShare.CPU != 0.75 {
		t.Fatalf("Solve order %v, b's cpu %v", u.Order, u.Elements["b"].FairShare.CPU)
	}

	metrics, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(string(metrics), "fairsched_") {
		t.Fatalf("Metrics: %v", err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestErrorsAreTyped checks that error answers become *Error with the code,
// status and path, and that a refused request changed nothing.
func TestErrorsAreTyped(t *testing.T) {
	ts := facadetest.Start(t, testConfig)
	c := newClient(t, ts.URL)
	ctx := context.Background()
	tests := []struct {
		name       string
		call       func() error
		status     int
		code, path string
	}{
		{"unknown pool", func() error { _, err := c.Pool(ctx, "nope"); return err }, 404, "unknown_pool", ""},
		{"bad weight", func() error { _, _, err := c.PutPool(ctx, "x", Pool{Weight: -1}); return err }, 400, "invalid_value", "$.weight"},
		{"bad name", func() error { _, _, err := c.PutPool(ctx, "bad name", Pool{}); return err }, 400, "invalid_name", ""},
		{"no job count", func() error {
			_, err := c.StartOperation(ctx, OperationSpec{Tasks: []Task{{Resources: Resources{CPU: 1}}}})
			return err
		}, 400, "invalid_value", "$.tasks[0].job_count"},
		{"pool not empty", func() error { return c.DeletePool(ctx, "prod") }, 409, "pool_not_empty", ""},
		{"unknown config key", func() error { _, err := c.PatchConfig(ctx, Config{"max_operation_cuont": 1}); return err }, 400, "unknown_attribute", "$.max_operation_cuont"},
		{"unknown node", func() error { _, err := c.NodeOrchid(ctx, "n-9"); return err }, 404, "unknown_node", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if e.StatusCode != tt.status || e.Code != tt.code || (tt.path != "" && e.Path != tt.path) || e.Message == "" {
				t.Fatalf("got %d %s at %q (%s), want %d %s at %q", e.StatusCode, e.Code, e.Path, e.Message, tt.status, tt.code, tt.path)
			}
			if !strings.Contains(e.Error(), tt.code) {
				t.Fatalf("Error() = %q does not name the code", e.Error())
			}
		})
	}
	if pools, err := c.Pools(ctx); err != nil || len(pools) != 5 {
		t.Fatalf("after refused requests: %d pools, %v", len(pools), err)
	}
}

// flaky answers with status (and body) for the first fails requests, then
// with 200 and {"status": "ok"}; it counts the requests.
func flaky(t *testing.T, fails int, status int, body string, header http.Header) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(n.Add(1)) <= fails {
			for k, v := range header {
				w.Header()[k] = v
			}
			if status == 0 { // a transport failure: drop the connection
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
			return
		}
		w.Write([]byte(`{"status": "ok", "id": "x", "state": "running"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	overloaded := `{"error": {"code": "overloaded", "message": "too many requests"}}`
	tests := []struct {
		name      string
		status    int
		fails     int
		call      func(c *Client) error
		wantCalls int64
		wantCode  string
	}{
		{"GET after 429", 429, 2, func(c *Client) error { _, err := c.Health(ctx); return err }, 3, ""},
		{"POST after 429 (nothing applied)", 429, 2, func(c *Client) error { _, err := c.CompleteOperation(ctx, "x"); return err }, 3, ""},
		{"GET after 503", 503, 1, func(c *Client) error { _, err := c.Health(ctx); return err }, 2, ""},
		{"429 beyond the retries", 429, 9, func(c *Client) error { _, err := c.Health(ctx); return err }, 4, "overloaded"},
		{"GET after a dropped connection", 0, 2, func(c *Client) error { _, err := c.Health(ctx); return err }, 3, ""},
		{"start with an id after a dropped connection", 0, 1, func(c *Client) error {
			_, err := c.StartOperation(ctx, OperationSpec{ID: "x", Tasks: []Task{{JobCount: 1}}})
			return err
		}, 2, ""},
		{"start without an id is not retried", 0, 1, func(c *Client) error {
			_, err := c.StartOperation(ctx, OperationSpec{Tasks: []Task{{JobCount: 1}}})
			return err
		}, 1, "transport"},
		{"complete is not retried after a dropped connection", 0, 1, func(c *Client) error { _, err := c.CompleteOperation(ctx, "x"); return err }, 1, "transport"},
		{"400 is not retried", 400, 1, func(c *Client) error { _, err := c.Health(ctx); return err }, 1, "http_400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := flaky(t, tt.fails, tt.status, overloaded, nil)
			if tt.status == 400 {
				srv, n = flaky(t, tt.fails, tt.status, "not json", nil)
			}
			c := newClient(t, srv.URL)
			c.strict = false
			err := tt.call(c)
			switch tt.wantCode {
			case "":
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			case "transport":
				var e *Error
				if err == nil || errors.As(err, &e) {
					t.Fatalf("err = %v, want a transport error", err)
				}
			default:
				if ErrorCode(err) != tt.wantCode {
					t.Fatalf("err = %v, want code %s", err, tt.wantCode)
				}
			}
			if got := n.Load(); got != tt.wantCalls {
				t.Fatalf("%d requests, want %d", got, tt.wantCalls)
			}
		})
	}
}

// TestRetryAfterIsHonoured: the server's Retry-After is the delay, and a
// context that ends first ends the wait.
func TestRetryAfterIsHonoured(t *testing.T) {
	srv, n := flaky(t, 2, 503, `{"error": {"code": "recovering", "message": "recovering"}}`,
		http.Header{"Retry-After": {"3600"}})
	c := newClient(t, srv.URL)
	c.strict = false
	c.maxDelay = 2 * time.Hour
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 || !slices.Equal(waits, []time.Duration{time.Hour, time.Hour}) {
		t.Fatalf("%d requests after waits %v, want 3 after two of an hour", n.Load(), waits)
	}

	// The context ends the wait: the call returns the server's answer.
	srv, n = flaky(t, 1, 503, `{"error": {"code": "recovering", "message": "recovering"}}`,
		http.Header{"Retry-After": {"3600"}})
	c = newClient(t, srv.URL)
	c.maxDelay = 2 * time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	c.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleep(ctx, d)
	}
	_, err := c.Health(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Code != "recovering" || e.RetryAfter != time.Hour || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests, want the 503 with a Retry-After of an hour after 1", err, n.Load())
	}
}

// TestBackoffDoubles: without Retry-After the delays double from the first,
// with jitter, up to the most.
func TestBackoffDoubles(t *testing.T) {
	srv, _ := flaky(t, 5, 429, `{"error": {"code": "overloaded", "message": "busy"}}`, nil)
	c := newClient(t, srv.URL, WithRetries(5), WithBackoff(100*time.Millisecond, 500*time.Millisecond))
	c.strict = false
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	ceilings := []time.Duration{100, 200, 400, 500, 500}
	if len(waits) != len(ceilings) {
		t.Fatalf("waits %v", waits)
	}
	for i, w := range waits {
		hi := ceilings[i] * time.Millisecond
		lo := min(hi, 100*time.Millisecond<<i/2)
		if w < lo || w > hi {
			t.Fatalf("wait %d = %v, want within [%v, %v] (all: %v)", i, w, lo, hi, waits)
		}
	}
}

// TestLeaderIsFollowed: a not_leader answer that names the leader sends the
// request, and every later one, there.
func TestLeaderIsFollowed(t *testing.T) {
	ts := facadetest.Start(t, testConfig)
	var followerHits atomic.Int64
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followerHits.Add(1)
		w.WriteHeader(503)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"code": "not_leader", "message": "this replica is a follower", "leader": ts.URL}})
	}))
	t.Cleanup(follower.Close)
	c := newClient(t, follower.URL)
	ctx := context.Background()
	if _, _, err := c.PutPool(ctx, "new", Pool{}); err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != ts.URL {
		t.Fatalf("BaseURL = %s, want the leader %s", c.BaseURL(), ts.URL)
	}
	if _, err := c.Pool(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if followerHits.Load() != 1 {
		t.Fatalf("the follower saw %d requests, want 1", followerHits.Load())
	}

	// A follower that knows no leader: the 503 is retried, then returned.
	var hits atomic.Int64
	lost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(503)
		w.Write([]byte(`{"error": {"code": "not_leader", "message": "no leader", "leader": null}}`))
	}))
	t.Cleanup(lost.Close)
	c = newClient(t, lost.URL, WithRetries(2))
	if _, err := c.Health(ctx); ErrorCode(err) != "not_leader" || hits.Load() != 3 {
		t.Fatalf("err = %v after %d requests, want not_leader after 3", err, hits.Load())
	}
}

func TestTokenAndUserAgentAreSent(t *testing.T) {
	var auth, ua string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, ua = r.Header.Get("Authorization"), r.Header.Get("User-Agent")
		w.Write([]byte(`{"status": "ok"}`))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, WithToken("s3cret"), WithUserAgent("fairsched-cli/1"))
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer s3cret" || ua != "fairsched-cli/1" {
		t.Fatalf("Authorization %q, User-Agent %q", auth, ua)
	}
}

func TestNewRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://", "http://h/?q=1", "http://h/#f", "http://h:bad"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	c, err := New("http://127.0.0.1:1/prefix/")
	if err != nil || c.BaseURL() != "http://127.0.0.1:1/prefix" {
		t.Fatalf("New with a path prefix: %v, %v", c, err)
	}
}

// TestPathsAreEscaped: names that a URL must escape reach the server whole.
func TestPathsAreEscaped(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.EscapedPath())
		w.Write([]byte(`{"name": "x", "mode": "fair_share"}`))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL+"/base")
	if _, err := c.Pool(context.Background(), RootPool); err != nil {
		t.Fatal(err)
	}
	if want := "/base/api/v1/pools/%3CRoot%3E"; len(got) != 1 || got[0] != want {
		t.Fatalf("paths %v, want [%s]", got, want)
	}
}

// A server that is not there is a transport error, retried for GET, and the
// context's deadline bounds the whole call.
func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, "http://"+addr, WithRetries(1))
	_, err = c.Health(context.Background())
	var e *Error
	if err == nil || errors.As(err, &e) || !strings.Contains(err.Error(), "GET /healthz") {
		t.Fatalf("err = %v", err)
	}
}
