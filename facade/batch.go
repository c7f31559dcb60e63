package facade

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/wire"
)

// batchScratch is the per-request state of a batch of heartbeats, pooled as
// hbScratch is: the decoded batch, the core's request and response, the
// output buffer.
type batchScratch struct {
	req  wire.HeartbeatBatch
	hb   schedule.NodeHeartbeat
	resp schedule.Response
	out  []byte
	tally
}

// maxPooledEntries bounds the entries a pooled batch scratch keeps (each
// keeps the storage of its heartbeat's slices).
const maxPooledEntries = 4096

// heartbeats handles POST /api/v1/heartbeats (docs/api.md#batched-heartbeats): a batch of node
// heartbeats, each processed exactly as its own POST
// /api/v1/nodes/{id}/heartbeat would be (the same decoding, the same core
// call, the same answer or error, the same metrics), in order, at one
// reading of the clock. A batch the decoder refuses as a whole (see
// wire.HeartbeatBatch) is a 400 that changes nothing; otherwise the answer
// is 200 with one response per entry, the heartbeat's answer or its error.
//
// A batch allocates nothing when its nodes repeat (known names and tags,
// scratch slices large enough) and no entry fails; see
// TestHeartbeatBatchAllocs.
func (s *Server) heartbeats(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	sc := s.batchPool.Get().(*batchScratch)
	defer s.putBatch(sc)
	if err := sc.req.Decode(ctx.PostBody(), s.names, s.core.MaxHeartbeatsPerBatch()); err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.mayHeartbeatBatch(ctx, &sc.req) {
		return
	}
	now := s.now()
	out := append(sc.out[:0], `{"responses":[`...)
	sc.tally = tally{}
	for i := range sc.req.Entries {
		e := &sc.req.Entries[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"node_id":`...)
		out = jsonpath.AppendString(out, e.Node)
		if e.Err == nil {
			e.Err = s.tagError(e.Heartbeat.Tags, i)
		}
		if e.Err == nil {
			h := &e.Heartbeat
			sc.hb = schedule.NodeHeartbeat{Node: e.Node, Limits: h.Limits, Tags: h.Tags,
				Allocations: h.Allocations, AllocationUsage: h.AllocationUsage, AllocationOrigins: h.AllocationOrigins,
				Unschedulable: h.Unschedulable}
			sc.resp.Reset()
			// A durable server's new nodes: this one and every later one
			// of the batch are registered together.
			err := s.core.BatchHeartbeat(now, &sc.hb, &sc.resp, sc.req.Entries[i:])
			if server.IsStoreUnavailable(err) {
				s.fail(ctx, err, "$")
				return
			}
			if err != nil {
				e.Err = s.entryError(ctx, err, i)
			} else {
				if h.Refused > 0 {
					s.logRefusals(e.Node, h)
				}
				out = append(out, ',')
				out = wire.AppendHeartbeatResponseMembers(out, &sc.resp)
				out = append(out, '}')
				sc.tally.add(&sc.resp)
				continue
			}
		}
		out = append(out, `,"error":`...)
		out = wire.AppendErrorObject(out, e.Err)
		out = append(out, '}')
		sc.tally.failed++
	}
	out = append(out, "]}\n"...)
	sc.out = out
	writeJSON(ctx, fasthttp.StatusOK, out)
	s.m.observeBatch(&sc.tally, len(sc.req.Entries), start)
}

// entryError is the error object of a batch entry that the core refused,
// with the path of its value in the batch ($.heartbeats[i]…), as
// errorBody makes it for a heartbeat of its own. It allocates; such
// errors are rare.
func (s *Server) entryError(ctx *fasthttp.RequestCtx, err error, i int) *wire.Error {
	status, e := errorBody(err, jsonpath.Index("$.heartbeats", i))
	if status == fasthttp.StatusInternalServerError {
		s.log.Error("request failed", "method", string(ctx.Method()), "path", string(ctx.Path()), "entry", i, "error", err)
	}
	return e
}

func (s *Server) putBatch(sc *batchScratch) {
	sc.hb = schedule.NodeHeartbeat{}
	if cap(sc.out) > maxPooledOutput {
		sc.out = nil
	}
	if cap(sc.req.Entries) > maxPooledEntries {
		sc.req.Entries = nil
	}
	s.batchPool.Put(sc)
}

// tally is what a batch's heartbeats decided, counted into the metrics
// once per batch.
type tally struct {
	started   int
	failed    int
	preempted [schedule.PreemptReasonCount]int
	aborted   [schedule.AbortReasonCount]int
}

func (t *tally) add(r *schedule.Response) {
	t.started += len(r.Start)
	for i := range r.Preempt {
		t.preempted[r.Preempt[i].Reason]++
	}
	for i := range r.Abort {
		t.aborted[r.Abort[i].Reason]++
	}
}
