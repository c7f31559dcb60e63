package facade

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
)

// TestPoolHistoryHTTP: GET /api/v1/pools/{name}/history answers the
// points the fair-share updates recorded — prod, alone with demand on a
// node of 8 cpu, runs 4 jobs of its 16 — at the resolution or a step
// rounded up to a multiple of it; bad parameters are 400 naming them; the
// fairness error is in the orchid and /metrics.
func TestPoolHistoryHTTP(t *testing.T) {
	ts := startServer(t, twoPools, func(o *Options) {
		o.HistoryTiers = []history.Config{{Step: clock.Second, Span: 10 * clock.Second}, {Step: 10 * clock.Second, Span: 600 * clock.Second}}
	})
	n := newNode("n1", 8, 32)
	ts.heartbeat(n)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 16, "resources": {"cpu": 1}}]}`)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "research", "tasks": [{"job_count": 16, "resources": {"cpu": 1}}]}`)
	for range 40 { // 20 s: an update every 0.5 s
		ts.clock.AdvanceSeconds(0.5)
		ts.srv.UpdateFairShare()
		ts.heartbeat(n)
	}
	h := ts.must(200, "GET", "/api/v1/pools/prod/history?since=-9", "")
	pts, _ := h["points"].([]any)
	if h["pool"] != "prod" || num(h["resolution_s"]) != 1 || num(h["step_s"]) != 1 || len(pts) != 10 {
		t.Fatalf("history: %v", h)
	}
	last := obj(pts[len(pts)-1])
	if math.Abs(num(last["fair_share"])-0.5) > 1e-3 || math.Abs(num(last["usage"])-0.5) > 1e-3 ||
		num(last["demand"]) < 1 || last["starvation"] != "non_starving" || num(last["samples"]) != 1 {
		t.Errorf("the newest point: %v", last)
	}
	if num(obj(pts[0])["time"]) != math.Floor(num(h["now"]))-9 {
		t.Errorf("the first point at %v, now %v", obj(pts[0])["time"], h["now"])
	}
	// A step of 2.5 s is rounded up to 3; from the start, the coarse tier.
	h = ts.must(200, "GET", "/api/v1/pools/prod/history?since=-9&step=2.5", "")
	if num(h["step_s"]) != 3 {
		t.Errorf("step 2.5: %v", h)
	}
	h = ts.must(200, "GET", "/api/v1/pools/research/history?since=0", "")
	if pts, _ := h["points"].([]any); num(h["resolution_s"]) != 10 || len(pts) != 3 || num(obj(pts[0])["time"]) != 0 {
		t.Errorf("from 0: %v", h)
	}
	// A pool created now has no points yet.
	ts.must(201, "PUT", "/api/v1/pools/new", `{}`)
	if h := ts.must(200, "GET", "/api/v1/pools/new/history", ""); len(h["points"].([]any)) != 0 {
		t.Errorf("a new pool: %v", h)
	}
	for _, c := range []struct {
		query, path string
		status      int
	}{
		{"since=abc", "since", 400},
		{"since=NaN", "since", 400},
		{"since=1e300", "since", 400},
		{"step=0", "step", 400},
		{"step=-5", "step", 400},
		{"step=x", "step", 400},
		{"step=Inf", "step", 400},
	} {
		status, body := ts.do("GET", "/api/v1/pools/prod/history?"+c.query, "")
		if status != c.status || !strings.Contains(string(body), `"path":"`+c.path+`"`) || !strings.Contains(string(body), "invalid_value") {
			t.Errorf("%s: %d %s", c.query, status, body)
		}
	}
	ts.must(404, "GET", "/api/v1/pools/none/history", "")
	ts.must(400, "GET", "/api/v1/pools/bad%20name/history", "")
	ts.must(405, "POST", "/api/v1/pools/prod/history", "")

	// Both pools have demand and each runs 4 of 8 cpu at a fair share of
	// 0.5: the error is 0 now; at the first update research ran nothing
	// of its 0.25 (the node's first jobs were prod's): the integral is
	// positive.
	orchid := ts.must(200, "GET", "/api/v1/orchid/pools", "")
	if e, ok := orchid["fairness_error"].(float64); !ok || e > 1e-3 {
		t.Errorf("fairness_error %v", orchid["fairness_error"])
	}
	integral, ok := orchid["fairness_error_integral"].(float64)
	if !ok || integral <= 0 {
		t.Errorf("fairness_error_integral %v", orchid["fairness_error_integral"])
	}
	_, body := ts.do("GET", "/metrics", "")
	for _, m := range []string{"fairsched_fairness_error 0", "fairsched_fairness_error_integral_total " + strconv.FormatFloat(integral, 'g', -1, 64), "fairsched_history_bytes "} {
		if !strings.Contains(string(body), "\n"+m) {
			t.Errorf("/metrics has no %s", m)
		}
	}
}
