package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairsched/fairsched/kube/internal/kubetest"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{[]string{"--scheduler=kube-scheduler"}, ""},
		{[]string{"--scheduler=volcano"}, "--scheduler"},
		{[]string{"--scheduler=kube-scheduler", "--nodes=0"}, "--nodes"},
		{[]string{"--scheduler=kube-scheduler", "--pods=5", "--pools=10"}, "--pods"},
		{[]string{"--scheduler=kube-scheduler", "--job-share=1.5"}, "--job-share"},
		{[]string{"--scheduler=kube-scheduler", "--pod-cpu=lots"}, "--pod-cpu"},
		{[]string{"--scheduler=kube-scheduler", "extra"}, "unexpected argument"},
		{[]string{"--scheduler=kube-scheduler", "--runs=0"}, "--runs"},
		{[]string{"--scheduler=kube-scheduler", "--client-qps=0"}, "--client-qps"},
		{[]string{"--scheduler=kube-scheduler", "--create-rate=-1"}, "--create-rate"},
		{[]string{"--scheduler=kube-scheduler", "--starvation-tolerance=1.5"}, "--starvation-tolerance"},
		{[]string{"--scheduler=kube-scheduler", "--starvation-tolerance=-0.1"}, "--starvation-tolerance"},
		{[]string{"--scheduler=kube-scheduler", "--starvation-tolerance=0.95"}, ""},
		{[]string{"--scheduler=kube-scheduler", "--create-rate=150", "--backlog"}, ""},
		{[]string{"--scheduler=kube-scheduler", "--contended", "--nodes=10", "--node-cpu=4", "--pods=40"}, "--contended"},
		{[]string{"--scheduler=kube-scheduler", "--contended", "--nodes=10", "--node-cpu=4", "--pods=41"}, ""},
		{[]string{"--scheduler=kube-scheduler", "--contended", "--nodes=10", "--node-memory=2Gi", "--pods=21"}, ""},
		{[]string{"--scheduler=kube-scheduler", "--contended", "--nodes=10", "--node-memory=2Gi", "--pods=20"}, "hold 20"},
	} {
		_, err := parseFlags(tc.args)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := make([]int, 100)
	for i := range d {
		d[i] = i + 1
	}
	for _, tc := range []struct {
		p    float64
		want int
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}} {
		ds := durations(d)
		if got := percentile(ds, tc.p); got != ds[tc.want-1] {
			t.Errorf("p%v = %v, want %v", tc.p, got, ds[tc.want-1])
		}
	}
}

func TestSummary(t *testing.T) {
	gap := func(g float64) *Gap { return &Gap{MaxRel: g} }
	rs := []Result{
		{Scheduler: "kube-scheduler", PodsPerSecond: 10, P99Ms: 300},
		{Scheduler: "fairsched", PodsPerSecond: 30, P99Ms: 100, Gap: gap(0.01)},
		{Scheduler: "fairsched", PodsPerSecond: 20, P99Ms: 900, Gap: gap(0.03)},
		{Scheduler: "kube-scheduler", PodsPerSecond: 14, P99Ms: 100},
		{Scheduler: "fairsched", PodsPerSecond: 25, P99Ms: 200, Gap: gap(0.02)},
	}
	got := summarize(rs)
	if len(got) != 2 || got[0].Scheduler != "kube-scheduler" || got[1].Scheduler != "fairsched" {
		t.Fatalf("summary = %+v", got)
	}
	k, f := got[0], got[1]
	if k.Runs != 2 || k.PodsPerSecond != [3]float64{12, 10, 14} || k.P99Ms != [3]float64{200, 100, 300} || k.GapRel != nil {
		t.Errorf("kube-scheduler = %+v, want the mean of the two middle values as the median", k)
	}
	if f.Runs != 3 || f.PodsPerSecond != [3]float64{25, 20, 30} || f.P99Ms != [3]float64{200, 100, 900} ||
		f.GapRel == nil || *f.GapRel != [3]float64{0.02, 0.01, 0.03} {
		t.Errorf("fairsched = %+v, gap %v", f, f.GapRel)
	}
	cfg := &config{scheduler: "both"}
	if a, b := cfg.schedulers(0), cfg.schedulers(1); a[0] != "kube-scheduler" || b[0] != "fairsched" || len(a) != 2 {
		t.Errorf("run orders %v, %v: want them alternated", a, b)
	}
}

// TestSmallRun runs the benchmark at a small scale end to end: against
// kube-scheduler always, and against fairsched when fairsched-kube's
// command is in the module; each side twice, alternated, with pods
// created while the scheduler runs, and once with a backlog made before
// it starts (fairsched's server then configured with a starvation
// tolerance).
func TestSmallRun(t *testing.T) {
	kubetest.Require(t)
	t.Run("streaming", func(t *testing.T) { smallRun(t, 2) })
	t.Run("backlog", func(t *testing.T) { smallRun(t, 1, "--backlog", "--starvation-tolerance=0.9") })
}

func smallRun(t *testing.T, runs int, extra ...string) {
	dir := t.TempDir()
	report := filepath.Join(dir, "report.json")
	args := append([]string{"--nodes=4", "--pods=60", "--pools=3", "--job-parallelism=10", "--report=" + report,
		"--settle=5s", fmt.Sprintf("--runs=%d", runs)}, extra...)
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kube-scheduler", "kube-scheduler"}
	if _, err := os.Stat(filepath.Join(root, "kube", "cmd", "fairsched-kube")); err == nil {
		build(t, root, filepath.Join(dir, "fairsched"), "./cmd/fairsched")
		build(t, filepath.Join(root, "kube"), filepath.Join(dir, "fairsched-kube"), "./cmd/fairsched-kube")
		args = append(args, "--scheduler=both", "--fairsched-bin="+filepath.Join(dir, "fairsched"), "--fairsched-kube-bin="+filepath.Join(dir, "fairsched-kube"))
		want = []string{"kube-scheduler", "fairsched", "fairsched", "kube-scheduler"} // alternated
	} else {
		t.Logf("no kube/cmd/fairsched-kube: the kube-scheduler side only")
		args = append(args, "--scheduler=kube-scheduler")
	}
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	want = want[:len(want)*runs/2]
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(rep.Results), len(want), rep.Results)
	}
	if len(rep.Summary) != len(want)/runs || rep.Summary[0].Runs != runs {
		t.Errorf("summary %+v, want each scheduler's %d runs", rep.Summary, runs)
	}
	for i, r := range rep.Results {
		if r.Scheduler != want[i] || r.Pods != 60 || r.PodsPerSecond <= 0 || r.P50Ms > r.P99Ms || r.P99Ms > r.MaxMs || r.Nodes < 1 || r.Nodes > 4 {
			t.Errorf("result %d: %+v", i, r)
		}
		if (r.Scheduler == "fairsched") != (r.Gap != nil) {
			t.Errorf("%s: fair-share gap %+v", r.Scheduler, r.Gap)
		}
		if r.Gap != nil && len(r.Gap.Pools) != 3 {
			t.Errorf("%s: the gap covers %d pools, want 3", r.Scheduler, len(r.Gap.Pools))
		}
	}
}

func build(t *testing.T, dir, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func durations(ms []int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}
