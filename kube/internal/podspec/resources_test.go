package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fairsched/fairsched/client"
)

func container(kv ...string) corev1.Container {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: l}}
}

func TestResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want client.Resources
	}{
		{"nothing requested", corev1.PodSpec{Containers: []corev1.Container{container()}},
			client.Resources{UserSlots: 1}},
		{"containers sum", corev1.PodSpec{Containers: []corev1.Container{
			container("cpu", "500m", "memory", "1Gi"), container("cpu", "1", "nvidia.com/gpu", "2")}},
			client.Resources{UserSlots: 1, CPU: 1.5, Memory: 1 << 30, GPU: 2}},
		{"a larger init container wins", corev1.PodSpec{
			InitContainers: []corev1.Container{container("cpu", "4", "memory", "10Mi")},
			Containers:     []corev1.Container{container("cpu", "1", "memory", "1Gi")}},
			client.Resources{UserSlots: 1, CPU: 4, Memory: 1 << 30}},
		{"overhead adds", corev1.PodSpec{Containers: []corev1.Container{container("cpu", "1")},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"),
				corev1.ResourceMemory: resource.MustParse("64Mi")}},
			client.Resources{UserSlots: 1, CPU: 1.25, Memory: 64 << 20}},
		{"other resources are not fairsched's", corev1.PodSpec{Containers: []corev1.Container{
			container("ephemeral-storage", "1Gi", "example.com/fpga", "1")}}, client.Resources{UserSlots: 1}},
	} {
		if got := Resources(&corev1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: Resources = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
