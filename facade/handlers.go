package facade

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// respond answers 'status' with the JSON that fn appends.
func (s *Server) respond(ctx *fasthttp.RequestCtx, status int, fn func(dst []byte) []byte) {
	bp := s.getBuf()
	*bp = append(fn((*bp)[:0]), '\n')
	writeJSON(ctx, status, *bp)
	s.putBuf(bp)
}

// ---- pools (api.md §2) ----

func (s *Server) listPools(ctx *fasthttp.RequestCtx) { s.writePools(ctx, appendPoolConfig) }

func (s *Server) getPool(ctx *fasthttp.RequestCtx, name string) {
	if s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		s.writePool(ctx, fasthttp.StatusOK, name, appendPoolConfig)
	}
}

func appendPoolConfig(dst []byte, p *schedule.PoolInfo) []byte {
	return wire.AppendPool(dst, p.Name, p.Parent, &p.Config)
}

// writePools answers {"pools": [...]} with every pool encoded by enc.
func (s *Server) writePools(ctx *fasthttp.RequestCtx, enc func([]byte, *schedule.PoolInfo) []byte) {
	pools := s.sched.Pools(nil)
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = append(dst, `{"pools":[`...)
		for i := range pools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = enc(dst, &pools[i])
		}
		return append(dst, "]}"...)
	})
}

// writePool answers one pool encoded by enc with status, or 404.
func (s *Server) writePool(ctx *fasthttp.RequestCtx, status int, name string, enc func([]byte, *schedule.PoolInfo) []byte) {
	p, err := s.sched.Pool(name)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.respond(ctx, status, func(dst []byte) []byte { return enc(dst, &p) })
}

// putPool creates or replaces a pool (api.md §2). A missing "parent" is the
// root: PUT replaces the whole configuration, the parent included. It
// needs administer on the pool (replacing it) or on its parent (creating
// it), and on the new parent when it moves.
func (s *Server) putPool(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		return
	}
	b, err := wire.DecodePool(ctx.PostBody(), tree.PoolConfig{})
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.bodyName(ctx, b, name) || name == tree.RootName && !s.rootBody(ctx) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.sched.Pool(name)
	exists := err == nil
	m := tree.Mutation{Kind: tree.AddPool, Name: name, Pool: b.Config}
	if b.HasParent && b.Parent != tree.RootName {
		m.Parent = b.Parent
	}
	parentPath := "$"
	if b.HasParent {
		parentPath = "$.parent"
	}
	status := fasthttp.StatusCreated
	if exists {
		m.Kind, status = tree.SetPool, fasthttp.StatusOK
		if name != tree.RootName && m.Parent == "" {
			m.Parent = tree.RootName
		}
		if !s.mayPool(ctx, tree.PermAdminister, name, "$.url.name", "replace pool "+strconv.Quote(name)) {
			return
		}
		if name != tree.RootName && parentName(m.Parent) != cur.Parent &&
			!s.mayPool(ctx, tree.PermAdminister, m.Parent, parentPath, "move pool "+strconv.Quote(name)+" into pool "+strconv.Quote(parentName(m.Parent))) {
			return
		}
	} else if name == tree.RootName {
		panic("BUG: the root pool does not exist")
	} else if !s.mayPool(ctx, tree.PermAdminister, m.Parent, parentPath, "create pool "+strconv.Quote(name)+" in pool "+strconv.Quote(parentName(m.Parent))) {
		return
	}
	if name == tree.RootName && b.HasParent && b.Parent != tree.RootName {
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: tree.CodeInvalidValue, Path: "$.parent", Message: "cannot give the root pool a parent"})
		return
	}
	if _, err := s.sched.ApplyPools(m); err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.rebuildACL()
	if !s.await(ctx, s.submit(s.poolWrite(name))) {
		return
	}
	if exists {
		s.logChange(ctx, "pool replaced", "pool", name)
	} else {
		s.logChange(ctx, "pool created", "pool", name, "parent", parentName(m.Parent))
	}
	s.writePool(ctx, status, name, appendPoolConfig)
}

// rootKeys are what a body for the root pool may set: the root is always
// fair_share and has no attributes but its acl (and no ancestors to
// inherit one from).
var rootKeys = []string{"name", "parent", "mode", "acl"}

// rootBody checks that a PUT or PATCH of the root sets only its acl (and
// repeats its name, parent and mode); it answers 400 naming the first other
// key.
func (s *Server) rootBody(ctx *fasthttp.RequestCtx) bool {
	m, e := jsonpath.DecodeObject(ctx.PostBody(), "body")
	if e != nil {
		s.writeError(ctx, fasthttp.StatusBadRequest, e)
		return false
	}
	for _, k := range jsonpath.SortedKeys(m) {
		if !slices.Contains(rootKeys, k) {
			s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: tree.CodeInvalidValue, Path: jsonpath.Key("$", k),
				Message: "cannot set " + k + " of the root pool: it takes only an acl (and is always fair_share)"})
			return false
		}
	}
	return true
}

// bodyName checks that a body's "name", when given, is the URL's.
func (s *Server) bodyName(ctx *fasthttp.RequestCtx, b *wire.PoolBody, name string) bool {
	if b.Name != "" && b.Name != name {
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "$.name",
			Message: "cannot use name " + strconv.Quote(b.Name) + " in the body of pool " + strconv.Quote(name) + ": leave it out or repeat the URL's"})
		return false
	}
	return true
}

// patchPool changes the listed attributes of a pool (api.md §2). It needs
// administer on the pool, and on the new parent when it moves.
func (s *Server) patchPool(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.sched.Pool(name)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.mayPool(ctx, tree.PermAdminister, name, "$.url.name", "change pool "+strconv.Quote(name)) {
		return
	}
	b, err := wire.DecodePool(ctx.PostBody(), cur.Config)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.bodyName(ctx, b, name) || name == tree.RootName && !s.rootBody(ctx) {
		return
	}
	m := tree.Mutation{Kind: tree.SetPool, Name: name, Pool: b.Config}
	if b.HasParent {
		if name == tree.RootName {
			if b.Parent != tree.RootName {
				s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: tree.CodeInvalidValue, Path: "$.parent", Message: "cannot give the root pool a parent"})
				return
			}
		} else {
			m.Parent = b.Parent
			if b.Parent != cur.Parent && !s.mayPool(ctx, tree.PermAdminister, b.Parent, "$.parent",
				"move pool "+strconv.Quote(name)+" into pool "+strconv.Quote(b.Parent)) {
				return
			}
		}
	}
	if _, err := s.sched.ApplyPools(m); err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.rebuildACL()
	if !s.await(ctx, s.submit(s.poolWrite(name))) {
		return
	}
	s.logChange(ctx, "pool changed", "pool", name)
	s.writePool(ctx, fasthttp.StatusOK, name, appendPoolConfig)
}

// deletePool removes an empty pool: 409 when it has child pools or
// operations (api.md §2). It needs administer on the pool.
func (s *Server) deletePool(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == tree.RootName {
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: tree.CodeInvalidValue, Path: "$.url.name", Message: "cannot remove the root pool"})
		return
	}
	if _, err := s.sched.Pool(name); err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.mayPool(ctx, tree.PermAdminister, name, "$.url.name", "remove pool "+strconv.Quote(name)) {
		return
	}
	if _, err := s.sched.ApplyPools(tree.Mutation{Kind: tree.RemovePool, Name: name}); err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.rebuildACL()
	if !s.await(ctx, s.submit(store.Delete(store.Pools, name))) {
		return
	}
	s.logChange(ctx, "pool removed", "pool", name)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// ---- config ----

func (s *Server) getConfig(ctx *fasthttp.RequestCtx) {
	s.mu.Lock()
	c := s.cfg
	s.mu.Unlock()
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendConfig(dst, &c) })
}

// patchConfig changes the tree config: the core takes the new config
// (schedule.Scheduler.SetConfig) and the facade's updater the new
// fair_share_update_period_s. A refused patch changes nothing.
func (s *Server) patchConfig(ctx *fasthttp.RequestCtx) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, err := wire.DecodeConfigPatch(ctx.PostBody(), s.cfg)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if next != s.cfg {
		prev := s.cfg
		if err := s.applyConfig(next); err != nil {
			s.fail(ctx, err, "$")
			return
		}
		if !s.await(ctx, s.submit(configWrite(&next))) {
			return
		}
		s.logChange(ctx, "config changed", "keys", changedKeys(&prev, &next))
	}
	c := s.cfg
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendConfig(dst, &c) })
}

// applyConfig makes next the config the server runs with: the core takes
// it (schedule.Scheduler.SetConfig), and everything derived from it is
// refreshed — the updater's period, the batches' bound. Reload and PATCH
// /api/v1/config both apply a config through it. A config the core refuses
// changes nothing. The caller holds s.mu.
func (s *Server) applyConfig(next schedule.Config) error {
	if err := s.sched.SetConfig(next); err != nil {
		return err
	}
	s.cfg = next
	s.setPeriod(next.FairShareUpdatePeriod)
	s.storeMaxBatch(next.MaxHeartbeatsPerBatch)
	return nil
}

// ---- operations (api.md §3) ----

// startOperation admits an operation: 201 {"id", "state"}. The same client
// id with the same body returns the same operation (201 again); with a
// different body it is a 409 duplicate_id. It needs use on the pool; the
// caller becomes the operation's owner. A new operation whose demand would
// take the demand of the unfinished operations past 2^53 in a resource is
// 409 demand_overflow: no pool's demand can then wrap.
func (s *Server) startOperation(ctx *fasthttp.RequestCtx) {
	spec, err := wire.DecodeStartOperation(ctx.PostBody())
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.mu.Lock()
	if !s.mayPool(ctx, tree.PermUse, spec.Pool, "$.pool", "start an operation in pool "+strconv.Quote(parentName(spec.Pool))) {
		s.mu.Unlock()
		return
	}
	demand := wire.Demand(&spec)
	if spec.ID == "" || s.ops[spec.ID] == nil {
		if e := s.demandError(demand); e != nil {
			s.mu.Unlock()
			s.writeError(ctx, fasthttp.StatusConflict, e)
			return
		}
	}
	now := s.now()
	id, st, err := s.sched.StartOperation(now, spec)
	known := false
	var durable store.Pending
	if err == nil {
		r, ok := s.ops[id]
		if known = ok; !known {
			if st == schedule.StatePending {
				s.pendingSince[id] = now
			} else {
				s.m.pendingWait.Observe(0)
			}
			s.opSeq++
			r = &opRecord{seq: s.opSeq, state: operationState{State: "live"}, demand: demand, tasks: slices.Clone(spec.Tasks)}
			if id := who(ctx); id != nil {
				r.owner = id.Name
			}
			s.demand = s.demand.Add(demand)
			s.ops[id] = r
			if s.d != nil {
				r.durable = s.submit(s.operationStartWrites(id, r, ctx.PostBody(), now)...)
			}
		}
		// A repeated start answers once the first one is durable.
		durable = r.durable
	}
	s.mu.Unlock()
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.await(ctx, durable) {
		return
	}
	if !known {
		s.logChange(ctx, "operation started", "operation", id, "pool", parentName(spec.Pool), "state", st.String())
	}
	s.respond(ctx, fasthttp.StatusCreated, func(dst []byte) []byte {
		dst = append(dst, `{"id":`...)
		dst = strconv.AppendQuote(dst, id)
		dst = append(dst, `,"state":"`...)
		dst = append(dst, st.String()...)
		return append(dst, `"}`...)
	})
}

// maxLiveDemand bounds the declared demand (Σ job_count × resources) of
// the operations that have not finished, per resource: every pool's demand
// is a part of it, so none can leave the fixed-point range of 2^53.
const maxLiveDemand = resource.MaxAmount

// demandError is the 409 of an operation whose demand would take the live
// demand past maxLiveDemand (nil when it would not). The caller holds s.mu.
func (s *Server) demandError(d resource.Vec) *wire.Error {
	for k := range d {
		if d[k] > maxLiveDemand-s.demand[k] {
			kind := resource.Kind(k)
			return &wire.Error{Code: CodeDemandOverflow, Path: "$.tasks",
				Message: "cannot start an operation demanding " + amountString(kind, d[k]) + " " + kind.String() +
					": the operations that have not finished demand " + amountString(kind, s.demand[k]) +
					" already, and pools' demand must stay within 2^53 (" + amountString(kind, maxLiveDemand) + ")"}
		}
	}
	return nil
}

// releaseDemand takes a finished operation's demand out of the live
// demand, once. The caller holds s.mu.
func (s *Server) releaseDemand(r *opRecord) {
	if r != nil && !r.released {
		r.released = true
		s.demand = s.demand.Sub(r.demand)
	}
}

// amountString writes a resource amount as the API does: cpu in cores.
func amountString(k resource.Kind, v int64) string {
	if k == resource.CPU {
		return strconv.FormatFloat(float64(v)/resource.CPUScale, 'g', -1, 64)
	}
	return strconv.FormatInt(v, 10)
}

// Paging of GET /api/v1/operations.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// listOperations lists operations in start order, filtered by pool and
// state, a page at a time: "next_cursor" resumes after the last one.
func (s *Server) listOperations(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	pool := string(args.Peek("pool"))
	state := string(args.Peek("state"))
	limit := defaultPageSize
	var after uint64
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > maxPageSize {
			s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "limit",
				Message: "cannot use limit " + strconv.Quote(truncate(string(v), 32)) + ": want a whole number in [1, 1000]"})
			return
		}
		limit = n
	}
	if v := args.Peek("cursor"); len(v) > 0 {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "cursor",
				Message: "cannot use cursor " + strconv.Quote(truncate(string(v), 32)) + ": want the next_cursor of a previous page"})
			return
		}
		after = n
	}
	switch state {
	case "", "pending", "running", "completed", "aborted":
	default:
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "state",
			Message: "cannot use state " + strconv.Quote(truncate(state, 32)) + ": want one of pending, running, completed, aborted"})
		return
	}
	if pool != "" && !s.checkName(ctx, pool, "a pool name", "pool", true) {
		return
	}
	infos := s.sched.Operations(nil)
	s.mu.Lock()
	seqs := make([]uint64, len(infos))
	for i := range infos {
		if r := s.ops[infos[i].ID]; r != nil {
			seqs[i] = r.seq
		}
	}
	s.mu.Unlock()
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = append(dst, `{"operations":[`...)
		n := 0
		var last uint64
		more := false
		for i := range infos {
			o := &infos[i]
			if seqs[i] <= after || pool != "" && o.Pool != pool || state != "" && o.State.String() != state {
				continue
			}
			if n == limit {
				more = true
				break
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendOperation(dst, o, false)
			n++
			last = seqs[i]
		}
		dst = append(dst, `],"next_cursor":`...)
		if more {
			dst = append(dst, '"')
			dst = strconv.AppendUint(dst, last, 10)
			dst = append(dst, '"')
		} else {
			dst = append(dst, "null"...)
		}
		return append(dst, '}')
	})
}

func (s *Server) getOperation(ctx *fasthttp.RequestCtx, id string, detailed bool) {
	if !s.checkName(ctx, id, "an operation id", "$.url.id", false) {
		return
	}
	o, err := s.sched.Operation(id)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = wire.AppendOperation(dst, &o, detailed)
		if detailed {
			// The facade's own members: the tasks and recent preemptions.
			dst = s.appendOperationHistory(append(dst[:len(dst)-1], ','), id)
			dst = append(dst, '}')
		}
		return dst
	})
}

// limitsSetter is the core entry point PATCH needs for resource_limits.
type limitsSetter interface {
	SetOperationResourceLimits(id string, l tree.PartialVec) error
}

// patchOperation changes an operation's runtime parameters (api.md §3):
// weight, pool (a move, re-checked against the new ancestors' limits) and
// resource_limits. Everything is validated before the first change; a move
// refused by the limits changes nothing.
func (s *Server) patchOperation(ctx *fasthttp.RequestCtx, id string) {
	if !s.checkName(ctx, id, "an operation id", "$.url.id", false) {
		return
	}
	p, err := wire.DecodeOperationPatch(ctx.PostBody())
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.sched.Operation(id)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.mayOperation(ctx, s.ops[id], cur.Pool, "change operation "+strconv.Quote(id)) {
		return
	}
	if p.HasPool && !s.mayPool(ctx, tree.PermUse, p.Pool, "$.pool", "move operation "+strconv.Quote(id)+" into pool "+strconv.Quote(parentName(p.Pool))) {
		return
	}
	if cur.State.Final() && (p.HasPool || p.Weight.Set || p.HasResourceLimits) {
		s.writeError(ctx, fasthttp.StatusConflict, &wire.Error{Code: schedule.CodeFinished, Path: "$.url.id",
			Message: "cannot change operation " + strconv.Quote(id) + ": it is " + cur.State.String()})
		return
	}
	ls, canLimit := any(s.sched).(limitsSetter)
	if p.HasResourceLimits && !canLimit {
		s.writeError(ctx, fasthttp.StatusConflict, &wire.Error{Code: CodeNotSupported, Path: "$.resource_limits",
			Message: "cannot change an operation's resource_limits at run time: this scheduling core takes them at start only"})
		return
	}
	if p.HasPool {
		if p.Pool != "" {
			if _, err := s.sched.Pool(p.Pool); err != nil {
				s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: tree.CodeUnknownPool, Path: "$.pool",
					Message: "cannot move operation " + strconv.Quote(id) + " to pool " + strconv.Quote(p.Pool) + ": there is no such pool"})
				return
			}
		}
		if err := s.sched.MoveOperation(id, p.Pool); err != nil {
			s.fail(ctx, err, "$")
			return
		}
	}
	if p.Weight.Set {
		if err := s.sched.SetOperationWeight(id, p.Weight.V); err != nil {
			if p.HasPool {
				// Undo the move: the request changes all or nothing.
				back := cur.Pool
				if back == tree.RootName {
					back = ""
				}
				_ = s.sched.MoveOperation(id, back)
			}
			s.fail(ctx, err, "$")
			return
		}
	}
	if p.HasResourceLimits {
		if err := ls.SetOperationResourceLimits(id, p.ResourceLimits); err != nil {
			s.fail(ctx, err, "$")
			return
		}
	}
	if r := s.ops[id]; r != nil && s.d != nil {
		if p.HasPool {
			pool := p.Pool
			if pool == "" {
				pool = tree.RootName
			}
			r.state.Pool = &pool
		}
		if p.Weight.Set {
			w := p.Weight.V
			r.state.Weight = &w
		}
		if p.HasResourceLimits {
			r.state.ResourceLimits = wire.AppendPartialResources(nil, &p.ResourceLimits)
		}
		r.durable = s.submit(s.operationStateWrite(id, &r.state))
		if !s.await(ctx, r.durable) {
			return
		}
	}
	s.logChange(ctx, "operation changed", "operation", id, "pool_changed", p.HasPool, "weight_changed", p.Weight.Set,
		"limits_changed", p.HasResourceLimits)
	s.getOperation(ctx, id, false)
}

// finishOperation completes or aborts an operation; its allocations are
// told to stop on their nodes' next heartbeats.
func (s *Server) finishOperation(ctx *fasthttp.RequestCtx, id, action string) {
	if !s.checkName(ctx, id, "an operation id", "$.url.id", false) {
		return
	}
	s.mu.Lock()
	cur, err := s.sched.Operation(id)
	if err != nil {
		s.mu.Unlock()
		s.fail(ctx, err, "$")
		return
	}
	r := s.ops[id]
	if !s.mayOperation(ctx, r, cur.Pool, action+" operation "+strconv.Quote(id)) {
		s.mu.Unlock()
		return
	}
	if action == "complete" {
		err = s.sched.CompleteOperation(id)
	} else {
		err = s.sched.AbortOperation(id)
	}
	var durable store.Pending
	if r != nil {
		if err == nil {
			s.releaseDemand(r)
		}
		if err == nil && s.d != nil {
			r.state.State = map[string]string{"complete": "completed", "abort": "aborted"}[action]
			r.state.FinishUnixUS = s.unixUS(s.now())
			r.durable = s.submit(s.operationStateWrite(id, &r.state))
		}
		durable = r.durable
	}
	s.mu.Unlock()
	if apiErrCode(err) == schedule.CodeFinished {
		// Finishing a finished operation again (a retry) answers its final
		// state, once that is durable.
		if s.await(ctx, durable) {
			s.getOperation(ctx, id, false)
		}
		return
	}
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !s.await(ctx, durable) {
		return
	}
	s.logChange(ctx, "operation "+map[string]string{"complete": "completed", "abort": "aborted"}[action], "operation", id)
	s.getOperation(ctx, id, false)
}

// ---- orchid (api.md §5) ----

func (s *Server) orchidPools(ctx *fasthttp.RequestCtx) { s.writePools(ctx, wire.AppendPoolOrchid) }

func (s *Server) orchidPool(ctx *fasthttp.RequestCtx, name string) {
	if s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		s.writePool(ctx, fasthttp.StatusOK, name, wire.AppendPoolOrchid)
	}
}

func (s *Server) orchidNode(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkName(ctx, name, "a node id", "$.url.id", false) {
		return
	}
	n, ok := s.sched.Node(name)
	if !ok {
		s.writeError(ctx, fasthttp.StatusNotFound, &wire.Error{Code: CodeUnknownNode, Path: "$.url.id",
			Message: "cannot find node " + strconv.Quote(name) + ": it has not sent a heartbeat, or was unregistered after node_heartbeat_timeout_s"})
		return
	}
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendNodeOrchid(dst, &n) })
}

// ---- solve (api.md §6) ----

// solve runs `fairsched solve` on the posted snapshot; no state is touched.
func (s *Server) solve(ctx *fasthttp.RequestCtx) {
	select {
	case s.solves <- struct{}{}:
		defer func() { <-s.solves }()
	default:
		s.writeError(ctx, fasthttp.StatusTooManyRequests, &wire.Error{Code: CodeOverloaded,
			Message: "cannot run more than " + itoa(cap(s.solves)) + " solves at once: retry later"})
		return
	}
	snap, err := wire.DecodeSnapshot(ctx.PostBody())
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if n, updates := countElements(&snap.Root), max(len(snap.Updates), 1); n*updates > MaxSolveResults {
		s.writeError(ctx, fasthttp.StatusBadRequest, &wire.Error{Code: CodeSolveTooLarge, Path: "$",
			Message: "cannot solve " + itoa(n) + " elements over " + itoa(updates) + " updates: the answer would hold " + itoa(n*updates) +
				" element results, and a solve answers at most " + itoa(MaxSolveResults) + " (run fairsched solve on the file for more)"})
		return
	}
	r, err := snapshot.Solve(snap)
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendSolveResult(dst, r) })
}

// MaxSolveResults bounds a solve's answer: elements × updates (about 1.3
// KiB of JSON per element result, so at most about 13 MiB).
const MaxSolveResults = 10000

// countElements counts the elements of a snapshot's tree, root included.
func countElements(e *snapshot.Element) int {
	n := 1
	for i := range e.Children {
		n += countElements(&e.Children[i])
	}
	return n
}

// parentName is a pool reference for the log: "" is the root.
func parentName(p string) string {
	if p == "" {
		return tree.RootName
	}
	return p
}

// changedKeys are the tree config keys whose values differ, for the log.
func changedKeys(a, b *schedule.Config) []string {
	before, after := map[string]any{}, map[string]any{}
	json.Unmarshal(wire.AppendConfig(nil, a), &before)
	json.Unmarshal(wire.AppendConfig(nil, b), &after)
	var keys []string
	for k, v := range after {
		if !reflect.DeepEqual(before[k], v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// apiErrCode is err's code ("" when err is not an *apierr.Error).
func apiErrCode(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
