package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/internal/etcdtest"
)

// node is one in-process replica of a test.
type node struct {
	t      *testing.T
	name   string
	r      *Replica
	c      *clientv3.Client
	url    string
	cancel context.CancelFunc
	ran    chan struct{} // closed when Run returned
	ln     net.Listener
}

// cluster is a test's etcd and prefix.
type cluster struct {
	t        *testing.T
	endpoint string
	prefix   string
	ttl      time.Duration
	admin    *clientv3.Client
}

func newCluster(t *testing.T, ttl time.Duration) *cluster {
	ep := etcdtest.Endpoint(t)
	cl := &cluster{t: t, endpoint: ep, prefix: etcdtest.Prefix(t), ttl: ttl}
	cl.admin = cl.dial()
	return cl
}

func (cl *cluster) dial() *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{cl.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(func() { c.Close() })
	return c
}

// start runs a replica; configure, when set, adjusts it before Run.
func (cl *cluster) start(name string, configure func(*Replica)) *node {
	t := cl.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, name: name, c: cl.dial(), url: "http://" + ln.Addr().String(), ran: make(chan struct{}), ln: ln}
	log := slog.New(slog.NewTextHandler(testWriter{t, name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r, err := New(Config{Client: n.c, Prefix: cl.prefix, AdvertiseURL: n.url, LeaseTTL: cl.ttl,
		Server: facade.Options{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	n.r = r
	if configure != nil {
		configure(r)
	}
	go r.Serve(ln)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.ran)
		r.Run(ctx)
	}()
	t.Cleanup(n.stop)
	return n
}

// stop hands over gracefully and stops serving.
func (n *node) stop() {
	n.cancel()
	<-n.ran
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.r.Shutdown(ctx)
}

// crash ends the replica as kill -9 would: it stops answering, its
// keep-alive stops, nothing is resigned or revoked. The lease expires
// after its TTL.
func (n *node) crash() {
	n.c.Close() // the keep-alive stops with the client; Run winds down on its own
	n.ln.Close()
	go n.r.http.Shutdown()
	n.cancel()
}

type testWriter struct {
	t    *testing.T
	name string
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(w.name + ": " + strings.TrimSpace(string(p)))
	return len(p), nil
}

// do sends a request and returns the status and body.
func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leader waits until exactly one of ns leads and returns it.
func leader(t *testing.T, d time.Duration, ns ...*node) *node {
	t.Helper()
	var l *node
	waitFor(t, "one leader", d, func() bool {
		l = nil
		for _, n := range ns {
			if n.r.Leading() != nil {
				if l != nil {
					t.Fatalf("two leaders at once: %s and %s", l.name, n.name)
				}
				l = n
			}
		}
		return l != nil
	})
	return l
}

func putPool(t *testing.T, base, name string) int {
	st, _ := do(t, "PUT", base+"/api/v1/pools/"+name, `{"weight": 1}`)
	return st
}

func poolInEtcd(t *testing.T, cl *cluster, name string) bool {
	resp, err := cl.admin.Get(context.Background(), cl.prefix+"/pools/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Kvs) > 0
}

// TestFollowerAnswersNotLeader: a follower answers every API request, a
// heartbeat included, 503 not_leader naming the leader, and /healthz with
// its role; the leader's /healthz names itself.
func TestFollowerAnswersNotLeader(t *testing.T) {
	cl := newCluster(t, time.Second)
	a := cl.start("a", nil)
	l := leader(t, 10*time.Second, a)
	b := cl.start("b", nil)
	waitFor(t, "b names the leader", 5*time.Second, func() bool { return b.r.Status().Leader == l.url })
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/v1/pools", ""},
		{"POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": 4}}`},
		{"POST", "/api/v1/heartbeats", `{"heartbeats": []}`},
		{"GET", "/readyz", ""},
	} {
		st, body := do(t, req.method, b.url+req.path, req.body)
		var e struct {
			Error struct {
				Code, Message string
				Leader        *string
			}
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || st != 503 || e.Error.Code != "not_leader" ||
			e.Error.Leader == nil || *e.Error.Leader != l.url {
			t.Errorf("%s %s on the follower: %d %s", req.method, req.path, st, body)
		}
	}
	if st, body := do(t, "GET", b.url+"/healthz", ""); st != 200 || !strings.Contains(body, `"role":"follower","leader":"`+l.url+`"`) {
		t.Errorf("the follower's /healthz: %d %s", st, body)
	}
	if st, body := do(t, "GET", l.url+"/healthz", ""); st != 200 || !strings.Contains(body, `"role":"leader","leader":"`+l.url+`","store":"etcd"`) {
		t.Errorf("the leader's /healthz: %d %s", st, body)
	}
	if st, body := do(t, "GET", l.url+"/readyz", ""); st != 200 {
		t.Errorf("the leader's /readyz: %d %s", st, body)
	}
	// /metrics on both says which one leads.
	for _, c := range []struct {
		url, want string
	}{{b.url, "fairsched_replica_leader 0"}, {l.url, "fairsched_replica_leader 1"}} {
		st, body := do(t, "GET", c.url+"/metrics", "")
		if st != 200 || !strings.Contains(body, "\n"+c.want+"\n") || !strings.Contains(body, "fairsched_build_info{") ||
			!strings.Contains(body, "# TYPE fairsched_replica_terms_total counter") {
			t.Errorf("/metrics of %s: %d, want %q and fairsched_build_info:\n%s", c.url, st, c.want, body)
		}
	}
}

// failover writes acknowledged changes to the leader of a and b, ends it
// with end, and checks that the other takes over with every acknowledged
// change. It returns the takeover time: from end to the first 2xx of the
// new leader.
func failover(t *testing.T, cl *cluster, ns []*node, end func(*node)) time.Duration {
	t.Helper()
	l := leader(t, 10*time.Second, ns...)
	for i := range 5 {
		if st := putPool(t, l.url, fmt.Sprintf("p%d-%s", i, l.name)); st/100 != 2 {
			t.Fatalf("PUT pool on the leader: %d", st)
		}
	}
	var others []*node
	for _, n := range ns {
		if n != l {
			others = append(others, n)
		}
	}
	start := time.Now() // NB: before end, which may take its time
	end(l)
	var nl *node
	waitFor(t, "a new leader serves", 10*cl.ttl+5*time.Second, func() bool {
		for _, n := range others {
			if st, _ := do(t, "GET", n.url+"/api/v1/pools", ""); st == 200 {
				nl = n
				return true
			}
		}
		return false
	})
	took := time.Since(start)
	st, body := do(t, "GET", nl.url+"/api/v1/pools", "")
	for i := range 5 {
		if name := fmt.Sprintf("p%d-%s", i, l.name); !strings.Contains(body, `"`+name+`"`) {
			t.Errorf("the acknowledged pool %s is missing on the new leader: %d %s", name, st, body)
		}
	}
	return took
}

// TestTakeoverAfterCrash: a leader that dies (no resign, no revoke) is
// replaced once its lease expires.
func TestTakeoverAfterCrash(t *testing.T) {
	cl := newCluster(t, time.Second)
	ns := []*node{cl.start("a", nil), cl.start("b", nil)}
	took := failover(t, cl, ns, (*node).crash)
	t.Logf("crash takeover at lease TTL %v: %v", cl.ttl, took)
	if took < cl.ttl/2 {
		t.Errorf("took over in %v, before the lease (TTL %v) could expire", took, cl.ttl)
	}
}

// TestTakeoverAfterWedge: a leader whose fair-share loop stops making
// progress stops its keep-alive and loses the lease; it stops serving.
func TestTakeoverAfterWedge(t *testing.T) {
	cl := newCluster(t, time.Second)
	var wedged atomic.Bool
	wedge := func(r *Replica) {
		r.progress = func(s *facade.Server) uint64 {
			if wedged.Load() {
				return 0
			}
			return s.FairShareUpdates()
		}
	}
	ns := []*node{cl.start("a", wedge), cl.start("b", wedge)}
	var old *node
	took := failover(t, cl, ns, func(l *node) {
		old = l
		wedged.Store(true)
	})
	t.Logf("wedge takeover at lease TTL %v: %v", cl.ttl, took)
	if old.r.Leading() != nil {
		t.Fatal("the wedged leader still serves")
	}
}

// TestGracefulHandOver: a leader whose Run ends resigns: the follower
// leads at once, not a lease TTL later.
func TestGracefulHandOver(t *testing.T) {
	cl := newCluster(t, 5*time.Second)
	ns := []*node{cl.start("a", nil), cl.start("b", nil)}
	took := failover(t, cl, ns, func(l *node) { l.cancel() })
	t.Logf("graceful hand-over: %v", took)
	if took >= cl.ttl {
		t.Errorf("the hand-over took %v, no faster than the lease TTL %v: the leader did not resign", took, cl.ttl)
	}
}

// TestDeposedWriteIsRefused: a leader whose lease is gone (another
// replica leads) cannot land a write, even one its Server handles after
// another replica took over: the request answers 503 and etcd does not
// have it.
func TestDeposedWriteIsRefused(t *testing.T) {
	cl := newCluster(t, time.Second)
	a := cl.start("a", nil)
	leader(t, 10*time.Second, a)
	srv := a.r.Leading()
	lease := a.r.term.Load().lease
	b := cl.start("b", nil)
	// The lease goes as if it expired: a's keep-alive learns it only at
	// its next refresh, and b's campaign returns at once.
	if _, err := cl.admin.Revoke(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	leader(t, 10*time.Second, b)
	// A request the old Server handles now (it was routed before a
	// noticed): its guarded write is refused.
	st, body := handleDirect(srv, "PUT", "/api/v1/pools/deposed", `{"weight": 1}`)
	if st != 503 || !strings.Contains(body, "store_unavailable") {
		t.Fatalf("a write to the deposed leader's Server: %d %s", st, body)
	}
	// Through a's front door: refused too (503 not_leader, or
	// store_unavailable if a has not noticed yet).
	if st, body := do(t, "PUT", a.url+"/api/v1/pools/deposed2", `{"weight": 1}`); st != 503 {
		t.Fatalf("a write to the deposed leader: %d %s", st, body)
	}
	waitFor(t, "a steps down", 5*time.Second, func() bool { return a.r.Leading() == nil })
	for _, p := range []string{"deposed", "deposed2"} {
		if poolInEtcd(t, cl, p) {
			t.Errorf("the deposed leader's write of pool %s is in etcd", p)
		}
	}
	if st := putPool(t, b.url, "after"); st/100 != 2 || !poolInEtcd(t, cl, "after") {
		t.Fatalf("the new leader's write: %d", st)
	}
}

// handleDirect runs one request through a Server's handler in memory.
func handleDirect(srv *facade.Server, method, path, body string) (int, string) {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.Header.SetHost("127.0.0.1")
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	srv.Handle(&ctx)
	return ctx.Response.StatusCode(), string(bytes.Clone(ctx.Response.Body()))
}

// TestExpiredCandidateNeverActs: a candidate whose lease ends while it
// campaigns, or just as its campaign is won, never serves with it: it
// campaigns again with a new session.
func TestExpiredCandidateNeverActs(t *testing.T) {
	t.Run("while waiting", func(t *testing.T) {
		cl := newCluster(t, time.Second)
		a := cl.start("a", nil)
		leader(t, 10*time.Second, a)
		var mu sync.Mutex
		var led []clientv3.LeaseID
		b := cl.start("b", func(r *Replica) {
			r.onLead = func(id clientv3.LeaseID) { mu.Lock(); led = append(led, id); mu.Unlock() }
		})
		// b's candidate key exists once it campaigns.
		var first clientv3.LeaseID
		waitFor(t, "b campaigns", 5*time.Second, func() bool {
			resp, err := cl.admin.Get(context.Background(), cl.prefix+"/leader/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range resp.Kvs {
				if string(kv.Value) == b.url {
					first = clientv3.LeaseID(kv.Lease)
					return true
				}
			}
			return false
		})
		if _, err := cl.admin.Revoke(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		a.stop()
		leader(t, 10*time.Second, b)
		mu.Lock()
		defer mu.Unlock()
		if len(led) != 1 || led[0] == first {
			t.Fatalf("b led with leases %x; its first, %x, expired while it campaigned", led, first)
		}
	})
	t.Run("as the campaign is won", func(t *testing.T) {
		cl := newCluster(t, time.Second)
		var mu sync.Mutex
		var led, revoked []clientv3.LeaseID
		b := cl.start("b", func(r *Replica) {
			r.afterCampaign = func(s *concurrency.Session) {
				mu.Lock()
				defer mu.Unlock()
				if len(revoked) < 2 { // the first two wins lose their lease at once
					revoked = append(revoked, s.Lease())
					cl.admin.Revoke(context.Background(), s.Lease())
				}
			}
			r.onLead = func(id clientv3.LeaseID) { mu.Lock(); led = append(led, id); mu.Unlock() }
		})
		leader(t, 10*time.Second, b)
		mu.Lock()
		defer mu.Unlock()
		if len(revoked) != 2 || len(led) != 1 || led[0] == revoked[0] || led[0] == revoked[1] {
			t.Fatalf("led with %x; the leases %x expired as their campaigns were won", led, revoked)
		}
		if b.r.Terms() != 1 {
			t.Fatalf("%d terms, want 1", b.r.Terms())
		}
	})
}

// TestHALoop (make test-ha; FAIRSCHED_HA_ROUNDS rounds, 3 in make test):
// three replicas, the leader crashed, wedged or stopped each round in turn,
// a new replica started in its place; every acknowledged change survives.
func TestHALoop(t *testing.T) {
	rounds := 3
	if s := os.Getenv("FAIRSCHED_HA_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	} else if testing.Short() {
		rounds = 1
	}
	cl := newCluster(t, time.Second)
	var wedged sync.Map // *Replica → true
	wedge := func(r *Replica) {
		r.progress = func(s *facade.Server) uint64 {
			if _, ok := wedged.Load(r); ok {
				return 0
			}
			return s.FairShareUpdates()
		}
	}
	ns := []*node{cl.start("r0", wedge), cl.start("r1", wedge), cl.start("r2", wedge)}
	next := 3
	for round := range rounds {
		var dead *node
		how := []string{"crash", "wedge", "stop"}[round%3]
		took := failover(t, cl, ns, func(l *node) {
			dead = l
			switch how {
			case "crash":
				l.crash()
			case "wedge":
				wedged.Store(l.r, true)
			case "stop":
				l.cancel()
			}
		})
		t.Logf("round %d: %s takeover %v", round, how, took)
		if how == "wedge" {
			waitFor(t, "the wedged leader steps down", 5*time.Second, func() bool { return dead.r.Leading() == nil })
			dead.crash()
		}
		for i, n := range ns {
			if n == dead {
				ns[i] = cl.start(fmt.Sprintf("r%d", next), wedge)
				next++
			}
		}
	}
}

// TestFrontDoorStopsWithSilentClients: a connection that sends nothing
// does not hold a replica's shutdown, and a follower answers a request
// that expects 100-continue with not_leader before reading its body.
func TestFrontDoorStopsWithSilentClients(t *testing.T) {
	cl := newCluster(t, time.Second)
	a := cl.start("a", nil)
	l := leader(t, 10*time.Second, a)
	b := cl.start("b", nil)
	waitFor(t, "b names the leader", 5*time.Second, func() bool { return b.r.Status().Leader == l.url })

	conn, err := net.Dial("tcp", strings.TrimPrefix(b.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/pools/x HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n", strings.TrimPrefix(b.url, "http://"))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 503") || !strings.Contains(string(buf[:n]), "not_leader") {
		t.Fatalf("a follower's answer to Expect: 100-continue: %q, %v; want 503 not_leader without the body", buf[:n], err)
	}

	silent, err := net.Dial("tcp", strings.TrimPrefix(b.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	b.cancel()
	<-b.ran
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := b.r.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a silent client: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Shutdown with a silent client took %v", took)
	}
}

// TestLargeCheckpointOnEtcd: a checkpoint with more records than one etcd
// transaction takes (128) is written in pieces: the leader keeps leading.
func TestLargeCheckpointOnEtcd(t *testing.T) {
	cl := newCluster(t, 2*time.Second)
	a := cl.start("a", nil)
	l := leader(t, 10*time.Second, a)
	if st, body := do(t, "PATCH", l.url+"/api/v1/config", `{"checkpoint_period_s": 0.1, "max_running_operation_count": 1000}`); st != 200 {
		t.Fatalf("PATCH config: %d %s", st, body)
	}
	const ops = 200
	for i := range ops {
		if st, body := do(t, "POST", l.url+"/api/v1/operations", fmt.Sprintf(`{"id": "o%d", "tasks": [{"name": "t", "job_count": 2, "resources": {"cpu": 1}}]}`, i)); st != 201 {
			t.Fatalf("start o%d: %d %s", i, st, body)
		}
	}
	hb := func(allocs string) map[string]any {
		st, body := do(t, "POST", l.url+"/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": 1000, "user_slots": 1000, "memory": 1099511627776}, "allocations": [`+allocs+`]}`)
		if st != 200 {
			t.Fatalf("heartbeat: %d %s", st, body)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	hb("")
	var started []any
	waitFor(t, "allocations start", 10*time.Second, func() bool {
		var reports []string
		for _, s := range started {
			reports = append(reports, fmt.Sprintf(`{"id": %q, "state": "running"}`, s.(map[string]any)["id"]))
		}
		for _, s := range hb(strings.Join(reports, ","))["allocations_to_start"].([]any) {
			started = append(started, s)
		}
		return len(started) >= ops
	})
	// One job of each operation completes.
	done := map[string]bool{}
	var reports []string
	for _, s := range started {
		m := s.(map[string]any)
		st := "running"
		if op := m["operation_id"].(string); !done[op] {
			done[op], st = true, "completed"
		}
		reports = append(reports, fmt.Sprintf(`{"id": %q, "state": %q}`, m["id"], st))
	}
	hb(strings.Join(reports, ","))
	waitFor(t, "the checkpoint is in etcd", 10*time.Second, func() bool {
		resp, err := cl.admin.Get(context.Background(), cl.prefix+"/checkpoints/op/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count >= ops
	})
	if a.r.Leading() == nil || a.r.Terms() != 1 {
		t.Fatalf("after a checkpoint of %d operations: leading %v, terms %d; want the first term still", ops, a.r.Leading() != nil, a.r.Terms())
	}
}
