package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairsched/fairsched/client"
)

func pod(labels, annotations map[string]string, owners ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p", UID: "pod-uid",
		Labels: labels, Annotations: annotations, OwnerReferences: owners}}
}

func TestPool(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a",
		Annotations: map[string]string{LabelPool: "from-namespace"}}}
	bare := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		ns   *corev1.Namespace
		want string
	}{
		{"label wins", pod(map[string]string{LabelPool: "gpu"}, nil), ns, "gpu"},
		{"namespace annotation", pod(nil, nil), ns, "from-namespace"},
		{"namespace name", pod(nil, nil), bare, "team-a"},
		{"namespace unknown", pod(nil, nil), nil, "team-a"},
		{"empty label ignored", pod(map[string]string{LabelPool: ""}, nil), ns, "from-namespace"},
	} {
		if got := Pool(tc.pod, tc.ns); got != tc.want {
			t.Errorf("%s: Pool = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestOperationKey(t *testing.T) {
	yes, no := true, false
	job := metav1.OwnerReference{Kind: "Job", Name: "j", UID: types.UID("job-uid"), Controller: &yes}
	other := metav1.OwnerReference{Kind: "ConfigMap", Name: "c", UID: types.UID("cm-uid"), Controller: &no}
	long := strings.Repeat("x", 63)
	pool := map[string]string{LabelPool: "gpu"}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		bare BarePods
		want string
	}{
		{"controller", pod(nil, nil, other, job), BarePodsNamespace, "k8s-job-uid"},
		{"controller, pods apart", pod(nil, nil, other, job), BarePodsPod, "k8s-job-uid"},
		{"bare pod", pod(nil, nil), BarePodsNamespace, "k8s-team-a:pods"},
		{"bare pod with a pool label", pod(pool, nil), BarePodsNamespace, "k8s-team-a:pods:gpu"},
		{"bare pod, pods apart", pod(pool, nil), BarePodsPod, "k8s-pod-uid"},
		{"non-controller owner", pod(nil, nil, other), BarePodsNamespace, "k8s-team-a:pods"},
		{"non-controller owner, pods apart", pod(nil, nil, other), BarePodsPod, "k8s-pod-uid"},
		{"bare pod with a weight", pod(nil, map[string]string{AnnotationWeight: "2"}), BarePodsNamespace, "k8s-pod-uid"},
		{"bare gang pod", pod(nil, map[string]string{AnnotationGang: "false"}), BarePodsNamespace, "k8s-pod-uid"},
		{"bare graceful pod", pod(nil, map[string]string{AnnotationGracefulPreemption: "30s"}), BarePodsNamespace, "k8s-pod-uid"},
		{"other annotations", pod(nil, map[string]string{"team": "x"}), BarePodsNamespace, "k8s-team-a:pods"},
		{"label overrides", pod(map[string]string{LabelOperation: "train_7"}, nil, job), BarePodsNamespace, "k8s-team-a.train_7"},
		{"label overrides, pods apart", pod(map[string]string{LabelOperation: "train_7"}, nil), BarePodsPod, "k8s-team-a.train_7"},
	} {
		if got := OperationKey(tc.pod, tc.bare); got != tc.want {
			t.Errorf("%s: OperationKey(%s) = %q, want %q", tc.name, tc.bare, got, tc.want)
		}
	}
	p := pod(map[string]string{LabelOperation: long}, nil)
	p.Namespace = strings.Repeat("n", 63)
	k := OperationKey(p, BarePodsNamespace)
	if len(k) > 120 || !strings.HasPrefix(k, "k8s-nnn") {
		t.Errorf("long key %q: want a hashed name of at most 120 bytes", k)
	}
	p2 := pod(map[string]string{LabelOperation: long + "y"}, nil)
	p2.Namespace = p.Namespace
	if OperationKey(p2, BarePodsNamespace) == k {
		t.Errorf("two long keys that differ in their tail shorten to the same %q", k)
	}
}

func TestParseBarePods(t *testing.T) {
	for _, v := range []string{"namespace", "pod"} {
		if b, err := ParseBarePods(v); err != nil || string(b) != v {
			t.Errorf("ParseBarePods(%q) = %q, %v", v, b, err)
		}
	}
	for _, v := range []string{"", "Namespace", "pods", "job"} {
		if _, err := ParseBarePods(v); err == nil {
			t.Errorf("ParseBarePods(%q): want an error", v)
		}
	}
}

func TestEpoch(t *testing.T) {
	for _, tc := range []struct {
		key, id string
		want    int
	}{
		{"k8s-a", "k8s-a", 1},
		{"k8s-a", "k8s-a.2", 2},
		{"k8s-a", "k8s-a.17", 17},
		{"k8s-a", "k8s-a.1", 0},
		{"k8s-a", "k8s-a.x", 0},
		{"k8s-a", "k8s-ab", 0},
		{"k8s-a", "k8s-b.2", 0},
	} {
		if got := Epoch(tc.key, tc.id); got != tc.want {
			t.Errorf("Epoch(%q, %q) = %d, want %d", tc.key, tc.id, got, tc.want)
		}
		if tc.want > 0 {
			if back := OperationID(tc.key, tc.want); back != tc.id {
				t.Errorf("OperationID(%q, %d) = %q, want %q", tc.key, tc.want, back, tc.id)
			}
		}
	}
}

func TestTaskKey(t *testing.T) {
	r := client.Resources{UserSlots: 1, CPU: 0.5, Memory: 1 << 30}
	if got, want := TaskKey(pod(nil, nil), r), "cpu=0.5,gpu=0,memory=1073741824"; got != want {
		t.Errorf("TaskKey = %q, want %q", got, want)
	}
	if got, want := TaskKey(pod(map[string]string{LabelTask: "ps"}, nil), r), "task:ps"; got != want {
		t.Errorf("TaskKey with label = %q, want %q", got, want)
	}
}

func TestParseAttributes(t *testing.T) {
	ninety := 90.0
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		want    Attributes
		wantErr string
	}{
		{"none", nil, Attributes{}, ""},
		{"weight", map[string]string{AnnotationWeight: "3"}, Attributes{Weight: 3}, ""},
		{"gang", map[string]string{AnnotationGang: "true"}, Attributes{Gang: true}, ""},
		{"graceful", map[string]string{AnnotationGracefulPreemption: "true"}, Attributes{Graceful: true}, ""},
		{"graceful timeout", map[string]string{AnnotationGracefulPreemption: "90s"},
			Attributes{Graceful: true, GracefulTimeoutS: &ninety}, ""},
		{"graceful off", map[string]string{AnnotationGracefulPreemption: "false"}, Attributes{}, ""},
		{"bad weight", map[string]string{AnnotationWeight: "heavy"}, Attributes{}, AnnotationWeight},
		{"weight out of range", map[string]string{AnnotationWeight: "0"}, Attributes{}, AnnotationWeight},
		{"bad gang", map[string]string{AnnotationGang: "maybe"}, Attributes{}, AnnotationGang},
		{"bad graceful", map[string]string{AnnotationGracefulPreemption: "-5s"}, Attributes{},
			AnnotationGracefulPreemption},
	} {
		got, err := ParseAttributes(pod(nil, tc.ann))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.Weight != tc.want.Weight || got.Gang != tc.want.Gang || got.Graceful != tc.want.Graceful ||
			(got.GracefulTimeoutS == nil) != (tc.want.GracefulTimeoutS == nil) ||
			(got.GracefulTimeoutS != nil && *got.GracefulTimeoutS != *tc.want.GracefulTimeoutS) {
			t.Errorf("%s: ParseAttributes = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestOriginRoundTrip(t *testing.T) {
	o := Origin{AllocationID: "42", OperationID: "k8s-x.2", TaskIndex: 3,
		Resources: client.Resources{UserSlots: 1, CPU: 1.25, GPU: 2, Memory: 1 << 33, Network: 7}}
	got, ok, err := ParseOrigin(pod(nil, o.Annotations()))
	if err != nil || !ok || got != o {
		t.Fatalf("ParseOrigin(Annotations(%+v)) = %+v, %v, %v", o, got, ok, err)
	}
	if _, ok, err := ParseOrigin(pod(nil, nil)); ok || err != nil {
		t.Errorf("a pod without an allocation: ok %v, err %v; want false, nil", ok, err)
	}
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"task index", AnnotationTaskIndex, "-1", AnnotationTaskIndex},
		{"resources", AnnotationResources, "cpu=lots", "cpu"},
		{"unknown resource", AnnotationResources, "disk=1", "disk"},
		{"NaN cpu", AnnotationResources, "cpu=NaN", "non-negative"},
		{"infinite cpu", AnnotationResources, "cpu=+Inf", "non-negative"},
		{"negative memory", AnnotationResources, "cpu=1,memory=-5", "non-negative"},
		{"operation", AnnotationOperationID, "", AnnotationOperationID},
	} {
		ann := o.Annotations()
		ann[tc.key] = tc.value
		if _, ok, err := ParseOrigin(pod(nil, ann)); !ok || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s damaged: ok %v, err %v; want an error naming %s", tc.name, ok, err, tc.want)
		}
	}
}

func TestState(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]string{
		corev1.PodPending:   "running", // bound, starting: it holds its resources
		corev1.PodRunning:   "running",
		corev1.PodSucceeded: "completed",
		corev1.PodFailed:    "failed",
		corev1.PodUnknown:   "running",
	} {
		if got := State(phase); got != want {
			t.Errorf("State(%s) = %q, want %q", phase, got, want)
		}
	}
}
