package facade

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/wire"
)

// The control plane's audit log: one line per state change a request made
// at level INFO — who (caller: the token's user, "anonymous" on a server
// without tokens; remote: the client's address), what (the message and
// its attributes: the pool, the operation, the keys) and the result ("ok")
// — and one per refused change (result "refused", with the status and the
// code: a 401 or 403 too). Heartbeats, reads, solves and what-ifs change nothing an
// operator audits and are not logged (their counts and latencies are in
// the metrics). No token is ever logged.

// logChange logs a change the request ctx made; attrs say what.
func (s *Server) logChange(ctx *fasthttp.RequestCtx, msg string, attrs ...any) {
	if !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	s.log.Info(msg, append(attrs, "caller", callerName(ctx), "remote", ctx.RemoteAddr().String(), "result", "ok")...)
}

// logRefused logs a refused change (a 4xx or 5xx answer to a request that
// would have changed something).
func (s *Server) logRefused(ctx *fasthttp.RequestCtx, status int, e *wire.Error) {
	if !isChange(ctx) || !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := []any{"method", string(ctx.Method()), "path", string(ctx.Path()), "status", status,
		"code", e.Code, "message", e.Message}
	if e.Path != "" {
		attrs = append(attrs, "at", e.Path)
	}
	s.log.Info("request refused", append(attrs, "caller", callerName(ctx), "remote", ctx.RemoteAddr().String(), "result", "refused")...)
}

// isChange reports whether the request is one that changes the scheduler's
// configuration or operations: a write of the API, heartbeats, solves and
// what-ifs excepted.
func isChange(ctx *fasthttp.RequestCtx) bool {
	switch string(ctx.Method()) {
	case "GET", "HEAD", "OPTIONS":
		return false
	}
	p := ctx.Path()
	return bytes.HasPrefix(p, []byte(apiPrefix)) && !bytes.Contains(p, []byte("/heartbeat")) &&
		!bytes.Equal(p, []byte(apiPrefix+"solve")) && !bytes.Equal(p, []byte(apiPrefix+"whatif"))
}
