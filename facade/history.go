package facade

import (
	"math"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/wire"
)

// appendOperationHistory appends the members "tasks":[…],"recent_preemptions":[…]
// of an operation's orchid (docs/api.md#the-orchid): its tasks as it was
// started, and its recent preemptions, the most recent first, each
// {"time_s","allocation_id","node_id","reason"} with the reason sentence
// its node was sent.
func (s *Server) appendOperationHistory(dst []byte, id string) []byte {
	tasks := s.core.OperationTasks(id)
	dst = append(dst, `"tasks":`...)
	dst = wire.AppendTasks(dst, tasks)
	var buf [server.PreemptionsPerOperation]server.PreemptionEvent
	events := s.core.RecentPreemptions(buf[:0], id)
	dst = append(dst, `,"recent_preemptions":[`...)
	for i := range events {
		e := &events[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"time_s":`...)
		dst = strconv.AppendFloat(dst, e.Time.Seconds(), 'g', -1, 64)
		dst = append(dst, `,"allocation_id":"`...)
		dst = strconv.AppendUint(dst, e.Decision.Allocation, 10)
		dst = append(dst, `","node_id":`...)
		dst = jsonpath.AppendString(dst, e.Node)
		dst = append(dst, `,"reason":"`...)
		dst = wire.AppendPreemptReason(dst, &e.Decision)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}

// ---- pool history (docs/api.md#pool-history) ----

// maxHistoryPoints bounds the points of one answer (a step that would give
// more is refused).
const maxHistoryPoints = 100_000

// poolHistory answers GET /api/v1/pools/{name}/history?since=&step=: the
// pool's points from since (Unix seconds; negative: seconds before now;
// absent: the oldest kept) at step seconds (absent: the resolution of the
// tier that reaches back to since; else rounded up to a multiple of it).
func (s *Server) poolHistory(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkName(ctx, name, "a pool name", "$.url.name", false) {
		return
	}
	args := ctx.QueryArgs()
	now := s.core.HistoryNow()
	since := clock.Time(math.MinInt64 / 4)
	if v := args.Peek("since"); len(v) > 0 {
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
			s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "since",
				Message: "cannot use since " + strconv.Quote(truncate(string(v), 32)) + ": want Unix seconds, or negative seconds before now (-3600: the last hour)"})
			return
		}
		if since = clock.FromSeconds(f); f < 0 {
			since = now.Add(clock.DurationFromSeconds(f))
		}
	}
	var step clock.Duration
	if v := args.Peek("step"); len(v) > 0 {
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || !(f > 0) || f > 1e9 {
			s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "step",
				Message: "cannot use step " + strconv.Quote(truncate(string(v), 32)) + ": want a positive number of seconds (rounded up to a multiple of the history's resolution)"})
			return
		}
		step = max(clock.DurationFromSeconds(f), clock.Microsecond)
	}
	pts, res, err := s.core.PoolHistory(name, since, step, nil)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	used := res
	if step > 0 {
		used = (step + res - 1) / res * res
	}
	if len(pts) > maxHistoryPoints {
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "step",
			Message: "cannot answer " + itoa(len(pts)) + " points: want a step that gives at most " + itoa(maxHistoryPoints)})
		return
	}
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = append(dst, `{"pool":`...)
		dst = jsonpath.AppendString(dst, name)
		dst = append(dst, `,"now":`...)
		dst = strconv.AppendFloat(dst, now.Seconds(), 'f', -1, 64)
		dst = append(dst, `,"resolution_s":`...)
		dst = strconv.AppendFloat(dst, res.Seconds(), 'f', -1, 64)
		dst = append(dst, `,"step_s":`...)
		dst = strconv.AppendFloat(dst, used.Seconds(), 'f', -1, 64)
		dst = append(dst, `,"points":[`...)
		for i := range pts {
			p := &pts[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"time":`...)
			dst = strconv.AppendFloat(dst, p.Time.Seconds(), 'f', -1, 64)
			dst = append(dst, `,"usage":`...)
			dst = strconv.AppendFloat(dst, round6(p.Usage), 'g', -1, 64)
			dst = append(dst, `,"fair_share":`...)
			dst = strconv.AppendFloat(dst, round6(p.FairShare), 'g', -1, 64)
			dst = append(dst, `,"demand":`...)
			dst = strconv.AppendFloat(dst, round6(p.Demand), 'g', -1, 64)
			dst = append(dst, `,"starvation":"`...)
			dst = append(dst, p.Starvation.String()...)
			dst = append(dst, `","below_fair_share":`...)
			dst = strconv.AppendBool(dst, p.BelowFairShare)
			dst = append(dst, `,"samples":`...)
			dst = strconv.AppendInt(dst, int64(p.Samples), 10)
			dst = append(dst, '}')
		}
		return append(dst, "]}"...)
	})
}

// round6 rounds a share to 6 significant digits (the history keeps about
// 3: half-precision floats).
func round6(v float64) float64 {
	if v == 0 {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return r
}

// appendFairness appends the members "fairness_error" and
// "fairness_error_integral" of GET /api/v1/orchid/pools.
func (s *Server) appendFairness(dst []byte) []byte {
	e, integral := s.core.FairnessError()
	dst = append(dst, `"fairness_error":`...)
	dst = strconv.AppendFloat(dst, round6(e), 'g', -1, 64)
	dst = append(dst, `,"fairness_error_integral":`...)
	return strconv.AppendFloat(dst, math.Round(integral*1000)/1000, 'f', -1, 64)
}
