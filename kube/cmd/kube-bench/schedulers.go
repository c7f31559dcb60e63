package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/kubetest"
)

// kubeScheduler is kube-scheduler with a profile of its own.
type kubeScheduler struct{ s *kubetest.Scheduler }

func startKubeScheduler(ctx context.Context, c *kubetest.Cluster) (*kubeScheduler, error) {
	s, err := c.StartScheduler(ctx, kubeSchedulerName)
	if err != nil {
		return nil, err
	}
	return &kubeScheduler{s}, nil
}

func (k *kubeScheduler) gap(context.Context, *config) (*Gap, error) { return nil, nil }
func (k *kubeScheduler) stop()                                      { k.s.Stop() }

// fairsched is fairsched serve (in memory) and fairsched-kube with the
// least-privilege user of deploy/kubernetes's RBAC, the pools as Pool
// objects of the CRD in deploy/kubernetes/crd-pools.yaml.
type fairsched struct {
	serve, adapter *kubetest.Process
	api            *client.Client
}

// The spec.schedulerName of each side's pods.
const (
	fairschedName     = "fairsched"
	kubeSchedulerName = "bench-kube-scheduler"
)

// schedulerName is the spec.schedulerName of the pods of side which.
func schedulerName(which string) string {
	if which == "kube-scheduler" {
		return kubeSchedulerName
	}
	return fairschedName
}

func startFairsched(ctx context.Context, c *kubetest.Cluster, cfg *config) (*fairsched, error) {
	for _, bin := range []string{cfg.fairschedBin, cfg.adapterBin} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("cannot run fairsched: %v (make kube-bench builds bin/fairsched and bin/fairsched-kube)", err)
		}
	}
	root, err := kubetest.RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := c.ApplyAdapterRBAC(ctx); err != nil {
		return nil, err
	}
	var pools strings.Builder
	for i := range cfg.pools {
		fmt.Fprintf(&pools, "---\napiVersion: fairsched.io/v1alpha1\nkind: Pool\nmetadata:\n  name: pool-%d\nspec:\n  weight: %d\n", i, i+1)
	}
	poolsFile := filepath.Join(c.Dir, "bench-pools.yaml")
	if err := os.WriteFile(poolsFile, []byte(pools.String()), 0o644); err != nil {
		return nil, err
	}
	if err := c.Apply(ctx, filepath.Join(root, "deploy", "kubernetes", "crd-pools.yaml"), poolsFile); err != nil {
		return nil, err
	}
	// the limits on operations well above the workload's (with
	// --adapter-arg=--bare-pods=pod each bare pod is an operation), and
	// --starvation-tolerance; the rest is the server's defaults
	serveConfig := filepath.Join(c.Dir, "bench-serve.json")
	lim := 10 * cfg.pods
	tolerance := ""
	if cfg.tolerance > 0 {
		tolerance = fmt.Sprintf(`, "fair_share_starvation_tolerance": %v`, cfg.tolerance)
	}
	conf := fmt.Sprintf(`{"config": {"max_operation_count": %d, "max_running_operation_count": %d, `+
		`"max_operation_count_per_pool": %d, "max_running_operation_count_per_pool": %d%s}, "pools": []}`,
		lim, lim, lim, lim, tolerance)
	if err := os.WriteFile(serveConfig, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	f := &fairsched{}
	var url string
	f.serve, err = c.Run("fairsched-serve", cfg.fairschedBin, []string{"serve", "--listen", "127.0.0.1:0", "--config", serveConfig}, func(line string) bool {
		if rest, ok := strings.CutPrefix(line, "fairsched serve: listening on "); ok {
			url, _, _ = strings.Cut(rest, " ")
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	if f.api, err = client.New(url); err != nil {
		f.stop()
		return nil, err
	}
	args := []string{
		"--server", url,
		"--kubeconfig", c.AdapterKubeconfig,
		"--scheduler-name", fairschedName,
		"--leader-elect=false",
		// the same client rate limits as kube-scheduler's clientConnection
		"--kube-api-qps=" + strconv.FormatFloat(cfg.qps, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(cfg.burst),
	}
	args = append(args, cfg.adapterArgs...)
	if f.adapter, err = c.Run("fairsched-kube", cfg.adapterBin, args, nil); err != nil {
		f.stop()
		return nil, err
	}
	// ready: the adapter has mirrored every Pool to the server
	err = kubetest.Poll(ctx, 2*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if done, _ := f.adapter.Exited(); done {
			return false, fmt.Errorf("fairsched-kube exited; the end of %s:\n%s", f.adapter.LogPath(), f.adapter.Tail(30))
		}
		orchids, err := f.api.PoolOrchids(ctx)
		if err != nil {
			return false, kubetest.Retry(err)
		}
		have := map[string]bool{}
		for _, o := range orchids {
			have[o.Name] = true
		}
		for i := range cfg.pools {
			if !have[fmt.Sprintf("pool-%d", i)] {
				return false, kubetest.Retry(fmt.Errorf("pool-%d is not on the server yet", i))
			}
		}
		return true, nil
	})
	if err != nil {
		f.stop()
		return nil, fmt.Errorf("fairsched-kube did not mirror the pools: %w", err)
	}
	log.Printf("fairsched: serve on %s, fairsched-kube (pid %d) mirrored %d pools", url, f.adapter.Pid(), cfg.pools)
	return f, nil
}

func (f *fairsched) stop() {
	if f.adapter != nil {
		f.adapter.Stop(5 * time.Second)
	}
	if f.serve != nil {
		f.serve.Stop(5 * time.Second)
	}
}

// gap waits (up to cfg.settle) until two reads of the pools' shares a
// second apart agree (under --contended, all of cfg.settle: a full cluster
// converges through preemptions, which wait for the starvation timeouts,
// and may look still before), then measures each pool's gap between its usage
// share and its fair share in its dominant resource.
func (f *fairsched) gap(ctx context.Context, cfg *config) (*Gap, error) {
	var prev, cur map[string][2]float64
	deadline := time.Now().Add(cfg.settle)
	for {
		orchids, err := f.api.PoolOrchids(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot read the pools' orchid: %w", err)
		}
		cur = map[string][2]float64{}
		for _, o := range orchids {
			if !strings.HasPrefix(o.Name, "pool-") {
				continue
			}
			cur[o.Name] = [2]float64{share(o.UsageShare, o.DominantResource), share(o.FairShare, o.DominantResource)}
		}
		if (!cfg.contended && stable(prev, cur)) || time.Now().After(deadline) {
			break
		}
		prev = cur
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	g := &Gap{Pools: map[string]PoolShare{}}
	for name, uf := range cur {
		usage, fair := uf[0], uf[1]
		abs := math.Abs(usage - fair)
		rel := 0.0
		if fair > 0 {
			rel = abs / fair
		}
		g.Pools[name] = PoolShare{Usage: usage, Fair: fair}
		g.MaxAbs = max(g.MaxAbs, abs)
		g.MaxRel = max(g.MaxRel, rel)
	}
	return g, nil
}

func stable(a, b map[string][2]float64) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for k, v := range b {
		w, ok := a[k]
		if !ok || math.Abs(v[0]-w[0]) > 1e-4 || math.Abs(v[1]-w[1]) > 1e-4 {
			return false
		}
	}
	return true
}

func share(s client.Share, dominant string) float64 {
	switch dominant {
	case "cpu":
		return s.CPU
	case "memory":
		return s.Memory
	case "gpu":
		return s.GPU
	case "network":
		return s.Network
	default:
		return s.UserSlots
	}
}
