package facade

import (
	"bytes"
	"net/http/pprof"
	"runtime/debug"
	"strconv"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"github.com/valyala/fasthttp/pprofhandler"

	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/wire"
)

// Handle is the Server's fasthttp.RequestHandler: it bounds the requests in
// flight (429 beyond Options.MaxInFlight), recovers panics into a 500 and
// routes the request.
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	if n := s.inFl.Add(1); n > int64(s.opts.MaxInFlight) {
		s.inFl.Add(-1)
		s.writeError(ctx, fasthttp.StatusTooManyRequests, &wire.Error{Code: CodeOverloaded,
			Message: "cannot take more than " + itoa(s.opts.MaxInFlight) + " requests at once: retry later"})
		return
	}
	defer s.inFl.Add(-1)
	defer s.recoverPanic(ctx)
	if h := s.panicHook.Load(); h != nil {
		(*h)(ctx.Path())
	}
	s.conns.Handling(ctx)
	if !s.guard(ctx) {
		return
	}
	if isChange(ctx) && !s.storeOK(ctx) {
		return
	}
	s.route(ctx)
}

// recoverPanic turns a panic of a handler into a 500 error body; the
// server goes on serving.
func (s *Server) recoverPanic(ctx *fasthttp.RequestCtx) {
	r := recover()
	if r == nil {
		return
	}
	s.log.Error("panic in a handler", "method", string(ctx.Method()), "path", string(ctx.Path()),
		"panic", r, "stack", string(debug.Stack()))
	s.m.panics.Inc()
	ctx.Response.Reset()
	s.writeError(ctx, fasthttp.StatusInternalServerError, &wire.Error{Code: CodeInternal,
		Message: "cannot handle the request: the server hit a bug (it is logged); the request may not have been applied"})
}

const apiPrefix = "/api/v1/"

var pprofIndex = fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Index)

// route dispatches by path: /api/v1/… to routeAPI, everything else to
// routeService. It allocates nothing for heartbeats.
func (s *Server) route(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	if rest, ok := bytes.CutPrefix(path, []byte(apiPrefix)); ok {
		if !s.routeAPI(ctx, rest) {
			s.notFound(ctx)
		}
		return
	}
	s.routeService(ctx, path)
}

// routeService serves the endpoints outside the API: /healthz, /readyz, /metrics, the
// web dashboard under /ui/ and, when enabled, /debug/pprof (to admins with
// tokens, to loopback clients without).
func (s *Server) routeService(ctx *fasthttp.RequestCtx, path []byte) {
	switch {
	case string(path) == "/ui":
		if s.method(ctx, "GET") {
			ctx.Redirect("/ui/", fasthttp.StatusMovedPermanently)
		}
	case bytes.HasPrefix(path, []byte("/ui/")):
		s.serveUI(ctx, path[len("/ui/"):])
	case string(path) == "/healthz":
		if s.method(ctx, "GET") {
			s.serveHealth(ctx)
		}
	case string(path) == "/readyz":
		if s.method(ctx, "GET") {
			s.serveReady(ctx)
		}
	case string(path) == "/metrics":
		if s.method(ctx, "GET") {
			s.serveMetrics(ctx)
		}
	case bytes.HasPrefix(path, []byte("/debug/pprof")) && s.opts.Pprof && (s.tokens.Load() != nil || ctx.RemoteIP().IsLoopback()):
		// With tokens, guard let only admins through.
		switch string(path) {
		case "/debug/pprof":
			ctx.Redirect("/debug/pprof/", fasthttp.StatusMovedPermanently)
		case "/debug/pprof/":
			// NB: pprofhandler answers 404 for paths that end in '/', the
			// index included; net/http/pprof serves it there.
			pprofIndex(ctx)
		default:
			pprofhandler.PprofHandler(ctx)
		}
	default:
		s.notFound(ctx)
	}
}

// routeAPI dispatches the path below /api/v1/ by its first segment and the
// method; it reports false for a path no endpoint has (a 404).
//
// NB: docs/openapi.json lists every route, and TestOpenAPIRoutes checks it
// against this file by probing the server with every path it can build, to
// a depth of four segments, from the string literals that routing compares
// against here (plus a placeholder and the empty segment). A route must
// therefore be recognised by comparing path segments with literals written
// in this file, never with strings computed elsewhere.
func (s *Server) routeAPI(ctx *fasthttp.RequestCtx, path []byte) bool {
	seg, rest := cut(path)
	switch string(seg) {
	case "nodes":
		// /api/v1/nodes, /api/v1/nodes/{id}, /api/v1/nodes/{id}/heartbeat
		id, rest := cut(rest)
		switch {
		case len(id) == 0 && len(rest) == 0:
			if s.method(ctx, "GET") {
				s.listNodes(ctx)
			}
		case len(id) > 0 && len(rest) == 0:
			if s.method(ctx, "GET") {
				s.getNode(ctx, string(id))
			}
		case len(id) > 0 && string(rest) == "heartbeat":
			if s.method(ctx, "POST") && s.mayHeartbeat(ctx, id) {
				s.heartbeat(ctx, id)
			}
		default:
			return false
		}
		return true
	case "heartbeats":
		// /api/v1/heartbeats: a batch (docs/api.md#batched-heartbeats)
		if len(rest) > 0 {
			return false
		}
		if s.method(ctx, "POST") {
			s.heartbeats(ctx)
		}
		return true
	case "pools":
		return s.routePools(ctx, rest)
	case "config":
		if len(rest) > 0 {
			return false
		}
		switch string(ctx.Method()) {
		case "GET":
			s.getConfig(ctx)
		case "PATCH":
			s.patchConfig(ctx)
		default:
			s.methodNotAllowed(ctx, "GET, PATCH")
		}
		return true
	case "operations":
		return s.routeOperations(ctx, rest)
	case "orchid":
		return s.routeOrchid(ctx, rest)
	case "solve":
		if len(rest) > 0 {
			return false
		}
		if s.method(ctx, "POST") {
			s.solve(ctx)
		}
		return true
	case "whatif":
		// /api/v1/whatif (docs/api.md#what-if)
		if len(rest) > 0 {
			return false
		}
		if s.method(ctx, "POST") {
			s.whatIf(ctx)
		}
		return true
	case "openapi.json":
		if len(rest) > 0 {
			return false
		}
		if s.method(ctx, "GET") {
			s.serveOpenAPI(ctx)
		}
		return true
	case "version":
		if len(rest) > 0 {
			return false
		}
		if s.method(ctx, "GET") {
			s.serveVersion(ctx)
		}
		return true
	case "backup":
		if len(rest) > 0 {
			return false
		}
		if s.method(ctx, "GET") {
			s.serveBackup(ctx)
		}
		return true
	}
	return false
}

// routePools serves /api/v1/pools, /api/v1/pools/{name},
// /api/v1/pools/{name}/explain and /api/v1/pools/{name}/history.
func (s *Server) routePools(ctx *fasthttp.RequestCtx, rest []byte) bool {
	if len(rest) == 0 {
		if s.method(ctx, "GET") {
			s.listPools(ctx)
		}
		return true
	}
	name, more := cut(rest)
	switch string(more) {
	case "":
	case "explain":
		if len(name) > 0 && s.method(ctx, "GET") {
			s.explainPool(ctx, string(name))
		}
		return len(name) > 0
	case "history":
		// /api/v1/pools/{name}/history (docs/api.md#pool-history)
		if len(name) > 0 && s.method(ctx, "GET") {
			s.poolHistory(ctx, string(name))
		}
		return len(name) > 0
	default:
		return false
	}
	switch string(ctx.Method()) {
	case "GET":
		s.getPool(ctx, string(name))
	case "PUT":
		s.putPool(ctx, string(name))
	case "PATCH":
		s.patchPool(ctx, string(name))
	case "DELETE":
		s.deletePool(ctx, string(name))
	default:
		s.methodNotAllowed(ctx, "GET, PUT, PATCH, DELETE")
	}
	return true
}

// routeOperations serves /api/v1/operations, /api/v1/operations/{id} and
// its complete and abort actions.
func (s *Server) routeOperations(ctx *fasthttp.RequestCtx, rest []byte) bool {
	if len(rest) == 0 {
		switch string(ctx.Method()) {
		case "GET":
			s.listOperations(ctx)
		case "POST":
			s.startOperation(ctx)
		default:
			s.methodNotAllowed(ctx, "GET, POST")
		}
		return true
	}
	id, action := cut(rest)
	switch string(action) {
	case "":
		switch string(ctx.Method()) {
		case "GET":
			s.getOperation(ctx, string(id), false)
		case "PATCH":
			s.patchOperation(ctx, string(id))
		default:
			s.methodNotAllowed(ctx, "GET, PATCH")
		}
		return true
	case "complete", "abort":
		if s.method(ctx, "POST") {
			s.finishOperation(ctx, string(id), string(action))
		}
		return true
	case "explain":
		if s.method(ctx, "GET") {
			s.explainOperation(ctx, string(id))
		}
		return true
	}
	return false
}

// routeOrchid serves /api/v1/orchid/pools[/{name}],
// /api/v1/orchid/operations/{id} and /api/v1/orchid/nodes/{name}.
func (s *Server) routeOrchid(ctx *fasthttp.RequestCtx, rest []byte) bool {
	kind, rest := cut(rest)
	name, more := cut(rest)
	if len(more) > 0 {
		return false
	}
	switch string(kind) {
	case "pools":
		if s.method(ctx, "GET") {
			if len(name) == 0 {
				s.orchidPools(ctx)
			} else {
				s.orchidPool(ctx, string(name))
			}
		}
		return true
	case "operations":
		if len(name) == 0 {
			return false
		}
		if s.method(ctx, "GET") {
			s.getOperation(ctx, string(name), true)
		}
		return true
	case "nodes":
		if len(name) == 0 {
			return false
		}
		if s.method(ctx, "GET") {
			s.orchidNode(ctx, string(name))
		}
		return true
	}
	return false
}

// method checks the request method; it answers 405 when it differs.
func (s *Server) method(ctx *fasthttp.RequestCtx, want string) bool {
	m := ctx.Method()
	if string(m) == want || want == "GET" && string(m) == "HEAD" {
		return true
	}
	s.methodNotAllowed(ctx, want)
	return false
}

// cut splits p at its first '/'.
func cut(p []byte) (seg, rest []byte) {
	if i := bytes.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, nil
}

// checkName validates a pool or operation name of the URL; param is the
// path of the error: "$.url.name", "$.url.id", or a query parameter.
func (s *Server) checkName(ctx *fasthttp.RequestCtx, name, what, param string, allowRoot bool) bool {
	if e := nameError(name, what, param, allowRoot); e != nil {
		s.writeError(ctx, fasthttp.StatusBadRequest, e)
		return false
	}
	return true
}

// nameError is checkName's check: nil for a valid name, else the 400's
// body.
func nameError(name, what, param string, allowRoot bool) *wire.Error {
	if tree.ValidName(name) || allowRoot && name == tree.RootName {
		return nil
	}
	return &wire.Error{Code: CodeInvalidName, Path: param,
		Message: "cannot use " + strconv.Quote(truncate(name, 64)) + " as " + what + ": want 1-128 characters of [A-Za-z0-9._:-]"}
}

// checkNodeName validates the node id of the URL ($.url.id).
func (s *Server) checkNodeName(ctx *fasthttp.RequestCtx, name string) bool {
	if tree.ValidNodeName(name) {
		return true
	}
	s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: CodeInvalidName, Path: "$.url.id",
		Message: "cannot use " + strconv.Quote(truncate(name, 64)) + " as a node id: want 1-253 characters of [A-Za-z0-9._:-]"})
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func (s *Server) getBuf() *[]byte { return s.bufPool.Get().(*[]byte) }
func (s *Server) putBuf(b *[]byte) {
	if cap(*b) > maxPooledOutput {
		return
	}
	*b = (*b)[:0]
	s.bufPool.Put(b)
}
