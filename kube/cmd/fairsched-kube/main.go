// Command fairsched-kube makes fairsched serve the scheduler of a
// Kubernetes cluster: it binds the pods whose spec.schedulerName is
// --scheduler-name to the nodes fairsched starts their jobs on, evicts the
// pods fairsched preempts, and mirrors Pool objects to fairsched's pools
// (docs/kubernetes.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/adapter"
	"github.com/fairsched/fairsched/kube/internal/podspec"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fairsched-kube:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("fairsched-kube", flag.ContinueOnError)
	var (
		server       = fs.String("server", envOr("FAIRSCHED_SERVER", "http://127.0.0.1:8080"), "fairsched serve's URL (env FAIRSCHED_SERVER)")
		tokenFile    = fs.String("token-file", "", "a file holding the bearer token for fairsched serve (env FAIRSCHED_TOKEN holds the token itself)")
		kubeconfig   = fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (empty: the in-cluster service account)")
		name         = fs.String("scheduler-name", "fairsched", "the spec.schedulerName of the pods to schedule")
		period       = fs.Duration("heartbeat-period", time.Second, "how often every node's heartbeat is sent")
		debounce     = fs.Duration("debounce", 50*time.Millisecond, "how long after a pod or node event the heartbeats are sent sooner")
		barePods     = fs.String("bare-pods", "namespace", "a bare pod's operation: namespace (one for the bare pods of a namespace and pool label) or pod (its own)")
		nodeLabels   = fs.String("node-label-tags", "", "comma-separated node label keys whose key=value become node tags")
		gangTimeout  = fs.Duration("gang-timeout", time.Minute, "how long a gang's grants are held before all are refused")
		roomTimeout  = fs.Duration("room-timeout", 2*time.Minute, "how long a start waits for room on its node (its pods being preempted to go) before it is refused")
		statusPeriod = fs.Duration("status-period", 5*time.Second, "how often Pool statuses are written")
		workers      = fs.Int("workers", 32, "a round's evictions, deletions and operation writes in flight at once")
		bindWorkers  = fs.Int("bind-workers", 512, "binds in flight at once")
		elect        = fs.Bool("leader-elect", true, "elect one active replica with a coordination.k8s.io Lease")
		leaseNS      = fs.String("leader-elect-namespace", envOr("POD_NAMESPACE", "fairsched"), "the Lease's namespace")
		leaseName    = fs.String("leader-elect-name", "fairsched-kube", "the Lease's name")
		identity     = fs.String("identity", "", "this replica's name in the Lease (default: the host name and pid)")
		qps          = fs.Float64("kube-api-qps", 200, "requests per second to the API server")
		burst        = fs.Int("kube-api-burst", 400, "burst of requests to the API server")
		pprofAddr    = fs.String("pprof-listen", "", "serve Go's profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (empty: off)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cannot take argument %q: fairsched-kube takes flags only", fs.Arg(0))
	}
	bare, err := podspec.ParseBarePods(*barePods)
	if err != nil {
		return fmt.Errorf("--bare-pods: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *pprofAddr != "" {
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("cannot serve --pprof-listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.Info("fairsched-kube: profiles on /debug/pprof/", "addr", ln.Addr().String())
	}

	var cfg *rest.Config
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("cannot configure the Kubernetes client: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	cfg.UserAgent = "fairsched-kube"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := []client.Option{client.WithUserAgent("fairsched-kube")}
	token := os.Getenv("FAIRSCHED_TOKEN")
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("cannot read --token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	api, err := client.New(*server, opts...)
	if err != nil {
		return fmt.Errorf("cannot use --server %q: %w", *server, err)
	}
	var labels []string
	for l := range strings.SplitSeq(*nodeLabels, ",") {
		if l = strings.TrimSpace(l); l != "" {
			labels = append(labels, l)
		}
	}
	acfg := adapter.Config{SchedulerName: *name, BarePods: bare, Period: *period, Debounce: *debounce, NodeLabels: labels,
		GangTimeout: *gangTimeout, RoomTimeout: *roomTimeout, StatusPeriod: *statusPeriod, Workers: *workers,
		BindWorkers: *bindWorkers, Logger: log}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runAdapter := func(ctx context.Context) {
		if err := adapter.New(acfg, kube, dyn, api).Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("fairsched-kube stopped", "err", err)
		}
	}
	if !*elect {
		runAdapter(ctx)
		return nil
	}
	id := *identity
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: *leaseNS, Name: *leaseName},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	lost := make(chan struct{})
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            *leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("fairsched-kube: leading", "identity", id)
				runAdapter(ctx)
			},
			OnStoppedLeading: func() {
				log.Info("fairsched-kube: no longer leading", "identity", id)
				close(lost)
			},
		},
	})
	select {
	case <-lost:
		if ctx.Err() == nil {
			// A replica that lost the Lease exits: its caches and its
			// writes in flight belong to a leader no longer.
			return errors.New("lost the leader lease")
		}
	default:
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
