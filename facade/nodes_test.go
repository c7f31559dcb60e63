package facade

import (
	"fmt"
	"testing"
)

func TestNodeListing(t *testing.T) {
	ts := startServer(t, "", nil)
	for i := range 7 {
		ts.must(200, "POST", fmt.Sprintf("/api/v1/nodes/n-%d/heartbeat", 6-i), `{"resource_limits": {"cpu": 4}, "tags": ["a"]}`)
	}
	var got []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		uri := "/api/v1/nodes?limit=3"
		if cursor != "" {
			uri += "&cursor=" + cursor
		}
		page := ts.must(200, "GET", uri, "")
		for _, n := range page["nodes"].([]any) {
			m := n.(map[string]any)
			got = append(got, m["id"].(string))
			if num(m["allocation_count"]) != 0 || num(m["last_heartbeat_age_s"]) < 0 {
				t.Fatalf("node %v", m)
			}
		}
		if page["next_cursor"] == nil {
			break
		}
		cursor = page["next_cursor"].(string)
	}
	if fmt.Sprint(got) != "[n-0 n-1 n-2 n-3 n-4 n-5 n-6]" {
		t.Fatalf("pages listed %v", got)
	}
	if n := ts.must(200, "GET", "/api/v1/nodes/n-3", ""); n["id"] != "n-3" || num(obj(n["resource_limits"])["cpu"]) != 4 {
		t.Fatalf("GET n-3: %v", n)
	}
	for _, tt := range []struct {
		uri    string
		status int
		code   string
	}{
		{"/api/v1/nodes?limit=0", 400, "invalid_value"},
		{"/api/v1/nodes?limit=1001", 400, "invalid_value"},
		{"/api/v1/nodes?cursor=a%20b", 400, "invalid_value"},
		{"/api/v1/nodes/n-9", 404, "unknown_node"},
		{"/api/v1/nodes/a%20b", 400, "invalid_name"},
	} {
		e := ts.must(tt.status, "GET", tt.uri, "")
		if obj(e["error"])["code"] != tt.code {
			t.Errorf("%s: %v, want %s", tt.uri, e, tt.code)
		}
	}
	ts.must(405, "POST", "/api/v1/nodes", "{}")
}
