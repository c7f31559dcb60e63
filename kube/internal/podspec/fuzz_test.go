package podspec

import (
	"math"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzParseAttributes: any annotation values either parse to attributes
// the server takes (a weight in its range, a timeout in 0 to 1e9 s) or
// fail with an error naming the annotation that does not parse.
func FuzzParseAttributes(f *testing.F) {
	f.Add("3", "true", "90s")
	f.Add("", "", "")
	f.Add("1e400", "yes", "-5s")
	f.Add("NaN", "1", "true")
	f.Add(" 0.5 ", "FALSE", "1000000001s")
	f.Fuzz(func(t *testing.T, weight, gang, graceful string) {
		ann := map[string]string{}
		for k, v := range map[string]string{AnnotationWeight: weight, AnnotationGang: gang,
			AnnotationGracefulPreemption: graceful} {
			if v != "" {
				ann[k] = v
			}
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
		a, err := ParseAttributes(p)
		if err != nil {
			named := false
			for k := range ann {
				named = named || strings.Contains(err.Error(), k)
			}
			if !named || !strings.HasPrefix(err.Error(), "cannot read annotation ") {
				t.Fatalf("error %q names none of the annotations %v", err, ann)
			}
			return
		}
		if a.Weight != 0 && !(a.Weight >= 1.49e-8 && a.Weight <= 6.71e7) {
			t.Fatalf("weight %v accepted from %q", a.Weight, weight)
		}
		if a.GracefulTimeoutS != nil && (!a.Graceful || math.IsNaN(*a.GracefulTimeoutS) ||
			*a.GracefulTimeoutS < 0 || *a.GracefulTimeoutS > 1e9) {
			t.Fatalf("graceful timeout %v (graceful %v) accepted from %q", *a.GracefulTimeoutS, a.Graceful, graceful)
		}
	})
}

// FuzzParseOrigin: damaged origin annotations are an error naming the
// pod, never a panic; an origin read back is written again the same.
func FuzzParseOrigin(f *testing.F) {
	f.Add("42", "k8s-x.2", "3", "user_slots=1,cpu=1.25,gpu=2,memory=8589934592,network=7")
	f.Add("", "", "", "")
	f.Add("1", "op", "-1", "cpu=lots")
	f.Add("1", "op", "0", "cpu=1,,memory")
	f.Add("1", "op", "99999999999999999999", "disk=1")
	f.Fuzz(func(t *testing.T, id, op, task, resources string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{
			AnnotationAllocationID: id, AnnotationOperationID: op, AnnotationTaskIndex: task,
			AnnotationResources: resources}}}
		o, ok, err := ParseOrigin(p)
		if !ok {
			t.Fatalf("a pod with %s is said to have no origin", AnnotationAllocationID)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cannot read ") || !strings.Contains(err.Error(), "ns/p") {
				t.Fatalf("error %q does not name the pod", err)
			}
			return
		}
		again, ok, err := ParseOrigin(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: o.Annotations()}})
		if !ok || err != nil || !sameOrigin(again, o) {
			t.Fatalf("origin %+v written and read back is %+v, %v", o, again, err)
		}
	})
}

// sameOrigin compares origins, a NaN cpu equal to itself.
func sameOrigin(a, b Origin) bool {
	if math.IsNaN(a.Resources.CPU) && math.IsNaN(b.Resources.CPU) {
		a.Resources.CPU, b.Resources.CPU = 0, 0
	}
	return a == b
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,120}$`)

// FuzzOperationKey: whatever the namespace and the label (an operation
// label, or a bare pod's pool label), an operation key is a valid
// fairsched name of at most 120 bytes, distinct labels get distinct keys,
// and epochs round-trip through OperationID.
func FuzzOperationKey(f *testing.F) {
	f.Add("ns", "train", "train2", 2)
	f.Add("ns", "a/b", "a-b", 3)
	f.Add("ns", strings.Repeat("x", 200), strings.Repeat("x", 199)+"y", 1000)
	f.Add("n", "é", "-", 0)
	f.Fuzz(func(t *testing.T, ns, label, other string, epoch int) {
		if label == "" || other == "" {
			return
		}
		key := func(l string) string {
			return OperationKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
				Labels: map[string]string{LabelOperation: l}}}, BarePodsNamespace)
		}
		bareKey := func(pool string) string {
			return OperationKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
				Labels: map[string]string{LabelPool: pool}}}, BarePodsNamespace)
		}
		if b := bareKey(label); !nameRE.MatchString(b) {
			t.Fatalf("bare pod of pool %q in %q: key %q is not a name of at most 120 bytes", label, ns, b)
		} else if label != other && bareKey(other) == b {
			t.Fatalf("bare pods of pools %q and %q share the key %q", label, other, b)
		}
		k := key(label)
		if !nameRE.MatchString(k) {
			t.Fatalf("OperationKey(%q, %q) = %q: not a name of at most 120 bytes", ns, label, k)
		}
		if label != other && key(other) == k {
			t.Fatalf("labels %q and %q share the key %q", label, other, k)
		}
		epoch = 1 + epoch&0xffff
		id := OperationID(k, epoch)
		if len(id) > 128 || Epoch(k, id) != epoch {
			t.Fatalf("OperationID(%q, %d) = %q (%d bytes), whose epoch reads %d", k, epoch, id, len(id), Epoch(k, id))
		}
	})
}
