// Command kube-bench measures how fast a scheduler binds pods on a real
// kube-apiserver (make kube-bench; bench/README.md has the figures): it
// starts the control plane of kube/internal/kubetest, adds KWOK nodes, and
// for each scheduler in turn (kube-scheduler, fairsched-kube with fairsched
// serve) creates a fresh workload of Jobs and bare pods in pools and
// records, from a watch on the pods, when each was first seen pending and
// when bound. It reports the time until every pod was bound, pods bound per
// second, the p50/p99/max pending→bound latency and, for fairsched, the
// largest gap between a pool's running share and its fair share once every
// pod runs.
//
//	kube-bench [--scheduler kube-scheduler|fairsched|both] [--runs 3] [--nodes 1000] [--pods 10000] [--pools 10] ...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fairsched/fairsched/kube/internal/kubetest"
)

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kube-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	// without Jobs no controller is needed: the pods are deleted with no
	// grace period, so nothing waits on a finalizer
	opts := kubetest.Options{Logf: log.Printf, Dir: cfg.dir, Bins: cfg.bins, NoControllerManager: cfg.jobShare == 0,
		QPS: float32(cfg.qps), Burst: cfg.burst}
	c, err := kubetest.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cfg.dir == "" {
			log.Printf("stopping the cluster")
		} else {
			log.Printf("stopping the cluster; its logs stay in %s", cfg.dir)
		}
		c.Close()
	}()
	if _, err := c.AddNodes(ctx, "bench", cfg.nodes, cfg.nodeSpec()); err != nil {
		return err
	}
	report := Report{Config: cfg.describe(), Started: time.Now().UTC()}
	for r := range cfg.runs {
		for _, sched := range cfg.schedulers(r) {
			res, err := runPhase(ctx, c, cfg, sched, r+1)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", sched, r+1, err)
			}
			report.Results = append(report.Results, res)
			fmt.Fprintln(stdout, res.line())
		}
	}
	report.Summary = summarize(report.Results)
	fmt.Fprint(stdout, report.table())
	if cfg.report != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.report), 0o755); err != nil {
			return err
		}
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.report, append(data, '\n'), 0o644); err != nil {
			return err
		}
		log.Printf("report in %s", cfg.report)
	}
	return nil
}
