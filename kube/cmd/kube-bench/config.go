package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fairsched/fairsched/kube/internal/kubetest"
)

type config struct {
	scheduler      string
	nodes          int
	pods           int
	pools          int
	jobShare       float64
	jobParallelism int
	nodeCPU        string
	nodeMemory     string
	podCPU         string
	podMemory      string
	creators       int
	createRate     float64
	runs           int
	contended      bool
	backlog        bool
	tolerance      float64
	qps            float64
	burst          int
	timeout        time.Duration
	settle         time.Duration
	fairschedBin   string
	adapterBin     string
	adapterArgs    multiFlag
	report         string
	dir            string
	bins           string
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("kube-bench", flag.ContinueOnError)
	fs.StringVar(&cfg.scheduler, "scheduler", "both", "which scheduler binds the pods: kube-scheduler, fairsched or both (one after the other, each with fresh pods)")
	fs.IntVar(&cfg.nodes, "nodes", 1000, "KWOK nodes")
	fs.IntVar(&cfg.pods, "pods", 10000, "pods per scheduler")
	fs.IntVar(&cfg.pools, "pools", 10, "pools the pods are spread over evenly (pool-i has weight i+1)")
	fs.Float64Var(&cfg.jobShare, "job-share", 0.5, "the share of each pool's pods that Jobs create (the rest are bare pods)")
	fs.IntVar(&cfg.jobParallelism, "job-parallelism", 100, "each Job's parallelism and completions")
	fs.StringVar(&cfg.nodeCPU, "node-cpu", "32", "each node's allocatable cpu")
	fs.StringVar(&cfg.nodeMemory, "node-memory", "128Gi", "each node's allocatable memory")
	fs.StringVar(&cfg.podCPU, "pod-cpu", "1", "each pod's cpu request")
	fs.StringVar(&cfg.podMemory, "pod-memory", "1Gi", "each pod's memory request")
	fs.IntVar(&cfg.creators, "creators", 32, "create requests in flight")
	fs.Float64Var(&cfg.createRate, "create-rate", 0, "pods created per second, a Job's all at once (0: as fast as the creators go); pending→bound then measures the scheduler at a steady arrival rate rather than the API server's queue under a flood of creates")
	fs.BoolVar(&cfg.contended, "contended", false, "more pods than the nodes hold: a run ends once the cluster is full (its pods bound up to the nodes' capacity) rather than once every pod is bound, so that fairsched's fair-share gap measures fairness under contention")
	fs.BoolVar(&cfg.backlog, "backlog", false, "create every pod (and wait for the Jobs' pods to appear) before the scheduler starts, and time from its start: the rate at which it binds a backlog, apart from how fast pods are created; a pod's pending→bound time then runs from the scheduler's start")
	fs.Float64Var(&cfg.tolerance, "starvation-tolerance", 0, "fairsched: the server's fair_share_starvation_tolerance (0: its default, 0.8): a pool starves, and preempts, only below this share of its fair share, so it bounds how near --contended runs converge")
	fs.IntVar(&cfg.runs, "runs", 3, "runs of each scheduler, alternated (the order flips every run); the summary gives medians and ranges")
	fs.Float64Var(&cfg.qps, "client-qps", 5000, "the client-side rate limit towards the API server of both schedulers (kube-scheduler's clientConnection.qps, fairsched-kube's --kube-api-qps)")
	fs.IntVar(&cfg.burst, "client-burst", 10000, "the burst of both schedulers' clients (clientConnection.burst, --kube-api-burst)")
	fs.DurationVar(&cfg.timeout, "timeout", 20*time.Minute, "the most one scheduler's run may take")
	fs.DurationVar(&cfg.settle, "settle", 30*time.Second, "fairsched: how long to wait, once every pod is bound, for the pools' shares to stop moving")
	fs.StringVar(&cfg.fairschedBin, "fairsched-bin", "", "fairsched (default bin/fairsched of the checkout)")
	fs.StringVar(&cfg.adapterBin, "fairsched-kube-bin", "", "fairsched-kube (default bin/fairsched-kube of the checkout)")
	fs.Var(&cfg.adapterArgs, "adapter-arg", "an extra flag for fairsched-kube (repeatable)")
	fs.StringVar(&cfg.report, "report", "", "write the results as JSON to this file")
	fs.StringVar(&cfg.dir, "dir", "", "keep the cluster's data and logs in this directory (default a temporary one, removed)")
	fs.StringVar(&cfg.bins, "bins", "", "the Kubernetes binaries' directory (default $KUBE_BINS, else ~/.cache/fairsched/kube-bins/<version>/bin)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch cfg.scheduler {
	case "kube-scheduler", "fairsched", "both":
	default:
		return nil, fmt.Errorf("--scheduler: %q is not kube-scheduler, fairsched or both", cfg.scheduler)
	}
	var errs []error
	if cfg.nodes < 1 {
		errs = append(errs, fmt.Errorf("--nodes: %d is not positive", cfg.nodes))
	}
	if cfg.pools < 1 {
		errs = append(errs, fmt.Errorf("--pools: %d is not positive", cfg.pools))
	}
	if cfg.pods < cfg.pools {
		errs = append(errs, fmt.Errorf("--pods: %d is fewer than the %d pools", cfg.pods, cfg.pools))
	}
	if cfg.jobShare < 0 || cfg.jobShare > 1 {
		errs = append(errs, fmt.Errorf("--job-share: %v is not in [0, 1]", cfg.jobShare))
	}
	if cfg.jobParallelism < 1 {
		errs = append(errs, fmt.Errorf("--job-parallelism: %d is not positive", cfg.jobParallelism))
	}
	if cfg.runs < 1 {
		errs = append(errs, fmt.Errorf("--runs: %d is not positive", cfg.runs))
	}
	if !(cfg.qps > 0) || cfg.burst < 1 {
		errs = append(errs, fmt.Errorf("--client-qps, --client-burst: %v and %d are not both positive", cfg.qps, cfg.burst))
	}
	if cfg.tolerance != 0 && !(cfg.tolerance > 0 && cfg.tolerance <= 1) {
		errs = append(errs, fmt.Errorf("--starvation-tolerance: %v is not in (0, 1]", cfg.tolerance))
	}
	if cfg.createRate < 0 {
		errs = append(errs, fmt.Errorf("--create-rate: %v is negative", cfg.createRate))
	}
	if cfg.creators < 1 {
		errs = append(errs, fmt.Errorf("--creators: %d is not positive", cfg.creators))
	}
	for name, q := range map[string]string{"--node-cpu": cfg.nodeCPU, "--node-memory": cfg.nodeMemory, "--pod-cpu": cfg.podCPU, "--pod-memory": cfg.podMemory} {
		if _, err := resource.ParseQuantity(q); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a quantity: %v", name, q, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.contended && cfg.capacity() >= cfg.pods {
		return nil, fmt.Errorf("--contended: %d pods fit on the nodes (they hold %d): want more pods than that", cfg.pods, cfg.capacity())
	}
	if cfg.scheduler != "kube-scheduler" {
		root, err := kubetest.RepoRoot()
		if err != nil && (cfg.fairschedBin == "" || cfg.adapterBin == "") {
			return nil, err
		}
		if cfg.fairschedBin == "" {
			cfg.fairschedBin = filepath.Join(root, "bin", "fairsched")
		}
		if cfg.adapterBin == "" {
			cfg.adapterBin = filepath.Join(root, "bin", "fairsched-kube")
		}
	}
	return cfg, nil
}

// capacity is how many pods the nodes hold: each node as many as fit in
// its cpu and in its memory (the quantities are valid: parseFlags checked).
func (cfg *config) capacity() int {
	q := func(s string) int64 { v := resource.MustParse(s); return v.MilliValue() }
	perNode := min(q(cfg.nodeCPU)/max(1, q(cfg.podCPU)), q(cfg.nodeMemory)/max(1, q(cfg.podMemory)))
	return int(perNode) * cfg.nodes
}

// bindTarget is how many bound pods end a run: every pod, or under
// --contended as many as the nodes hold.
func (cfg *config) bindTarget() int {
	if cfg.contended {
		return min(cfg.pods, cfg.capacity())
	}
	return cfg.pods
}

// schedulers are the sides of run r (from 0): both alternate, each run
// in the other order, so that neither always runs on a warmer API server.
func (cfg *config) schedulers(r int) []string {
	if cfg.scheduler == "both" {
		if r%2 == 1 {
			return []string{"fairsched", "kube-scheduler"}
		}
		return []string{"kube-scheduler", "fairsched"}
	}
	return []string{cfg.scheduler}
}

func (cfg *config) nodeSpec() kubetest.NodeSpec {
	return kubetest.NodeSpec{Allocatable: kubetest.Resources("cpu", cfg.nodeCPU, "memory", cfg.nodeMemory, "pods", "110")}
}

func (cfg *config) describe() map[string]any {
	return map[string]any{
		"nodes": cfg.nodes, "pods": cfg.pods, "pools": cfg.pools, "job_share": cfg.jobShare,
		"job_parallelism": cfg.jobParallelism, "node_cpu": cfg.nodeCPU, "node_memory": cfg.nodeMemory,
		"pod_cpu": cfg.podCPU, "pod_memory": cfg.podMemory, "creators": cfg.creators, "create_rate": cfg.createRate,
		"starvation_tolerance": cfg.tolerance,
		"runs":                 cfg.runs, "backlog": cfg.backlog, "contended": cfg.contended, "client_qps": cfg.qps, "client_burst": cfg.burst,
		"adapter_args": []string(cfg.adapterArgs),
	}
}
