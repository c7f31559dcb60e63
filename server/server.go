// Package server is fairsched's scheduling service without its HTTP API:
// it owns the scheduling core (schedule.Scheduler), the clock that feeds
// it, the store and what is kept in it (the records, the node registry,
// the checkpoints and the work-preserving restart), the retention of
// finished operations, the application of a config and the recent
// preemptions, and offers typed methods for what a front end does: start,
// change and finish operations; create, change and remove pools; change or
// reload the config; heartbeats; reads. The HTTP API (package facade) and a
// replica's leadership term (package replica) each drive one Server; it
// imports nothing of HTTP.
//
// # Concurrency
//
// Methods are safe for concurrent use. The core serialises control-plane
// calls under its own lock and shards heartbeats by node; the Server adds a
// mutex around pool, config and operation changes that read before they
// write, so that two of them never interleave. Heartbeats never take it.
//
// # Errors
//
// Refusals are *apierr.Error values with the codes of the core and those of
// this package (CodeStoreUnavailable, CodeDemandOverflow, CodeNotSupported),
// their paths relative to the request's body ("pool", "$.tasks"). A
// front end's guard refuses through the authorize callbacks: they answer
// the caller themselves and the method then returns ErrRefused.
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// Options configure a Server. The zero value serves an empty tree with the
// default config on the wall clock, in memory.
type Options struct {
	// Config is the tree config and the initial pools (wire.DecodeServeConfig);
	// nil means schedule.DefaultConfig and no pools.
	Config *wire.ServeConfig
	// Clock supplies the time; nil means the wall clock, starting at 0 when
	// the Server is created. It must be safe for concurrent use.
	Clock clock.Clock
	// Logger receives the server's log lines (nil: slog.Default()).
	Logger *slog.Logger
	// ManualUpdates: the caller runs UpdateFairShare (tests on a manual
	// clock); Run then starts no updater and no slow update is logged.
	ManualUpdates bool
	// FinishedOperationRetention is how long finished operations stay
	// visible before they are forgotten (0: 10 minutes): between one and
	// one and a half retentions after they finished, on Clock (they are
	// looked for every min(10 s, retention/2)).
	FinishedOperationRetention time.Duration
	// Store, when set, keeps the tree config, the pools and the operations
	// durable (durable.go): a store that holds state is what New starts
	// from (Config then only seeds an empty store). The Server does not
	// close it.
	Store store.Backend
	// OnStoreFailure is called (once, on its own goroutine) when a store
	// write fails: every change is refused with CodeStoreUnavailable from
	// then on and the caller should stop the server.
	OnStoreFailure func(error)
	// Hooks are the front end's (SetHooks replaces them).
	Hooks Hooks
	// HistoryTiers are the resolutions of the pools' history (history.ValidateTiers;
	// nil: history.DefaultTiers, 10 s for the last hour and 5 minutes for
	// the last 24 hours).
	HistoryTiers []history.Config
}

// Hooks tell a front end what it derives from the service; nil members are
// not called.
type Hooks struct {
	// PoolsChanged is called, under the Server's mutex, after every change
	// of the pools (a front end's permission index).
	PoolsChanged func()
	// FairShareUpdate receives the duration of each fair-share update;
	// PendingWait the wait of each operation that started pending, once it
	// runs (metrics).
	FairShareUpdate func(time.Duration)
	PendingWait     func(time.Duration)
}

// SetHooks replaces the hooks of Options: a front end that is handed a
// Server (a replica's term) calls it before Run and before any change.
func (s *Server) SetHooks(h Hooks) { s.opts.Hooks = h }

// Error codes of the service.
const (
	// CodeStoreUnavailable: the store failed; the server takes no more
	// changes and is stopping.
	CodeStoreUnavailable = "store_unavailable"
	// CodeDemandOverflow: the demand of the unfinished operations would
	// pass 2^53 in a resource.
	CodeDemandOverflow = "demand_overflow"
	// CodeNotSupported: the server cannot do what was asked (a backup
	// without a store).
	CodeNotSupported = "not_supported"
	// CodeRecovering is the recovery window's error code (a readiness
	// check's).
	CodeRecovering = "recovering"
)

// ErrRefused is returned by a method whose authorize callback refused: the
// callback answered the caller, nothing changed.
var ErrRefused = errors.New("refused by the caller's guard")

// Server is fairsched's scheduling service. See the package documentation.
type Server struct {
	opts  Options
	log   *slog.Logger
	clock clock.Clock
	sched *schedule.Scheduler
	// d is the store (nil: in memory only).
	d *durable
	// period is the fair-share update period in nanoseconds, maxBatch the
	// config's max_heartbeats_per_batch (read without mu).
	period   atomic.Int64
	maxBatch atomic.Int64

	// mu serialises the read-modify-write changes (pools, config,
	// operation starts and patches); heartbeats never take it.
	mu sync.Mutex
	// cfg is the config the Server runs with.
	cfg schedule.Config
	// ops records the service's view of every operation it started: the
	// listing cursor and when it was first seen finished.
	ops   map[string]*opRecord
	opSeq uint64
	// pendingSince are the operations started pending, with their start
	// time, until the updater sees them run (OnPendingWait).
	pendingSince map[string]clock.Time
	// demand is the declared demand of the operations that have not
	// finished (opRecord.demand), bounded by maxLiveDemand.
	demand resource.Vec

	// preemptions are the operations' recent preemptions (events.go).
	preemptions *preemptionLog
	// hist is the pools' history (history.go); epochUS the Unix time in
	// µs of the clock's 0 (0 for an injected clock), its time base.
	hist    *historyState
	epochUS int64

	updateMu    sync.Mutex // one fair-share update at a time
	lastSlowLog time.Time  // when UpdateFairShare last warned of a slow update
	lastJan     clock.Time // the last forgetFinished pass, on s.clock

	runOnce  sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	done     sync.WaitGroup
}

// opRecord is the service's record of an operation.
type opRecord struct {
	seq        uint64
	finished   bool       // seen finished by forgetFinished
	finishedAt clock.Time // when it was first seen finished
	// state is what the store keeps of its changes (with a store), and
	// durable the last write of it: a retry answers once it is durable.
	state   OperationState
	durable store.Pending
	// owner is the user who started it ("" without tokens); demand its
	// declared demand, counted in Server.demand until released.
	owner    string
	demand   resource.Vec
	released bool
	// tasks are the operation's tasks with their current job counts (PATCH
	// tasks changes them), for the orchid and the live demand.
	tasks []schedule.TaskSpec
}

// New builds a Server: the scheduler with the config's tree, or with what
// the store holds. An invalid initial tree is an *wire.Error naming the
// pool's path.
func New(opts Options) (*Server, error) {
	sc := opts.Config
	if sc == nil {
		sc = &wire.ServeConfig{Scheduler: schedule.DefaultConfig()}
	}
	if opts.FinishedOperationRetention <= 0 {
		opts.FinishedOperationRetention = 10 * time.Minute
	}
	s := &Server{
		opts:         opts,
		log:          opts.Logger,
		clock:        opts.Clock,
		cfg:          sc.Scheduler,
		ops:          make(map[string]*opRecord),
		pendingSince: make(map[string]clock.Time),
		stop:         make(chan struct{}),
		preemptions:  newPreemptionLog(nil),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.preemptions.log = s.log
	epochUS := int64(0)
	if s.clock == nil {
		start := time.Now()
		epochUS = start.UnixMicro()
		s.clock = clock.Func(func() clock.Time { return clock.Time(time.Since(start).Microseconds()) })
	}
	s.epochUS = epochUS
	hist, err := newHistoryState(opts.HistoryTiers)
	if err != nil {
		return nil, fmt.Errorf("the history's tiers: %w", err)
	}
	s.hist = hist
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
		defer func() { built = s.sched != nil }()
	}
	s.refreshDerived(&s.cfg)

	root, ms, paths, werr := sc.Tree()
	if werr != nil {
		return nil, werr
	}
	sched := schedule.New(tree.New(root), sc.Scheduler)
	if len(ms) > 0 {
		if i, err := sched.ApplyPools(ms...); err != nil {
			return nil, pathError(err, paths[i])
		}
	}
	s.sched = sched
	if s.d != nil {
		if err := s.openStore(fromStore); err != nil {
			s.sched = nil
			return nil, err
		}
	}
	return s, nil
}

// pathError is the core's err with its path under prefix (for a pool of a
// file: the file's JSON path): a pool's "name" is the entry itself; other
// errors are returned as they are.
func pathError(err error, prefix string) error {
	var e *apierr.Error
	if !errors.As(err, &e) || e.Absolute() {
		return err
	}
	path := prefix
	inBody := e.Code == tree.CodeDuplicateName || e.Code == schedule.CodeDuplicateID || e.Code == tree.CodeInvalidName
	if e.Path != "" && (inBody || e.Path != "name" && e.Path != "id") {
		path = apierr.Join(prefix, e.Path)
	}
	return &apierr.Error{Code: e.Code, Message: e.Message, Path: path}
}

// Scheduler returns the scheduling core the Server drives, for reads (a
// front end's listings and views); changes go through the Server.
func (s *Server) Scheduler() *schedule.Scheduler { return s.sched }

// Now returns the clock's reading, as the core takes it.
func (s *Server) Now() clock.Time { return s.clock.Now() }

// Clock is the Server's clock.
func (s *Server) Clock() clock.Clock { return s.clock }

// Logger is the Server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Config returns the config the Server runs with.
func (s *Server) Config() schedule.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Period is the fair-share update period (on the wall clock).
func (s *Server) Period() time.Duration { return time.Duration(s.period.Load()) }

// MaxHeartbeatsPerBatch is the config's max_heartbeats_per_batch.
func (s *Server) MaxHeartbeatsPerBatch() int { return int(s.maxBatch.Load()) }

// applyConfig makes next the config the server runs with: the core takes
// it (schedule.Scheduler.SetConfig), and everything derived from it is
// refreshed (refreshDerived). Reload and PatchConfig both apply a config
// through it; a config the core refuses changes nothing. s.mu held.
func (s *Server) applyConfig(next schedule.Config) error {
	if err := s.sched.SetConfig(next); err != nil {
		return err
	}
	s.cfg = next
	s.refreshDerived(&next)
	return nil
}

// refreshDerived refreshes what is derived from the config c and read
// without s.mu: the updater's period and the batches' bound (a config built
// in code without max_heartbeats_per_batch, 0, gets the default).
func (s *Server) refreshDerived(c *schedule.Config) {
	s.period.Store(int64(time.Duration(c.FairShareUpdatePeriod.Micros()) * time.Microsecond))
	n := c.MaxHeartbeatsPerBatch
	if n <= 0 {
		n = schedule.DefaultConfig().MaxHeartbeatsPerBatch
	}
	s.maxBatch.Store(int64(n))
}

// Run runs one fair-share update, then starts the updater (unless
// ManualUpdates) and, with a store, the writer of completions, until Close.
// Calls after the first do nothing.
func (s *Server) Run() {
	s.runOnce.Do(func() {
		select {
		case <-s.stop:
			return
		default:
		}
		s.UpdateFairShare()
		if !s.opts.ManualUpdates {
			s.done.Add(1)
			go s.updater()
		}
		if s.d != nil {
			s.done.Add(1)
			go s.writeCompletions()
		}
	})
}

// Close stops the updater and the writer, waits for them, and closes the
// store's committer (not the store). Calls after the first do nothing.
func (s *Server) Close() {
	s.stopOnce.Do(func() {
		s.runOnce.Do(func() {}) // no Run after Close
		close(s.stop)
		s.done.Wait()
		if s.d != nil {
			s.d.c.Close()
		}
	})
}

// updater runs UpdateFairShare every fair_share_update_period on the wall
// clock until Close.
func (s *Server) updater() {
	defer s.done.Done()
	t := time.NewTimer(s.Period())
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.UpdateFairShare()
		t.Reset(s.Period())
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

// UpdateFairShare runs one fair-share update now (docs/semantics.md), records
// its duration and the pools' history, and every janitorPeriod forgets operations that finished
// longer ago than the retention; with a store it writes the completions,
// watches the recovery window and writes a checkpoint every
// checkpoint_period_s.
func (s *Server) UpdateFairShare() {
	s.updateMu.Lock()
	defer s.updateMu.Unlock()
	now := s.clock.Now()
	start := time.Now()
	s.sched.UpdateFairShare(now)
	took := time.Since(start)
	if s.opts.Hooks.FairShareUpdate != nil {
		s.opts.Hooks.FairShareUpdate(took)
	}
	s.observePendingWaits(now)
	s.recordHistory(now)
	if period := s.Period(); took > period && !s.opts.ManualUpdates && time.Since(s.lastSlowLog) >= time.Minute {
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

// observePendingWaits reports the waits of the operations that left the
// pending state since the last call.
func (s *Server) observePendingWaits(now clock.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, since := range s.pendingSince {
		o, err := s.sched.Operation(id)
		switch {
		case err != nil || o.State.Final():
			delete(s.pendingSince, id) // forgotten, or finished while pending: no wait ended
		case o.State == schedule.StateRunning:
			if s.opts.Hooks.PendingWait != nil {
				s.opts.Hooks.PendingWait(time.Duration(max(now.Sub(since), 0).Micros()) * time.Microsecond)
			}
			delete(s.pendingSince, id)
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
			if s.d != nil && r.state.State == StateLive {
				// It finished by itself (its last job completed): stored
				// without waiting, like every change no request awaits.
				r.state.State, r.state.FinishUnixUS = o.State.String(), s.unixUS(now)
				r.durable = s.submit(operationStateWrite(o.ID, &r.state))
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

// poolsChanged tells the front end the pools changed. s.mu held.
func (s *Server) poolsChanged() {
	if s.opts.Hooks.PoolsChanged != nil {
		s.opts.Hooks.PoolsChanged()
	}
}
