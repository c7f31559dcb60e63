package main

import (
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
