package replica

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/facade"
)

// A replica's metrics: the leader's /metrics is its term's Server's, with
// these added; a follower answers /metrics with these and
// fairsched_build_info, so that a scraper of every replica sees which one
// leads.

var (
	descLeader = prometheus.NewDesc("fairsched_replica_leader",
		"1 on the replica that leads (serves the API), 0 on the others.", nil, nil)
	descTerms = prometheus.NewDesc("fairsched_replica_terms_total",
		"Leadership terms this replica has begun serving.", nil, nil)
)

// collector reads the replica's role at each scrape.
type collector struct{ r *Replica }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLeader
	ch <- descTerms
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	leader := 0.0
	if c.r.term.Load() != nil {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(descTerms, prometheus.CounterValue, float64(c.r.terms.Load()))
}

// followerRegistry is what a follower's /metrics shows.
func (r *Replica) followerRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(facade.BuildInfo(), collector{r})
	return reg
}

// serveMetrics answers a follower's GET /metrics: with tokens, to any
// token's holder, as the leader's.
func (r *Replica) serveMetrics(ctx *fasthttp.RequestCtx) {
	r.tokensMu.Lock()
	tokens := r.cfg.Server.Tokens
	r.tokensMu.Unlock()
	if tokens != nil && tokens.Lookup(facade.Bearer(ctx)) == nil {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="fairsched"`)
		writeJSON(ctx, fasthttp.StatusUnauthorized, []byte(`{"error":{"code":"unauthenticated","message":"cannot serve the metrics: want a valid token in an Authorization: Bearer header","path":"$"}}`+"\n"))
		return
	}
	facade.WriteMetrics(ctx, r.metrics, r.log)
}
