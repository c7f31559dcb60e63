package facade

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/ui"
)

// serveUI answers GET and HEAD /ui/{file}: a file of the web dashboard
// (package ui, docs/ui.md), the page for /ui/. A name the dashboard has no
// file for is 404 not_found whatever the method. Every file goes with its
// ETag and Cache-Control: no-cache (the browser revalidates, and a
// matching If-None-Match is a 304 without a body), and with the
// dashboard's Content-Security-Policy.
func (s *Server) serveUI(ctx *fasthttp.RequestCtx, name []byte) {
	f, ok := ui.Lookup(string(name))
	if !ok {
		s.notFound(ctx)
		return
	}
	if !s.method(ctx, "GET") {
		return
	}
	h := &ctx.Response.Header
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.ETag)
	h.Set("Content-Security-Policy", ui.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if etagMatches(ctx.Request.Header.Peek("If-None-Match"), f.ETag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	h.SetContentType(f.ContentType)
	ctx.SetBody(f.Body)
}

// etagMatches reports whether an If-None-Match header names etag (or is
// "*"); weak validators match by their opaque part (RFC 9110 §13.1.2).
func etagMatches(header []byte, etag string) bool {
	for len(header) > 0 {
		var tag []byte
		tag, header, _ = bytes.Cut(header, []byte(","))
		tag = bytes.TrimSpace(tag)
		tag = bytes.TrimPrefix(tag, []byte("W/"))
		if string(tag) == etag || string(tag) == "*" {
			return true
		}
	}
	return false
}
