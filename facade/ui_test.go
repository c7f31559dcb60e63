package facade

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/ui"
)

// TestUIRoutes: /ui redirects to /ui/; /ui/ is the dashboard's page and
// /ui/{file} its files, for GET and HEAD, with their content types, ETags,
// Cache-Control and the Content-Security-Policy; If-None-Match answers 304;
// an unknown file is 404 not_found and another method 405.
func TestUIRoutes(t *testing.T) {
	s := newDocServer(t)
	do := func(method, uri string, hdr ...string) *fasthttp.Response {
		var req fasthttp.Request
		req.Header.SetMethod(method)
		req.SetRequestURI(uri)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, nil, nil)
		s.Handle(&ctx)
		var resp fasthttp.Response
		ctx.Response.CopyTo(&resp)
		return &resp
	}
	if r := do("GET", "/ui"); r.StatusCode() != 301 || !strings.HasSuffix(string(r.Header.Peek("Location")), "/ui/") {
		t.Errorf("GET /ui: %d, Location %q; want 301 to /ui/", r.StatusCode(), r.Header.Peek("Location"))
	}
	for _, name := range append([]string{""}, ui.Names()...) {
		f, _ := ui.Lookup(name)
		for _, m := range []string{"GET", "HEAD"} {
			r := do(m, "/ui/"+name)
			if r.StatusCode() != 200 || string(r.Header.ContentType()) != f.ContentType {
				t.Errorf("%s /ui/%s: %d %q, want 200 %q", m, name, r.StatusCode(), r.Header.ContentType(), f.ContentType)
			}
			if string(r.Header.Peek("Content-Security-Policy")) != ui.ContentSecurityPolicy ||
				string(r.Header.Peek("Cache-Control")) != "no-cache" || string(r.Header.Peek("ETag")) != f.ETag ||
				string(r.Header.Peek("X-Content-Type-Options")) != "nosniff" {
				t.Errorf("%s /ui/%s: headers\n%s", m, name, r.Header.String())
			}
			if m == "GET" && string(r.Body()) != string(f.Body) {
				t.Errorf("GET /ui/%s: %d bytes, want the %d of the file", name, len(r.Body()), len(f.Body))
			}
		}
		for _, inm := range []string{f.ETag, `"x", ` + f.ETag, "W/" + f.ETag, "*"} {
			if r := do("GET", "/ui/"+name, "If-None-Match", inm); r.StatusCode() != 304 || len(r.Body()) != 0 {
				t.Errorf("GET /ui/%s with If-None-Match %s: %d, want 304", name, inm, r.StatusCode())
			}
		}
		if r := do("GET", "/ui/"+name, "If-None-Match", `"other"`); r.StatusCode() != 200 {
			t.Errorf("GET /ui/%s with another ETag: %d, want 200", name, r.StatusCode())
		}
	}
	for _, p := range []string{"/ui/nothing.js", "/ui/static/index.html", "/ui/index.html/x", "/uix"} {
		if r := do("GET", p); r.StatusCode() != 404 || errorCode(r.Body()) != CodeNotFound {
			t.Errorf("GET %s: %d %s, want 404 not_found", p, r.StatusCode(), r.Body())
		}
	}
	if r := do("POST", "/ui/"); r.StatusCode() != 405 || string(r.Header.Peek("Allow")) != "GET" {
		t.Errorf("POST /ui/: %d, Allow %q; want 405 and GET", r.StatusCode(), r.Header.Peek("Allow"))
	}
}
