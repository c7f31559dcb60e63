package adapter

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/podspec"
)

// nodeLimits is what a node offers fairsched: its allocatable cpu, memory,
// nvidia.com/gpu and pod count, less the requests of others, the pods on it
// that fairsched-kube did not bind (other schedulers', static pods,
// DaemonSets). A resource others over-use counts as 0.
func nodeLimits(node *corev1.Node, others []*corev1.Pod) client.Resources {
	a := node.Status.Allocatable
	r := client.Resources{
		UserSlots: quantity(a, corev1.ResourcePods).Value(),
		CPU:       float64(quantity(a, corev1.ResourceCPU).MilliValue()) / 1000,
		Memory:    quantity(a, corev1.ResourceMemory).Value(),
		GPU:       quantity(a, "nvidia.com/gpu").Value(),
	}
	for _, p := range others {
		u := podspec.Resources(p)
		r.UserSlots -= u.UserSlots
		r.CPU -= u.CPU
		r.Memory -= u.Memory
		r.GPU -= u.GPU
	}
	r.UserSlots = max(r.UserSlots, 0)
	r.CPU = max(float64(int64(r.CPU*100+1e-6))/100, 0) // the server keeps hundredths
	r.Memory = max(r.Memory, 0)
	r.GPU = max(r.GPU, 0)
	return r
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
	q, ok := l[name]
	if !ok {
		return resource.NewQuantity(0, resource.DecimalSI)
	}
	return &q
}

// nodeTags are a node's fairsched tags: "key=value" for each of its labels
// whose key allow lists, and "taint:key=value:Effect" for each taint (a
// pool's scheduling tag filter can then keep off or seek them). Sorted.
func nodeTags(node *corev1.Node, allow []string) []string {
	var tags []string
	for k, v := range node.Labels {
		if slices.Contains(allow, k) {
			tags = appendTag(tags, k+"="+v)
		}
	}
	for _, t := range node.Spec.Taints {
		tags = appendTag(tags, "taint:"+t.Key+"="+t.Value+":"+string(t.Effect))
	}
	slices.Sort(tags)
	return tags
}

// appendTag appends a tag the server accepts: 1 to 256 bytes, no space.
func appendTag(tags []string, t string) []string {
	if t == "" || len(t) > 256 || strings.ContainsAny(t, " \t\n") {
		return tags
	}
	return append(tags, t)
}

// schedulable reports whether new pods may go to node: not cordoned and
// Ready.
func schedulable(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fits says why pod cannot run on node beside the pods already there (all
// of them, whoever bound them), or "" when it can: its node selector and
// required node affinity, the node's NoSchedule and NoExecute taints, its
// host ports, and the resources fairsched does not count (ephemeral storage,
// extended resources other than nvidia.com/gpu). cpu, memory, gpu and the
// pod count are fairsched's to account and are not checked here.
func fits(pod *corev1.Pod, node *corev1.Node, onNode []*corev1.Pod) string {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil {
		return fmt.Sprintf("its node affinity does not parse: %v", err)
	} else if !ok {
		return "node " + node.Name + " does not match its node selector or required node affinity"
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints,
		pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return fmt.Sprintf("it does not tolerate node %s's taint %s", node.Name, taint.ToString())
	}
	if p := hostPortConflict(pod, onNode); p != "" {
		return "host port " + p + " is taken on node " + node.Name
	}
	for name, want := range requests(pod) {
		if counted(name) {
			continue
		}
		free := quantity(node.Status.Allocatable, name).DeepCopy()
		for _, o := range onNode {
			if q, ok := requests(o)[name]; ok {
				free.Sub(q)
			}
		}
		if want.Cmp(free) > 0 {
			return fmt.Sprintf("node %s has %s of %s free and it requests %s", node.Name, free.String(), name, want.String())
		}
	}
	return ""
}

// room says why node has no room yet for pod's cpu, memory, gpu or pod
// slot beside the pods on it that have not finished (those being deleted
// among them: they hold their resources until they end), or "" when it
// has.
func room(pod *corev1.Pod, node *corev1.Node, onNode []*corev1.Pod) string {
	want := podspec.Resources(pod)
	free := nodeLimits(node, onNode)
	// A resource the node does not list is not checked: the server,
	// told 0 of it, does not start what asks for it.
	has := func(n corev1.ResourceName) bool { _, ok := node.Status.Allocatable[n]; return ok }
	const eps = 1e-9
	switch {
	case has(corev1.ResourceCPU) && want.CPU > free.CPU+eps:
		return fmt.Sprintf("node %s has %g cpu free and the pod requests %g", node.Name, free.CPU, want.CPU)
	case has(corev1.ResourceMemory) && want.Memory > free.Memory:
		return fmt.Sprintf("node %s has %d bytes of memory free and the pod requests %d", node.Name, free.Memory,
			want.Memory)
	case has("nvidia.com/gpu") && want.GPU > free.GPU:
		return fmt.Sprintf("node %s has %d gpu free and the pod requests %d", node.Name, free.GPU, want.GPU)
	case has(corev1.ResourcePods) && want.UserSlots > free.UserSlots:
		return fmt.Sprintf("node %s runs its most pods (%d)", node.Name, len(onNode))
	}
	return ""
}

// counted reports whether fairsched accounts resource name itself.
func counted(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, "nvidia.com/gpu":
		return true
	}
	return false
}

// requests are a pod's effective requests: its containers' summed, or an
// init container's when larger, plus the overhead.
func requests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for n, q := range c.Resources.Requests {
			sum := out[n]
			sum.Add(q)
			out[n] = sum
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for n, q := range c.Resources.Requests {
			if cur, ok := out[n]; !ok || q.Cmp(cur) > 0 {
				out[n] = q.DeepCopy()
			}
		}
	}
	for n, q := range pod.Spec.Overhead {
		sum := out[n]
		sum.Add(q)
		out[n] = sum
	}
	return out
}

// hostPortConflict names a host port of pod that a pod on the node holds.
func hostPortConflict(pod *corev1.Pod, onNode []*corev1.Pod) string {
	type key struct {
		ip    string
		proto corev1.Protocol
		port  int32
	}
	norm := func(cp corev1.ContainerPort) key {
		ip, proto := cp.HostIP, cp.Protocol
		if ip == "" {
			ip = "0.0.0.0"
		}
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		return key{ip, proto, cp.HostPort}
	}
	used := map[key]bool{}
	for _, o := range onNode {
		for _, c := range o.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.HostPort > 0 {
					used[norm(cp)] = true
				}
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort <= 0 {
				continue
			}
			k := norm(cp)
			for u := range used {
				if u.proto == k.proto && u.port == k.port && (u.ip == k.ip || u.ip == "0.0.0.0" || k.ip == "0.0.0.0") {
					return fmt.Sprintf("%d/%s", k.port, k.proto)
				}
			}
		}
	}
	return ""
}
