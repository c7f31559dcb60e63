package adapter

import (
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/podspec"
)

// boundPod is a pod bound as allocation id of operation op, task index
// ti, in phase.
func boundPod(name, op string, ti int, phase corev1.PodPhase, requests corev1.ResourceList) ourPod {
	p := testPod(name, requests)
	p.Spec.NodeName = "n1"
	p.Status.Phase = phase
	o := podspec.Origin{AllocationID: "a-" + name, OperationID: op, TaskIndex: ti, Resources: podspec.Resources(p)}
	p.Annotations = o.Annotations()
	return ourPod{pod: p, origin: o}
}

func TestDemand(t *testing.T) {
	small, big := rl("cpu", "1"), rl("cpu", "4")
	deleting := func(o ourPod) ourPod {
		now := metav1.Now()
		o.pod.DeletionTimestamp = &now
		return o
	}
	for _, tc := range []struct {
		name          string
		started       bool
		tasks         []string // the server's task names when started
		pending       []*corev1.Pod
		bound         []ourPod
		wantCounts    []int64
		wantTasks     []string
		wantLive      int
		wantSucceeded int
	}{
		{name: "pending pods of two sizes make two tasks",
			pending:    []*corev1.Pod{testPod("a", small), testPod("b", big), testPod("c", small)},
			wantCounts: []int64{2, 1}, wantTasks: []string{"cpu=1,gpu=0,memory=0", "cpu=4,gpu=0,memory=0"}, wantLive: 3},
		{name: "the task label groups pods of any size",
			pending: []*corev1.Pod{
				testPod("a", small, func(p *corev1.Pod) { p.Labels = map[string]string{podspec.LabelTask: "w"} }),
				testPod("b", big, func(p *corev1.Pod) { p.Labels = map[string]string{podspec.LabelTask: "w"} })},
			wantCounts: []int64{2}, wantTasks: []string{"task:w"}, wantLive: 2},
		{name: "bound pods count by their task index; completed stay counted, failed and deleting do not",
			started: true, tasks: []string{"cpu=1,gpu=0,memory=0", "cpu=4,gpu=0,memory=0"},
			pending: []*corev1.Pod{testPod("p", small)},
			bound: []ourPod{
				boundPod("r", "op", 1, corev1.PodRunning, big),
				boundPod("s", "op", 0, corev1.PodSucceeded, small),
				boundPod("f", "op", 0, corev1.PodFailed, small),
				deleting(boundPod("d", "op", 1, corev1.PodRunning, big)),
			},
			wantCounts: []int64{2, 1}, wantTasks: []string{"cpu=1,gpu=0,memory=0", "cpu=4,gpu=0,memory=0"},
			wantLive: 3, wantSucceeded: 1},
		{name: "pods bound under an earlier epoch are not this operation's",
			started: true, tasks: []string{"cpu=1,gpu=0,memory=0"},
			pending:    []*corev1.Pod{testPod("p", small)},
			bound:      []ourPod{boundPod("old", "op-old", 0, corev1.PodSucceeded, small)},
			wantCounts: []int64{1}, wantTasks: []string{"cpu=1,gpu=0,memory=0"}, wantLive: 1},
		{name: "a task with no pod left goes to zero, a new size is appended",
			started: true, tasks: []string{"cpu=1,gpu=0,memory=0"},
			pending:    []*corev1.Pod{testPod("p", big)},
			wantCounts: []int64{0, 1}, wantTasks: []string{"cpu=1,gpu=0,memory=0", "cpu=4,gpu=0,memory=0"}, wantLive: 1},
		{name: "a bound pod of a task the server does not have counts nowhere",
			started: true, tasks: []string{"cpu=1,gpu=0,memory=0"},
			bound:      []ourPod{boundPod("x", "op", 5, corev1.PodRunning, small)},
			wantCounts: []int64{0}, wantTasks: []string{"cpu=1,gpu=0,memory=0"}, wantLive: 1},
		{name: "before a start, a bound pod's task is found by name",
			bound:      []ourPod{boundPod("x", "op", 3, corev1.PodRunning, big)},
			pending:    []*corev1.Pod{testPod("p", small)},
			wantCounts: []int64{1, 1}, wantTasks: []string{"cpu=4,gpu=0,memory=0", "cpu=1,gpu=0,memory=0"}, wantLive: 2},
	} {
		op := &opState{key: "op", id: "op", started: tc.started}
		for _, n := range tc.tasks {
			op.tasks = append(op.tasks, taskState{name: n})
		}
		counts, live, succeeded := op.demand(&keyPods{pending: tc.pending, bound: tc.bound})
		var names []string
		for _, ts := range op.tasks {
			names = append(names, ts.name)
		}
		if !slices.Equal(counts, tc.wantCounts) || !slices.Equal(names, tc.wantTasks) || live != tc.wantLive ||
			succeeded != tc.wantSucceeded {
			t.Errorf("%s: demand = %v tasks %q live %d succeeded %d; want %v %q %d %d", tc.name, counts, names, live,
				succeeded, tc.wantCounts, tc.wantTasks, tc.wantLive, tc.wantSucceeded)
		}
	}
}

func TestOpSpec(t *testing.T) {
	ninety := 90.0
	op := &opState{key: "k8s-j", id: "k8s-j.2", tasks: []taskState{{name: "t", resources: client.Resources{UserSlots: 1, CPU: 2}}}}
	spec := opSpec(op, "research", podspec.Attributes{Weight: 2, Gang: true, Graceful: true, GracefulTimeoutS: &ninety},
		[]int64{5})
	if spec.ID != "k8s-j.2" || spec.Pool != "research" || spec.Weight != 2 || !spec.IsGang ||
		spec.PreemptionMode != "graceful" || *spec.AllocationGracefulPreemptionTimeoutS != 90 ||
		len(spec.Tasks) != 1 || spec.Tasks[0].JobCount != 5 || spec.Tasks[0].Resources.CPU != 2 {
		t.Errorf("opSpec = %+v", spec)
	}
	if s := opSpec(op, "p", podspec.Attributes{}, []int64{1}); s.PreemptionMode != "" || s.IsGang {
		t.Errorf("no annotations: %+v, want the server's defaults", s)
	}
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   client.Operation
		pool *client.PoolOrchid
		want string
	}{
		{"running-operation limit", client.Operation{ID: "o", WaitingFor: &client.WaitingFor{Pool: "team",
			MaxRunningOperationCount: 4}}, nil, "pool team runs its limit of 4 operations"},
		{"pool limit", client.Operation{ID: "o"}, &client.PoolOrchid{Name: "team", Shares: client.Shares{
			LimitsShare: client.Share{CPU: 0.25, UserSlots: 1, Memory: 1, GPU: 1}, UsageShare: client.Share{CPU: 0.25}}},
			"pool team is at its resource limits"},
		{"fair share reached", client.Operation{ID: "o", FairShare: client.Share{CPU: 0.5},
			UsageShare: client.Share{CPU: 0.5}}, nil, "reached its fair share of cpu (0.5 of the cluster"},
		{"below fair share", client.Operation{ID: "o", FairShare: client.Share{CPU: 0.5},
			UsageShare: client.Share{CPU: 0.1}}, nil, "below its fair share"},
	} {
		if got := explain(&tc.op, tc.pool); !strings.Contains(got, tc.want) {
			t.Errorf("%s: explain = %q, want it to say %q", tc.name, got, tc.want)
		}
	}
}

func TestBuildSnapshot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older := testPod("older", rl("cpu", "1"), func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0) })
	newer := testPod("newer", rl("cpu", "1"), func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
		p.Labels = map[string]string{podspec.LabelOperation: "job"}
	})
	older.Labels = map[string]string{podspec.LabelOperation: "job"}
	ours := boundPod("ours", "k8s-ns.job", 0, corev1.PodRunning, rl("cpu", "2"))
	ours.pod.Labels = map[string]string{podspec.LabelOperation: "job"}
	other := testPod("other", rl("cpu", "3"), func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler"; p.Spec.NodeName = "n1" })
	done := testPod("done", rl("cpu", "3"), func(p *corev1.Pod) {
		p.Spec.SchedulerName = "default-scheduler"
		p.Spec.NodeName = "n1"
		p.Status.Phase = corev1.PodSucceeded
	})
	foreignName := testPod("foreign", nil, func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" })
	s := buildSnapshot("fairsched", podspec.BarePodsPod, []*corev1.Pod{newer, ours.pod, other, done, older, foreignName},
		[]*corev1.Node{testNode("n2", nil, nil), testNode("n1", nil, nil)}, nil, slog.Default())
	if s.nodes[0].Name != "n1" || s.nodes[1].Name != "n2" {
		t.Errorf("nodes not in name order")
	}
	kp := s.byKey["k8s-ns.job"]
	if kp == nil || len(kp.pending) != 2 || kp.pending[0].Name != "older" || len(kp.bound) != 1 {
		t.Fatalf("byKey = %+v, want two pending pods oldest first and one bound", s.byKey)
	}
	if len(s.others["n1"]) != 1 || s.others["n1"][0].Name != "other" {
		t.Errorf("others on n1 = %v, want the running pod of the other scheduler only", s.others["n1"])
	}
	if len(s.onNode["n1"]) != 2 || s.byAlloc["a-ours"] != ours.pod || len(s.ours["n1"]) != 1 {
		t.Errorf("n1: onNode %d pods, byAlloc %v, ours %d; want 2, the bound pod, 1", len(s.onNode["n1"]),
			s.byAlloc, len(s.ours["n1"]))
	}
	if len(s.keys) != 1 {
		t.Errorf("keys = %q, want the one operation of the fairsched pods", s.keys)
	}
}

// TestBuildSnapshotBarePods: by namespace, the bare pods of a namespace and
// pool label are one operation's pending pods, oldest first; a bare pod
// whose annotations set an operation attribute stays an operation of its
// own, as every bare pod does by pod.
func TestBuildSnapshotBarePods(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int, labels, annotations map[string]string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(s) * time.Second))
			p.Labels, p.Annotations = labels, annotations
		}
	}
	gpu := map[string]string{podspec.LabelPool: "gpu"}
	pods := []*corev1.Pod{
		testPod("b", rl("cpu", "1"), at(2, nil, nil)),
		testPod("a", rl("cpu", "2"), at(1, nil, nil)),
		testPod("g", rl("cpu", "1"), at(3, gpu, nil)),
		testPod("w", rl("cpu", "1"), at(4, nil, map[string]string{podspec.AnnotationWeight: "3"})),
	}
	for _, tc := range []struct {
		bare podspec.BarePods
		want map[string][]string
	}{
		{podspec.BarePodsNamespace, map[string][]string{
			"k8s-ns:pods": {"a", "b"}, "k8s-ns:pods:gpu": {"g"}, "k8s-uid-w": {"w"}}},
		{podspec.BarePodsPod, map[string][]string{
			"k8s-uid-a": {"a"}, "k8s-uid-b": {"b"}, "k8s-uid-g": {"g"}, "k8s-uid-w": {"w"}}},
	} {
		s := buildSnapshot("fairsched", tc.bare, pods, nil, nil, slog.Default())
		got := map[string][]string{}
		for k, kp := range s.byKey {
			for _, p := range kp.pending {
				got[k] = append(got[k], p.Name)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: pending pods by operation key = %v, want %v", tc.bare, got, tc.want)
		}
	}
}
