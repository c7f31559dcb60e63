//go:build !race && !invariants

package facade

import (
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// TestHeartbeatAllocsWithTokens: the token check (hash, lookup, the node's
// pattern) adds no allocation to a steady heartbeat (the hot path allocates nothing once warm).
func TestHeartbeatAllocsWithTokens(t *testing.T) {
	ts := startServer(t, twoPools, func(o *Options) { o.Tokens = mustTokens(t, testTokens) })
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = ts.srv.HTTPServer().Serve(ln) }() // Shutdown closes ln
	hc := &fasthttp.HostClient{Addr: "fairsched", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 1}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://fairsched/api/v1/nodes/n-1/heartbeat")
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.SetBodyString(`{"resource_limits": {"user_slots": 4, "cpu": 4, "memory": 4294967296}, "tags": ["ssd"]}`)
	do := func() {
		if err := hc.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != 200 || !strings.Contains(string(resp.Body()), `"allocations_to_start":[]`) {
			t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
	}
	for range 10 {
		do()
	}
	if allocs := testing.AllocsPerRun(200, do); allocs > maxHeartbeatAllocs {
		t.Errorf("a steady heartbeat with a node token allocates %v times, want at most %d", allocs, maxHeartbeatAllocs)
	}
}

// fakeConn is a net.Conn of a TCP connection to 127.0.0.1:8080.
type fakeConn struct{ net.Conn }

var (
	fakeLocal  = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	fakeRemote = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
)

func (fakeConn) LocalAddr() net.Addr  { return fakeLocal }
func (fakeConn) RemoteAddr() net.Addr { return fakeRemote }

// TestGuardAllocs: the checks every request passes (token, Host, origin,
// content type, roles) allocate nothing on a TCP connection.
func TestGuardAllocs(t *testing.T) {
	ts := startServer(t, "", func(o *Options) {
		o.Tokens = mustTokens(t, testTokens)
		o.ListenHost, o.AllowedHosts = "127.0.0.1", []string{"sched.example.com", "*.corp.example"}
	})
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "sched.example.com", "a.corp.example"} {
		var ctx fasthttp.RequestCtx
		ctx.Init2(fakeConn{}, nil, false)
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/api/v1/nodes/n-1/heartbeat")
		ctx.Request.Header.SetHost(host)
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set("Authorization", "Bearer "+agentToken)
		ctx.Request.SetBodyString(`{"resource_limits": {}}`)
		if !ts.srv.guard(&ctx) {
			t.Fatalf("Host %s refused: %s", host, ctx.Response.Body())
		}
		if n := testing.AllocsPerRun(100, func() { ts.srv.guard(&ctx) }); n != 0 {
			t.Errorf("Host %s: guard allocates %v times", host, n)
		}
	}
}
