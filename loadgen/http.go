package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// httpDriver plays the workload against a server over loopback HTTP.
type httpDriver struct {
	cfg  *Config
	w    *Workload
	addr string
	// hc carries the heartbeats: one connection per driver goroutine, or
	// pc with Config.Pipeline > 0. With Config.Replicas, hc and c are those
	// of cur, the replica the heartbeats go to (replicas.go).
	hc *fasthttp.HostClient
	pc *fasthttp.PipelineClient
	// ctl carries /metrics and pprof; c, the typed client, the setup and
	// the operation starts.
	ctl     *fasthttp.HostClient
	c       *client.Client
	ctlHTTP *http.Client
	// The replicas: cur is where requests go now, targets the addresses
	// of Target and Replicas in order, eps every endpoint made so far.
	cur     atomic.Pointer[endpoint]
	targets []string
	epMu    sync.Mutex
	eps     map[string]*endpoint
}

func newHTTPDriver(cfg *Config, w *Workload, addr string) *httpDriver {
	h := &httpDriver{
		cfg:  cfg,
		w:    w,
		addr: addr,
		hc: &fasthttp.HostClient{
			Addr:                addr,
			Name:                "fairsched-loadgen",
			MaxConns:            cfg.Connections,
			MaxConnWaitTimeout:  5 * time.Second,
			ReadTimeout:         10 * time.Second,
			WriteTimeout:        10 * time.Second,
			MaxIdleConnDuration: time.Minute,
			ReadBufferSize:      16 << 10,
			WriteBufferSize:     16 << 10,
		},
		ctl: &fasthttp.HostClient{
			Addr:               addr,
			Name:               "fairsched-loadgen",
			MaxConns:           8,
			MaxConnWaitTimeout: 10 * time.Second,
			ReadTimeout:        5 * time.Minute, // pprof captures take their seconds
			WriteTimeout:       10 * time.Second,
		},
	}
	if strings.HasPrefix(cfg.Target, "https://") {
		h.hc.IsTLS, h.hc.TLSConfig = true, cfg.TLS
		h.ctl.IsTLS, h.ctl.TLSConfig = true, cfg.TLS
	}
	scheme := "http://"
	h.ctlHTTP = &http.Client{Timeout: 30 * time.Second}
	if h.hc.IsTLS {
		scheme = "https://"
		h.ctlHTTP.Transport = &http.Transport{TLSClientConfig: cfg.TLS}
	}
	opts := []client.Option{client.WithUserAgent("fairsched-loadgen"), client.WithHTTPClient(h.ctlHTTP)}
	if cfg.Token != "" {
		opts = append(opts, client.WithToken(cfg.Token))
	}
	c, err := client.New(scheme+addr, opts...)
	if err != nil {
		panic("BUG: the checked target is not a URL: " + err.Error())
	}
	h.c = c
	h.initReplicas()
	if cfg.Pipeline > 0 {
		h.pc = &fasthttp.PipelineClient{
			Addr:     addr,
			Name:     "fairsched-loadgen",
			MaxConns: cfg.Pipeline,
			// The client has no Close: its connections end after
			// MaxIdleConnDuration (10 s) without requests.
			MaxPendingRequests: cfg.Connections, // never the bound: one request per driver goroutine
			MaxBatchDelay:      cfg.PipelineDelay,
			ReadTimeout:        10 * time.Second,
			WriteTimeout:       10 * time.Second,
			ReadBufferSize:     64 << 10,
			WriteBufferSize:    64 << 10,
			IsTLS:              h.hc.IsTLS,
			TLSConfig:          cfg.TLS,
		}
	}
	return h
}

// do sends one control request and returns the status and a copy of the
// body.
func (h *httpDriver) do(method, path string, body []byte, timeout time.Duration) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	scheme := "http://"
	if h.ctl.IsTLS {
		scheme = "https://"
	}
	req.SetRequestURI(scheme + h.addr + path)
	if h.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.cfg.Token)
	}
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	if err := h.ctl.DoTimeout(req, resp, timeout); err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// setup waits for the server, checks that no earlier load's operations
// still run there (or aborts them with Config.Reset), and creates the
// workload's pools, through the typed client.
func (h *httpDriver) setup(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.client().Health(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("loadgen: cannot reach the server at %s: %w", h.cfg.Target, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := h.leftovers(ctx); err != nil {
		return err
	}
	var b []byte
	for i := range h.w.Pools {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := &h.w.Pools[i]
		b = wire.AppendPool(b[:0], p.Name, p.Parent, &p.Config)
		var pool client.Pool
		if err := json.Unmarshal(b, &pool); err != nil {
			return fmt.Errorf("loadgen: pool %s: %w", p.Name, err)
		}
		if _, _, err := h.client().PutPool(ctx, p.Name, pool); err != nil {
			return fmt.Errorf("loadgen: cannot create pool %s: %w", p.Name, err)
		}
	}
	return nil
}

// leftovers finds the running and pending operations an earlier load left
// (their ids start with "lg"): they would compete with this run's and start
// its nodes' capacity for themselves. With Config.Reset it aborts them;
// without, it refuses to run.
func (h *httpDriver) leftovers(ctx context.Context) error {
	var ids []string
	for _, state := range []string{"running", "pending"} {
		for op, err := range h.client().Operations(ctx, client.OperationFilter{State: state, Limit: 1000}) {
			if err != nil {
				return fmt.Errorf("loadgen: cannot list the server's operations: %w", err)
			}
			if strings.HasPrefix(op.ID, "lg") {
				ids = append(ids, op.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if !h.cfg.Reset {
		return fmt.Errorf("loadgen: the server still holds %d running or pending operations of an earlier load (%s, …): "+
			"they would take this run's capacity; rerun with --reset to abort them, or restart the server", len(ids), ids[0])
	}
	for _, id := range ids {
		if _, err := h.client().AbortOperation(ctx, id); err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("loadgen: --reset: cannot abort %s: %w", id, err)
		}
	}
	if h.cfg.Progress != nil {
		h.cfg.Progress(fmt.Sprintf("loadgen: --reset aborted %d operations of an earlier load", len(ids)))
	}
	return nil
}

func (h *httpDriver) startOperation(spec *schedule.OperationSpec) (bool, error) {
	var op client.OperationSpec
	if err := json.Unmarshal(AppendStartOperation(nil, spec), &op); err != nil {
		return false, fmt.Errorf("POST /api/v1/operations %s: %w", spec.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep := h.cur.Load()
	st, err := ep.c.StartOperation(ctx, op)
	if err != nil {
		h.unreachable(ep, err)
		return false, fmt.Errorf("POST /api/v1/operations %s: %w", spec.ID, err)
	}
	return st.State == "pending", nil
}

func (h *httpDriver) begin(time.Time) {}
func (h *httpDriver) end() {
	h.epMu.Lock()
	for _, ep := range h.eps {
		ep.hc.CloseIdleConnections()
	}
	h.epMu.Unlock()
	h.ctlHTTP.CloseIdleConnections()
}

// httpWorker is one driver goroutine's request state, reused for every
// request: the pooled fasthttp request and response, the body buffer and,
// for batches, the nodes' names and the entries' errors.
type httpWorker struct {
	h     *httpDriver
	req   *fasthttp.Request
	resp  *fasthttp.Response
	body  []byte
	names []string
	errs  []*EntryError
	// host is the Host of req: the replica it was last sent to.
	host string
}

// batchPath is the path of a batch of heartbeats (docs/api.md#batched-heartbeats).
var batchPath = []byte("/api/v1/heartbeats")

func (h *httpDriver) newWorker(int) heartbeater {
	wk := &httpWorker{h: h, req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}
	wk.req.Header.SetMethod("POST")
	wk.req.Header.SetHost(h.addr)
	wk.host = h.addr
	wk.req.Header.SetContentType("application/json")
	if h.cfg.Token != "" {
		wk.req.Header.Set("Authorization", "Bearer "+h.cfg.Token)
	}
	wk.resp.SkipBody = false
	if k := h.cfg.Batch; k > 0 {
		wk.names, wk.errs = make([]string, 0, k), make([]*EntryError, k)
		wk.req.SetRequestURIBytes(batchPath)
		if h.hc.IsTLS {
			wk.req.URI().SetScheme("https")
		}
	}
	return wk
}

func (wk *httpWorker) heartbeat(nodes []*Node, ds []Decisions, errs []*hbError) {
	if wk.h.cfg.Batch > 0 {
		wk.batch(nodes, ds, errs)
		return
	}
	n := nodes[0]
	wk.body = n.AppendHeartbeat(wk.body[:0])
	wk.req.SetRequestURIBytes(n.path)
	if wk.h.hc.IsTLS {
		wk.req.URI().SetScheme("https") // NB: the path alone reads as http
	}
	wk.req.SetBodyRaw(wk.body)
	if err := wk.do(nodes); err != nil {
		errs[0] = err
		return
	}
	if err := DecodeResponse(wk.resp.Body(), wk.h.w, &ds[0]); err != nil {
		errs[0] = &hbError{kind: "decode", msg: n.Name + ": " + err.Error()}
	}
}

// batch sends the heartbeats of nodes in one POST /api/v1/heartbeats.
func (wk *httpWorker) batch(nodes []*Node, ds []Decisions, errs []*hbError) {
	b := append(wk.body[:0], `{"heartbeats":[`...)
	wk.names = wk.names[:0]
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = n.AppendBatchEntry(b)
		wk.names = append(wk.names, n.Name)
	}
	wk.body = append(b, "]}"...)
	wk.req.SetBodyRaw(wk.body)
	err := wk.do(nodes)
	if err == nil {
		if derr := DecodeBatchResponse(wk.resp.Body(), wk.h.w, wk.names, ds, wk.errs); derr != nil {
			err = &hbError{kind: "decode", msg: label(nodes) + ": " + derr.Error()}
		}
	}
	if err != nil {
		for i := range nodes {
			errs[i] = err
		}
		return
	}
	for i, e := range wk.errs[:len(nodes)] {
		if e != nil {
			errs[i] = &hbError{kind: "heartbeat " + e.Code, msg: nodes[i].Name + ": " + e.Error()}
		}
	}
}

// label names the nodes of a request in errors: "node-1", or the batch's
// first and last "node-1…node-64".
func label(nodes []*Node) string {
	if len(nodes) == 1 {
		return nodes[0].Name
	}
	return nodes[0].Name + "…" + nodes[len(nodes)-1].Name
}

// do sends the request of nodes and checks the answer's status.
func (wk *httpWorker) do(nodes []*Node) *hbError {
	var err error
	ep := wk.h.cur.Load()
	if ep.addr != wk.host { // another replica leads
		wk.host = ep.addr
		wk.req.Header.SetHost(ep.addr)
		wk.req.URI().SetHost(ep.addr)
	}
	if pc := wk.h.pc; pc != nil {
		err = pc.Do(wk.req, wk.resp)
	} else {
		err = ep.hc.Do(wk.req, wk.resp)
	}
	if err != nil {
		wk.h.unreachable(ep, err)
		kind := "transport"
		if errors.Is(err, fasthttp.ErrTimeout) {
			kind = "timeout"
		}
		return &hbError{kind: kind, msg: label(nodes) + ": " + err.Error()}
	}
	if st := wk.resp.StatusCode(); st != 200 {
		body := wk.resp.Body()
		if st == 503 && bytes.Contains(body, notLeader) {
			return wk.h.notLeader(ep, label(nodes), body)
		}
		if len(body) > 300 {
			body = body[:300]
		}
		return &hbError{kind: "http " + strconv.Itoa(st), msg: label(nodes) + ": " + string(bytes.TrimSpace(body))}
	}
	return nil
}
