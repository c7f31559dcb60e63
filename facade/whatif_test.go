package facade

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
)

// orchidPools reads GET /api/v1/orchid/pools as pools by name.
func (ts *testServer) orchidPools() map[string]map[string]any {
	ts.t.Helper()
	out := map[string]map[string]any{}
	for _, p := range ts.must(200, "GET", "/api/v1/orchid/pools", "")["pools"].([]any) {
		out[p.(map[string]any)["name"].(string)] = p.(map[string]any)
	}
	return out
}

// liveBytes is what a client can read of the live state: the orchid of
// the pools and operations, the pools, the operations and the config, and
// the durable store (the backup's bytes).
func (ts *testServer) liveBytes(auth []string, ops ...string) []byte {
	ts.t.Helper()
	var b bytes.Buffer
	for _, p := range append([]string{"/api/v1/orchid/pools", "/api/v1/pools", "/api/v1/operations", "/api/v1/config", "/api/v1/backup"},
		func() (ps []string) {
			for _, id := range ops {
				ps = append(ps, "/api/v1/orchid/operations/"+id, "/api/v1/operations/"+id+"/explain")
			}
			return ps
		}()...) {
		status, body, _ := ts.req("GET", p, "", auth...)
		if p == "/api/v1/backup" && status == 409 {
			continue // a server without a store
		}
		if status != 200 {
			ts.t.Fatalf("GET %s: %d %s", p, status, body)
		}
		b.WriteString(p + "\n")
		b.Write(body)
	}
	return b.Bytes()
}

// The fields of a pool's orchid view a fair-share update computes from the
// tree and the demand (not the time).
var whatIfFields = []string{"fair_share", "detailed", "usage_share", "demand_share", "limits_share", "strong_guarantee_share",
	"weight", "satisfaction_ratio", "local_satisfaction_ratio", "operation_count", "running_operation_count"}

// TestWhatIfWeightMatchesRealPatch: a what-if of a weight change from 1 to
// 3 on one of two sibling pools with demand answers, before, the live
// orchid and, after, what the real PATCH then produces; and the what-if
// leaves the live state byte for byte as it was (the orchid, the
// operations, the config, the store, the scheduler's snapshot).
func TestWhatIfWeightMatchesRealPatch(t *testing.T) {
	ts := startDurable(t, t.TempDir(), &manualClock{}, `{"pools": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}]}`, nil).testServer
	r := &explainRig{testServer: ts, nodes: []*simNode{newNode("n1", 8, 32), newNode("n2", 8, 32)}}
	r.rounds(1)
	r.start("oa", "a", 100, "")
	r.start("ob", "b", 100, "")
	r.rounds(3)
	before := ts.orchidPools()
	if fa, fb := before["a"]["fair_share"].(map[string]any)["cpu"], before["b"]["fair_share"].(map[string]any)["cpu"]; fa != 0.5 || fb != 0.5 {
		t.Fatalf("fair shares before: a %v, b %v, want 0.5 each", fa, fb)
	}
	live := ts.liveBytes(nil, "oa", "ob")
	snap := ts.srv.sched.Snapshot()

	got := ts.must(200, "POST", "/api/v1/whatif", `{"changes": [{"method": "PATCH", "path": "/api/v1/pools/b", "body": {"weight": 3}}]}`)
	if again := ts.liveBytes(nil, "oa", "ob"); !bytes.Equal(live, again) {
		t.Errorf("the what-if changed the live state:\nbefore %s\nafter %s", live, again)
	}
	if ts.srv.sched.Snapshot() != snap {
		t.Errorf("the what-if published a scheduler snapshot")
	}
	pools := got["pools"].(map[string]any)
	if len(pools) != len(before) {
		t.Errorf("the what-if answers %d pools, the tree has %d", len(pools), len(before))
	}
	ts.must(200, "PATCH", "/api/v1/pools/b", `{"weight": 3}`)
	ts.clock.AdvanceSeconds(1)
	ts.srv.UpdateFairShare()
	real := ts.orchidPools()
	for name, pc := range pools {
		pc := pc.(map[string]any)
		for _, side := range []struct {
			what string
			want map[string]any
		}{{"before", before[name]}, {"after", real[name]}} {
			view := pc[side.what].(map[string]any)
			for _, k := range whatIfFields {
				if !sameJSON(view[k], side.want[k]) {
					t.Errorf("%s %s.%s: what-if %v, real %v", name, side.what, k, view[k], side.want[k])
				}
			}
		}
	}
	if a, b := real["a"]["fair_share"].(map[string]any)["cpu"], real["b"]["fair_share"].(map[string]any)["cpu"]; a != 0.25 || b != 0.75 {
		t.Errorf("fair shares after the PATCH: a %v, b %v, want 0.25 and 0.75", a, b)
	}
}

// sameJSON compares decoded JSON values, numbers to 1e-9.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !sameJSON(x[k], y[k]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(x))
	}
	return a == b
}

// TestWhatIfCreatesAndRemoves: pools a what-if creates have only after,
// pools it removes only before; later changes see the earlier ones.
func TestWhatIfCreatesAndRemoves(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "a"}, {"name": "gone"}]}`, nil)
	got := ts.must(200, "POST", "/api/v1/whatif", `{"changes": [
		{"method": "PUT", "path": "/api/v1/pools/new", "body": {"parent": "a", "weight": 2}},
		{"method": "PATCH", "path": "/api/v1/pools/new", "body": {"max_operation_count": 7}},
		{"method": "DELETE", "path": "/api/v1/pools/gone"},
		{"method": "PATCH", "path": "/api/v1/config", "body": {"max_operation_count": 9000}}]}`)
	pools := got["pools"].(map[string]any)
	n := pools["new"].(map[string]any)
	if n["before"] != nil || n["after"].(map[string]any)["parent"] != "a" || n["after"].(map[string]any)["max_operation_count"] != 7.0 {
		t.Errorf("new: %v", n)
	}
	g := pools["gone"].(map[string]any)
	if g["after"] != nil || g["before"].(map[string]any)["name"] != "gone" {
		t.Errorf("gone: %v", g)
	}
	if root := pools["<Root>"].(map[string]any); root["after"].(map[string]any)["max_operation_count"] != 9000.0 {
		t.Errorf("the root after the config change: %v", root["after"])
	}
	// Nothing was made.
	if status, _ := ts.do("GET", "/api/v1/pools/new", ""); status != 404 {
		t.Errorf("GET the previewed pool: %d, want 404", status)
	}
	ts.must(200, "GET", "/api/v1/pools/gone", "")
}

// TestWhatIfRefusals: a change the real request would refuse answers that
// request's status, code and message, its path under $.changes[i] (the
// URL's name at .path, the body's fields under .body); the caller's
// permissions are checked as the real request's are, against the pools as
// the earlier changes left them; and the real request is refused too
// (nothing of it happened).
func TestWhatIfRefusals(t *testing.T) {
	ts := startServer(t, aclConfig, func(o *Options) { o.Tokens = mustTokens(t, testTokens) })
	admin := bearerOf(adminToken)
	if status, body, _ := ts.req("POST", "/api/v1/operations", `{"id": "op", "pool": "research-ml", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, admin...); status != 201 {
		t.Fatalf("start: %d %s", status, body)
	}
	for _, tc := range []struct {
		token        string
		method, path string
		body         string // "" for none
		prior        string // changes before it, which do not change its answer
		status       int
	}{
		{adminToken, "PATCH", "/api/v1/pools/research", `{"weight": -1}`, "", 400},
		{adminToken, "PATCH", "/api/v1/pools/research", `{"wieght": 1}`, "", 400},
		{adminToken, "PATCH", "/api/v1/pools/research", `"x"`, "", 400},
		{adminToken, "PATCH", "/api/v1/pools/research", ``, "", 400},
		{adminToken, "PATCH", "/api/v1/pools/nope", `{"weight": 2}`, "", 404},
		{adminToken, "PATCH", "/api/v1/pools/bad%20name", `{}`, "", 400},
		{adminToken, "PATCH", "/api/v1/pools/research", `{"parent": "research-ml"}`, "", 400},
		{adminToken, "PUT", "/api/v1/pools/x", `{"parent": "missing"}`, "", 400},
		{adminToken, "PUT", "/api/v1/pools/x", `{"name": "y"}`, "", 400},
		{adminToken, "PUT", "/api/v1/pools/%3CRoot%3E", `{"weight": 2}`, "", 400},
		{adminToken, "DELETE", "/api/v1/pools/research-ml", "", "", 409},
		{adminToken, "DELETE", "/api/v1/pools/research-ml", "", `{"method": "PATCH", "path": "/api/v1/pools/research", "body": {"weight": 2}},`, 409},
		{adminToken, "DELETE", "/api/v1/pools/%3CRoot%3E", "", "", 400},
		{adminToken, "PATCH", "/api/v1/config", `{"fair_share_starvation_tolerance": 2}`, "", 400},
		{adminToken, "PATCH", "/api/v1/config", `{"shards": 3}`, "", 400},
		{aliceToken, "PATCH", "/api/v1/pools/research", `{"weight": 2}`, "", 403},
		{aliceToken, "PATCH", "/api/v1/pools/research-ml", `{"parent": "team"}`, "", 403},
		{aliceToken, "PUT", "/api/v1/pools/mine", `{"parent": "research"}`, "", 403},
		{aliceToken, "PATCH", "/api/v1/config", `{"max_operation_count": 9}`, "", 403},
		{bobToken, "PATCH", "/api/v1/pools/private", `{"weight": 2}`, "", 403},
		{bobToken, "DELETE", "/api/v1/pools/prod", "", "", 403},
	} {
		name := tc.method + " " + tc.path + " " + tc.body
		body := ""
		if tc.body != "" {
			body = `, "body": ` + tc.body
		}
		whatif := `{"changes": [` + tc.prior + `{"method": "` + tc.method + `", "path": "` + tc.path + `"` + body + `}]}`
		i := strings.Count(tc.prior, `"method"`)
		live := ts.liveBytes(admin)
		ws, wb, _ := ts.req("POST", "/api/v1/whatif", whatif, bearerOf(tc.token)...)
		if again := ts.liveBytes(admin); !bytes.Equal(live, again) {
			t.Errorf("%s: the what-if changed the live state", name)
		}
		rs, rb, _ := ts.req(tc.method, tc.path, tc.body, bearerOf(tc.token)...)
		if rs != tc.status || ws != rs {
			t.Errorf("%s: the what-if answers %d %s, the request %d %s; want %d", name, ws, wb, rs, rb, tc.status)
			continue
		}
		wc, wp, wm := errOf(t, wb)
		rc, rp, rm := errOf(t, rb)
		c := "$.changes[" + strconv.Itoa(i) + "]"
		want := c + ".body" + strings.TrimPrefix(rp, "$")
		if strings.HasPrefix(rp, "$.url.") {
			want = c + ".path"
		} else if rc == CodeForbidden && rp == "$" && tc.method == "PATCH" && strings.HasSuffix(tc.path, "/config") {
			want = c // the caller's role: the whole change
		}
		if wc != rc || wm != rm || wp != want {
			t.Errorf("%s: the what-if answers %s at %s: %s\nthe request %s at %s: %s (want the path %s)", name, wc, wp, wm, rc, rp, rm, want)
		}
	}
}

// TestWhatIfOwnRefusals: what a what-if cannot preview, and its body.
func TestWhatIfOwnRefusals(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "a"}]}`, nil)
	for _, tc := range []struct{ body, code, path string }{
		{`{"changes": [{"method": "GET", "path": "/api/v1/pools/a"}]}`, "invalid_value", "$.changes[0].method"},
		{`{"changes": [{"method": "POST", "path": "/api/v1/config", "body": {}}]}`, "invalid_value", "$.changes[0].method"},
		{`{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a", "body": {}}, {"method": "POST", "path": "/api/v1/operations", "body": {}}]}`, "invalid_value", "$.changes[1].path"},
		{`{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a/explain", "body": {}}]}`, "invalid_value", "$.changes[0].path"},
		{`{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a?x=1", "body": {}}]}`, "invalid_value", "$.changes[0].path"},
		{`{"changes": [{"method": "PATCH", "path": "pools/a", "body": {}}]}`, "invalid_value", "$.changes[0].path"},
		{`{"changes": []}`, "invalid_value", "$.changes"},
		{`{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a", "body": {"w": 1, "w": 2}}]}`, "duplicate_key", "$.changes[0].body.w"},
		{`{}`, "missing_attribute", "$.changes"},
		// A later change is checked against the tree the earlier ones left.
		{`{"changes": [{"method": "PUT", "path": "/api/v1/pools/child", "body": {"parent": "a"}}, {"method": "PATCH", "path": "/api/v1/pools/a", "body": {"mode": "fifo"}}]}`,
			"fifo_pool_with_child_pools", "$.changes[1].body.mode"},
	} {
		status, body := ts.do("POST", "/api/v1/whatif", tc.body)
		if status != 400 {
			t.Errorf("%s: %d %s", tc.body, status, body)
			continue
		}
		if code, path, _ := errOf(t, body); code != tc.code || path != tc.path {
			t.Errorf("%s: %s at %s, want %s at %s", tc.body, code, path, tc.code, tc.path)
		}
	}
}

// TestExplainAndWhatIfWhileServing: explanations and what-ifs run while
// nodes heartbeat, updates run and pools change; under -race this checks
// that they read only what their locks guard, and every answer is whole.
func TestExplainAndWhatIfWhileServing(t *testing.T) {
	r := newExplainRig(t, `{"config": {"fair_share_starvation_timeout_s": 1, "preemptive_scheduling_backoff_s": 0},
		"pools": [{"name": "a"}, {"name": "b"}]}`, 2)
	r.start("oa", "a", 100, "")
	r.rounds(2)
	r.start("ob", "b", 100, "")
	done := make(chan struct{})
	errs := make(chan string, 3)
	for _, path := range []string{"/api/v1/operations/ob/explain", "/api/v1/pools/a/explain", "/api/v1/whatif"} {
		go func() {
			defer func() { errs <- "" }()
			for i := 0; i < 200; i++ {
				select {
				case <-done:
					return
				default:
				}
				method, body := "GET", ""
				if path == "/api/v1/whatif" {
					method, body = "POST", `{"changes": [{"method": "PATCH", "path": "/api/v1/pools/b", "body": {"weight": `+strconv.Itoa(i%5+1)+`}}]}`
				}
				if status, out := r.do(method, path, body); status != 200 || !json.Valid(out) {
					errs <- method + " " + path + ": " + strconv.Itoa(status) + " " + string(out)
					return
				}
			}
		}()
	}
	for i := range 20 {
		r.rounds(1)
		r.must(200, "PATCH", "/api/v1/pools/a", `{"weight": `+strconv.Itoa(i%3+1)+`}`)
	}
	close(done)
	for range 3 {
		if e := <-errs; e != "" {
			t.Error(e)
			<-errs // the "" of the same goroutine
		}
	}
}

// TestWhatIfIsNoAuditedChange: a what-if, taken or refused, writes no line
// of the audit log (the real change writes one) and needs no store.
func TestWhatIfIsNoAuditedChange(t *testing.T) {
	var logs lockedBuffer
	ts := startServer(t, `{"pools": [{"name": "a"}]}`, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	ts.must(200, "POST", "/api/v1/whatif", `{"changes": [{"method": "PATCH", "path": "/api/v1/pools/a", "body": {"weight": 2}}]}`)
	if status, _ := ts.do("POST", "/api/v1/whatif", `{"changes": [{"method": "DELETE", "path": "/api/v1/pools/nope"}]}`); status != 404 {
		t.Fatalf("a refused what-if answers %d", status)
	}
	audit := func() (n int) {
		for _, l := range logs.lines(t) {
			if l["result"] != nil {
				n++
			}
		}
		return n
	}
	if n := audit(); n != 0 {
		t.Errorf("what-ifs wrote %d audit lines: %v", n, logs.lines(t))
	}
	ts.must(200, "PATCH", "/api/v1/pools/a", `{"weight": 2}`)
	if n := audit(); n != 1 {
		t.Errorf("the real change wrote %d audit lines, want 1: %v", n, logs.lines(t))
	}
}
