package kubetest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The pod annotations KWOK's stages read (the package doc says what each does).
const (
	AnnotationStartAfter = "kwok.fairsched.io/start-after"
	AnnotationRunFor     = "kwok.fairsched.io/run-for"
	AnnotationFailAfter  = "kwok.fairsched.io/fail-after"
	AnnotationExitOnTerm = "kwok.fairsched.io/exit-on-term"
)

// Bind binds the pod to the node through pods/binding, as a scheduler
// does, with the pod's UID as a precondition.
func Bind(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, node string) error {
	err := cs.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("cannot bind pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// WaitPod polls the pod every 50 ms until cond holds or timeout passes, and
// returns the pod as cond last saw it. A pod that does not exist is passed
// as nil.
func WaitPod(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last *corev1.Pod
	err := Poll(ctx, timeout, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			p = nil
		case err != nil:
			return false, Retry(err)
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		return last, fmt.Errorf("pod %s/%s %s: %w (last seen: %s)", ns, name, what, err, DescribePod(last))
	}
	return last, nil
}

// PodPhaseIs is a WaitPod condition: the pod exists and is in phase.
func PodPhaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == phase }
}

// PodGone is a WaitPod condition: the pod no longer exists.
func PodGone(p *corev1.Pod) bool { return p == nil }

// DescribePod is one line about a pod for an error message.
func DescribePod(p *corev1.Pod) string {
	if p == nil {
		return "gone"
	}
	s := fmt.Sprintf("phase %s, node %q", p.Status.Phase, p.Spec.NodeName)
	if p.DeletionTimestamp != nil {
		s += ", deleting"
	}
	for _, c := range p.Status.Conditions {
		s += fmt.Sprintf(", %s=%s", c.Type, c.Status)
	}
	return s
}

// PodCondition returns the pod's condition of type t, or nil.
func PodCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Namespace creates a namespace named name and returns its name.
func (c *Cluster) Namespace(ctx context.Context, name string) (string, error) {
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("cannot create namespace %s: %w", name, err)
	}
	return name, nil
}
