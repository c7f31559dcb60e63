// Package sim replays a scenario — a cluster, a pool tree and a workload —
// on fairsched's scheduling core with a virtual clock, and records what the
// pools received: a time series, a summary and charts (fairsched simulate).
//
// # How a run works
//
// The simulation drives core/schedule through the entry points a server
// uses, on one goroutine and the core's virtual time (clock.Time, whole
// microseconds; the scenario's seconds are converted once, when read):
//
//   - StartOperation when a workload entry's operation arrives;
//   - Heartbeat for every node every heartbeat_period_s, staggered over the
//     period: the node reports its jobs (completed once their drawn
//     duration has passed, aborted once a preempted job has stopped,
//     running otherwise) and carries out the answer — it starts the jobs
//     of Start decisions (drawing each job's duration from its task's
//     distribution), drops aborted allocations and stops preempted jobs at
//     its next heartbeat (cluster.preempted_job_stop "immediately", the
//     default) or once their preemption timeout has passed ("at_timeout");
//   - UpdateFairShare every fair_share_update_period_s (default 1 s), after
//     which the pools are sampled every sample_period_s.
//
// A job that is preempted or aborted returns to pending (core/schedule puts
// it back in its task) and draws a new duration when it starts again. A
// job's wait is the time from becoming pending (its operation's arrival,
// or its preemption) to starting. Finished operations are forgotten.
//
// Before time 0 every node heartbeats once, so that the first update sees
// the whole cluster. Integral pools (docs/semantics.md#integral-guarantees) start empty; warm_up_s
// gives them a history: the first fair-share update runs at -warm_up_s on
// the idle cluster and the next at 0, so that each integral pool starts the
// recorded time with min(warm_up_s × resource_flow, capacity) of volume —
// the state every morning in the steady state of a daily process. The
// scheduler has no entry point for setting a volume directly.
//
// A run is a pure function of the scenario: the seed (a PCG, core/rng)
// forks one stream per workload entry for its arrivals and one per task for
// its job durations, and the outputs are written without maps or clocks, so
// that the same scenario gives the same bytes.
//
// # Scenario files
//
// A scenario is a JSON object (every duration in seconds; resources as in
// docs/api.md#conventions: cpu in cores, memory in bytes):
//
//	{
//	  "name": "...", "description": "...", "seed": 1,
//	  "duration_s": 86400,                 // required
//	  "warm_up_s": 86400,                  // idle history before 0 (default 0)
//	  "heartbeat_period_s": 5,             // default 5
//	  "fair_share_update_period_s": 1,     // default 1; [0.01, 60]
//	  "sample_period_s": 60,               // default 60
//	  "max_samples": 2048,                 // default 2048; thinned beyond
//	  "cluster": {
//	    "nodes": [{"count": 100, "resources": {"cpu": 20, "memory": 137438953472}}],
//	    "preempted_job_stop": "immediately"   // or "at_timeout"
//	  },
//	  "config": {...},        // the tree config of solve snapshots (docs/api.md#solve)
//	  "scheduler": {...},     // scheduler parameters, e.g. fair_share_starvation_timeout_s
//	  "tree": {"children": [...]},   // pools exactly as in solve snapshots
//	  "workload": [{
//	    "name": "research", "pool": "research",
//	    "type": "map", "weight": 1, "preemption_mode": "normal",   // optional
//	    "tasks": [{"name": "map", "job_count": 500, "resources": {"cpu": 1},
//	               "duration": {"distribution": "lognormal", "median_s": 900, "sigma": 0.8}}],
//	    "arrivals": {"rate_per_hour": 6, "start_s": 0, "end_s": 43200, "repeat_every_s": 86400}
//	  }]
//	}
//
// A node's user_slots default to 1000 and a job's to 1. Durations are
// "fixed" (value_s), "uniform" (min_s, max_s), "exponential" (mean_s) or
// "lognormal" (median_s or mean_s, and sigma). Arrivals are one of "at_s"
// (a list of times), "every_s" (periodic from start_s), "rate_per_hour"
// (Poisson) or "concurrent" (a closed loop keeping that many operations
// unfinished: a new one starts when one completes), inside the window
// [start_s, end_s) (default the whole run) that repeats every
// repeat_every_s when given (86400 for a daily process). The tree's pools
// may not hold operations or accumulated_resource_volume.
//
// Decode reports the first problem of a file as an *Error with a code and a
// JSON path, e.g. "$.workload[1].tasks[0].duration.sigma: cannot use 11:
// want a number in [0, 10]".
//
// # Outputs
//
// WriteOutputs writes timeseries.csv (one row per pool per sample: usage,
// demand, fair share and its strong / integral / weight-proportional parts,
// the guarantee, the accumulated volume, operation counts and starvation
// status; absolute amounts, cpu columns first, then memory, gpu,
// user_slots and network), workloads.csv (per workload entry), summary.json
// (per pool: averages, the fraction of the time with demand in which the
// guarantee was met, preemptions suffered and caused, operations, job wait
// percentiles, integral volume range) and the charts of Charts.
//
// # Trace replays
//
// OpenTrace reads a workload trace — swf (SWFReader) or alibaba-gpu-2023
// (AlibabaReader) — checking every line; TraceScenario turns it and a
// TraceConfig into a scenario whose workload is one entry a trace pool and
// whose run streams the trace's jobs (Scenario.Trace). Such a run also
// writes report.json, pools.csv and fairness.csv (TraceReport), and
// Compare lines up two of them. docs/simulation.md ("Replaying workload
// traces") describes the formats, the conversion and the report.
package sim

// Examples are the scenarios shipped in examples/ (file name without
// ".json"); their charts live in docs/charts/<name>/.
var Examples = []string{"integral-guarantees", "integral-guarantees-strong", "burst-500", "fifo-vs-fair", "graceful"}
