package facade

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/wire"
)

// hbScratch is the per-request state of a heartbeat, pooled (the hot path
// allocates nothing):
// the decoded request, the core's request and response, the output buffer.
// Nothing in it refers to the fasthttp request after the handler returns.
type hbScratch struct {
	req  wire.Heartbeat
	hb   schedule.NodeHeartbeat
	resp schedule.Response
	out  []byte
}

// maxPooledOutput bounds the output buffer a pooled scratch keeps.
const maxPooledOutput = 1 << 20

// heartbeat handles POST /api/v1/nodes/{id}/heartbeat
// (docs/api.md#heartbeats), the hot path: decode into pooled scratch, run
// the service's Heartbeat, encode the
// decisions with the append encoder. A node whose heartbeats repeat (same
// tags, allocation slices large enough) costs no allocation here; see
// TestHeartbeatAllocs.
func (s *Server) heartbeat(ctx *fasthttp.RequestCtx, id []byte) {
	start := time.Now()
	if !tree.ValidName(id) {
		s.m.heartbeatErrors.Inc()
		s.checkName(ctx, string(id), "a node id", "$.url.id", false)
		return
	}
	sc := s.hbPool.Get().(*hbScratch)
	defer s.putScratch(sc)
	if err := sc.req.Decode(ctx.PostBody(), s.names); err != nil {
		s.m.heartbeatErrors.Inc()
		s.fail(ctx, err, "$")
		return
	}
	if e := s.tagError(sc.req.Tags, -1); e != nil {
		s.m.heartbeatErrors.Inc()
		s.writeError(ctx, fasthttp.StatusBadRequest, e)
		return
	}
	sc.hb = schedule.NodeHeartbeat{Node: s.names.Intern(id), Limits: sc.req.Limits, Tags: sc.req.Tags,
		Allocations: sc.req.Allocations, AllocationUsage: sc.req.AllocationUsage, AllocationOrigins: sc.req.AllocationOrigins}
	sc.resp.Reset()
	now := s.now()
	if err := s.core.Heartbeat(now, &sc.hb, &sc.resp); err != nil {
		s.m.heartbeatErrors.Inc()
		s.fail(ctx, err, "$")
		return
	}
	sc.out = wire.AppendHeartbeatResponse(sc.out[:0], &sc.resp)
	writeJSON(ctx, fasthttp.StatusOK, sc.out)
	s.m.observeHeartbeat(&sc.resp, start)
}

func (s *Server) putScratch(sc *hbScratch) {
	sc.hb = schedule.NodeHeartbeat{}
	if cap(sc.out) > maxPooledOutput {
		sc.out = nil
	}
	s.hbPool.Put(sc)
}
