package kubetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// NodeLabel is a label every node of the cluster carries (value "true").
const NodeLabel = "kubetest.fairsched.io/kwok"

// NodeSpec describes fake nodes to add.
type NodeSpec struct {
	// Allocatable (and capacity) of each node; the zero value is 32 cpu,
	// 128Gi memory and 110 pods. A missing "pods" is 110.
	Allocatable corev1.ResourceList
	// Labels and Taints of each node, beside kubernetes.io/hostname and
	// NodeLabel, which every node has.
	Labels map[string]string
	Taints []corev1.Taint
	// Unschedulable cordons the nodes.
	Unschedulable bool
}

// Resources is a ResourceList from name, quantity pairs:
// Resources("cpu", "4", "memory", "16Gi"). It panics on a bad quantity.
func Resources(kv ...string) corev1.ResourceList {
	if len(kv)%2 != 0 {
		panic("kubetest.Resources: an odd number of arguments")
	}
	rl := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// NodeObject is the Node that AddNodes creates for spec.
func NodeObject(name string, spec NodeSpec) *corev1.Node {
	alloc := spec.Allocatable
	if len(alloc) == 0 {
		alloc = Resources("cpu", "32", "memory", "128Gi")
	}
	alloc = alloc.DeepCopy()
	if _, ok := alloc[corev1.ResourcePods]; !ok {
		alloc[corev1.ResourcePods] = resource.MustParse("110")
	}
	lbl := map[string]string{
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		NodeLabel:                "true",
	}
	for k, v := range spec.Labels {
		lbl[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      lbl,
			Annotations: map[string]string{NodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			Taints:        append([]corev1.Taint(nil), spec.Taints...),
			Unschedulable: spec.Unschedulable,
		},
		Status: corev1.NodeStatus{
			Allocatable: alloc,
			Capacity:    alloc.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}
}

// AddNodes creates n fake nodes named prefix-0 … prefix-(n-1) (or prefix
// alone when n is 1 and the prefix is a full name the caller wants: use
// AddNode) and waits until KWOK has made every one Ready.
func (c *Cluster) AddNodes(ctx context.Context, prefix string, n int, spec NodeSpec) ([]string, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return names, c.addNodes(ctx, names, spec)
}

// AddNode creates one fake node and waits until it is Ready.
func (c *Cluster) AddNode(ctx context.Context, name string, spec NodeSpec) error {
	return c.addNodes(ctx, []string{name}, spec)
}

func (c *Cluster) addNodes(ctx context.Context, names []string, spec NodeSpec) error {
	start := time.Now()
	const workers = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan string)
	)
	for range min(workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				_, err := c.Client.CoreV1().Nodes().Create(ctx, NodeObject(name, spec), metav1.CreateOptions{})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("cannot create node %s: %w", name, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	timeout := c.opts.StartTimeout + time.Duration(len(names))*20*time.Millisecond
	err := Poll(ctx, timeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{
			LabelSelector:   labels.SelectorFromSet(labels.Set{NodeLabel: "true"}).String(),
			ResourceVersion: "0",
		})
		if err != nil {
			return false, Retry(err)
		}
		ready := 0
		for i := range list.Items {
			if want[list.Items[i].Name] && NodeReady(&list.Items[i]) {
				ready++
			}
		}
		if ready < len(names) {
			return false, Retry(fmt.Errorf("%d of %d nodes Ready", ready, len(names)))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for KWOK to make %d nodes Ready: %w; the end of KWOK's log:\n%s", len(names), err, c.procTail("kwok", 30))
	}
	c.opts.Logf("kubetest: %d nodes Ready in %v", len(names), time.Since(start).Round(time.Millisecond))
	return nil
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *Cluster) procTail(name string, n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == name {
			return c.procs[i].tail(n)
		}
	}
	return "(not running)"
}
