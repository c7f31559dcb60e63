package facade

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/internal/cpufeat"
)

// metricsSet holds a Server's metrics (its own metrics.Set, so that several
// Servers in one process — tests — do not share counters). Per-pool and
// per-state values are computed when /metrics is scraped.
type metricsSet struct {
	set             *metrics.Set
	heartbeats      *metrics.Counter
	heartbeatErrors *metrics.Counter
	hbLatency       *metrics.Histogram
	batches         *metrics.Counter
	started         *metrics.Counter
	preempted       [schedule.PreemptReasonCount]*metrics.Counter // by schedule.PreemptReason
	aborted         [schedule.AbortReasonCount]*metrics.Counter   // by schedule.AbortReason
	fairShareUpdate *metrics.Histogram
	panics          *metrics.Counter
	errors          map[int]*metrics.Counter
}

func newMetrics(s *Server) *metricsSet {
	set := metrics.NewSet()
	m := &metricsSet{
		set:             set,
		heartbeats:      set.NewCounter("fairsched_heartbeats_total"),
		heartbeatErrors: set.NewCounter("fairsched_heartbeat_errors_total"),
		hbLatency:       set.NewHistogram("fairsched_heartbeat_duration_seconds"),
		batches:         set.NewCounter("fairsched_heartbeat_batches_total"),
		started:         set.NewCounter("fairsched_allocations_started_total"),
		fairShareUpdate: set.NewHistogram("fairsched_fair_share_update_duration_seconds"),
		panics:          set.NewCounter("fairsched_handler_panics_total"),
		errors:          map[int]*metrics.Counter{},
	}
	for r := range m.preempted {
		m.preempted[r] = set.NewCounter(`fairsched_allocations_preempted_total{reason="` + label(schedule.PreemptReason(r).String()) + `"}`)
	}
	for r := range m.aborted {
		m.aborted[r] = set.NewCounter(`fairsched_allocations_aborted_total{reason="` + label(schedule.AbortReason(r).String()) + `"}`)
	}
	for _, code := range []int{400, 404, 405, 409, 413, 429, 431, 500} {
		m.errors[code] = set.NewCounter(`fairsched_http_errors_total{code="` + strconv.Itoa(code) + `"}`)
	}
	info := cpufeat.Get()
	set.NewGauge(`fairsched_cpu_info{brand="`+escapeLabel(info.Brand)+`",x64_level="`+strconv.Itoa(info.X64Level)+
		`",avx2="`+strconv.FormatBool(info.AVX2)+`"}`, func() float64 { return 1 })
	set.NewGauge("fairsched_cpu_logical_cores", func() float64 { return float64(info.NumCPU) })
	return m
}

// label turns a reason sentence into a label value: "ancestor pool
// starving" → "ancestor_pool_starving".
func label(s string) string { return escapeLabel(strings.ReplaceAll(s, " ", "_")) }

// escapeLabel escapes a label value of the Prometheus text format.
func escapeLabel(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "\n", `\n`)
	return strings.ReplaceAll(s, `"`, `\"`)
}

func (m *metricsSet) countError(status int) {
	if c := m.errors[status]; c != nil {
		c.Inc()
	}
}

// observeHeartbeat counts a heartbeat and its decisions. It allocates only
// for a reason the facade does not know yet.
func (m *metricsSet) observeHeartbeat(r *schedule.Response, start time.Time) {
	m.heartbeats.Inc()
	m.hbLatency.UpdateDuration(start)
	if n := len(r.Start); n > 0 {
		m.started.Add(n)
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
		m.heartbeats.Add(ok)
		each := time.Since(start).Seconds() / float64(n)
		for range ok {
			m.hbLatency.Update(each)
		}
	}
	if t.failed > 0 {
		m.heartbeatErrors.Add(t.failed)
	}
	if t.started > 0 {
		m.started.Add(t.started)
	}
	for r, k := range t.preempted {
		if k > 0 {
			m.preempted[r].Add(k)
		}
	}
	for r, k := range t.aborted {
		if k > 0 {
			m.aborted[r].Add(k)
		}
	}
}

// serveMetrics answers GET /metrics in the Prometheus text format: the
// counters and histograms, operations by state, per-pool fair share, usage
// and demand shares by resource, the cluster's total resources, and the
// process metrics.
func (s *Server) serveMetrics(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	w := ctx.Response.BodyWriter()
	s.m.set.WritePrometheus(w)
	s.writeStateMetrics(w)
	metrics.WriteProcessMetrics(w)
}

func (s *Server) writeStateMetrics(w io.Writer) {
	var byState [4]int
	for _, o := range s.sched.Operations(nil) {
		if int(o.State) < len(byState) {
			byState[o.State]++
		}
	}
	var b []byte
	for st := range byState {
		b = append(b, `fairsched_operations{state="`...)
		b = append(b, schedule.OperationState(st).String()...)
		b = append(b, `"} `...)
		b = strconv.AppendInt(b, int64(byState[st]), 10)
		b = append(b, '\n')
	}
	total := s.sched.Total()
	for k := range total {
		b = append(b, `fairsched_cluster_resources{resource="`...)
		b = append(b, resource.Kind(k).String()...)
		b = append(b, `"} `...)
		b = strconv.AppendFloat(b, total.Float(resource.Kind(k)), 'g', -1, 64)
		b = append(b, '\n')
	}
	pools := s.sched.Pools(nil)
	for _, metric := range []struct {
		name string
		get  func(p *schedule.PoolInfo) *resource.Share
	}{
		{"fairsched_pool_fair_share", func(p *schedule.PoolInfo) *resource.Share { return &p.Attrs.FairShare.Total }},
		{"fairsched_pool_usage_share", func(p *schedule.PoolInfo) *resource.Share { return &p.Attrs.UsageShare }},
		{"fairsched_pool_demand_share", func(p *schedule.PoolInfo) *resource.Share { return &p.Attrs.DemandShare }},
	} {
		for i := range pools {
			sh := metric.get(&pools[i])
			for k := range sh {
				b = append(b, metric.name...)
				b = append(b, `{pool="`...)
				b = append(b, escapeLabel(pools[i].Name)...)
				b = append(b, `",resource="`...)
				b = append(b, resource.Kind(k).String()...)
				b = append(b, `"} `...)
				b = strconv.AppendFloat(b, sh[k], 'g', -1, 64)
				b = append(b, '\n')
			}
		}
	}
	for i := range pools {
		p := &pools[i]
		for _, c := range []struct {
			name string
			v    int64
		}{
			{"fairsched_pool_running_operations", p.RunningOperationCount},
			{"fairsched_pool_pending_operations", p.PendingOperationCount},
		} {
			b = append(b, c.name...)
			b = append(b, `{pool="`...)
			b = append(b, escapeLabel(p.Name)...)
			b = append(b, `"} `...)
			b = strconv.AppendInt(b, c.v, 10)
			b = append(b, '\n')
		}
	}
	_, _ = w.Write(b)
}
