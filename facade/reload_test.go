package facade

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairsched/fairsched/wire"
)

const reloadBase = `{"config": {"preemptive_scheduling_backoff_s": 5}, "pools": [
	{"name": "prod", "weight": 2},
	{"name": "etl", "parent": "prod"},
	{"name": "busy"},
	{"name": "idle"},
	{"name": "idle-child", "parent": "idle"}]}`

func TestReload(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		want   ReloadResult
		errAt  string // the error's path; "" when the reload applies
		pools  []string
		config map[string]float64
	}{
		{name: "the same file changes nothing", file: reloadBase,
			want:  ReloadResult{Kept: nil},
			pools: []string{"<Root>", "busy", "idle", "idle-child", "prod", "etl"}},
		{name: "add, change, move, remove empty, keep busy", file: `{"config": {"preemptive_scheduling_backoff_s": 7}, "pools": [
			{"name": "prod", "weight": 3},
			{"name": "etl"},
			{"name": "ml", "parent": "prod"}]}`,
			want: ReloadResult{ConfigChanged: true, Added: []string{"ml"}, Changed: []string{"prod", "etl"},
				Removed: []string{"idle-child", "idle"}, Kept: []string{"busy"}},
			pools:  []string{"<Root>", "busy", "etl", "prod", "ml"},
			config: map[string]float64{"preemptive_scheduling_backoff_s": 7}},
		{name: "a bad pool changes nothing", file: `{"config": {"preemptive_scheduling_backoff_s": 9}, "pools": [
			{"name": "new"}, {"name": "etl", "parent": "nowhere"}]}`,
			errAt:  "$.pools[1].parent",
			pools:  []string{"<Root>", "busy", "idle", "idle-child", "prod", "etl"},
			config: map[string]float64{"preemptive_scheduling_backoff_s": 5}},
		{name: "a bad config changes nothing", file: `{"config": {"max_operation_count": 1, "max_running_operation_count": 5}, "pools": [{"name": "new"}]}`,
			errAt: "$.config.max_operation_count",
			pools: []string{"<Root>", "busy", "idle", "idle-child", "prod", "etl"}},
		{name: "node_shards cannot change", file: `{"config": {"node_shards": 3}}`,
			errAt: "$.config.node_shards",
			pools: []string{"<Root>", "busy", "idle", "idle-child", "prod", "etl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, reloadBase, nil)
			ts.must(201, "POST", "/api/v1/operations", `{"pool": "busy", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)
			sc, err := wire.DecodeServeConfig([]byte(tt.file))
			var res ReloadResult
			if err == nil {
				res, err = ts.srv.Reload(sc)
			}
			if tt.errAt != "" {
				e, ok := err.(*wire.Error)
				if !ok || e.Path != tt.errAt {
					t.Fatalf("error %v, want one at %s", err, tt.errAt)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if !sameResult(res, tt.want) {
				t.Fatalf("result %+v, want %+v", res, tt.want)
			}
			var names []string
			for _, p := range ts.must(200, "GET", "/api/v1/pools", "")["pools"].([]any) {
				names = append(names, p.(map[string]any)["name"].(string))
			}
			if !slices.Equal(sorted(names), sorted(tt.pools)) {
				t.Fatalf("pools %v, want %v", names, tt.pools)
			}
			cfg := ts.must(200, "GET", "/api/v1/config", "")
			for k, v := range tt.config {
				if num(cfg[k]) != v {
					t.Fatalf("config %s = %v, want %v", k, cfg[k], v)
				}
			}
			if tt.name == "add, change, move, remove empty, keep busy" {
				etl := ts.must(200, "GET", "/api/v1/pools/etl", "")
				prod := ts.must(200, "GET", "/api/v1/pools/prod", "")
				if etl["parent"] != "<Root>" || num(prod["weight"]) != 3 {
					t.Fatalf("etl %v, prod %v", etl, prod)
				}
			}
		})
	}
}

func sameResult(a, b ReloadResult) bool {
	return a.ConfigChanged == b.ConfigChanged && slices.Equal(a.Added, b.Added) && slices.Equal(a.Changed, b.Changed) &&
		slices.Equal(a.Removed, b.Removed) && slices.Equal(a.Kept, b.Kept)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.SortFunc(s, strings.Compare)
	return s
}

// TestReloadRefreshesEverythingDerived: a reload applies its config as
// PATCH /api/v1/config does, including the settings the HTTP layer reads
// without the core (max_heartbeats_per_batch bounds the batches decoded
// after it, fair_share_update_period_s the updater's period).
func TestReloadRefreshesEverythingDerived(t *testing.T) {
	ts := startServer(t, `{"config": {"max_heartbeats_per_batch": 2}}`, nil)
	batch := `{"heartbeats": [
		{"node_id": "a", "resource_limits": {"cpu": 1}},
		{"node_id": "b", "resource_limits": {"cpu": 1}},
		{"node_id": "c", "resource_limits": {"cpu": 1}}]}`
	ts.must(400, "POST", "/api/v1/heartbeats", batch)
	sc, err := wire.DecodeServeConfig([]byte(`{"config": {"max_heartbeats_per_batch": 3, "fair_share_update_period_s": 0.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.srv.Reload(sc); err != nil {
		t.Fatal(err)
	}
	if r := ts.must(200, "POST", "/api/v1/heartbeats", batch); len(arr(r["responses"])) != 3 {
		t.Fatalf("a batch of 3 after the reload to max_heartbeats_per_batch 3: %v", r)
	}
	if got := int64(ts.srv.Core().Period()); got != int64(500*time.Millisecond) {
		t.Fatalf("the updater's period after the reload is %v, want 500ms", time.Duration(got))
	}
}
