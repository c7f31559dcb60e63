package loadgen

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fairsched/fairsched/internal/cpufeat"
)

// Report is the outcome of a run, written as JSON by the command.
type Report struct {
	Mode      string `json:"mode"` // "http" or "inprocess"
	Target    string `json:"target,omitempty"`
	StartedAt string `json:"started_at"`

	DurationS float64 `json:"duration_s"` // heartbeat phase, wall time
	SetupS    float64 `json:"setup_s"`    // pools and first operations

	Heartbeats             int64            `json:"heartbeats"`
	HeartbeatsPerS         float64          `json:"heartbeats_per_s"`
	AllocationsStarted     int64            `json:"allocations_started"`
	AllocationsStartedPerS float64          `json:"allocations_started_per_s"`
	AllocationsCompleted   int64            `json:"allocations_completed"`
	Preemptions            int64            `json:"preemptions"`
	AbortsReceived         int64            `json:"aborts_received"`
	AbortedReported        int64            `json:"aborted_reported"`
	RunningAllocations     int64            `json:"running_allocations"` // at the end
	OperationsStarted      int64            `json:"operations_started"`  // setup included
	OperationsCompleted    int64            `json:"operations_completed"`
	PendingOperations      int64            `json:"pending_operations"` // at the end
	Errors                 int64            `json:"errors"`
	ErrorsByKind           map[string]int64 `json:"errors_by_kind,omitempty"`
	ErrorSamples           []string         `json:"error_samples,omitempty"`

	// LatencyMS is the round trip of a request as the client sees it
	// (HTTP: request written to answer read; in process: the Heartbeat
	// calls): of one heartbeat, or with Config.Batch of a whole batch.
	// LatencyOf says which, in words.
	LatencyMS Latency `json:"latency_ms"`
	LatencyOf string  `json:"latency_of"`
	// Requests are the requests answered (batches, or heartbeats when they
	// are not batched).
	Requests     int64   `json:"requests"`
	RequestsPerS float64 `json:"requests_per_s"`

	// PerSecond is the heartbeat count of each second of the run.
	PerSecond []int64 `json:"heartbeats_per_second_series"`

	CPU      *CPUUse           `json:"cpu,omitempty"`
	Memory   *MemoryReport     `json:"memory,omitempty"`
	Config   ReportConfig      `json:"config"`
	Machine  Machine           `json:"machine"`
	Labels   map[string]string `json:"labels,omitempty"`
	Profiles []string          `json:"profiles,omitempty"`
}

// Latency holds percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// CPUUse splits the CPU time of the heartbeat phase between the server and
// the load generator (both share the machine's cores).
type CPUUse struct {
	ServerS        float64 `json:"server_s"` // from the server's process_cpu_seconds_total (-1: unknown)
	LoadgenS       float64 `json:"loadgen_s"`
	ServerUSPerHB  float64 `json:"server_us_per_heartbeat"`
	LoadgenUSPerHB float64 `json:"loadgen_us_per_heartbeat"`
	CoresBusy      float64 `json:"cores_busy"` // (server + loadgen) / wall
	MachineCores   int     `json:"machine_cores"`
}

// ReportConfig is the run's configuration as reported.
type ReportConfig struct {
	Nodes               int     `json:"nodes"`
	Pools               int     `json:"pools"`
	Operations          int     `json:"operations"`
	NodeCPU             float64 `json:"node_cpu"`
	NodeMemory          int64   `json:"node_memory"`
	NodeSlots           int64   `json:"node_slots"`
	JobDuration         string  `json:"job_duration_s"`
	JobsPerTask         string  `json:"jobs_per_task"`
	PreemptStopFraction float64 `json:"preempt_stop_fraction"`
	DurationS           float64 `json:"duration_s"`
	MaxHeartbeats       int64   `json:"max_heartbeats"`
	Connections         int     `json:"connections"`
	Pipeline            int     `json:"pipeline,omitempty"`
	Batch               int     `json:"batch,omitempty"`
	PipelineDelayS      float64 `json:"pipeline_delay_s,omitempty"`
	Rate                float64 `json:"rate"`
	HeartbeatPeriodS    float64 `json:"heartbeat_period_s"`
	Seed                uint64  `json:"seed"`
}

// Machine describes where the run ran.
type Machine struct {
	CPUModel     string   `json:"cpu_model"`
	Cores        int      `json:"cores"`
	GOMAXPROCS   int      `json:"gomaxprocs"`
	X64Level     int      `json:"x64_level,omitempty"`
	Features     []string `json:"cpu_features"`
	GoVersion    string   `json:"go_version"`
	OS           string   `json:"os"`
	Arch         string   `json:"arch"`
	LoadAvgStart string   `json:"load_average_start"`
	LoadAvgEnd   string   `json:"load_average_end"`
}

func reportConfig(c *Config) ReportConfig {
	rc := ReportConfig{
		Nodes: c.Nodes, Pools: c.Pools, Operations: c.Operations,
		NodeCPU: c.NodeCPU, NodeMemory: c.NodeMemory, NodeSlots: c.NodeSlots,
		JobDuration: c.JobDuration.String(), JobsPerTask: fmt.Sprintf("log-uniform %d-%d", c.MinJobs, c.MaxJobs),
		PreemptStopFraction: c.PreemptStopFraction,
		DurationS:           c.Duration.Seconds(), MaxHeartbeats: c.MaxHeartbeats,
		Connections: c.Connections, Pipeline: c.Pipeline, Batch: c.Batch, Rate: c.Rate, HeartbeatPeriodS: c.HeartbeatPeriod.Seconds(), Seed: c.Seed,
	}
	if c.Pipeline > 0 {
		rc.PipelineDelayS = c.PipelineDelay.Seconds()
	}
	return rc
}

func machine() Machine {
	info := cpufeat.Get()
	return Machine{
		CPUModel:     info.Brand,
		Cores:        info.NumCPU,
		GOMAXPROCS:   runtime.GOMAXPROCS(0),
		X64Level:     info.X64Level,
		Features:     info.Features,
		GoVersion:    runtime.Version(),
		OS:           runtime.GOOS,
		Arch:         runtime.GOARCH,
		LoadAvgStart: loadAvg(),
	}
}

// loadAvg returns the first three fields of /proc/loadavg ("" elsewhere).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// counters are one driver goroutine's statistics: written by it, read by
// the progress line; padded so that goroutines do not share cache lines.
type counters struct {
	heartbeats, started, completed, preempted, aborts, abortedReported, errors, running, requests atomic.Int64
	_                                                                                             [64]byte
}

// stats is the run's shared statistics.
type stats struct {
	workers []counters
	hists   []*hdrhistogram.Histogram // one per worker, merged at the end

	mu      sync.Mutex
	kinds   map[string]int64
	samples []string
}

func newStats(workers int) *stats {
	s := &stats{workers: make([]counters, workers), hists: make([]*hdrhistogram.Histogram, workers), kinds: map[string]int64{}}
	for i := range s.hists {
		s.hists[i] = newHist()
	}
	return s
}

// newHist records nanoseconds from 1 ns to 60 s with 3 significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000_000, 3) }

const maxErrorSamples = 10

// errorf counts an error of a kind (worker w, or -1 for the control plane)
// and keeps the first few messages.
func (s *stats) error(w int, kind string, msg string) {
	if w >= 0 {
		s.workers[w].errors.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds[kind]++
	if len(s.samples) < maxErrorSamples {
		s.samples = append(s.samples, kind+": "+msg)
	}
}

// add adds t's non-zero counts to c.
func (c *counters) add(t *totals) {
	for _, x := range []struct {
		c *atomic.Int64
		v int64
	}{{&c.heartbeats, t.heartbeats}, {&c.started, t.started}, {&c.completed, t.completed}, {&c.preempted, t.preempted},
		{&c.aborts, t.aborts}, {&c.abortedReported, t.abortedReported}, {&c.running, t.running}} {
		if x.v != 0 {
			x.c.Add(x.v)
		}
	}
}

type totals struct {
	heartbeats, started, completed, preempted, aborts, abortedReported, errors, running, requests int64
}

func (s *stats) sum() totals {
	var t totals
	for i := range s.workers {
		c := &s.workers[i]
		t.heartbeats += c.heartbeats.Load()
		t.started += c.started.Load()
		t.completed += c.completed.Load()
		t.preempted += c.preempted.Load()
		t.aborts += c.aborts.Load()
		t.abortedReported += c.abortedReported.Load()
		t.errors += c.errors.Load()
		t.running += c.running.Load()
		t.requests += c.requests.Load()
	}
	s.mu.Lock()
	for k, v := range s.kinds {
		if strings.HasPrefix(k, "control ") {
			t.errors += v
		}
	}
	s.mu.Unlock()
	return t
}

func (s *stats) latency() Latency {
	h := newHist()
	for _, x := range s.hists {
		h.Merge(x)
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
		Mean: h.Mean() / 1e6,
	}
}

// Summary is the human summary of r: a few lines.
func (r *Report) Summary() string {
	var b strings.Builder
	conns := fmt.Sprintf("%d connections", r.Config.Connections)
	if r.Config.Batch > 0 {
		conns = fmt.Sprintf("batches of %d heartbeats on %d connections", r.Config.Batch, r.Config.Connections)
	}
	if r.Config.Pipeline > 0 {
		conns = fmt.Sprintf("%d concurrent requests pipelined on %d connections (batch delay %gµs)",
			r.Config.Connections, r.Config.Pipeline, r.Config.PipelineDelayS*1e6)
		if r.Config.Batch > 0 {
			conns += fmt.Sprintf(", batches of %d heartbeats", r.Config.Batch)
		}
	}
	fmt.Fprintf(&b, "loadgen %s: %d nodes, %d pools, %d operations, jobs %s s, %s, rate %s, seed %d\n",
		r.Mode, r.Config.Nodes, r.Config.Pools, r.Config.Operations, r.Config.JobDuration, conns,
		rateString(r.Config.Rate), r.Config.Seed)
	fmt.Fprintf(&b, "  %.1f s: %d heartbeats = %.0f heartbeats/s, %d errors\n", r.DurationS, r.Heartbeats, r.HeartbeatsPerS, r.Errors)
	if r.Config.Batch > 0 {
		fmt.Fprintf(&b, "  %d requests of up to %d heartbeats = %.0f requests/s\n", r.Requests, r.Config.Batch, r.RequestsPerS)
	}
	fmt.Fprintf(&b, "  latency ms (%s): p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
		r.LatencyOf, r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, r.LatencyMS.P999, r.LatencyMS.Max)
	fmt.Fprintf(&b, "  allocations: %d started (%.0f/s), %d completed, %d preempted, %d aborts received; %d running at the end\n",
		r.AllocationsStarted, r.AllocationsStartedPerS, r.AllocationsCompleted, r.Preemptions, r.AbortsReceived, r.RunningAllocations)
	fmt.Fprintf(&b, "  operations: %d started, %d completed, %d pending at the end\n", r.OperationsStarted, r.OperationsCompleted, r.PendingOperations)
	if c := r.CPU; c != nil {
		if c.ServerS >= 0 {
			fmt.Fprintf(&b, "  cpu: server %.1f s (%.1f µs/heartbeat), loadgen %.1f s (%.1f µs/heartbeat), %.2f of %d cores busy\n",
				c.ServerS, c.ServerUSPerHB, c.LoadgenS, c.LoadgenUSPerHB, c.CoresBusy, c.MachineCores)
		} else {
			fmt.Fprintf(&b, "  cpu: loadgen %.1f s (%.1f µs/heartbeat)\n", c.LoadgenS, c.LoadgenUSPerHB)
		}
	}
	if m := r.Memory; m != nil && m.End != nil {
		fmt.Fprintf(&b, "  server memory at the end: heap after GC %s (budget %s: %s), RSS %s\n",
			mib(m.HeapAfterGC), mib(m.Budget), m.BudgetVerdict, mib(m.End.RSS))
		if len(m.Samples) > 2 {
			b.WriteString("  server heap over time (t s: next_gc MiB / heap_inuse MiB / operations held):")
			for i, s := range m.Samples {
				if i > 0 && i%8 == 0 {
					b.WriteString("\n   ")
				}
				fmt.Fprintf(&b, " %.0f: %.0f/%.0f/%d", s.TS, float64(s.NextGC)/(1<<20), float64(s.HeapInuse)/(1<<20), s.Operations)
			}
			b.WriteString("\n")
		}
		if m.Steady != "" {
			fmt.Fprintf(&b, "  heap over time: %s\n", m.Steady)
		}
	}
	fmt.Fprintf(&b, "  machine: %s, %d cores, %s, load average %s at the start, %s at the end\n",
		r.Machine.CPUModel, r.Machine.Cores, r.Machine.GoVersion, r.Machine.LoadAvgStart, r.Machine.LoadAvgEnd)
	if len(r.ErrorsByKind) > 0 {
		keys := make([]string, 0, len(r.ErrorsByKind))
		for k := range r.ErrorsByKind {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("  errors by kind:")
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, r.ErrorsByKind[k])
		}
		b.WriteString("\n")
		for _, s := range r.ErrorSamples {
			fmt.Fprintf(&b, "    %s\n", s)
		}
	}
	return b.String()
}

func rateString(r float64) string {
	if r == 0 {
		return "max"
	}
	return fmt.Sprintf("%.0f/s", r)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func since(t time.Time) float64 { return time.Since(t).Seconds() }
