package main

import (
	"context"
	"fmt"
	"log"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/fairsched/fairsched/kube/internal/kubetest"
)

// PoolLabel is the pod label that names a pod's fairsched pool.
const PoolLabel = "fairsched.io/pool"

// recorder watches the pods of a namespace and keeps, for each, when the
// watch first saw it and when it first saw it bound.
type recorder struct {
	mu    sync.Mutex
	seen  map[types.UID]time.Time
	bound map[types.UID]time.Time
	nodes map[string]int
}

func (r *recorder) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[p.UID]; !ok {
		r.seen[p.UID] = now
	}
	if p.Spec.NodeName != "" {
		if _, ok := r.bound[p.UID]; !ok {
			r.bound[p.UID] = now
			r.nodes[p.Spec.NodeName]++
		}
	}
}

func (r *recorder) counts() (seen, bound int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen), len(r.bound)
}

// latencies are the pending→bound times of the bound pods, sorted, and the
// last bind; a pod pends from when the watch saw it or from start,
// whichever is later (a pod made before its scheduler started waits from
// that start).
func (r *recorder) latencies(start time.Time) ([]time.Duration, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	out := make([]time.Duration, 0, len(r.bound))
	for uid, b := range r.bound {
		seen := r.seen[uid]
		if seen.Before(start) {
			seen = start
		}
		out = append(out, b.Sub(seen))
		if b.After(last) {
			last = b
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, last
}

// percentile of sorted durations (nearest rank).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d))*p/100+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// scheduler is one side of the benchmark: it binds the pods whose
// spec.schedulerName is schedulerName(side) from start until stop.
type scheduler interface {
	// gap is, once every pod runs, the largest relative and absolute gap
	// between a pool's running share and its fair share (fairsched only).
	gap(ctx context.Context, cfg *config) (*Gap, error)
	stop()
}

func runPhase(ctx context.Context, c *kubetest.Cluster, cfg *config, which string, run int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	ns, err := c.Namespace(ctx, fmt.Sprintf("bench-%s-%d", which, run))
	if err != nil {
		return Result{}, err
	}
	rec := &recorder{seen: map[types.UID]time.Time{}, bound: map[types.UID]time.Time{}, nodes: map[string]int{}}
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rec.observe,
		UpdateFunc: func(_, obj any) { rec.observe(obj) },
	})
	stopInf := make(chan struct{})
	defer close(stopInf)
	factory.Start(stopInf)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return Result{}, fmt.Errorf("the pod watch did not sync")
	}

	var s scheduler
	startScheduler := func() error {
		log.Printf("%s: starting", which)
		var err error
		switch which {
		case "kube-scheduler":
			s, err = startKubeScheduler(ctx, c)
		case "fairsched":
			s, err = startFairsched(ctx, c, cfg)
		}
		return err
	}
	create := func() (time.Duration, error) {
		log.Printf("%s: creating %d pods in %d pools", which, cfg.pods, cfg.pools)
		t := time.Now()
		created, err := createWorkload(ctx, c, cfg, ns, schedulerName(which))
		if err != nil {
			return 0, err
		}
		log.Printf("%s: %d pods and Jobs created in %v", which, created, time.Since(t).Round(time.Millisecond))
		return time.Since(t), nil
	}
	var start time.Time
	var createdIn time.Duration
	if cfg.backlog {
		// Every pod exists and waits before the scheduler starts: the
		// run times its binding alone.
		if createdIn, err = create(); err != nil {
			return Result{}, err
		}
		err = kubetest.Poll(ctx, cfg.timeout, 100*time.Millisecond, func(context.Context) (bool, error) {
			seen, _ := rec.counts()
			return seen >= cfg.pods, nil
		})
		if err != nil {
			seen, _ := rec.counts()
			return Result{}, fmt.Errorf("the workload's pods did not all appear: %d of %d: %w", seen, cfg.pods, err)
		}
		if err := startScheduler(); err != nil {
			return Result{}, err
		}
		defer s.stop()
		start = time.Now()
	} else {
		if err := startScheduler(); err != nil {
			return Result{}, err
		}
		defer s.stop()
		start = time.Now()
		if createdIn, err = create(); err != nil {
			return Result{}, err
		}
	}
	progress := time.Now()
	err = kubetest.Poll(ctx, cfg.timeout, 100*time.Millisecond, func(context.Context) (bool, error) {
		seen, bound := rec.counts()
		if time.Since(progress) >= 5*time.Second {
			progress = time.Now()
			log.Printf("%s: %d pods seen, %d bound", which, seen, bound)
		}
		return bound >= cfg.bindTarget(), nil
	})
	if err != nil {
		seen, bound := rec.counts()
		return Result{}, fmt.Errorf("not every pod was bound: %d seen, %d bound (want %d): %w", seen, bound, cfg.bindTarget(), err)
	}
	lat, last := rec.latencies(start)
	elapsed := last.Sub(start)
	res := Result{
		Scheduler:     which,
		Run:           run,
		Pods:          len(lat),
		Nodes:         len(rec.nodes),
		CreateSeconds: createdIn.Seconds(),
		BoundSeconds:  elapsed.Seconds(),
		PodsPerSecond: float64(len(lat)) / elapsed.Seconds(),
		P50Ms:         ms(percentile(lat, 50)),
		P99Ms:         ms(percentile(lat, 99)),
		MaxMs:         ms(lat[len(lat)-1]),
	}
	from := "the first create"
	if cfg.backlog {
		from = "the scheduler's start"
	}
	log.Printf("%s: every pod bound %v after %s", which, elapsed.Round(time.Millisecond), from)
	if res.Gap, err = s.gap(ctx, cfg); err != nil {
		return Result{}, err
	}
	log.Print(res.line())
	s.stop()
	if err := cleanup(ctx, c, ns, cfg.pools); err != nil {
		return Result{}, err
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// createWorkload creates, in each pool, Jobs for cfg.jobShare of its pods
// and bare pods for the rest, from cfg.creators goroutines, at most
// cfg.createRate pods a second when that is set.
func createWorkload(ctx context.Context, c *kubetest.Cluster, cfg *config, ns, schedulerName string) (int, error) {
	type item struct {
		pool  int
		job   int32 // parallelism; 0 for a bare pod
		index int
	}
	var items []item
	for p := range cfg.pools {
		n := cfg.pods / cfg.pools
		if p < cfg.pods%cfg.pools {
			n++
		}
		jobPods := int(float64(n)*cfg.jobShare + 0.5)
		for i := 0; jobPods > 0; i++ {
			size := min(jobPods, cfg.jobParallelism)
			items = append(items, item{pool: p, job: int32(size), index: i})
			jobPods -= size
			n -= size
		}
		for i := range n {
			items = append(items, item{pool: p, index: i})
		}
	}
	// interleave the pools, as users submitting at once would
	sort.SliceStable(items, func(i, j int) bool { return items[i].index < items[j].index })
	work := make(chan item)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range cfg.creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				var err error
				pool := fmt.Sprintf("pool-%d", it.pool)
				if it.job > 0 {
					_, err = c.Client.BatchV1().Jobs(ns).Create(ctx, benchJob(cfg, ns, schedulerName, pool, it.index, it.job), metav1.CreateOptions{})
				} else {
					_, err = c.Client.CoreV1().Pods(ns).Create(ctx, benchPod(cfg, ns, schedulerName, pool, it.index), metav1.CreateOptions{})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	// At --create-rate, a Job waits for as many tokens as it has pods
	// (its controller makes them at once).
	var limit *rate.Limiter
	if cfg.createRate > 0 {
		limit = rate.NewLimiter(rate.Limit(cfg.createRate), max(1, cfg.jobParallelism))
	}
	for _, it := range items {
		if limit != nil {
			if err := limit.WaitN(ctx, max(1, int(it.job))); err != nil {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
		work <- it
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return 0, fmt.Errorf("cannot create the workload: %w", firstErr)
	}
	return len(items), ctx.Err()
}

func podSpec(cfg *config, schedulerName string) corev1.PodSpec {
	zero := int64(0)
	return corev1.PodSpec{
		SchedulerName:                 schedulerName,
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &zero,
		Containers: []corev1.Container{{
			Name:  "work",
			Image: "fake",
			Resources: corev1.ResourceRequirements{
				Requests: kubetest.Resources("cpu", cfg.podCPU, "memory", cfg.podMemory),
			},
		}},
	}
}

func benchPod(cfg *config, ns, schedulerName, pool string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      fmt.Sprintf("%s-pod-%d", pool, i),
			Labels:    map[string]string{PoolLabel: pool},
		},
		Spec: podSpec(cfg, schedulerName),
	}
}

func benchJob(cfg *config, ns, schedulerName, pool string, i int, n int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      fmt.Sprintf("%s-job-%d", pool, i),
			Labels:    map[string]string{PoolLabel: pool},
		},
		Spec: batchv1.JobSpec{
			Parallelism: &n,
			Completions: &n,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{PoolLabel: pool}},
				Spec:       podSpec(cfg, schedulerName),
			},
		},
	}
}

// cleanup deletes the phase's Jobs and pods and waits until they are gone,
// so that the next scheduler starts on empty nodes.
func cleanup(ctx context.Context, c *kubetest.Cluster, ns string, pools int) error {
	start := time.Now()
	bg := metav1.DeletePropagationBackground
	zero := int64(0)
	// a pool at a time: one request for every pod outlasts the API
	// server's request timeout
	for p := range pools {
		sel := metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=pool-%d", PoolLabel, p)}
		err := kubetest.Poll(ctx, 5*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
			if err := c.Client.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, sel); err != nil {
				return false, kubetest.Retry(fmt.Errorf("cannot delete the Jobs: %w", err))
			}
			if err := c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel); err != nil {
				return false, kubetest.Retry(fmt.Errorf("cannot delete the pods: %w", err))
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("pool-%d: %w", p, err)
		}
	}
	err := kubetest.Poll(ctx, 10*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, kubetest.Retry(err)
		}
		if len(pods.Items) > 0 {
			return false, kubetest.Retry(fmt.Errorf("pods left in %s", ns))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the pods of %s are not gone: %w", ns, err)
	}
	log.Printf("%s: cleaned up in %v", ns, time.Since(start).Round(time.Millisecond))
	return nil
}
