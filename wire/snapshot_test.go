package wire

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
)

const (
	conformanceDir = "../testdata/conformance"
	examplesDir    = "../examples"
)

func TestDecodeSnapshotErrors(t *testing.T) {
	f := func(name, input, wantCode, wantPath string) {
		t.Helper()
		s, err := DecodeSnapshot([]byte(input))
		if err == nil {
			t.Errorf("%s: got a snapshot %+v, want error %s at %s", name, s, wantCode, wantPath)
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: got %T %v, want *Error", name, err, err)
			return
		}
		if e.Code != wantCode || e.Path != wantPath {
			t.Errorf("%s: got code %q path %q (%v)\nwant code %q path %q", name, e.Code, e.Path, e, wantCode, wantPath)
		}
		if !strings.HasPrefix(e.Message, "cannot ") {
			t.Errorf("%s: message %q does not start with \"cannot \"", name, e.Message)
		}
	}
	// tr wraps a list of children into a minimal snapshot.
	tr := func(children string) string {
		return `{"total_resources": {"cpu": 10, "memory": 100}, "tree": {"children": [` + children + `]}}`
	}
	// up wraps a list of updates around a pool "p" with operation "op".
	up := func(updates string) string {
		return `{"total_resources": {"cpu": 10}, "tree": {"children": [{"pool": "p", "children": [{"operation": "op"}]}]}, "updates": [` + updates + `]}`
	}

	// Malformed JSON and the top level.
	f("truncated", `{"total_resources": {`, CodeMalformedJSON, "$")
	f("empty", ``, CodeMalformedJSON, "$")
	f("whitespace", " \n\t", CodeMalformedJSON, "$")
	f("trailing comma", `{"total_resources": {"cpu": 1},}`, CodeMalformedJSON, "$")
	f("two values", `{} {}`, CodeMalformedJSON, "$")
	f("trailing garbage", `{"tree": {}} x`, CodeMalformedJSON, "$")
	f("bare NaN", `{"total_resources": {"cpu": NaN}, "tree": {}}`, CodeMalformedJSON, "$")
	f("array at top", `[]`, CodeWrongType, "$")
	f("unknown top-level", `{"total_resources": {}, "tree": {}, "trees": []}`, CodeUnknownAttribute, "$.trees")
	f("odd key", `{"total_resources": {}, "tree": {}, "a b": 1}`, CodeUnknownAttribute, `$["a b"]`)
	f("missing total", `{"tree": {}}`, CodeMissingAttribute, "$.total_resources")
	f("missing tree", `{"total_resources": {}}`, CodeMissingAttribute, "$.tree")

	// Resources.
	f("total not an object", `{"total_resources": [1], "tree": {}}`, CodeWrongType, "$.total_resources")
	f("unknown resource", `{"total_resources": {"cpus": 1}, "tree": {}}`, CodeUnknownAttribute, "$.total_resources.cpus")
	f("negative cpu deep", tr(`{"pool": "a"}, {"pool": "b", "children": [{"operation": "o", "demand": {"cpu": -1}}]}`),
		CodeInvalidValue, "$.tree.children[1].children[0].demand.cpu")
	f("NaN as string", tr(`{"operation": "o", "usage": {"cpu": "NaN"}}`), CodeWrongType, "$.tree.children[0].usage.cpu")
	f("null amount", tr(`{"operation": "o", "usage": {"gpu": null}}`), CodeWrongType, "$.tree.children[0].usage.gpu")
	f("1e300 memory", tr(`{"operation": "o", "demand": {"memory": 1e300}}`), CodeInvalidValue, "$.tree.children[0].demand.memory")
	f("1e400 overflows", tr(`{"operation": "o", "demand": {"memory": 1e400}}`), CodeInvalidValue, "$.tree.children[0].demand.memory")
	f("2^60 memory", tr(`{"operation": "o", "demand": {"memory": 1152921504606846976}}`), CodeInvalidValue, "$.tree.children[0].demand.memory")
	f("2^53+2 memory", tr(`{"operation": "o", "demand": {"memory": 9007199254740994}}`), CodeInvalidValue, "$.tree.children[0].demand.memory")
	f("fractional memory", tr(`{"operation": "o", "demand": {"memory": 1.5}}`), CodeInvalidValue, "$.tree.children[0].demand.memory")
	f("fractional slots", `{"total_resources": {"user_slots": 0.5}, "tree": {}}`, CodeInvalidValue, "$.total_resources.user_slots")
	f("cpu above 2^53 centi-cores", `{"total_resources": {"cpu": 1e14}, "tree": {}}`, CodeInvalidValue, "$.total_resources.cpu")
	f("negative limit", tr(`{"pool": "a", "resource_limits": {"gpu": -2}}`), CodeInvalidValue, "$.tree.children[0].resource_limits.gpu")
	f("unknown resource in guarantee", tr(`{"pool": "a", "strong_guarantee_resources": {"disk": 1}}`),
		CodeUnknownAttribute, "$.tree.children[0].strong_guarantee_resources.disk")
	f("alias path", tr(`{"pool": "a", "min_share_resources": {"cpu": -1}}`), CodeInvalidValue, "$.tree.children[0].min_share_resources.cpu")
	f("alias and name", tr(`{"pool": "a", "min_share_resources": {}, "strong_guarantee_resources": {}}`),
		CodeInvalidValue, "$.tree.children[0].min_share_resources")
	f("negative volume", tr(`{"pool": "a", "accumulated_resource_volume": {"cpu": -5}}`),
		CodeInvalidValue, "$.tree.children[0].accumulated_resource_volume.cpu")
	f("infinite volume", tr(`{"pool": "a", "accumulated_resource_volume": {"memory": 1e400}}`),
		CodeInvalidValue, "$.tree.children[0].accumulated_resource_volume.memory")
	f("cpu volume beyond centi-core·seconds", tr(`{"pool": "a", "accumulated_resource_volume": {"cpu": 1e307}}`),
		CodeInvalidValue, "$.tree.children[0].accumulated_resource_volume.cpu")

	// Config.
	f("unknown config key", `{"total_resources": {}, "tree": {}, "config": {"main_resourse": "cpu"}}`, CodeUnknownAttribute, "$.config.main_resourse")
	f("bad main resource", `{"total_resources": {}, "tree": {}, "config": {"main_resource": "disk"}}`, CodeInvalidValue, "$.config.main_resource")
	f("unknown config.integral key", `{"total_resources": {}, "tree": {}, "config": {"integral_guarantees": {"smooth_period": 60}}}`,
		CodeUnknownAttribute, "$.config.integral_guarantees.smooth_period")
	f("zero smooth period", `{"total_resources": {}, "tree": {}, "config": {"integral_guarantees": {"smooth_period_s": 0}}}`,
		CodeInvalidValue, "$.config.integral_guarantees.smooth_period_s")
	f("relaxed limit out of range", `{"total_resources": {}, "tree": {}, "config": {"integral_guarantees": {"relaxed_share_multiplier_limit": 11}}}`,
		CodeInvalidValue, "$.config.integral_guarantees.relaxed_share_multiplier_limit")
	f("config bool as string", `{"total_resources": {}, "tree": {}, "config": {"enable_step_function_for_gang_operations": "yes"}}`,
		CodeWrongType, "$.config.enable_step_function_for_gang_operations")
	f("infer weight below 1", `{"total_resources": {}, "tree": {}, "config": {"infer_weight_from_guarantees_share_multiplier": 0.5}}`,
		CodeInvalidValue, "$.config.infer_weight_from_guarantees_share_multiplier")

	// Tree shape.
	f("root attribute", `{"total_resources": {}, "tree": {"weight": 2}}`, CodeUnknownAttribute, "$.tree.weight")
	f("root unknown key", `{"total_resources": {}, "tree": {"childs": []}}`, CodeUnknownAttribute, "$.tree.childs")
	f("children not a list", `{"total_resources": {}, "tree": {"children": {}}}`, CodeWrongType, "$.tree.children")
	f("element not an object", tr(`42`), CodeWrongType, "$.tree.children[0]")
	f("pool and operation", tr(`{"pool": "a", "operation": "b"}`), CodeInvalidValue, "$.tree.children[0]")
	f("neither pool nor operation", tr(`{"weight": 1}`), CodeMissingAttribute, "$.tree.children[0]")
	f("name not a string", tr(`{"pool": 7}`), CodeWrongType, "$.tree.children[0].pool")
	f("invalid name", tr(`{"pool": "a b"}`), CodeInvalidName, "$.tree.children[0].pool")
	f("root name", tr(`{"pool": "<Root>"}`), CodeInvalidName, "$.tree.children[0].pool")
	f("long name", tr(`{"operation": "`+strings.Repeat("x", 129)+`"}`), CodeInvalidName, "$.tree.children[0].operation")
	f("duplicate pool", tr(`{"pool": "a"}, {"pool": "a"}`), CodeDuplicateName, "$.tree.children[1].pool")
	f("duplicate across kinds", tr(`{"pool": "a"}, {"pool": "b", "children": [{"operation": "a"}]}`),
		CodeDuplicateName, "$.tree.children[1].children[0].operation")
	f("operation with children", tr(`{"operation": "o", "children": []}`), CodeUnknownAttribute, "$.tree.children[0].children")
	f("pool with demand", tr(`{"pool": "a", "demand": {}}`), CodeUnknownAttribute, "$.tree.children[0].demand")
	f("operation with mode", tr(`{"operation": "o", "mode": "fifo"}`), CodeUnknownAttribute, "$.tree.children[0].mode")
	f("pool with parent", tr(`{"pool": "a", "parent": "b"}`), CodeUnknownAttribute, "$.tree.children[0].parent")
	f("typo in pool", tr(`{"pool": "a", "wieght": 2}`), CodeUnknownAttribute, "$.tree.children[0].wieght")
	f("unknown deep", tr(`{"pool": "a", "children": [{"pool": "b", "children": [{"operation": "o", "colour": "red"}]}]}`),
		CodeUnknownAttribute, "$.tree.children[0].children[0].children[0].colour")
	f("fifo pool with child pool", tr(`{"pool": "a", "mode": "fifo", "children": [{"operation": "o"}, {"pool": "b"}]}`),
		tree.CodeFifoChildPool, "$.tree.children[0].children[1].pool")

	// Pool attributes.
	f("weight as string", tr(`{"pool": "a", "weight": "2"}`), CodeWrongType, "$.tree.children[0].weight")
	f("zero weight", tr(`{"pool": "a", "weight": 0}`), CodeInvalidValue, "$.tree.children[0].weight")
	f("huge weight", tr(`{"operation": "o", "weight": 1e9}`), CodeInvalidValue, "$.tree.children[0].weight")
	f("bad mode", tr(`{"pool": "a", "mode": "lifo"}`), CodeInvalidValue, "$.tree.children[0].mode")
	f("fractional count", tr(`{"pool": "a", "max_operation_count": 2.5}`), CodeInvalidValue, "$.tree.children[0].max_operation_count")
	f("count below running", tr(`{"pool": "a", "max_operation_count": 2, "max_running_operation_count": 3}`),
		CodeInvalidValue, "$.tree.children[0].max_operation_count")
	f("bad fifo parameter", tr(`{"pool": "a", "mode": "fifo", "fifo_sort_parameters": ["weight", "size"]}`),
		CodeInvalidValue, "$.tree.children[0].fifo_sort_parameters[1]")
	f("empty fifo parameters", tr(`{"pool": "a", "fifo_sort_parameters": []}`), CodeInvalidValue, "$.tree.children[0].fifo_sort_parameters")
	f("bad guarantee type", tr(`{"pool": "a", "integral_guarantees": {"guarantee_type": "strong"}}`),
		CodeInvalidValue, "$.tree.children[0].integral_guarantees.guarantee_type")
	f("unknown integral key", tr(`{"pool": "a", "integral_guarantees": {"resource_flows": {}}}`),
		CodeUnknownAttribute, "$.tree.children[0].integral_guarantees.resource_flows")
	f("relaxed with burst", tr(`{"pool": "a", "integral_guarantees": {"guarantee_type": "relaxed", "burst_guarantee_resources": {"cpu": 1}}}`),
		CodeInvalidValue, "$.tree.children[0].integral_guarantees.burst_guarantee_resources")
	f("pool relaxed limit", tr(`{"pool": "a", "integral_guarantees": {"relaxed_share_multiplier_limit": 0.5}}`),
		CodeInvalidValue, "$.tree.children[0].integral_guarantees.relaxed_share_multiplier_limit")
	f("tolerance out of range", tr(`{"pool": "a", "fair_share_starvation_tolerance": 2}`),
		CodeInvalidValue, "$.tree.children[0].fair_share_starvation_tolerance")
	f("bool as number", tr(`{"pool": "a", "compute_promised_guarantee_fair_share": 1}`),
		CodeWrongType, "$.tree.children[0].compute_promised_guarantee_fair_share")

	// Operation attributes.
	f("bad op type", tr(`{"operation": "o", "type": "spark"}`), CodeInvalidValue, "$.tree.children[0].type")
	f("start time as string", tr(`{"operation": "o", "start_time_s": "0"}`), CodeWrongType, "$.tree.children[0].start_time_s")
	f("negative pending count", tr(`{"operation": "o", "pending_job_count": -1}`), CodeInvalidValue, "$.tree.children[0].pending_job_count")
	f("is_gang as string", tr(`{"operation": "o", "is_gang": "true"}`), CodeWrongType, "$.tree.children[0].is_gang")

	// Updates.
	f("updates not a list", `{"total_resources": {}, "tree": {}, "updates": {}}`, CodeWrongType, "$.updates")
	f("empty updates", `{"total_resources": {}, "tree": {}, "updates": []}`, CodeInvalidValue, "$.updates")
	f("negative elapsed", up(`{"elapsed_s": null}, {"elapsed_s": -60}`), CodeInvalidValue, "$.updates[1].elapsed_s")
	f("elapsed as string", up(`{"elapsed_s": "60"}`), CodeWrongType, "$.updates[0].elapsed_s")
	f("unknown update key", up(`{"elapsed": 60}`), CodeUnknownAttribute, "$.updates[0].elapsed")
	f("label not a string", up(`{"label": 1}`), CodeWrongType, "$.updates[0].label")
	f("update config", up(`{"config": {"main_resource": "gpu"}}, {"config": {"enable_step": true}}`),
		CodeUnknownAttribute, "$.updates[1].config.enable_step")
	f("update total", up(`{"total_resources": {"cpu": -1}}`), CodeInvalidValue, "$.updates[0].total_resources.cpu")
	f("unknown element in set", up(`{"set": {"X.demand": {"cpu": 1}}}`), CodeUnknownElement, `$.updates[0].set["X.demand"]`)
	f("set without attribute", up(`{"set": {"op": {}}}`), CodeInvalidValue, `$.updates[0].set.op`)
	f("set unknown attribute", up(`{"set": {"op.colour": "red"}}`), CodeUnknownAttribute, `$.updates[0].set["op.colour"]`)
	f("set demand of pool", up(`{"set": {"p.demand": {}}}`), CodeInvalidValue, `$.updates[0].set["p.demand"]`)
	f("set guarantee of op", up(`{"set": {"op.strong_guarantee_resources": {}}}`), CodeInvalidValue, `$.updates[0].set["op.strong_guarantee_resources"]`)
	f("set bad amount", up(`{"set": {"op.demand": {"cpu": 1, "memory": -1}}}`), CodeInvalidValue, `$.updates[0].set["op.demand"].memory`)
	f("set bad weight", up(`{"set": {"p.weight": 1e300}}`), CodeInvalidValue, `$.updates[0].set["p.weight"]`)
	f("set twice", up(`{"set": {"p.strong_guarantee_resources": {}, "p.min_share_resources": {}}}`),
		CodeInvalidValue, `$.updates[0].set["p.strong_guarantee_resources"]`)
	f("set root", up(`{"set": {"<Root>.weight": 2}}`), CodeInvalidValue, `$.updates[0].set["<Root>.weight"]`)
}

func TestDecodeSnapshotErrorText(t *testing.T) {
	in := `{"total_resources": {"cpu": 1}, "tree": {"children": [{"pool": "a"}, {"pool": "b", "children": [
		{"operation": "o", "demand": {"cpu": -1}}]}]}}`
	_, err := DecodeSnapshot([]byte(in))
	const want = "$.tree.children[1].children[0].demand.cpu: cannot use -1: want a non-negative number"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}

	_, err = DecodeSnapshot([]byte("{\n  \"total_resources\": {},\n  \"tree\" {}\n}"))
	if err == nil || !strings.Contains(err.Error(), "line 3, column 10") {
		t.Fatalf("got %v, want the line and column of the syntax error", err)
	}

	_, err = DecodeSnapshot([]byte(`{"total_resources": {}, "tree": {"children": [{"pool": "a", "wieght": 2}]}}`))
	if err == nil || !strings.Contains(err.Error(), `did you mean "weight"?`) {
		t.Fatalf("got %v, want a suggestion", err)
	}
}

func TestDecodeSnapshotValues(t *testing.T) {
	const in = `{
	  "total_resources": {"user_slots": 10, "cpu": 11.17, "memory": 1048576},
	  "config": {"main_resource": "memory", "integral_guarantees": {"smooth_period_s": 30},
	             "infer_weight_from_guarantees_share_multiplier": 2},
	  "tree": {"children": [
	    {"pool": "a", "weight": 2, "mode": "fifo", "fifo_sort_parameters": ["start_time", "pending_allocation_count"],
	     "min_share_resources": {"cpu": 0.005, "memory": 0},
	     "integral_guarantees": {"guarantee_type": "burst", "resource_flow": {"cpu": 1.5}, "burst_guarantee_resources": {"gpu": 1},
	                             "can_accept_free_volume": false},
	     "accumulated_resource_volume": {"cpu": 90.5, "memory": 1e12},
	     "children": [
	       {"operation": "op.1", "type": "vanilla", "is_gang": true, "start_time_s": 12.5, "weight": 3,
	        "demand": {"cpu": 2, "user_slots": 2}, "usage": {"cpu": 0.5}, "job_resources": {"cpu": 1},
	        "resource_limits": {"cpu": 1.25}, "pending_job_count": 4}
	     ]},
	    {"operation": "op2"}
	  ]},
	  "updates": [
	    {"elapsed_s": null, "label": "first"},
	    {"elapsed_s": 60, "config": {"enable_step_function_for_gang_operations": true}},
	    {"elapsed_s": 0.5, "config": {"main_resource": "cpu"}, "total_resources": {"cpu": 20},
	     "set": {"op2.weight": 4, "op.1.demand": {"cpu": 3}, "a.strong_guarantee_resources": {"gpu": 1}, "a.resource_limits": {}}}
	  ]
	}`
	s, err := DecodeSnapshot([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	revalidate(t, s)
	if want := (resource.Vec{10, 1117, 0, 1048576, 0}); s.Total != want {
		t.Errorf("total %v, want %v", s.Total, want)
	}
	wantCfg := fairshare.DefaultConfig()
	wantCfg.MainResource = resource.Memory
	wantCfg.SmoothPeriodS = 30
	wantCfg.InferWeightFromGuaranteesShareMultiplier = tree.Some(2)
	if s.Config != wantCfg {
		t.Errorf("config %+v, want %+v", s.Config, wantCfg)
	}
	if s.Root.Name != tree.RootName || s.Root.Path != "$.tree" || len(s.Root.Children) != 2 {
		t.Fatalf("root %+v", s.Root)
	}
	a := &s.Root.Children[0]
	if a.Name != "a" || a.IsOperation || a.Path != "$.tree.children[0]" {
		t.Errorf("pool a: %q %v %q", a.Name, a.IsOperation, a.Path)
	}
	c := &a.Pool
	if c.Weight != tree.Some(2) || c.Mode != tree.ModeFIFO {
		t.Errorf("pool a weight %v mode %v", c.Weight, c.Mode)
	}
	if got := c.FifoSortParameters; len(got) != 2 || got[0] != tree.FifoStartTime || got[1] != tree.FifoPendingJobCount {
		t.Errorf("fifo sort parameters %v", got)
	}
	if want := (tree.PartialVec{V: resource.Vec{0, 1, 0, 0, 0}, Set: [resource.Count]bool{false, true, false, true, false}}); c.StrongGuarantee != want {
		t.Errorf("strong guarantee %+v, want %+v (cpu 0.005 rounds to 1 centi-core, memory 0 is set)", c.StrongGuarantee, want)
	}
	if c.Integral.Type != tree.GuaranteeBurst || c.Integral.ResourceFlow.V[resource.CPU] != 150 ||
		!c.Integral.BurstGuarantee.Set[resource.GPU] || c.Integral.CanAcceptFreeVolume != tree.SomeBool(false) {
		t.Errorf("integral %+v", c.Integral)
	}
	if want := ([resource.Count]float64{0, 9050, 0, 1e12, 0}); a.AccumulatedVolume != want {
		t.Errorf("accumulated volume %v, want %v (cpu in centi-core·seconds)", a.AccumulatedVolume, want)
	}
	op := &a.Children[0]
	if op.Name != "op.1" || !op.IsOperation || op.Path != "$.tree.children[0].children[0]" {
		t.Errorf("op.1: %q %v %q", op.Name, op.IsOperation, op.Path)
	}
	wantOp := tree.OperationSpec{Weight: tree.Some(3), IsGang: true, Vanilla: true, StartTime: 12500 * clock.Time(clock.Millisecond),
		ResourceLimits: tree.PartialVec{V: resource.Vec{0, 125, 0, 0, 0}, Set: [resource.Count]bool{false, true, false, false, false}}}
	if op.Op != wantOp {
		t.Errorf("op spec %+v, want %+v", op.Op, wantOp)
	}
	if op.Demand != (resource.Vec{2, 200, 0, 0, 0}) || op.Usage != (resource.Vec{0, 50, 0, 0, 0}) || op.JobResources != (resource.Vec{0, 100, 0, 0, 0}) {
		t.Errorf("op vectors %v %v %v", op.Demand, op.Usage, op.JobResources)
	}

	if len(s.Updates) != 3 {
		t.Fatalf("%d updates", len(s.Updates))
	}
	u0, u1, u2 := &s.Updates[0], &s.Updates[1], &s.Updates[2]
	if u0.HasElapsed || u0.Label != "first" || u0.Config != nil || u0.Total != nil || u0.Set != nil {
		t.Errorf("update 0 %+v", u0)
	}
	cfg1 := wantCfg
	cfg1.EnableStepFunctionForGangOperations = true
	if !u1.HasElapsed || u1.Elapsed != 60*clock.Second || u1.Config == nil || *u1.Config != cfg1 {
		t.Errorf("update 1 %+v config %+v, want %+v", u1, u1.Config, cfg1)
	}
	cfg2 := wantCfg // an update's config applies to that update only
	cfg2.MainResource = resource.CPU
	if !u2.HasElapsed || u2.Elapsed != 500*clock.Millisecond || u2.Config == nil || *u2.Config != cfg2 || u2.Total == nil || u2.Total[resource.CPU] != 2000 {
		t.Errorf("update 2 %+v config %+v, want %+v", u2, u2.Config, cfg2)
	}
	// Assignments are sorted by key.
	want := []snapshot.Assignment{
		{Element: "a", Attr: snapshot.AttrResourceLimits, Path: `$.updates[2].set["a.resource_limits"]`},
		{Element: "a", Attr: snapshot.AttrStrongGuarantee, Path: `$.updates[2].set["a.strong_guarantee_resources"]`,
			Vec: tree.PartialVec{V: resource.Vec{0, 0, 1, 0, 0}, Set: [resource.Count]bool{false, false, true, false, false}}},
		{Element: "op.1", Attr: snapshot.AttrDemand, Path: `$.updates[2].set["op.1.demand"]`, Vec: tree.Full(resource.Vec{0, 300, 0, 0, 0})},
		{Element: "op2", Attr: snapshot.AttrWeight, Path: `$.updates[2].set["op2.weight"]`, Num: 4},
	}
	if len(u2.Set) != len(want) {
		t.Fatalf("set %+v, want %+v", u2.Set, want)
	}
	for i := range want {
		if u2.Set[i] != want[i] {
			t.Errorf("set[%d] = %+v, want %+v", i, u2.Set[i], want[i])
		}
	}
}

// TestDecodeSnapshotLargeVolumes: accumulated volumes are floating
// resource·seconds, finite and non-negative of any magnitude; the server
// reports volumes past 2^53 (a memory pool accumulates byte·seconds), so a
// snapshot of a live cluster holds them. Amounts stay bounded by 2^53.
func TestDecodeSnapshotLargeVolumes(t *testing.T) {
	for _, tc := range []struct {
		vol  string
		want [resource.Count]float64
	}{
		{`{"memory": 1.05e16}`, [resource.Count]float64{resource.Memory: 1.05e16}},
		{`{"memory": 9007199254740993}`, [resource.Count]float64{resource.Memory: 9007199254740993}},
		{`{"network": 4.75e16, "gpu": 1e300}`, [resource.Count]float64{resource.Network: 4.75e16, resource.GPU: 1e300}},
		{`{"cpu": 1e16}`, [resource.Count]float64{resource.CPU: 1e18}},
	} {
		in := `{"total_resources": {"memory": 1048576}, "tree": {"children": [{"pool": "a",
			"integral_guarantees": {"guarantee_type": "relaxed", "resource_flow": {"memory": 1}},
			"accumulated_resource_volume": ` + tc.vol + `}]}}`
		s, err := DecodeSnapshot([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", tc.vol, err)
			continue
		}
		revalidate(t, s)
		if got := s.Root.Children[0].AccumulatedVolume; got != tc.want {
			t.Errorf("%s: accumulated volume %v, want %v", tc.vol, got, tc.want)
		}
	}
}

func TestDecodeSnapshotDefaults(t *testing.T) {
	s, err := DecodeSnapshot([]byte(`{"total_resources": {}, "tree": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Config != fairshare.DefaultConfig() {
		t.Errorf("config %+v, want defaults", s.Config)
	}
	if len(s.Updates) != 1 || s.Updates[0].HasElapsed || s.Updates[0].Config != nil {
		t.Errorf("updates %+v, want one first update", s.Updates)
	}
	if s.Root.Name != tree.RootName || len(s.Root.Children) != 0 {
		t.Errorf("root %+v", s.Root)
	}
	s, err = DecodeSnapshot([]byte(`{"total_resources": {}, "tree": {}, "config": {"infer_weight_from_guarantees_share_multiplier": null}}`))
	if err != nil || s.Config.InferWeightFromGuaranteesShareMultiplier.Set {
		t.Errorf("null multiplier: %v %+v", err, s)
	}
}

// conformanceSnapshots returns the snapshot of every conformance case, by file name.
func conformanceSnapshots(t testing.TB) map[string][]byte {
	files, err := filepath.Glob(filepath.Join(conformanceDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no conformance cases in %s", conformanceDir)
	}
	out := make(map[string][]byte, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Snapshot json.RawMessage `json:"snapshot"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = c.Snapshot
	}
	return out
}

// snapshotExamples are the solve snapshots among examples/ (the other files
// there are the serve configuration and simulator scenarios).
var snapshotExamples = []string{"demo.json", "drf-paper.json", "hierarchy.json"}

func exampleSnapshots(t testing.TB) map[string][]byte {
	out := make(map[string][]byte, len(snapshotExamples))
	for _, name := range snapshotExamples {
		data, err := os.ReadFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}

func TestDecodeSnapshotConformance(t *testing.T) {
	for name, data := range conformanceSnapshots(t) {
		s, err := DecodeSnapshot(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		revalidate(t, s)
	}
}

func TestDecodeSnapshotExamples(t *testing.T) {
	ex := exampleSnapshots(t)
	for _, want := range []string{"demo.json", "drf-paper.json", "hierarchy.json"} {
		if _, ok := ex[want]; !ok {
			t.Errorf("examples/%s is missing", want)
		}
	}
	for name, data := range ex {
		s, err := DecodeSnapshot(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		revalidate(t, s)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	for _, data := range conformanceSnapshots(f) {
		f.Add(data)
	}
	for _, data := range exampleSnapshots(f) {
		f.Add(data)
	}
	f.Add([]byte(`{"total_resources": {"cpu": 1}, "tree": {"children": [{"pool": "a", "children": [{"operation": "b"}]}]},
		"updates": [{"set": {"b.demand": {"cpu": 1}}}]}`))
	f.Add([]byte(`{"total_resources": {"cpu": -1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSnapshot(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if e.Code == "" || !strings.HasPrefix(e.Path, "$") || e.Message == "" {
				t.Fatalf("incomplete error %+v", e)
			}
			var body map[string]map[string]string
			if err := json.Unmarshal(AppendError(nil, e), &body); err != nil {
				t.Fatalf("error body of %+v does not parse: %v", e, err)
			}
			return
		}
		revalidate(t, s)
	})
}

// revalidate checks what a successful decode guarantees, independently of the
// decoder: valid unique names, configurations accepted by core/tree, amounts
// in range, sensible config and updates that name existing elements.
func revalidate(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	vecOK := func(what string, v resource.Vec) {
		t.Helper()
		for k, x := range v {
			if x < 0 || x > resource.MaxAmount {
				t.Errorf("%s: %s = %d out of range", what, resource.Kind(k), x)
			}
		}
	}
	cfgOK := func(what string, c *fairshare.Config) {
		t.Helper()
		if c.MainResource < 0 || c.MainResource >= resource.Count ||
			!(c.SmoothPeriodS > 0) || math.IsInf(c.SmoothPeriodS, 0) ||
			!(c.PoolCapacitySaturationPeriodS > 0) || math.IsInf(c.PoolCapacitySaturationPeriodS, 0) ||
			!(c.RelaxedShareMultiplierLimit >= 1 && c.RelaxedShareMultiplierLimit <= 10) ||
			c.InferWeightFromGuaranteesShareMultiplier.Set && !(c.InferWeightFromGuaranteesShareMultiplier.V >= 1) {
			t.Errorf("%s: invalid config %+v", what, c)
		}
	}
	vecOK("total", s.Total)
	cfgOK("config", &s.Config)
	if s.Root.Name != tree.RootName || s.Root.IsOperation || s.Root.Path != "$.tree" {
		t.Errorf("root %q %v %q", s.Root.Name, s.Root.IsOperation, s.Root.Path)
	}
	kinds := map[string]bool{} // name → is an operation
	var walk func(el *snapshot.Element, parentFIFO bool)
	walk = func(el *snapshot.Element, parentFIFO bool) {
		if !tree.ValidName(el.Name) {
			t.Errorf("%s: invalid name %q", el.Path, el.Name)
		}
		if _, dup := kinds[el.Name]; dup {
			t.Errorf("%s: duplicate name %q", el.Path, el.Name)
		}
		kinds[el.Name] = el.IsOperation
		if !strings.HasPrefix(el.Path, "$.tree.children[") {
			t.Errorf("element %q has path %q", el.Name, el.Path)
		}
		if el.IsOperation {
			if len(el.Children) > 0 {
				t.Errorf("%s: operation with children", el.Path)
			}
			if err := tree.ValidateOperation(&el.Op, el.Demand, el.Usage); err != nil {
				t.Errorf("%s: %v", el.Path, err)
			}
			vecOK(el.Path+".job_resources", el.JobResources)
			return
		}
		if parentFIFO {
			t.Errorf("%s: pool in a fifo pool", el.Path)
		}
		if err := tree.ValidatePool(&el.Pool); err != nil {
			t.Errorf("%s: %v", el.Path, err)
		}
		for k, x := range el.AccumulatedVolume {
			if !(x >= 0) || math.IsInf(x, 0) {
				t.Errorf("%s: accumulated volume of %s is %v", el.Path, resource.Kind(k), x)
			}
		}
		for i := range el.Children {
			walk(&el.Children[i], el.Pool.Mode == tree.ModeFIFO)
		}
	}
	for i := range s.Root.Children {
		walk(&s.Root.Children[i], false)
	}
	if len(s.Updates) == 0 {
		t.Errorf("no updates")
	}
	for i := range s.Updates {
		u := &s.Updates[i]
		if u.HasElapsed && u.Elapsed < 0 || !u.HasElapsed && u.Elapsed != 0 {
			t.Errorf("update %d: elapsed %v (set %v)", i, u.Elapsed, u.HasElapsed)
		}
		if u.Config != nil {
			cfgOK("update config", u.Config)
		}
		if u.Total != nil {
			vecOK("update total", *u.Total)
		}
		for _, a := range u.Set {
			isOp, ok := kinds[a.Element]
			if !ok {
				t.Errorf("%s: unknown element %q", a.Path, a.Element)
				continue
			}
			switch a.Attr {
			case snapshot.AttrDemand, snapshot.AttrUsage:
				if !isOp {
					t.Errorf("%s: demand or usage of a pool", a.Path)
				}
			case snapshot.AttrStrongGuarantee:
				if isOp {
					t.Errorf("%s: guarantee of an operation", a.Path)
				}
			case snapshot.AttrWeight:
				if !(a.Num >= tree.MinWeight && a.Num <= tree.MaxWeight) {
					t.Errorf("%s: weight %v", a.Path, a.Num)
				}
			case snapshot.AttrResourceLimits:
			default:
				t.Errorf("%s: unknown attribute %d", a.Path, a.Attr)
			}
			vecOK(a.Path, a.Vec.OrZero())
		}
	}
}
