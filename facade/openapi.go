package facade

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/docs"
	"github.com/fairsched/fairsched/internal/buildinfo"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/wire"
)

// serveOpenAPI answers GET /api/v1/openapi.json with the OpenAPI 3.1
// document of the API, docs/openapi.json as embedded in the binary. The
// bytes are shared and never written: the response refers to them without
// a copy.
func (s *Server) serveOpenAPI(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.SetBodyRaw(docs.OpenAPI)
}

// serveVersion answers GET /api/v1/version with the binary's version,
// commit and Go version.
func (s *Server) serveVersion(ctx *fasthttp.RequestCtx) {
	bi := buildinfo.Get()
	b := append([]byte(`{"version":`), jsonpath.AppendString(nil, bi.Version)...)
	b = append(append(b, `,"commit":`...), jsonpath.AppendString(nil, bi.Commit)...)
	b = append(append(b, `,"go_version":`...), jsonpath.AppendString(nil, bi.GoVersion)...)
	writeJSON(ctx, fasthttp.StatusOK, append(b, "}\n"...))
}

// serveHealth answers GET /healthz: 200 while the process serves, with its
// state ("ok", or "stopping" once Shutdown began), its role (a single
// server is "standalone"; a replica's leader says "leader" and its own
// advertised URL as "leader"), where it keeps its state ("memory", "bbolt") and
// the operations of the store it could not restore.
func (s *Server) serveHealth(ctx *fasthttp.RequestCtx) {
	state := "ok"
	rec := s.core.Recovery()
	if s.stopping.Load() {
		state = "stopping"
	} else if rec.Active {
		state = "recovering"
	}
	rs, replica := s.replicaStatus()
	b := append([]byte(`{"status":"`+state+`","role":`), jsonpath.AppendString(nil, rs.Role)...)
	if replica {
		b = append(b, `,"leader":`...)
		if rs.Leader == "" {
			b = append(b, "null"...)
		} else {
			b = jsonpath.AppendString(b, rs.Leader)
		}
	}
	b = append(append(b, `,"store":"`...), s.core.StoreKind()...)
	b = append(b, '"')
	if s.core.Durable() {
		b = append(b, `,"epoch":`...)
		b = strconv.AppendUint(b, s.core.Epoch(), 10)
	}
	if rec.Began {
		b = append(b, `,"recovery":{"active":`...)
		b = strconv.AppendBool(b, rec.Active)
		b = append(b, `,"expected_nodes":`...)
		b = strconv.AppendInt(b, int64(rec.ExpectedNodes), 10)
		b = append(b, `,"reported_nodes":`...)
		b = strconv.AppendInt(b, int64(rec.ReportedNodes), 10)
		b = append(b, `,"adopted_allocations":`...)
		b = strconv.AppendInt(b, rec.Adopted, 10)
		b = append(b, `,"aborted_allocations":`...)
		b = strconv.AppendInt(b, rec.Refused, 10)
		if rec.Active {
			b = append(b, `,"remaining_s":`...)
			b = strconv.AppendFloat(b, max(0, rec.Deadline.Sub(s.now()).Seconds()), 'f', 3, 64)
		}
		b = append(b, '}')
	}
	if q := s.core.Quarantined(); len(q) > 0 {
		b = append(b, `,"quarantined":[`...)
		for i, id := range q {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonpath.AppendString(b, id)
		}
		b = append(b, ']')
	}
	writeJSON(ctx, fasthttp.StatusOK, append(b, "}\n"...))
}

// serveReady answers GET /readyz: 200 when the server takes requests, 503
// shutting_down once Shutdown began (a load balancer then sends elsewhere).
func (s *Server) serveReady(ctx *fasthttp.RequestCtx) {
	if s.stopping.Load() {
		ctx.Response.Header.Set("Retry-After", "1")
		s.writeError(ctx, fasthttp.StatusServiceUnavailable, &wire.Error{Code: CodeShuttingDown,
			Message: "cannot take requests: the server is shutting down"})
		return
	}
	if s.core.Recovery().Active {
		ctx.Response.Header.Set("Retry-After", "1")
		s.writeError(ctx, fasthttp.StatusServiceUnavailable, &wire.Error{Code: CodeRecovering,
			Message: "not ready: the server restarted and is adopting the allocations its nodes report (recovery_timeout_s at most)"})
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, []byte(`{"status":"ready"}`+"\n"))
}
