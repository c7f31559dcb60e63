package facade

import (
	"encoding/json"
	"testing"
)

// TestRecentPreemptions: a preemption that a heartbeat answers appears in
// the operation orchid's recent_preemptions with the node and the reason
// sentence the node was sent; the orchid lists the operation's tasks.
func TestRecentPreemptions(t *testing.T) {
	ts := startServer(t, `{"config": {"fair_share_starvation_timeout_s": 1, "fair_share_aggressive_starvation_timeout_s": 2,
			"preemptive_scheduling_backoff_s": 0, "fair_share_starvation_tolerance": 0.9},
		"pools": [{"name": "greedy"}, {"name": "starving"}]}`, nil)
	nodes := []*simNode{newNode("n1", 8, 32), newNode("n2", 8, 32)}
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"id": "hog", "pool": "greedy",
		"tasks": [{"name": "mapper", "job_count": 100, "resources": {"cpu": 1, "memory": 1073741824}, "duration_hint_s": 60}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	for _, n := range nodes {
		ts.heartbeat(n)
	}
	ts.must(201, "POST", "/api/v1/operations", `{"id": "urgent", "pool": "starving", "tasks": [{"job_count": 6, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	var got map[string]any
	var node string
	for round := 0; round < 40 && got == nil; round++ {
		ts.clock.AdvanceSeconds(0.5)
		ts.srv.UpdateFairShare()
		for _, n := range nodes {
			ts.heartbeat(n)
			if len(n.preempts) > 0 {
				got, node = n.preempts[0], n.name
				break
			}
		}
	}
	if got == nil {
		t.Fatal("no preemption after 20 s of virtual time")
	}
	status, body := ts.do("GET", "/api/v1/orchid/operations/hog", "")
	if status != 200 {
		t.Fatalf("GET orchid: %d %s", status, body)
	}
	var o struct {
		Tasks []struct {
			Name      string         `json:"name"`
			JobCount  int            `json:"job_count"`
			Resources map[string]any `json:"resources"`
			Hint      float64        `json:"duration_hint_s"`
		} `json:"tasks"`
		Recent []struct {
			Time       float64 `json:"time_s"`
			Allocation string  `json:"allocation_id"`
			Node       string  `json:"node_id"`
			Reason     string  `json:"reason"`
		} `json:"recent_preemptions"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Tasks) != 1 || o.Tasks[0].Name != "mapper" || o.Tasks[0].JobCount != 100 || o.Tasks[0].Hint != 60 ||
		num(o.Tasks[0].Resources["cpu"]) != 1 {
		t.Errorf("tasks: %+v", o.Tasks)
	}
	if len(o.Recent) == 0 {
		t.Fatalf("no recent_preemptions: %s", body)
	}
	found := false
	for _, e := range o.Recent {
		if e.Allocation == got["id"] {
			found = true
			if e.Node != node || e.Reason != got["reason"] || e.Time > ts.clock.Now().Seconds() || e.Time <= 0 {
				t.Errorf("recent_preemptions has %+v; the heartbeat to %s said %v", e, node, got)
			}
		}
	}
	if !found {
		t.Errorf("recent_preemptions %+v lacks allocation %v", o.Recent, got["id"])
	}
	// The urgent operation preempted nothing.
	status, body = ts.do("GET", "/api/v1/orchid/operations/urgent", "")
	if status != 200 || !json.Valid(body) {
		t.Fatalf("GET orchid urgent: %d %s", status, body)
	}
	var u map[string]any
	_ = json.Unmarshal(body, &u)
	if r, ok := u["recent_preemptions"].([]any); !ok || len(r) != 0 {
		t.Errorf("urgent's recent_preemptions: %v", u["recent_preemptions"])
	}
}
