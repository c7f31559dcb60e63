package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// writeAlibabaTrace writes a pod list and a node list in the columns of
// Alibaba's 2023 GPU cluster trace, drawn from a seeded PCG: pods of four
// qos classes arriving over two days, whole, shared and multi-gpu pods
// with and without gpu_spec, and the phases of the real trace, including
// pods never scheduled and pods still running at its end. It returns the
// two paths and what the trace holds, counted as it was written.
func writeAlibabaTrace(t *testing.T, pods int) (podPath, nodePath string, want alibabaCounts) {
	t.Helper()
	dir := t.TempDir()
	var nodes strings.Builder
	nodes.WriteString("sn,cpu_milli,memory_mib,gpu,model\n")
	for i := range 40 {
		fmt.Fprintf(&nodes, "v100-%d,96000,393216,8,V100M32\n", i)
	}
	for i := range 20 {
		fmt.Fprintf(&nodes, "p100-%d,64000,262144,4,P100\n", i)
	}
	for i := range 10 {
		fmt.Fprintf(&nodes, "cpu-%d,64000,262144,0,\n", i)
	}
	rng := rand.New(rand.NewPCG(2023, 7))
	type pod struct {
		created float64
		line    string
	}
	var list []pod
	want.byQoS = map[string]int64{}
	for i := range pods {
		qos := []string{"LS", "LS", "LS", "LS", "BE", "BE", "BE", "Burstable", "Burstable", "Guaranteed"}[rng.IntN(10)]
		created := math.Round(rng.Float64() * 2 * 86400)
		cpu := []int{1000, 2000, 4000, 8000, 16000}[rng.IntN(5)]
		mem := cpu * 4
		gpus, milli, spec := 0, 0, ""
		switch r := rng.IntN(10); {
		case r < 5:
			gpus, milli = 1, 1000
		case r < 7:
			gpus, milli = 1, []int{250, 500}[rng.IntN(2)]
		case r < 8:
			gpus, milli = []int{2, 4, 8}[rng.IntN(3)], 1000
		}
		if gpus > 0 {
			spec = []string{"", "", "V100M32", "P100|V100M32"}[rng.IntN(4)]
		}
		phase := "Succeeded"
		sched := created + math.Round(rng.ExpFloat64()*30)
		run := math.Max(1, math.Round(math.Exp(rng.NormFloat64()+6.4)))
		schedS, delS := ftoa(sched), ftoa(sched+run)
		switch r := rng.IntN(100); {
		case r < 5:
			phase = "Failed"
		case r < 7:
			phase, delS = "Running", ""
		case r < 9:
			phase, schedS, delS = "Pending", "", ""
		}
		list = append(list, pod{created, fmt.Sprintf("pod-%d,%d,%d,%d,%d,%s,%s,%s,%s,%s,%s",
			i, cpu, mem, gpus, milli, spec, qos, phase, ftoa(created), delS, schedS)})
		if schedS == "" {
			want.never++
			continue
		}
		want.byQoS[qos]++
		if delS == "" {
			want.running++
		}
	}
	sort.SliceStable(list, func(a, b int) bool { return list[a].created < list[b].created })
	var b strings.Builder
	b.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	for _, p := range list {
		b.WriteString(p.line)
		b.WriteByte('\n')
	}
	podPath, nodePath = filepath.Join(dir, "pods.csv"), filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(podPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodePath, []byte(nodes.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return podPath, nodePath, want
}

type alibabaCounts struct {
	byQoS          map[string]int64
	never, running int64
}

// TestReplayAlibabaThousands replays 3,000 pods of the Alibaba GPU trace's
// format on its 70-node list with pools by qos: every scheduled pod is
// submitted to its qos pool, those never scheduled are skipped and counted,
// those running at the trace's end stay unfinished, every other completes,
// and each pool's report holds the trace's recorded waits beside the
// simulated ones, over the same pods.
func TestReplayAlibabaThousands(t *testing.T) {
	pods, nodes, want := writeAlibabaTrace(t, 3000)
	res := replay(t, pods, TraceOptions{Format: FormatAlibaba, Nodes: nodes}, "")
	tr := res.Trace
	if tr.Trace.PoolsBy != "qos" || !tr.Trace.Recorded {
		t.Errorf("pools by %q, recorded waits %v; want qos, true", tr.Trace.PoolsBy, tr.Trace.Recorded)
	}
	var skippedNever int64
	for _, s := range tr.Trace.Skipped {
		if strings.Contains(s.Reason, "never scheduled") {
			skippedNever += s.Count
		} else {
			t.Errorf("skipped %d for %q", s.Count, s.Reason)
		}
	}
	if skippedNever != want.never {
		t.Errorf("skipped %d never-scheduled pods, want %d", skippedNever, want.never)
	}
	var submitted int64
	for qos, n := range want.byQoS {
		p := pool(tr, qos)
		if p == nil {
			t.Fatalf("no pool %s in the report", qos)
		}
		submitted += n
		if p.Submitted != n {
			t.Errorf("%s: submitted %d, want %d", qos, p.Submitted, n)
		}
		if p.WaitS.Count != p.Completed || p.RecordedWaitS == nil || p.RecordedWaitS.Count != p.Completed {
			t.Errorf("%s: %d completed, %d simulated waits, recorded %+v; want both for every completed pod", qos, p.Completed, p.WaitS.Count, p.RecordedWaitS)
		}
	}
	if o := tr.Overall; o.Submitted != submitted || o.Unfinished != want.running || o.Completed != submitted-want.running {
		t.Errorf("overall: %d submitted, %d completed, %d unfinished; want %d, %d, %d",
			o.Submitted, o.Completed, o.Unfinished, submitted, submitted-want.running, want.running)
	}
	if len(tr.SkippedAtReplay) != 0 {
		t.Errorf("skipped at replay: %+v", tr.SkippedAtReplay)
	}
	if tr.Utilization["gpu"] <= 0 || tr.Utilization["cpu"] <= 0 {
		t.Errorf("utilization %v", tr.Utilization)
	}
}
