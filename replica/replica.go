// Package replica runs fairsched serve as one of several replicas that
// share their state in etcd (docs/operations.md, "Replicas on etcd"): one
// leads and serves the API, the others answer 503 not_leader naming it.
//
// # Terms
//
// Every replica campaigns for <prefix>/leader with a lease of
// Config.LeaseTTL (concurrency.Election; Campaign is raced against the
// session's end, so a candidate whose lease expires while it waits never
// leads). The winner confirms its leadership with one guarded transaction,
// loads the prefix at that transaction's revision and builds a
// server.Server on an etcdstore.Store, and the facade.Server (the HTTP API)
// over it: the same recovery as a restart, every write one transaction
// guarded by the leader key's create revision.
// The term ends, and the Server is dropped at once, when
//
//   - a guarded write fails (the Store's Committer is fail-stop and calls
//     Options.OnStoreFailure): another replica leads, or etcd failed;
//   - the session ends (the lease expired or its keep-alive failed);
//   - the fair-share loop makes no progress for a lease TTL: the replica
//     stops the keep-alive itself, so a wedged leader loses the lease;
//   - Run's context ends (SIGTERM): the queued writes are flushed and the
//     replica resigns, which hands over in milliseconds.
//
// after which the replica campaigns again with a new session.
//
// # Requests
//
// Handle is the replica's fasthttp handler: while leading it calls the
// term's Server (an atomic load, nothing allocated); otherwise it answers
// /healthz itself and every other request 503 not_leader with the leader's
// advertised URL (null while none is known or this replica is about to
// lead). Deposition is never learned from a request: a request the old
// Server was handling when its term ended finds its Committer failed or
// closed and answers 503 store_unavailable, its change not acknowledged.
package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/store/etcdstore"
)

// Roles at /healthz.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// CodeNotLeader is the error code of a follower's answers.
const CodeNotLeader = "not_leader"

// Config configures a Replica.
type Config struct {
	// Client reaches etcd; the caller closes it after Run returned.
	Client *clientv3.Client
	// Prefix is the cluster's key prefix ("/fairsched/prod"), without a
	// trailing slash.
	Prefix string
	// AdvertiseURL is how clients reach this replica
	// (http://10.0.0.5:8080): followers name it while it leads.
	AdvertiseURL string
	// LeaseTTL is the election lease's time to live, in whole seconds (at
	// least 1 s; etcd raises it to its own minimum, 2 s with the default
	// election timeout). A crashed leader is replaced within about a TTL.
	LeaseTTL time.Duration
	// Server is the template of each term's facade.Server; Store,
	// OnStoreFailure and Replica are the replica's.
	Server facade.Options
	// Logger receives the replica's log lines (nil: Server.Logger, else
	// slog.Default()).
	Logger *slog.Logger
}

// Replica is one replica. See the package documentation.
type Replica struct {
	cfg  Config
	log  *slog.Logger
	http *fasthttp.Server

	// term is the term being served (nil: not leading).
	term atomic.Pointer[term]
	// hint is the leader's URL as the election key says ("" when none).
	hint atomic.Pointer[string]
	// terms counts the terms this replica led.
	terms atomic.Int64
	// tokensMu guards cfg.Server.Tokens, which SetTokens replaces.
	tokensMu sync.Mutex
	// metrics is a follower's /metrics (metrics.go).
	metrics *prometheus.Registry
	// conns are the front door's connections, so that Shutdown ends the
	// silent ones at once.
	conns facade.ConnTracker

	// Test hooks (replica_test.go).
	// afterCampaign runs when Campaign returned, before the leadership is
	// confirmed.
	afterCampaign func(*concurrency.Session)
	// progress replaces Server.FairShareUpdates.
	progress func(*facade.Server) uint64
	// onLead is called with the lease of each term that began serving.
	onLead func(clientv3.LeaseID)
}

// term is one leadership term's Server.
type term struct {
	srv   *facade.Server
	lease clientv3.LeaseID
}

// New checks cfg and returns a Replica that follows until Run wins an
// election.
func New(cfg Config) (*Replica, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("replica: no etcd client")
	case cfg.AdvertiseURL == "":
		return nil, errors.New("replica: no advertise URL")
	case cfg.LeaseTTL < time.Second || cfg.LeaseTTL%time.Second != 0:
		return nil, fmt.Errorf("replica: cannot use the lease TTL %v: want whole seconds, at least 1s", cfg.LeaseTTL)
	}
	r := &Replica{cfg: cfg, log: cfg.Logger}
	if r.log == nil {
		r.log = cfg.Server.Logger
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	maxBody := cfg.Server.MaxBodySize
	if maxBody <= 0 {
		maxBody = facade.DefaultMaxBodySize
	}
	r.http = facade.NewHTTPServer(r.Handle, r.serverError, r.expectContinue, &r.conns, maxBody, r.log)
	empty := ""
	r.hint.Store(&empty)
	r.metrics = r.followerRegistry()
	return r, nil
}

// Status is the replica's role and the leader's URL as /healthz says them.
func (r *Replica) Status() facade.ReplicaStatus {
	if r.term.Load() != nil {
		return facade.ReplicaStatus{Role: RoleLeader, Leader: r.cfg.AdvertiseURL}
	}
	return facade.ReplicaStatus{Role: RoleFollower, Leader: r.leaderHint()}
}

// Leading returns the Server of the term being served, or nil.
func (r *Replica) Leading() *facade.Server {
	if t := r.term.Load(); t != nil {
		return t.srv
	}
	return nil
}

// SetTokens replaces the users and tokens of the term being served and of
// the terms to come (SIGHUP).
func (r *Replica) SetTokens(t *facade.Tokens) {
	r.tokensMu.Lock()
	r.cfg.Server.Tokens = t
	if srv := r.Leading(); srv != nil {
		srv.SetTokens(t)
	}
	r.tokensMu.Unlock()
}

// Terms returns how many terms this replica has led.
func (r *Replica) Terms() int64 { return r.terms.Load() }

// leaderHint is the leader a follower names: "" when none is known or it
// is this replica, which has not begun serving (a client sent here would
// be sent here again).
func (r *Replica) leaderHint() string {
	h := *r.hint.Load()
	if h == r.cfg.AdvertiseURL {
		return ""
	}
	return h
}

// Handle is the replica's fasthttp.RequestHandler. See the package
// documentation.
func (r *Replica) Handle(ctx *fasthttp.RequestCtx) {
	r.conns.Handling(ctx)
	if t := r.term.Load(); t != nil {
		t.srv.Handle(ctx)
		return
	}
	if string(ctx.Path()) == "/healthz" && ctx.IsGet() {
		st := r.Status()
		b := append([]byte(`{"status":"ok","role":"`), st.Role...)
		b = appendLeader(append(b, `","leader":`...), st.Leader)
		writeJSON(ctx, fasthttp.StatusOK, append(b, `,"store":"etcd"}`+"\n"...))
		return
	}
	if string(ctx.Path()) == "/metrics" && ctx.IsGet() {
		r.serveMetrics(ctx)
		return
	}
	r.notLeader(ctx)
}

// expectContinue is the front door's answer to "Expect: 100-continue": the
// leader's Server's (a token and the body's size checked before the body
// is read), and a follower's not_leader without reading the body.
func (r *Replica) expectContinue(ctx *fasthttp.RequestCtx) int {
	if t := r.term.Load(); t != nil {
		return t.srv.ExpectContinue(ctx)
	}
	if p := string(ctx.Path()); p == "/healthz" || p == "/metrics" {
		return fasthttp.StatusContinue
	}
	r.notLeader(ctx)
	return fasthttp.StatusServiceUnavailable
}

// notLeader answers a follower's 503 not_leader, naming the leader.
func (r *Replica) notLeader(ctx *fasthttp.RequestCtx) {
	leader := r.leaderHint()
	msg := "cannot serve this request: this replica is a follower; send it to the leader at " + leader
	if leader == "" {
		msg = "cannot serve this request: this replica is a follower and no leader is serving yet (an election is under way); retry shortly"
		ctx.Response.Header.Set("Retry-After", "1")
	}
	b := append([]byte(`{"error":{"code":"`+CodeNotLeader+`","message":`), jsonpath.AppendString(nil, msg)...)
	b = appendLeader(append(b, `,"path":"$","leader":`...), leader)
	writeJSON(ctx, fasthttp.StatusServiceUnavailable, append(b, "}}\n"...))
}

func appendLeader(b []byte, leader string) []byte {
	if leader == "" {
		return append(b, "null"...)
	}
	return jsonpath.AppendString(b, leader)
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// serverError answers fasthttp's own errors (a body over the limit, a
// request that cannot be parsed) with the API's error body.
func (r *Replica) serverError(ctx *fasthttp.RequestCtx, err error) {
	status, code := fasthttp.StatusBadRequest, "bad_request"
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		status, code = fasthttp.StatusRequestEntityTooLarge, "body_too_large"
	}
	msg := "cannot read the request: " + err.Error()
	b := append([]byte(`{"error":{"code":"`+code+`","message":`), jsonpath.AppendString(nil, msg)...)
	writeJSON(ctx, status, append(b, `,"path":"$"}}`+"\n"...))
}

// Serve serves the replica's HTTP(S) on ln until Shutdown.
func (r *Replica) Serve(ln net.Listener) error {
	if r.cfg.Server.TLS != nil {
		ln = tls.NewListener(ln, r.cfg.Server.TLS)
	}
	return r.http.Serve(r.conns.Listener(ln))
}

// Shutdown stops serving HTTP: it stops accepting connections and waits
// for the requests in flight until ctx ends. Run must have returned (or
// not be running) for the term to have ended.
func (r *Replica) Shutdown(ctx context.Context) error {
	r.conns.StopReading() // a connection that sends nothing does not hold the shutdown
	return r.http.ShutdownWithContext(ctx)
}

// ttl is the lease TTL in seconds.
func (r *Replica) ttl() int { return int(r.cfg.LeaseTTL / time.Second) }

// Run campaigns, leads and campaigns again until ctx ends; a leader then
// hands over (flushes its writes and resigns) before Run returns.
func (r *Replica) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { r.watchLeader(ctx) })
	defer wg.Wait()
	for ctx.Err() == nil {
		// The session's own context is not ctx: its lease must outlive
		// ctx until the hand-over resigned and revoked it.
		sctx, scancel := context.WithCancel(context.Background())
		sess, err := concurrency.NewSession(r.cfg.Client, concurrency.WithTTL(r.ttl()), concurrency.WithContext(sctx))
		if err != nil {
			scancel()
			r.log.Warn("cannot open an etcd session: retrying", "error", err)
			pause(ctx, time.Second)
			continue
		}
		e := concurrency.NewElection(sess, r.cfg.Prefix+"/leader")
		if r.campaign(ctx, sess, e) {
			r.lead(ctx, sess, e)
		}
		r.closeSession(sess)
		scancel()
	}
	return nil
}

// campaign waits until this replica leads, its session ends or ctx ends,
// and reports whether it leads with a live session.
func (r *Replica) campaign(ctx context.Context, sess *concurrency.Session, e *concurrency.Election) bool {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	if err := e.Campaign(cctx, r.cfg.AdvertiseURL); err != nil {
		if ctx.Err() == nil {
			select {
			case <-sess.Done():
				r.log.Warn("the session ended while campaigning: campaigning again with a new one", "lease", leaseHex(sess.Lease()))
			default:
				r.log.Warn("the campaign failed: retrying", "error", err)
				pause(ctx, time.Second)
			}
		}
		return false
	}
	select {
	case <-sess.Done():
		r.log.Warn("the session ended as the campaign was won: not leading with it", "lease", leaseHex(sess.Lease()))
		return false
	default:
	}
	if r.afterCampaign != nil {
		r.afterCampaign(sess)
	}
	return true
}

// lead serves one term: see the package documentation.
func (r *Replica) lead(ctx context.Context, sess *concurrency.Session, e *concurrency.Election) {
	won := time.Now()
	tctx, tcancel := context.WithCancel(context.Background())
	defer tcancel()
	st, err := etcdstore.Open(tctx, r.cfg.Client, etcdstore.Options{Prefix: r.cfg.Prefix, LeaderKey: e.Key(), LeaderRev: e.Rev(),
		Timeout: r.cfg.LeaseTTL})
	if err != nil {
		if !errors.Is(err, etcdstore.ErrDeposed) {
			r.log.Error("won the election but cannot read the store: resigning", "error", err)
			r.resign(e)
			pause(ctx, r.cfg.LeaseTTL)
		} else {
			r.log.Warn("won the election but the leader key was gone when confirmed: not leading", "lease", leaseHex(sess.Lease()))
		}
		return
	}
	failed := make(chan error, 1)
	r.tokensMu.Lock()
	opts := r.cfg.Server
	r.tokensMu.Unlock()
	opts.Store = st
	opts.OnStoreFailure = func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	opts.Replica = r.Status
	opts.Collectors = append(opts.Collectors[:len(opts.Collectors):len(opts.Collectors)], collector{r})
	// The term's service, recovered from the store as a restart is, and
	// the HTTP API over it.
	var srv *facade.Server
	core, err := server.New(facade.ServiceOptions(&opts))
	if err == nil {
		opts.Service = core
		if srv, err = facade.New(opts); err != nil {
			core.Close()
		}
	}
	if err != nil {
		r.log.Error("won the election but cannot build the server from the store: resigning", "error", err)
		r.resign(e)
		pause(ctx, r.cfg.LeaseTTL)
		return
	}
	srv.Run()
	progress := srv.FairShareUpdates
	if r.progress != nil {
		progress = func() uint64 { return r.progress(srv) }
	}
	r.terms.Add(1)
	r.tokensMu.Lock()
	srv.SetTokens(r.cfg.Server.Tokens) // a SetTokens since opts was copied
	r.term.Store(&term{srv: srv, lease: sess.Lease()})
	r.tokensMu.Unlock()
	if r.onLead != nil {
		r.onLead(sess.Lease())
	}
	r.log.Info("leading", "advertise_url", r.cfg.AdvertiseURL, "lease", leaseHex(sess.Lease()), "revision", st.Revision(),
		"took", time.Since(won))

	tick := time.NewTicker(max(r.cfg.LeaseTTL/4, 50*time.Millisecond))
	defer tick.Stop()
	last, lastAt := progress(), time.Now()
	graceful := false
wait:
	for {
		select {
		case <-ctx.Done():
			graceful = true
			break wait
		case <-sess.Done():
			r.log.Error("stepping down: the lease is lost (expired, revoked, or etcd unreachable)", "lease", leaseHex(sess.Lease()))
			break wait
		case err := <-failed:
			if errors.Is(err, etcdstore.ErrDeposed) {
				r.log.Error("stepping down: deposed, a write was refused because another replica leads", "lease", leaseHex(sess.Lease()))
			} else {
				r.log.Error("stepping down: a store write failed", "error", err)
			}
			break wait
		case <-tick.C:
			if n := progress(); n != last {
				last, lastAt = n, time.Now()
			} else if stalled := time.Since(lastAt); stalled > r.cfg.LeaseTTL {
				r.log.Error("the fair-share loop made no progress for a lease TTL: letting the lease expire", "stalled", stalled)
				sess.Orphan() // keep-alive stops; Done follows
			}
		}
	}
	// From here on no request reaches srv.
	r.term.Store(nil)
	if !graceful {
		tcancel() // the writes in flight fail at once
	}
	down := make(chan struct{})
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx) // flushes the Committer's queue
		close(down)
	}()
	select {
	case <-down:
	case <-time.After(10 * time.Second):
		r.log.Error("the server of the ended term did not stop within 10 s: abandoned")
	}
	r.resign(e)
	if graceful {
		r.log.Info("handed over: resigned the leadership", "lease", leaseHex(sess.Lease()))
	}
}

// resign deletes this replica's election key if it is still this term's,
// so that the next candidate need not wait for the lease to expire.
func (r *Replica) resign(e *concurrency.Election) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.LeaseTTL)
	defer cancel()
	if err := e.Resign(ctx); err != nil {
		r.log.Warn("cannot resign (the lease expires by itself)", "error", err)
	}
}

// closeSession revokes the session's lease (its keys go with it) when it
// is still alive.
func (r *Replica) closeSession(sess *concurrency.Session) {
	select {
	case <-sess.Done():
		return // expired or orphaned: the lease expires by itself
	default:
	}
	if err := sess.Close(); err != nil {
		r.log.Debug("cannot revoke the session's lease (it expires by itself)", "error", err)
	}
}

// watchLeader keeps the leader hint: the value of the election key with the
// lowest create revision.
func (r *Replica) watchLeader(ctx context.Context) {
	pfx := r.cfg.Prefix + "/leader/"
	for ctx.Err() == nil {
		resp, err := r.cfg.Client.Get(ctx, pfx, clientv3.WithFirstCreate()...)
		if err != nil {
			pause(ctx, 500*time.Millisecond)
			continue
		}
		h := ""
		if len(resp.Kvs) > 0 {
			h = string(resp.Kvs[0].Value)
		}
		if h != *r.hint.Load() {
			r.hint.Store(&h)
		}
		wctx, cancel := context.WithCancel(ctx)
		wch := r.cfg.Client.Watch(clientv3.WithRequireLeader(wctx), pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Err() != nil || len(wr.Events) > 0 {
				break
			}
		}
		cancel()
	}
}

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func leaseHex(id clientv3.LeaseID) string { return strconv.FormatInt(int64(id), 16) }
