package podspec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fairsched/fairsched/client"
)

// The labels and annotations fairsched-kube reads and writes
// (docs/kubernetes.md#labels-and-annotations).
const (
	// LabelPool (pod label, or namespace annotation) names the pod's pool.
	LabelPool = "fairsched.io/pool"
	// LabelOperation groups pods into one operation, whatever their owner.
	LabelOperation = "fairsched.io/operation"
	// LabelTask groups an operation's pods into one task.
	LabelTask = "fairsched.io/task"
	// AnnotationWeight is the operation's weight.
	AnnotationWeight = "fairsched.io/weight"
	// AnnotationGang "true" makes the operation a gang: all of its pods
	// are bound together or none.
	AnnotationGang = "fairsched.io/gang"
	// AnnotationGracefulPreemption "true" (or a duration, the timeout)
	// makes the operation's preemption graceful.
	AnnotationGracefulPreemption = "fairsched.io/graceful-preemption"

	// AnnotationAllocationID, written at bind time, is the pod's
	// allocation; AnnotationOperationID, AnnotationTaskIndex and
	// AnnotationResources are its origin.
	AnnotationAllocationID = "fairsched.io/allocation-id"
	AnnotationOperationID  = "fairsched.io/operation-id"
	AnnotationTaskIndex    = "fairsched.io/task-index"
	AnnotationResources    = "fairsched.io/resources"
)

// idPrefix starts every operation id fairsched-kube derives.
const idPrefix = "k8s-"

// Pool is the pool of pod in namespace ns (nil: no namespace object known):
// the pod's label, else the namespace's annotation, else the namespace name.
func Pool(pod *corev1.Pod, ns *corev1.Namespace) string {
	if p := pod.Labels[LabelPool]; p != "" {
		return p
	}
	if ns != nil {
		if p := ns.Annotations[LabelPool]; p != "" {
			return p
		}
	}
	return pod.Namespace
}

// BarePods says which operation a bare pod (one with neither a controller
// nor the label fairsched.io/operation) belongs to.
type BarePods string

const (
	// BarePodsNamespace: the bare pods of a namespace with the same pool
	// label (or none) are one operation, unless a pod's annotations set
	// an operation attribute (weight, gang, graceful preemption). An
	// operation's first allocation is never preempted for fair share
	// (docs/semantics.md#preemption-statuses), so a thousand one-pod
	// operations would keep a thousand pods however far their pool is
	// above its fair share.
	BarePodsNamespace BarePods = "namespace"
	// BarePodsPod: each bare pod is an operation of its own.
	BarePodsPod BarePods = "pod"
)

// ParseBarePods reads a --bare-pods value.
func ParseBarePods(v string) (BarePods, error) {
	switch b := BarePods(v); b {
	case BarePodsNamespace, BarePodsPod:
		return b, nil
	}
	return "", fmt.Errorf("cannot use %q: want namespace or pod", v)
}

// OperationKey is the base of the id of the operation pod belongs to: the
// label fairsched.io/operation (scoped to the namespace), else the uid of
// its controller; a bare pod's is its own uid when bare says so or when
// its annotations set an operation attribute, else its namespace and pool
// label ("k8s-NAMESPACE:pods" or "k8s-NAMESPACE:pods:POOL", a ':' that no
// label or uid holds). It is a valid fairsched name of at most 120 bytes,
// so an epoch suffix (OperationID) keeps it within 128.
func OperationKey(pod *corev1.Pod, bare BarePods) string {
	if l := pod.Labels[LabelOperation]; l != "" {
		return shorten(idPrefix + pod.Namespace + "." + l)
	}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.UID != "" {
		return idPrefix + string(ref.UID)
	}
	if bare == BarePodsPod || hasOperationAttributes(pod) {
		return idPrefix + string(pod.UID)
	}
	key := idPrefix + pod.Namespace + ":pods"
	if p := pod.Labels[LabelPool]; p != "" {
		key += ":" + p
	}
	return shorten(key)
}

// hasOperationAttributes reports whether pod's annotations set one of its
// operation's attributes.
func hasOperationAttributes(pod *corev1.Pod) bool {
	for _, k := range []string{AnnotationWeight, AnnotationGang, AnnotationGracefulPreemption} {
		if _, ok := pod.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// OperationID is the id of the epoch-th operation of key: an operation
// that finished while pods of its key still come (a Job's next wave after
// all of the previous one completed) is followed by a new one.
func OperationID(key string, epoch int) string {
	if epoch <= 1 {
		return key
	}
	return key + "." + strconv.Itoa(epoch)
}

// Epoch is the epoch of an operation id of key (0: id is not of key).
func Epoch(key, id string) int {
	if id == key {
		return 1
	}
	rest, ok := strings.CutPrefix(id, key+".")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 2 {
		return 0
	}
	return n
}

var notName = regexp.MustCompile(`[^A-Za-z0-9._:-]`)

// shorten makes s a fairsched name of at most 120 bytes: characters
// outside the name alphabet become '-', and a longer one keeps its head and
// a hash of the whole.
func shorten(s string) string {
	clean := notName.ReplaceAllString(s, "-")
	if len(clean) <= 120 && clean == s {
		return s
	}
	if len(clean) <= 120 {
		// A replaced character would merge two names: keep them apart.
		clean = clean[:min(len(clean), 103)]
	} else {
		clean = clean[:103]
	}
	sum := sha256.Sum256([]byte(s))
	return clean + "-" + hex.EncodeToString(sum[:8])
}

// TaskKey is the task of pod in its operation: the label fairsched.io/task,
// else its resources (pods that request the same are alike jobs).
func TaskKey(pod *corev1.Pod, r client.Resources) string {
	if t := pod.Labels[LabelTask]; t != "" {
		return "task:" + t
	}
	return ResourceKey(r)
}

// ResourceKey writes r as a task name: "cpu=2,gpu=0,memory=1024".
func ResourceKey(r client.Resources) string {
	return "cpu=" + strconv.FormatFloat(r.CPU, 'f', -1, 64) + ",gpu=" + strconv.FormatInt(r.GPU, 10) +
		",memory=" + strconv.FormatInt(r.Memory, 10)
}

// Attributes are the operation attributes a pod's annotations set.
type Attributes struct {
	Weight   float64 // 0: the server's default
	Gang     bool
	Graceful bool
	// GracefulTimeoutS is the graceful preemption timeout (nil: the
	// server's default).
	GracefulTimeoutS *float64
}

// ParseAttributes reads the operation annotations of pod; an annotation
// that does not parse is an error naming it.
func ParseAttributes(pod *corev1.Pod) (Attributes, error) {
	var a Attributes
	if v, ok := pod.Annotations[AnnotationWeight]; ok {
		w, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(w >= 1.49e-8 && w <= 6.71e7) {
			return Attributes{}, fmt.Errorf("cannot read annotation %s=%q: want a number from 1.49e-8 to 6.71e7",
				AnnotationWeight, v)
		}
		a.Weight = w
	}
	if v, ok := pod.Annotations[AnnotationGang]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Attributes{}, fmt.Errorf("cannot read annotation %s=%q: want true or false", AnnotationGang, v)
		}
		a.Gang = b
	}
	if v, ok := pod.Annotations[AnnotationGracefulPreemption]; ok {
		v = strings.TrimSpace(v)
		if b, err := strconv.ParseBool(v); err == nil {
			a.Graceful = b
		} else if d, err := time.ParseDuration(v); err == nil && d >= 0 && d <= 1e9*time.Second {
			a.Graceful = true
			s := d.Seconds()
			a.GracefulTimeoutS = &s
		} else {
			return Attributes{}, fmt.Errorf("cannot read annotation %s=%q: want true, false or a timeout such as 90s",
				AnnotationGracefulPreemption, v)
		}
	}
	return a, nil
}

// Origin is the allocation a bound pod runs: what fairsched-kube wrote on
// it when it bound it.
type Origin struct {
	AllocationID string
	OperationID  string
	TaskIndex    int
	Resources    client.Resources
}

// Annotations are the annotations that record o on the pod.
func (o Origin) Annotations() map[string]string {
	return map[string]string{
		AnnotationAllocationID: o.AllocationID,
		AnnotationOperationID:  o.OperationID,
		AnnotationTaskIndex:    strconv.Itoa(o.TaskIndex),
		AnnotationResources:    formatResources(o.Resources),
	}
}

// ParseOrigin reads the origin of a pod fairsched-kube bound; ok is false
// for a pod without one, an error for one whose annotations are damaged.
func ParseOrigin(pod *corev1.Pod) (o Origin, ok bool, err error) {
	id, has := pod.Annotations[AnnotationAllocationID]
	if !has {
		return Origin{}, false, nil
	}
	o.AllocationID = id
	o.OperationID = pod.Annotations[AnnotationOperationID]
	if id == "" || o.OperationID == "" {
		return Origin{}, true, fmt.Errorf("cannot read the origin of pod %s/%s: %s or %s is empty",
			pod.Namespace, pod.Name, AnnotationAllocationID, AnnotationOperationID)
	}
	ti, err := strconv.Atoi(pod.Annotations[AnnotationTaskIndex])
	if err != nil || ti < 0 {
		return Origin{}, true, fmt.Errorf("cannot read annotation %s=%q of pod %s/%s: want a task index",
			AnnotationTaskIndex, pod.Annotations[AnnotationTaskIndex], pod.Namespace, pod.Name)
	}
	o.TaskIndex = ti
	r, err := parseResources(pod.Annotations[AnnotationResources])
	if err != nil {
		return Origin{}, true, fmt.Errorf("cannot read annotation %s of pod %s/%s: %w",
			AnnotationResources, pod.Namespace, pod.Name, err)
	}
	o.Resources = r
	return o, true, nil
}

// formatResources writes r as "user_slots=1,cpu=0.5,gpu=0,memory=1024".
func formatResources(r client.Resources) string {
	return "user_slots=" + strconv.FormatInt(r.UserSlots, 10) + "," + ResourceKey(r) +
		",network=" + strconv.FormatInt(r.Network, 10)
}

func parseResources(s string) (client.Resources, error) {
	var r client.Resources
	if s == "" {
		return r, fmt.Errorf("empty")
	}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return r, fmt.Errorf("%q is not name=amount", part)
		}
		var err error
		switch k {
		case "user_slots":
			r.UserSlots, err = strconv.ParseInt(v, 10, 64)
		case "cpu":
			r.CPU, err = strconv.ParseFloat(v, 64)
		case "gpu":
			r.GPU, err = strconv.ParseInt(v, 10, 64)
		case "memory":
			r.Memory, err = strconv.ParseInt(v, 10, 64)
		case "network":
			r.Network, err = strconv.ParseInt(v, 10, 64)
		default:
			return r, fmt.Errorf("unknown resource %q", k)
		}
		if err != nil {
			return r, fmt.Errorf("cannot read %s=%q: want a number", k, v)
		}
	}
	if c := r.CPU; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 || r.Memory < 0 || r.GPU < 0 || r.UserSlots < 0 || r.Network < 0 {
		return r, fmt.Errorf("cannot use %q: want finite, non-negative amounts", s)
	}
	return r, nil
}

// State is the allocation state a bound pod of phase is reported in:
// Pending (bound, starting: it holds its resources) and Running are
// running, Succeeded completed, Failed failed.
func State(phase corev1.PodPhase) string {
	switch phase {
	case corev1.PodSucceeded:
		return "completed"
	case corev1.PodFailed:
		return "failed"
	}
	return "running"
}

// Terminal reports whether pod has finished (Succeeded or Failed).
func Terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
