package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/facade/wire"
	"github.com/fairsched/fairsched/internal/cpufeat"
)

const serveUsage = `usage: fairsched serve [--listen ADDR] [--config FILE] [--pprof=BOOL] [--max-body-size BYTES]
                       [--finished-operation-retention DURATION]
                       [--mutex-profile-fraction N] [--block-profile-rate NS]

Serves the HTTP/JSON API of docs/api.md (pools, config, operations, node
heartbeats, orchid, solve, /metrics, /debug/pprof/, /healthz) until SIGINT or
SIGTERM, then shuts down gracefully. The fair-share update runs on the wall
clock every fair_share_update_period_s (0.2 s by default).

  --listen ADDR         address to listen on (default 127.0.0.1:8080)
  --config FILE         tree config and initial pools as JSON:
                        {"config": {...}, "pools": [{"name": ..., "parent": ..., ...}]}
                        (default: the embedded examples/serve.json)
  --pprof=BOOL          serve /debug/pprof/ to loopback clients (default true)
  --max-body-size BYTES request body limit (default 4194304)
  --finished-operation-retention DURATION
                        how long a finished operation stays visible to GET
                        /api/v1/operations before it is forgotten (default 10m;
                        it goes within another half of it, at most 10 s later)
  --mutex-profile-fraction N
                        sample one mutex contention event in N for
                        /debug/pprof/mutex (default 0: off; needs --pprof)
  --block-profile-rate NS
                        sample one blocking event per NS nanoseconds blocked
                        for /debug/pprof/block (default 0: off; needs --pprof)

A configuration that is not valid is reported as
  fairsched serve: <json path>: <message>
with exit status 2.
`

// runServe is the serve subcommand: it serves until SIGINT or SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stdout, stderr, nil)
}

// serve runs the server until ctx ends; ready, when set, is called with the
// listening address once the server accepts connections (tests).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(addr string)) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), serveUsage) }
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	configFile := fs.String("config", "", "tree config and initial pools (JSON)")
	pprof := fs.Bool("pprof", true, "serve /debug/pprof/ to loopback clients")
	maxBody := fs.Int("max-body-size", facade.DefaultMaxBodySize, "request body limit in bytes")
	retention := fs.Duration("finished-operation-retention", 10*time.Minute, "how long finished operations stay visible")
	mutexFraction := fs.Int("mutex-profile-fraction", 0, "mutex profile sampling (0: off)")
	blockRate := fs.Int("block-profile-rate", 0, "block profile sampling in ns (0: off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fairsched serve: cannot use argument %q: want flags only\n", fs.Arg(0))
		return 2
	}
	if *maxBody < 1024 {
		fmt.Fprintf(stderr, "fairsched serve: cannot use --max-body-size %d: want at least 1024 bytes\n", *maxBody)
		return 2
	}
	if *retention <= 0 {
		fmt.Fprintf(stderr, "fairsched serve: cannot use --finished-operation-retention %v: want a positive duration\n", *retention)
		return 2
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"mutex-profile-fraction", *mutexFraction}, {"block-profile-rate", *blockRate}} {
		switch {
		case f.v < 0:
			fmt.Fprintf(stderr, "fairsched serve: cannot use --%s %d: want 0 (off) or more\n", f.name, f.v)
			return 2
		case f.v > 0 && !*pprof:
			fmt.Fprintf(stderr, "fairsched serve: cannot use --%s %d with --pprof=false: nothing would serve the profile\n", f.name, f.v)
			return 2
		}
	}
	data, source := examples.ServeConfig, "embedded examples/serve.json"
	if *configFile != "" {
		var err error
		if data, err = os.ReadFile(*configFile); err != nil {
			fmt.Fprintf(stderr, "fairsched serve: cannot read the config: %v\n", err)
			return 1
		}
		source = *configFile
	}
	cfg, err := wire.DecodeServeConfig(data)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %s: %v\n", source, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := facade.New(facade.Options{Config: cfg, Pprof: *pprof, MaxBodySize: *maxBody, Logger: log,
		FinishedOperationRetention: *retention})
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %s: %v\n", source, err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: cannot listen on %s: %v\n", *listen, err)
		return 1
	}
	addr := ln.Addr().String()
	if *mutexFraction > 0 || *blockRate > 0 {
		runtime.SetMutexProfileFraction(*mutexFraction)
		runtime.SetBlockProfileRate(*blockRate)
	}
	log.Info("fairsched serve", "listen", "http://"+addr, "config", source,
		"pools", len(cfg.Pools), "fair_share_update_period_s", cfg.Scheduler.FairShareUpdatePeriod, "pprof", *pprof,
		"finished_operation_retention", *retention)
	log.Info("cpu", "features", cpufeat.Get().String())
	fmt.Fprintf(stdout, "fairsched serve: listening on http://%s (Ctrl-C stops it). Try:\n"+
		"  curl -s -X POST http://%s/api/v1/nodes/node-1/heartbeat -d '{\"resource_limits\": {\"user_slots\": 32, \"cpu\": 32, \"memory\": 137438953472}}'\n"+
		"  curl -s -X POST http://%s/api/v1/operations -d '{\"pool\": \"research\", \"tasks\": [{\"name\": \"train\", \"job_count\": 4, \"resources\": {\"cpu\": 2, \"memory\": 4294967296}}]}'\n"+
		"  curl -s http://%s/api/v1/orchid/pools/research\n", addr, addr, addr, addr)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(addr)
	}
	select {
	case err := <-errc:
		if err != nil {
			fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for requests in flight (at most 10 s)")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "fairsched serve: cannot shut down gracefully: %v\n", err)
		return 1
	}
	if err := <-errc; err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
