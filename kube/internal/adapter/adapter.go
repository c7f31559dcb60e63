// Package adapter is fairsched-kube: it makes fairsched serve the
// scheduler of the pods that ask for it (spec.schedulerName), speaking for
// every node of the cluster in batched heartbeats, binding the allocations
// the server starts, evicting those it preempts, and mirroring Pool objects
// to the server's pools (docs/kubernetes.md).
package adapter

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/podspec"
	"github.com/fairsched/fairsched/kube/internal/poolcrd"
)

// Config is the adapter's configuration (fairsched-kube's flags).
type Config struct {
	// SchedulerName is the spec.schedulerName of the pods it schedules.
	SchedulerName string
	// Period is how often it sends every node's heartbeat; Debounce how
	// long after a pod or node event it sends them sooner.
	Period, Debounce time.Duration
	// BarePods says which operation a bare pod belongs to (default
	// podspec.BarePodsNamespace).
	BarePods podspec.BarePods
	// NodeLabels are the node label keys that become node tags.
	NodeLabels []string
	// GangTimeout is how long a gang's grants are held before they are
	// all refused.
	GangTimeout time.Duration
	// RoomTimeout is how long a start waits for room on its node (for the
	// pods there that are being preempted or deleted to go) before it is
	// refused.
	RoomTimeout time.Duration
	// StatusPeriod is how often Pool statuses are written; ExplainPeriod
	// how often a pending pod's FailedScheduling event is renewed.
	StatusPeriod, ExplainPeriod time.Duration
	// Workers is how many of a round's writes (evictions, deletions,
	// operation starts and resizes) run at once.
	Workers int
	// BindWorkers is how many binds run at once, beside the rounds. With
	// 32, a goroutine dump during a 10,000-pod kube-bench run showed
	// 4,573 binds the server had granted waiting for a slot
	// (bench/README.md, "What changed").
	BindWorkers int
	// Logger logs what the adapter does (nil: slog.Default()).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (c *Config) defaults() {
	if c.SchedulerName == "" {
		c.SchedulerName = "fairsched"
	}
	if c.Period <= 0 {
		c.Period = time.Second
	}
	if c.BarePods == "" {
		c.BarePods = podspec.BarePodsNamespace
	}
	if c.Debounce <= 0 {
		c.Debounce = 50 * time.Millisecond
	}
	if c.GangTimeout <= 0 {
		c.GangTimeout = time.Minute
	}
	if c.RoomTimeout <= 0 {
		c.RoomTimeout = 2 * time.Minute
	}
	if c.StatusPeriod <= 0 {
		c.StatusPeriod = 5 * time.Second
	}
	if c.ExplainPeriod <= 0 {
		c.ExplainPeriod = 15 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 32
	}
	if c.BindWorkers <= 0 {
		c.BindWorkers = 512
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Adapter is one fairsched-kube. Run drives it; its state is rebuilt from
// the pods' annotations and the server at every start.
type Adapter struct {
	cfg      Config
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	api      *client.Client
	recorder record.EventRecorder
	log      *slog.Logger

	pods       listersv1.PodLister
	nodes      listersv1.NodeLister
	namespaces listersv1.NamespaceLister
	poolStore  cache.Store
	synced     []cache.InformerSynced
	start      func(stop <-chan struct{})

	wake chan struct{}

	mu           sync.Mutex
	deletedPools map[string]bool // Pool objects deleted, to delete on the server
	poolsDirty   bool

	// jobMu guards the loop's state against a round's writes, which run
	// beside each other, and failedBinds.
	jobMu       sync.Mutex
	failedBinds []failedBind // binds that failed, for the next round to refuse
	// bindSem bounds the binds in flight (BindWorkers); binds counts them,
	// for Run to wait for at its end.
	bindSem chan struct{}
	binds   sync.WaitGroup
	// statusBusy is held while a batch of status writes runs (writeStatus);
	// statusDone is what it wrote, read by the loop once it holds it.
	statusBusy sync.Mutex
	statusDone []statusWritten

	// The rest belongs to the loop.
	ops         map[string]*opState // by operation key
	opByID      map[string]*opState
	inflight    map[string]bound                     // allocation id → a bind the informer has not shown yet
	refused     map[string][]client.AllocationReport // by node, for the next heartbeat
	held        map[string]*gang                     // by operation id
	waiting     map[string]*waitingStart             // by allocation id: starts waiting for room on their node
	preempting  map[string]*preemption               // by allocation id
	endedSent   map[string]bool                      // allocation ids whose end a heartbeat carried
	serverPools map[string]bool                      // the server's pools, as last listed
	lastPut     map[string]string                    // Pool name → the body last PUT
	poolErr     map[string]string                    // Pool name → why it could not be mirrored
	lastStatus  map[string]poolcrd.Status            // Pool name → the status last written
	orchids     map[string]client.PoolOrchid         // the server's pools, as of the last status sync
	nextPools   time.Time
	nextStatus  time.Time
}

// New makes an adapter of the cluster kube (and dyn, for Pool objects) and
// the fairsched server api.
func New(cfg Config, kube kubernetes.Interface, dyn dynamic.Interface, api *client.Client) *Adapter {
	cfg.defaults()
	a := &Adapter{
		cfg: cfg, kube: kube, dyn: dyn, api: api, log: cfg.Logger,
		wake:         make(chan struct{}, 1),
		bindSem:      make(chan struct{}, cfg.BindWorkers),
		deletedPools: map[string]bool{},
		poolsDirty:   true,
		ops:          map[string]*opState{},
		opByID:       map[string]*opState{},
		inflight:     map[string]bound{},
		refused:      map[string][]client.AllocationReport{},
		held:         map[string]*gang{},
		waiting:      map[string]*waitingStart{},
		preempting:   map[string]*preemption{},
		endedSent:    map[string]bool{},
		serverPools:  map[string]bool{},
		lastPut:      map[string]string{},
		poolErr:      map[string]string{},
		lastStatus:   map[string]poolcrd.Status{},
		orchids:      map[string]client.PoolOrchid{},
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	a.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "fairsched-kube"})

	factory := informers.NewSharedInformerFactory(kube, 0)
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	nsInf := factory.Core().V1().Namespaces()
	a.pods, a.nodes, a.namespaces = podInf.Lister(), nodeInf.Lister(), nsInf.Lister()
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.poke() },
		UpdateFunc: func(any, any) { a.poke() },
		DeleteFunc: func(any) { a.poke() },
	}
	podInf.Informer().AddEventHandler(poke)
	nodeInf.Informer().AddEventHandler(poke)
	a.synced = append(a.synced, podInf.Informer().HasSynced, nodeInf.Informer().HasSynced,
		nsInf.Informer().HasSynced)

	dfactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	poolInf := dfactory.ForResource(poolcrd.Resource).Informer()
	poolInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.poolsChanged("") },
		UpdateFunc: func(any, any) { a.poolsChanged("") },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				a.poolsChanged(u.GetName())
			}
		},
	})
	a.poolStore = poolInf.GetStore()
	a.synced = append(a.synced, poolInf.HasSynced)
	a.start = func(stop <-chan struct{}) {
		factory.Start(stop)
		dfactory.Start(stop)
	}
	return a
}

func (a *Adapter) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *Adapter) poolsChanged(deleted string) {
	a.mu.Lock()
	a.poolsDirty = true
	if deleted != "" {
		a.deletedPools[deleted] = true
	}
	a.mu.Unlock()
	a.poke()
}

// Run schedules until ctx ends: a round (pools, operations, heartbeats
// and what their answers ask) every Period, and Debounce after an event.
func (a *Adapter) Run(ctx context.Context) error {
	a.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return ctx.Err()
	}
	a.log.Info("fairsched-kube: caches synced; scheduling", "scheduler_name", a.cfg.SchedulerName)
	defer a.binds.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	due := a.cfg.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
			if soon := a.cfg.Now().Add(a.cfg.Debounce); soon.Before(due) {
				due = soon
				timer.Reset(a.cfg.Debounce)
			}
		case <-timer.C:
			a.Round(ctx)
			due = a.cfg.Now().Add(a.cfg.Period)
			timer.Reset(a.cfg.Period)
		}
	}
}

// Round is one round: mirror the pools, keep the operations' demand in
// step with their pods, send every node's heartbeat and carry out the
// answers, write the Pool statuses.
func (a *Adapter) Round(ctx context.Context) {
	s, err := a.snapshot()
	if err != nil {
		a.log.Error("fairsched-kube: cannot read the caches", "err", err)
		return
	}
	a.takeBindFailures()
	a.syncPools(ctx)
	a.syncOperations(ctx, s)
	a.heartbeat(ctx, s)
	a.retryPreemptions(ctx, s)
	a.writeStatus(ctx, s)
}

// snapshot is the cluster as the informers see it at the start of a round,
// indexed as a round needs it.
type snapshot struct {
	nodes      []*corev1.Node
	namespaces map[string]*corev1.Namespace
	// onNode are the pods bound to each node that have not finished,
	// whoever bound them.
	onNode map[string][]*corev1.Pod
	// others are those fairsched-kube did not bind.
	others map[string][]*corev1.Pod
	// ours are the pods fairsched-kube bound, by node, finished or not.
	ours map[string][]ourPod
	// byAlloc finds a bound pod by its allocation id.
	byAlloc map[string]*corev1.Pod
	// byUID finds any pod by its uid.
	byUID map[string]*corev1.Pod
	// byKey are the schedulable pods by operation key.
	byKey map[string]*keyPods
	// keys are byKey's keys, sorted.
	keys []string
	// queues are the pending pods of each operation key by task, made
	// when a start first needs them (taskQueue).
	queues map[string][]*taskQueue
}

type ourPod struct {
	pod    *corev1.Pod
	origin podspec.Origin
}

// keyPods are the pods of one operation key: pending (not bound, not
// finished, not being deleted; oldest first) and bound by fairsched-kube.
type keyPods struct {
	pending []*corev1.Pod
	bound   []ourPod
}

func (a *Adapter) snapshot() (*snapshot, error) {
	pods, err := a.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	nss, err := a.namespaces.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return buildSnapshot(a.cfg.SchedulerName, a.cfg.BarePods, pods, nodes, nss, a.log), nil
}

func buildSnapshot(schedulerName string, bare podspec.BarePods, pods []*corev1.Pod, nodes []*corev1.Node, nss []*corev1.Namespace,
	log *slog.Logger) *snapshot {
	s := &snapshot{
		nodes:      slices.SortedFunc(slices.Values(nodes), func(x, y *corev1.Node) int { return compare(x.Name, y.Name) }),
		namespaces: map[string]*corev1.Namespace{},
		onNode:     map[string][]*corev1.Pod{},
		others:     map[string][]*corev1.Pod{},
		ours:       map[string][]ourPod{},
		byAlloc:    map[string]*corev1.Pod{},
		byUID:      map[string]*corev1.Pod{},
		byKey:      map[string]*keyPods{},
	}
	for _, ns := range nss {
		s.namespaces[ns.Name] = ns
	}
	kp := func(k string) *keyPods {
		p := s.byKey[k]
		if p == nil {
			p = &keyPods{}
			s.byKey[k] = p
		}
		return p
	}
	for _, pod := range pods {
		s.byUID[string(pod.UID)] = pod
		node := pod.Spec.NodeName
		origin, hasOrigin, err := podspec.ParseOrigin(pod)
		if err != nil {
			log.Warn("fairsched-kube: a pod's origin is damaged; it counts as another scheduler's", "err", err)
			hasOrigin = false
		}
		if node != "" && !podspec.Terminal(pod) {
			s.onNode[node] = append(s.onNode[node], pod)
			if !hasOrigin {
				s.others[node] = append(s.others[node], pod)
			}
		}
		if pod.Spec.SchedulerName != schedulerName {
			continue
		}
		if node != "" && hasOrigin {
			o := ourPod{pod: pod, origin: origin}
			s.ours[node] = append(s.ours[node], o)
			s.byAlloc[origin.AllocationID] = pod
			key := podspec.OperationKey(pod, bare)
			kp(key).bound = append(kp(key).bound, o)
			continue
		}
		if node == "" && !podspec.Terminal(pod) && pod.DeletionTimestamp == nil {
			key := podspec.OperationKey(pod, bare)
			kp(key).pending = append(kp(key).pending, pod)
		}
	}
	for k, p := range s.byKey {
		slices.SortFunc(p.pending, olderFirst)
		s.keys = append(s.keys, k)
	}
	slices.Sort(s.keys)
	return s
}

// olderFirst orders pods by creation, then namespace and name.
func olderFirst(x, y *corev1.Pod) int {
	if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := compare(x.Namespace, y.Namespace); c != 0 {
		return c
	}
	return compare(x.Name, y.Name)
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
