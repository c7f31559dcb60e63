package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/facade/facadetest"
	"github.com/fairsched/fairsched/loadgen"
)

// startFacade serves the real facade in process on 127.0.0.1:0, on the
// wall clock.
func startFacade(t *testing.T) string {
	t.Helper()
	return facadetest.Start(t, "", facadetest.WallClock, func(o *facade.Options) { o.Pprof = true }).URL
}

// TestEndToEnd runs a tiny bounded load through the command against the
// real server over loopback HTTP.
func TestEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"a connection per driver", nil},
		{"pipelined", []string{"--pipeline", "2"}},
		{"batched", []string{"--batch", "3"}},
		{"batched and pipelined", []string{"--batch", "4", "--pipeline", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) { endToEnd(t, tc.extra...) })
	}
}

// endToEnd plays a small bounded load against a facade on loopback and
// checks the report.
func endToEnd(t *testing.T, extra ...string) {
	target := startFacade(t)
	report := filepath.Join(t.TempDir(), "load.json")
	var stdout, stderr bytes.Buffer
	code := runLoad(context.Background(), append([]string{
		"--target", target, "--nodes", "20", "--pools", "3", "--operations", "10",
		"--duration", "5s", "--max-heartbeats", "2000", "--connections", "4",
		"--heartbeat-period", "20ms", "--job-duration", "uniform:0.05:0.3", "--min-jobs", "2", "--max-jobs", "20",
		"--sample-every", "1s", "--report", report, "--strict", "--quiet", "--label", "commit=test",
	}, extra...), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 {
		t.Fatalf("%d errors: %v", rep.Errors, rep.ErrorSamples)
	}
	if rep.Heartbeats == 0 || rep.Heartbeats > 2000 {
		t.Fatalf("%d heartbeats, want 1-2000", rep.Heartbeats)
	}
	if rep.AllocationsStarted == 0 || rep.AllocationsCompleted == 0 {
		t.Fatalf("started %d, completed %d: want both > 0", rep.AllocationsStarted, rep.AllocationsCompleted)
	}
	if rep.DurationS > 5.5 {
		t.Fatalf("ran %.1f s, want at most 5 s", rep.DurationS)
	}
	if rep.Labels["commit"] != "test" || rep.Config.Nodes != 20 || rep.Machine.Cores == 0 || rep.Machine.GoVersion == "" {
		t.Fatalf("report config, labels or machine missing: %+v %+v %+v", rep.Labels, rep.Config, rep.Machine)
	}
	if rep.LatencyMS.P50 <= 0 || rep.LatencyMS.P99 < rep.LatencyMS.P50 || rep.LatencyMS.Max < rep.LatencyMS.P999 {
		t.Fatalf("latency percentiles %+v", rep.LatencyMS)
	}
	if rep.Memory == nil || len(rep.Memory.Samples) < 2 || rep.Memory.HeapAfterGC <= 0 || rep.CPU == nil || rep.CPU.ServerS < 0 {
		t.Fatalf("memory or cpu missing: %+v %+v", rep.Memory, rep.CPU)
	}
	if !strings.Contains(stdout.String(), "heartbeats/s, 0 errors") {
		t.Fatalf("no summary on stdout")
	}
	if rep.Requests == 0 || rep.Config.Batch == 0 && rep.Requests != rep.Heartbeats || rep.Config.Batch > 0 && rep.Requests >= rep.Heartbeats {
		t.Fatalf("%d requests for %d heartbeats in batches of %d", rep.Requests, rep.Heartbeats, rep.Config.Batch)
	}
	if want := "per heartbeat"; rep.Config.Batch > 0 {
		if want = "per batch of up to"; !strings.Contains(rep.LatencyOf, want) || !strings.Contains(stdout.String(), "latency ms (per batch of up to") {
			t.Fatalf("the report does not say that latency is per batch: %q", rep.LatencyOf)
		}
	} else if !strings.Contains(rep.LatencyOf, want) {
		t.Fatalf("latency of %q", rep.LatencyOf)
	}
}

func TestUsageErrors(t *testing.T) {
	f := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runLoad(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("loadgen %v: exit %d, want 2\n%s", args, code, stderr.String())
		}
	}
	f("--target", "http://10.0.0.1:8080")
	f("--target", "http://example.com:8080")
	f("--target", "http://192.168.0.1:80", "--nodes", "1")
	f("--serve", "bin/fairsched", "--inprocess")
	f("--nodes", "0")
	f("--connections", "4", "--pipeline", "5")
	f("--pipeline", "-1")
	f("--batch", "-1")
	f("--batch", "65537")
	f("--job-duration", "uniform:9:1")
	f("extra")
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, hbs float64) {
		b, _ := json.Marshal(loadgen.Report{HeartbeatsPerS: hbs, LatencyMS: loadgen.Latency{P50: 1, P99: 2}, CPU: &loadgen.CPUUse{ServerUSPerHB: 1e6 / hbs}})
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a-1.json", 100)
	write("a-2.json", 300)
	write("a-3.json", 200)
	write("b-1.json", 220)
	write("b-2.json", 240)
	write("b-3.json", 260)
	var stdout, stderr bytes.Buffer
	code := run([]string{"compare", "--a", filepath.Join(dir, "a-*.json"), "--b", filepath.Join(dir, "b-*.json"), "--names", "nopgo,pgo"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "| heartbeats/s | 200.0 (100.0–300.0) | 240.0 (220.0–260.0) | 1.200 |") {
		t.Fatalf("table:\n%s", stdout.String())
	}
}

// TestSecondRunIsHonest: a second load against a server that still holds
// the first one's operations refuses to run and says why; with --reset it
// aborts them and runs.
func TestSecondRunIsHonest(t *testing.T) {
	target := startFacade(t)
	args := []string{"--target", target, "--nodes", "6", "--pools", "2", "--operations", "4",
		"--duration", "3s", "--max-heartbeats", "300", "--connections", "2", "--heartbeat-period", "20ms",
		"--job-duration", "fixed:3600", "--min-jobs", "50", "--max-jobs", "60", "--quiet"}
	var stdout, stderr bytes.Buffer
	if code := runLoad(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	code := runLoad(context.Background(), args, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "earlier load") || !strings.Contains(stderr.String(), "--reset") {
		t.Fatalf("second run without --reset: exit %d\n%s", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := runLoad(context.Background(), append(args, "--reset"), &stdout, &stderr); code != 0 {
		t.Fatalf("second run with --reset: exit %d\n%s", code, stderr.String())
	}
}

// TestRunThatStartsNothingFails: a run that starts no allocation exits 3
// and says that nothing was measured.
func TestRunThatStartsNothingFails(t *testing.T) {
	target := startFacade(t)
	// No operation may run: every start is pending, nothing is scheduled.
	req, err := http.NewRequest("PATCH", target+"/api/v1/config", strings.NewReader(`{"max_running_operation_count": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PATCH /api/v1/config: %v %v", resp, err)
	}
	resp.Body.Close()
	var stdout, stderr bytes.Buffer
	code := runLoad(context.Background(), []string{"--target", target, "--nodes", "4", "--pools", "1", "--operations", "2",
		"--duration", "1s", "--max-heartbeats", "100", "--connections", "2", "--heartbeat-period", "10ms",
		"--quiet"}, &stdout, &stderr)
	if code != 3 || !strings.Contains(stderr.String(), "started no allocation") {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
}
