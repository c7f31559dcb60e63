package kubetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fairsched/fairsched/kube/internal/kubetest"
)

// noScheduler is a schedulerName no scheduler serves: the tests bind.
const noScheduler = "kubetest-by-hand"

func fakePod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName: noScheduler,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:  "work",
				Image: "fake",
				Resources: corev1.ResourceRequirements{
					Requests: kubetest.Resources("cpu", "1", "memory", "1Gi"),
				},
			}},
		},
	}
}

// TestCluster starts one cluster and drives the lifecycles the adapter's
// tests rely on through it.
func TestCluster(t *testing.T) {
	c := kubetest.New(t, kubetest.Options{SchedulerName: "kubetest-scheduler"})
	ctx := context.Background()
	if err := c.AddNode(ctx, "node-a", kubetest.NodeSpec{
		Allocatable: kubetest.Resources("cpu", "8", "memory", "32Gi"),
		Labels:      map[string]string{"zone": "a"},
	}); err != nil {
		t.Fatal(err)
	}
	ns, err := c.Namespace(ctx, "harness")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("NodeStatus", func(t *testing.T) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !kubetest.NodeReady(n) {
			t.Fatalf("node-a is not Ready: %+v", n.Status.Conditions)
		}
		if got := n.Status.Allocatable.Cpu().String(); got != "8" {
			t.Errorf("node-a's allocatable cpu = %s, want 8", got)
		}
		if n.Labels["zone"] != "a" || n.Labels[kubetest.NodeLabel] != "true" {
			t.Errorf("node-a's labels = %v", n.Labels)
		}
	})

	t.Run("BoundPodRunsAndSucceeds", func(t *testing.T) {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, fakePod(ns, "completes", map[string]string{kubetest.AnnotationRunFor: "1s"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := kubetest.Bind(ctx, c.Client, p, "node-a"); err != nil {
			t.Fatal(err)
		}
		running, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "is Running", kubetest.PodPhaseIs(corev1.PodRunning))
		if err != nil {
			t.Fatal(err)
		}
		if running.Spec.NodeName != "node-a" || running.Status.PodIP == "" {
			t.Errorf("running pod: node %q, pod IP %q", running.Spec.NodeName, running.Status.PodIP)
		}
		if cond := kubetest.PodCondition(running, corev1.PodScheduled); cond == nil || cond.Status != corev1.ConditionTrue {
			t.Errorf("running pod's PodScheduled condition = %+v", cond)
		}
		done, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "Succeeded", kubetest.PodPhaseIs(corev1.PodSucceeded))
		if err != nil {
			t.Fatal(err)
		}
		if st := done.Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
			t.Errorf("succeeded pod's container statuses = %+v", st)
		}
	})

	t.Run("BindingUIDPrecondition", func(t *testing.T) {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, fakePod(ns, "recreated", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := p.DeepCopy()
		stale.UID = "00000000-0000-0000-0000-000000000000"
		err = kubetest.Bind(ctx, c.Client, stale, "node-a")
		if err == nil || !apierrors.IsConflict(err) {
			t.Fatalf("binding with another UID: %v, want a conflict", err)
		}
		got, err := c.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "" {
			t.Errorf("the pod was bound to %q by a binding of another UID", got.Spec.NodeName)
		}
	})

	t.Run("FailingPod", func(t *testing.T) {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, fakePod(ns, "fails", map[string]string{kubetest.AnnotationFailAfter: "100ms"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := kubetest.Bind(ctx, c.Client, p, "node-a"); err != nil {
			t.Fatal(err)
		}
		failed, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "Failed", kubetest.PodPhaseIs(corev1.PodFailed))
		if err != nil {
			t.Fatal(err)
		}
		if st := failed.Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 1 {
			t.Errorf("failed pod's container statuses = %+v", st)
		}
	})

	t.Run("EvictionKeepsGracePeriod", func(t *testing.T) {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, fakePod(ns, "evicted", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := kubetest.Bind(ctx, c.Client, p, "node-a"); err != nil {
			t.Fatal(err)
		}
		if _, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "is Running", kubetest.PodPhaseIs(corev1.PodRunning)); err != nil {
			t.Fatal(err)
		}
		grace := int64(2)
		start := time.Now()
		err = c.Client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: ns, Name: p.Name},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace},
		})
		if err != nil {
			t.Fatal(err)
		}
		term, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "is terminating", func(p *corev1.Pod) bool { return p == nil || p.DeletionTimestamp != nil })
		if err != nil {
			t.Fatal(err)
		}
		if term == nil {
			t.Fatal("the evicted pod was deleted at once, not after its grace period")
		}
		if cond := kubetest.PodCondition(term, corev1.DisruptionTarget); cond == nil || cond.Status != corev1.ConditionTrue {
			t.Errorf("the evicted pod's DisruptionTarget condition = %+v", cond)
		}
		if _, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "is gone", kubetest.PodGone); err != nil {
			t.Fatal(err)
		}
		// The stage deletes the pod at its deletion timestamp: the grace
		// period, less the clock's resolution in that timestamp (1 s).
		if el := time.Since(start); el < time.Duration(grace-1)*time.Second {
			t.Errorf("the evicted pod was gone after %v, before its grace period of %ds", el, grace)
		}
	})

	t.Run("JobCompletes", func(t *testing.T) {
		testJobCompletes(t, ctx, c.Client, ns, "node-a")
	})

	t.Run("KubeScheduler", func(t *testing.T) {
		p := fakePod(ns, "scheduled", nil)
		p.Spec.SchedulerName = "kubetest-scheduler"
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := kubetest.WaitPod(ctx, c.Client, ns, p.Name, time.Minute, "is Running", kubetest.PodPhaseIs(corev1.PodRunning))
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "node-a" {
			t.Errorf("kube-scheduler bound the pod to %q, want node-a", got.Spec.NodeName)
		}
	})

	t.Run("AdapterUser", func(t *testing.T) {
		root, err := kubetest.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "deploy", "kubernetes", "rbac.yaml")); err != nil {
			t.Fatal(err)
		}
		adapter, err := kubernetes.NewForConfig(c.Adapter)
		if err != nil {
			t.Fatal(err)
		}
		// before RBAC: nothing
		if _, err := adapter.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the adapter listed pods without RBAC: %v", err)
		}
		if err := c.ApplyAdapterRBAC(ctx); err != nil {
			t.Fatal(err)
		}
		// RBAC's authorizer works from an informer cache: poll.
		err = kubetest.Poll(ctx, 30*time.Second, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
			_, err := adapter.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, kubetest.Retry(err)
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("the adapter cannot list pods with deploy/kubernetes's RBAC: %v", err)
		}
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, fakePod(ns, "adapter-binds", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := kubetest.Bind(ctx, adapter, p, "node-a"); err != nil {
			t.Fatalf("the adapter cannot bind: %v", err)
		}
		if _, err := adapter.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("the adapter cannot list nodes: %v", err)
		}
		// least privilege: what the adapter must not do
		denied := map[string]error{}
		denied["delete a node"] = adapter.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		_, denied["list secrets"] = adapter.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		_, denied["create a pod"] = adapter.CoreV1().Pods(ns).Create(ctx, fakePod(ns, "by-adapter", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		_, denied["create a namespace"] = adapter.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "by-adapter"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		_, denied["update a node"] = adapter.CoreV1().Nodes().Update(ctx, kubetest.NodeObject("node-a", kubetest.NodeSpec{}), metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		for what, err := range denied {
			if !apierrors.IsForbidden(err) {
				t.Errorf("the adapter may %s: %v, want Forbidden", what, err)
			}
		}
	})

	t.Run("DeployManifestsDryRun", func(t *testing.T) {
		testDeployDryRun(t, ctx, c)
	})
	t.Run("DocsManifestsDryRun", func(t *testing.T) {
		testDocsDryRun(t, ctx, c)
	})
}

func testJobCompletes(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, node string) {
	three := int32(3)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "three"},
		Spec: batchv1.JobSpec{
			Parallelism: &three,
			Completions: &three,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kubetest.AnnotationRunFor: "500ms"}},
				Spec:       fakePod(ns, "", nil).Spec,
			},
		},
	}
	job, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]bool{}
	err = kubetest.Poll(ctx, 2*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=three"})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !bound[p.Name] {
				if err := kubetest.Bind(ctx, cs, p, node); err != nil {
					return false, err
				}
				bound[p.Name] = true
			}
		}
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("the job failed: %s", cond.Message)
			}
		}
		return false, kubetest.Retry(fmt.Errorf("%d pods bound, job status %+v", len(bound), j.Status))
	})
	if err != nil {
		t.Fatalf("job three did not complete: %v", err)
	}
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Succeeded != 3 || j.Status.Failed != 0 {
		t.Errorf("job three: %d succeeded, %d failed; want 3 and 0", j.Status.Succeeded, j.Status.Failed)
	}
	if len(bound) != 3 {
		t.Errorf("%d pods were bound, want 3 (one per completion)", len(bound))
	}
}

func testDeployDryRun(t *testing.T, ctx context.Context, c *kubetest.Cluster) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "kubernetes")
	// The namespace exists for real (ApplyAdapterRBAC, or here): a server
	// dry run creates nothing, so namespaced objects need it.
	if _, err := c.Kubectl(ctx, "apply", "-f", filepath.Join(dir, "00-namespace.yaml")); err != nil {
		t.Fatal(err)
	}
	out, err := c.Kubectl(ctx, "apply", "--dry-run=server", "-f", dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			kind, name := manifestKindName(doc)
			if kind == "" {
				continue
			}
			if !strings.Contains(strings.ToLower(string(out)), strings.ToLower(kind)) || !strings.Contains(string(out), "/"+name+" ") {
				t.Errorf("kubectl's output does not mention %s %s from %s:\n%s", kind, name, e.Name(), out)
			}
		}
	}
	t.Logf("kubectl apply --dry-run=server -f deploy/kubernetes/:\n%s", out)
}

// testDocsDryRun applies, with --dry-run=server, every whole manifest (a
// yaml block with an apiVersion) of docs/kubernetes.md's walk-through, so
// that what a newcomer copies is what the API server takes.
func testDocsDryRun(t *testing.T, ctx context.Context, c *kubetest.Cluster) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The Pool resource and the walk-through's namespace exist for real:
	// a dry run creates neither.
	if _, err := c.Kubectl(ctx, "apply", "-f", filepath.Join(root, "deploy", "kubernetes", "crd-pools.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "crd/pools.fairsched.io", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "create", "namespace", "ml"); err != nil && !strings.Contains(err.Error(), "AlreadyExists") {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for i, block := range yamlBlocks(string(data)) {
		if !strings.Contains(block, "apiVersion:") {
			continue // a fragment of a spec
		}
		blocks++
		f := filepath.Join(t.TempDir(), fmt.Sprintf("block-%d.yaml", i))
		if err := os.WriteFile(f, []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := c.Kubectl(ctx, "apply", "--dry-run=server", "-f", f); err != nil {
			t.Errorf("docs/kubernetes.md's yaml block %d does not apply: %v\n%s\n%s", i+1, err, out, block)
		}
	}
	if blocks < 2 {
		t.Errorf("docs/kubernetes.md has %d whole manifests, want the walk-through's Pools and Job", blocks)
	}
}

// yamlBlocks are the ```yaml blocks of a markdown text, unindented.
func yamlBlocks(md string) []string {
	var out []string
	var cur []string
	in, indent := false, ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```yaml":
			in, indent, cur = true, line[:len(line)-len(strings.TrimLeft(line, " "))], nil
		case in && trimmed == "```":
			in = false
			out = append(out, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	return out
}

// manifestKindName reads the top-level kind and metadata.name of one YAML
// document (enough for the repository's manifests).
func manifestKindName(doc string) (kind, name string) {
	inMeta := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "kind:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "kind:"))
		case strings.HasPrefix(line, "metadata:"):
			inMeta = true
		case inMeta && strings.HasPrefix(line, "  name:") && name == "":
			name = strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "  name:")), `"'`)
		case len(line) > 0 && line[0] != ' ' && line[0] != '#':
			inMeta = false
		}
	}
	return kind, name
}
