package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

const swfHeader = "; MaxProcs: 8\n; MaxNodes: 4\n; Queue: 1 batch\n"

// readAll reads every job of a reader, or the first error.
func readAll(r TraceReader) ([]TraceJob, error) {
	var out []TraceJob
	for {
		j, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, j)
	}
}

func cpuJob() resource.Vec {
	var v resource.Vec
	v[resource.CPU] = resource.CPUScale
	v[resource.UserSlots] = 1
	return v
}

// TestSWFConversion: how an swf line becomes an operation (or is skipped).
func TestSWFConversion(t *testing.T) {
	for _, c := range []struct {
		name, line string
		opts       TraceOptions
		want       TraceJob // compared on the fields below
		skip       string
	}{
		{name: "allocated processors are the job count; a gang", line: "1 10 5 100 4 -1 -1 2 -1 -1 1 7 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "1", SubmitS: 10, RunS: 100, Jobs: 4, Pool: "user-7", Gang: true, RecordedWaitS: 5}},
		{name: "requested processors when the allocation is unknown", line: "2 10 -1 100 -1 -1 -1 3 -1 -1 1 7 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "2", SubmitS: 10, RunS: 100, Jobs: 3, Pool: "user-7", Gang: true, RecordedWaitS: -1}},
		{name: "one processor is never a gang", line: "3 0 -1 1.5 1 -1 -1 -1 -1 -1 0 7 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "3", SubmitS: 0, RunS: 1.5, Jobs: 1, Pool: "user-7", RecordedWaitS: -1}},
		{name: "--no-gang", opts: TraceOptions{NoGang: true}, line: "4 0 -1 9 8 -1 -1 -1 -1 -1 0 7 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "4", RunS: 9, Jobs: 8, Pool: "user-7", RecordedWaitS: -1}},
		{name: "pools by group", opts: TraceOptions{PoolsBy: "group"}, line: "5 0 -1 9 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "5", RunS: 9, Jobs: 1, Pool: "group-2", RecordedWaitS: -1}},
		{name: "pools by queue take the header's name", opts: TraceOptions{PoolsBy: "queue"}, line: "6 0 -1 9 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "6", RunS: 9, Jobs: 1, Pool: "queue-batch", RecordedWaitS: -1}},
		{name: "a queue without a name", opts: TraceOptions{PoolsBy: "queue"}, line: "7 0 -1 9 1 -1 -1 -1 -1 -1 1 7 2 -1 3 -1 -1 -1",
			want: TraceJob{ID: "7", RunS: 9, Jobs: 1, Pool: "queue-3", RecordedWaitS: -1}},
		{name: "an unknown user", line: "8 0 -1 0 1 -1 -1 -1 -1 -1 1 -1 2 -1 1 -1 -1 -1",
			want: TraceJob{ID: "8", RunS: 0, Jobs: 1, Pool: "user-unknown", RecordedWaitS: -1}},
		{name: "unknown run time", line: "9 0 -1 -1 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1", skip: "run time unknown (-1)"},
		{name: "unknown submit time", line: "10 -1 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1", skip: "submit time unknown (-1)"},
		{name: "no processors", line: "11 0 -1 5 0 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1", skip: "processors unknown or 0 (allocated and requested)"},
		{name: "larger than the machine", line: "12 0 -1 5 9 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1", skip: "more processors than MaxProcs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewSWFReader(strings.NewReader(swfHeader+c.line+"\n"), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				if len(jobs) != 0 || len(r.Skipped()) != 1 || r.Skipped()[0] != (SkipCount{c.skip, 1}) {
					t.Fatalf("jobs %+v, skipped %+v; want skipped %q", jobs, r.Skipped(), c.skip)
				}
				return
			}
			if len(jobs) != 1 {
				t.Fatalf("jobs %+v, skipped %+v", jobs, r.Skipped())
			}
			j := jobs[0]
			c.want.Line = 4
			c.want.Resources = cpuJob()
			if j.Line != c.want.Line || j.ID != c.want.ID || j.SubmitS != c.want.SubmitS || j.RunS != c.want.RunS || j.Jobs != c.want.Jobs ||
				j.Pool != c.want.Pool || j.Gang != c.want.Gang || j.RecordedWaitS != c.want.RecordedWaitS || j.Resources != c.want.Resources || j.Forever {
				t.Errorf("got %+v\nwant %+v", j, c.want)
			}
		})
	}
}

// TestSWFHeader: the cluster comes from MaxNodes and MaxProcs.
func TestSWFHeader(t *testing.T) {
	for _, c := range []struct {
		header      string
		nodes       int
		cpu         int64
		errContains string
	}{
		{"; MaxProcs: 128\n; MaxNodes: 128\n", 128, 1, ""},
		{"; MaxProcs: 128\n; MaxNodes: 32\n", 32, 4, ""},
		{"; MaxProcs: 10\n; MaxNodes: 4\n", 10, 1, ""}, // they do not divide: a node a processor
		{"; MaxProcs: 16\n", 16, 1, ""},
		{"; MaxNodes: 6\n", 6, 1, ""},
		{"; Computer: none\n", 0, 0, "neither MaxProcs nor MaxNodes"},
	} {
		r, err := NewSWFReader(strings.NewReader(c.header), TraceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := r.Header.cluster()
		if c.errContains != "" {
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%q: err %v, want %q", c.header, err, c.errContains)
			}
			continue
		}
		if err != nil || len(g) != 1 || g[0].Count != c.nodes || g[0].Resources[resource.CPU] != c.cpu*resource.CPUScale ||
			g[0].Resources[resource.UserSlots] != c.cpu {
			t.Errorf("%q: %+v, %v; want %d nodes of %d cpu", c.header, g, err, c.nodes, c.cpu)
		}
	}
}

// TestTraceErrors: a malformed line is an error naming its line and field.
func TestTraceErrors(t *testing.T) {
	ok := "1 0 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1"
	for _, c := range []struct{ trace, want string }{
		{swfHeader + ok + "\n2 0 -1 x 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n", `line 5: field 4 (run time): cannot use "x": want a number`},
		{swfHeader + "1 0 -1 5 1.5 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n", `line 4: field 5 (allocated processors): cannot use "1.5": want a whole number`},
		{swfHeader + "1 0 -1 5 -2 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n", `line 4: field 5 (allocated processors): cannot use "-2": want -1 (unknown) or a number ≥ 0`},
		{swfHeader + "1 0 -1 5 1 -1 -1 -1 -1 -1 1 7 2\n", `line 4: field 14 (executable number): cannot find it: want 18 fields, found 13`},
		{swfHeader + ok + " 7\n", `line 4: cannot use more than 18 fields`},
		{swfHeader + "1 0 -1 5 1 -1 -1 -1 -1 -1 9 7 2 -1 1 -1 -1 -1\n", `line 4: field 11 (status): cannot use 9: want -1 or 0 to 5`},
		{swfHeader + "-1 0 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n", `line 4: field 1 (job number): cannot use -1`},
		{swfHeader + "1 0 -1 NaN 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n", `line 4: field 4 (run time): cannot use "NaN"`},
		{"; MaxProcs: lots\n", `line 1: header MaxProcs: cannot use "lots"`},
	} {
		r, err := NewSWFReader(strings.NewReader(c.trace), TraceOptions{})
		if err == nil {
			_, err = readAll(r)
		}
		var te *TraceError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.trace, err, c.want)
		}
	}
	head := strings.Join(alibabaPodColumns, ",") + "\n"
	row := func(fields ...string) string {
		base := []string{"p", "1000", "1024", "1", "1000", "", "LS", "Succeeded", "10", "100", "20"}
		for i := 0; i+1 < len(fields); i += 2 {
			for k, c := range alibabaPodColumns {
				if c == fields[i] {
					base[k] = fields[i+1]
				}
			}
		}
		return strings.Join(base, ",") + "\n"
	}
	for _, c := range []struct{ trace, want string }{
		{head + row() + row("cpu_milli", "lots"), `line 3: column cpu_milli: cannot use "lots": want a number`},
		{head + row("cpu_milli", "1.5"), `line 2: column cpu_milli: cannot use "1.5": want a whole number`},
		{head + row("memory_mib", "-1"), `line 2: column memory_mib: cannot use "-1"`},
		{head + row("gpu_milli", "1200"), `line 2: column gpu_milli: cannot use "1200"`},
		{head + row("num_gpu", "0", "gpu_milli", "500"), `line 2: column gpu_milli: cannot use "500": want 0 for a pod without gpus`},
		{head + row("gpu_spec", "V100 & P100"), `line 2: column gpu_spec`},
		{head + row("qos", "a b"), `line 2: column qos: cannot use "a b"`},
		{head + row("pod_phase", "Done"), `line 2: column pod_phase: cannot use "Done"`},
		{head + row("creation_time", ""), `line 2: column creation_time: cannot use ""`},
		{head + row("scheduled_time", "5"), `line 2: column scheduled_time: cannot use "5": want a time at or after creation_time (10)`},
		{head + row("deletion_time", "15"), `line 2: column deletion_time: cannot use "15": want a time at or after scheduled_time (20)`},
		{head + row("deletion_time", "5"), `line 2: column deletion_time: cannot use "5": want a time at or after creation_time (10)`},
		{head + row("name", ""), `line 2: column name`},
		{head + "p,1\n", `line 2: column`},
		{"name,cpu_milli\n", `line 1: column memory_mib: cannot find it in the header`},
		{"", `line 1: cannot find the header row`},
		{head + "\"p,1\n", `line 2`},
	} {
		r, err := NewAlibabaReader(strings.NewReader(c.trace), TraceOptions{})
		if err == nil {
			_, err = readAll(r)
		}
		var te *TraceError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.trace, err, c.want)
		}
	}
	for _, c := range []struct{ nodes, want string }{
		{"sn,cpu_milli,memory_mib,gpu,model\nn,x,1,1,A\n", `line 2: column cpu_milli: cannot use "x"`},
		{"sn,cpu_milli,memory_mib,gpu,model\nn,1000,1,1,A B\n", `line 2: column model`},
		{"sn,cpu_milli,memory_mib,gpu,model\n,1000,1,1,A\n", `line 2: column sn`},
		{"sn,cpu_milli,memory_mib,gpu,model\n", `cannot replay on an empty node list`},
		{"sn,cpu_milli,gpu,model\n", `line 1: column memory_mib: cannot find it`},
	} {
		_, _, err := readAlibabaNodeList(strings.NewReader(c.nodes))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.nodes, err, c.want)
		}
	}
}

// TestAlibabaConversion: how a pod becomes an operation (or is skipped).
func TestAlibabaConversion(t *testing.T) {
	nodes, tags, err := readAlibabaNodes(filepath.Join("..", "testdata", "traces", "nodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// Two V100M32 nodes are one group; the P100 and the cpu-only node are
	// their own.
	if len(nodes) != 3 || nodes[0].Count != 2 || tags[0][0] != "V100M32" || tags[1][0] != "P100" || tags[2] != nil ||
		nodes[0].Resources[resource.CPU] != 32*resource.CPUScale || nodes[0].Resources[resource.Memory] != 65536<<20 || nodes[0].Resources[resource.GPU] != 2 {
		t.Fatalf("nodes %+v tags %q", nodes, tags)
	}
	head := strings.Join(alibabaPodColumns, ",") + "\n"
	for _, c := range []struct {
		name, row string
		cpu, mem  int64
		gpu       int64
		run, wait float64
		forever   bool
		filter    string
		skip      string
	}{
		{name: "a whole gpu", row: "a,4000,8192,1,1000,,LS,Succeeded,0,300,10", cpu: 400, mem: 8192 << 20, gpu: 1, run: 290, wait: 10},
		{name: "a shared gpu takes a whole one", row: "a,2000,1024,1,500,,BE,Succeeded,5,200,20", cpu: 200, mem: 1024 << 20, gpu: 1, run: 180, wait: 15},
		{name: "milli-cores round up to centi-cores", row: "a,1001,1,0,0,,BE,Succeeded,5,6,5", cpu: 101, mem: 1 << 20, run: 1, wait: 0},
		{name: "gpu_spec selects models", row: "a,1000,1,2,1000,P100|V100M32,LS,Failed,0,10,0", cpu: 100, mem: 1 << 20, gpu: 2, run: 10, filter: "P100 | V100M32"},
		{name: "still running at the end", row: "a,1000,1,0,0,,LS,Running,0,,3", cpu: 100, mem: 1 << 20, forever: true, wait: 3},
		{name: "never scheduled", row: "a,1000,1,0,0,,LS,Pending,0,,", skip: "never scheduled (no scheduled_time)"},
		{name: "too large", row: "a,64000,1,0,0,,LS,Succeeded,0,1,0", skip: "larger than every node"},
		{name: "no node of its model", row: "a,1000,1,1,1000,T4,LS,Succeeded,0,1,0", skip: "no node of the gpu_spec's models is large enough"},
		{name: "too many gpus for its model", row: "a,1000,1,3,1000,V100M32,LS,Succeeded,0,1,0", skip: "no node of the gpu_spec's models is large enough"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewAlibabaReader(strings.NewReader(head+c.row+"\n"), TraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := readAll(r.withNodes(nodes, tags))
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				if len(jobs) != 0 || len(r.Skipped()) != 1 || r.Skipped()[0].Reason != c.skip {
					t.Fatalf("jobs %+v skipped %+v, want %q", jobs, r.Skipped(), c.skip)
				}
				return
			}
			if len(jobs) != 1 {
				t.Fatalf("jobs %+v skipped %+v", jobs, r.Skipped())
			}
			j := jobs[0]
			if j.Line != 2 || j.Jobs != 1 || j.Resources[resource.CPU] != c.cpu || j.Resources[resource.Memory] != c.mem ||
				j.Resources[resource.GPU] != c.gpu || j.Resources[resource.UserSlots] != 1 || j.RunS != c.run ||
				j.RecordedWaitS != c.wait || j.Forever != c.forever || j.Filter.String() != c.filter || j.Gang {
				t.Errorf("got %+v (filter %q)", j, j.Filter.String())
			}
		})
	}
}

func replay(t testing.TB, path string, opts TraceOptions, config string) *Result {
	t.Helper()
	src, err := OpenTrace(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	if config != "" {
		if data, err = os.ReadFile(config); err != nil {
			t.Fatal(err)
		}
	}
	c, err := DecodeTraceConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := TraceScenario(src, c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var (
	smallSWF  = filepath.Join("..", "testdata", "traces", "small.swf")
	smallPods = filepath.Join("..", "testdata", "traces", "pods.csv")
	smallNode = filepath.Join("..", "testdata", "traces", "nodes.csv")
	configA   = filepath.Join("..", "testdata", "traces", "config.json")
	configB   = filepath.Join("..", "testdata", "traces", "config-b.json")
)

func pool(tr *TraceReport, name string) *PoolReport {
	for i := range tr.Pools {
		if tr.Pools[i].Pool == name {
			return &tr.Pools[i]
		}
	}
	return nil
}

// TestReplaySWF replays the synthetic swf trace under a config that groups
// its pools and checks the report's accounting.
func TestReplaySWF(t *testing.T) {
	res := replay(t, smallSWF, TraceOptions{Format: FormatSWF}, configA)
	tr := res.Trace
	want := []SkipCount{{"run time unknown (-1)", 1}, {"processors unknown or 0 (allocated and requested)", 1},
		{"more processors than MaxProcs", 1}, {"submit time unknown (-1)", 1}}
	if got, _ := json.Marshal(tr.Trace.Skipped); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("skipped %s", got)
	}
	if tr.Trace.Jobs != 5 || tr.Overall.Submitted != 5 || tr.Overall.Completed != 5 || tr.Overall.Unfinished != 0 {
		t.Errorf("overall %+v", tr.Overall)
	}
	// user-2 goes under staff (config "pools"), user-1 is the tree's own,
	// user-unknown under users (default_parent).
	for name, parent := range map[string]string{"user-2": "staff", "user-1": "users", "user-unknown": "users", "staff": tree.RootName} {
		if p := pool(tr, name); p == nil || p.Parent != parent {
			t.Errorf("pool %s: %+v, want parent %s", name, p, parent)
		}
	}
	if p := pool(tr, "staff"); p.Submitted != 2 || p.Completed != 2 || p.RecordedWaitS == nil || p.RecordedWaitS.Max != 5 {
		t.Errorf("staff %+v", p)
	}
	// Job 8 (8 processors, the whole machine, submitted at 60 s) waits for
	// job 2 (4 processors, 10 s to 60+) and job 1: the longest wait is
	// its, and every wait is at least the heartbeat's granularity apart.
	if tr.Overall.WaitS.Max < 30 || tr.Overall.BoundedSlowdown.Max < 1 || tr.Overall.BoundedSlowdown.Mean < 1 {
		t.Errorf("waits %+v slowdown %+v", tr.Overall.WaitS, tr.Overall.BoundedSlowdown)
	}
	if tr.Utilization["cpu"] <= 0 || tr.Utilization["cpu"] > 1 || tr.FairnessErrorIntegral < 0 || len(res.Fairness) == 0 {
		t.Errorf("utilization %v fairness %v", tr.Utilization, tr.FairnessErrorIntegral)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestReplayAlibaba: pods by qos with the recorded waits beside the
// simulated ones; a pod still running at the end never completes.
func TestReplayAlibaba(t *testing.T) {
	res := replay(t, smallPods, TraceOptions{Format: FormatAlibaba, Nodes: smallNode}, "")
	tr := res.Trace
	if tr.Overall.Submitted != 4 || tr.Overall.Completed != 3 || tr.Overall.Unfinished != 1 {
		t.Errorf("overall %+v", tr.Overall)
	}
	if p := pool(tr, "Burstable"); p == nil || p.Unfinished != 1 || p.Completed != 0 {
		t.Errorf("Burstable %+v", p)
	}
	ls := pool(tr, "LS")
	if ls == nil || ls.RecordedWaitS == nil || ls.RecordedWaitS.Count != 2 || ls.RecordedWaitS.Max != 30 || ls.WaitS.Count != 2 {
		t.Errorf("LS %+v", ls)
	}
	// The replay ends when pod-0 (the last finite one) ends: 10 + 290 s
	// after its arrival at best.
	if tr.SimulatedS < 300 || tr.SimulatedS > 330 {
		t.Errorf("simulated %v s", tr.SimulatedS)
	}
	if tr.Utilization["gpu"] <= 0 {
		t.Errorf("gpu utilization %v", tr.Utilization)
	}
}

// TestSkipIdleIsExact: skipping idle heartbeats and fair-share updates
// changes no number of the report.
func TestSkipIdleIsExact(t *testing.T) {
	for _, c := range []struct {
		path   string
		opts   TraceOptions
		config string
	}{{smallSWF, TraceOptions{Format: FormatSWF}, configA}, {smallSWF, TraceOptions{Format: FormatSWF}, ""},
		{smallPods, TraceOptions{Format: FormatAlibaba, Nodes: smallNode}, ""}} {
		var reports [2][]byte
		var runs [2]RunStats
		for i, skip := range []bool{false, true} {
			skipIdle = skip
			res := replay(t, c.path, c.opts, c.config)
			skipIdle = true
			var buf bytes.Buffer
			if err := WriteReport(&buf, res.Trace); err != nil {
				t.Fatal(err)
			}
			WriteFairness(&buf, res)
			WriteTimeseries(&buf, res)
			reports[i], runs[i] = buf.Bytes(), res.Run
		}
		if !bytes.Equal(reports[0], reports[1]) {
			t.Errorf("%s %s: the report differs with skipping", c.path, c.config)
		}
		if runs[1].SkippedHeartbeats == 0 || runs[1].SkippedUpdates == 0 || runs[1].Heartbeats >= runs[0].Heartbeats {
			t.Errorf("%s: nothing skipped: %+v vs %+v", c.path, runs[1], runs[0])
		}
	}
}

// TestCompare: the A/B table lines up both replays; Diff is B − A.
func TestCompare(t *testing.T) {
	a := replay(t, smallSWF, TraceOptions{Format: FormatSWF}, configA)
	b := replay(t, smallSWF, TraceOptions{Format: FormatSWF}, configB)
	c := Compare("a", a.Trace, "b", b.Trace)
	seen := map[string]bool{}
	for _, r := range c.Rows {
		seen[r.Scope+"/"+r.Metric] = true
		if r.A != nil && r.B != nil && (r.Diff == nil || *r.Diff != r6(*r.B-*r.A)) {
			t.Errorf("%s %s: diff %v of %v and %v", r.Scope, r.Metric, r.Diff, *r.A, *r.B)
		}
	}
	for _, k := range []string{"overall/fairness_error_integral", "overall/wait_p90_s", "staff/fair_share_cpu", "user-2/bounded_slowdown_mean"} {
		if !seen[k] {
			t.Errorf("no row %s", k)
		}
	}
	// staff's weight falls from 3 to 1: its fair share is lower under B.
	for _, r := range c.Rows {
		if r.Scope == "staff" && r.Metric == "fair_share_cpu" && !(*r.Diff < 0) {
			t.Errorf("staff's fair share: %v → %v", *r.A, *r.B)
		}
	}
	var buf bytes.Buffer
	if err := WriteCompareTable(&buf, c, true); err != nil || !strings.Contains(buf.String(), "fairness_error_integral") {
		t.Errorf("table %v:\n%s", err, buf.String())
	}
	dir := t.TempDir()
	names, err := WriteComparison(dir, c, a, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"compare.json", "compare.csv", "compare-fairness-error.png", "compare-utilization.svg", "compare-waits.png"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%v (wrote %q)", err, names)
		}
	}
}

// TestTraceConfigErrors: a bad config names its JSON path.
func TestTraceConfigErrors(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{`{"pools": {"user-1": "nowhere"}}`, `$.pools["user-1"]: cannot find pool "nowhere"`},
		{`{"default_parent": "x"}`, `$.default_parent: cannot find pool "x"`},
		{`{"heartbeat": 1}`, `$.heartbeat`},
		{`{"fair_share_update_period_s": 100}`, `$.fair_share_update_period_s: cannot use 100`},
		{`{"max_samples": 8}`, `$.max_samples: cannot use 8`},
		{`{"max_samples": 100.5}`, `$.max_samples: cannot use 100.5`},
		{`{"tree": {"children": [{"pool": "a", "weight": -1}]}}`, `weight`},
	} {
		_, err := DecodeTraceConfig([]byte(c.config))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.config, err, c.want)
		}
	}
}

// TestOpenTraceErrors: whole-trace problems.
func TestOpenTraceErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	unsorted := write("u.swf", swfHeader+"1 10 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n2 5 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n")
	empty := write("e.swf", swfHeader+"1 10 -1 -1 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n")
	for _, c := range []struct {
		path string
		opts TraceOptions
		want string
	}{
		{unsorted, TraceOptions{Format: FormatSWF}, "line 5: field 2 (submit time): cannot use 5: earlier than line 4's 10"},
		{empty, TraceOptions{Format: FormatSWF}, "cannot replay a trace without jobs (4 lines, 1 skipped: run time unknown (-1))"},
		{smallSWF, TraceOptions{Format: FormatSWF, PoolsBy: "qos"}, `cannot group swf jobs by "qos"`},
		{smallSWF, TraceOptions{Format: "csv"}, `cannot read trace format "csv"`},
		{smallPods, TraceOptions{Format: FormatAlibaba}, "want --trace-nodes FILE"},
		{smallPods, TraceOptions{Format: FormatAlibaba, Nodes: smallNode, PoolsBy: "user"}, `cannot group alibaba-gpu-2023 pods by "user"`},
		{filepath.Join(dir, "missing"), TraceOptions{Format: FormatSWF}, "cannot open the trace"},
	} {
		_, err := OpenTrace(c.path, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.path, err, c.want)
		}
	}
}

// FuzzSWF: any input gives jobs that can be replayed, or an error naming
// a line; never a panic.
func FuzzSWF(f *testing.F) {
	data, _ := os.ReadFile(smallSWF)
	f.Add(string(data))
	f.Add(swfHeader + "1 0 -1 5 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n")
	f.Add("; MaxProcs: 4\n1 0 -1 1e300 1 -1 -1 -1 -1 -1 1 7 2 -1 1 -1 -1 -1\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, by := range []string{"user", "queue"} {
			r, err := NewSWFReader(strings.NewReader(s), TraceOptions{PoolsBy: by})
			if err == nil {
				var jobs []TraceJob
				jobs, err = readAll(r)
				for _, j := range jobs {
					if j.Jobs < 1 || j.RunS < 0 || j.SubmitS < 0 || !tree.ValidName(j.Pool) || j.Line < 1 || j.Line > r.Lines() {
						t.Fatalf("bad job %+v", j)
					}
				}
			}
			checkTraceError(t, err)
		}
	})
}

// FuzzAlibaba: the same for pod lists (and node lists).
func FuzzAlibaba(f *testing.F) {
	data, _ := os.ReadFile(smallPods)
	f.Add(string(data))
	nodes, _ := os.ReadFile(smallNode)
	f.Add(string(nodes))
	f.Fuzz(func(t *testing.T, s string) {
		r, err := NewAlibabaReader(strings.NewReader(s), TraceOptions{})
		if err == nil {
			var jobs []TraceJob
			jobs, err = readAll(r)
			for _, j := range jobs {
				if j.Jobs != 1 || j.RunS < 0 || j.SubmitS < 0 || !tree.ValidName(j.Pool) || j.RecordedWaitS < 0 || j.Line < 2 {
					t.Fatalf("bad job %+v", j)
				}
			}
		}
		checkTraceError(t, err)
		if _, _, err := readAlibabaNodeList(strings.NewReader(s)); err != nil {
			checkTraceError(t, err)
		}
	})
}

func checkTraceError(t *testing.T, err error) {
	if err == nil {
		return
	}
	var te *TraceError
	if !errors.As(err, &te) || te.Line < 1 || !strings.HasPrefix(err.Error(), "line ") {
		t.Fatalf("error %v (%T) names no line", err, err)
	}
}

// TestReplayStalls: a pod still running at the trace's end holds the only
// gpu node; the pod waiting for it can never start, and the replay ends as
// stalled instead of running forever.
func TestReplayStalls(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	nodes := filepath.Join(dir, "nodes.csv")
	os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\ng,8000,8192,1,A10\n"), 0o644)
	os.WriteFile(pods, []byte(strings.Join(alibabaPodColumns, ",")+"\n"+
		"forever,1000,1024,1,1000,,LS,Running,0,,0\n"+
		"short,1000,1024,0,0,,BE,Succeeded,5,65,5\n"+
		"stuck,1000,1024,1,1000,,BE,Succeeded,10,70,10\n"), 0o644)
	tr := replay(t, pods, TraceOptions{Format: FormatAlibaba, Nodes: nodes}, "").Trace
	if tr.Ended != EndedStalled || tr.Overall.Completed != 1 || tr.Overall.Unfinished != 2 {
		t.Errorf("ended %q, overall %+v", tr.Ended, tr.Overall)
	}
	// It gives up one hour after the longest run (60 s) without progress.
	if tr.SimulatedS < 3600 || tr.SimulatedS > 3600+200 {
		t.Errorf("simulated %v s", tr.SimulatedS)
	}
	res := replay(t, smallSWF, TraceOptions{Format: FormatSWF}, "")
	if res.Trace.Ended != EndedDone {
		t.Errorf("small.swf ended %q", res.Trace.Ended)
	}
}
