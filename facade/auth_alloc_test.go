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
// pattern) adds no allocation to a steady heartbeat (style.md §4).
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
