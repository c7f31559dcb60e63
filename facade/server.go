// Package facade serves fairsched's scheduling service (package server)
// over HTTP/JSON on fasthttp (docs/api.md): pools, the tree config,
// operations, node heartbeats, the orchid, POST /api/v1/solve, /metrics,
// /debug/pprof/ and /healthz. It is the HTTP API only: routing, decoding,
// the guards (tokens, ACLs, hosts, origins), encoding and the metrics'
// exposition; what a request changes, and what is kept of it, is the
// server package's.
//
// # Ownership and concurrency
//
// A Server drives one server.Server, which owns the scheduling core, the
// clock, the store and the fair-share updater. Handlers run concurrently on
// fasthttp's workers and read the clock once per request.
//
// Handlers never retain the *fasthttp.RequestCtx or its buffers after they
// return. Request scratch (the decoded heartbeat, the core's response, the
// output buffer) comes from sync.Pools, the only pools of the process
// (pooled scratch keeps the hot paths free of allocations; nothing else is
// pooled).
//
// # Errors
//
// Every non-2xx answer is {"error": {"code", "message", "path"}}
// (docs/api.md#errors), including fasthttp's own errors (Server.ErrorHandler) and panics,
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
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// DefaultMaxBodySize is the default request body limit (4 MiB).
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
	// durable (see package server): a store that holds state is what New
	// starts from (Config then only seeds an empty store). The Server
	// does not close it.
	Store store.Backend
	// OnStoreFailure is called (once, on its own goroutine) when a store
	// write fails: the server answers 503 store_unavailable to every change
	// from then on and the caller should stop it.
	OnStoreFailure func(error)
	// HistoryTiers are the resolutions of the pools' history
	// (server.Options.HistoryTiers; nil: 10 s for an hour, 5 min for 24 h).
	HistoryTiers []history.Config

	// Service, when set, is the service the Server drives (a replica
	// builds one per leadership term); Config, Clock, ManualUpdates,
	// FinishedOperationRetention, Store, OnStoreFailure and HistoryTiers are then its
	// own and ignored here. Shutdown closes it.
	Service *server.Server

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
	opts Options
	log  *slog.Logger
	// core is the service the requests drive; sched its scheduling core,
	// which handlers read (listings and views) and never change.
	core  *server.Server
	sched *schedule.Scheduler
	clock clock.Clock
	http  *fasthttp.Server
	names *wire.Interner
	m     *metricsSet
	// stopping is set when Shutdown begins (/readyz answers 503).
	stopping atomic.Bool
	inFl     atomic.Int64
	solves   chan struct{}

	hbPool    sync.Pool // *hbScratch
	batchPool sync.Pool // *batchScratch
	bufPool   sync.Pool // *[]byte

	stop     chan struct{}
	stopOnce sync.Once
	// lnMu guards listeners: Shutdown closes the listeners of every Serve,
	// including one that fasthttp has not registered yet, and a Serve that
	// finds stop closed returns at once.
	lnMu      sync.Mutex
	listeners []*onceCloseListener

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
	// tags are the distinct node tags of the cluster (bounded).
	tags tagSet
}

// New builds a Server and the service it drives (server.New): the
// scheduler with the config's tree, or what the store holds. An invalid
// initial tree is an *wire.Error naming the pool's path.
func New(opts Options) (*Server, error) {
	if opts.MaxBodySize <= 0 {
		opts.MaxBodySize = DefaultMaxBodySize
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 16384
	}
	if opts.MaxConcurrentSolves <= 0 {
		opts.MaxConcurrentSolves = runtime.GOMAXPROCS(0)
	}
	s := &Server{
		opts:   opts,
		log:    opts.Logger,
		names:  wire.NewInterner(maxInterned),
		solves: make(chan struct{}, opts.MaxConcurrentSolves),
		stop:   make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	hooks := server.Hooks{PoolsChanged: s.rebuildACL,
		FairShareUpdate: func(d time.Duration) { s.m.fairShareUpdate.Observe(d.Seconds()) },
		PendingWait:     func(d time.Duration) { s.m.pendingWait.Observe(d.Seconds()) }}
	core := opts.Service
	if core == nil {
		var err error
		if core, err = server.New(ServiceOptions(&opts)); err != nil {
			return nil, err
		}
	}
	core.SetHooks(hooks)
	s.core, s.sched, s.clock = core, core.Scheduler(), core.Clock()
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

// ServiceOptions are the options of the service that New builds from
// opts (when opts.Service is nil).
func ServiceOptions(opts *Options) server.Options {
	return server.Options{Config: opts.Config, Clock: opts.Clock, Logger: opts.Logger,
		ManualUpdates: opts.ManualUpdates, FinishedOperationRetention: opts.FinishedOperationRetention,
		Store: opts.Store, OnStoreFailure: opts.OnStoreFailure, HistoryTiers: opts.HistoryTiers}
}

// NewHTTPServer returns the fasthttp server of a Server, or of a front door
// that hands a Server its requests (a replica's): its timeouts, body limit
// and the settings that keep a request's secrets out of fasthttp's logs,
// with the connections tracked by conns (its Shutdown calls
// conns.StopReading first).
func NewHTTPServer(handler fasthttp.RequestHandler, onError func(*fasthttp.RequestCtx, error),
	expect func(*fasthttp.RequestCtx) int, conns *ConnTracker, maxBody int, log *slog.Logger) *fasthttp.Server {
	return &fasthttp.Server{
		Handler: handler,
		// fasthttp calls it for a request it could not read (whole), and
		// closes the connection after the answer: lingerOnClose keeps that
		// close from resetting the answer away.
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			lingerOnClose(ctx)
			onError(ctx, err)
		},
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

// Core returns the service the Server drives.
func (s *Server) Core() *server.Server { return s.core }

// ReloadResult is what Reload changed.
type ReloadResult = server.ReloadResult

// Reload makes the server's tree config and pools those of sc, as
// fairsched serve does on SIGHUP (server.Server.Reload).
func (s *Server) Reload(sc *wire.ServeConfig) (ReloadResult, error) { return s.core.Reload(sc) }

// UpdateFairShare runs one fair-share update now (server.Server.UpdateFairShare).
func (s *Server) UpdateFairShare() { s.core.UpdateFairShare() }

// HTTPServer returns the fasthttp server, for callers that serve it
// themselves (tests over an in-memory listener).
func (s *Server) HTTPServer() *fasthttp.Server { return s.http }

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
	s.lnMu.Unlock()
	s.core.Run()
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
	s.core.Close()
	return err
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

// fasthttpLogger sends fasthttp's log lines to slog.
type fasthttpLogger struct{ l *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.l.Warn("fasthttp: " + fmt.Sprintf(format, args...))
}
