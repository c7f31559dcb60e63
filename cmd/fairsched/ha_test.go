package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fairsched/fairsched/internal/etcdtest"
)

// haCluster is an etcd (embedded, or FAIRSCHED_ETCD's) and replicas of
// fairsched serve --etcd in child processes.
type haCluster struct {
	t        *testing.T
	endpoint string // host:port
	prefix   string
	ttl      time.Duration
	etcd     *clientv3.Client
}

func newHACluster(t *testing.T, ttl time.Duration) *haCluster {
	ep := etcdtest.Endpoint(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &haCluster{t: t, endpoint: strings.TrimPrefix(ep, "http://"), prefix: etcdtest.Prefix(t), ttl: ttl, etcd: c}
}

// freePort returns a loopback address that was free a moment ago: a
// replica must know the URL it advertises before it listens.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// replica starts one replica.
func (h *haCluster) replica() *child {
	h.t.Helper()
	addr := freePort(h.t)
	return startChildOn(h.t, addr, "--etcd", h.endpoint, "--etcd-prefix", h.prefix, "--advertise-url", "http://"+addr,
		"--etcd-lease-ttl", h.ttl.String())
}

// startChildOn is startChild on a given --listen address.
func startChildOn(t *testing.T, listen string, args ...string) *child {
	t.Helper()
	return startChildArgs(t, append([]string{"serve", "--listen", listen}, args...))
}

type health struct {
	Status, Role string
	Leader       *string
}

func getHealth(base string) (health, error) {
	var h health
	resp, err := (&http.Client{Timeout: time.Second}).Get(base + "/healthz")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h, err
}

// leaderOf waits until one of cs says it leads and every other names it.
func (h *haCluster) leaderOf(d time.Duration, cs ...*child) *child {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var l *child
		agree := true
		for _, c := range cs {
			st, err := getHealth(c.base)
			if err != nil {
				agree = false
				break
			}
			if st.Role == "leader" {
				l = c
			}
		}
		if l != nil && agree {
			for _, c := range cs {
				if st, _ := getHealth(c.base); c != l && (st.Leader == nil || *st.Leader != l.base) {
					agree = false
				}
			}
			if agree {
				return l
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("no leader agreed on within %v", d)
	return nil
}

func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// takeover ends the leader of cs with end and returns the survivor that
// serves next and how long it took from end to its first 2xx; every
// acknowledged pool is there.
func (h *haCluster) takeover(cs []*child, end func(*child)) (*child, *child, time.Duration) {
	t := h.t
	t.Helper()
	l := h.leaderOf(20*time.Second, cs...)
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("p%d-%d", i, time.Now().UnixNano())
		if st, body := send(t, "PUT", l.base+"/api/v1/pools/"+name, `{"weight": 2}`); st/100 != 2 {
			t.Fatalf("PUT a pool on the leader: %d %s", st, body)
		}
		names = append(names, name)
	}
	start := time.Now()
	end(l)
	deadline := start.Add(4*h.ttl + 10*time.Second)
	for {
		for _, c := range cs {
			if c == l {
				continue
			}
			if st, body := send(t, "GET", c.base+"/api/v1/pools", ""); st == 200 {
				took := time.Since(start)
				for _, n := range names {
					if !strings.Contains(body, `"`+n+`"`) {
						t.Errorf("the acknowledged pool %s is missing after the takeover: %s", n, body)
					}
				}
				return l, c, took
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica served within %v of the leader's end", deadline.Sub(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *haCluster) inEtcd(key string) bool {
	resp, err := h.etcd.Get(context.Background(), h.prefix+"/"+key)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(resp.Kvs) > 0
}

// TestReplicasKill9: three replicas; the leader killed with -9 is replaced
// within about a lease TTL, with every acknowledged change. FAIRSCHED_HA_ROUNDS
// repeats it (make test-ha).
func TestReplicasKill9(t *testing.T) {
	rounds := 1
	if s := os.Getenv("FAIRSCHED_HA_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	h := newHACluster(t, 2*time.Second)
	cs := []*child{h.replica(), h.replica(), h.replica()}
	for round := range rounds {
		dead, _, took := h.takeover(cs, func(l *child) { l.kill9(t) })
		t.Logf("round %d: kill -9 takeover at lease TTL %v: %v", round, h.ttl, took)
		for i, c := range cs {
			if c == dead {
				cs[i] = h.replica()
			}
		}
	}
}

// TestReplicasKill9UnderLoad: the crash test's load (changes from several
// clients, simulated nodes running what they are told) against the leader
// of three replicas, the leader killed with -9: the new leader has every
// acknowledged change, adopts what the nodes run (no abort of an
// acknowledged operation's allocation), hands out no allocation id twice
// and puts no node over its limits.
func TestReplicasKill9UnderLoad(t *testing.T) {
	h := newHACluster(t, 2*time.Second)
	cs := []*child{h.replica(), h.replica(), h.replica()}
	l := newLedger()
	rng := rand.New(rand.NewPCG(11, 11))
	_, nl, took := h.takeover(cs, func(leader *child) {
		l.loadThenKill(t, leader.base, 0, 50+rng.IntN(200), 10+rng.IntN(40), func() { leader.kill9(t) })
	})
	t.Logf("kill -9 of the leader under load: the next one serves after %v (lease TTL %v)", took, h.ttl)
	l.reportOnce(t, nl.base)
	l.check(t, nl.base)
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d operations acknowledged, %d allocations handed out, %d adopted by the new leader", len(l.ops), len(l.allocIDs), l.adopted)
	if l.adopted == 0 {
		t.Error("the new leader adopted no allocation: the test proves nothing about adoption")
	}
}

// TestReplicasPause: a leader stopped with SIGSTOP loses its lease and is
// replaced; when it runs again, a write it was sent while stopped is
// refused (503) and is not in etcd, and it follows.
func TestReplicasPause(t *testing.T) {
	h := newHACluster(t, 2*time.Second)
	cs := []*child{h.replica(), h.replica()}
	var paused *child
	_, nl, took := h.takeover(cs, func(l *child) {
		paused = l
		if err := l.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("SIGSTOP takeover at lease TTL %v: %v", h.ttl, took)
	// The write reaches the stopped process's socket before it runs again:
	// the kernel completes the connection and takes the request's bytes,
	// and the answer is read after SIGCONT.
	c, err := net.Dial("tcp", strings.TrimPrefix(paused.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	const body = `{"weight": 1}`
	if _, err := io.WriteString(c, "PUT /api/v1/pools/from-the-paused HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a write to the deposed leader: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := strconv.Itoa(resp.StatusCode) + " " + string(b)
	if !strings.HasPrefix(got, "503 ") {
		t.Fatalf("a write to the deposed leader: %s", got)
	}
	t.Logf("the deposed leader answered: %s", got)
	if h.inEtcd("pools/from-the-paused") {
		t.Fatal("the deposed leader's write is in etcd")
	}
	if l := h.leaderOf(10*time.Second, cs...); l != nl {
		t.Fatalf("the resumed replica leads again")
	}
}

// TestReplicasSIGTERM: a leader stopped with SIGTERM hands over: the next
// leader serves within milliseconds, not a lease TTL.
func TestReplicasSIGTERM(t *testing.T) {
	h := newHACluster(t, 5*time.Second)
	cs := []*child{h.replica(), h.replica()}
	_, _, took := h.takeover(cs, func(l *child) {
		if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("graceful hand-over (SIGTERM): %v", took)
	if took >= h.ttl {
		t.Fatalf("the hand-over took %v, no faster than the lease TTL %v", took, h.ttl)
	}
}

func TestServeHAFlags(t *testing.T) {
	f := func(want string, args ...string) {
		t.Helper()
		var stdout, stderr strings.Builder
		code := serve(context.Background(), args, &stdout, &stderr, serveHooks{})
		if code != 2 || !strings.Contains(stderr.String(), want) {
			t.Errorf("serve %q: exit %d, stderr %q; want exit 2 and %q", args, code, stderr.String(), want)
		}
	}
	f("--etcd-prefix without --etcd", "--etcd-prefix", "/fairsched/x")
	f("--advertise-url without --etcd", "--advertise-url", "http://127.0.0.1:1")
	f("--etcd-lease-ttl without --etcd", "--etcd-lease-ttl", "3s")
	ha := []string{"--etcd", "127.0.0.1:2379", "--etcd-prefix", "/fairsched/x", "--advertise-url", "http://127.0.0.1:1"}
	f("--data-dir with --etcd", append(ha, "--data-dir", t.TempDir())...)
	f(`--etcd endpoint "nohost"`, "--etcd", "nohost", "--etcd-prefix", "/p", "--advertise-url", "http://a:1")
	f(`--etcd "a:1,"`, "--etcd", "a:1,", "--etcd-prefix", "/p", "--advertise-url", "http://a:1")
	f("without --etcd-prefix", "--etcd", "a:1", "--advertise-url", "http://a:1")
	f(`--etcd-prefix "fairsched"`, "--etcd", "a:1", "--etcd-prefix", "fairsched", "--advertise-url", "http://a:1")
	f(`--etcd-prefix "/fairsched/"`, "--etcd", "a:1", "--etcd-prefix", "/fairsched/", "--advertise-url", "http://a:1")
	f("without --advertise-url", "--etcd", "a:1", "--etcd-prefix", "/p")
	f(`--advertise-url "a:1"`, "--etcd", "a:1", "--etcd-prefix", "/p", "--advertise-url", "a:1")
	f(`--advertise-url "http://a:1/api"`, "--etcd", "a:1", "--etcd-prefix", "/p", "--advertise-url", "http://a:1/api")
	f("--etcd-lease-ttl 1.5s", append(ha, "--etcd-lease-ttl", "1.5s")...)
	f("--etcd-lease-ttl 0s", append(ha, "--etcd-lease-ttl", "0s")...)
}
