package adapter_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/adapter"
	"github.com/fairsched/fairsched/kube/internal/kubetest"
	"github.com/fairsched/fairsched/kube/internal/podspec"
	"github.com/fairsched/fairsched/kube/internal/poolcrd"
)

// The end-to-end tests run fairsched-kube against a real kube-apiserver
// (kubetest: etcd, kube-apiserver, KWOK, kube-controller-manager) and a
// real fairsched serve built from the parent module.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds fairsched and fairsched-kube once per test binary.
func binaries(t *testing.T) (serve, kube string) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := kubetest.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		binDir, buildErr = os.MkdirTemp("", "fairsched-kube-e2e-")
		if buildErr != nil {
			return
		}
		for _, b := range []struct{ dir, pkg, out string }{
			{root, "./cmd/fairsched", "fairsched"},
			{filepath.Join(root, "kube"), "./cmd/fairsched-kube", "fairsched-kube"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("cannot build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "fairsched"), filepath.Join(binDir, "fairsched-kube")
}

// env is one test's world: a cluster, fairsched serve and the adapter.
type env struct {
	t        *testing.T
	ctx      context.Context
	c        *kubetest.Cluster
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	api      *client.Client
	serveBin string
	serve    *kubetest.Process
	url      string
	dataDir  string
	ns       string
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func newEnv(t *testing.T, config client.Config) *env {
	kubetest.Require(t)
	serveBin, _ := binaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := kubetest.New(t, kubetest.Options{})
	if err := c.ApplyAdapterRBAC(ctx); err != nil {
		t.Fatal(err)
	}
	root, _ := kubetest.RepoRoot()
	if _, err := c.Kubectl(ctx, "apply", "-f", filepath.Join(root, "deploy", "kubernetes", "crd-pools.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "crd/pools.fairsched.io", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, c: c, dataDir: t.TempDir()}
	e.url = "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	e.serveBin = serveBin
	e.startServe(serveBin)
	var err error
	e.api, err = client.New(e.url)
	if err != nil {
		t.Fatal(err)
	}
	base := client.Config{"fair_share_update_period_s": 0.1, "preemptive_scheduling_backoff_s": 0.2,
		"fair_share_starvation_timeout_s": 1, "refused_allocation_backoff_s": 1}
	for k, v := range config {
		base[k] = v
	}
	if _, err := e.api.PatchConfig(ctx, base); err != nil {
		t.Fatal(err)
	}
	e.kube, err = kubernetes.NewForConfig(c.Adapter)
	if err != nil {
		t.Fatal(err)
	}
	e.dyn, err = dynamic.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	e.ns, err = c.Namespace(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// startServe runs fairsched serve, durable in e.dataDir, and waits until
// it is ready; the cluster's close stops it.
func (e *env) startServe(bin string) {
	t := e.t
	// Without --config, serve seeds a new data directory with the example
	// pools (research among them): the tests' pools are the Pool objects'.
	config := filepath.Join(e.dataDir, "serve.json")
	if err := os.WriteFile(config, []byte(`{"pools": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := e.c.Run("fairsched-serve", bin, []string{"serve", "--listen", strings.TrimPrefix(e.url, "http://"),
		"--config", config, "--data-dir", e.dataDir, "--log-level", "warn"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.serve = p
	api, _ := client.New(e.url, client.WithRetries(0))
	if err := kubetest.Poll(e.ctx, time.Minute, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		return api.Ready(ctx) == nil, nil
	}); err != nil {
		t.Fatalf("fairsched serve is not ready: %v\n%s", err, p.Tail(20))
	}
}

// startAdapterProcess runs fairsched-kube as its own process, as the
// deployed one authorized by deploy/kubernetes's RBAC.
func (e *env) startAdapterProcess() *kubetest.Process {
	_, bin := binaries(e.t)
	p, err := e.c.Run("fairsched-kube", bin, []string{"--server", e.url, "--kubeconfig", e.c.AdapterKubeconfig,
		"--leader-elect=false", "--heartbeat-period=200ms", "--status-period=500ms"},
		func(line string) bool { return strings.Contains(line, "caches synced") })
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// runAdapter runs the adapter in the test's process until the test ends.
func (e *env) runAdapter(cfg adapter.Config) {
	if cfg.Period == 0 {
		cfg.Period = 200 * time.Millisecond
	}
	if cfg.StatusPeriod == 0 {
		cfg.StatusPeriod = 500 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(e.ctx)
	dyn, err := dynamic.NewForConfig(e.c.Adapter)
	if err != nil {
		e.t.Fatal(err)
	}
	a := adapter.New(cfg, e.kube, dyn, e.api)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			e.t.Errorf("adapter: %v", err)
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

func (e *env) pool(name string, spec map[string]any) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fairsched.io/v1alpha1", "kind": "Pool",
		"metadata": map[string]any{"name": name}, "spec": spec}}
	if _, err := e.dyn.Resource(poolcrd.Resource).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.poll(30*time.Second, "pool "+name+" on the server", func(ctx context.Context) (bool, error) {
		_, err := e.api.Pool(ctx, name)
		return err == nil, nil
	})
}

func (e *env) poll(timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	e.t.Helper()
	if err := kubetest.Poll(e.ctx, timeout, 100*time.Millisecond, cond); err != nil {
		e.t.Fatalf("%s: %v\n%s", what, err, e.describe())
	}
}

// describe is the state of the test's pods and of the server's pools and
// operations, for a failure's message.
func (e *env) describe() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	b.WriteString("pods (pool phase node deleting allocation):\n")
	if l, err := e.c.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "  cannot list: %v\n", err)
	} else {
		for _, p := range l.Items {
			fmt.Fprintf(&b, "  %s %s %s %s %v %s\n", p.Name, p.Labels[podspec.LabelPool], p.Status.Phase, p.Spec.NodeName,
				p.DeletionTimestamp != nil, p.Annotations[podspec.AnnotationAllocationID])
		}
	}
	b.WriteString("server pools (fair share, usage, demand of cpu; running and pending operations):\n")
	if pools, err := e.api.PoolOrchids(ctx); err != nil {
		fmt.Fprintf(&b, "  cannot list: %v\n", err)
	} else {
		for _, p := range pools {
			fmt.Fprintf(&b, "  %s weight %g: %.3f %.3f %.3f; %d %d\n", p.Name, p.Weight, p.FairShare.CPU, p.UsageShare.CPU,
				p.DemandShare.CPU, p.RunningOperationCount, p.PendingOperationCount)
		}
	}
	b.WriteString("server operations (pool state; usage, demand cpu; running allocations; pending and completed jobs):\n")
	for o, err := range e.api.Operations(ctx, client.OperationFilter{}) {
		if err != nil {
			fmt.Fprintf(&b, "  cannot list: %v\n", err)
			break
		}
		fmt.Fprintf(&b, "  %s %s %s; %g %g; %d; %d %d\n", o.ID, o.Pool, o.State, o.Usage.CPU, o.Demand.CPU,
			o.AllocationCounts.Running, o.PendingJobCount, o.CompletedJobCount)
	}
	return b.String()
}

func (e *env) nodes(prefix string, n int, spec kubetest.NodeSpec) []string {
	names, err := e.c.AddNodes(e.ctx, prefix, n, spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return names
}

// podTemplate is a fairsched pod of cpu cores in pool, that runs for
// runFor ("": until deleted).
func podTemplate(pool, cpu, runFor string) corev1.PodTemplateSpec {
	ann := map[string]string{}
	if runFor != "" {
		ann["kwok.fairsched.io/run-for"] = runFor
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{podspec.LabelPool: pool}, Annotations: ann},
		Spec: corev1.PodSpec{
			SchedulerName: "fairsched",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "work", Image: "work",
				Resources: corev1.ResourceRequirements{Requests: kubetest.Resources("cpu", cpu, "memory", "1Gi")}}},
		},
	}
}

// job makes a Job that, as docs/kubernetes.md#jobs-and-preemption
// advises, does not count the pods fairsched preempts against its
// backoffLimit.
func (e *env) job(name string, parallelism, completions int32, tpl corev1.PodTemplateSpec) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: batchv1.JobSpec{Parallelism: &parallelism, Completions: &completions, Template: tpl,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}}}}
	if _, err := e.c.Client.BatchV1().Jobs(e.ns).Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) pod(name string, tpl corev1.PodTemplateSpec) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	p.Name, p.Namespace = name, e.ns
	out, err := e.c.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) pods() []corev1.Pod {
	l, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// podWatch follows the test namespace's pods as they change: the most cpu
// the pods bound to each node and not finished requested at once (what a
// kubelet admits against), and each pod as first seen being deleted.
type podWatch struct {
	t        *testing.T
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	peak     map[string]float64
	peakAt   map[string]string // node → the pods at its peak
	deleting map[string]corev1.Pod
}

// watchPods starts a podWatch that runs until the test ends.
func (e *env) watchPods() *podWatch {
	w := &podWatch{t: e.t, pods: map[string]*corev1.Pod{}, peak: map[string]float64{}, peakAt: map[string]string{},
		deleting: map[string]corev1.Pod{}}
	ctx, stop := context.WithCancel(e.ctx)
	e.t.Cleanup(stop)
	// A watch from no resource version starts with every pod there is.
	wi, err := e.c.Client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.pods, p.Name)
			} else {
				w.pods[p.Name] = p
			}
			if _, ok := w.deleting[p.Name]; !ok && p.DeletionTimestamp != nil {
				w.deleting[p.Name] = *p.DeepCopy()
			}
			w.account()
			w.mu.Unlock()
		}
	}()
	return w
}

// account records each node's cpu in use now if it is its most.
func (w *podWatch) account() {
	cpu := map[string]float64{}
	names := map[string][]string{}
	for _, p := range w.pods {
		if p.Spec.NodeName == "" || podspec.Terminal(p) {
			continue
		}
		cpu[p.Spec.NodeName] += podspec.Resources(p).CPU
		names[p.Spec.NodeName] = append(names[p.Spec.NodeName], p.Name)
	}
	for n, c := range cpu {
		if c > w.peak[n] {
			w.peak[n] = c
			slices.Sort(names[n])
			w.peakAt[n] = strings.Join(names[n], " ")
		}
	}
}

// evicted are the pods seen being deleted, as first seen so.
func (w *podWatch) evicted() map[string]corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.deleting)
}

// checkNoOvercommit fails the test if a node's pods ever requested more
// than cpu cores at once.
func (w *podWatch) checkNoOvercommit(cpu float64) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for n, c := range w.peak {
		if c > cpu+1e-9 {
			w.t.Errorf("node %s held pods of %g cpu at once (%s), more than its %g", n, c, w.peakAt[n], cpu)
		}
	}
}

// checkNoDoubleBind fails the test when two pods carry one allocation.
func (e *env) checkNoDoubleBind() {
	seen := map[string]string{}
	for _, p := range e.pods() {
		id := p.Annotations[podspec.AnnotationAllocationID]
		if id == "" {
			continue
		}
		if other, ok := seen[id]; ok {
			e.t.Errorf("allocation %s bound twice: pods %s and %s", id, other, p.Name)
		}
		seen[id] = p.Name
	}
}

// TestE2EPoolsAndJobs: Pool objects are mirrored to the server (created,
// changed, deleted) with their status written back, and a Job with
// parallelism runs to completion, each pod bound once with its origin.
func TestE2EPoolsAndJobs(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("node", 2, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "16Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("research", map[string]any{"weight": 2, "resourceLimits": map[string]any{"cpu": "64"}})
	p, err := e.api.Pool(e.ctx, "research")
	if err != nil || p.Weight != 2 || p.ResourceLimits["cpu"] != 64 {
		obj, _ := e.dyn.Resource(poolcrd.Resource).Get(e.ctx, "research", metav1.GetOptions{})
		t.Fatalf("server pool = %+v, %v; want weight 2 and a 64-cpu limit (the Pool object: %v)", p, err, obj)
	}

	e.job("train", 4, 12, podTemplate("research", "1", "300ms"))
	e.poll(2*time.Minute, "the Job completes", func(ctx context.Context) (bool, error) {
		j, err := e.c.Client.BatchV1().Jobs(e.ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		return j.Status.Succeeded == 12, nil
	})
	bound := 0
	for _, p := range e.pods() {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		if _, ok, err := podspec.ParseOrigin(&p); !ok || err != nil {
			t.Errorf("succeeded pod %s has no origin (%v)", p.Name, err)
		}
		bound++
	}
	if bound != 12 {
		t.Errorf("%d succeeded pods, want 12", bound)
	}
	e.checkNoDoubleBind()

	// The status is written back.
	e.poll(30*time.Second, "the Pool's status", func(ctx context.Context) (bool, error) {
		u, err := e.dyn.Resource(poolcrd.Resource).Get(ctx, "research", metav1.GetOptions{})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		_, hasFair, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "fairShare")
		return gen == u.GetGeneration() && hasFair, nil
	})
	// A change reaches the server; a deletion removes the pool.
	u, err := e.dyn.Resource(poolcrd.Resource).Get(e.ctx, "research", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "weight")
	if _, err := e.dyn.Resource(poolcrd.Resource).Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.poll(30*time.Second, "the weight change on the server", func(ctx context.Context) (bool, error) {
		p, err := e.api.Pool(ctx, "research")
		return err == nil && p.Weight == 5, nil
	})
	if err := e.dyn.Resource(poolcrd.Resource).Delete(e.ctx, "research", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.poll(30*time.Second, "the pool deleted on the server", func(ctx context.Context) (bool, error) {
		_, err := e.api.Pool(ctx, "research")
		return client.IsNotFound(err), nil
	})
}

// TestE2EMissingPool: a pod whose pool does not exist stays Pending with a
// Warning event naming the pool, and runs once the Pool is made.
func TestE2EMissingPool(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("node", 1, kubetest.NodeSpec{})
	e.runAdapter(adapter.Config{ExplainPeriod: time.Second})
	p := e.pod("lost", podTemplate("nowhere", "1", ""))
	e.poll(30*time.Second, "a FailedScheduling event naming the pool", func(ctx context.Context) (bool, error) {
		evs, err := e.c.Client.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=lost,reason=FailedScheduling"})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		for _, ev := range evs.Items {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, `"nowhere"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if got, _ := e.c.Client.CoreV1().Pods(e.ns).Get(e.ctx, p.Name, metav1.GetOptions{}); got.Spec.NodeName != "" {
		t.Fatalf("a pod of a missing pool was bound to %s", got.Spec.NodeName)
	}
	e.pool("nowhere", nil)
	if _, err := kubetest.WaitPod(e.ctx, e.c.Client, e.ns, "lost", time.Minute, "runs",
		kubetest.PodPhaseIs(corev1.PodRunning)); err != nil {
		t.Fatal(err)
	}
}

// TestE2EWeightsConverge: two pools of weights 1 and 3 whose Jobs want
// more than the cluster share it 1:3 in running pods. A pool is below its
// fair share only under fair_share_starvation_tolerance of it (0.8 by
// default, which leaves 5:11 and 6:10 as they are): 0.95 makes 4:12 the
// only split without a pool below its fair share.
func TestE2EWeightsConverge(t *testing.T) {
	e := newEnv(t, client.Config{"fair_share_starvation_tolerance": 0.95})
	e.runAdapter(adapter.Config{})
	e.pool("light", map[string]any{"weight": 1})
	e.pool("heavy", map[string]any{"weight": 3})
	e.job("light", 40, 40, podTemplate("light", "1", ""))
	e.job("heavy", 40, 40, podTemplate("heavy", "1", ""))
	// The nodes come after the demand: 4 nodes of 4 cores, 16 pods.
	e.nodes("node", 4, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	var light, heavy int
	e.poll(2*time.Minute, "16 pods running 4:12", func(ctx context.Context) (bool, error) {
		light, heavy = 0, 0
		for _, p := range e.pods() {
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
				continue
			}
			switch p.Labels[podspec.LabelPool] {
			case "light":
				light++
			case "heavy":
				heavy++
			}
		}
		return light == 4 && heavy == 12, nil
	})
	e.checkNoDoubleBind()
}

// TestE2EBarePodsConverge: bare pods are one operation per namespace and
// pool label, so a pool of bare pods above its fair share gives pods back
// to a starving one: light's 16 bare pods fill the cluster, heavy's come
// later, and fair-share preemption evicts light's down to 4:12 (weights 1
// and 3, tolerance 0.95 as in TestE2EWeightsConverge). With an operation
// per pod each of light's pods would be its operation's only allocation,
// never preemptible for fair share, and heavy would wait for good.
func TestE2EBarePodsConverge(t *testing.T) {
	e := newEnv(t, client.Config{"fair_share_starvation_tolerance": 0.95, "allocation_preemption_timeout_s": 1})
	e.nodes("node", 4, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("light", map[string]any{"weight": 1})
	e.pool("heavy", map[string]any{"weight": 3})
	running := func(pool string) int {
		n := 0
		for _, p := range e.pods() {
			if p.Labels[podspec.LabelPool] == pool && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	for i := range 16 {
		e.pod(fmt.Sprintf("light-%d", i), podTemplate("light", "1", ""))
	}
	e.poll(time.Minute, "light's 16 pods fill the cluster", func(ctx context.Context) (bool, error) {
		return running("light") == 16, nil
	})
	for i := range 16 {
		e.pod(fmt.Sprintf("heavy-%d", i), podTemplate("heavy", "1", ""))
	}
	var light, heavy int
	e.poll(2*time.Minute, "16 pods running 4:12", func(ctx context.Context) (bool, error) {
		light, heavy = running("light"), running("heavy")
		return light == 4 && heavy == 12, nil
	})
	op, err := e.api.Operation(e.ctx, "k8s-"+e.ns+":pods:light")
	if err != nil || op.AllocationCounts.Running != 4 {
		t.Errorf("light's bare pods' operation: %+v, %v; want it to run the 4 pods left", op, err)
	}
	e.checkNoDoubleBind()
}

// TestE2EPreemptionByEviction: a starving pool's operation preempts
// another's pods through the Eviction API: the evicted pods carry the
// DisruptionTarget condition and the allocation's timeout as their grace
// period, and the starving pool's pods run in their place.
func TestE2EPreemptionByEviction(t *testing.T) {
	e := newEnv(t, client.Config{"allocation_preemption_timeout_s": 3})
	e.nodes("node", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("batch", map[string]any{"weight": 1})
	e.pool("prod", map[string]any{"weight": 1, "strongGuaranteeResources": map[string]any{"cpu": "2"}})
	e.job("batch", 4, 4, podTemplate("batch", "1", ""))
	e.poll(time.Minute, "batch fills the node", func(ctx context.Context) (bool, error) {
		n := 0
		for _, p := range e.pods() {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 4, nil
	})
	// Watch for the evictions as they happen, and for a node that
	// holds more than it has.
	w := e.watchPods()
	e.job("prod", 2, 2, podTemplate("prod", "1", ""))
	e.poll(time.Minute, "prod's two pods run and two of batch's are evicted", func(ctx context.Context) (bool, error) {
		n := 0
		for _, p := range e.pods() {
			if p.Labels[podspec.LabelPool] == "prod" && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 2 && len(w.evicted()) >= 2, nil
	})
	seen := w.evicted()
	if len(seen) < 2 {
		t.Fatalf("%d pods evicted, want at least 2", len(seen))
	}
	for name, p := range seen {
		if p.Labels[podspec.LabelPool] != "batch" {
			t.Errorf("pod %s of pool %s was evicted", name, p.Labels[podspec.LabelPool])
		}
		if c := kubetest.PodCondition(&p, corev1.DisruptionTarget); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("evicted pod %s has no DisruptionTarget condition: %+v", name, p.Status.Conditions)
		}
		if g := p.DeletionGracePeriodSeconds; g == nil || *g != 3 {
			t.Errorf("evicted pod %s: grace period %v, want 3 (allocation_preemption_timeout_s)", name, g)
		}
	}
	// prod's pods waited for the victims to go: the node never held more
	// than its 4 cores.
	w.checkNoOvercommit(4)
	e.checkNoDoubleBind()
}

// TestE2EDeletedPodFreesSlot: a pod its user deletes frees its resources
// for a pending one, and other schedulers' pods count as used.
func TestE2EDeletedPodFreesSlotAndOthersCount(t *testing.T) {
	e := newEnv(t, nil)
	nodes := e.nodes("node", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("p", nil)
	// Another scheduler's pod takes 2 of the 4 cores.
	tpl := podTemplate("p", "2", "")
	tpl.Spec.SchedulerName = "default-scheduler"
	foreign := e.pod("foreign", tpl)
	if err := kubetest.Bind(e.ctx, e.c.Client, foreign, nodes[0]); err != nil {
		t.Fatal(err)
	}
	e.poll(30*time.Second, "the node's limits less the other scheduler's pod", func(ctx context.Context) (bool, error) {
		n, err := e.api.Node(ctx, nodes[0])
		return err == nil && n.ResourceLimits.CPU == 2, nil
	})
	a := e.pod("a", podTemplate("p", "1", ""))
	b := e.pod("b", podTemplate("p", "1", ""))
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := kubetest.WaitPod(e.ctx, e.c.Client, e.ns, p.Name, time.Minute, "runs",
			kubetest.PodPhaseIs(corev1.PodRunning)); err != nil {
			t.Fatal(err)
		}
	}
	e.pod("c", podTemplate("p", "1", ""))
	// c waits: the node is full (2 cores others', 2 fairsched's). The bare
	// pods of pool p are one operation.
	opID := "k8s-" + e.ns + ":pods:p"
	e.poll(30*time.Second, "c pending in the operation on the server", func(ctx context.Context) (bool, error) {
		op, err := e.api.Operation(ctx, opID)
		return err == nil && op.PendingJobCount == 1 && op.AllocationCounts.Running == 2, nil
	})
	if got, _ := e.c.Client.CoreV1().Pods(e.ns).Get(e.ctx, "c", metav1.GetOptions{}); got.Spec.NodeName != "" {
		t.Fatalf("c was bound to a full node")
	}
	if err := e.c.Client.CoreV1().Pods(e.ns).Delete(e.ctx, "a", metav1.DeleteOptions{
		GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := kubetest.WaitPod(e.ctx, e.c.Client, e.ns, "c", time.Minute, "runs in a's place",
		kubetest.PodPhaseIs(corev1.PodRunning)); err != nil {
		t.Fatal(err)
	}
	e.poll(30*time.Second, "a's job gone from the operation", func(ctx context.Context) (bool, error) {
		op, err := e.api.Operation(ctx, opID)
		return err == nil && op.PendingJobCount == 0 && op.AllocationCounts.Running == 2 &&
			op.Demand.CPU == 2, nil
	})
}

// TestE2EKillAdapterAndServe: kill -9 of fairsched-kube and then of a
// durable fairsched serve, while a Job runs, loses no pod and binds none
// twice: the restarted adapter rebuilds from the pods' annotations and
// reports their origins, the restarted server adopts the allocations.
func TestE2EKillAdapterAndServe(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("node", 2, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	adapterProc := e.startAdapterProcess()
	e.pool("batch", nil)
	const completions = 40
	e.job("work", 8, completions, podTemplate("batch", "1", "2s"))
	succeeded := func(atLeast int32) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			j, err := e.c.Client.BatchV1().Jobs(e.ns).Get(ctx, "work", metav1.GetOptions{})
			if err != nil {
				return false, kubetest.Retry(err)
			}
			return j.Status.Succeeded >= atLeast, nil
		}
	}
	e.poll(2*time.Minute, "8 pods succeeded", succeeded(8))
	adapterProc.Kill()
	adapterProc = e.startAdapterProcess()
	e.poll(2*time.Minute, "20 pods succeeded", succeeded(20))
	e.serve.Kill()
	e.startServe(e.serveBin)
	e.poll(3*time.Minute, "the Job completes", succeeded(completions))
	j, err := e.c.Client.BatchV1().Jobs(e.ns).Get(e.ctx, "work", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Failed != 0 {
		t.Errorf("%d pods of the Job failed or were deleted, want none", j.Status.Failed)
	}
	if n := len(e.pods()); n != completions {
		t.Errorf("%d pods, want %d: a pod was lost and made again", n, completions)
	}
	e.checkNoDoubleBind()
	if ok, err := adapterProc.Exited(); ok {
		t.Errorf("the restarted adapter exited: %v\n%s", err, adapterProc.Tail(20))
	}
}

// TestE2ENodeFilters: node selectors and taints are honoured (a start on
// a node the pod does not fit is refused and goes elsewhere), and a
// cordoned node gets no new pod.
func TestE2ENodeFilters(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("ssd", 1, kubetest.NodeSpec{Labels: map[string]string{"disk": "ssd"}})
	e.nodes("tainted", 1, kubetest.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "ml",
		Effect: corev1.TaintEffectNoSchedule}}})
	e.nodes("cordoned", 1, kubetest.NodeSpec{Unschedulable: true})
	e.nodes("plain", 1, kubetest.NodeSpec{})
	e.runAdapter(adapter.Config{})
	e.pool("p", nil)
	onSSD := podTemplate("p", "1", "")
	onSSD.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	tolerating := podTemplate("p", "1", "")
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual,
		Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	tolerating.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "tainted-0"}
	for i := range 4 {
		e.pod(fmt.Sprintf("ssd-%d", i), onSSD)
		e.pod(fmt.Sprintf("any-%d", i), podTemplate("p", "1", ""))
	}
	e.pod("ml", tolerating)
	e.poll(2*time.Minute, "every pod running", func(ctx context.Context) (bool, error) {
		for _, p := range e.pods() {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	for _, p := range e.pods() {
		node := p.Spec.NodeName
		switch {
		case strings.HasPrefix(node, "cordoned"):
			t.Errorf("pod %s went to the cordoned node", p.Name)
		case strings.HasPrefix(p.Name, "ssd-") && node != "ssd-0":
			t.Errorf("pod %s with selector disk=ssd went to %s", p.Name, node)
		case p.Name == "ml" && node != "tainted-0":
			t.Errorf("pod ml went to %s, want tainted-0", node)
		case p.Name != "ml" && node == "tainted-0":
			t.Errorf("pod %s without the toleration went to the tainted node", p.Name)
		}
	}
	n, err := e.api.Node(e.ctx, "cordoned-0")
	if err != nil || n.Schedulable {
		t.Errorf("the cordoned node on the server: %+v, %v; want schedulable false", n, err)
	}
	e.checkNoDoubleBind()
}

// TestE2EGang: a gang is bound whole or not at all: three pods that need
// more than the cluster has stay pending (their grants refused after the
// gang timeout), and are all bound once a node joins.
func TestE2EGang(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("node", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{GangTimeout: 2 * time.Second})
	e.pool("p", nil)
	tpl := podTemplate("p", "2", "")
	tpl.Labels[podspec.LabelOperation] = "gang"
	tpl.Annotations[podspec.AnnotationGang] = "true"
	for i := range 3 {
		e.pod(fmt.Sprintf("member-%d", i), tpl)
	}
	// The server grants two (the node has room for two), the adapter holds
	// them and refuses them after the timeout: wait for a refusal to show
	// in the metrics, and see that no member was bound meanwhile.
	e.poll(time.Minute, "a refused grant", func(ctx context.Context) (bool, error) {
		m, err := e.api.Metrics(ctx)
		if err != nil {
			return false, kubetest.Retry(err)
		}
		for _, line := range strings.Split(string(m), "\n") {
			if strings.HasPrefix(line, "fairsched_allocations_refused_total ") && !strings.HasSuffix(line, " 0") {
				return true, nil
			}
		}
		return false, nil
	})
	for _, p := range e.pods() {
		if p.Spec.NodeName != "" {
			t.Fatalf("gang member %s was bound to %s before the whole gang was granted", p.Name, p.Spec.NodeName)
		}
	}
	e.nodes("more", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.poll(time.Minute, "the whole gang running", func(ctx context.Context) (bool, error) {
		for _, p := range e.pods() {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	e.checkNoDoubleBind()
}

// TestE2EGracefulPreemption: a graceful operation (the annotation
// fairsched.io/graceful-preemption with a timeout) that holds more than
// its fair share once another pool wants its part sheds the rest itself:
// its pods get the DisruptionTarget condition and are evicted with the
// annotation's timeout as their grace period, run through that SIGTERM
// window, and the other pool's pods are bound only once they are gone.
func TestE2EGracefulPreemption(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("node", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("svc", map[string]any{"weight": 1})
	e.pool("batch", map[string]any{"weight": 1})
	tpl := podTemplate("svc", "1", "")
	tpl.Annotations[podspec.AnnotationGracefulPreemption] = "4s"
	e.job("svc", 4, 4, tpl)
	e.poll(time.Minute, "svc fills the node", func(ctx context.Context) (bool, error) {
		n := 0
		for _, p := range e.pods() {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 4, nil
	})
	w := e.watchPods()
	e.job("batch", 2, 2, podTemplate("batch", "1", ""))
	// While a victim runs through its window, batch is not bound.
	sawWindow := false
	e.poll(time.Minute, "batch's two pods run, two of svc's evicted", func(ctx context.Context) (bool, error) {
		running := 0
		for _, p := range e.pods() {
			switch {
			case p.Labels[podspec.LabelPool] == "svc" && p.DeletionTimestamp != nil && p.Status.Phase == corev1.PodRunning:
				sawWindow = true
			case p.Labels[podspec.LabelPool] == "batch" && p.Status.Phase == corev1.PodRunning:
				running++
			}
		}
		return running == 2 && len(w.evicted()) >= 2, nil
	})
	evicted := w.evicted()
	if len(evicted) != 2 {
		t.Errorf("%d pods evicted, want 2 (svc's share beyond its fair share)", len(evicted))
	}
	for name, p := range evicted {
		if p.Labels[podspec.LabelPool] != "svc" {
			t.Errorf("pod %s of pool %s was evicted", name, p.Labels[podspec.LabelPool])
		}
		if c := kubetest.PodCondition(&p, corev1.DisruptionTarget); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("evicted pod %s: DisruptionTarget %+v, want True", name, c)
		}
		// The server's reason is in the Preempted event (the Eviction API
		// writes its own into the condition).
		e.poll(30*time.Second, "pod "+name+"'s Preempted event", func(ctx context.Context) (bool, error) {
			evs, err := e.c.Client.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + name + ",reason=Preempted"})
			if err != nil {
				return false, kubetest.Retry(err)
			}
			return len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "graceful preemption"), nil
		})
		if g := p.DeletionGracePeriodSeconds; g == nil || *g != 4 {
			t.Errorf("evicted pod %s: grace period %v, want 4 (the annotation's timeout)", name, g)
		}
	}
	if !sawWindow {
		t.Errorf("no evicted pod was seen running through its grace period")
	}
	w.checkNoOvercommit(4)
	e.checkNoDoubleBind()
}

// jobUID is the uid of the test namespace's Job name.
func (e *env) jobUID(name string) types.UID {
	j, err := e.c.Client.BatchV1().Jobs(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return j.UID
}

// TestE2ECordon: a node cordoned while fairsched's pods run on it keeps
// them running (the server lists their allocations) and gets no new pod,
// though it has room; the new pods go to a node that joins later.
func TestE2ECordon(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("a", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("p", nil)
	for i := range 2 {
		e.pod(fmt.Sprintf("old-%d", i), podTemplate("p", "1", ""))
	}
	e.poll(time.Minute, "the old pods run on a-0", func(ctx context.Context) (bool, error) {
		for _, p := range e.pods() {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	if _, err := e.c.Client.CoreV1().Nodes().Patch(e.ctx, "a-0", types.MergePatchType,
		[]byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.poll(30*time.Second, "a-0 cordoned on the server", func(ctx context.Context) (bool, error) {
		n, err := e.api.Node(ctx, "a-0")
		return err == nil && !n.Schedulable, nil
	})
	var news []*corev1.Pod
	for i := range 2 {
		news = append(news, e.pod(fmt.Sprintf("new-%d", i), podTemplate("p", "1", "")))
	}
	// The new pods' operations are pending on the server; a-0 has room for
	// them. Five more seconds of heartbeats (some 25 rounds) must not bind
	// them there.
	var since float64
	e.poll(30*time.Second, "the new pods pending in the operation", func(ctx context.Context) (bool, error) {
		// The bare pods of pool p are one operation.
		op, err := e.api.Operation(ctx, "k8s-"+e.ns+":pods:p")
		if err != nil || op.PendingJobCount != int64(len(news)) {
			return false, nil
		}
		n, err := e.api.Node(ctx, "a-0")
		since = n.LastHeartbeatS
		return err == nil, nil
	})
	e.poll(30*time.Second, "five seconds of heartbeats", func(ctx context.Context) (bool, error) {
		n, err := e.api.Node(ctx, "a-0")
		return err == nil && n.LastHeartbeatS >= since+5, nil
	})
	for _, p := range e.pods() {
		switch {
		case strings.HasPrefix(p.Name, "new-") && p.Spec.NodeName != "":
			t.Errorf("pod %s was bound to the cordoned node %s", p.Name, p.Spec.NodeName)
		case strings.HasPrefix(p.Name, "old-") && (p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil):
			t.Errorf("pod %s on the cordoned node stopped: %s, deleting %v", p.Name, p.Status.Phase,
				p.DeletionTimestamp != nil)
		}
	}
	if n, err := e.api.Node(e.ctx, "a-0"); err != nil || n.AllocationCount != 2 {
		t.Errorf("the cordoned node on the server: %+v, %v; want its 2 allocations listed", n, err)
	}
	e.nodes("b", 1, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.poll(time.Minute, "the new pods run on b-0", func(ctx context.Context) (bool, error) {
		for _, p := range e.pods() {
			if strings.HasPrefix(p.Name, "new-") && (p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "b-0") {
				return false, nil
			}
		}
		return true, nil
	})
	e.checkNoDoubleBind()
}

// TestE2EJobChurn: a Job's demand follows its pods over its life. One
// whose pods fail is retried by its controller up to its backoffLimit,
// each new pod bound once, and when it has failed nothing of it is left
// on the server; one whose parallelism is raised while it runs gets the
// new pods into its operation's job count and runs them at once.
func TestE2EJobChurn(t *testing.T) {
	e := newEnv(t, nil)
	e.nodes("node", 2, kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", "4", "memory", "64Gi")})
	e.runAdapter(adapter.Config{})
	e.pool("p", nil)

	// Failing pods, retried: backoffLimit 1 fails the Job at its second
	// failure.
	failing := podTemplate("p", "1", "")
	failing.Annotations["kwok.fairsched.io/fail-after"] = "300ms"
	one := int32(1)
	jf := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "failing", Namespace: e.ns},
		Spec: batchv1.JobSpec{Parallelism: &one, Completions: &one, BackoffLimit: &one, Template: failing}}
	if _, err := e.c.Client.BatchV1().Jobs(e.ns).Create(e.ctx, jf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Raised parallelism: 2 pods, then 6, of 8 that run 10 s each.
	e.job("wide", 2, 8, podTemplate("p", "1", "10s"))
	wideKey := "k8s-" + string(e.jobUID("wide"))
	runningOf := func(job string) int {
		n := 0
		for _, p := range e.pods() {
			if p.Labels["job-name"] == job && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	e.poll(time.Minute, "wide runs 2 pods", func(ctx context.Context) (bool, error) { return runningOf("wide") == 2, nil })
	if _, err := e.c.Client.BatchV1().Jobs(e.ns).Patch(e.ctx, "wide", types.MergePatchType,
		[]byte(`{"spec":{"parallelism":6}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.poll(time.Minute, "wide's operation wants 6 and runs 6 pods", func(ctx context.Context) (bool, error) {
		o, err := e.api.OperationOrchid(ctx, wideKey)
		if err != nil {
			return false, nil
		}
		var jobs int64
		for _, task := range o.Tasks {
			jobs += task.JobCount
		}
		return jobs == 6 && runningOf("wide") == 6, nil
	})

	e.poll(2*time.Minute, "the failing Job failed", func(ctx context.Context) (bool, error) {
		j, err := e.c.Client.BatchV1().Jobs(e.ns).Get(ctx, "failing", metav1.GetOptions{})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	failedKey := "k8s-" + string(e.jobUID("failing"))
	var failedPods int
	for _, p := range e.pods() {
		if p.Labels["job-name"] != "failing" {
			continue
		}
		failedPods++
		if p.Status.Phase != corev1.PodFailed || p.Annotations[podspec.AnnotationAllocationID] == "" {
			t.Errorf("pod %s of the failing Job: %s, allocation %q; want Failed after being bound", p.Name,
				p.Status.Phase, p.Annotations[podspec.AnnotationAllocationID])
		}
	}
	if failedPods != 2 {
		t.Errorf("the failing Job made %d pods, want 2 (the first and its retry)", failedPods)
	}
	// Nothing of the failed Job is left running or pending on the server.
	e.poll(30*time.Second, "the failing Job's operations finished", func(ctx context.Context) (bool, error) {
		for o, err := range e.api.Operations(ctx, client.OperationFilter{}) {
			if err != nil {
				return false, nil
			}
			if podspec.Epoch(failedKey, o.ID) > 0 && o.State != "completed" && o.State != "aborted" {
				return false, nil
			}
		}
		return true, nil
	})
	// wide completes; its operation is completed and the pool is idle.
	e.poll(2*time.Minute, "wide completes", func(ctx context.Context) (bool, error) {
		j, err := e.c.Client.BatchV1().Jobs(e.ns).Get(ctx, "wide", metav1.GetOptions{})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		return j.Status.Succeeded == 8, nil
	})
	// Between two waves (the controller makes the next pods after it sees
	// the last ones succeed) the operation may have had no live pod and
	// been completed, its successor <key>.2 taking the rest: together
	// they completed the Job's 8 pods, and none is left running.
	e.poll(30*time.Second, "wide's operations completed, 8 jobs in all", func(ctx context.Context) (bool, error) {
		var done int64
		for o, err := range e.api.Operations(ctx, client.OperationFilter{}) {
			if err != nil {
				return false, nil
			}
			if podspec.Epoch(wideKey, o.ID) == 0 {
				continue
			}
			if o.State != "completed" {
				return false, nil
			}
			done += o.CompletedJobCount
		}
		return done == 8, nil
	})
	e.poll(time.Minute, "the pool idle: nothing running or pending", func(ctx context.Context) (bool, error) {
		pl, err := e.api.PoolOrchids(ctx)
		if err != nil {
			return false, nil
		}
		for _, p := range pl {
			if p.Name == "p" {
				return p.UsageShare.CPU == 0 && p.DemandShare.CPU == 0 && p.RunningOperationCount == 0 &&
					p.PendingOperationCount == 0, nil
			}
		}
		return false, nil
	})
	e.checkNoDoubleBind()
}
