package facade

import (
	"errors"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/wire"
)

// Error codes of the facade itself (the decoders' and the core's codes pass
// through unchanged).
const (
	CodeNotFound          = "not_found"
	CodeMethodNotAllowed  = "method_not_allowed"
	CodeBodyTooLarge      = "body_too_large"
	CodeBadRequest        = "bad_request"
	CodeOverloaded        = "overloaded"
	CodeInternal          = "internal_error"
	CodeUnknownNode       = "unknown_node"
	CodeNotSupported      = server.CodeNotSupported
	CodeShuttingDown      = "shutting_down"
	CodeForbidden         = "forbidden"
	CodeInvalidName       = tree.CodeInvalidName
	CodeDemandOverflow    = server.CodeDemandOverflow
	CodeSolveTooLarge     = "solve_too_large"
	CodeUnknownPool       = tree.CodeUnknownPool
	CodeUnknownOperation  = schedule.CodeUnknownOperation
	CodeTooManyOperations = limits.CodeTooManyOperations
)

// errorBody maps an error of a decoder or of the core (an *apierr.Error) to
// its status and body. An absolute path (a decoder's, a snapshot's) is the
// body's and the status 400. A relative one is the core's: prefix is the
// JSON path of the element the core validated ("$" for a request body) and
// the error's path is appended to it, except that "name" and "id" name the
// URL's resource and are not paths in the body; the code sets the status.
func errorBody(err error, prefix string) (int, *wire.Error) {
	var e *apierr.Error
	switch {
	case !errors.As(err, &e):
		return fasthttp.StatusInternalServerError, &wire.Error{Code: CodeInternal, Message: "cannot handle the request: " + err.Error()}
	case e.Absolute():
		switch e.Code {
		case server.CodeStoreUnavailable, server.CodeDemandOverflow, server.CodeNotSupported, schedule.CodeFinished:
			// The service's refusals with their paths in the request.
			return statusOf(e.Code, ""), e
		}
		return fasthttp.StatusBadRequest, e
	}
	return statusOf(e.Code, e.Path), &wire.Error{Code: e.Code, Message: e.Message, Path: fieldPath(prefix, e.Code, e.Path)}
}

// statusOf is the HTTP status of a core error code (docs/api.md#errors).
func statusOf(code, field string) int {
	switch code {
	case server.CodeStoreUnavailable:
		return fasthttp.StatusServiceUnavailable
	case server.CodeDemandOverflow, server.CodeNotSupported:
		return fasthttp.StatusConflict
	case tree.CodeUnknownPool, tree.CodeUnknownOperation:
		if field == "name" || field == "id" {
			return fasthttp.StatusNotFound // the resource of the URL
		}
		return fasthttp.StatusBadRequest // a reference in the body
	case tree.CodeDuplicateName, tree.CodePoolNotEmpty, schedule.CodeDuplicateID,
		schedule.CodeForeignAllocation, schedule.CodeFinished,
		limits.CodeTooManyOperations, limits.CodeTooManyRunningOperations:
		return fasthttp.StatusConflict
	}
	return fasthttp.StatusBadRequest
}

// fieldPath is the JSON path of a core error's field. "name" and "id" are
// the URL's resource (no path in the body) except for the errors about a
// name or id given in the body: duplicates and invalid names.
//
// For a request ("$"), the URL's resource is its path parameter,
// "$.url.name" (a pool) or "$.url.id" (an operation), and an error about no
// field is about the whole request, "$" (every error has a path).
func fieldPath(prefix, code, field string) string {
	inBody := code == tree.CodeDuplicateName || code == schedule.CodeDuplicateID || code == tree.CodeInvalidName
	if (field == "name" || field == "id") && !inBody {
		if prefix == "$" {
			return "$.url." + field
		}
		return prefix
	}
	if field == "" {
		return prefix
	}
	return apierr.Join(prefix, field)
}

// writeJSON sets a JSON answer.
func writeJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// writeError answers with the error body of docs/api.md#errors. An error without a
// path is about the whole request: its path is "$".
func (s *Server) writeError(ctx *fasthttp.RequestCtx, status int, e *wire.Error) {
	if e.Path == "" {
		e.Path = "$"
	}
	bp := s.getBuf()
	*bp = wire.AppendError((*bp)[:0], e)
	*bp = append(*bp, '\n')
	writeJSON(ctx, status, *bp)
	s.putBuf(bp)
	s.m.countError(status)
	s.logRefused(ctx, status, e)
}

// fail answers with the status and body of err (see errorBody).
func (s *Server) fail(ctx *fasthttp.RequestCtx, err error, prefix string) {
	if errors.Is(err, server.ErrRefused) {
		return // the guard answered
	}
	status, e := errorBody(err, prefix)
	if status == fasthttp.StatusInternalServerError {
		s.log.Error("request failed", "method", string(ctx.Method()), "path", string(ctx.Path()), "error", err)
	}
	s.writeError(ctx, status, e)
}

func (s *Server) notFound(ctx *fasthttp.RequestCtx) {
	s.writeError(ctx, fasthttp.StatusNotFound, &wire.Error{Code: CodeNotFound,
		Message: "cannot find " + string(ctx.Method()) + " " + string(ctx.Path()) + ": see docs/api.md (or GET /api/v1/openapi.json) for the endpoints"})
}

func (s *Server) methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) {
	ctx.Response.Header.Set("Allow", allow)
	s.writeError(ctx, fasthttp.StatusMethodNotAllowed, &wire.Error{Code: CodeMethodNotAllowed,
		Message: "cannot " + string(ctx.Method()) + " " + string(ctx.Path()) + ": want " + allow})
}

// expectContinue is fasthttp's ExpectHandler: a request that asks for
// "100 Continue" before its body gets it only when its token is known and
// its declared body within the limit; otherwise the final answer (401,
// 413) comes at once and the body is never read.
// ExpectContinue is expectContinue, for a front door that hands the
// server its requests (a replica's).
func (s *Server) ExpectContinue(ctx *fasthttp.RequestCtx) int { return s.expectContinue(ctx) }

func (s *Server) expectContinue(ctx *fasthttp.RequestCtx) int {
	if t := s.tokens.Load(); t != nil && t.Lookup(bearer(ctx)) == nil {
		s.unauthenticated(ctx)
		return fasthttp.StatusUnauthorized
	}
	if n := ctx.Request.Header.ContentLength(); n > s.opts.MaxBodySize {
		s.writeError(ctx, fasthttp.StatusRequestEntityTooLarge, &wire.Error{Code: CodeBodyTooLarge, Path: "$",
			Message: "cannot read a request body of " + itoa(n) + " bytes: the limit is " + byteCount(s.opts.MaxBodySize)})
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

// handleServerError answers fasthttp's own errors (a body over the limit, a
// malformed request line or header) in the JSON of docs/api.md#errors.
func (s *Server) handleServerError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		s.writeError(ctx, fasthttp.StatusRequestEntityTooLarge, &wire.Error{Code: CodeBodyTooLarge,
			Message: "cannot read a request body over " + byteCount(s.opts.MaxBodySize)})
	case errors.As(err, &small):
		s.writeError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, &wire.Error{Code: CodeBodyTooLarge,
			Message: "cannot read the request: its header is too large"})
	default:
		msg := strings.TrimPrefix(err.Error(), "fasthttp: ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: CodeBadRequest,
			Message: "cannot parse the HTTP request: " + msg})
	}
}

func byteCount(n int) string {
	switch {
	case n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}
