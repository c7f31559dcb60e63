package facade

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// Durability (docs/operations.md, "State and restarts"): with a store, every
// change a request makes to the tree config, the pools or the operations is
// written before the request is answered 2xx, and New rebuilds them from the
// store. Records are JSON:
//
//	config/tree          the tree config as GET /api/v1/config writes it
//	pools/<name>         the pool as GET /api/v1/pools/{name} writes it
//	operations/<id>      {"seq", "start_unix_us", "body"}: the start, written once
//	operation_states/<id> {"pool", "weight", "resource_limits", "state", "finish_unix_us"}
//	counters/operation_id, counters/start_seq
//
// A change is submitted to the store's Committer under s.mu, in the order
// the changes are made, and awaited before the answer (after s.mu is
// released where the handler can, so that concurrent starts share a
// transaction). A store that fails is fail-stop: the request answers 503
// store_unavailable, every later change too, and Options.OnStoreFailure
// stops the process, whose restart reloads what was durable.

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
	goneAtStart map[string]nodeRecord
	recovering  bool // the fair-share loop's: the window's end not logged yet
	writing     bool // writeCompletions runs (Server.lnMu)
}

// Store names and error code of the durable server.
const (
	CodeStoreUnavailable = "store_unavailable"
	storeMemory          = "memory"
)

// storeKind is what /healthz says of the store.
func (s *Server) storeKind() string {
	if s.d == nil {
		return storeMemory
	}
	return s.d.kind
}

// storeOK reports whether changes can be made; when the store failed it
// answers 503 store_unavailable.
func (s *Server) storeOK(ctx *fasthttp.RequestCtx) bool {
	if s.d == nil || !s.d.failed.Load() {
		return true
	}
	s.writeError(ctx, fasthttp.StatusServiceUnavailable, &wire.Error{Code: CodeStoreUnavailable,
		Message: "cannot change anything: the store failed and the server is stopping; retry on the restarted server"})
	return false
}

// submit queues writes in the store (nothing without one).
func (s *Server) submit(ws ...store.Write) store.Pending {
	if s.d == nil || len(ws) == 0 {
		return store.Pending{}
	}
	return s.d.c.Submit(ws...)
}

// await waits until p is durable. On a store error it answers 503
// store_unavailable, makes the server fail-stop and reports false.
func (s *Server) await(ctx *fasthttp.RequestCtx, p store.Pending) bool {
	err := p.Wait()
	if err == nil {
		return true
	}
	s.storeFailed(err)
	s.writeError(ctx, fasthttp.StatusServiceUnavailable, &wire.Error{Code: CodeStoreUnavailable,
		Message: "cannot make the change durable: the store failed (" + err.Error() + "); the server is stopping, retry on the restarted server"})
	return false
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

// ---- records ----

func configWrite(c *schedule.Config) store.Write {
	return store.Put(store.Config, "tree", wire.AppendConfig(nil, c))
}

// poolWrite is the record of pool name as the scheduler has it now.
func (s *Server) poolWrite(name string) store.Write {
	p, err := s.sched.Pool(name)
	if err != nil {
		panic("BUG: no pool " + name + " to store: " + err.Error())
	}
	return store.Put(store.Pools, name, wire.AppendPool(nil, p.Name, p.Parent, &p.Config))
}

// operationRecord is an operation's start.
type operationRecord struct {
	Seq         uint64          `json:"seq"`
	StartUnixUS int64           `json:"start_unix_us"`
	Body        json.RawMessage `json:"body"`
	// Owner is the user who started it (absent without tokens).
	Owner string `json:"owner,omitempty"`
}

// operationState is what changed of an operation since its start.
type operationState struct {
	// Pool, Weight and ResourceLimits are set when a PATCH changed them
	// (ResourceLimits "null": removed).
	Pool           *string         `json:"pool,omitempty"`
	Weight         *float64        `json:"weight,omitempty"`
	ResourceLimits json.RawMessage `json:"resource_limits,omitempty"`
	// State is "completed" or "aborted" once it finished, else "live".
	State        string `json:"state"`
	FinishUnixUS int64  `json:"finish_unix_us,omitempty"`
}

func (s *Server) operationStateWrite(id string, st *operationState) store.Write {
	b, err := json.Marshal(st)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return store.Put(store.OperationStates, id, b)
}

func counterWrite(name string, v uint64) store.Write {
	return store.Put(store.Counters, name, strconv.AppendUint(nil, v, 10))
}

// operationStartWrites are the records of a new operation.
func (s *Server) operationStartWrites(id string, r *opRecord, body []byte, start clock.Time) []store.Write {
	rec, err := json.Marshal(operationRecord{Seq: r.seq, StartUnixUS: s.unixUS(start), Body: compactJSON(body), Owner: r.owner})
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return []store.Write{
		store.Put(store.Operations, id, rec),
		s.operationStateWrite(id, &r.state),
		counterWrite("operation_id", s.sched.OperationIDSeq()),
		counterWrite("start_seq", s.opSeq),
	}
}

func compactJSON(b []byte) json.RawMessage {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return append(json.RawMessage(nil), b...) // validated already: cannot happen
	}
	return out.Bytes()
}

// ---- loading ----

// loaded is what a store held.
type loaded struct {
	config []byte
	pools  map[string][]byte
	ops    []loadedOp
	// counters
	operationID, startSeq uint64
	// recovery.go
	nodes          map[string]nodeRecord
	completed      map[string][]int64
	volumes        map[string]poolCheckpoint
	goneNodes      map[string]nodeRecord
	badCheckpoints []string
	epoch          uint64
}

type loadedOp struct {
	id    string
	rec   operationRecord
	state operationState
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
	var body map[string]json.RawMessage
	if err := json.Unmarshal(op.rec.Body, &body); err != nil {
		return fmt.Errorf("operations/%s: body: %w", op.id, err)
	}
	id, _ := json.Marshal(op.id)
	body["id"] = id
	st := &op.state
	if st.Pool != nil {
		body["pool"], _ = json.Marshal(*st.Pool)
	}
	if st.Weight != nil {
		body["weight"], _ = json.Marshal(*st.Weight)
	}
	if st.ResourceLimits != nil {
		if string(st.ResourceLimits) == "null" {
			delete(body, "resource_limits")
		} else {
			body["resource_limits"] = st.ResourceLimits
		}
	}
	merged, err := json.Marshal(body)
	if err != nil {
		return err
	}
	spec, err := wire.DecodeStartOperation(merged)
	if err != nil {
		return fmt.Errorf("operations/%s: %w", op.id, err)
	}
	if _, _, err := s.sched.StartOperation(s.serverTime(op.rec.StartUnixUS), spec); err != nil {
		return fmt.Errorf("operations/%s: %w", op.id, err)
	}
	r := &opRecord{seq: op.rec.Seq, state: *st, owner: op.rec.Owner, demand: wire.Demand(&spec), tasks: slices.Clone(spec.Tasks)}
	s.demand = s.demand.Add(r.demand)
	s.ops[op.id] = r
	s.opSeq = max(s.opSeq, r.seq)
	switch st.State {
	case "completed", "aborted":
		finish := s.sched.CompleteOperation
		if st.State == "aborted" {
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

// serveBackup answers GET /api/v1/backup with a consistent copy of the
// store's file (one read transaction: changes go on meanwhile), to loopback
// clients only. A server without a store answers 409 not_supported.
func (s *Server) serveBackup(ctx *fasthttp.RequestCtx) {
	if s.tokens.Load() == nil && !ctx.RemoteIP().IsLoopback() {
		// With tokens, guard let only admins through.
		s.writeError(ctx, fasthttp.StatusForbidden, &wire.Error{Code: CodeForbidden,
			Message: "cannot serve a backup to " + ctx.RemoteIP().String() + ": without tokens, only to clients on the loopback interface"})
		return
	}
	w, ok := s.opts.Store.(io.WriterTo)
	if s.d == nil || !ok {
		s.writeError(ctx, fasthttp.StatusConflict, &wire.Error{Code: CodeNotSupported,
			Message: "cannot back up a server that keeps no store: it runs without --data-dir"})
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/octet-stream")
	ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+store.FileName+`"`)
	ctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
		if _, err := w.WriteTo(bw); err != nil {
			s.log.Error("a backup failed mid-way: the client has a truncated copy", "error", err)
		}
	})
	s.logChange(ctx, "backup served")
}

// wallEpochUS is the Unix time in µs at which a wall clock starting now
// reads 0.
func wallEpochUS(now time.Time) int64 { return now.UnixMicro() }
