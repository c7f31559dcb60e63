package facade

import (
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/docs"
	"github.com/fairsched/fairsched/internal/buildinfo"
	"github.com/fairsched/fairsched/internal/jsonpath"
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
