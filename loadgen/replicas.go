package loadgen

import (
	"encoding/json"
	"errors"
	"net"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/client"
)

// endpoint is one replica's heartbeat client and typed client.
type endpoint struct {
	addr string
	hc   *fasthttp.HostClient
	c    *client.Client
}

// notLeader marks a follower's answer (503 {"error": {"code": "not_leader", …}}).
var notLeader = []byte(`"not_leader"`)

// initReplicas makes the Target's endpoint (hc and c) the current one and
// lists the replicas' addresses.
func (h *httpDriver) initReplicas() {
	ep := &endpoint{addr: h.addr, hc: h.hc, c: h.c}
	h.eps = map[string]*endpoint{h.addr: ep}
	h.targets = []string{h.addr}
	for _, r := range h.cfg.Replicas {
		if addr, err := CheckTarget(r); err == nil && addr != h.addr {
			h.targets = append(h.targets, addr)
		}
	}
	h.cur.Store(ep)
}

// client is the typed client of the current replica.
func (h *httpDriver) client() *client.Client { return h.cur.Load().c }

// endpointOf returns the endpoint of addr, made on first use like the
// Target's.
func (h *httpDriver) endpointOf(addr string) *endpoint {
	h.epMu.Lock()
	defer h.epMu.Unlock()
	if ep := h.eps[addr]; ep != nil {
		return ep
	}
	t := h.hc // the Target's settings
	hc := &fasthttp.HostClient{Addr: addr, Name: t.Name, MaxConns: t.MaxConns, MaxConnWaitTimeout: t.MaxConnWaitTimeout,
		ReadTimeout: t.ReadTimeout, WriteTimeout: t.WriteTimeout, MaxIdleConnDuration: t.MaxIdleConnDuration,
		ReadBufferSize: t.ReadBufferSize, WriteBufferSize: t.WriteBufferSize, IsTLS: t.IsTLS, TLSConfig: t.TLSConfig}
	scheme := "http://"
	if hc.IsTLS {
		scheme = "https://"
	}
	opts := []client.Option{client.WithUserAgent("fairsched-loadgen"), client.WithHTTPClient(h.ctlHTTP)}
	if h.cfg.Token != "" {
		opts = append(opts, client.WithToken(h.cfg.Token))
	}
	c, err := client.New(scheme+addr, opts...)
	if err != nil {
		panic("BUG: a checked address is not a URL: " + err.Error())
	}
	ep := &endpoint{addr: addr, hc: hc, c: c}
	h.eps[addr] = ep
	return ep
}

// notLeader handles a follower's answer: the requests go to the leader it
// names from now on (when it names one on loopback). The heartbeat's error
// is of kind "not_leader".
func (h *httpDriver) notLeader(from *endpoint, what string, body []byte) *hbError {
	var e struct {
		Error struct {
			Leader *string `json:"leader"`
		} `json:"error"`
	}
	leader := "none yet"
	if json.Unmarshal(body, &e) == nil && e.Error.Leader != nil {
		leader = *e.Error.Leader
		if addr, err := CheckTarget(leader); err == nil && addr != from.addr {
			h.cur.CompareAndSwap(from, h.endpointOf(addr))
		}
	}
	return &hbError{kind: "not_leader", msg: what + ": " + from.addr + " is a follower; the leader: " + leader}
}

// unreachable moves the requests from ep to the next replica after a
// transport error, when there are replicas and ep is still the current
// one (a dead leader: a follower there names the new leader).
func (h *httpDriver) unreachable(ep *endpoint, err error) {
	if len(h.targets) < 2 {
		return
	}
	var ne net.Error
	var ce *client.Error
	if errors.As(err, &ce) || !(errors.As(err, &ne) || strings.Contains(err.Error(), "connection") || errors.Is(err, fasthttp.ErrConnectionClosed)) {
		return // the server answered
	}
	next := h.targets[0]
	for i, a := range h.targets {
		if a == ep.addr {
			next = h.targets[(i+1)%len(h.targets)]
		}
	}
	h.cur.CompareAndSwap(ep, h.endpointOf(next))
}
