package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// realTraces is the directory of real workload traces the end-to-end tests
// replay: $FAIRSCHED_TRACES, or by default the first directory
// "shared/traces" beside the module's root or one of its ancestors (the
// team's checkouts keep it there; a user's has none, and the tests skip).
func realTraces(t testing.TB) string {
	dir := os.Getenv("FAIRSCHED_TRACES")
	if dir == "" {
		root, err := filepath.Abs("..")
		if err != nil {
			t.Fatal(err)
		}
		for d := filepath.Dir(root); ; d = filepath.Dir(d) {
			dir = filepath.Join(d, "shared", "traces")
			if _, err := os.Stat(dir); err == nil || d == filepath.Dir(d) {
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, nasaLog)); err != nil {
		t.Skipf("skipped: no real traces (%s not found; set FAIRSCHED_TRACES to the directory holding it)", filepath.Join(dir, nasaLog))
	}
	return dir
}

// nasaLog is the NASA Ames iPSC/860 log of the Parallel Workloads Archive.
const nasaLog = "NASA-iPSC-1993-3.1-cln.swf.gz"

func BenchmarkTraceNASA(b *testing.B) {
	path := filepath.Join(realTraces(b), nasaLog)
	for b.Loop() {
		src, err := OpenTrace(path, TraceOptions{Format: FormatSWF})
		if err != nil {
			b.Fatal(err)
		}
		c, _ := DecodeTraceConfig(nil)
		sc, err := TraceScenario(src, c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(sc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReplayNASA replays the NASA Ames iPSC/860 log (Parallel Workloads
// Archive) whole, by user: every one of its 18,239 jobs is replayed and
// completes, none skipped.
func TestReplayNASA(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: replays three months of a real log")
	}
	res := replay(t, filepath.Join(realTraces(t), nasaLog), TraceOptions{Format: FormatSWF, PoolsBy: "user"}, "")
	tr := res.Trace
	if tr.Trace.Jobs != 18239 || len(tr.Trace.Skipped) != 0 || len(tr.SkippedAtReplay) != 0 ||
		tr.Overall.Submitted != 18239 || tr.Overall.Completed != 18239 {
		t.Errorf("trace %+v overall %+v skipped %+v", tr.Trace, tr.Overall, tr.SkippedAtReplay)
	}
	// 128 processors, three months (Oct-Dec 1993).
	if res.Run.Nodes != 128 || tr.SimulatedS < 85*86400 || tr.SimulatedS > 95*86400 || len(tr.Trace.Pools) < 50 {
		t.Errorf("nodes %d, simulated %v s, %d pools", res.Run.Nodes, tr.SimulatedS, len(tr.Trace.Pools))
	}
	if u := tr.Utilization["cpu"]; u < 0.2 || u > 0.9 {
		t.Errorf("utilization %v", u)
	}
}
