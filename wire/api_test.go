package wire

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tree"
)

// wantError checks that err is an *Error with code and path.
func wantError(t *testing.T, what string, err error, code, path string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: got %v, want an *Error %s at %s", what, err, code, path)
	}
	if e.Code != code || e.Path != path {
		t.Fatalf("%s: got %s at %q (%s), want %s at %q", what, e.Code, e.Path, e.Message, code, path)
	}
}

func TestDecodePool(t *testing.T) {
	b, err := DecodePool([]byte(`{"parent": "prod", "mode": "fifo", "weight": 2, "strong_guarantee_resources": {"cpu": 1.5},
		"resource_limits": {"memory": 1024}, "max_operation_count": 10, "max_running_operation_count": 5,
		"fifo_sort_parameters": ["start_time"], "enable_lightweight_operations": true,
		"integral_guarantees": {"guarantee_type": "burst", "resource_flow": {"cpu": 1}, "burst_guarantee_resources": {"cpu": 2}},
		"fair_share_starvation_timeout_s": 10, "fair_share_starvation_tolerance": 0.5, "allow_normal_preemption": false}`), tree.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.Config
	if !b.HasParent || b.Parent != "prod" || c.Mode != tree.ModeFIFO || c.Weight != tree.Some(2) || c.StrongGuarantee.V[resource.CPU] != 150 ||
		c.MaxRunningOperationCount != tree.SomeInt(5) || c.Integral.Type != tree.GuaranteeBurst || !c.EnableLightweightOperations ||
		c.AllowNormalPreemption != tree.SomeBool(false) || !reflect.DeepEqual(c.FifoSortParameters, []tree.FifoSortParam{tree.FifoStartTime}) {
		t.Fatalf("decoded %+v", b)
	}
	// The encoder's output decodes to the same config.
	out := AppendPool(nil, "p", "prod", &c)
	if !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	b2, err := DecodePool(out, tree.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b2.Config, c) || b2.Name != "p" || b2.Parent != "prod" {
		t.Fatalf("round trip:\n%+v\n%+v", b2.Config, c)
	}
	// PATCH: null resets, other attributes stay.
	b3, err := DecodePool([]byte(`{"weight": null, "mode": "fair_share"}`), c)
	if err != nil {
		t.Fatal(err)
	}
	if b3.Config.Weight.Set || b3.Config.Mode != tree.ModeFairShare || b3.Config.MaxRunningOperationCount != c.MaxRunningOperationCount {
		t.Fatalf("patched %+v", b3.Config)
	}

	f := func(body, code, path string) {
		t.Helper()
		_, err := DecodePool([]byte(body), tree.PoolConfig{})
		wantError(t, body, err, code, path)
	}
	f(`{"weight": 0}`, CodeInvalidValue, "$.weight")
	f(`{"weight": "1"}`, CodeWrongType, "$.weight")
	f(`{"mode": "lifo"}`, CodeInvalidValue, "$.mode")
	f(`{"max_operation_count": 1, "max_running_operation_count": 2}`, CodeInvalidValue, "$.max_operation_count")
	f(`{"integral_guarantees": {"guarantee_type": "relaxed", "burst_guarantee_resources": {"cpu": 1}}}`, CodeInvalidValue, "$.integral_guarantees.burst_guarantee_resources")
	f(`{"fair_share_starvation_tolerance": 2}`, CodeInvalidValue, "$.fair_share_starvation_tolerance")
	f(`{"resource_limits": {"cpu": -1}}`, CodeInvalidValue, "$.resource_limits.cpu")
	f(`{"wieght": 1}`, CodeUnknownAttribute, "$.wieght")
	f(`{"parent": "a b"}`, CodeInvalidName, "$.parent")
}

func TestDecodeStartOperation(t *testing.T) {
	spec, err := DecodeStartOperation([]byte(`{"id": "etl-1", "type": "map", "pool": "prod", "weight": 2, "preemption_mode": "graceful",
		"is_gang": true, "resource_limits": {"cpu": 10}, "allocation_preemption_timeout_s": 5,
		"tasks": [{"name": "map", "job_count": 10, "resources": {"cpu": 1, "memory": 1024}, "duration_hint_s": 60}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := schedule.OperationSpec{ID: "etl-1", Type: "map", Pool: "prod", Weight: tree.Some(2), PreemptionMode: schedule.PreemptionGraceful,
		IsGang: true, ResourceLimits: tree.PartialVec{V: resource.Vec{resource.CPU: 1000}, Set: [resource.Count]bool{resource.CPU: true}},
		AllocationPreemptionTimeout: tree.SomeDuration(5 * clock.Second),
		Tasks:                       []schedule.TaskSpec{{Name: "map", JobCount: 10, Resources: resource.Vec{resource.CPU: 100, resource.Memory: 1024}, DurationHintS: 60}}}
	if !reflect.DeepEqual(spec, want) {
		t.Fatalf("got %+v\nwant %+v", spec, want)
	}
	if s, _ := DecodeStartOperation([]byte(`{"pool": "<Root>", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)); s.Pool != "" {
		t.Fatalf("<Root> decodes to pool %q", s.Pool)
	}
	f := func(body, code, path string) {
		t.Helper()
		_, err := DecodeStartOperation([]byte(body))
		wantError(t, body, err, code, path)
	}
	f(`{}`, CodeMissingAttribute, "$.tasks")
	f(`{"tasks": []}`, CodeInvalidValue, "$.tasks")
	f(`{"tasks": [{"job_count": 0, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.tasks[0].job_count")
	f(`{"tasks": [{"job_count": 1.5, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.tasks[0].job_count")
	f(`{"tasks": [{"job_count": 1, "resources": {}}]}`, CodeInvalidValue, "$.tasks[0].resources")
	f(`{"tasks": [{"job_count": 1}]}`, CodeMissingAttribute, "$.tasks[0].resources")
	f(`{"tasks": [{"job_count": 1099511627776, "resources": {"memory": 1099511627776}}]}`, CodeInvalidValue, "$.tasks[0].job_count")
	f(`{"tasks": [{"job_count": 1, "resources": {"tpu": 1}}]}`, CodeUnknownAttribute, "$.tasks[0].resources.tpu")
	f(`{"type": "spark", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.type")
	f(`{"id": "", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidName, "$.id")
	f(`{"preemption_mode": "soft", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.preemption_mode")
	f(`{"fair_share_starvation_tolerance": 1.5, "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.fair_share_starvation_tolerance")
	f(`{"weight": 1e300, "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.weight")
	// The ranges are the core's (schedule.ValidateSpec), named at the
	// body's paths; the JSON types are the decoder's.
	f(`{"weight": "1", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeWrongType, "$.weight")
	f(`{"pool": "", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidName, "$.pool")
	f(`{"pool": "a b", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidName, "$.pool")
	f(`{"id": "a/b", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidName, "$.id")
	f(`{"allocation_preemption_timeout_s": -1, "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.allocation_preemption_timeout_s")
	f(`{"fair_share_starvation_timeout_s": 1e300, "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.fair_share_starvation_timeout_s")
	f(`{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}, {"job_count": -1, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.tasks[1].job_count")
	f(`{"tasks": [{"job_count": 1e300, "resources": {"cpu": 1}}]}`, CodeInvalidValue, "$.tasks[0].job_count")
	f(`{"tasks": [{"job_count": "1", "resources": {"cpu": 1}}]}`, CodeWrongType, "$.tasks[0].job_count")
	f(`{"tasks": [{"job_count": 1, "resources": {"cpu": 1}, "duration_hint_s": -1}]}`, CodeInvalidValue, "$.tasks[0].duration_hint_s")
	f(`{"tasks": [{"job_count": 1, "resources": {"cpu": 1}, "name": "`+strings.Repeat("n", 129)+`"}]}`, CodeInvalidValue, "$.tasks[0].name")
	f(`{"tasks": [`+strings.TrimSuffix(strings.Repeat(`{"job_count": 1, "resources": {"cpu": 1}},`, 1001), ",")+`]}`, CodeInvalidValue, "$.tasks")
}

func TestDecodeOperationPatch(t *testing.T) {
	p, err := DecodeOperationPatch([]byte(`{"weight": 3, "pool": "<Root>", "resource_limits": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Weight != tree.Some(3) || !p.HasPool || p.Pool != "" || !p.HasResourceLimits || !p.ResourceLimits.IsEmpty() {
		t.Fatalf("got %+v", p)
	}
	_, err = DecodeOperationPatch([]byte(`{"weight": -1}`))
	wantError(t, "negative weight", err, CodeInvalidValue, "$.weight")
	_, err = DecodeOperationPatch([]byte(`{"state": "running"}`))
	wantError(t, "state", err, CodeUnknownAttribute, "$.state")
}

func TestDecodeServeConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(examplesDir, "serve.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := DecodeServeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Pools) != 3 || sc.Pools[2].Config.Mode != tree.ModeFIFO || !sc.Pools[2].Config.EnableLightweightOperations ||
		sc.Pools[0].Config.Integral.Type != tree.GuaranteeBurst || sc.Pools[1].Config.Integral.Type != tree.GuaranteeRelaxed {
		t.Fatalf("decoded %+v", sc.Pools)
	}
	// GET /api/v1/config's output decodes to the same config.
	out := AppendConfig(nil, &sc.Scheduler)
	if !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	// node_shards may be repeated at run time, never changed.
	if back, err := DecodeConfigPatch(out, sc.Scheduler); err != nil || !reflect.DeepEqual(back, sc.Scheduler) {
		t.Fatalf("GET's output patched onto the same config: %+v, %v", back, err)
	}
	other := schedule.DefaultConfig()
	other.Shards = sc.Scheduler.Shards + 1
	_, err = DecodeConfigPatch(out, other)
	wantError(t, "node_shards", err, CodeInvalidValue, "$.node_shards")
	sc2, err := DecodeServeConfig([]byte(`{"config": ` + string(out) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if sc2.Scheduler != sc.Scheduler {
		t.Fatalf("round trip:\n%+v\n%+v", sc2.Scheduler, sc.Scheduler)
	}

	f := func(body, code, path string) {
		t.Helper()
		_, err := DecodeServeConfig([]byte(body))
		wantError(t, body, err, code, path)
	}
	f(`{"pools": [{"mode": "fifo"}]}`, CodeMissingAttribute, "$.pools[0].name")
	f(`{"pools": [{"name": "a"}, {"name": "a"}]}`, CodeDuplicateName, "$.pools[1].name")
	f(`{"config": {"fair_share_update_period_s": 0}}`, CodeInvalidValue, "$.config.fair_share_update_period_s")
	f(`{"config": {"fair_share_starvation_timeout_s": 200}}`, CodeInvalidValue, "$.config.fair_share_aggressive_starvation_timeout_s")
	f(`{"config": {"main_resource": "tpu"}}`, CodeInvalidValue, "$.config.main_resource")
	f(`{"config": {"max_operation_count": 1}}`, CodeInvalidValue, "$.config.max_operation_count")
	f(`{"tree": {}}`, CodeUnknownAttribute, "$.tree")

	c, err := DecodeConfigPatch([]byte(`{"fair_share_update_period_s": 1, "integral_guarantees": {"smooth_period_s": 30}}`), schedule.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.FairShareUpdatePeriod != clock.Second || c.FairShare.SmoothPeriodS != 30 || c.FairShare.PoolCapacitySaturationPeriodS != 86400 {
		t.Fatalf("patched %+v", c)
	}
}

// otherValue returns a valid value of the fair-share setting st other than
// its default.
func otherValue(t *testing.T, st *fairshare.Setting) settings.Value {
	t.Helper()
	d := st.Default
	switch st.Kind {
	case settings.KindBool:
		return settings.Value{Bool: !d.Bool}
	case settings.KindChoice:
		return settings.Value{Choice: st.Choices[len(st.Choices)-1]}
	case settings.KindDuration, settings.KindNumber:
		switch {
		case d.Null:
			return settings.Value{Number: st.Min + 0.25}
		case math.IsInf(st.Max, 1):
			return settings.Value{Number: d.Number*2 + 0.25}
		}
		return settings.Value{Number: (st.Min + st.Max) / 2}
	}
	t.Fatalf("%s: no other value of kind %d", st.Key, st.Kind)
	return settings.Value{}
}

// GET /api/v1/config encodes every fair-share key so that PATCH decodes it
// back, one key at a time and all at once, and a snapshot's config decodes
// the same keys to the same fair-share config.
func TestConfigFairShareRoundTrip(t *testing.T) {
	def := schedule.DefaultConfig()
	// The encoding of the defaults, as it was before the table.
	out := AppendConfig(nil, &def)
	const prefix = `{"main_resource":"cpu","integral_guarantees":{"smooth_period_s":60,"pool_capacity_saturation_period_s":86400,` +
		`"relaxed_share_multiplier_limit":3,"should_distribute_free_volume_among_children":false},` +
		`"enable_step_function_for_gang_operations":false,"enable_improved_fair_share_by_fit_factor_computation":true,` +
		`"infer_weight_from_guarantees_share_multiplier":null,"fair_share_update_period_s":0.2,`
	if !strings.HasPrefix(string(out), prefix) {
		t.Fatalf("AppendConfig(defaults) = %s\nwant the prefix %s", out, prefix)
	}
	roundTrip := func(what string, c schedule.Config) {
		t.Helper()
		out := AppendConfig(nil, &c)
		back, err := DecodeConfigPatch(out, schedule.DefaultConfig())
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("%s: %s decodes to %+v, %v; want %+v", what, out, back, err, c)
		}
		// The fair-share keys of the same output are a snapshot's config.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		snap := map[string]any{"total_resources": map[string]any{}, "tree": map[string]any{}}
		cfg := map[string]json.RawMessage{}
		for _, k := range configKeys {
			if v, ok := m[k]; ok {
				cfg[k] = v
			}
		}
		snap["config"] = cfg
		data, _ := json.Marshal(snap)
		s, err := DecodeSnapshot(data)
		if err != nil || s.Config != c.FairShare {
			t.Fatalf("%s: snapshot config %s decodes to %+v, %v; want %+v", what, data, s, err, c.FairShare)
		}
	}
	all := schedule.DefaultConfig()
	for i := range fairshare.Settings() {
		st := &fairshare.Settings()[i]
		if st.Ignored {
			if strings.Contains(string(out), `"`+st.Member()+`"`) {
				t.Errorf("%s: ignored but encoded", st.Key)
			}
			continue
		}
		c := schedule.DefaultConfig()
		v := otherValue(t, st)
		if err := st.Set(&c.FairShare, v); err != nil {
			t.Fatalf("%s: %v", st.Key, err)
		}
		if err := st.Set(&all.FairShare, v); err != nil {
			t.Fatalf("%s: %v", st.Key, err)
		}
		if c == def {
			t.Fatalf("%s: setting %+v changes nothing", st.Key, v)
		}
		roundTrip(st.Key, c)
	}
	roundTrip("every key", all)
}

// A bad fair-share value answers its precise path, in the tree config and in
// a snapshot's config.
func TestConfigFairShareErrors(t *testing.T) {
	f := func(cfg, code, path, msg string) {
		t.Helper()
		_, err := DecodeConfigPatch([]byte(cfg), schedule.DefaultConfig())
		wantError(t, cfg, err, code, "$"+path)
		if msg != "" && !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", cfg, err, msg)
		}
		snap := `{"total_resources": {}, "tree": {}, "config": ` + cfg + `}`
		_, err = DecodeSnapshot([]byte(snap))
		wantError(t, snap, err, code, "$.config"+path)
	}
	f(`{"main_resource": "tpu"}`, CodeInvalidValue, ".main_resource", `cannot use "tpu": want "user_slots", "cpu", "gpu", "memory" or "network"`)
	f(`{"main_resource": 1}`, CodeWrongType, ".main_resource", "want a string")
	f(`{"integral_guarantees": null}`, CodeWrongType, ".integral_guarantees", "want an object")
	f(`{"integral_guarantees": {"smooth_period_s": 0}}`, CodeInvalidValue, ".integral_guarantees.smooth_period_s",
		"cannot use 0: want a positive number of seconds")
	f(`{"integral_guarantees": {"smooth_period_s": null}}`, CodeWrongType, ".integral_guarantees.smooth_period_s", "want a number")
	f(`{"integral_guarantees": {"pool_capacity_saturation_period_s": -1}}`, CodeInvalidValue, ".integral_guarantees.pool_capacity_saturation_period_s", "")
	f(`{"integral_guarantees": {"relaxed_share_multiplier_limit": 0.5}}`, CodeInvalidValue, ".integral_guarantees.relaxed_share_multiplier_limit",
		"cannot use 0.5: want a number in [1, 10]")
	f(`{"integral_guarantees": {"should_distribute_free_volume_among_children": 1}}`, CodeWrongType,
		".integral_guarantees.should_distribute_free_volume_among_children", "want true or false")
	f(`{"integral_guarantees": {"smooth_period": 60}}`, CodeUnknownAttribute, ".integral_guarantees.smooth_period",
		`of the tree's integral_guarantees: did you mean "smooth_period_s"?`)
	f(`{"integral_guarantees": {"guarantee_type": "burst"}}`, CodeUnknownAttribute, ".integral_guarantees.guarantee_type", "")
	f(`{"integral_guarantees.smooth_period_s": 30}`, CodeUnknownAttribute, `["integral_guarantees.smooth_period_s"]`, "")
	f(`{"smooth_period_s": 30}`, CodeUnknownAttribute, ".smooth_period_s", "")
	f(`{"enable_step_function_for_gang_operations": "yes"}`, CodeWrongType, ".enable_step_function_for_gang_operations", "")
	f(`{"enable_improved_fair_share_by_fit_factor_computation": null}`, CodeWrongType, ".enable_improved_fair_share_by_fit_factor_computation", "")
	f(`{"forbid_immediate_operations_in_root": 0}`, CodeWrongType, ".forbid_immediate_operations_in_root", "")
	f(`{"infer_weight_from_guarantees_share_multiplier": 0.5}`, CodeInvalidValue, ".infer_weight_from_guarantees_share_multiplier",
		"cannot use 0.5: want null (unset) or a number of at least 1")
	f(`{"infer_weight_from_guarantees_share_multiplier": 1e999}`, CodeInvalidValue, ".infer_weight_from_guarantees_share_multiplier", "want a finite number")
	// The first bad key in sorted order answers.
	f(`{"main_resource": "tpu", "integral_guarantees": {"relaxed_share_multiplier_limit": 11, "smooth_period_s": -1}}`,
		CodeInvalidValue, ".integral_guarantees.relaxed_share_multiplier_limit", "")

	// Accepted: null resets the multiplier, forbid_immediate_operations_in_root
	// changes nothing, a partial integral_guarantees keeps the other members.
	base := schedule.DefaultConfig()
	base.FairShare.InferWeightFromGuaranteesShareMultiplier = tree.Some(2)
	base.FairShare.PoolCapacitySaturationPeriodS = 1000
	c, err := DecodeConfigPatch([]byte(`{"infer_weight_from_guarantees_share_multiplier": null, "forbid_immediate_operations_in_root": false,
		"integral_guarantees": {"smooth_period_s": 1e12}}`), base)
	want := base
	want.FairShare.InferWeightFromGuaranteesShareMultiplier = tree.OptFloat{}
	want.FairShare.SmoothPeriodS = 1e12
	if err != nil || c != want {
		t.Fatalf("patched %+v, %v; want %+v", c, err, want)
	}
}

// The control-plane decoders never panic, report an *Error with a path, and
// what they accept re-encodes to what they decoded.
func FuzzDecodePool(f *testing.F) {
	for _, s := range []string{`{}`, `{"parent": "a", "weight": 2, "mode": "fifo"}`, `{"integral_guarantees": {"guarantee_type": "burst", "resource_flow": {"cpu": 1}}}`,
		`{"weight": null, "resource_limits": {"cpu": 1.5, "memory": 1}}`, `{"fifo_sort_parameters": ["weight", "pending_allocation_count"]}`,
		`{"acl": [{"action": "allow", "subjects": ["alice", "group:ml"], "permissions": ["administer", "use"]}], "inherit_acl": false}`,
		`{"acl": [], "inherit_acl": null}`, `{"acl": [{"action": "deny", "subjects": ["a@b.c"], "permissions": ["use"]}, {"action": "allow", "subjects": ["x"], "permissions": ["use"]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodePool(data, tree.PoolConfig{})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		out := AppendPool(nil, "x", "", &b.Config)
		b2, err := DecodePool(out, tree.PoolConfig{})
		if err != nil || !reflect.DeepEqual(b2.Config, b.Config) {
			t.Fatalf("%q: re-encoded %s: %v", data, out, err)
		}
	})
}

func FuzzDecodeStartOperation(f *testing.F) {
	for _, s := range []string{`{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`,
		`{"id": "a", "pool": "b", "type": "vanilla", "weight": 1, "tasks": [{"name": "t", "job_count": 3, "resources": {"memory": 1}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeStartOperation(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		if len(spec.Tasks) == 0 {
			t.Fatalf("%q: accepted without tasks", data)
		}
		for _, tk := range spec.Tasks {
			if tk.JobCount < 1 || tk.Resources.IsZero() {
				t.Fatalf("%q: accepted task %+v", data, tk)
			}
		}
		// What the decoder accepts, the core starts (in the root: the
		// pool's existence is the scheduler's to check).
		spec.Pool = ""
		s := schedule.New(tree.New(tree.PoolConfig{}), schedule.DefaultConfig())
		if _, _, err := s.StartOperation(0, spec); err != nil {
			t.Fatalf("%q: decoded, then refused by the core: %v", data, err)
		}
	})
}

func FuzzDecodeOperationPatch(f *testing.F) {
	for _, s := range []string{`{}`, `{"weight": 2}`, `{"pool": "a", "resource_limits": {"cpu": 1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeOperationPatch(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		if p.Weight.Set && !(p.Weight.V >= tree.MinWeight && p.Weight.V <= tree.MaxWeight) {
			t.Fatalf("%q: accepted weight %v", data, p.Weight.V)
		}
		if err := schedule.ValidatePatch(&p.OperationPatch); err != nil {
			t.Fatalf("%q: decoded, then refused by the core: %v", data, err)
		}
	})
}

func FuzzDecodeServeConfig(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join(examplesDir, "serve.json")); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"config": {"fair_share_update_period_s": 1}, "pools": [{"name": "a"}, {"name": "b", "parent": "a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := DecodeServeConfig(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		out := AppendConfig(nil, &sc.Scheduler)
		sc2, err := DecodeServeConfig([]byte(`{"config": ` + string(out) + `}`))
		if err != nil || sc2.Scheduler != sc.Scheduler {
			t.Fatalf("%q: re-encoded %s: %v", data, out, err)
		}
	})
}

func FuzzDecodeConfigPatch(f *testing.F) {
	f.Add([]byte(`{"fair_share_update_period_s": 0.5}`))
	f.Add([]byte(`{"integral_guarantees": {"smooth_period_s": 30}, "max_operation_count": 100000}`))
	f.Add([]byte(`{"main_resource": "gpu", "integral_guarantees": {"pool_capacity_saturation_period_s": 3600, "relaxed_share_multiplier_limit": 10,
		"should_distribute_free_volume_among_children": true}, "enable_step_function_for_gang_operations": true,
		"enable_improved_fair_share_by_fit_factor_computation": false, "forbid_immediate_operations_in_root": false,
		"infer_weight_from_guarantees_share_multiplier": 1.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeConfigPatch(data, schedule.DefaultConfig())
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		if err := schedule.ValidateConfig(&c); err != nil {
			t.Fatalf("%q: accepted %+v: %v", data, c, err)
		}
		// What GET answers for an accepted config decodes to the same config.
		out := AppendConfig(nil, &c)
		back, err := DecodeConfigPatch(out, schedule.DefaultConfig())
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("%q: config %s decodes to %+v, %v; want %+v", data, out, back, err, c)
		}
	})
}

// TestSchedulingTagFilter: pools and operations take a scheduling_tag_filter
// formula (docs/semantics.md#scheduling-tag-filters); answers give it in canonical form, which decodes
// to the same filter; a formula that does not parse is an invalid_value at
// its path whose message names the offset.
func TestSchedulingTagFilter(t *testing.T) {
	b, err := DecodePool([]byte(`{"scheduling_tag_filter": "gpu&!preemptible"}`), tree.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Config.SchedulingTagFilter.String(); got != "gpu & !preemptible" {
		t.Fatalf("decoded filter %q", got)
	}
	out := AppendPool(nil, "p", "", &b.Config)
	if want := `{"name":"p","mode":"fair_share","scheduling_tag_filter":"gpu & !preemptible"}`; string(out) != want {
		t.Fatalf("encoded %s, want %s", out, want)
	}
	b2, err := DecodePool(out, tree.PoolConfig{})
	if err != nil || !b2.Config.SchedulingTagFilter.Equal(b.Config.SchedulingTagFilter) {
		t.Fatalf("round trip: %v, %v", b2, err)
	}
	// PATCH: null and "" take the filter away.
	for _, body := range []string{`{"scheduling_tag_filter": null}`, `{"scheduling_tag_filter": ""}`} {
		b3, err := DecodePool([]byte(body), b.Config)
		if err != nil || !b3.Config.SchedulingTagFilter.IsEmpty() {
			t.Fatalf("%s: %+v, %v", body, b3, err)
		}
	}
	spec, err := DecodeStartOperation([]byte(`{"scheduling_tag_filter": "tag_2 | tag_1 & tag_4", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`))
	if err != nil || spec.SchedulingTagFilter.String() != "tag_2 | (tag_1 & tag_4)" {
		t.Fatalf("start: %q, %v", spec.SchedulingTagFilter.String(), err)
	}

	f := func(body, path, msg string) {
		t.Helper()
		_, err := DecodePool([]byte(body), tree.PoolConfig{})
		if strings.Contains(body, `"tasks"`) { // an operation body
			_, err = DecodeStartOperation([]byte(body))
		}
		wantError(t, body, err, CodeInvalidValue, path)
		if e := err.(*Error); !strings.Contains(e.Message, msg) {
			t.Fatalf("%s: message %q, want one with %q", body, e.Message, msg)
		}
	}
	f(`{"scheduling_tag_filter": "gpu & & ssd"}`, "$.scheduling_tag_filter", `at offset 6: unexpected '&': want a tag, "!" or "("`)
	f(`{"scheduling_tag_filter": "(gpu"}`, "$.scheduling_tag_filter", `want ")" to close the "(" at offset 0`)
	f(`{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}], "scheduling_tag_filter": "a b"}`, "$.scheduling_tag_filter", `unexpected 'b'`)
	_, err = DecodePool([]byte(`{"scheduling_tag_filter": 1}`), tree.PoolConfig{})
	wantError(t, "a number", err, CodeWrongType, "$.scheduling_tag_filter")
}
