package poolcrd

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fairsched/fairsched/client"
)

func parse(t *testing.T, doc string) Pool {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	p, err := FromUnstructured(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToAPI(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"empty spec", `
metadata: {name: research}
`, `{}`},
		{"every attribute", `
metadata: {name: research}
spec:
  parent: company
  mode: fifo
  weight: 3
  strongGuaranteeResources: {cpu: 500m, memory: 16Gi, userSlots: 10}
  resourceLimits: {cpu: 64, gpu: 8}
  maxOperationCount: 100
  maxRunningOperationCount: 10
  fifoSortParameters: [weight, start_time]
  integralGuarantees:
    guaranteeType: burst
    resourceFlow: {cpu: "2"}
    burstGuaranteeResources: {cpu: "32"}
    canAcceptFreeVolume: true
  fairShareStarvationTimeoutSeconds: 30
  fairShareStarvationTolerance: 0.8
  enableAggressiveStarvation: true
  allowAggressivePreemption: false
  allowNormalPreemption: true
  nonPreemptibleResourceUsageThreshold: {userSlots: 2}
  schedulingTagFilter: "zone=a & !taint:spot=:NoSchedule"
`, `{"parent":"company","mode":"fifo","weight":3,"strong_guarantee_resources":{"user_slots":10,"cpu":0.5,"memory":17179869184},` +
			`"resource_limits":{"cpu":64,"gpu":8},"max_operation_count":100,"max_running_operation_count":10,` +
			`"fifo_sort_parameters":["weight","start_time"],"integral_guarantees":{"guarantee_type":"burst",` +
			`"resource_flow":{"cpu":2},"burst_guarantee_resources":{"cpu":32},"can_accept_free_volume":true},` +
			`"fair_share_starvation_timeout_s":30,"fair_share_starvation_tolerance":0.8,"enable_aggressive_starvation":true,` +
			`"allow_aggressive_preemption":false,"allow_normal_preemption":true,` +
			`"non_preemptible_resource_usage_threshold":{"user_slots":2},"scheduling_tag_filter":"zone=a \u0026 !taint:spot=:NoSchedule"}`},
	} {
		p := parse(t, tc.doc)
		b, err := json.Marshal(p.Spec.ToAPI())
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}

func TestFromUnstructuredErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"weight not a number", `{"weight": "heavy"}`, "weight"},
		{"quantity", `{"resourceLimits": {"cpu": "lots"}}`, "quantities"},
	} {
		var spec map[string]any
		if err := json.Unmarshal([]byte(tc.spec), &spec); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p"}, "spec": spec}}
		if _, err := FromUnstructured(u); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

func TestParentFirst(t *testing.T) {
	mk := func(name, parent string) Pool { return Pool{Name: name, Spec: Spec{Parent: parent}} }
	for _, tc := range []struct {
		name  string
		pools []Pool
		want  string
	}{
		{"chain given backwards", []Pool{mk("c", "b"), mk("b", "a"), mk("a", "")}, "a b c"},
		{"parent outside the set", []Pool{mk("y", "x"), mk("z", "y"), mk("b", "")}, "b y z"},
		{"siblings by name", []Pool{mk("s2", "r"), mk("s1", "r"), mk("r", "")}, "r s1 s2"},
		{"cycle last", []Pool{mk("p", "q"), mk("q", "p"), mk("a", "")}, "a p q"},
		{"self parent", []Pool{mk("p", "p")}, "p"},
	} {
		var names []string
		for _, p := range ParentFirst(tc.pools) {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%s: ParentFirst = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	o := client.PoolOrchid{Name: "p", Shares: client.Shares{
		FairShare:        client.Share{CPU: 0.25, Memory: 0.1},
		UsageShare:       client.Share{CPU: 0.2, Memory: 0.3},
		DemandShare:      client.Share{CPU: 0.5},
		DominantResource: "cpu"},
		SatisfactionRatio: 0.8, StarvationStatus: "starving", RunningOperationCount: 3, PendingOperationCount: 1}
	got := StatusOf(o, 7)
	want := Status{FairShare: 0.25, Usage: 0.2, Demand: 0.5, Satisfaction: 0.8, Starving: true,
		StarvationStatus: "starving", DominantResource: "cpu", RunningOperations: 3, PendingOperations: 1,
		ObservedGeneration: 7}
	if got != want {
		t.Errorf("StatusOf = %+v, want %+v", got, want)
	}
	o.StarvationStatus, o.SatisfactionRatio, o.DominantResource = "non_starving", 1e300, ""
	got = StatusOf(o, 1)
	if got.Starving || got.Satisfaction != 1e9 || got.FairShare != 0.25 || got.Usage != 0.3 {
		t.Errorf("not starving, no dominant resource: %+v; want starving false, satisfaction 1e9, the largest shares",
			got)
	}
}
