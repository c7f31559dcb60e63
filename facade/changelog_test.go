package facade

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	l.b.Reset()
	return out
}

// TestChangesAreLogged: every state change a request makes is one log line
// naming what changed and who asked; a refused change is one line with the
// code; reads and heartbeats log nothing.
func TestChangesAreLogged(t *testing.T) {
	var buf lockedBuffer
	ts := startServer(t, `{"pools": [{"name": "busy"}]}`, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})
	buf.lines(t) // start-up
	steps := []struct {
		method, path, body string
		status             int
		msg                string
		attrs              map[string]any
	}{
		{"PUT", "/api/v1/pools/etl", `{"weight": 2}`, 201, "pool created", map[string]any{"pool": "etl", "parent": "<Root>"}},
		{"PUT", "/api/v1/pools/etl", `{"weight": 3}`, 200, "pool replaced", map[string]any{"pool": "etl"}},
		{"PATCH", "/api/v1/pools/etl", `{"weight": 4}`, 200, "pool changed", map[string]any{"pool": "etl"}},
		{"PUT", "/api/v1/pools/bad", `{"weight": -1}`, 400, "request refused",
			map[string]any{"code": "invalid_value", "at": "$.weight", "status": 400.0, "method": "PUT"}},
		{"POST", "/api/v1/operations", `{"id": "op-a", "pool": "busy", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, 201,
			"operation started", map[string]any{"operation": "op-a", "pool": "busy", "state": "running"}},
		{"PATCH", "/api/v1/operations/op-a", `{"weight": 2}`, 200, "operation changed",
			map[string]any{"operation": "op-a", "weight_changed": true, "pool_changed": false}},
		{"DELETE", "/api/v1/pools/busy", ``, 409, "request refused", map[string]any{"code": "pool_not_empty"}},
		{"POST", "/api/v1/operations/op-a/abort", ``, 200, "operation aborted", map[string]any{"operation": "op-a"}},
		{"PATCH", "/api/v1/config", `{"preemptive_scheduling_backoff_s": 3}`, 200, "config changed",
			map[string]any{"keys": []any{"preemptive_scheduling_backoff_s"}}},
		{"DELETE", "/api/v1/pools/etl", ``, 204, "pool removed", map[string]any{"pool": "etl"}},
		{"GET", "/api/v1/pools", ``, 200, "", nil},
		{"POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": 4}}`, 200, "", nil},
		{"POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": -4}}`, 400, "", nil},
	}
	for _, st := range steps {
		ts.must(st.status, st.method, st.path, st.body)
		lines := buf.lines(t)
		if st.msg == "" {
			if len(lines) != 0 {
				t.Fatalf("%s %s logged %v", st.method, st.path, lines)
			}
			continue
		}
		if len(lines) != 1 || lines[0]["msg"] != st.msg || lines[0]["level"] != "INFO" {
			t.Fatalf("%s %s logged %v, want one INFO line %q", st.method, st.path, lines, st.msg)
		}
		if c, _ := lines[0]["remote"].(string); !strings.HasPrefix(c, "127.0.0.1:") || lines[0]["caller"] != "anonymous" {
			t.Fatalf("%s %s: caller %v, remote %v", st.method, st.path, lines[0]["caller"], lines[0]["remote"])
		}
		if want := map[bool]string{true: "refused", false: "ok"}[st.status >= 400]; lines[0]["result"] != want {
			t.Fatalf("%s %s: result %v, want %s", st.method, st.path, lines[0]["result"], want)
		}
		for k, v := range st.attrs {
			got, _ := json.Marshal(lines[0][k])
			want, _ := json.Marshal(v)
			if string(got) != string(want) {
				t.Fatalf("%s %s: %s = %s, want %s (line %v)", st.method, st.path, k, got, want, lines[0])
			}
		}
	}
}
