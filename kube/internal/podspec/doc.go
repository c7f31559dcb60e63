// Package podspec reads the fairsched attributes of a pod: its pool, its
// operation and task, and the resources it requests.
package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fairsched/fairsched/client"
)

// Resources are the fairsched resources a pod requests: cpu in cores
// (kept in hundredths by the server), memory in bytes, nvidia.com/gpu as gpu,
// and one user slot. Init containers count as kube-scheduler counts them: the
// largest single init container's request when it exceeds the sum of the
// regular containers'.
func Resources(pod *corev1.Pod) client.Resources {
	cpu := sum(pod.Spec.Containers, corev1.ResourceCPU)
	mem := sum(pod.Spec.Containers, corev1.ResourceMemory)
	gpu := sum(pod.Spec.Containers, gpuResource)
	for _, c := range pod.Spec.InitContainers {
		cpu = maxQ(cpu, c.Resources.Requests[corev1.ResourceCPU])
		mem = maxQ(mem, c.Resources.Requests[corev1.ResourceMemory])
		gpu = maxQ(gpu, c.Resources.Requests[gpuResource])
	}
	for name, q := range pod.Spec.Overhead {
		switch name {
		case corev1.ResourceCPU:
			cpu.Add(q)
		case corev1.ResourceMemory:
			mem.Add(q)
		}
	}
	return client.Resources{
		UserSlots: 1,
		CPU:       float64(cpu.MilliValue()) / 1000,
		Memory:    mem.Value(),
		GPU:       gpu.Value(),
	}
}

// gpuResource is the extended resource that fairsched counts as gpu.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

func sum(cs []corev1.Container, name corev1.ResourceName) resource.Quantity {
	var total resource.Quantity
	for _, c := range cs {
		if q, ok := c.Resources.Requests[name]; ok {
			total.Add(q)
		}
	}
	return total
}

func maxQ(a, b resource.Quantity) resource.Quantity {
	if b.Cmp(a) > 0 {
		return b
	}
	return a
}
