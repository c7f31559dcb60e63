package facade

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
)

// TestWhyWaitingOverHTTP builds the cluster docs/why-waiting.md walks
// through on a server, over HTTP, with two nodes that heartbeat every
// second, and checks that the page shows the server's answers: the
// explanations of etl and train-1 as GET .../explain answers them at 45 s,
// and the what-if of research's weight.
func TestWhyWaitingOverHTTP(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "research", "max_running_operation_count": 2}, {"name": "prod", "allow_normal_preemption": false}]}`, nil)
	ts.clock.set(0)
	var nodes []*simNode
	for _, name := range []string{"n000", "n001"} {
		n := newNode(name, 10, 100)
		n.limits = `{"user_slots": 10, "cpu": 10, "memory": 107374182400}`
		nodes = append(nodes, n)
	}
	job := `"tasks": [{"job_count": 1000, "resources": {"user_slots": 1, "cpu": 1, "memory": 1073741824}}]`
	round := func() {
		ts.srv.UpdateFairShare()
		for _, n := range nodes {
			ts.heartbeat(n)
		}
	}
	ts.must(201, "POST", "/api/v1/operations", `{"id": "serving", "pool": "prod", `+job+`}`)
	round()
	round()
	ts.clock.set(clock.FromSeconds(1))
	for _, id := range []string{"train-1", "train-2", "train-3", "etl"} {
		ts.must(201, "POST", "/api/v1/operations", `{"id": "`+id+`", "pool": "research", `+job+`}`)
	}
	for s := 2; s <= 45; s++ {
		ts.clock.set(clock.FromSeconds(float64(s)))
		round()
	}
	doc, err := os.ReadFile("../docs/why-waiting.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"etl", "train-1"} {
		status, body := ts.do("GET", "/api/v1/operations/"+id+"/explain", "")
		if status != 200 {
			t.Fatalf("explain %s: %d %s", id, status, body)
		}
		var shown bytes.Buffer
		json.Indent(&shown, bytes.TrimSpace(body), "", "  ")
		if !strings.Contains(string(doc), "```json\n"+shown.String()+"\n```") {
			t.Errorf("docs/why-waiting.md does not show GET /api/v1/operations/%s/explain as the server answers it:\n%s", id, shown.String())
		}
	}
	w := ts.must(200, "POST", "/api/v1/whatif", `{"changes": [{"method": "PATCH", "path": "/api/v1/pools/research", "body": {"weight": 3}}]}`)
	for name, want := range map[string][2]float64{"research": {0.5, 0.75}, "prod": {0.5, 0.25}} {
		p := w["pools"].(map[string]any)[name].(map[string]any)
		b := num(p["before"].(map[string]any)["fair_share"].(map[string]any)["user_slots"])
		a := num(p["after"].(map[string]any)["fair_share"].(map[string]any)["user_slots"])
		if math.Abs(b-want[0]) > 1e-9 || math.Abs(a-want[1]) > 1e-9 {
			t.Errorf("what-if: %s's fair share %v → %v, docs/why-waiting.md says %v → %v", name, b, a, want[0], want[1])
		}
	}
}
