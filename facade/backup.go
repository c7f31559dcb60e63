package facade

import (
	"bufio"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// Error codes of the service's state, as the API answers them.
const (
	// CodeStoreUnavailable answers every change once the store failed (503).
	CodeStoreUnavailable = server.CodeStoreUnavailable
	// CodeRecovering is /readyz's error code during the recovery window.
	CodeRecovering = server.CodeRecovering
)

// storeOK reports whether changes can be made; when the store failed it
// answers 503 store_unavailable.
func (s *Server) storeOK(ctx *fasthttp.RequestCtx) bool {
	if !s.core.StoreFailed() {
		return true
	}
	s.writeError(ctx, fasthttp.StatusServiceUnavailable, &wire.Error{Code: CodeStoreUnavailable,
		Message: "cannot change anything: the store failed and the server is stopping; retry on the restarted server"})
	return false
}

// serveBackup answers GET /api/v1/backup with a consistent copy of the
// store's file (one read transaction: changes go on meanwhile), to loopback
// clients only. A server without a store answers 409 not_supported.
func (s *Server) serveBackup(ctx *fasthttp.RequestCtx) {
	if s.tokens.Load() == nil && !ctx.RemoteIP().IsLoopback() {
		// With tokens, guard let only admins through.
		s.writeError(ctx, fasthttp.StatusForbidden, &wire.Error{Code: CodeForbidden,
			Message: "cannot serve a backup to " + ctx.RemoteIP().String() + ": without tokens, only to clients on the loopback interface"})
		return
	}
	w, ok := s.core.Store().(io.WriterTo)
	if !s.core.Durable() || !ok {
		s.writeError(ctx, fasthttp.StatusConflict, &wire.Error{Code: CodeNotSupported,
			Message: "cannot back up a server that keeps no store: it runs without --data-dir"})
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/octet-stream")
	ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+store.FileName+`"`)
	ctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
		if _, err := w.WriteTo(bw); err != nil {
			s.log.Error("a backup failed mid-way: the client has a truncated copy", "error", err)
		}
	})
	s.logChange(ctx, "backup served")
}
