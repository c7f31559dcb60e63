// Package facade serves fairsched's scheduling core over HTTP/JSON on
// fasthttp (api.md): pools, the tree config, operations, node heartbeats,
// the orchid, POST /api/v1/solve, /metrics, /debug/pprof/ and /healthz.
//
// # Ownership and concurrency
//
// A Server owns a schedule.Scheduler and the clock that feeds it: the core
// takes time as an argument, and the Server reads its Clock (the wall clock
// by default) once per request and once per fair-share update. Handlers run
// concurrently on fasthttp's workers; the core serialises control-plane
// calls under its own lock and shards heartbeats by node. The Server adds a
// mutex around pool and operation mutations that read before they write
// (PATCH applies to the current config), so that two of them never
// interleave.
//
// Handlers never retain the *fasthttp.RequestCtx or its buffers after they
// return. Request scratch (the decoded heartbeat, the core's response, the
// output buffer) comes from sync.Pools, the only pools of the process
// (style.md §5).
//
// # Errors
//
// Every non-2xx answer is {"error": {"code", "message", "path"}} (api.md
// §1), including fasthttp's own errors (Server.ErrorHandler) and panics,
// which are recovered into a 500 while the server goes on serving. Requests
// are validated completely before any state changes.
package facade

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// DefaultMaxBodySize is the default request body limit (api.md §1: 4 MiB).
const DefaultMaxBodySize = 4 << 20

// Options configure a Server. The zero value serves an empty tree with the
// default config on the wall clock.
type Options struct {
	// Config is the tree config and the initial pools (wire.DecodeServeConfig);
	// nil means schedule.DefaultConfig and no pools.
	Config *wire.ServeConfig
	// Clock supplies the time; nil means the wall clock, starting at 0 when
	// the Server is created. It must be safe for concurrent use.
	Clock clock.Clock
	// MaxBodySize limits request bodies (0: DefaultMaxBodySize).
	MaxBodySize int
	// Pprof serves /debug/pprof/ to clients on loopback addresses.
	Pprof bool
	// Logger receives the server's log lines (nil: slog.Default()).
	Logger *slog.Logger
	// ManualUpdates turns off the fair-share updater goroutine of Serve;
	// the caller runs UpdateFairShare (tests on a manual clock).
	ManualUpdates bool
	// MaxInFlight bounds the requests being handled at once; beyond it the
	// answer is 429 (0: 16384).
	MaxInFlight int
	// MaxConcurrentSolves bounds concurrent POST /api/v1/solve requests,
	// which are CPU-bound; beyond it the answer is 429 (0: GOMAXPROCS).
	MaxConcurrentSolves int
	// FinishedOperationRetention is how long finished operations stay
	// visible before they are forgotten (0: 10 minutes): between one and
	// one and a half retentions after they finished, on Clock (they are
	// looked for every min(10 s, retention/2)).
	FinishedOperationRetention time.Duration
	// Store, when set, keeps the tree config, the pools and the operations
	// durable (see persist.go): a store that holds state is what New
	// starts from (Config then only seeds an empty store). The Server
	// does not close it.
	Store store.Backend
	// OnStoreFailure is called (once, on its own goroutine) when a store
	// write fails: the server answers 503 store_unavailable to every change
	// from then on and the caller should stop it.
	OnStoreFailure func(error)

	// Tokens, when set, are the users and bearer tokens every request but
	// /healthz and /readyz must present (guard.go); SetTokens replaces
	// them. Without tokens every caller may do everything: fairsched serve
	// then listens on loopback only.
	Tokens *Tokens
	// AllowedOrigins are the Origin values (scheme://host[:port]) of web
	// pages that may send requests; others are 403 cross_origin.
	AllowedOrigins []string
	// AllowedHosts are the Host header names the server answers besides
	// the addresses it listens on and localhost ("name", or "*.domain");
	// others are 421 misdirected_request.
	AllowedHosts []string
	// ListenHost is the host of the listen address (fairsched serve
	// --listen): a Host header it takes; "", 0.0.0.0 or :: (every
	// interface) make every IP address one too.
	ListenHost string
	// TLS, when set, makes Serve serve HTTPS with this configuration.
	TLS *tls.Config
	// Replica, when set, names the server's role and the leader at
	// /healthz (leader.go); nil is a standalone server.
	Replica func() ReplicaStatus
	// Collectors are more metrics for /metrics (a replica's).
	Collectors []prometheus.Collector
}

// maxInterned bounds the node names and tags the server interns (so that
// steady heartbeats allocate nothing): at most 131,072 strings of at most
// 256 bytes. Names and tags beyond it still work, each heartbeat then
// allocating its own copies; MaxDistinctNodeTags bounds the tags kept.
const maxInterned = 1 << 17

// Server is fairsched's HTTP/JSON facade. See the package documentation.
type Server struct {
	opts   Options
	log    *slog.Logger
	clock  clock.Clock
	sched  *schedule.Scheduler
	http   *fasthttp.Server
	names  *wire.Interner
	m      *metricsSet
	period atomic.Int64 // fair-share update period in nanoseconds
	// stopping is set when Shutdown begins (/readyz answers 503).
	stopping atomic.Bool
	// d is the store (nil: in memory only).
	d *durable

	// mu serialises the facade's read-modify-write mutations (pools, config,
	// operation starts and patches); heartbeats never take it.
	mu sync.Mutex
	// cfg is the config the Server runs with (the core has no setter yet,
	// see PATCH /api/v1/config).
	cfg schedule.Config
	// ops records the facade's view of every operation it started: the
	// listing cursor and when it was first seen finished.
	ops   map[string]*opRecord
	opSeq uint64
	// pendingSince are the operations started pending, with their start
	// time, until the updater sees them run (fairsched_operation_pending_wait_seconds).
	pendingSince map[string]clock.Time
	inFl         atomic.Int64
	solves       chan struct{}

	// preemptions are the operations' recent preemptions (events.go).
	preemptions *preemptionLog

	updateMu    sync.Mutex // one fair-share update at a time
	lastSlowLog time.Time  // when UpdateFairShare last warned of a slow update
	lastJan     clock.Time // the last forgetFinished pass, on s.clock

	hbPool    sync.Pool // *hbScratch
	batchPool sync.Pool // *batchScratch
	bufPool   sync.Pool // *[]byte
	// maxBatch is the config's max_heartbeats_per_batch, which batches
	// read without s.mu.
	maxBatch atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once
	// lnMu guards listeners: Shutdown closes the listeners of every Serve,
	// including one that fasthttp has not registered yet, and a Serve that
	// finds stop closed returns at once.
	lnMu      sync.Mutex
	listeners []*onceCloseListener
	done      sync.WaitGroup

	// panicHook, when set (tests), runs at the start of every request.
	panicHook atomic.Pointer[func(path []byte)]

	// hosts are Options.AllowedHosts and ListenHost as bytes (hostAllowed).
	hosts [][]byte
	// tokens are the users of the token file (nil: no tokens); acl the
	// pools' ACLs as permission checks read them (rebuildACL).
	tokens atomic.Pointer[Tokens]
	acl    atomic.Pointer[aclIndex]
	// conns are the open connections (Shutdown closes the silent ones).
	conns ConnTracker
	// demand is the declared demand of the operations that have not
	// finished (opRecord.demand), bounded by maxLiveDemand; under mu.
	demand resource.Vec
	// tags are the distinct node tags of the cluster (bounded).
	tags tagSet
}

// opRecord is the facade's record of an operation.
type opRecord struct {
	seq        uint64
	finished   bool       // seen finished by forgetFinished
	finishedAt clock.Time // when it was first seen finished
	// state is what the store keeps of its changes (with a store), and
	// durable the last write of it: a retry answers once it is durable.
	state   operationState
	durable store.Pending
	// owner is the user who started it ("" without tokens); demand its
	// declared demand, counted in Server.demand until released.
	owner    string
	demand   resource.Vec
	released bool
	// tasks are the operation's tasks as it was started, for the orchid.
	tasks []schedule.TaskSpec
}

// New builds a Server: the scheduler with the config's tree. An invalid
// initial tree is an *wire.Error naming the pool's path.
func New(opts Options) (*Server, error) {
	sc := opts.Config
	if sc == nil {
		sc = &wire.ServeConfig{Scheduler: schedule.DefaultConfig()}
	}
	if opts.MaxBodySize <= 0 {
		opts.MaxBodySize = DefaultMaxBodySize
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 16384
	}
	if opts.MaxConcurrentSolves <= 0 {
		opts.MaxConcurrentSolves = runtime.GOMAXPROCS(0)
	}
	if opts.FinishedOperationRetention <= 0 {
		opts.FinishedOperationRetention = 10 * time.Minute
	}
	s := &Server{
		opts:         opts,
		log:          opts.Logger,
		clock:        opts.Clock,
		cfg:          sc.Scheduler,
		names:        wire.NewInterner(maxInterned),
		ops:          make(map[string]*opRecord),
		pendingSince: make(map[string]clock.Time),
		solves:       make(chan struct{}, opts.MaxConcurrentSolves),
		stop:         make(chan struct{}),

		preemptions: newPreemptionLog(nil),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.preemptions.log = s.log
	epochUS := int64(0)
	if s.clock == nil {
		start := time.Now()
		epochUS = wallEpochUS(start)
		s.clock = clock.Func(func() clock.Time { return clock.Time(time.Since(start).Microseconds()) })
	}
	var fromStore *loaded
	if opts.Store != nil {
		kind, _ := opts.Store.Describe()
		s.d = &durable{c: store.NewCommitter(opts.Store), kind: kind, epochUS: epochUS, onFail: opts.OnStoreFailure}
		built := false
		defer func() {
			if !built {
				s.d.c.Close()
			}
		}()
		l, err := load(opts.Store)
		if err != nil {
			return nil, fmt.Errorf("reading the store: %w", err)
		}
		if !l.empty() {
			if sc, err = l.serveConfig(); err != nil {
				return nil, fmt.Errorf("reading the store: %w", err)
			}
			s.cfg = sc.Scheduler
			fromStore = l
		}
		defer func() { built = s.sched != nil && s.http != nil }()
	}
	s.setPeriod(sc.Scheduler.FairShareUpdatePeriod)
	s.storeMaxBatch(sc.Scheduler.MaxHeartbeatsPerBatch)

	root, ms, paths, werr := sc.Tree()
	if werr != nil {
		return nil, werr
	}
	s.sched = schedule.New(tree.New(root), sc.Scheduler)
	if len(ms) > 0 {
		if i, err := s.sched.ApplyPools(ms...); err != nil {
			_, we := errorBody(err, paths[i])
			return nil, we
		}
	}
	if s.d != nil {
		if err := s.openStore(fromStore); err != nil {
			return nil, err
		}
	}
	s.m = newMetrics(s)
	s.hbPool.New = func() any { return new(hbScratch) }
	s.batchPool.New = func() any { return new(batchScratch) }
	s.bufPool.New = func() any { b := make([]byte, 0, 4096); return &b }
	s.tokens.Store(opts.Tokens)
	for _, h := range append([]string{opts.ListenHost}, opts.AllowedHosts...) {
		if h != "" {
			s.hosts = append(s.hosts, []byte(h))
		}
	}
	s.rebuildACL()
	s.tags.init()
	s.http = NewHTTPServer(s.Handle, s.handleServerError, s.expectContinue, &s.conns, opts.MaxBodySize, s.log)
	return s, nil
}

// NewHTTPServer returns the fasthttp server of a Server, or of a front door
// that hands a Server its requests (a replica's): its timeouts, body limit
// and the settings that keep a request's secrets out of fasthttp's logs,
// with the connections tracked by conns (its Shutdown calls
// conns.StopReading first).
func NewHTTPServer(handler fasthttp.RequestHandler, onError func(*fasthttp.RequestCtx, error),
	expect func(*fasthttp.RequestCtx) int, conns *ConnTracker, maxBody int, log *slog.Logger) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:              handler,
		ErrorHandler:         onError,
		ExpectHandler:        expect,
		ConnState:            conns.State,
		Name:                 "fairsched",
		MaxRequestBodySize:   maxBody,
		ReadTimeout:          30 * time.Second,
		WriteTimeout:         30 * time.Second,
		IdleTimeout:          2 * time.Minute,
		NoDefaultContentType: true,
		// Bodies are JSON: a form is refused (415), never parsed.
		DisablePreParseMultipartForm: true,
		// fasthttp's errors (logged, and answered by the error handler)
		// must not quote the request: it may hold a token.
		SecureErrorLogMessage: true,
		CloseOnShutdown:       true,
		Logger:                fasthttpLogger{log},
	}
}

// Scheduler returns the scheduling core the Server drives.
func (s *Server) Scheduler() *schedule.Scheduler { return s.sched }

// HTTPServer returns the fasthttp server, for callers that serve it
// themselves (tests over an in-memory listener).
func (s *Server) HTTPServer() *fasthttp.Server { return s.http }

// setPeriod sets the fair-share update period of the updater, which runs on
// the wall clock (time.Duration).
func (s *Server) setPeriod(d clock.Duration) {
	s.period.Store(int64(time.Duration(d.Micros()) * time.Microsecond))
}

// storeMaxBatch sets the max_heartbeats_per_batch that batches read; a
// config built in code without it (0) gets the setting's default.
func (s *Server) storeMaxBatch(n int) {
	if n <= 0 {
		n = schedule.DefaultConfig().MaxHeartbeatsPerBatch
	}
	s.maxBatch.Store(int64(n))
}

// now returns the clock's reading, as the core takes it.
func (s *Server) now() clock.Time { return s.clock.Now() }

// Serve runs the fair-share updater (unless ManualUpdates) and serves
// connections from ln until Shutdown. It returns nil after Shutdown, also
// when Shutdown came first.
func (s *Server) Serve(ln net.Listener) error {
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	l := &onceCloseListener{Listener: s.conns.Listener(ln)}
	s.lnMu.Lock()
	select {
	case <-s.stop:
		s.lnMu.Unlock()
		return l.Close()
	default:
	}
	s.listeners = append(s.listeners, l)
	bg := s.addBackground()
	s.lnMu.Unlock()
	s.runBackground(bg)
	err := s.http.Serve(l)
	select {
	case <-s.stop:
		return nil
	default:
	}
	return err
}

// Shutdown stops the updater and the HTTP server gracefully: it stops
// accepting connections and waits for requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	s.stopOnce.Do(func() { close(s.stop) })
	// fasthttp closes only the listeners its Serve has registered; one
	// whose Serve has not got that far would be served for ever.
	s.lnMu.Lock()
	for _, l := range s.listeners {
		l.Close()
	}
	s.lnMu.Unlock()
	// A connection that sends nothing would hold fasthttp's shutdown until
	// its read timeout: every read not inside a request is ended now.
	s.conns.StopReading()
	err := s.http.ShutdownWithContext(ctx)
	s.done.Wait()
	if s.d != nil {
		s.d.c.Close()
	}
	return err
}

// background is what runBackground starts.
type background struct{ updater, writer bool }

// addBackground counts the goroutines runBackground will start (before
// Shutdown can Wait for them: it takes lnMu first). s.lnMu held.
func (s *Server) addBackground() background {
	var bg background
	if !s.opts.ManualUpdates {
		s.done.Add(1)
		bg.updater = true
	}
	if s.d != nil && !s.d.writing {
		s.d.writing = true
		s.done.Add(1)
		bg.writer = true
	}
	return bg
}

// runBackground runs one fair-share update, then starts the updater and
// the writer of completions that addBackground counted.
func (s *Server) runBackground(bg background) {
	s.UpdateFairShare()
	if bg.updater {
		go s.updater()
	}
	if bg.writer {
		go s.writeCompletions()
	}
}

// onceCloseListener is a listener whose Close closes it once and answers
// every call with that first result, so that Shutdown and fasthttp can
// both close it.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// updater runs UpdateFairShare every fair_share_update_period on the wall
// clock until Shutdown.
func (s *Server) updater() {
	defer s.done.Done()
	t := time.NewTimer(time.Duration(s.period.Load()))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.UpdateFairShare()
		t.Reset(time.Duration(s.period.Load()))
	}
}

// maxJanitorPeriod bounds how often UpdateFairShare looks for finished
// operations to forget, on the server's clock; a shorter retention gets a
// period of half of it (see janitorPeriod).
const maxJanitorPeriod = 10 * clock.Second

// janitorPeriod is the period of forgetFinished: at most 10 s and at most
// half the retention, so that an operation is forgotten between one and
// two retentions after it finished (give or take a fair-share period).
func (s *Server) janitorPeriod() clock.Duration {
	half := clock.Duration(s.opts.FinishedOperationRetention.Microseconds() / 2)
	return max(min(maxJanitorPeriod, half), clock.Microsecond)
}

// UpdateFairShare runs one fair-share update now (spec.md §2–§3), records
// its duration, and every janitorPeriod forgets operations that finished
// longer ago than the retention.
func (s *Server) UpdateFairShare() {
	s.updateMu.Lock()
	defer s.updateMu.Unlock()
	now := s.clock.Now()
	start := time.Now()
	s.sched.UpdateFairShare(now)
	s.m.fairShareUpdate.Observe(time.Since(start).Seconds())
	s.observePendingWaits(now)
	if took, period := time.Since(start), time.Duration(s.period.Load()); took > period && !s.opts.ManualUpdates &&
		time.Since(s.lastSlowLog) >= time.Minute {
		// At most once a minute: the fair shares lag behind demand.
		s.lastSlowLog = time.Now()
		s.log.Warn("the fair-share update took longer than its period", "took", took, "period", period)
	}
	if now.Sub(s.lastJan) >= s.janitorPeriod() {
		s.lastJan = now
		s.forgetFinished(now)
	}
	if s.d != nil {
		s.drainCompletions()
		s.watchRecovery(now)
		if now.Sub(s.d.cp.last) >= s.sched.Config().CheckpointPeriod {
			s.checkpoint(now)
		}
	}
}

// forgetFinished drops operations finished longer than the retention ago
// (on the server's clock, give or take one janitorPeriod: an operation is
// seen finished by the first pass after it finished, and forgotten by the
// first pass a retention after that).
func (s *Server) forgetFinished(now clock.Time) {
	infos := s.sched.Operations(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range infos {
		o := &infos[i]
		r := s.ops[o.ID]
		if r == nil || !o.State.Final() {
			continue
		}
		if !r.finished {
			r.finished, r.finishedAt = true, now
			s.releaseDemand(r)
			if s.d != nil && r.state.State == "live" {
				// It finished by itself (its last job completed): stored
				// without waiting, like every change no request awaits.
				r.state.State, r.state.FinishUnixUS = o.State.String(), s.unixUS(now)
				r.durable = s.submit(s.operationStateWrite(o.ID, &r.state))
			}
			continue
		}
		if now.Sub(r.finishedAt).Micros() >= s.opts.FinishedOperationRetention.Microseconds() && o.RunningAllocations == 0 {
			if err := s.sched.ForgetOperation(o.ID); err == nil {
				delete(s.ops, o.ID)
				s.submit(store.Delete(store.Operations, o.ID), store.Delete(store.OperationStates, o.ID))
				s.preemptions.forget(o.ID)
			}
		}
	}
}

// fasthttpLogger sends fasthttp's log lines to slog.
type fasthttpLogger struct{ l *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.l.Warn("fasthttp: " + fmt.Sprintf(format, args...))
}
