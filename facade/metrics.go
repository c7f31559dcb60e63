package facade

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/internal/buildinfo"
	"github.com/fairsched/fairsched/internal/cpufeat"
)

// metricsSet holds a Server's metrics in its own registry (so that several
// Servers in one process — tests — do not share counters). Counters and
// histograms are updated as things happen; the scheduler's state (operations
// by state, pools' shares, the cluster) is read when /metrics is scraped,
// by stateCollector. docs/operations.md lists every family.
type metricsSet struct {
	reg             *prometheus.Registry
	heartbeats      prometheus.Counter
	heartbeatErrors prometheus.Counter
	hbLatency       prometheus.Histogram
	batches         prometheus.Counter
	started         prometheus.Counter
	preempted       [schedule.PreemptReasonCount]prometheus.Counter // by schedule.PreemptReason
	aborted         [schedule.AbortReasonCount]prometheus.Counter   // by schedule.AbortReason
	fairShareUpdate prometheus.Histogram
	pendingWait     prometheus.Histogram
	panics          prometheus.Counter
	errors          map[int]prometheus.Counter
}

// errorStatuses are the error statuses counted by fairsched_http_errors_total.
var errorStatuses = []int{400, 401, 403, 404, 405, 409, 413, 415, 421, 429, 431, 500, 503}

func newMetrics(s *Server) *metricsSet {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fairsched_allocations_refused_total",
		Help: "Allocations nodes refused to start (reported refused), each of which went back to pending."},
		func() float64 { return float64(s.sched.RefusedAllocations()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fairsched_fairness_error",
		Help: "The cluster's fairness error at the last fair-share update: the mean, over the pools with demand, of |dominant usage share - dominant fair share|."},
		func() float64 { e, _ := s.core.FairnessError(); return e }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fairsched_fairness_error_integral_total",
		Help: "The time integral of the fairness error in share-seconds, kept across restarts with the pools' history."},
		func() float64 { _, i := s.core.FairnessError(); return i }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fairsched_history_bytes",
		Help: "Memory the pools' history holds (its series)."},
		func() float64 { return float64(s.core.HistoryMemoryBytes()) }))
	m := &metricsSet{
		reg: reg,
		heartbeats: f.counter("fairsched_heartbeats_total",
			"Heartbeats answered with 200, the heartbeats of a batch one by one."),
		heartbeatErrors: f.counter("fairsched_heartbeat_errors_total",
			"Heartbeats refused (a bad body or node id, an allocation of another node), the heartbeats of a batch one by one."),
		hbLatency: f.histogram("fairsched_heartbeat_duration_seconds",
			"Time to handle a heartbeat from decoding to the answer; a batched heartbeat's is its share of its batch's time.",
			prometheus.ExponentialBucketsRange(2e-6, 0.5, 20)),
		batches: f.counter("fairsched_heartbeat_batches_total",
			"Batches of heartbeats (POST /api/v1/heartbeats) answered with 200."),
		started: f.counter("fairsched_allocations_started_total", "Allocations the heartbeats started."),
		fairShareUpdate: f.histogram("fairsched_fair_share_update_duration_seconds",
			"Time of a fair-share update.", prometheus.ExponentialBucketsRange(1e-4, 10, 16)),
		pendingWait: f.histogram("fairsched_operation_pending_wait_seconds",
			"Time an operation waited pending (behind a max_running_operation_count) before it ran; 0 for one that ran at once.",
			prometheus.ExponentialBucketsRange(0.1, 86400, 16)),
		panics: f.counter("fairsched_handler_panics_total", "Handler panics (each logged and answered 500)."),
		errors: map[int]prometheus.Counter{},
	}
	preempted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairsched_allocations_preempted_total",
		Help: "Allocations preempted, by reason."}, []string{"reason"})
	aborted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairsched_allocations_aborted_total",
		Help: "Allocations aborted, by reason."}, []string{"reason"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairsched_http_errors_total",
		Help: "Answers with an error status, by status code."}, []string{"code"})
	reg.MustRegister(preempted, aborted, errs)
	for r := range m.preempted {
		m.preempted[r] = preempted.WithLabelValues(label(schedule.PreemptReason(r).String()))
	}
	for r := range m.aborted {
		m.aborted[r] = aborted.WithLabelValues(label(schedule.AbortReason(r).String()))
	}
	for _, code := range errorStatuses {
		m.errors[code] = errs.WithLabelValues(strconv.Itoa(code))
	}
	reg.MustRegister(BuildInfo())
	for _, c := range s.opts.Collectors {
		reg.MustRegister(c)
	}
	info := cpufeat.Get()
	f.constGauge("fairsched_cpu_info", "Always 1; the labels name the CPU.",
		prometheus.Labels{"brand": info.Brand, "x64_level": strconv.Itoa(info.X64Level), "avx2": strconv.FormatBool(info.AVX2)}, 1)
	f.constGauge("fairsched_cpu_logical_cores", "The machine's logical cores.", nil, float64(info.NumCPU))
	reg.MustRegister(&stateCollector{s: s}, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// factory registers metrics in one registry.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) constGauge(name, help string, labels prometheus.Labels, v float64) {
	f.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
		func() float64 { return v }))
}

// BuildInfo is the fairsched_build_info gauge: always 1, the labels name
// the binary's version, commit and Go version.
func BuildInfo() prometheus.Collector {
	bi := buildinfo.Get()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fairsched_build_info",
		Help:        "Always 1; the labels name the binary's version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "go_version": bi.GoVersion}},
		func() float64 { return 1 })
}

// label turns a reason sentence into a label value: "ancestor pool
// starving" → "ancestor_pool_starving".
func label(s string) string { return strings.ReplaceAll(s, " ", "_") }

func (m *metricsSet) countError(status int) {
	if c := m.errors[status]; c != nil {
		c.Inc()
	}
}

// observeHeartbeat counts a heartbeat and its decisions.
func (m *metricsSet) observeHeartbeat(r *schedule.Response, start time.Time) {
	m.heartbeats.Inc()
	m.hbLatency.Observe(time.Since(start).Seconds())
	if n := len(r.Start); n > 0 {
		m.started.Add(float64(n))
	}
	for i := range r.Preempt {
		m.preempted[r.Preempt[i].Reason].Inc()
	}
	for i := range r.Abort {
		m.aborted[r.Abort[i].Reason].Inc()
	}
}

// observeBatch counts a batch of n heartbeats (POST /api/v1/heartbeats) as
// observeHeartbeat counts each of them: the heartbeats answered and failed
// and their decisions, and in the duration histogram, for each heartbeat
// answered, its share of the batch's time (the time since start divided by
// n).
func (m *metricsSet) observeBatch(t *tally, n int, start time.Time) {
	m.batches.Inc()
	ok := n - t.failed
	if ok > 0 {
		m.heartbeats.Add(float64(ok))
		each := time.Since(start).Seconds() / float64(n)
		for range ok {
			m.hbLatency.Observe(each)
		}
	}
	if t.failed > 0 {
		m.heartbeatErrors.Add(float64(t.failed))
	}
	if t.started > 0 {
		m.started.Add(float64(t.started))
	}
	for r, k := range t.preempted {
		if k > 0 {
			m.preempted[r].Add(float64(k))
		}
	}
	for r, k := range t.aborted {
		if k > 0 {
			m.aborted[r].Add(float64(k))
		}
	}
}

// serveMetrics answers GET /metrics in the Prometheus text format.
func (s *Server) serveMetrics(ctx *fasthttp.RequestCtx) { WriteMetrics(ctx, s.m.reg, s.log) }

// WriteMetrics answers a request with what g gathers, in the Prometheus
// text format (a Server's /metrics, a follower replica's).
func WriteMetrics(ctx *fasthttp.RequestCtx, g prometheus.Gatherer, log *slog.Logger) {
	mfs, err := g.Gather()
	if err != nil {
		log.Error("gathering the metrics", "error", err)
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	ctx.SetContentType(string(format))
	enc := expfmt.NewEncoder(ctx.Response.BodyWriter(), format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			log.Error("writing the metrics", "error", err)
			return
		}
	}
}

// stateCollector reads the scheduler's state at each scrape.
type stateCollector struct{ s *Server }

var (
	descOperations = prometheus.NewDesc("fairsched_operations",
		"Operations the server holds, by state (finished ones until they are forgotten).", []string{"state"}, nil)
	descCluster = prometheus.NewDesc("fairsched_cluster_resources",
		"The registered nodes' resources at the last fair-share update (cpu in cores, memory in bytes).", []string{"resource"}, nil)
	descNodes = prometheus.NewDesc("fairsched_nodes",
		"Registered nodes.", nil, nil)
	descPoolShare = map[string]*prometheus.Desc{
		"fair_share": prometheus.NewDesc("fairsched_pool_fair_share",
			"Each pool's fair share of the cluster, per resource (the root is <Root>).", []string{"pool", "resource"}, nil),
		"usage_share": prometheus.NewDesc("fairsched_pool_usage_share",
			"Each pool's usage as a share of the cluster, per resource.", []string{"pool", "resource"}, nil),
		"demand_share": prometheus.NewDesc("fairsched_pool_demand_share",
			"Each pool's demand as a share of the cluster, per resource.", []string{"pool", "resource"}, nil),
		"strong_guarantee_share": prometheus.NewDesc("fairsched_pool_strong_guarantee_share",
			"Each pool's strong guarantee as a share of the cluster, per resource (explicit or inferred).", []string{"pool", "resource"}, nil),
	}
	descPoolStarving = prometheus.NewDesc("fairsched_pool_starving",
		"1 for a pool that is starving (or aggressively starving), else 0.", []string{"pool"}, nil)
	descPoolRunning = prometheus.NewDesc("fairsched_pool_running_operations",
		"Each pool's running operations (its subtree's).", []string{"pool"}, nil)
	descPoolPending = prometheus.NewDesc("fairsched_pool_pending_operations",
		"Each pool's pending operations (its subtree's).", []string{"pool"}, nil)
	descStoreCommits = prometheus.NewDesc("fairsched_store_commits_total",
		"Changes written to the store (each durable before its request's answer).", nil, nil)
	descStoreTxns = prometheus.NewDesc("fairsched_store_transactions_total",
		"Store transactions (synced writes), each carrying the changes queued while the previous one was written.", nil, nil)
	descStoreUp = prometheus.NewDesc("fairsched_store_up",
		"1 while the store takes writes, 0 once a write failed (the server then stops); absent without a store.", nil, nil)
	descQuarantined = prometheus.NewDesc("fairsched_store_quarantined_operations",
		"Operations of the store that could not be restored at start.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOperations, descCluster, descNodes, descPoolStarving, descPoolRunning,
		descPoolPending, descStoreCommits, descStoreTxns, descStoreUp, descQuarantined} {
		ch <- d
	}
	for _, d := range descPoolShare {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	var byState [4]int
	for _, o := range s.sched.Operations(nil) {
		if int(o.State) < len(byState) {
			byState[o.State]++
		}
	}
	for st, n := range byState {
		ch <- prometheus.MustNewConstMetric(descOperations, prometheus.GaugeValue, float64(n), schedule.OperationState(st).String())
	}
	total := s.sched.Total()
	for k := range total {
		ch <- prometheus.MustNewConstMetric(descCluster, prometheus.GaugeValue, total.Float(resource.Kind(k)), resource.Kind(k).String())
	}
	ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(s.sched.NodeCount()))
	pools := s.sched.Pools(nil)
	for i := range pools {
		p := &pools[i]
		for name, sh := range map[string]*resource.Share{
			"fair_share": &p.Attrs.FairShare.Total, "usage_share": &p.Attrs.UsageShare,
			"demand_share": &p.Attrs.DemandShare, "strong_guarantee_share": &p.Attrs.StrongGuaranteeShare,
		} {
			for k := range sh {
				ch <- prometheus.MustNewConstMetric(descPoolShare[name], prometheus.GaugeValue, sh[k], p.Name, resource.Kind(k).String())
			}
		}
		starving := 0.0
		if p.Starvation != starvation.NonStarving {
			starving = 1
		}
		ch <- prometheus.MustNewConstMetric(descPoolStarving, prometheus.GaugeValue, starving, p.Name)
		ch <- prometheus.MustNewConstMetric(descPoolRunning, prometheus.GaugeValue, float64(p.RunningOperationCount), p.Name)
		ch <- prometheus.MustNewConstMetric(descPoolPending, prometheus.GaugeValue, float64(p.PendingOperationCount), p.Name)
	}
	if core := s.core; core.Durable() {
		groups, commits := core.StoreStats()
		ch <- prometheus.MustNewConstMetric(descStoreCommits, prometheus.CounterValue, float64(commits))
		ch <- prometheus.MustNewConstMetric(descStoreTxns, prometheus.CounterValue, float64(groups))
		up := 1.0
		if core.StoreFailed() {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(descStoreUp, prometheus.GaugeValue, up)
		ch <- prometheus.MustNewConstMetric(descQuarantined, prometheus.GaugeValue, float64(len(core.Quarantined())))
	}
}
