package facade

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// explainRig is a server with simulated nodes that heartbeat after every
// fair-share update.
type explainRig struct {
	*testServer
	nodes []*simNode
}

func newExplainRig(t *testing.T, config string, nodes int) *explainRig {
	r := &explainRig{testServer: startServer(t, config, nil)}
	for i := range nodes {
		r.nodes = append(r.nodes, newNode(fmt.Sprintf("n%d", i+1), 8, 32))
	}
	r.rounds(1)
	return r
}

// rounds runs n rounds of a second each: the clock moves on, a fair-share
// update runs, every node heartbeats.
func (r *explainRig) rounds(n int) {
	r.t.Helper()
	for range n {
		r.clock.AdvanceSeconds(1)
		r.srv.UpdateFairShare()
		for _, n := range r.nodes {
			r.heartbeat(n)
		}
	}
}

// start starts an operation of jobs one-core jobs (1 GiB each) in pool,
// with more members of the body (`"is_gang": true`), and returns its id.
func (r *explainRig) start(id, pool string, jobs int, more string) {
	r.t.Helper()
	if more != "" {
		more = ", " + more
	}
	r.must(201, "POST", "/api/v1/operations", fmt.Sprintf(`{"id": %q, "pool": %q, "tasks": [{"job_count": %d, "resources": {"cpu": 1, "memory": 1073741824}}]%s}`,
		id, pool, jobs, more))
}

// explained is an explanation as a client reads it.
type explained struct {
	Operation string           `json:"operation"`
	Pool      string           `json:"pool"`
	State     string           `json:"state"`
	Findings  []map[string]any `json:"findings"`
}

func (r *explainRig) explain(path string) explained {
	r.t.Helper()
	status, body := r.do("GET", path, "")
	if status != 200 {
		r.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	var e explained
	if err := json.Unmarshal(body, &e); err != nil {
		r.t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	return e
}

// TestExplainOverHTTP builds each situation of docs/why-waiting.md#the-codes
// on a server over HTTP, with nodes that heartbeat, and checks that the
// explanation puts the binding finding first, and that the finding of the
// situation names its setting, pool and numbers.
func TestExplainOverHTTP(t *testing.T) {
	// Nodes of 8 cores, 32 GiB and 100 user slots; jobs of 1 core and 1 GiB.
	const preempting = `"fair_share_starvation_timeout_s": 1, "fair_share_aggressive_starvation_timeout_s": 2, "preemptive_scheduling_backoff_s": 0`
	// protectedProd and prodThenBatch: batch starves beside a prod pool that
	// fills both nodes and may not be preempted normally (four situations).
	const protectedProd = `{"config": {` + preempting + `}, "pools": [{"name": "prod", "allow_normal_preemption": false}, {"name": "batch"}]}`
	prodThenBatch := func(r *explainRig) {
		r.start("p", "prod", 100, "")
		r.rounds(2)
		r.start("b", "batch", 100, "")
		r.rounds(4)
	}
	for _, tc := range []struct {
		name   string
		config string
		nodes  int
		setup  func(r *explainRig)
		path   string
		state  string
		first  string // the binding finding's code
		// The situation's finding (the first with this code) and what
		// it must hold: strings, numbers, and protected[0] as "rule@pool".
		code string
		want map[string]any
	}{
		{name: "running operation limit at an ancestor, with the queue position",
			config: `{"pools": [{"name": "research", "max_running_operation_count": 2},
				{"name": "vision", "parent": "research", "max_running_operation_count": 1}, {"name": "nlp", "parent": "research"}]}`,
			nodes: 1,
			setup: func(r *explainRig) {
				r.start("v1", "vision", 3, "")
				r.start("n1", "nlp", 3, "")
				r.start("n2", "nlp", 3, "")
				r.start("n3", "nlp", 3, "")
				r.rounds(1)
			},
			path: "/api/v1/operations/n3/explain", state: "pending", first: "running_operation_limit",
			code: "running_operation_limit", want: map[string]any{"pool": "research", "setting": "max_running_operation_count",
				"running": 2.0, "limit": 2.0, "position": 2.0, "queue_length": 2.0, "must_finish": 2.0}},
		{name: "no node passes the tag filter",
			nodes: 2,
			setup: func(r *explainRig) {
				r.start("big", "<Root>", 100, "")
				r.start("g", "<Root>", 10, `"scheduling_tag_filter": "gpu"`)
				r.rounds(2)
			},
			path: "/api/v1/operations/g/explain", state: "running", first: "no_node_fits",
			code: "no_node_fits", want: map[string]any{"setting": "scheduling_tag_filter", "nodes": 2.0, "matching_nodes": 0.0}},
		{name: "below its fair share, every victim protected by allow_normal_preemption",
			config: protectedProd,
			nodes:  2,
			setup:  prodThenBatch,
			path:   "/api/v1/operations/b/explain", state: "running", first: "no_node_fits",
			code: "no_preemptible_victims", want: map[string]any{"candidates": 16.0, "protected": "normal_preemption_blocked@prod"}},
		{name: "starving, aggressive starvation off",
			config: protectedProd,
			nodes:  2,
			setup:  prodThenBatch,
			path:   "/api/v1/operations/b/explain", state: "running", first: "no_node_fits",
			code: "aggressive_starvation_disabled", want: map[string]any{"setting": "enable_aggressive_starvation"}},
		{name: "below its fair share by its shares, starving since",
			config: protectedProd,
			nodes:  2,
			setup:  prodThenBatch,
			path:   "/api/v1/operations/b/explain", state: "running", first: "no_node_fits",
			code: "below_fair_share", want: map[string]any{"resource": "cpu", "usage": 0.0, "fair_share": 0.5, "tolerance": 0.8}},
		{name: "within the starvation tolerance once it preempted",
			config: `{"config": {` + preempting + `}, "pools": [{"name": "greedy"}, {"name": "starving"}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("x", "greedy", 100, "")
				r.rounds(2)
				r.start("y", "starving", 100, "")
				r.rounds(30)
			},
			path: "/api/v1/operations/y/explain", state: "running", first: "no_node_fits",
			code: "within_starvation_tolerance", want: map[string]any{"setting": "fair_share_starvation_tolerance", "fair_share": 0.5, "tolerance": 0.8}},
		{name: "an ancestor at its resource limit",
			config: `{"pools": [{"name": "capped", "resource_limits": {"cpu": 4}}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("c", "capped", 100, "")
				r.rounds(3)
			},
			path: "/api/v1/operations/c/explain", state: "running", first: "resource_limit",
			code: "resource_limit", want: map[string]any{"pool": "capped", "setting": "resource_limits", "resource": "cpu",
				"amount": 4.0, "limit_amount": 4.0, "job_amount": 1.0}},
		{name: "fair share bounded by the limit of an ancestor",
			config: `{"pools": [{"name": "capped", "resource_limits": {"cpu": 4}}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("c", "capped", 100, "")
				r.rounds(3)
			},
			path: "/api/v1/operations/c/explain", state: "running", first: "resource_limit",
			code: "fair_share_bound_by_ancestor", want: map[string]any{"pool": "capped", "setting": "resource_limits", "resource": "cpu",
				"bound": 0.25, "fair_share": 0.25}},
		{name: "a gang waiting for room for all its jobs",
			config: `{"config": {"enable_step_function_for_gang_operations": true}}`,
			nodes:  1,
			setup: func(r *explainRig) {
				r.start("big", "<Root>", 8, "")
				r.start("gang", "<Root>", 8, `"is_gang": true`)
				r.rounds(1)
			},
			path: "/api/v1/operations/gang/explain", state: "running", first: "gang_waiting",
			code: "gang_waiting", want: map[string]any{"setting": "enable_step_function_for_gang_operations", "demand": 1.0}},
		{name: "fair share bounded by its demand",
			config: `{"pools": [{"name": "a"}, {"name": "b"}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("small", "a", 2, "")
				r.start("large", "b", 100, "")
				r.rounds(2)
			},
			path: "/api/v1/operations/small/explain", state: "running", first: "no_pending_jobs",
			code: "fair_share_bound_by_demand", want: map[string]any{"resource": "cpu", "fair_share": 0.125, "demand": 0.125, "bound": 0.125}},
		{name: "fair share bounded by its own resource limit",
			nodes: 2,
			setup: func(r *explainRig) {
				r.start("own", "<Root>", 100, `"resource_limits": {"cpu": 2}`)
				r.rounds(2)
			},
			path: "/api/v1/operations/own/explain", state: "running", first: "resource_limit",
			code: "fair_share_bound_by_resource_limit", want: map[string]any{"pool": "own", "setting": "resource_limits", "resource": "cpu",
				"bound": 0.125, "fair_share": 0.125}},
		{name: "a pool's fair share is its strong guarantee",
			config: `{"pools": [{"name": "g1", "strong_guarantee_resources": {"cpu": 8}}, {"name": "g2", "strong_guarantee_resources": {"cpu": 8}}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("o1", "g1", 100, "")
				r.start("o2", "g2", 100, "")
				r.rounds(2)
			},
			path: "/api/v1/pools/g1/explain", state: "normal", first: "at_fair_share",
			code: "fair_share_strong_guarantee", want: map[string]any{"pool": "g1", "setting": "strong_guarantee_resources", "resource": "cpu",
				"guarantee": 0.5, "fair_share": 0.5}},
		{name: "a pool's fair share is its weight share",
			config: `{"pools": [{"name": "a", "weight": 1}, {"name": "b", "weight": 3}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("oa", "a", 100, "")
				r.start("ob", "b", 100, "")
				r.rounds(1)
			},
			path: "/api/v1/pools/b/explain", state: "below_fair_share", first: "below_fair_share",
			code: "fair_share_weight_share", want: map[string]any{"pool": "<Root>", "setting": "weight", "resource": "cpu",
				"weight": 3.0, "weight_sum": 4.0, "fair_share": 0.75, "parent_fair_share": 1.0}},
		{name: "a pool starving",
			config: protectedProd,
			nodes:  2,
			setup:  prodThenBatch,
			path:   "/api/v1/pools/batch/explain", state: "starving", first: "below_fair_share",
			code: "starving", want: map[string]any{"setting": "fair_share_starvation_timeout", "timeout": 1.0}},
		{name: "preempted allocations: who and why",
			config: `{"config": {` + preempting + `}, "pools": [{"name": "greedy"}, {"name": "starving"}]}`,
			nodes:  2,
			setup: func(r *explainRig) {
				r.start("x", "greedy", 100, "")
				r.rounds(2)
				r.start("y", "starving", 100, "")
				r.rounds(6)
			},
			path: "/api/v1/operations/x/explain", state: "running", first: "no_node_fits",
			code: "preempted_allocation", want: map[string]any{"for_operation": "y", "reason": "starving"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExplainRig(t, tc.config, tc.nodes)
			tc.setup(r)
			e := r.explain(tc.path)
			dump, _ := json.MarshalIndent(e, "", "  ")
			if e.State != tc.state || len(e.Findings) == 0 || e.Findings[0]["code"] != tc.first {
				t.Fatalf("GET %s: state %q, want %q, first finding %q: %s", tc.path, e.State, tc.state, tc.first, dump)
			}
			var f map[string]any
			for _, x := range e.Findings {
				if x["code"] == tc.code {
					f = x
					break
				}
			}
			if f == nil {
				t.Fatalf("GET %s: no %s finding: %s", tc.path, tc.code, dump)
			}
			if msg, _ := f["message"].(string); msg == "" {
				t.Errorf("finding %s has no message", tc.code)
			}
			for k, want := range tc.want {
				got := f[k]
				if k == "protected" {
					ps, _ := got.([]any)
					if len(ps) == 0 {
						t.Errorf("%s: no protected rules", tc.code)
						continue
					}
					p := ps[0].(map[string]any)
					got = fmt.Sprint(p["rule"]) + "@" + fmt.Sprint(p["pool"])
				}
				switch w := want.(type) {
				case float64:
					if g, ok := got.(float64); !ok || math.Abs(g-w) > 1e-6 {
						t.Errorf("%s.%s = %v, want %v", tc.code, k, got, w)
					}
				case string:
					if g, _ := got.(string); g != w && !(k == "reason" && strings.Contains(g, w)) {
						t.Errorf("%s.%s = %v, want %v", tc.code, k, got, w)
					}
				}
			}
			if t.Failed() {
				t.Logf("%s", dump)
			}
		})
	}
}
