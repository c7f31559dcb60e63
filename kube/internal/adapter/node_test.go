package adapter

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairsched/fairsched/client"
)

func testNode(name string, alloc corev1.ResourceList, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func testPod(name string, requests corev1.ResourceList, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + namesUID(name))},
		Spec: corev1.PodSpec{SchedulerName: "fairsched",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func namesUID(name string) string { return strings.ReplaceAll(name, "/", "-") }

func TestNodeLimits(t *testing.T) {
	node := testNode("n", rl("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4"), nil)
	for _, tc := range []struct {
		name   string
		others []*corev1.Pod
		want   client.Resources
	}{
		{"empty", nil, client.Resources{UserSlots: 110, CPU: 8, Memory: 32 << 30, GPU: 4}},
		{"others' requests subtracted", []*corev1.Pod{
			testPod("a", rl("cpu", "1500m", "memory", "1Gi")),
			testPod("b", rl("cpu", "250m", "nvidia.com/gpu", "1")),
		}, client.Resources{UserSlots: 108, CPU: 6.25, Memory: 31 << 30, GPU: 3}},
		{"over-used counts as zero", []*corev1.Pod{testPod("a", rl("cpu", "9", "memory", "40Gi"))},
			client.Resources{UserSlots: 109, CPU: 0, Memory: 0, GPU: 4}},
		{"cpu kept in hundredths", []*corev1.Pod{testPod("a", rl("cpu", "1"))},
			client.Resources{UserSlots: 109, CPU: 7, Memory: 32 << 30, GPU: 4}},
	} {
		if got := nodeLimits(node, tc.others); got != tc.want {
			t.Errorf("%s: nodeLimits = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	odd := testNode("n", rl("cpu", "3333m"), nil)
	if got := nodeLimits(odd, nil).CPU; got != 3.33 {
		t.Errorf("3333m allocatable: cpu %v, want 3.33 (the server's hundredths, rounded down)", got)
	}
}

func TestNodeTags(t *testing.T) {
	node := testNode("n", nil, map[string]string{"zone": "a", "ssd": "true", "secret": "x", "bad": "has space"},
		corev1.Taint{Key: "gpu", Value: "a100", Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule})
	got := nodeTags(node, []string{"zone", "ssd", "bad"})
	want := []string{"ssd=true", "taint:gpu=a100:NoSchedule", "taint:spot=:PreferNoSchedule", "zone=a"}
	if !slices.Equal(got, want) {
		t.Errorf("nodeTags = %q, want %q", got, want)
	}
}

func TestSchedulable(t *testing.T) {
	ready := testNode("n", nil, nil)
	cordoned := testNode("n", nil, nil)
	cordoned.Spec.Unschedulable = true
	notReady := testNode("n", nil, nil)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	noCondition := testNode("n", nil, nil)
	noCondition.Status.Conditions = nil
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{{"ready", ready, true}, {"cordoned", cordoned, false}, {"not ready", notReady, false},
		{"no Ready condition", noCondition, false}} {
		if got := schedulable(tc.node); got != tc.want {
			t.Errorf("%s: schedulable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFits(t *testing.T) {
	node := testNode("n1", rl("cpu", "4", "ephemeral-storage", "10Gi", "example.com/fpga", "1"),
		map[string]string{"disk": "ssd", "zone": "a"},
		corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})
	tolerate := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml",
			Effect: corev1.TaintEffectNoSchedule}}
	}
	selector := func(k, v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
	}
	affinity := func(op corev1.NodeSelectorOperator, vals ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: vals}}}}}}}
		}
	}
	hostPort := func(port int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: port}}
		}
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		onNode []*corev1.Pod
		want   string // a part of the reason; "" fits
	}{
		{"tolerated", testPod("p", rl("cpu", "1"), tolerate), nil, ""},
		{"untolerated taint", testPod("p", rl("cpu", "1")), nil, "taint dedicated=ml:NoSchedule"},
		{"selector matches", testPod("p", nil, tolerate, selector("disk", "ssd")), nil, ""},
		{"selector does not", testPod("p", nil, tolerate, selector("disk", "hdd")), nil, "node selector"},
		{"affinity in", testPod("p", nil, tolerate, affinity(corev1.NodeSelectorOpIn, "a", "b")), nil, ""},
		{"affinity not in", testPod("p", nil, tolerate, affinity(corev1.NodeSelectorOpNotIn, "a")), nil,
			"required node affinity"},
		{"host port free", testPod("p", nil, tolerate, hostPort(8080)), []*corev1.Pod{testPod("o", nil, hostPort(9090))}, ""},
		{"host port taken", testPod("p", nil, tolerate, hostPort(8080)), []*corev1.Pod{testPod("o", nil, hostPort(8080))},
			"host port 8080/TCP"},
		{"ephemeral storage fits", testPod("p", rl("ephemeral-storage", "4Gi"), tolerate),
			[]*corev1.Pod{testPod("o", rl("ephemeral-storage", "6Gi"))}, ""},
		{"ephemeral storage full", testPod("p", rl("ephemeral-storage", "5Gi"), tolerate),
			[]*corev1.Pod{testPod("o", rl("ephemeral-storage", "6Gi"))}, "ephemeral-storage"},
		{"extended resource absent elsewhere", testPod("p", rl("example.com/fpga", "2"), tolerate), nil,
			"example.com/fpga"},
		{"cpu is fairsched's to count", testPod("p", rl("cpu", "64"), tolerate), nil, ""},
	} {
		got := fits(tc.pod, node, tc.onNode)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: fits = %q, want %q", tc.name, got, tc.want)
		}
	}
}
