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
	"strings"
	"syscall"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/internal/cpufeat"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

const serveUsage = `usage: fairsched serve [--listen ADDR] [--config FILE] [--pprof=BOOL] [--max-body-size BYTES]
                       [--finished-operation-retention DURATION] [--data-dir DIR]
                       [--history-tiers STEP/SPAN,...]
                       [--etcd ENDPOINTS --etcd-prefix PREFIX --advertise-url URL [--etcd-lease-ttl DURATION]]
                       [--auth-tokens FILE] [--insecure] [--tls-cert FILE --tls-key FILE]
                       [--allowed-origins LIST] [--allowed-hosts LIST]
                       [--log-format text|json] [--log-level LEVEL]
                       [--mutex-profile-fraction N] [--block-profile-rate NS]

Serves the HTTP/JSON API of docs/api.md (pools, config, operations, node
heartbeats, orchid, solve, /metrics, /debug/pprof/, /healthz) until SIGINT or
SIGTERM, then shuts down gracefully. The fair-share update runs on the wall
clock every fair_share_update_period_s (0.2 s by default).

  --listen ADDR         address to listen on (default 127.0.0.1:8080); an
                        address other than loopback needs --auth-tokens (or
                        --insecure)
  --config FILE         tree config and initial pools as JSON:
                        {"config": {...}, "pools": [{"name": ..., "parent": ..., ...}]}
                        (default: the embedded examples/serve.json)
  --pprof=BOOL          serve /debug/pprof/: to admins with --auth-tokens, to
                        loopback clients without (default true)
  --max-body-size BYTES request body limit (default 4194304)
  --finished-operation-retention DURATION
                        how long a finished operation stays visible to GET
                        /api/v1/operations before it is forgotten (default 10m;
                        it goes within another half of it, at most 10 s later)
  --data-dir DIR         keep the tree config, the pools and the operations in
                        DIR/fairsched.db (bbolt), durable before each answer;
                        a restart starts from it (the --config file then only
                        seeds a new directory). Without it, the state is in
                        memory only.
  --history-tiers STEP/SPAN,...
                        the resolutions of each pool's history (GET
                        /api/v1/pools/{name}/history, the dashboard's charts):
                        a step kept for a span, finer first (default
                        10s/1h,5m/24h: about 5 KiB a pool, 48 MiB at 10,000
                        pools); at most 4, each with a longer step and span
                        than the one before
  --etcd ENDPOINTS      run as one of several replicas that keep the state in
                        etcd (host:port[,host:port…]): the one elected leader
                        serves the API, the others answer 503 not_leader naming
                        it (docs/operations.md, "Replicas on etcd"); not with
                        --data-dir
  --etcd-prefix PREFIX  the cluster's key prefix in etcd (/fairsched/NAME); every
                        replica of a cluster uses the same
  --advertise-url URL   the URL clients reach this replica at
                        (http://10.0.0.5:8080): followers send clients there
                        while it leads
  --etcd-lease-ttl DURATION
                        the election lease (whole seconds, default 5s): a
                        leader that dies is replaced after about this long
  --auth-tokens FILE    the users, their bearer tokens and roles (admin, user,
                        node) as JSON: {"users": [{"name": "alice", "token": "...",
                        "groups": ["ml"], "roles": ["user"]}, ...]}; every request
                        but /healthz and /readyz must then carry one
                        (docs/operations.md, "Access control")
  --insecure            serve a non-loopback --listen without --auth-tokens:
                        anyone who reaches the port may do everything (a
                        warning is logged at every start)
  --tls-cert FILE, --tls-key FILE
                        serve HTTPS with this PEM certificate (chain) and key
  --allowed-origins LIST
                        comma-separated origins (https://dash.example.com) of
                        web pages that may call the API; others are 403
  --allowed-hosts LIST  comma-separated Host names the server answers besides
                        its addresses, localhost and the --listen host
                        ("*.example.com" for subdomains); others are 421
  --log-format text|json
                        the log's format: slog's key=value text (default) or
                        one JSON object per line
  --log-level LEVEL     the least level logged: debug, info (default), warn,
                        error
  --mutex-profile-fraction N
                        sample one mutex contention event in N for
                        /debug/pprof/mutex (default 0: off; needs --pprof)
  --block-profile-rate NS
                        sample one blocking event per NS nanoseconds blocked
                        for /debug/pprof/block (default 0: off; needs --pprof)

SIGHUP reloads the --config file: pools it adds are created, pools whose
attributes or parent changed are changed, pools it leaves out are removed when
they hold no operations (and kept, with a warning, otherwise), and the tree
config takes its keys (node_shards only at start-up). It also reloads the
--auth-tokens file and the TLS certificate and key. A file that is not valid
changes nothing and the log says why.

A configuration that is not valid is reported as
  fairsched serve: <json path>: <message>
with exit status 2.
`

// runServe is the serve subcommand: it serves until SIGINT or SIGTERM and
// reloads --config on SIGHUP.
func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer func() { signal.Stop(hup); close(hup) }()
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default: // a reload is pending already
			}
		}
	}()
	return serve(ctx, args, stdout, stderr, serveHooks{reload: reload})
}

// serveHooks connect serve to its signals (and tests to serve).
type serveHooks struct {
	// ready, when set, is called with the listening address once the
	// server accepts connections.
	ready func(addr string)
	// reload: each receive reloads the --config file.
	reload <-chan struct{}
	// reloaded, when set, is called after each reload with its error.
	reloaded func(error)
}

// serveOptions are the flags of fairsched serve.
type serveOptions struct {
	listen, configFile       string
	pprof                    bool
	maxBody                  int
	retention                time.Duration
	mutexFraction, blockRate int
	logFormat, logLevel      string
	dataDir                  string
	authTokens               string
	insecure                 bool
	tlsCert, tlsKey          string
	allowedOrigins           string
	allowedHosts             string
	ha                       haOptions
	historyTiers             string
}

// serveFlags is the flag set of fairsched serve.
func serveFlags(stderr io.Writer) (*flag.FlagSet, *serveOptions) {
	f := &serveOptions{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), serveUsage) }
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&f.configFile, "config", "", "tree config and initial pools (JSON)")
	fs.BoolVar(&f.pprof, "pprof", true, "serve /debug/pprof/ to loopback clients")
	fs.IntVar(&f.maxBody, "max-body-size", facade.DefaultMaxBodySize, "request body limit in bytes")
	fs.DurationVar(&f.retention, "finished-operation-retention", 10*time.Minute, "how long finished operations stay visible")
	fs.IntVar(&f.mutexFraction, "mutex-profile-fraction", 0, "mutex profile sampling (0: off)")
	fs.IntVar(&f.blockRate, "block-profile-rate", 0, "block profile sampling in ns (0: off)")
	fs.StringVar(&f.dataDir, "data-dir", "", "keep the state durable in this directory (empty: in memory)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "least level logged: debug, info, warn or error")
	fs.StringVar(&f.authTokens, "auth-tokens", "", "users, bearer tokens and roles (JSON)")
	fs.BoolVar(&f.insecure, "insecure", false, "serve a non-loopback address without tokens")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "TLS key (PEM)")
	fs.StringVar(&f.allowedOrigins, "allowed-origins", "", "origins of web pages that may call the API (comma-separated)")
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", "Host names the server answers (comma-separated)")
	fs.StringVar(&f.historyTiers, "history-tiers", "10s/1h,5m/24h", "the pools' history: STEP/SPAN of each tier, finer first")
	fs.StringVar(&f.ha.etcd, "etcd", "", "etcd endpoints of the replicas (comma-separated host:port)")
	fs.StringVar(&f.ha.prefix, "etcd-prefix", "", "the cluster's key prefix in etcd")
	fs.StringVar(&f.ha.advertise, "advertise-url", "", "the URL clients reach this replica at")
	fs.DurationVar(&f.ha.leaseTTL, "etcd-lease-ttl", defaultLeaseTTL, "the election lease's TTL (whole seconds)")
	return fs, f
}

// serve runs the server until ctx ends.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, hooks serveHooks) int {
	fs, f := serveFlags(stderr)
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
	if f.maxBody < 1024 {
		fmt.Fprintf(stderr, "fairsched serve: cannot use --max-body-size %d: want at least 1024 bytes\n", f.maxBody)
		return 2
	}
	if f.retention <= 0 {
		fmt.Fprintf(stderr, "fairsched serve: cannot use --finished-operation-retention %v: want a positive duration\n", f.retention)
		return 2
	}
	for _, pf := range []struct {
		name string
		v    int
	}{{"mutex-profile-fraction", f.mutexFraction}, {"block-profile-rate", f.blockRate}} {
		switch {
		case pf.v < 0:
			fmt.Fprintf(stderr, "fairsched serve: cannot use --%s %d: want 0 (off) or more\n", pf.name, pf.v)
			return 2
		case pf.v > 0 && !f.pprof:
			fmt.Fprintf(stderr, "fairsched serve: cannot use --%s %d with --pprof=false: nothing would serve the profile\n", pf.name, pf.v)
			return 2
		}
	}
	tiers, err := parseHistoryTiers(f.historyTiers)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: cannot use --history-tiers %q: %v\n", f.historyTiers, err)
		return 2
	}
	eps, err := checkHA(f)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
		return 2
	}
	data, source := examples.ServeConfig, "embedded examples/serve.json"
	if f.configFile != "" {
		if data, err = os.ReadFile(f.configFile); err != nil {
			fmt.Fprintf(stderr, "fairsched serve: cannot read the config: %v\n", err)
			return 1
		}
		source = f.configFile
	}
	cfg, err := wire.DecodeServeConfig(data)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %s: %v\n", source, err)
		return 2
	}
	log, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
		return 2
	}
	sec, code := securityOptions(f, stderr)
	if code != 0 {
		return code
	}
	opts := facade.Options{Config: cfg, Pprof: f.pprof, MaxBodySize: f.maxBody, Logger: log,
		FinishedOperationRetention: f.retention, Tokens: sec.tokens, TLS: sec.tls,
		AllowedOrigins: sec.origins, AllowedHosts: sec.hosts, ListenHost: sec.listenHost, HistoryTiers: tiers}
	if eps != nil {
		return serveReplica(ctx, f, eps, opts, sec, log, source, stdout, stderr, hooks)
	}
	storeFailed := make(chan error, 1)
	if f.dataDir != "" {
		st, err := store.OpenBolt(f.dataDir)
		if err != nil {
			fmt.Fprintf(stderr, "fairsched serve: --data-dir %s: %v\n", f.dataDir, err)
			if errors.Is(err, store.ErrLocked) || errors.Is(err, store.ErrNewerSchema) {
				return 2
			}
			return 1
		}
		defer st.Close()
		opts.Store = st
		opts.OnStoreFailure = func(err error) { storeFailed <- err }
	}
	srv, err := facade.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %s: %v\n", source, err)
		return 2
	}
	if f.dataDir == "" {
		log.Warn("the state is kept in memory only: pools, config changes and operations are lost at a restart (--data-dir keeps them)")
	} else {
		log.Info("the state is durable", "data_dir", f.dataDir, "store", "bbolt")
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: cannot listen on %s: %v\n", f.listen, err)
		return 1
	}
	addr := ln.Addr().String()
	scheme := "http"
	if sec.tls != nil {
		scheme = "https"
	}
	if sec.tokens == nil && !sec.loopback {
		log.Warn("serving without --auth-tokens on an address that is not loopback (--insecure): anyone who can reach it can change pools and the config, start and abort operations and send heartbeats",
			"listen", addr)
	}
	if f.mutexFraction > 0 || f.blockRate > 0 {
		runtime.SetMutexProfileFraction(f.mutexFraction)
		runtime.SetBlockProfileRate(f.blockRate)
	}
	users := 0
	if sec.tokens != nil {
		users = sec.tokens.Users()
	}
	log.Info("fairsched serve", "listen", scheme+"://"+addr, "config", source,
		"pools", len(cfg.Pools), "fair_share_update_period_s", cfg.Scheduler.FairShareUpdatePeriod, "pprof", f.pprof,
		"finished_operation_retention", f.retention, "auth", authMode(sec.tokens), "users", users, "tls", sec.tls != nil)
	log.Info("cpu", "features", cpufeat.Get().String())
	base, auth := scheme+"://"+addr, ""
	if sec.tokens != nil {
		auth = ` -H "Authorization: Bearer $FAIRSCHED_TOKEN"`
	}
	fmt.Fprintf(stdout, "fairsched serve: listening on %s (Ctrl-C stops it). Try:\n"+
		"  curl -s%s %s/api/v1/nodes/node-1/heartbeat --json '{\"resource_limits\": {\"user_slots\": 32, \"cpu\": 32, \"memory\": 137438953472}}'\n"+
		"  curl -s%s %s/api/v1/operations --json '{\"pool\": \"research\", \"tasks\": [{\"name\": \"train\", \"job_count\": 4, \"resources\": {\"cpu\": 2, \"memory\": 4294967296}}]}'\n"+
		"  curl -s%s %s/api/v1/orchid/pools/research\n", base, auth, base, auth, base, auth, base)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if hooks.ready != nil {
		hooks.ready(addr)
	}
	for done := false; !done; {
		select {
		case err := <-errc:
			if err != nil {
				fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
				return 1
			}
			return 0
		case <-ctx.Done():
			done = true
		case err := <-storeFailed:
			log.Error("stopping: the store failed", "error", err)
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			srv.Shutdown(sctx)
			cancel()
			fmt.Fprintf(stderr, "fairsched serve: the store failed: %v\n", err)
			return 1
		case <-hooks.reload:
			var err error
			if f.configFile != "" || f.authTokens == "" && f.tlsCert == "" {
				err = reloadConfig(srv, f.configFile, log)
			}
			if terr := reloadSecurity(srv.SetTokens, f, sec, log); err == nil {
				err = terr
			}
			if hooks.reloaded != nil {
				hooks.reloaded(err)
			}
		}
	}
	log.Info("shutting down: waiting for requests in flight (at most 10 s)")
	return stopServing(srv.Shutdown, errc, stderr, log)
}

// stopServing shuts a server down within 10 s and waits for its Serve,
// whose error errc delivers; it returns the exit status.
func stopServing(shutdown func(context.Context) error, errc <-chan error, stderr io.Writer, log *slog.Logger) int {
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
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

// reloadConfig applies the --config file to the running server (SIGHUP):
// pools added or changed, left-out pools removed when empty, the tree
// config changed. A file that cannot be read or is not valid changes
// nothing; the log says why.
func reloadConfig(srv *facade.Server, file string, log *slog.Logger) error {
	if file == "" {
		err := errors.New("no --config file to reload: the server runs the embedded examples/serve.json")
		log.Warn("reload refused", "error", err)
		return err
	}
	data, err := os.ReadFile(file)
	var sc *wire.ServeConfig
	if err == nil {
		sc, err = wire.DecodeServeConfig(data)
	}
	var res facade.ReloadResult
	if err == nil {
		res, err = srv.Reload(sc)
	}
	if err != nil {
		log.Error("reload refused: the running config is kept", "file", file, "error", err)
		return err
	}
	log.Info("config reloaded", "file", file, "config_changed", res.ConfigChanged,
		"pools_added", res.Added, "pools_changed", res.Changed, "pools_removed", res.Removed)
	if len(res.Kept) > 0 {
		log.Warn("pools left out of the config file are kept: they have operations", "file", file, "pools", res.Kept)
	}
	return nil
}

// newLogger is the server's logger: slog's text or JSON lines on w from
// level on.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("cannot use --log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("cannot use --log-format %q: want text or json", format)
}

// parseHistoryTiers reads --history-tiers: STEP/SPAN[,STEP/SPAN…] with Go
// durations (10s/1h), checked by history.ValidateTiers.
func parseHistoryTiers(v string) ([]history.Config, error) {
	var tiers []history.Config
	for i, t := range strings.Split(v, ",") {
		step, span, ok := strings.Cut(strings.TrimSpace(t), "/")
		if !ok {
			return nil, fmt.Errorf("tier %d, %q: want STEP/SPAN (10s/1h)", i+1, t)
		}
		a, err1 := time.ParseDuration(step)
		b, err2 := time.ParseDuration(span)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("tier %d, %q: want STEP/SPAN with Go durations (10s/1h)", i+1, t)
		}
		tiers = append(tiers, history.Config{Step: clock.Duration(a.Microseconds()), Span: clock.Duration(b.Microseconds())})
	}
	if err := history.ValidateTiers(tiers); err != nil {
		return nil, err
	}
	return tiers, nil
}
