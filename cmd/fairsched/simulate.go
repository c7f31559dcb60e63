package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fairsched/fairsched/sim"
)

const simulateUsage = `usage: fairsched simulate SCENARIO --out DIR [--seed N]
       fairsched simulate --trace FILE --trace-format swf|alibaba-gpu-2023 --out DIR
                          [--trace-nodes FILE] [--pools-by FIELD] [--no-gang]
                          [--config A.json] [--compare B.json] [--seed N]

Replays SCENARIO (a JSON scenario file, "-" for stdin; see sim's package
documentation and docs/simulation.md) on the scheduling core
with a virtual clock and writes into DIR:

  timeseries.csv   one row per pool per sample interval (absolute amounts)
  summary.json     the fairness error; per pool: average usage, guarantee met fraction,
                   preemptions, operations, job wait percentiles
  *.svg, *.png     charts: cluster-usage, pool-<name>-usage and, for
                   integral pools, pool-<name>-volume

The outputs depend only on the scenario and the seed: the same input gives
the same bytes. The wall time the run took is printed, not written.

A scenario that is not valid is reported as
  fairsched simulate: <json path>: <message>
with exit status 2; I/O errors exit with status 1.

With --trace, replays a workload trace instead (docs/simulation.md,
"Replaying workload traces"): swf (the Standard Workload Format v2.2 of
the Parallel Workloads Archive; pools by user, group or queue) or
alibaba-gpu-2023 (Alibaba's GPU cluster pod list, with its node list in
--trace-nodes; pools by qos). Gzip is read as such. --config sets the pool
tree and the scheduler (default: one pool a trace pool, equal weights);
--compare replays the same trace under a second config and prints the two
side by side, with overlaid charts. Besides the files above DIR gets
report.json, pools.csv and fairness.csv (with --compare: DIR/a, DIR/b and
compare.json, compare.csv, compare-*.svg/png in DIR). A malformed trace
line is reported as
  fairsched simulate: FILE:line N: <field>: <message>
with exit status 2; lines that cannot be replayed are counted, by reason.

flags:
`

// runSimulate is the simulate subcommand.
func runSimulate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the output directory (created if needed)")
	seed := fs.Int64("seed", -1, "override the scenario's seed (>= 0)")
	var to traceFlags
	fs.StringVar(&to.trace, "trace", "", "replay this workload trace (gzip or plain) instead of a scenario")
	fs.StringVar(&to.format, "trace-format", "", "the trace's format: swf or alibaba-gpu-2023")
	fs.StringVar(&to.nodes, "trace-nodes", "", "alibaba-gpu-2023: the node list CSV")
	fs.StringVar(&to.poolsBy, "pools-by", "", "the trace field that names pools: user (default), group or queue for swf; qos for alibaba-gpu-2023")
	fs.BoolVar(&to.noGang, "no-gang", false, "swf: start jobs as non-gang operations")
	fs.StringVar(&to.config, "config", "", "the trace replay's config (pool tree, scheduler, periods); default one pool a trace pool")
	fs.StringVar(&to.compare, "compare", "", "replay the trace under this second config too and compare")
	fs.BoolVar(&to.all, "all-rows", false, "with --compare: print the pool rows that are equal too")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simulateUsage)
		fs.PrintDefaults()
	}
	// Flags may come before or after SCENARIO.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if to.trace != "" || to.format != "" || to.nodes != "" || to.config != "" || to.compare != "" || to.poolsBy != "" || to.noGang {
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "fairsched simulate: cannot use SCENARIO %q with --trace: a trace replay takes its workload from the trace\n", pos[0])
			return 2
		}
		if to.trace == "" {
			fmt.Fprint(stderr, "fairsched simulate: want --trace FILE with the trace flags\n")
			return 2
		}
		if *out == "" {
			fmt.Fprint(stderr, "fairsched simulate: want --out DIR for the outputs\n")
			return 2
		}
		return runTrace(to, *out, *seed, stdout, stderr)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "fairsched simulate: want exactly one SCENARIO, got %d\n\n", len(pos))
		fs.Usage()
		return 2
	}
	if *out == "" {
		fmt.Fprint(stderr, "fairsched simulate: want --out DIR for the outputs\n\n")
		fs.Usage()
		return 2
	}
	var (
		data []byte
		err  error
	)
	if pos[0] == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairsched simulate: cannot read the scenario: %v\n", err)
		return 1
	}
	sc, err := sim.Decode(data)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched simulate: %v\n", err)
		return 2
	}
	if *seed >= 0 {
		sc.Seed = uint64(*seed)
	}
	start := time.Now()
	res, err := sim.Run(sc)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched simulate: %v\n", err)
		return 1
	}
	simulated := time.Since(start)
	names, err := sim.WriteOutputs(*out, res)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched simulate: %v\n", err)
		return 1
	}
	total := time.Since(start)
	fmt.Fprintf(stdout, "simulated %s of %d nodes (seed %d) in %.2f s (%.0fx real time); %d heartbeats, %d fair-share updates\n",
		time.Duration(sc.DurationS*float64(time.Second)), res.Run.Nodes, sc.Seed, simulated.Seconds(),
		sc.DurationS/max(simulated.Seconds(), 1e-9), res.Run.Heartbeats, res.Run.FairShareUpdates)
	fmt.Fprintf(stdout, "wrote %d files to %s in %.2f s in all\n", len(names), filepath.Clean(*out), total.Seconds())
	fmt.Fprintf(stdout, "fairness error: mean %.4f, integral %.1f share·s\n", res.FairnessErrorMean, res.FairnessErrorIntegral)
	for _, p := range sim.Summarize(res).Pools {
		fmt.Fprintf(stdout, "  %-24s avg usage %9.2f cpu  demand %9.2f cpu  fair share %9.2f cpu  guarantee met %s\n",
			p.Pool, p.AverageUsage["cpu"], p.AverageDemand["cpu"], p.AverageFairShare["cpu"], fraction(p.GuaranteeMetFraction))
	}
	return 0
}

func fraction(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *f*100)
}
