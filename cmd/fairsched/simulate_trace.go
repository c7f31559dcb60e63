package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fairsched/fairsched/sim"
)

type traceFlags struct {
	trace, format, nodes, poolsBy string
	noGang                        bool
	config, compare               string
	all                           bool
}

// loadTraceConfig reads a trace replay's config ("" for the defaults).
func loadTraceConfig(path string) (*sim.TraceConfig, error) {
	if path == "" {
		return sim.DecodeTraceConfig(nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the config: %w", err)
	}
	c, err := sim.DecodeTraceConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// exitCode is 2 for bad input (a trace line, a config), 1 for the rest.
func exitCode(err error) int {
	var te *sim.TraceError
	var je *sim.Error
	if errors.As(err, &te) || errors.As(err, &je) {
		return 2
	}
	return 1
}

// runTrace replays a trace under one config, or two with --compare.
func runTrace(to traceFlags, out string, seed int64, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fairsched simulate: %v\n", err)
		return exitCode(err)
	}
	if to.format == "" {
		fmt.Fprint(stderr, "fairsched simulate: want --trace-format swf or alibaba-gpu-2023\n")
		return 2
	}
	configs := []string{to.config}
	if to.compare != "" {
		configs = append(configs, to.compare)
	}
	var cfgs []*sim.TraceConfig
	for _, path := range configs {
		c, err := loadTraceConfig(path)
		if err != nil {
			return fail(err)
		}
		if seed >= 0 {
			c.Seed = uint64(seed)
		}
		cfgs = append(cfgs, c)
	}
	start := time.Now()
	src, err := sim.OpenTrace(to.trace, sim.TraceOptions{Format: sim.TraceFormat(to.format), PoolsBy: to.poolsBy, NoGang: to.noGang, Nodes: to.nodes})
	if err != nil {
		if errors.As(err, new(*sim.TraceError)) {
			return fail(err)
		}
		fmt.Fprintf(stderr, "fairsched simulate: %v\n", err)
		if errors.Is(err, os.ErrNotExist) {
			return 1
		}
		return 2
	}
	scanned := time.Since(start)
	info := src.Info
	fmt.Fprintf(stdout, "trace %s (%s): %d lines, %d jobs in %d pools (by %s), read in %.2f s\n",
		filepath.Base(info.File), info.Format, info.Lines, info.Jobs, len(info.Pools), info.PoolsBy, scanned.Seconds())
	for _, s := range info.Skipped {
		fmt.Fprintf(stdout, "  skipped %d: %s\n", s.Count, s.Reason)
	}
	var results []*sim.Result
	for i, c := range cfgs {
		sc, err := sim.TraceScenario(src, c)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", configName(configs[i]), err))
		}
		t0 := time.Now()
		res, err := sim.Run(sc)
		if err != nil {
			return fail(err)
		}
		wall := time.Since(t0)
		dir := out
		if len(cfgs) > 1 {
			dir = filepath.Join(out, string(rune('a'+i)))
		}
		names, err := sim.WriteOutputs(dir, res)
		if err != nil {
			return fail(err)
		}
		tr := res.Trace
		fmt.Fprintf(stdout, "replayed %d jobs under %s: %s simulated in %.2f s of wall time (%.0fx real time, %d nodes, %d heartbeats); wrote %d files to %s\n",
			tr.Overall.Submitted, configName(configs[i]), time.Duration(tr.SimulatedS*float64(time.Second)).Round(time.Second),
			wall.Seconds(), tr.SimulatedS/max(wall.Seconds(), 1e-9), res.Run.Nodes, res.Run.Heartbeats, len(names), filepath.Clean(dir))
		if tr.Ended != sim.EndedDone {
			fmt.Fprintf(stdout, "  ended: %s (%d jobs unfinished)\n", tr.Ended, tr.Overall.Unfinished)
		}
		for _, s := range tr.SkippedAtReplay {
			fmt.Fprintf(stdout, "  not started %d: %s\n", s.Count, s.Reason)
		}
		if len(cfgs) == 1 {
			printReport(stdout, tr)
		}
		results = append(results, res)
	}
	if len(results) == 2 {
		cmp := sim.Compare(configName(configs[0]), results[0].Trace, configName(configs[1]), results[1].Trace)
		names, err := sim.WriteComparison(out, cmp, results[0], results[1])
		if err != nil {
			return fail(err)
		}
		if err := sim.WriteCompareTable(stdout, cmp, to.all); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "wrote %d comparison files to %s\n", len(names), filepath.Clean(out))
	}
	fmt.Fprintf(stdout, "%.2f s of wall time in all\n", time.Since(start).Seconds())
	return 0
}

func configName(path string) string {
	if path == "" {
		return "defaults"
	}
	return filepath.Base(path)
}

// printReport prints the report's table: overall, then each pool.
func printReport(w io.Writer, tr *sim.TraceReport) {
	fmt.Fprintf(w, "fairness error: mean %.4f, integral %.1f share·s; utilization cpu %.1f%%",
		tr.FairnessError, tr.FairnessErrorIntegral, tr.Utilization["cpu"]*100)
	if g, ok := tr.Utilization["gpu"]; ok && g > 0 {
		fmt.Fprintf(w, ", gpu %.1f%%", g*100)
	}
	fmt.Fprintln(w)
	recorded := tr.Overall.RecordedWaitS != nil
	fmt.Fprintf(w, "%-24s %9s %9s %9s %9s %9s %9s %9s %7s %12s %7s %7s", "pool", "submitted", "completed",
		"wait p50", "p90", "p99", "slowdown", "sd p90", "preempt", "lost cpu·s", "usage", "fair")
	if recorded {
		fmt.Fprintf(w, "  %9s %9s %9s", "rec p50", "rec p90", "rec p99")
	}
	fmt.Fprintln(w)
	for _, p := range append([]sim.PoolReport{tr.Overall}, tr.Pools...) {
		name := p.Pool
		if p.Parent == "" {
			name = "overall"
		}
		fmt.Fprintf(w, "%-24s %9d %9d %9.0f %9.0f %9.0f %9.2f %9.2f %7d %12.0f %6.1f%% %6.1f%%", name, p.Submitted, p.Completed,
			p.WaitS.P50, p.WaitS.P90, p.WaitS.P99, p.BoundedSlowdown.Mean, p.BoundedSlowdown.P90, p.Preemptions,
			p.LostWork["cpu"], p.UsageShare["cpu"]*100, p.FairShare["cpu"]*100)
		if rw := p.RecordedWaitS; recorded && rw != nil {
			fmt.Fprintf(w, "  %9.0f %9.0f %9.0f", rw.P50, rw.P90, rw.P99)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "(waits in seconds, submit to the start of a job's last process; slowdown: bounded, 10 s floor; usage and fair share: mean cpu share)")
}
