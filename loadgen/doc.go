// Package loadgen is fairsched's load generator (bench/README.md#load-generator-the-standard-load): a seeded workload of simulated nodes, pools and
// operations, played against `fairsched serve` over HTTP on loopback, or
// against core/schedule in process for the ceiling without HTTP.
//
// # Workload
//
// NewWorkload(cfg) derives everything from cfg.Seed with core/rng's PCG:
// the pool tree (Workload.Pools), the specification of every operation
// (Workload.Operation(slot, gen): the gen-th operation of a slot, so that
// a replacement is as reproducible as the first) and each node's stream
// of job durations (cfg.JobDuration, a Dist). Equal configurations give
// equal workloads; what the scheduler decides at run time (which job runs
// where and when) depends on timing and is not reproducible.
//
// # Nodes
//
// A Node behaves like a real node (docs/api.md#node-heartbeats): it holds the allocations it
// was told to start, finishes each when its drawn duration ends and reports
// it "completed" in its next heartbeat (once: a finished allocation is
// reported in exactly one successful heartbeat), stops a preempted
// allocation at once or within a fraction of its timeout
// (Config.PreemptStopFraction) and reports it "aborted", and forgets an
// allocation it is told to abort without reporting it again. Each Node is
// owned by one driver goroutine; nothing in it is safe for concurrent use.
//
// # Drivers and steady load
//
// Run sets the workload up (pools, then Config.Operations operations) and
// plays the nodes from Config.Connections goroutines, each owning a fixed
// share of the nodes and, over HTTP, one connection of a fasthttp
// HostClient (MaxConns = Connections), one heartbeat in flight on each, as
// separate nodes would send them. With Config.Pipeline > 0 the goroutines'
// heartbeats share that many connections of a fasthttp PipelineClient
// instead: requests waiting for a connection (up to Config.PipelineDelay)
// leave in one write and their answers return in one read, which measures
// the server with its syscalls amortised. With Config.Batch > 0 each
// goroutine sends its nodes' heartbeats Batch at a time in one POST
// /api/v1/heartbeats (docs/api.md#batched-heartbeats), as a node agent relaying a rack would;
// the latency recorded is then a batch's round trip (Report.LatencyOf
// says which). Operations whose jobs have all
// completed are replaced by the next generation of their slot, so the
// number of operations stays at Config.Operations. Run stops after
// Config.Duration or Config.MaxHeartbeats heartbeats, whichever comes
// first, or when its context ends, and returns a Report.
//
// The heartbeat path of the drivers does not allocate in steady state: the
// request body is appended into a per-goroutine buffer (AppendHeartbeat,
// AppendBatchEntry; a node keeps its running allocations encoded between
// heartbeats that do not change them), the answer is scanned in place
// (DecodeResponse, DecodeBatchResponse), requests and responses
// are fasthttp's pooled objects and latency goes into a per-goroutine
// HdrHistogram, merged at the end.
//
// # Targets
//
// CheckTarget refuses every address that is not loopback: the load
// generator never sends traffic off the machine.
package loadgen
