package facade

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/wire"
)

// listNodes answers GET /api/v1/nodes: the registered nodes in name order,
// a page at a time ("limit", default 100, at most 1000; "cursor", the
// previous page's next_cursor).
func (s *Server) listNodes(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	limit := defaultPageSize
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > maxPageSize {
			s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "limit",
				Message: "cannot use limit " + strconv.Quote(truncate(string(v), 32)) + ": want a whole number in [1, 1000]"})
			return
		}
		limit = n
	}
	after := string(args.Peek("cursor"))
	if after != "" && !tree.ValidNodeName(after) {
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "cursor",
			Message: "cannot use cursor " + strconv.Quote(truncate(after, 32)) + ": want the next_cursor of a previous page"})
		return
	}
	nodes, more := s.sched.Nodes(nil, after, limit)
	now := s.now()
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = append(dst, `{"nodes":[`...)
		for i := range nodes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendNodeSummary(dst, &nodes[i], now)
		}
		dst = append(dst, `],"next_cursor":`...)
		if more {
			dst = strconv.AppendQuote(dst, nodes[len(nodes)-1].Name)
		} else {
			dst = append(dst, "null"...)
		}
		return append(dst, '}')
	})
}

// getNode answers GET /api/v1/nodes/{id}: one node without its allocations
// (GET /api/v1/orchid/nodes/{id} lists them).
func (s *Server) getNode(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkNodeName(ctx, name) {
		return
	}
	n, ok := s.sched.NodeSummary(name)
	if !ok {
		s.writeError(ctx, fasthttp.StatusNotFound, &wire.Error{Code: CodeUnknownNode, Path: "$.url.id",
			Message: "cannot find node " + strconv.Quote(name) + ": it has not sent a heartbeat, or was unregistered after node_heartbeat_timeout_s"})
		return
	}
	now := s.now()
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendNodeSummary(dst, &n, now) })
}
