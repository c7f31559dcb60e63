package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const smallScenario = `{
  "name": "small", "duration_s": 1800, "warm_up_s": 3600,
  "cluster": {"nodes": [{"count": 4, "resources": {"cpu": 8, "memory": 17179869184}}]},
  "tree": {"children": [
    {"pool": "burst", "integral_guarantees": {"guarantee_type": "burst", "resource_flow": {"cpu": 4}, "burst_guarantee_resources": {"cpu": 16}}},
    {"pool": "batch"}]},
  "workload": [
    {"name": "b", "pool": "burst", "tasks": [{"job_count": 200, "resources": {"cpu": 1}, "duration": {"distribution": "exponential", "mean_s": 120}}], "arrivals": {"at_s": [600]}},
    {"name": "x", "pool": "batch", "tasks": [{"job_count": 300, "resources": {"cpu": 1}, "duration": {"distribution": "uniform", "min_s": 60, "max_s": 300}}], "arrivals": {"concurrent": 2}}]
}`

func TestSimulate(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.json")
	if err := os.WriteFile(scenario, []byte(smallScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	// SCENARIO before the flags, as the issue writes it.
	code, stdout, stderr := call("", "simulate", scenario, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "simulated 30m0s of 4 nodes") {
		t.Errorf("stdout %q", stdout)
	}
	for _, f := range []string{"timeseries.csv", "workloads.csv", "summary.json", "cluster-usage.svg", "cluster-usage.png",
		"pool-burst-usage.svg", "pool-burst-usage.png", "pool-burst-volume.svg", "pool-burst-volume.png", "pool-batch-usage.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing output: %v", err)
		}
	}
	ts, _ := os.ReadFile(filepath.Join(out, "timeseries.csv"))
	if !strings.HasPrefix(string(ts), "time_s,pool,usage_cpu,demand_cpu,fair_share_cpu,strong_guarantee_cpu,integral_guarantee_cpu,"+
		"weight_proportional_cpu,accumulated_volume_cpu,running_operations,pending_operations,starvation_status,") {
		t.Errorf("timeseries header: %.200s", ts)
	}
	// The fairness error: burst waits for its guarantee while batch holds
	// the cluster, so the integral is positive, and the same in
	// summary.json as on stdout.
	var sum struct {
		Mean     *float64 `json:"fairness_error_mean"`
		Integral *float64 `json:"fairness_error_integral"`
	}
	sj, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(sj, &sum); err != nil || sum.Mean == nil || sum.Integral == nil || *sum.Integral <= 0 || *sum.Mean <= 0 {
		t.Errorf("summary.json's fairness error: %v %s", err, sj[:min(len(sj), 400)])
	} else if want := fmt.Sprintf("fairness error: mean %.4f, integral %.1f share·s", *sum.Mean, *sum.Integral); !strings.Contains(stdout, want) {
		t.Errorf("stdout %q lacks %q", stdout, want)
	}
	// Flags first and the scenario from stdin work too.
	if code, _, stderr := call(smallScenario, "simulate", "--out", filepath.Join(dir, "out2"), "--seed", "3", "-"); code != 0 {
		t.Errorf("stdin: exit %d, stderr %s", code, stderr)
	}
}

func TestSimulateErrors(t *testing.T) {
	dir := t.TempDir()
	f := func(scenario string, args []string, wantCode int, wantStderr string) {
		t.Helper()
		name := filepath.Join(dir, "s.json")
		if err := os.WriteFile(name, []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		full := append([]string{"simulate"}, args...)
		for i, a := range full {
			if a == "SCENARIO" {
				full[i] = name
			}
		}
		code, _, stderr := call("", full...)
		if code != wantCode || !strings.Contains(stderr, wantStderr) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d, stderr with %q", args, code, stderr, wantCode, wantStderr)
		}
	}
	out := filepath.Join(dir, "out")
	f(smallScenario, []string{"SCENARIO"}, 2, "want --out DIR")
	f(smallScenario, []string{"--out", out}, 2, "want exactly one SCENARIO")
	f(smallScenario, []string{"SCENARIO", "other", "--out", out}, 2, "want exactly one SCENARIO")
	f(strings.Replace(smallScenario, `"mean_s": 120`, `"mean_s": -120`, 1), []string{"SCENARIO", "--out", out}, 2,
		"fairsched simulate: $.workload[0].tasks[0].duration.mean_s: cannot use -120")
	f(`{"duration_s": 1`, []string{"SCENARIO", "--out", out}, 2, "fairsched simulate: $: cannot parse JSON")
	f(smallScenario, []string{filepath.Join(dir, "missing.json"), "--out", out}, 1, "cannot read the scenario")
}

func traceFile(name string) string { return filepath.Join("..", "..", "testdata", "traces", name) }

// TestSimulateTrace drives a trace replay and an A/B comparison from the
// command line.
func TestSimulateTrace(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "swf")
	code, stdout, stderr := call("", "simulate", "--trace", traceFile("small.swf"), "--trace-format", "swf", "--pools-by", "user",
		"--config", traceFile("config.json"), "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"19 lines", "5 jobs in 3 pools (by user)", "skipped 1: run time unknown (-1)",
		"replayed 5 jobs under config.json", "s of wall time", "overall", "user-unknown", "rec p50"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"report.json", "pools.csv", "fairness.csv", "summary.json", "timeseries.csv", "fairness-error.png", "utilization.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing output: %v", err)
		}
	}
	code, stdout, stderr = call("", "simulate", "--trace", traceFile("pods.csv"), "--trace-format", "alibaba-gpu-2023",
		"--trace-nodes", traceFile("nodes.csv"), "--out", filepath.Join(dir, "pods"))
	if code != 0 || !strings.Contains(stdout, "4 jobs in 3 pools (by qos)") || !strings.Contains(stdout, "skipped 1: never scheduled") {
		t.Errorf("alibaba: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	ab := filepath.Join(dir, "ab")
	code, stdout, stderr = call("", "simulate", "--trace", traceFile("small.swf"), "--trace-format", "swf",
		"--config", traceFile("config.json"), "--compare", traceFile("config-b.json"), "--out", ab)
	if code != 0 || !strings.Contains(stdout, "B: config-b.json") || !strings.Contains(stdout, "fairness_error_integral") {
		t.Fatalf("compare: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	for _, f := range []string{"a/report.json", "b/report.json", "compare.json", "compare.csv", "compare-waits.png", "compare-fairness-error.svg"} {
		if _, err := os.Stat(filepath.Join(ab, f)); err != nil {
			t.Errorf("missing output: %v", err)
		}
	}
}

func TestSimulateTraceErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.swf")
	os.WriteFile(bad, []byte("; MaxProcs: 4\n1 0 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n2 0 -1 x 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n"), 0o644)
	badConfig := filepath.Join(dir, "c.json")
	os.WriteFile(badConfig, []byte(`{"pools": {"user-7": "nowhere"}}`), 0o644)
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--trace", bad, "--trace-format", "swf", "--out", out}, 2, "bad.swf:line 3: field 4 (run time): cannot use \"x\": want a number"},
		{[]string{"--trace", traceFile("small.swf"), "--trace-format", "swf", "--config", badConfig, "--out", out}, 2, `$.pools["user-7"]: cannot find pool "nowhere"`},
		{[]string{"--trace", traceFile("small.swf"), "--out", out}, 2, "want --trace-format"},
		{[]string{"--trace", traceFile("small.swf"), "--trace-format", "csv", "--out", out}, 2, `cannot read trace format "csv"`},
		{[]string{"--trace", traceFile("pods.csv"), "--trace-format", "alibaba-gpu-2023", "--out", out}, 2, "want --trace-nodes FILE"},
		{[]string{"--trace", traceFile("small.swf"), "--trace-format", "swf"}, 2, "want --out DIR"},
		{[]string{"x.json", "--trace", traceFile("small.swf"), "--trace-format", "swf", "--out", out}, 2, "cannot use SCENARIO"},
		{[]string{"--trace-format", "swf", "--out", out}, 2, "want --trace FILE"},
		{[]string{"--trace", filepath.Join(dir, "missing.swf"), "--trace-format", "swf", "--out", out}, 1, "cannot open the trace"},
	} {
		code, _, stderr := call("", append([]string{"simulate"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
