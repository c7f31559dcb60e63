package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// Durability (docs/operations.md#state-and-restarts): with a store, every
// change a request makes to the tree config, the pools or the operations is
// written before the change is acknowledged, and New rebuilds them from the
// store. Records are JSON:
//
//	config/tree          the tree config as GET /api/v1/config writes it
//	pools/<name>         the pool as GET /api/v1/pools/{name} writes it
//	operations/<id>      {"seq", "start_unix_us", "body"}: the start, written once
//	operation_states/<id> {"pool", "weight", "resource_limits", "tasks", "state", "finish_unix_us"}
//	counters/operation_id, counters/start_seq
//
// The records' types are in records.go. A change is submitted to the
// store's Committer under s.mu, in the order the changes are made, and
// awaited before the method returns (after s.mu is released where it can
// be, so that concurrent starts share a transaction). A store that fails is
// fail-stop: the change is refused with CodeStoreUnavailable, every later
// change too, and Options.OnStoreFailure stops the process, whose restart
// reloads what was durable.

// durable is a Server's store.
type durable struct {
	c    *store.Committer
	kind string // "bbolt"
	// epochUS is the Unix time in µs of the server clock's 0 (0 for an
	// injected clock, whose values are stored as they are).
	epochUS int64
	failed  atomic.Bool
	once    sync.Once
	onFail  func(error)
	// quarantined are the operations whose records could not be read.
	quarantined []string
	// The work-preserving restart (recovery.go).
	nodes *nodeRegistry
	done  completions
	cp    checkpointState // the fair-share loop's
	epoch uint64          // this process's: 1 + the opens before it
	// goneAtStart are the nodes known to have gone at the last checkpoint
	// of the process before (checkpointState.gone).
	goneAtStart map[string]NodeRecord
	recovering  bool // the fair-share loop's: the window's end not logged yet
	writing     bool // writeCompletions runs (Server.lnMu)
}

// storeMemory is what StoreKind says of a server without a store.
const storeMemory = "memory"

// StoreKind names the store ("bbolt", "etcd"; "memory" without one).
func (s *Server) StoreKind() string {
	if s.d == nil {
		return storeMemory
	}
	return s.d.kind
}

// StoreFailed reports whether the store failed: every change is refused.
func (s *Server) StoreFailed() bool { return s.d != nil && s.d.failed.Load() }

// Durable reports whether the server keeps a store.
func (s *Server) Durable() bool { return s.d != nil }

// Store is the server's store (nil without one), for a backup.
func (s *Server) Store() store.Backend { return s.opts.Store }

// StoreStats are the store's transactions and commits so far (zeros
// without a store).
func (s *Server) StoreStats() (groups, commits uint64) {
	if s.d == nil {
		return 0, 0
	}
	return s.d.c.Stats()
}

// Epoch is this process's restart epoch (0 without a store).
func (s *Server) Epoch() uint64 {
	if s.d == nil {
		return 0
	}
	return s.d.epoch
}

// Quarantined are the operations of the store that could not be restored.
func (s *Server) Quarantined() []string {
	if s.d == nil {
		return nil
	}
	return s.d.quarantined
}

// errStoreFailed is the refusal of a change once the store failed.
func errStoreFailed() error {
	return &apierr.Error{Code: CodeStoreUnavailable,
		Message: "cannot change anything: the store failed and the server is stopping; retry on the restarted server"}
}

// storeOK is nil when changes can be made, the refusal when the store
// failed.
func (s *Server) storeOK() error {
	if s.StoreFailed() {
		return errStoreFailed()
	}
	return nil
}

// submit queues writes in the store (nothing without one).
func (s *Server) submit(ws ...store.Write) store.Pending {
	if s.d == nil || len(ws) == 0 {
		return store.Pending{}
	}
	return s.d.c.Submit(ws...)
}

// await waits until p is durable. On a store error it makes the server
// fail-stop and returns the refusal (CodeStoreUnavailable).
func (s *Server) await(p store.Pending) error {
	err := p.Wait()
	if err == nil {
		return nil
	}
	s.storeFailed(err)
	return &apierr.Error{Code: CodeStoreUnavailable,
		Message: "cannot make the change durable: the store failed (" + err.Error() + "); the server is stopping, retry on the restarted server"}
}

// storeFailed makes the server fail-stop (once).
func (s *Server) storeFailed(err error) {
	s.d.failed.Store(true)
	s.d.once.Do(func() {
		s.log.Error("the store failed: the server takes no more changes and stops", "error", err)
		if s.d.onFail != nil {
			go s.d.onFail(err)
		}
	})
}

// unixUS is the stored form of a server time.
func (s *Server) unixUS(t clock.Time) int64 { return s.d.epochUS + int64(t) }

// serverTime is a stored time on the server clock.
func (s *Server) serverTime(us int64) clock.Time { return clock.Time(us - s.d.epochUS) }

// ---- loading ----

// loaded is what a store held.
type loaded struct {
	config []byte
	pools  map[string][]byte
	ops    []loadedOp
	// counters
	operationID, startSeq uint64
	// recovery.go
	nodes          map[string]NodeRecord
	completed      map[string][]int64
	volumes        map[string]PoolCheckpoint
	goneNodes      map[string]NodeRecord
	badCheckpoints []string
	epoch          uint64
	history        []loadedHistorySeg
}

type loadedOp struct {
	id    string
	rec   OperationRecord
	state OperationState
	err   error // the record could not be read
}

// load reads the store.
func load(b store.Backend) (*loaded, error) {
	l := &loaded{pools: map[string][]byte{}}
	if v, ok, err := b.Get(store.Config, "tree"); err != nil {
		return nil, err
	} else if ok {
		l.config = v
	}
	if err := b.Scan(store.Pools, func(k string, v []byte) error {
		l.pools[k] = slices.Clone(v)
		return nil
	}); err != nil {
		return nil, err
	}
	states := map[string][]byte{}
	if err := b.Scan(store.OperationStates, func(k string, v []byte) error {
		states[k] = slices.Clone(v)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := b.Scan(store.Operations, func(k string, v []byte) error {
		op := loadedOp{id: k}
		if err := json.Unmarshal(v, &op.rec); err != nil {
			op.err = fmt.Errorf("operations/%s: %w", k, err)
		} else if st, ok := states[k]; !ok {
			op.err = fmt.Errorf("operation_states/%s: missing", k)
		} else if err := json.Unmarshal(st, &op.state); err != nil {
			op.err = fmt.Errorf("operation_states/%s: %w", k, err)
		}
		l.ops = append(l.ops, op)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortStableFunc(l.ops, func(a, b loadedOp) int {
		switch {
		case a.rec.Seq < b.rec.Seq:
			return -1
		case a.rec.Seq > b.rec.Seq:
			return 1
		}
		return 0
	})
	for _, c := range []struct {
		name string
		v    *uint64
	}{{"operation_id", &l.operationID}, {"start_seq", &l.startSeq}} {
		v, ok, err := b.Get(store.Counters, c.name)
		if err != nil {
			return nil, err
		}
		if ok {
			if *c.v, err = strconv.ParseUint(string(v), 10, 64); err != nil {
				return nil, fmt.Errorf("counters/%s: %w", c.name, err)
			}
		}
	}
	if err := l.loadRecovery(b); err != nil {
		return nil, err
	}
	return l, nil
}

// empty reports whether the store holds no state yet (a new data
// directory).
func (l *loaded) empty() bool { return l.config == nil && len(l.pools) == 0 && len(l.ops) == 0 }

// serveConfig is the stored tree config and pools as a serve configuration,
// parents before children.
func (l *loaded) serveConfig() (*wire.ServeConfig, error) {
	type poolDoc struct {
		Parent string `json:"parent"`
	}
	children := map[string][]string{}
	for name, rec := range l.pools {
		if name == tree.RootName {
			continue // its entry comes first
		}
		var p poolDoc
		if err := json.Unmarshal(rec, &p); err != nil {
			return nil, fmt.Errorf("pools/%s: %w", name, err)
		}
		children[p.Parent] = append(children[p.Parent], name)
	}
	var doc bytes.Buffer
	doc.WriteString(`{"config":`)
	if l.config != nil {
		doc.Write(l.config)
	} else {
		doc.WriteString("{}")
	}
	doc.WriteString(`,"pools":[`)
	n := 0
	if rec, ok := l.pools[tree.RootName]; ok {
		doc.Write(rec) // the root's acl
		n++
	}
	queue := []string{tree.RootName}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		kids := children[parent]
		slices.Sort(kids)
		for _, k := range kids {
			if n > 0 {
				doc.WriteByte(',')
			}
			doc.Write(l.pools[k])
			n++
			queue = append(queue, k)
		}
	}
	doc.WriteString("]}")
	if n != len(l.pools) {
		return nil, errors.New("pools: the stored pools do not form a tree under the root")
	}
	sc, err := wire.DecodeServeConfig(doc.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the stored config and pools: %w", err)
	}
	return sc, nil
}

// restoreOperations starts the stored operations again in their start
// order, with their changes applied, and finishes the ones that had
// finished. An operation whose record cannot be read or started is
// quarantined: logged and listed at /healthz, the others go on.
func (s *Server) restoreOperations(l *loaded) {
	for i := range l.ops {
		op := &l.ops[i]
		if err := s.restoreOperation(op); err != nil {
			s.d.quarantined = append(s.d.quarantined, op.id)
			s.log.Error("an operation of the store cannot be restored: it is left out", "operation", op.id, "error", err)
		}
	}
	s.sched.AdvanceOperationIDSeq(l.operationID)
	s.opSeq = max(s.opSeq, l.startSeq)
}

func (s *Server) restoreOperation(op *loadedOp) error {
	if op.err != nil {
		return op.err
	}
	// The start as it was asked for, with what changed since applied.
	spec, err := wire.DecodeStartOperation(op.rec.Body)
	if err != nil {
		return fmt.Errorf("operations/%s: %w", op.id, err)
	}
	spec.ID = op.id
	st := &op.state
	if st.Pool != nil {
		spec.Pool = *st.Pool
		if spec.Pool == tree.RootName {
			spec.Pool = ""
		}
	}
	if st.Weight != nil {
		spec.Weight = tree.Some(*st.Weight)
	}
	if st.ResourceLimits != nil {
		// As a PATCH wrote them ("null": removed).
		p, err := wire.DecodeOperationPatch(slices.Concat([]byte(`{"resource_limits":`), st.ResourceLimits, []byte("}")))
		if err != nil {
			return fmt.Errorf("operation_states/%s: %w", op.id, err)
		}
		spec.ResourceLimits = p.ResourceLimits
	}
	if _, _, err := s.sched.StartOperation(s.serverTime(op.rec.StartUnixUS), spec); err != nil {
		return fmt.Errorf("operations/%s: %w", op.id, err)
	}
	if st.Tasks != nil {
		// The job counts and tasks of its PATCHes.
		p, err := wire.DecodeOperationPatch(append(append([]byte(`{"tasks":`), st.Tasks...), '}'))
		if err == nil {
			spec.Tasks, err = schedule.PatchedTasks(op.id, spec.Tasks, p.Tasks)
		}
		if err == nil && st.State == StateLive {
			_, err = s.sched.PatchOperation(op.id, p.OperationPatch)
		}
		if err != nil {
			return fmt.Errorf("operation_states/%s: tasks: %w", op.id, err)
		}
	}
	r := &opRecord{seq: op.rec.Seq, state: *st, owner: op.rec.Owner, demand: wire.Demand(&spec), tasks: slices.Clone(spec.Tasks)}
	s.demand = s.demand.Add(r.demand)
	s.ops[op.id] = r
	s.opSeq = max(s.opSeq, r.seq)
	switch st.State {
	case StateCompleted, StateAborted:
		finish := s.sched.CompleteOperation
		if st.State == StateAborted {
			finish = s.sched.AbortOperation
		}
		if err := finish(op.id); err != nil {
			return fmt.Errorf("operations/%s: finishing it: %w", op.id, err)
		}
		r.finished, r.finishedAt = true, s.serverTime(st.FinishUnixUS)
		s.releaseDemand(r)
	}
	return nil
}

// openStore finishes New with a store: it restores the operations of a
// store that held state (l), or writes the config and the pools of a new
// one.
func (s *Server) openStore(l *loaded) error {
	if l != nil {
		s.restoreOperations(l)
		s.log.Info("state loaded from the store", "store", s.d.kind, "pools", len(l.pools),
			"operations", len(l.ops)-len(s.d.quarantined), "quarantined", len(s.d.quarantined),
			"nodes", len(l.nodes))
		return s.beginDurable(l)
	}
	ws := []store.Write{configWrite(&s.cfg)}
	for _, p := range s.sched.Pools(nil) {
		ws = append(ws, store.Put(store.Pools, p.Name, wire.AppendPool(nil, p.Name, p.Parent, &p.Config)))
	}
	if err := s.d.c.Commit(ws...); err != nil {
		return fmt.Errorf("writing the store: %w", err)
	}
	return s.beginDurable(nil)
}

// WaitDurable waits until every write submitted so far (checkpoints and
// completions included, which no caller awaits) is durable; nil without a
// store.
func (s *Server) WaitDurable() error {
	if s.d == nil {
		return nil
	}
	return s.d.c.Commit()
}
