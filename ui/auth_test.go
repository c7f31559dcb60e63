package ui_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/wire"
)

// authServer is a facade.Server behind a bearer-token check of the API
// (the server has no authentication of its own yet): /api/ requests
// without "Authorization: Bearer <token>" answer 401. It records every
// request's URI and Authorization header.
type authServer struct {
	URL   string
	token string
	mu    sync.Mutex
	seen  []seenRequest
}

type seenRequest struct{ uri, auth string }

func startAuthServer(t *testing.T, token string) *authServer {
	t.Helper()
	sc, err := wire.DecodeServeConfig([]byte(demoConfig))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := facade.New(facade.Options{Config: sc, ManualUpdates: true,
		Clock: clock.Func(func() clock.Time { return clock.Time(clock.Second) }), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv.UpdateFairShare()
	a := &authServer{token: token}
	fs := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		auth := string(ctx.Request.Header.Peek("Authorization"))
		a.mu.Lock()
		a.seen = append(a.seen, seenRequest{uri: string(ctx.RequestURI()), auth: auth})
		a.mu.Unlock()
		if strings.HasPrefix(string(ctx.Path()), "/api/") && auth != "Bearer "+token {
			ctx.SetStatusCode(fasthttp.StatusUnauthorized)
			ctx.Response.Header.Set("WWW-Authenticate", "Bearer")
			ctx.SetContentType("application/json")
			ctx.SetBodyString(`{"error": {"code": "unauthorized", "message": "cannot serve the API without a valid bearer token"}}`)
			return
		}
		srv.Handle(ctx)
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.URL = "http://" + ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = fs.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = fs.ShutdownWithContext(ctx)
		<-done
	})
	return a
}

// TestBrowserAuth: behind a server that wants a token, the page asks for
// one when the API answers 401, says when a token is refused, keeps the
// token in the tab's session storage (never in a URL or local storage),
// sends it with every API request, and forgets it on request.
func TestBrowserAuth(t *testing.T) {
	needFull(t)
	const token = "s3cret-token"
	a := startAuthServer(t, token)
	b := newBrowser(t, 60*time.Second, "status of 401")
	b.open(a.URL, "/pools")
	form := `!document.getElementById('token-form').hidden`
	b.waitFor("the token form", form)
	if got := eval[string](b, `document.activeElement.id`); got != "token" {
		t.Errorf("the focus is on %q, want the token field", got)
	}
	checkA11y(t, b, "token form")
	b.screenshot("token")
	b.run("a wrong token", chromedp.SendKeys(chromedp.ID("token"), "wrong\n"))
	b.waitFor("the refusal", form+` && document.getElementById('token-why').innerText.includes('refused')`)
	b.run("the token", chromedp.SendKeys(chromedp.ID("token"), token+"\n"))
	b.waitFor("the pool tree", `document.querySelectorAll('.pool-row').length >= 4 && document.getElementById('token-form').hidden`)
	if got := eval[string](b, `sessionStorage.getItem('fairsched.token')`); got != token {
		t.Errorf("sessionStorage has %q", got)
	}
	if got := eval[bool](b, `Object.keys(localStorage).some(k => localStorage.getItem(k).includes('s3cret'))`); got {
		t.Errorf("the token is in local storage")
	}
	// The tab keeps it across a reload.
	b.run("reload", chromedp.Reload())
	b.waitFor("the pool tree again", `document.querySelectorAll('.pool-row').length >= 4`)
	if eval[bool](b, form) {
		t.Errorf("the token form is shown again after a reload")
	}
	if u := eval[string](b, `location.href`); strings.Contains(u, token) {
		t.Errorf("the token is in the URL %s", u)
	}
	a.mu.Lock()
	authorized := 0
	for _, r := range a.seen {
		if strings.Contains(r.uri, token) {
			t.Errorf("a request carried the token in its URL: %s", r.uri)
		}
		if r.auth == "Bearer "+token {
			authorized++
		}
	}
	a.mu.Unlock()
	if authorized == 0 {
		t.Errorf("no request carried the token")
	}
	b.click("#token-forget")
	b.waitFor("the token form after forgetting", form)
	if got := eval[string](b, `sessionStorage.getItem('fairsched.token') || ''`); got != "" {
		t.Errorf("sessionStorage still has %q", got)
	}
}
