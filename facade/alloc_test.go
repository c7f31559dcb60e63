//go:build !race && !invariants

package facade

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// maxHeartbeatAllocs is the allocation budget of one heartbeat request,
// client and server together, over an in-memory connection.
const maxHeartbeatAllocs = 2

// TestHeartbeatAllocs measures the allocations of a heartbeat request end
// to end — fasthttp client, in-memory connection, fasthttp server, routing,
// decoding, the core, the encoder — with testing.AllocsPerRun, for a node
// that reports its running allocations (steady), for one whose every
// heartbeat completes an allocation and receives a new one (churn) and for
// one that reports the usage of every allocation (usage).
func TestHeartbeatAllocs(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = ts.srv.HTTPServer().Serve(ln) }() // Shutdown closes ln
	hc := &fasthttp.HostClient{Addr: "fairsched", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 1}

	n := newNode("n1", 16, 64)
	ts.heartbeat(n)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1000000, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n)
	if len(n.runningIDs()) == 0 {
		t.Fatal("nothing runs")
	}

	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://fairsched/api/v1/nodes/n1/heartbeat")
	req.Header.SetContentType("application/json")
	do := func(body string) {
		req.SetBodyString(body)
		if err := hc.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
	}

	steady := n.body()
	for range 10 {
		if do(steady); !strings.Contains(string(resp.Body()), `"allocations_to_start":[]`) {
			t.Fatalf("a steady heartbeat started something: %s", resp.Body())
		}
	}
	allocs := testing.AllocsPerRun(200, func() { do(steady) })
	t.Logf("steady heartbeat reporting %d allocations: %v allocations per request", len(n.runningIDs()), allocs)
	if allocs > maxHeartbeatAllocs {
		t.Errorf("a steady heartbeat request allocates %v times, want at most %d", allocs, maxHeartbeatAllocs)
	}

	// Churn: every heartbeat completes the oldest allocation and gets one
	// new one, whose id is the node's next (ids count up per node). The
	// bodies are prepared before measuring.
	var ids []uint64
	for _, id := range n.runningIDs() {
		v, _ := strconv.ParseUint(id, 10, 64)
		ids = append(ids, v)
	}
	slices.Sort(ids)
	body := func(ids []uint64, done uint64) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"resource_limits": %s, "tags": ["ssd"], "allocations": [{"id": "%d", "state": "completed"}`, n.limits, done)
		for _, id := range ids {
			fmt.Fprintf(&b, `,{"id": "%d", "state": "running"}`, id)
		}
		b.WriteString("]}")
		return b.String()
	}
	const warm, rounds = 20, 200
	bodies := make([]string, 0, warm+rounds+1)
	for range cap(bodies) {
		done := ids[0]
		ids = append(ids[1:], ids[len(ids)-1]+1)
		bodies = append(bodies, body(ids[:len(ids)-1], done))
	}
	i := 0
	churn := func() {
		do(bodies[i])
		i++
	}
	for range warm {
		churn()
		if !strings.Contains(string(resp.Body()), `"operation_id"`) {
			t.Fatalf("a churn heartbeat started nothing: %s", resp.Body())
		}
	}
	allocs = testing.AllocsPerRun(rounds, churn)
	t.Logf("churn heartbeat (one completed, one started): %v allocations per request", allocs)
	ops := ts.must(200, "GET", "/api/v1/operations", "")["operations"].([]any)
	if done := num(obj(ops[0])["completed_job_count"]); done != warm+rounds+1 {
		t.Fatalf("%v jobs completed, want %d: the churn bodies went wrong", done, warm+rounds+1)
	}
	if allocs > maxHeartbeatAllocs {
		t.Errorf("a churn heartbeat request allocates %v times, want at most %d", allocs, maxHeartbeatAllocs)
	}

	// Usage: every running allocation reports its resource_usage
	// (docs/api.md#node-heartbeats), half of them half a core and half one and a half, swapping each
	// time, so that the node stays full.
	usageBody := func(flip int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"resource_limits": %s, "tags": ["ssd"], "allocations": [`, n.limits)
		for k, id := range ids {
			if k > 0 {
				b.WriteByte(',')
			}
			cpu := []string{"0.5", "1.5"}[(k+flip)%2]
			fmt.Fprintf(&b, `{"id": "%d", "state": "running", "resource_usage": {"cpu": %s, "memory": 1073741824}}`, id, cpu)
		}
		b.WriteString("]}")
		return b.String()
	}
	if len(ids)%2 != 0 {
		t.Fatalf("%d allocations run, want an even number", len(ids))
	}
	usageBodies := [2]string{usageBody(0), usageBody(1)}
	k := 0
	report := func() {
		do(usageBodies[k%2])
		k++
		if b := resp.Body(); !bytes.Contains(b, []byte(`"allocations_to_start":[]`)) || !bytes.Contains(b, []byte(`"allocations_to_abort":[]`)) {
			t.Fatalf("a usage heartbeat decided %s", b)
		}
	}
	for range warm {
		report()
	}
	allocs = testing.AllocsPerRun(rounds, report)
	t.Logf("usage heartbeat (%d allocations reporting usage): %v allocations per request", len(ids), allocs)
	if allocs > maxHeartbeatAllocs {
		t.Errorf("a usage heartbeat request allocates %v times, want at most %d", allocs, maxHeartbeatAllocs)
	}
}

// TestHeartbeatBatchAllocs measures the allocations of a batch of steady
// heartbeats end to end, as TestHeartbeatAllocs does for one: for batches
// of 16 and 64 nodes, each reporting its running allocations. The budget is
// per request, the same for any batch size: 0 per heartbeat amortised.
func TestHeartbeatBatchAllocs(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = ts.srv.HTTPServer().Serve(ln) }() // Shutdown closes ln
	hc := &fasthttp.HostClient{Addr: "fairsched", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 1}

	nodes := make([]*simNode, 64)
	var names []string
	for i := range nodes {
		nodes[i] = newNode(fmt.Sprintf("node-%02d", i), 8, 32)
		names = append(names, nodes[i].name)
	}
	round := func() {
		var bodies []string
		for _, n := range nodes {
			bodies = append(bodies, n.body())
		}
		for i, r := range ts.batch(batchOf(names, bodies)) {
			nodes[i].apply(r)
		}
	}
	round()
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1000000, "resources": {"cpu": 1, "memory": 1073741824}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	round()
	for _, n := range nodes {
		if len(n.runningIDs()) != 8 {
			t.Fatalf("%s runs %d allocations, want 8", n.name, len(n.runningIDs()))
		}
	}

	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://fairsched/api/v1/heartbeats")
	req.Header.SetContentType("application/json")
	for _, size := range []int{16, 64} {
		var bodies []string
		for _, n := range nodes[:size] {
			bodies = append(bodies, n.body())
		}
		body := batchOf(names[:size], bodies)
		do := func() {
			req.SetBodyString(body)
			if err := hc.Do(req, resp); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode() != 200 || bytes.Contains(resp.Body(), []byte(`"error"`)) || bytes.Contains(resp.Body(), []byte(`"operation_id"`)) {
				t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
			}
		}
		for range 10 {
			do()
		}
		allocs := testing.AllocsPerRun(100, do)
		t.Logf("a batch of %d steady heartbeats, 8 allocations each: %v allocations per request, %.3f per heartbeat", size, allocs, allocs/float64(size))
		if allocs > maxHeartbeatAllocs {
			t.Errorf("a batch of %d steady heartbeats allocates %v times, want at most %d per request", size, allocs, maxHeartbeatAllocs)
		}
	}
}
