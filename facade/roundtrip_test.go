package facade

import (
	"encoding/json"
	"testing"

	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/wire"
)

// TestConfigRoundTrip: what GET /api/v1/config and GET /api/v1/pools answer,
// put together as {"config": …, "pools": […]}, is a serve configuration as
// it is, and a server started from it answers the same.
func TestConfigRoundTrip(t *testing.T) {
	for _, tt := range []struct{ name, config string }{
		{"embedded default", string(examples.ServeConfig)},
		{"every pool attribute", `{"config": {"max_operation_count": 5000, "node_heartbeat_timeout_s": 30,
			"integral_guarantees": {"smooth_period_s": 30}},
		  "pools": [
			{"name": "a", "weight": 2, "strong_guarantee_resources": {"cpu": 10, "memory": 1024},
			 "resource_limits": {"gpu": 0}, "max_operation_count": 7, "max_running_operation_count": 3,
			 "fair_share_starvation_timeout_s": 5, "fair_share_starvation_tolerance": 0.9,
			 "enable_aggressive_starvation": true, "allow_aggressive_preemption": false,
			 "allow_normal_preemption": true, "non_preemptible_resource_usage_threshold": {"cpu": 1},
			 "compute_promised_guarantee_fair_share": true, "enable_priority_strong_guarantee_adjustment": true,
			 "enable_priority_strong_guarantee_adjustment_donorship": true, "scheduling_tag_filter": "gpu & !slow"},
			{"name": "b", "parent": "a", "mode": "fifo", "fifo_sort_parameters": ["start_time"],
			 "enable_lightweight_operations": true},
			{"name": "c", "integral_guarantees": {"guarantee_type": "relaxed", "resource_flow": {"cpu": 4},
			 "relaxed_share_multiplier_limit": 2, "can_accept_free_volume": true,
			 "should_distribute_free_volume_among_children": true}}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := startServer(t, tt.config, nil)
			cfg, pools := first.must(200, "GET", "/api/v1/config", ""), first.must(200, "GET", "/api/v1/pools", "")
			doc, err := json.Marshal(map[string]any{"config": cfg, "pools": pools["pools"]})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wire.DecodeServeConfig(doc); err != nil {
				t.Fatalf("the GET output is not a serve configuration: %v\n%s", err, doc)
			}
			second := startServer(t, string(doc), nil)
			cfg2, pools2 := second.must(200, "GET", "/api/v1/config", ""), second.must(200, "GET", "/api/v1/pools", "")
			if a, b := jsonText(t, cfg), jsonText(t, cfg2); a != b {
				t.Fatalf("config after the round trip:\n%s\nwant\n%s", b, a)
			}
			if a, b := jsonText(t, pools), jsonText(t, pools2); a != b {
				t.Fatalf("pools after the round trip:\n%s\nwant\n%s", b, a)
			}
		})
	}
}

func TestServeConfigRootEntry(t *testing.T) {
	tests := []struct {
		config, wantPath string
	}{
		{`{"pools": [{"name": "<Root>"}]}`, ""},
		{`{"pools": [{"name": "<Root>", "mode": "fair_share"}, {"name": "a"}]}`, ""},
		{`{"pools": [{"name": "<Root>", "mode": "fifo"}]}`, "$.pools[0].mode"},
		{`{"pools": [{"name": "a"}, {"name": "<Root>", "weight": 2}]}`, "$.pools[1].weight"},
		{`{"pools": [{"name": "<Root>", "parent": "a", "weight": 2}]}`, "$.pools[0].parent"},
	}
	for _, tt := range tests {
		_, err := wire.DecodeServeConfig([]byte(tt.config))
		if tt.wantPath == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.config, err)
			}
			continue
		}
		e, ok := err.(*wire.Error)
		if !ok || e.Path != tt.wantPath {
			t.Errorf("%s: error %v, want one at %s", tt.config, err, tt.wantPath)
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
