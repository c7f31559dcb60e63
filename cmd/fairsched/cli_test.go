package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/facade/facadetest"
	"github.com/fairsched/fairsched/store"
)

const cliTestConfig = `{"pools": [
	{"name": "prod", "weight": 3, "strong_guarantee_resources": {"cpu": 16, "memory": 68719476736}},
	{"name": "etl", "parent": "prod", "max_running_operation_count": 1},
	{"name": "adhoc", "mode": "fifo", "resource_limits": {"cpu": 40}}
]}`

// cli runs a client command against server.
func cli(t *testing.T, server, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return call(stdin, append(args, "--server", server)...)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClientCommands drives pools, operations, nodes and config through
// the command line against a real server.
func TestClientCommands(t *testing.T) {
	ts := facadetest.Start(t, cliTestConfig)
	steps := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  []string // substrings of stdout (stderr when code != 0)
	}{
		{"pools list", "", []string{"pools", "list"}, 0,
			[]string{"NAME", "<Root>", "prod", "etl   ", "adhoc", "fifo", "cpu=16 mem=64Gi", "cpu=40"}},
		{"pools get", "", []string{"pools", "get", "etl"}, 0, []string{"max_running_operation_count:  1", "parent:", "prod"}},
		{"pools put", `{"parent": "prod", "weight": 2}`, []string{"pools", "put", "ml", "-f", "-"}, 0, []string{"pool ml created"}},
		{"pools put again", `{"parent": "prod", "weight": 4}`, []string{"pools", "put", "ml", "-f", "-"}, 0, []string{"pool ml replaced"}},
		{"pools patch", `{"weight": null, "resource_limits": {"gpu": 0}}`, []string{"pools", "patch", "ml", "-f", "-"}, 0,
			[]string{"resource_limits:  {\"gpu\":0}"}},
		{"pools get json", "", []string{"pools", "get", "ml", "-o", "json"}, 0, []string{`"parent": "prod"`, `"gpu": 0`}},
		{"pools delete", "", []string{"pools", "delete", "ml"}, 0, []string{"pool ml deleted"}},
		{"pools get deleted", "", []string{"pools", "get", "ml"}, 2, []string{"404 unknown_pool"}},
		{"pools put bad", `{"weight": -1}`, []string{"pools", "put", "x", "-f", "-"}, 2, []string{"invalid_value", "(at $.weight)"}},
		{"pools put unknown key", `{"wieght": 1}`, []string{"pools", "put", "x", "-f", "-"}, 1, []string{`unknown field "wieght"`}},
		{"operations start", `{"id": "etl-1", "pool": "etl", "tasks": [{"name": "map", "job_count": 4, "resources": {"cpu": 2, "memory": 1073741824}}]}`,
			[]string{"operations", "start", "-f", "-"}, 0, []string{"operation etl-1 running"}},
		{"operations start pending", `{"id": "etl-2", "pool": "etl", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`,
			[]string{"operations", "start", "-f", "-"}, 0, []string{"operation etl-2 pending"}},
		{"operations list", "", []string{"operations", "list"}, 0,
			[]string{"ID", "etl-1", "running", "cpu=8 mem=4Gi", "etl-2", "pending"}},
		{"operations list filtered", "", []string{"operations", "list", "--state", "pending", "-o", "json"}, 0,
			[]string{`"id": "etl-2"`}},
		{"operations get", "", []string{"operations", "get", "etl-2"}, 0,
			[]string{"state:", "pending", "pool etl (max_running_operation_count 1)"}},
		{"operations patch", `{"weight": 5}`, []string{"operations", "patch", "etl-1", "-f", "-"}, 0, []string{"etl-1"}},
		{"operations complete", "", []string{"operations", "complete", "etl-1"}, 0, []string{"operation etl-1 completed"}},
		{"operations abort finished", "", []string{"operations", "abort", "etl-1"}, 0, []string{"operation etl-1 completed"}},
		{"nodes get unknown", "", []string{"nodes", "get", "n-1"}, 2, []string{"404 unknown_node"}},
		{"config patch", `{"preemptive_scheduling_backoff_s": 3}`, []string{"config", "patch", "-f", "-"}, 0,
			[]string{"preemptive_scheduling_backoff_s:", "3"}},
		{"usage: missing name", "", []string{"pools", "get"}, 2, []string{"want NAME, got 0 argument(s)", "usage: fairsched pools get NAME"}},
		{"usage: unknown verb", "", []string{"pools", "frob"}, 2, []string{`unknown command "frob"`}},
		{"usage: bad output", "", []string{"pools", "list", "-o", "yaml"}, 2, []string{`--output "yaml": want table or json`}},
	}
	for _, s := range steps {
		code, out, errOut := cli(t, ts.URL, s.stdin, s.args...)
		text := out
		if s.code != 0 {
			text = errOut
		}
		if code != s.code {
			t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", s.name, code, s.code, out, errOut)
		}
		for _, w := range s.want {
			if !strings.Contains(text, w) {
				t.Fatalf("%s: output lacks %q:\n%s", s.name, w, text)
			}
		}
	}
	// The node appears once it sent a heartbeat.
	hb := `{"resource_limits": {"cpu": 32, "memory": 137438953472, "user_slots": 32}, "tags": ["rack-1"]}`
	code, _, errOut := call("", "nodes", "get", "n-1", "--server", ts.URL)
	if code != 2 || !strings.Contains(errOut, "unknown_node") {
		t.Fatalf("nodes get before a heartbeat: %d %s", code, errOut)
	}
	c := newTestClient(t, ts.URL)
	if err := c.heartbeat("n-1", hb); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, ts.URL, "", "nodes", "list")
	if code != 0 || !strings.Contains(out, "ALLOCATIONS") || !strings.Contains(out, "n-1") || !strings.Contains(out, "rack-1") {
		t.Fatalf("nodes list: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, ts.URL, "", "nodes", "get", "n-1")
	if code != 0 || !strings.Contains(out, "cpu=32 mem=128Gi slots=32") || !strings.Contains(out, "rack-1") {
		t.Fatalf("nodes get: %d\n%s%s", code, out, errOut)
	}
}

// TestConfigGetRoundTrips: config get writes a file that config validate
// accepts and fairsched serve --config would serve.
func TestConfigGetRoundTrips(t *testing.T) {
	ts := facadetest.Start(t, cliTestConfig)
	code, out, errOut := cli(t, ts.URL, "", "config", "get")
	if code != 0 {
		t.Fatalf("config get: %d %s", code, errOut)
	}
	var doc struct {
		Config map[string]any   `json:"config"`
		Pools  []map[string]any `json:"pools"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Pools) != 4 || doc.Config["node_shards"] == nil {
		t.Fatalf("config get output: %v\n%s", err, out)
	}
	file := writeFile(t, "serve.json", out)
	if code, out, errOut := call("", "config", "validate", file); code != 0 || !strings.Contains(out, "valid (3 pools)") {
		t.Fatalf("config validate: %d %s %s", code, out, errOut)
	}
	second := facadetest.Start(t, out)
	_, out2, _ := cli(t, second.URL, "", "config", "get")
	if out2 != out {
		t.Fatalf("a server started from config get's output answers differently:\n%s\nwant\n%s", out2, out)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		config string
		code   int
		want   string
	}{
		{cliTestConfig, 0, "valid (3 pools)"},
		{`{"pools": [{"name": "a", "parent": "b"}]}`, 2, `$.pools[0].parent: cannot find pool "b"`},
		{`{"config": {"max_operation_count": -1}}`, 2, "$.config.max_operation_count"},
		{`{"pools": [{"name": "a", "mode": "fifo"}, {"name": "b", "parent": "a"}]}`, 2, "fifo"},
		{`not json`, 2, "cannot parse JSON"},
	}
	for _, tt := range tests {
		file := writeFile(t, "c.json", tt.config)
		code, out, errOut := call("", "config", "validate", file)
		text := out + errOut
		if code != tt.code || !strings.Contains(text, tt.want) {
			t.Errorf("%s: exit %d, output %q; want %d and %q", tt.config, code, text, tt.code, tt.want)
		}
	}
	if code, _, errOut := call("", "config", "validate", filepath.Join(t.TempDir(), "missing.json")); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, %s", code, errOut)
	}
}

func TestTopOnce(t *testing.T) {
	ts := facadetest.Start(t, cliTestConfig)
	c := newTestClient(t, ts.URL)
	if err := c.heartbeat("n-1", `{"resource_limits": {"cpu": 32, "memory": 137438953472, "user_slots": 32}}`); err != nil {
		t.Fatal(err)
	}
	ts.Update()
	code, out, errOut := cli(t, ts.URL, "", "top", "--once")
	if code != 0 {
		t.Fatalf("top: %d %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	var tree []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && (strings.HasPrefix(l, "<Root>") || strings.HasPrefix(l, "  ")) {
			tree = append(tree, l[:len(l)-len(strings.TrimLeft(l, " "))]+f[0])
		}
	}
	want := []string{"<Root>", "  adhoc", "  prod", "    etl"}
	if strings.Join(tree, ",") != strings.Join(want, ",") {
		t.Fatalf("top's tree %q, want %q:\n%s", tree, want, out)
	}
	if !strings.Contains(out, "FAIR SHARE") || !strings.Contains(out, "4 pools") || strings.Contains(out, "\x1b[") ||
		!strings.Contains(out, "USAGE 10m") || !strings.Contains(out, "FAIR SHARE 10m") {
		t.Fatalf("top --once:\n%s", out)
	}
	// Every pool but the root has sparklines of the update's point.
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") && !strings.ContainsAny(l, string(sparkBars)) {
			t.Errorf("no sparkline in %q", l)
		}
	}
	if code, out, _ := cli(t, ts.URL, "", "top", "--once", "--history", "0"); code != 0 || strings.Contains(out, "USAGE 10m") {
		t.Errorf("top --history 0: %d\n%s", code, out)
	}
	if code, _, errOut := cli(t, ts.URL, "", "top", "--once", "--history", "-1s"); code != 2 || !strings.Contains(errOut, "--history") {
		t.Errorf("top --history -1s: %d %s", code, errOut)
	}
	code, out, _ = cli(t, ts.URL, "", "top", "--iterations", "2", "--interval", "1ms")
	if code != 0 || strings.Count(out, "\x1b[H\x1b[2J") != 2 {
		t.Fatalf("top --iterations 2: exit %d, %d frames", code, strings.Count(out, "\x1b[H\x1b[2J"))
	}
}

func TestVersion(t *testing.T) {
	ts := facadetest.Start(t, "")
	code, out, _ := call("", "version")
	if code != 0 || !strings.HasPrefix(out, "fairsched ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code2, out2, _ := call("", "--version"); code2 != 0 || out2 != out {
		t.Fatalf("--version: %d %q", code2, out2)
	}
	code, out, _ = call("", "version", "--server", ts.URL, "-o", "json")
	var v struct {
		Client, Server map[string]string
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Server["go_version"] == "" || v.Client["version"] != v.Server["version"] {
		t.Fatalf("version --server -o json: %d %s", code, out)
	}
}

// TestCompletion runs the bash completion in bash: the first word, a
// group's verbs, flags.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if code, out, _ := call("", "completion", sh); code != 0 || !strings.Contains(out, "fairsched") || !strings.Contains(out, "operations") {
			t.Fatalf("completion %s: %d\n%s", sh, code, out)
		}
	}
	if code, _, _ := call("", "completion", "tcsh"); code != 2 {
		t.Fatalf("completion tcsh: exit %d, want 2", code)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, script, _ := call("", "completion", "bash")
	complete := func(words ...string) string {
		t.Helper()
		prog := script + `
COMP_WORDS=(` + strings.Join(quoteAll(words), " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_fairsched
echo "${COMPREPLY[*]}"
`
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"fairsched", "po"}, "pools"},
		{[]string{"fairsched", "pools", ""}, "list get put patch delete"},
		{[]string{"fairsched", "operations", "c"}, "complete"},
		{[]string{"fairsched", "pools", "list", "--ser"}, "--server"},
		{[]string{"fairsched", "completion", "f"}, "fish"},
	}
	for _, tt := range tests {
		if got := complete(tt.words...); got != tt.want {
			t.Errorf("complete %q = %q, want %q", tt.words, got, tt.want)
		}
	}
}

func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + w + "'"
	}
	return out
}

// testClient posts raw bodies, for what the commands do not send.
type testClient struct {
	t    *testing.T
	base string
}

func newTestClient(t *testing.T, base string) testClient { return testClient{t: t, base: base} }

func (c testClient) heartbeat(node, body string) error {
	resp, err := http.Post(c.base+"/api/v1/nodes/"+node+"/heartbeat", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("heartbeat: status %d", resp.StatusCode)
	}
	return nil
}

// TestBackupCommand: fairsched backup saves the store of a durable server,
// and refuses a server that keeps none.
func TestBackupCommand(t *testing.T) {
	ts := facadetest.Start(t, "")
	code, _, errOut := cli(t, ts.URL, "", "backup", "-f", filepath.Join(t.TempDir(), "x.db"))
	if code != 2 || !strings.Contains(errOut, "not_supported") {
		t.Fatalf("backup of an in-memory server: %d %s", code, errOut)
	}
	dir := t.TempDir()
	st, err := store.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	durable := facadetest.Start(t, `{"pools": [{"name": "kept"}]}`, func(o *facade.Options) { o.Store = st })
	file := filepath.Join(t.TempDir(), "fairsched.db")
	if code, out, errOut := cli(t, durable.URL, "", "backup", "-f", file); code != 0 || !strings.Contains(out, "bytes") {
		t.Fatalf("backup: %d %s %s", code, out, errOut)
	}
	cp, err := store.OpenBolt(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if _, ok, err := cp.Get(store.Pools, "kept"); !ok || err != nil {
		t.Fatalf("the backup lacks pool kept: %v %v", ok, err)
	}
}

// TestStatusCommand: fairsched status says a server's state, role, store
// and readiness; after a restart on a data directory, its recovery.
func TestStatusCommand(t *testing.T) {
	code, out, errOut := cli(t, facadetest.Start(t, "").URL, "", "status")
	for _, want := range []string{"status  ok", "ready   yes", "role    standalone", "store   memory"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("status of an in-memory server: %d %q %q, want %q", code, out, errOut, want)
		}
	}

	dir := t.TempDir()
	t.Run("before the restart", func(t *testing.T) {
		st, err := store.OpenBolt(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ts := facadetest.Start(t, "", func(o *facade.Options) { o.Store = st })
		c, err := client.New(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := c.Heartbeat(ctx, "n1", client.Heartbeat{ResourceLimits: client.Resources{CPU: 4}}); err != nil {
			t.Fatal(err)
		}
		ts.Advance(6 * clock.Second)
		ts.Update() // a checkpoint names n1 alive
		// A change awaited after it: the checkpoint is on disk too.
		if _, _, err := c.PutPool(ctx, "p", client.Pool{}); err != nil {
			t.Fatal(err)
		}
	})
	st, err := store.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts := facadetest.Start(t, "", func(o *facade.Options) { o.Store = st })
	code, out, errOut = cli(t, ts.URL, "", "status", "-o", "json")
	var got struct {
		Status   string `json:"status"`
		Ready    bool   `json:"ready"`
		NotReady string `json:"not_ready"`
		Epoch    int    `json:"epoch"`
		Recovery struct {
			Active        bool `json:"active"`
			ExpectedNodes int  `json:"expected_nodes"`
		} `json:"recovery"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Status != "recovering" || got.Ready || got.NotReady != "recovering" ||
		got.Epoch != 2 || !got.Recovery.Active || got.Recovery.ExpectedNodes != 1 {
		t.Fatalf("status after the restart: %d %s %s", code, out, errOut)
	}
	code, out, _ = cli(t, ts.URL, "", "status")
	if code != 0 || !strings.Contains(out, "recovery  active") || !strings.Contains(out, "0 of 1 nodes reported") {
		t.Fatalf("status table after the restart: %d %s", code, out)
	}
}

// TestExplainAndDryRun: fairsched explain says why an operation and a pool
// are in their state, the binding condition first; pools put, patch and
// delete --dry-run print what would change and change nothing; a refused
// preview is the real request's error.
func TestExplainAndDryRun(t *testing.T) {
	ts := facadetest.Start(t, `{"pools": [{"name": "a"}, {"name": "b"}, {"name": "research", "max_running_operation_count": 1}, {"name": "empty"}]}`)
	c := newTestClient(t, ts.URL)
	for _, op := range []string{
		`{"id": "oa", "pool": "a", "tasks": [{"job_count": 100, "resources": {"cpu": 1}}]}`,
		`{"id": "ob", "pool": "b", "tasks": [{"job_count": 100, "resources": {"cpu": 1}}]}`,
		`{"id": "r1", "pool": "research", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`,
		`{"id": "r2", "pool": "research", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`,
	} {
		if code, _, stderr := cli(t, ts.URL, op, "operations", "start", "-f", "-"); code != 0 {
			t.Fatalf("start: %s", stderr)
		}
	}
	ts.Update()
	if err := c.heartbeat("n1", `{"resource_limits": {"user_slots": 100, "cpu": 16, "memory": 68719476736}}`); err != nil {
		t.Fatal(err)
	}
	ts.Update()
	before := func() string {
		_, out, _ := cli(t, ts.URL, "", "pools", "list", "-o", "json")
		return out
	}()
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  []string // in this order in stdout (stderr when code != 0)
	}{
		{"explain pending", "", []string{"explain", "r2"}, 0, []string{"operation r2 is pending:",
			"  1. max_running_operation_count 1 of 1 at pool research: operation r2 is 1st of 1 in its pending queue", "[running_operation_limit]"}},
		{"explain json", "", []string{"explain", "r2", "-o", "json"}, 0, []string{`"operation": "r2"`, `"code": "running_operation_limit"`, `"position": 1`}},
		{"explain pool", "", []string{"explain", "--pool", "b"}, 0, []string{"pool b is", "1. pool b", "fair_share_weight_share"}},
		{"explain unknown", "", []string{"explain", "nope"}, 2, []string{"404 unknown_operation"}},
		{"explain both", "", []string{"explain", "r2", "--pool", "b"}, 2, []string{"want OPERATION or --pool NAME"}},
		{"patch dry run", `{"weight": 3}`, []string{"pools", "patch", "b", "-f", "-", "--dry-run"}, 0, []string{"POOL", "FIELD", "BEFORE", "AFTER",
			"a ", "fair_share.cpu", "0.4687", "0.2344", "b ", "fair_share.cpu", "0.4687", "0.7031", "b ", "weight", "1", "3"}},
		{"put dry run", `{"parent": "a"}`, []string{"pools", "put", "new", "-f", "-", "--dry-run"}, 0, []string{"new", "(created)", "-", "fair share 0"}},
		{"delete dry run", "", []string{"pools", "delete", "empty", "--dry-run", "-o", "json"}, 0, []string{`"empty": {`, `"after": null`}},
		{"delete dry run refused", "", []string{"pools", "delete", "research", "--dry-run"}, 2, []string{"409 pool_not_empty", "$.changes[0].path"}},
		{"patch dry run refused", `{"weight": -1}`, []string{"pools", "patch", "b", "-f", "-", "--dry-run"}, 2, []string{"invalid_value", "$.changes[0].body.weight"}},
	} {
		code, stdout, stderr := cli(t, ts.URL, tc.stdin, tc.args...)
		out := stdout
		if tc.code != 0 {
			out = stderr
		}
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.name, code, tc.code, stdout, stderr)
			continue
		}
		rest := out
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: %q not found (in order) in\n%s", tc.name, w, out)
				break
			}
			rest = rest[i+len(w):]
		}
	}
	if _, after, _ := cli(t, ts.URL, "", "pools", "list", "-o", "json"); after != before {
		t.Errorf("a dry run changed the pools:\n%s\n%s", before, after)
	}
}

// TestSparklines: usage and fair share are drawn on one scale, a step
// without an update is a space, and only the last width points are drawn.
func TestSparklines(t *testing.T) {
	p := func(u, f float64, n int) client.HistoryPoint {
		return client.HistoryPoint{Usage: u, FairShare: f, Samples: n}
	}
	for _, c := range []struct {
		pts         []client.HistoryPoint
		width       int
		usage, fair string
	}{
		{nil, 5, "", ""},
		{[]client.HistoryPoint{p(0, 0, 1)}, 5, "▁", "▁"},
		{[]client.HistoryPoint{p(0, 0.5, 1), p(0.25, 0.5, 1), p(0.5, 0.5, 1)}, 5, "▁▅█", "███"},
		{[]client.HistoryPoint{p(0.2, 0.4, 1), p(0, 0, 0), p(0.4, 0.2, 2)}, 5, "▅ █", "█ ▅"},
		{[]client.HistoryPoint{p(1, 1, 1), p(0, 1, 1), p(1, 1, 1)}, 2, "▁█", "██"},
	} {
		u, f := sparklines(c.pts, c.width)
		if u != c.usage || f != c.fair {
			t.Errorf("%+v: %q %q, want %q %q", c.pts, u, f, c.usage, c.fair)
		}
	}
}
