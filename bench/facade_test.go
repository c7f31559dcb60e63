package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/facade/facadetest"
	"github.com/fairsched/fairsched/wire"
)

// facadeNodes is the number of simulated nodes of BenchmarkFacadeHeartbeat.
const facadeNodes = 256

// BenchmarkFacadeHeartbeat is the HTTP heartbeat over loopback TCP from an
// in-process fasthttp client (bench/README.md#facade-heartbeat): GOMAXPROCS client goroutines
// (b.RunParallel) send the heartbeats of 256 nodes of 32 cpu, each
// reporting its 32 running allocations, round-robin.
//
//   - ceiling: a fasthttp server that routes the request, decodes the body
//     (wire.Heartbeat) and encodes an empty answer with the same encoder,
//     with no scheduling: the bound of the HTTP and JSON layers.
//   - scheduler: fairsched serve's facade with the real core; the cluster
//     is full, so each heartbeat settles its allocations and starts nothing
//     (the fair-share updater runs on the wall clock meanwhile).
//
// The headline is heartbeats/s; the target is scheduler ≥ 0.7 ×
// ceiling.
func BenchmarkFacadeHeartbeat(b *testing.B) {
	b.Run("ceiling", func(b *testing.B) {
		srv := &fasthttp.Server{Handler: ceilingHandler(), NoDefaultContentType: true}
		ln := listen(b)
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.ShutdownWithContext(ctx)
		}()
		bodies := make([]string, facadeNodes)
		for i := range bodies {
			var ids []string
			for j := range 32 {
				ids = append(ids, fmt.Sprint(uint64(i)<<32|uint64(j+1)))
			}
			bodies[i] = heartbeatBody(ids)
		}
		runHeartbeats(b, ln.Addr().String(), bodies)
	})
	b.Run("scheduler", func(b *testing.B) {
		ts := facadetest.Start(b, `{"pools": [{"name": "prod"}, {"name": "research"}]}`, facadetest.WallClock)
		srv, addr := ts.Server, strings.TrimPrefix(ts.URL, "http://")
		bodies := fillCluster(b, srv, addr)
		runHeartbeats(b, addr, bodies)
	})
}

func heartbeatBody(ids []string) string {
	var sb strings.Builder
	sb.WriteString(`{"resource_limits": {"user_slots": 32, "cpu": 32, "memory": 137438953472}, "tags": ["ssd", "rack-12"], "allocations": [`)
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id": %q, "state": "running"}`, id)
	}
	sb.WriteString("]}")
	return sb.String()
}

// ceilingHandler decodes and encodes like the facade's heartbeat, without
// the core.
func ceilingHandler() fasthttp.RequestHandler {
	type scratch struct {
		hb   wire.Heartbeat
		resp schedule.Response
		out  []byte
	}
	pool := sync.Pool{New: func() any { return new(scratch) }}
	names := wire.NewInterner(1 << 16)
	const prefix = "/api/v1/nodes/"
	return func(ctx *fasthttp.RequestCtx) {
		path := ctx.Path()
		if !bytes.HasPrefix(path, []byte(prefix)) || !bytes.HasSuffix(path, []byte("/heartbeat")) || string(ctx.Method()) != "POST" {
			ctx.SetStatusCode(404)
			return
		}
		_ = names.Intern(path[len(prefix) : len(path)-len("/heartbeat")])
		sc := pool.Get().(*scratch)
		defer pool.Put(sc)
		if err := sc.hb.Decode(ctx.PostBody(), names); err != nil {
			ctx.SetStatusCode(400)
			return
		}
		sc.resp.Reset()
		sc.out = wire.AppendHeartbeatResponse(sc.out[:0], &sc.resp)
		ctx.SetContentType("application/json")
		ctx.SetBody(sc.out)
	}
}

// poster returns a function that POSTs a JSON body to a path of hc's
// server and returns the answer's body, failing b on anything but a 2xx.
func poster(b *testing.B, hc *fasthttp.HostClient) func(path, body string) []byte {
	return func(path, body string) []byte {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.Header.SetContentType("application/json")
		req.SetRequestURI("http://" + hc.Addr + path)
		req.SetBodyString(body)
		if err := hc.DoTimeout(req, resp, time.Minute); err != nil || resp.StatusCode()/100 != 2 {
			b.Fatalf("POST %s: %v %d %.300s", path, err, resp.StatusCode(), resp.Body())
		}
		return append([]byte(nil), resp.Body()...)
	}
}

// fillCluster registers the nodes, starts an operation larger than the
// cluster and heartbeats until every node is full; it returns each node's
// steady heartbeat body.
func fillCluster(b *testing.B, srv *facade.Server, addr string) []string {
	post := poster(b, &fasthttp.HostClient{Addr: addr})
	running := make([][]string, facadeNodes)
	heartbeat := func(i int) int {
		var r struct {
			Start []struct{ ID string } `json:"allocations_to_start"`
		}
		if err := json.Unmarshal(post(fmt.Sprintf("/api/v1/nodes/node-%04d/heartbeat", i), heartbeatBody(running[i])), &r); err != nil {
			b.Fatal(err)
		}
		for _, s := range r.Start {
			running[i] = append(running[i], s.ID)
		}
		return len(r.Start)
	}
	for i := range running {
		heartbeat(i)
	}
	srv.UpdateFairShare()
	post("/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1000000, "resources": {"user_slots": 1, "cpu": 1, "memory": 1073741824}}]}`)
	srv.UpdateFairShare()
	for round := 0; round < 10; round++ {
		started := 0
		for i := range running {
			started += heartbeat(i)
		}
		if started == 0 {
			break
		}
	}
	bodies := make([]string, facadeNodes)
	for i := range bodies {
		if len(running[i]) == 0 {
			b.Fatalf("node %d runs nothing", i)
		}
		bodies[i] = heartbeatBody(running[i])
	}
	return bodies
}

func listen(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// runHeartbeats sends the bodies to the server at addr round-robin from
// GOMAXPROCS client goroutines; it reports heartbeats/s.
func runHeartbeats(b *testing.B, addr string, bodies []string) {
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: 1024}
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.Header.SetContentType("application/json")
		uris := make([]string, len(bodies))
		for i := range uris {
			uris[i] = fmt.Sprintf("http://%s/api/v1/nodes/node-%04d/heartbeat", addr, i)
		}
		for pb.Next() {
			i := int(next.Add(1)) % len(bodies)
			req.SetRequestURI(uris[i])
			req.SetBodyString(bodies[i])
			if err := hc.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != 200 {
				b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "heartbeats/s")
}

// BenchmarkHeartbeatBatch is the batched heartbeat (POST /api/v1/heartbeats,
// docs/api.md#node-heartbeats) through fairsched serve's facade with the real core, over
// loopback TCP from in-process fasthttp clients (bench/README.md#facade-heartbeat): 10,000
// nodes of 32 cpu, each running 21 allocations of 1.5 cpu (the standard
// load's ≈ 22), their steady heartbeats sent in batches of 64 consecutive
// nodes, in turn, by GOMAXPROCS client goroutines, each with its own
// connection and one batch in flight; the fair-share updater runs on the
// wall clock meanwhile. The bodies are built before the timer starts and
// the clients only check the status, so the time is the server's (and the
// loopback's).
//
// An op is one heartbeat: ns/op, B/op and allocs/op are per heartbeat
// (allocs/op is rounded down, so it shows 0 below one allocation per
// heartbeat), heartbeats/s the headline and allocs/batch the allocations
// of the whole process per batch (client and server), which must stay
// below a small constant: 0 allocations per heartbeat amortised.
func BenchmarkHeartbeatBatch(b *testing.B) {
	const nodes, batch = 10000, 64
	b.Run(fmt.Sprintf("nodes=%d/batch=%d", nodes, batch), func(b *testing.B) {
		ts := facadetest.Start(b, `{"pools": [{"name": "prod"}, {"name": "research"}]}`, facadetest.WallClock)
		srv, addr := ts.Server, strings.TrimPrefix(ts.URL, "http://")
		bodies := fillClusterBatched(b, srv, addr, nodes, batch)
		runBatches(b, addr, bodies, nodes)
	})
}

// batchNode is a node of BenchmarkHeartbeatBatch and its running
// allocations.
type batchNode struct {
	name    string
	running []string
}

func (n *batchNode) entry() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"node_id":%q,"resource_limits":{"user_slots":32,"cpu":32,"memory":137438953472},"tags":["rack-%d"],"allocations":[`,
		n.name, len(n.name)%100)
	for i, id := range n.running {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%q,"state":"running"}`, id)
	}
	sb.WriteString("]}")
	return sb.String()
}

// fillClusterBatched registers the nodes, starts an operation larger than
// the cluster and sends batches until every node is full; it returns the
// steady batch bodies, batch nodes each (the last fewer).
func fillClusterBatched(b *testing.B, srv *facade.Server, addr string, count, batch int) []string {
	post := poster(b, &fasthttp.HostClient{Addr: addr, ReadBufferSize: 64 << 10})
	ns := make([]*batchNode, count)
	for i := range ns {
		ns[i] = &batchNode{name: fmt.Sprintf("node-%05d", i)}
	}
	groups := func() [][]*batchNode {
		var gs [][]*batchNode
		for i := 0; i < len(ns); i += batch {
			gs = append(gs, ns[i:min(i+batch, len(ns))])
		}
		return gs
	}
	body := func(g []*batchNode) string {
		var sb strings.Builder
		sb.WriteString(`{"heartbeats":[`)
		for i, n := range g {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(n.entry())
		}
		sb.WriteString("]}")
		return sb.String()
	}
	round := func() int {
		started := 0
		for _, g := range groups() {
			var r struct {
				Responses []struct {
					NodeID string `json:"node_id"`
					Start  []struct {
						ID string `json:"id"`
					} `json:"allocations_to_start"`
					Error *struct{ Code, Message string } `json:"error"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(post("/api/v1/heartbeats", body(g)), &r); err != nil || len(r.Responses) != len(g) {
				b.Fatalf("batch answer: %v, %d responses for %d heartbeats", err, len(r.Responses), len(g))
			}
			for i, e := range r.Responses {
				if e.Error != nil || e.NodeID != g[i].name {
					b.Fatalf("response %d of node %s: %+v", i, g[i].name, e)
				}
				for _, s := range e.Start {
					g[i].running = append(g[i].running, s.ID)
				}
				started += len(e.Start)
			}
		}
		return started
	}
	round()
	srv.UpdateFairShare()
	post("/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1000000, "resources": {"user_slots": 1, "cpu": 1.5, "memory": 4294967296}}]}`)
	srv.UpdateFairShare()
	for r := 0; r < 10 && round() > 0; r++ {
	}
	var out []string
	for _, g := range groups() {
		for _, n := range g {
			if len(n.running) != 21 {
				b.Fatalf("node %s runs %d allocations, want 21", n.name, len(n.running))
			}
		}
		out = append(out, body(g))
	}
	return out
}

// runBatches sends the batch bodies to the server at addr in turn from
// GOMAXPROCS client goroutines until b.N heartbeats have been sent (up to
// a batch more per goroutine); it reports heartbeats/s and the process's
// allocations per batch.
func runBatches(b *testing.B, addr string, bodies []string, nodes int) {
	batch := strings.Count(bodies[0], `"node_id"`)
	size := func(i int) int64 {
		if i == len(bodies)-1 {
			return int64(nodes - batch*(len(bodies)-1))
		}
		return int64(batch)
	}
	var next, claimed, done, requests atomic.Int64
	var ms0, ms1 runtime.MemStats
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &fasthttp.HostClient{Addr: addr, MaxConns: 1, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod("POST")
			req.Header.SetContentType("application/json")
			req.SetRequestURI("http://" + addr + "/api/v1/heartbeats")
			for {
				i := int(next.Add(1)-1) % len(bodies)
				k := size(i)
				if claimed.Add(k)-k >= int64(b.N) {
					return
				}
				req.SetBodyString(bodies[i])
				if err := hc.Do(req, resp); err != nil {
					b.Error(err)
					return
				}
				if resp.StatusCode() != 200 {
					b.Errorf("status %d: %.300s", resp.StatusCode(), resp.Body())
					return
				}
				done.Add(k)
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	b.StopTimer()
	b.ReportMetric(float64(done.Load())/elapsed.Seconds(), "heartbeats/s")
	if r := requests.Load(); r > 0 {
		perBatch := float64(ms1.Mallocs-ms0.Mallocs) / float64(r)
		b.ReportMetric(perBatch, "allocs/batch")
		// Runs of a few batches (b.N = 1, the first) pay for the
		// connections and their buffers.
		if r >= 1000 && perBatch > maxBatchAllocs {
			b.Errorf("%.2f allocations per batch of %d heartbeats (client, server and the fair-share updater), want at most %d", perBatch, batch, maxBatchAllocs)
		}
	}
}

// maxBatchAllocs bounds the allocations of the whole process per batch in
// BenchmarkHeartbeatBatch: facade's TestHeartbeatBatchAllocs's budget per
// request (2) plus the fair-share updater's share; 0 per heartbeat
// amortised.
const maxBatchAllocs = 3
