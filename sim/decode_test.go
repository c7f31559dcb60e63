package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/wire"
)

// minimal is a valid scenario; bad inputs are written as edits of it.
const minimal = `{
  "duration_s": 600,
  "cluster": {"nodes": [{"count": 2, "resources": {"cpu": 8, "memory": 17179869184}}]},
  "tree": {"children": [{"pool": "a"}]},
  "workload": [{"name": "w", "pool": "a",
    "tasks": [{"job_count": 10, "resources": {"cpu": 1}, "duration": {"distribution": "fixed", "value_s": 60}}],
    "arrivals": {"at_s": [0]}}]
}`

func TestDecodeMinimal(t *testing.T) {
	s, err := Decode([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 1 || s.HeartbeatPeriodS != 5 || s.FairShareUpdatePeriodS != 1 || s.SamplePeriodS != 60 || s.MaxSamples != DefaultMaxSamples {
		t.Errorf("defaults: seed %d, heartbeat %v, update %v, sample %v, max samples %d",
			s.Seed, s.HeartbeatPeriodS, s.FairShareUpdatePeriodS, s.SamplePeriodS, s.MaxSamples)
	}
	if got := s.Nodes[0].Resources[0]; got != defaultNodeUserSlots {
		t.Errorf("node user_slots default %d, want %d", got, defaultNodeUserSlots)
	}
	if got := s.Workload[0].Tasks[0].Resources[0]; got != 1 {
		t.Errorf("job user_slots default %d, want 1", got)
	}
	if len(s.Pools) != 1 || s.Pools[0].Name != "a" {
		t.Errorf("pools %+v", s.Pools)
	}
}

// TestDecodeErrors is the table of bad scenarios: each names the JSON path
// and the code of the first problem.
func TestDecodeErrors(t *testing.T) {
	f := func(name, data, wantPath, wantCode string) {
		t.Helper()
		_, err := Decode([]byte(data))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: error %v, want an *Error", name, err)
			return
		}
		if e.Path != wantPath || e.Code != wantCode {
			t.Errorf("%s: got %s %q (%s), want %s %s", name, e.Path, e.Message, e.Code, wantPath, wantCode)
		}
		if !strings.HasPrefix(e.Message, "cannot ") {
			t.Errorf("%s: message %q does not start with \"cannot\"", name, e.Message)
		}
	}
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(minimal, old) {
			t.Fatalf("minimal has no %q", old)
		}
		return strings.Replace(minimal, old, new, 1)
	}
	f("empty", "", "$", wire.CodeMalformedJSON)
	f("syntax", `{"duration_s": }`, "$", wire.CodeMalformedJSON)
	f("two values", minimal+"{}", "$", wire.CodeMalformedJSON)
	f("not an object", `[1]`, "$", wire.CodeWrongType)
	f("unknown key", edit(`"duration_s"`, `"duration": 1, "duration_s"`), "$.duration", wire.CodeUnknownAttribute)
	f("no duration", edit(`"duration_s": 600,`, ``), "$.duration_s", wire.CodeMissingAttribute)
	f("negative duration", edit(`"duration_s": 600`, `"duration_s": -1`), "$.duration_s", wire.CodeInvalidValue)
	f("string duration", edit(`"duration_s": 600`, `"duration_s": "600"`), "$.duration_s", wire.CodeWrongType)
	f("update period", edit(`"duration_s": 600`, `"duration_s": 600, "fair_share_update_period_s": 0.001`), "$.fair_share_update_period_s", wire.CodeInvalidValue)
	f("sample below update", edit(`"duration_s": 600`, `"duration_s": 600, "sample_period_s": 0.5`), "$.sample_period_s", wire.CodeInvalidValue)
	for _, bad := range []string{`15`, `16.5`, `1e8`, `-1`} {
		f("max_samples "+bad, edit(`"duration_s": 600`, `"duration_s": 600, "max_samples": `+bad), "$.max_samples", wire.CodeInvalidValue)
	}
	f("max_samples string", edit(`"duration_s": 600`, `"duration_s": 600, "max_samples": "100"`), "$.max_samples", wire.CodeWrongType)
	f("seed", edit(`"duration_s": 600`, `"duration_s": 600, "seed": 1.5`), "$.seed", wire.CodeInvalidValue)
	f("no cluster", edit(`"cluster": {"nodes": [{"count": 2, "resources": {"cpu": 8, "memory": 17179869184}}]},`, ``), "$.cluster", wire.CodeMissingAttribute)
	f("no nodes", edit(`"nodes": [{"count": 2, "resources": {"cpu": 8, "memory": 17179869184}}]`, `"nodes": []`), "$.cluster.nodes", wire.CodeInvalidValue)
	f("node count", edit(`"count": 2`, `"count": 0`), "$.cluster.nodes[0].count", wire.CodeInvalidValue)
	f("node resource", edit(`"cpu": 8,`, `"cpus": 8,`), "$.cluster.nodes[0].resources.cpus", wire.CodeUnknownAttribute)
	f("node too small", edit(`"cpu": 8, "memory": 17179869184`, `"cpu": 8`), "$.cluster.nodes[0].resources", wire.CodeInvalidValue)
	f("node memory fraction", edit(`"memory": 17179869184`, `"memory": 1.5`), "$.cluster.nodes[0].resources.memory", wire.CodeInvalidValue)
	f("stop mode", edit(`"nodes"`, `"preempted_job_stop": "later", "nodes"`), "$.cluster.preempted_job_stop", wire.CodeInvalidValue)
	f("scheduler key", edit(`"duration_s": 600`, `"duration_s": 600, "scheduler": {"starvation_timeout_s": 1}`), "$.scheduler.starvation_timeout_s", wire.CodeUnknownAttribute)
	f("scheduler timeouts", edit(`"duration_s": 600`, `"duration_s": 600, "scheduler": {"fair_share_starvation_timeout_s": 200}`),
		"$.scheduler.fair_share_aggressive_starvation_timeout_s", wire.CodeInvalidValue)
	f("no tree", edit(`"tree": {"children": [{"pool": "a"}]},`, ``), "$.tree", wire.CodeMissingAttribute)
	f("pool attribute", edit(`{"pool": "a"}`, `{"pool": "a", "weight": "x"}`), "$.tree.children[0].weight", wire.CodeWrongType)
	f("pool name", edit(`{"pool": "a"}`, `{"pool": "a b"}`), "$.tree.children[0].pool", wire.CodeInvalidName)
	f("operation in tree", edit(`{"pool": "a"}`, `{"pool": "a"}, {"operation": "o"}`), "$.tree.children[1]", wire.CodeInvalidValue)
	f("initial volume", edit(`{"pool": "a"}`, `{"pool": "a", "integral_guarantees": {"guarantee_type": "relaxed", "resource_flow": {"cpu": 1}}, "accumulated_resource_volume": {"cpu": 5}}`),
		"$.tree.children[0].accumulated_resource_volume", wire.CodeInvalidValue)
	f("tree config", edit(`"tree"`, `"config": {"integral_guarantees": {"smooth_period_s": 0}}, "tree"`), "$.config.integral_guarantees.smooth_period_s", wire.CodeInvalidValue)
	f("no workload", edit(`"workload": [`, `"w": [`), "$.w", wire.CodeUnknownAttribute)
	f("empty workload", `{"duration_s": 1, "cluster": {"nodes": [{"resources": {"cpu": 8, "memory": 1073741824}}]}, "tree": {}, "workload": []}`, "$.workload", wire.CodeInvalidValue)
	f("unknown pool", edit(`"pool": "a",`, `"pool": "b",`), "$.workload[0].pool", wire.CodeUnknownElement)
	f("no pool", edit(`"pool": "a",`, ``), "$.workload[0].pool", wire.CodeMissingAttribute)
	f("duplicate name", edit(`"workload": [`, `"workload": [{"name": "w", "pool": "a", "tasks": [{"job_count": 1, "resources": {"cpu": 1}, "duration": {"distribution": "fixed", "value_s": 1}}], "arrivals": {"at_s": [0]}}, `),
		"$.workload[1].name", wire.CodeDuplicateName)
	f("type", edit(`"pool": "a",`, `"pool": "a", "type": "mapreduce",`), "$.workload[0].type", wire.CodeInvalidValue)
	f("weight", edit(`"pool": "a",`, `"pool": "a", "weight": 0,`), "$.workload[0].weight", wire.CodeInvalidValue)
	f("preemption mode", edit(`"pool": "a",`, `"pool": "a", "preemption_mode": "soft",`), "$.workload[0].preemption_mode", wire.CodeInvalidValue)
	f("no tasks", edit(`"tasks": [{"job_count": 10, "resources": {"cpu": 1}, "duration": {"distribution": "fixed", "value_s": 60}}]`, `"tasks": []`),
		"$.workload[0].tasks", wire.CodeInvalidValue)
	f("job count", edit(`"job_count": 10`, `"job_count": 0`), "$.workload[0].tasks[0].job_count", wire.CodeInvalidValue)
	f("job too big", edit(`"resources": {"cpu": 1}`, `"resources": {"cpu": 9}`), "$.workload[0].tasks[0].resources", wire.CodeInvalidValue)
	f("job cpu negative", edit(`"resources": {"cpu": 1}`, `"resources": {"cpu": -1}`), "$.workload[0].tasks[0].resources.cpu", wire.CodeInvalidValue)
	f("no duration dist", edit(`"duration": {"distribution": "fixed", "value_s": 60}`, `"duration": {"value_s": 60}`),
		"$.workload[0].tasks[0].duration.distribution", wire.CodeMissingAttribute)
	f("bad dist", edit(`"distribution": "fixed"`, `"distribution": "pareto"`), "$.workload[0].tasks[0].duration.distribution", wire.CodeInvalidValue)
	f("dist param", edit(`"value_s": 60`, `"mean_s": 60`), "$.workload[0].tasks[0].duration.mean_s", wire.CodeUnknownAttribute)
	f("dist missing param", edit(`"distribution": "fixed", "value_s": 60`, `"distribution": "uniform", "min_s": 60`),
		"$.workload[0].tasks[0].duration.max_s", wire.CodeMissingAttribute)
	f("uniform order", edit(`"distribution": "fixed", "value_s": 60`, `"distribution": "uniform", "min_s": 60, "max_s": 30`),
		"$.workload[0].tasks[0].duration.max_s", wire.CodeInvalidValue)
	f("lognormal both", edit(`"distribution": "fixed", "value_s": 60`, `"distribution": "lognormal", "mean_s": 60, "median_s": 30, "sigma": 1`),
		"$.workload[0].tasks[0].duration.mean_s", wire.CodeInvalidValue)
	f("sigma", edit(`"distribution": "fixed", "value_s": 60`, `"distribution": "lognormal", "median_s": 30, "sigma": 11`),
		"$.workload[0].tasks[0].duration.sigma", wire.CodeInvalidValue)
	f("no arrivals kind", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"start_s": 0}`), "$.workload[0].arrivals", wire.CodeMissingAttribute)
	f("two arrival kinds", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"at_s": [0], "every_s": 5}`), "$.workload[0].arrivals.every_s", wire.CodeInvalidValue)
	f("arrival time", edit(`"at_s": [0]`, `"at_s": [0, -5]`), "$.workload[0].arrivals.at_s[1]", wire.CodeInvalidValue)
	f("window", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"every_s": 5, "start_s": 100, "end_s": 50}`), "$.workload[0].arrivals.end_s", wire.CodeInvalidValue)
	f("repeat without end", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"every_s": 5, "repeat_every_s": 100}`), "$.workload[0].arrivals.end_s", wire.CodeMissingAttribute)
	f("repeat shorter than window", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"every_s": 5, "end_s": 200, "repeat_every_s": 100}`),
		"$.workload[0].arrivals.repeat_every_s", wire.CodeInvalidValue)
	f("too many arrivals", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"every_s": 0.001, "end_s": 2000}`), "$.workload[0].arrivals.every_s", wire.CodeInvalidValue)
	f("concurrent", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"concurrent": 0}`), "$.workload[0].arrivals.concurrent", wire.CodeInvalidValue)
	f("poisson", edit(`"arrivals": {"at_s": [0]}`, `"arrivals": {"rate_per_hour": -1}`), "$.workload[0].arrivals.rate_per_hour", wire.CodeInvalidValue)
}

// TestDecodeExamples decodes every shipped scenario.
func TestDecodeExamples(t *testing.T) {
	for _, name := range Examples {
		data, err := os.ReadFile(filepath.Join("..", "examples", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Decode(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.Name != name {
			t.Errorf("%s: name %q", name, s.Name)
		}
	}
}

// FuzzDecode checks that the decoder never panics and that every error is
// an *Error with a JSON path and a code.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"duration_s": 1, "cluster": {"nodes": [{"resources": {"cpu": 1e300}}]}}`))
	for _, name := range Examples {
		if data, err := os.ReadFile(filepath.Join("..", "examples", name+".json")); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data)
		if err == nil {
			if s == nil || s.DurationS <= 0 || len(s.Nodes) == 0 || len(s.Workload) == 0 {
				t.Fatalf("accepted an incomplete scenario: %+v", s)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Path, "$") || e.Code == "" || e.Message == "" {
			t.Fatalf("error %#v is not a located *Error", err)
		}
	})
}
