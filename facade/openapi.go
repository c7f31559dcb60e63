package facade

import (
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/docs"
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
