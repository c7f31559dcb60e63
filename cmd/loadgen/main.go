// Command loadgen is fairsched's load generator (package loadgen): it
// creates a seeded workload of pools and operations through the HTTP API of
// a server on loopback and plays thousands of simulated nodes against it,
// or drives the scheduling core in process with --inprocess.
//
//	loadgen [flags]                          run a load (see the usage)
//	loadgen compare --a GLOB --b GLOB        compare the medians of two sets of reports
//
// With --serve BIN it starts "BIN serve --listen 127.0.0.1:0" itself, runs
// the load against it and stops it (make load, make soak, make profile).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/fairsched/fairsched/loadgen"
)

const usage = `usage: loadgen [flags]
       loadgen compare --a GLOB --b GLOB [--names A,B]

Plays a seeded workload of simulated nodes, pools and operations against a
fairsched server on loopback (--target, or --serve BIN to start one), or
against the scheduling core in process (--inprocess). Defaults are the
standard load of bench/README.md: 10,000 nodes, 200 pools, 2,000 operations,
jobs of 5-120 s, 30 s, as fast as possible.

The target must be loopback: http://127.0.0.1:PORT, http://localhost:PORT or
http://[::1]:PORT. A progress line goes to stderr every second, the summary
to stdout, the JSON report to --report.

Exit status: 0 done, 1 the run could not start, 2 bad usage, 3 --strict and
the run had errors or a growing heap.

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "compare" {
		return runCompare(args[1:], stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runLoad(ctx, args, stdout, stderr)
}

// labels is a repeatable KEY=VALUE flag.
type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labels) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("cannot use label %q: want KEY=VALUE", s)
	}
	l[k] = v
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// distFlag is the --job-duration flag.
type distFlag struct{ d *loadgen.Dist }

func (f distFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}
func (f distFlag) Set(s string) error {
	d, err := loadgen.ParseDist(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// loadRun is one run of the load generator as its flags describe it.
type loadRun struct {
	cfg                                    loadgen.Config
	serveBin, serveLog, report             string
	serveArgs                              stringList
	cpuProfile, mutexProfile, blockProfile string
	strict                                 bool
	maxErrorRate                           float64
}

// runLoad is the load generator's command: parse the flags, start the server
// (--serve), drive the load, report. It returns the exit status.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	lr, code := parseLoadFlags(args, stderr)
	if lr == nil {
		return code
	}
	if lr.serveBin != "" {
		srv, err := startServer(ctx, lr.serveBin, lr.serveArgs, lr.serveLog, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen: %v\n", err)
			return 1
		}
		defer func() {
			if err := srv.stop(); err != nil {
				fmt.Fprintf(stderr, "loadgen: %v\n", err)
			}
		}()
		lr.cfg.Target = "http://" + srv.addr
		if lr.cfg.Labels == nil {
			lr.cfg.Labels = map[string]string{}
		}
		lr.cfg.Labels["server"] = lr.serveBin
		fmt.Fprintf(stderr, "loadgen: started %s serve on %s (pid %d)\n", lr.serveBin, srv.addr, srv.cmd.Process.Pid)
	}
	rep, code := lr.drive(ctx, stderr)
	if rep == nil {
		return code
	}
	return lr.output(rep, stdout, stderr)
}

// parseLoadFlags reads the flags into a loadRun; on nil it returns the exit
// status (0 for -help, 2 for bad flags).
func parseLoadFlags(args []string, stderr io.Writer) (*loadRun, int) {
	lr := &loadRun{cfg: loadgen.Standard()}
	cfg := &lr.cfg
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	target := fs.String("target", "http://127.0.0.1:8080", "base URL of the server (loopback only; https:// for a server with --tls-cert)")
	replicas := fs.String("replicas", "", "comma-separated base URLs of the target's fellow replicas (fairsched serve --etcd; loopback only): heartbeats and calls go to the leader and move on when it cannot be reached")
	fs.StringVar(&cfg.Token, "token", os.Getenv("FAIRSCHED_TOKEN"), "bearer token of an admin for a server with --auth-tokens (default $FAIRSCHED_TOKEN)")
	caFile := fs.String("ca", "", "with an https:// target: trust the certificates signed by this PEM `FILE` (default: the system's roots)")
	skipVerify := fs.Bool("insecure-skip-verify", false, "with an https:// target: do not verify the server's certificate")
	fs.StringVar(&lr.serveBin, "serve", "", "start `BIN` serve --listen 127.0.0.1:0 and run against it (stopped at the end)")
	fs.Var(&lr.serveArgs, "serve-arg", "extra `ARG` for the server started by --serve (repeatable)")
	fs.StringVar(&lr.serveLog, "serve-log", "", "write the started server's output to `FILE` (default: discarded, last lines shown on failure)")
	fs.BoolVar(&cfg.InProcess, "inprocess", false, "drive core/schedule in process (no HTTP): the ceiling")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "simulated nodes")
	fs.IntVar(&cfg.Pools, "pools", cfg.Pools, "pools created under the root")
	fs.IntVar(&cfg.Operations, "operations", cfg.Operations, "operations kept running (replaced as they complete)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of the heartbeat phase")
	fs.Int64Var(&cfg.MaxHeartbeats, "max-heartbeats", 0, "stop after this many heartbeats (0: only --duration)")
	fs.IntVar(&cfg.Connections, "connections", cfg.Connections, "concurrent heartbeats (driver goroutines, HTTP connections)")
	fs.IntVar(&cfg.Pipeline, "pipeline", 0, "carry the concurrent heartbeats over this many pipelined HTTP/1.1 connections (0: off, one connection each)")
	fs.DurationVar(&cfg.PipelineDelay, "pipeline-delay", 200*time.Microsecond, "with --pipeline: how long a connection waits for more requests before it writes them")
	fs.BoolVar(&cfg.OriginsAlways, "origins-always", false, "report every running allocation's operation_id, task_index and resources in every heartbeat (default: in a node's first heartbeat and the first after each failed one, which is when a restarted server needs them)")
	fs.IntVar(&cfg.Batch, "batch", 0, "send the heartbeats of `K` nodes per request (POST /api/v1/heartbeats), as a node agent relaying a rack would; latency is then per batch (0: one heartbeat per request)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "total heartbeats per second to aim at (0: as fast as possible)")
	fs.DurationVar(&cfg.HeartbeatPeriod, "heartbeat-period", 0, "each node's heartbeat period (0: as soon as its turn comes)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "workload seed (PCG)")
	fs.StringVar(&lr.report, "report", "", "write the JSON report to `FILE`")
	fs.Var(distFlag{&cfg.JobDuration}, "job-duration", "job durations in seconds: fixed:D, uniform:LO:HI, exp:MEAN[:MIN:MAX] or lognormal:MEDIAN:SIGMA[:MIN:MAX] (default uniform:5:120)")
	fs.Int64Var(&cfg.MinJobs, "min-jobs", cfg.MinJobs, "fewest jobs in a task (log-uniform up to --max-jobs)")
	fs.Int64Var(&cfg.MaxJobs, "max-jobs", cfg.MaxJobs, "most jobs in a task")
	fs.Float64Var(&cfg.NodeCPU, "node-cpu", cfg.NodeCPU, "cores per node")
	memGiB := fs.Int64("node-memory-gib", cfg.NodeMemory>>30, "memory per node in GiB")
	fs.Int64Var(&cfg.NodeSlots, "node-slots", cfg.NodeSlots, "user slots per node")
	fs.Float64Var(&cfg.PreemptStopFraction, "preempt-stop-fraction", 0, "a preempted allocation stops after a uniform fraction of [0, F] of its timeout (0: at once)")
	fs.DurationVar(&cfg.SampleEvery, "sample-every", 0, "scrape the server's /metrics (heap, RSS, CPU) this often (0: at the start and the end only)")
	profDir := fs.String("profile-dir", "", "capture the server's cpu, mutex, block, heap and allocs profiles into `DIR`")
	profPrefix := fs.String("profile-prefix", "load-", "file name prefix of the captured profiles")
	profAfter := fs.Duration("profile-after", 5*time.Second, "start the profile capture this long after the heartbeats start")
	profSeconds := fs.Int("profile-seconds", 20, "length of the cpu, mutex and block captures in seconds")
	fs.StringVar(&lr.cpuProfile, "cpuprofile", "", "write the load generator's own CPU profile to `FILE`")
	fs.StringVar(&lr.mutexProfile, "mutexprofile", "", "write the load generator's own mutex profile to `FILE` (with --inprocess: the core's locks)")
	fs.StringVar(&lr.blockProfile, "blockprofile", "", "write the load generator's own block profile to `FILE`")
	fs.BoolVar(&lr.strict, "strict", false, "exit 3 when the run had errors or the server's heap grew")
	fs.BoolVar(&cfg.Reset, "reset", false, "abort the running and pending operations an earlier load left on the server (without it, such leftovers stop the run)")
	fs.Float64Var(&lr.maxErrorRate, "max-error-rate", 0.01, "exit 3 when more than this fraction of the heartbeats and starts failed")
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.DurationVar(&cfg.ProgressEvery, "progress-every", time.Second, "print a progress line this often")
	lbl := labels{}
	fs.Var(lbl, "label", "`KEY=VALUE` copied into the report (repeatable), e.g. commit=abc123")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: cannot use argument %q: want flags only\n", fs.Arg(0))
		return nil, 2
	}
	cfg.NodeMemory = *memGiB << 30
	cfg.Target = *target
	if *replicas != "" {
		cfg.Replicas = strings.Split(*replicas, ",")
	}
	if *caFile != "" || *skipVerify {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: *skipVerify}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				fmt.Fprintf(stderr, "loadgen: cannot use --ca %s: want PEM certificates (%v)\n", *caFile, err)
				return nil, 2
			}
			cfg.TLS.RootCAs = pool
		}
	}
	if len(lbl) > 0 {
		cfg.Labels = lbl
	}
	if !*quiet {
		cfg.Progress = func(line string) { fmt.Fprintln(stderr, line) }
	}
	if *profDir != "" {
		cfg.Profiles = &loadgen.ProfileCapture{Dir: *profDir, Prefix: *profPrefix, After: *profAfter, Seconds: *profSeconds}
	}
	if lr.serveBin != "" && cfg.InProcess {
		fmt.Fprintln(stderr, "loadgen: cannot use --serve with --inprocess")
		return nil, 2
	}
	if lr.serveBin == "" || cfg.InProcess {
		// Check the target (and everything else) before starting anything.
		if err := cfg.Validate(); err != nil {
			fmt.Fprintln(stderr, err)
			return nil, 2
		}
	}
	return lr, 0
}

// drive runs the load with the load generator's own profiles on; on nil it
// returns the exit status.
func (lr *loadRun) drive(ctx context.Context, stderr io.Writer) (*loadgen.Report, int) {
	if lr.mutexProfile != "" {
		runtime.SetMutexProfileFraction(100)
	}
	if lr.blockProfile != "" {
		runtime.SetBlockProfileRate(10_000)
	}
	if lr.cpuProfile != "" {
		f, err := os.Create(lr.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen: cannot create the CPU profile: %v\n", err)
			return nil, 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "loadgen: cannot start the CPU profile: %v\n", err)
			return nil, 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	rep, err := loadgen.Run(ctx, lr.cfg)
	if rep == nil {
		fmt.Fprintln(stderr, err)
		return nil, 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: stopped early: %v\n", err)
	}
	for _, p := range []struct{ file, name string }{{lr.mutexProfile, "mutex"}, {lr.blockProfile, "block"}} {
		if p.file == "" {
			continue
		}
		if err := writeProfile(p.file, p.name); err != nil {
			fmt.Fprintf(stderr, "loadgen: %v\n", err)
		}
	}
	return rep, 0
}

// output prints the summary, writes the report and applies --strict.
func (lr *loadRun) output(rep *loadgen.Report, stdout, stderr io.Writer) int {
	fmt.Fprint(stdout, rep.Summary())
	if lr.report != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			if dir := filepath.Dir(lr.report); dir != "." {
				err = os.MkdirAll(dir, 0o755)
			}
		}
		if err == nil {
			err = os.WriteFile(lr.report, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "loadgen: cannot write the report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "  report: %s\n", lr.report)
	}
	// Honest exits: a run that started nothing measured nothing, and one
	// whose requests mostly failed measured failures.
	if rep.Heartbeats > 0 && rep.AllocationsStarted == 0 {
		fmt.Fprintf(stderr, "loadgen: the run started no allocation in %d heartbeats: nothing was measured "+
			"(is the cluster full of another run's work? --reset aborts an earlier load's operations)\n", rep.Heartbeats)
		return 3
	}
	if attempts := rep.Heartbeats + rep.OperationsStarted; attempts > 0 {
		if rate := float64(rep.Errors) / float64(attempts); rate > lr.maxErrorRate {
			fmt.Fprintf(stderr, "loadgen: %d errors in %d requests (%.2f%%), above --max-error-rate %.2f%%: %v\n",
				rep.Errors, attempts, 100*rate, 100*lr.maxErrorRate, rep.ErrorsByKind)
			return 3
		}
	}
	if lr.strict {
		if rep.Errors > 0 {
			fmt.Fprintf(stderr, "loadgen: --strict: %d errors\n", rep.Errors)
			return 3
		}
		if m := rep.Memory; m != nil && m.SteadyOK != nil && !*m.SteadyOK {
			fmt.Fprintf(stderr, "loadgen: --strict: the server's heap grew: %s\n", m.Steady)
			return 3
		}
	}
	return 0
}

func writeProfile(file, name string) error {
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("cannot create the %s profile: %w", name, err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		return fmt.Errorf("cannot write the %s profile: %w", name, err)
	}
	return nil
}
