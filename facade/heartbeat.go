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
// (docs/api.md#node-heartbeats), the hot path: decode into pooled scratch, run
// the service's Heartbeat, encode the
// decisions with the append encoder. A node whose heartbeats repeat (same
// tags, allocation slices large enough) costs no allocation here; see
// TestHeartbeatAllocs.
func (s *Server) heartbeat(ctx *fasthttp.RequestCtx, id []byte) {
	start := time.Now()
	if !tree.ValidNodeName(id) {
		s.m.heartbeatErrors.Inc()
		s.checkNodeName(ctx, string(id))
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
		Allocations: sc.req.Allocations, AllocationUsage: sc.req.AllocationUsage, AllocationOrigins: sc.req.AllocationOrigins,
		Unschedulable: sc.req.Unschedulable}
	sc.resp.Reset()
	now := s.now()
	if err := s.core.Heartbeat(now, &sc.hb, &sc.resp); err != nil {
		s.m.heartbeatErrors.Inc()
		s.fail(ctx, err, "$")
		return
	}
	if sc.req.Refused > 0 {
		s.logRefusals(sc.hb.Node, &sc.req)
	}
	sc.out = wire.AppendHeartbeatResponse(sc.out[:0], &sc.resp)
	writeJSON(ctx, fasthttp.StatusOK, sc.out)
	s.m.observeHeartbeat(&sc.resp, start)
}

// logRefusals logs the allocations a heartbeat reported refused, with
// their reasons (docs/api.md: a node refuses a start it cannot make).
func (s *Server) logRefusals(node string, h *wire.Heartbeat) {
	r := 0
	for i := range h.Allocations {
		if h.Allocations[i].State != schedule.AllocRefused {
			continue
		}
		for r < len(h.Reasons) && h.Reasons[r].Index < i {
			r++
		}
		reason := ""
		if r < len(h.Reasons) && h.Reasons[r].Index == i {
			reason = string(h.Reasons[r].Text)
		}
		s.log.Info("allocation refused by its node", "node", node, "allocation", h.Allocations[i].ID, "reason", reason)
	}
}

func (s *Server) putScratch(sc *hbScratch) {
	sc.hb = schedule.NodeHeartbeat{}
	if cap(sc.out) > maxPooledOutput {
		sc.out = nil
	}
	s.hbPool.Put(sc)
}
