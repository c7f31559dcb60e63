package facade

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/wire"
)

// respond answers 'status' with the JSON that fn appends.
func (s *Server) respond(ctx *fasthttp.RequestCtx, status int, fn func(dst []byte) []byte) {
	bp := s.getBuf()
	*bp = append(fn((*bp)[:0]), '\n')
	writeJSON(ctx, status, *bp)
	s.putBuf(bp)
}

// ---- pools (docs/api.md#pools) ----

func (s *Server) listPools(ctx *fasthttp.RequestCtx) { s.writePools(ctx, appendPoolConfig, nil) }

func (s *Server) getPool(ctx *fasthttp.RequestCtx, name string) {
	if s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		s.writePool(ctx, fasthttp.StatusOK, name, appendPoolConfig)
	}
}

func appendPoolConfig(dst []byte, p *schedule.PoolInfo) []byte {
	return wire.AppendPool(dst, p.Name, p.Parent, &p.Config)
}

// writePools answers {"pools": [...]} with every pool encoded by enc,
// then the members more appends after a comma (nil: none).
func (s *Server) writePools(ctx *fasthttp.RequestCtx, enc func([]byte, *schedule.PoolInfo) []byte,
	more func([]byte) []byte) {
	pools := s.sched.Pools(nil)
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte {
		dst = append(dst, `{"pools":[`...)
		for i := range pools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = enc(dst, &pools[i])
		}
		dst = append(dst, ']')
		if more != nil {
			dst = more(append(dst, ','))
		}
		return append(dst, '}')
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

// changeTarget is what a pool or config change applies to: the live
// service (server.Server) or a what-if's copy of it (server.Preview). The
// handlers below and POST /api/v1/whatif decide a change with the same
// functions (putPoolOn, patchPoolOn, deletePoolOn, patchConfigOn): the
// same decoders, guards and errors.
type changeTarget interface {
	PutPool(name string, prepare func(exists bool, cur schedule.PoolInfo) (tree.Mutation, bool)) (created bool, err error)
	PatchPool(name string, prepare func(cur schedule.PoolInfo) (tree.Mutation, bool)) error
	DeletePool(name string, authorize func() bool) error
	PatchConfig(patch func(cur schedule.Config) (schedule.Config, error)) (prev, next schedule.Config, err error)
}

// refusal is a refused change's answer: its status and error body.
type refusal struct {
	status int
	e      *wire.Error
	// own: a what-if's refusal of a change it cannot preview, its path
	// relative to the change.
	own bool
}

// changer is the caller of a change, the ACL index its permissions are
// checked against (read when checked: the live one is replaced as pools
// change) and the change's refusal, if any.
type changer struct {
	id      *Identity
	acl     func() aclIndex
	refused *refusal
}

// liveChanger is the caller of request ctx against the live ACL.
func (s *Server) liveChanger(ctx *fasthttp.RequestCtx) *changer {
	return &changer{id: who(ctx), acl: func() aclIndex { return *s.acl.Load() }}
}

// refuse keeps the first refusal; it returns false.
func (c *changer) refuse(status int, e *wire.Error) bool {
	if c.refused == nil {
		c.refused = &refusal{status: status, e: e}
	}
	return false
}

// fail refuses with the status and body of err (errorBody); ErrRefused
// means a guard already refused.
func (c *changer) fail(err error) {
	if !errors.Is(err, server.ErrRefused) {
		c.refuse(errorBody(err, "$"))
	}
}

// may checks a permission as mayPool does.
func (c *changer) may(perm tree.Permission, pool, path, doing string) bool {
	if e := poolForbidden(c.acl(), c.id, perm, pool, path, doing); e != nil {
		return c.refuse(fasthttp.StatusForbidden, e)
	}
	return true
}

// answerRefusal writes a refused change's answer.
func (s *Server) answerRefusal(ctx *fasthttp.RequestCtx, r *refusal) {
	if r.status == fasthttp.StatusInternalServerError {
		s.log.Error("request failed", "method", string(ctx.Method()), "path", string(ctx.Path()), "error", r.e.Message)
	}
	s.writeError(ctx, r.status, r.e)
}

// putPool creates or replaces a pool (docs/api.md#pools).
func (s *Server) putPool(ctx *fasthttp.RequestCtx, name string) {
	c := s.liveChanger(ctx)
	created, parent := s.putPoolOn(s.core, c, name, ctx.PostBody())
	if c.refused != nil {
		s.answerRefusal(ctx, c.refused)
		return
	}
	status := fasthttp.StatusOK
	if created {
		status = fasthttp.StatusCreated
		s.logChange(ctx, "pool created", "pool", name, "parent", parent)
	} else {
		s.logChange(ctx, "pool replaced", "pool", name)
	}
	s.writePool(ctx, status, name, appendPoolConfig)
}

// putPoolOn is PUT /api/v1/pools/{name} with body on t. A missing
// "parent" is the root: PUT replaces the whole configuration, the parent
// included. It needs administer on the pool (replacing it) or on its
// parent (creating it), and on the new parent when it moves. It reports
// whether the pool was created and its parent; a refusal is c's.
func (s *Server) putPoolOn(t changeTarget, c *changer, name string, body []byte) (created bool, parent string) {
	if e := nameError(name, "a pool name", "$.url.name", true); e != nil {
		c.refuse(fasthttp.StatusBadRequest, e)
		return false, ""
	}
	b, err := wire.DecodePool(body, tree.PoolConfig{})
	if err != nil {
		c.fail(err)
		return false, ""
	}
	if !c.poolBody(b, name, body) {
		return false, ""
	}
	m := tree.Mutation{Kind: tree.AddPool, Name: name, Pool: b.Config}
	if b.HasParent && b.Parent != tree.RootName {
		m.Parent = b.Parent
	}
	parentPath := "$"
	if b.HasParent {
		parentPath = "$.parent"
	}
	created, err = t.PutPool(name, func(exists bool, cur schedule.PoolInfo) (tree.Mutation, bool) {
		if !exists {
			return m, c.may(tree.PermAdminister, m.Parent, parentPath, "create pool "+strconv.Quote(name)+" in pool "+strconv.Quote(parentName(m.Parent)))
		}
		m.Kind = tree.SetPool
		if name != tree.RootName && m.Parent == "" {
			m.Parent = tree.RootName
		}
		if !c.may(tree.PermAdminister, name, "$.url.name", "replace pool "+strconv.Quote(name)) {
			return m, false
		}
		return m, name == tree.RootName || parentName(m.Parent) == cur.Parent ||
			c.may(tree.PermAdminister, m.Parent, parentPath, "move pool "+strconv.Quote(name)+" into pool "+strconv.Quote(parentName(m.Parent)))
	})
	if err != nil {
		c.fail(err)
		return false, ""
	}
	return created, parentName(m.Parent)
}

// rootKeys are what a body for the root pool may set: the root is always
// fair_share and has no attributes but its acl (and no ancestors to
// inherit one from).
var rootKeys = []string{"name", "parent", "mode", "acl"}

// poolBody checks a decoded PUT or PATCH body b of pool name: its "name",
// when given, is the URL's; for the root it sets only its acl (and
// repeats its name, parent and mode), else the first other key is
// refused.
func (c *changer) poolBody(b *wire.PoolBody, name string, body []byte) bool {
	if b.Name != "" && b.Name != name {
		return c.refuse(fasthttp.StatusBadRequest, &wire.Error{Code: wire.CodeInvalidValue, Path: "$.name",
			Message: "cannot use name " + strconv.Quote(b.Name) + " in the body of pool " + strconv.Quote(name) + ": leave it out or repeat the URL's"})
	}
	if name != tree.RootName {
		return true
	}
	m, e := jsonpath.DecodeObject(body, "body")
	if e != nil {
		return c.refuse(fasthttp.StatusBadRequest, e)
	}
	for _, k := range jsonpath.SortedKeys(m) {
		if !slices.Contains(rootKeys, k) {
			return c.refuse(fasthttp.StatusBadRequest, &wire.Error{Code: tree.CodeInvalidValue, Path: jsonpath.Key("$", k),
				Message: "cannot set " + k + " of the root pool: it takes only an acl (and is always fair_share)"})
		}
	}
	return true
}

// patchPool changes the listed attributes of a pool (docs/api.md#pools).
func (s *Server) patchPool(ctx *fasthttp.RequestCtx, name string) {
	c := s.liveChanger(ctx)
	s.patchPoolOn(s.core, c, name, ctx.PostBody())
	if c.refused != nil {
		s.answerRefusal(ctx, c.refused)
		return
	}
	s.logChange(ctx, "pool changed", "pool", name)
	s.writePool(ctx, fasthttp.StatusOK, name, appendPoolConfig)
}

// patchPoolOn is PATCH /api/v1/pools/{name} with body on t. It needs
// administer on the pool, and on the new parent when it moves; a refusal
// is c's.
func (s *Server) patchPoolOn(t changeTarget, c *changer, name string, body []byte) {
	if e := nameError(name, "a pool name", "$.url.name", true); e != nil {
		c.refuse(fasthttp.StatusBadRequest, e)
		return
	}
	err := t.PatchPool(name, func(cur schedule.PoolInfo) (tree.Mutation, bool) {
		if !c.may(tree.PermAdminister, name, "$.url.name", "change pool "+strconv.Quote(name)) {
			return tree.Mutation{}, false
		}
		b, err := wire.DecodePool(body, cur.Config)
		if err != nil {
			c.fail(err)
			return tree.Mutation{}, false
		}
		if !c.poolBody(b, name, body) {
			return tree.Mutation{}, false
		}
		m := tree.Mutation{Kind: tree.SetPool, Name: name, Pool: b.Config}
		if b.HasParent {
			m.Parent = b.Parent
			if name != tree.RootName && b.Parent != cur.Parent && !c.may(tree.PermAdminister, b.Parent, "$.parent",
				"move pool "+strconv.Quote(name)+" into pool "+strconv.Quote(b.Parent)) {
				return m, false
			}
		}
		return m, true
	})
	if err != nil {
		c.fail(err)
	}
}

// deletePool removes an empty pool: 409 when it has child pools or
// operations (docs/api.md#pools).
func (s *Server) deletePool(ctx *fasthttp.RequestCtx, name string) {
	c := s.liveChanger(ctx)
	s.deletePoolOn(s.core, c, name)
	if c.refused != nil {
		s.answerRefusal(ctx, c.refused)
		return
	}
	s.logChange(ctx, "pool removed", "pool", name)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// deletePoolOn is DELETE /api/v1/pools/{name} on t. It needs administer
// on the pool; a refusal is c's.
func (s *Server) deletePoolOn(t changeTarget, c *changer, name string) {
	if e := nameError(name, "a pool name", "$.url.name", true); e != nil {
		c.refuse(fasthttp.StatusBadRequest, e)
		return
	}
	err := t.DeletePool(name, func() bool {
		return c.may(tree.PermAdminister, name, "$.url.name", "remove pool "+strconv.Quote(name))
	})
	if err != nil {
		c.fail(err)
	}
}

// ---- config ----

func (s *Server) getConfig(ctx *fasthttp.RequestCtx) {
	c := s.core.Config()
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendConfig(dst, &c) })
}

// patchConfig changes the tree config (server.Server.PatchConfig, which
// applies it as a reload does). A refused patch changes nothing.
func (s *Server) patchConfig(ctx *fasthttp.RequestCtx) {
	c := s.liveChanger(ctx)
	prev, next := s.patchConfigOn(s.core, c, ctx.PostBody())
	if c.refused != nil {
		s.answerRefusal(ctx, c.refused)
		return
	}
	if next != prev {
		s.logChange(ctx, "config changed", "keys", changedKeys(&prev, &next))
	}
	s.respond(ctx, fasthttp.StatusOK, func(dst []byte) []byte { return wire.AppendConfig(dst, &next) })
}

// patchConfigOn is PATCH /api/v1/config with body on t (the guard has
// checked the caller's role); a refusal is c's.
func (s *Server) patchConfigOn(t changeTarget, c *changer, body []byte) (prev, next schedule.Config) {
	prev, next, err := t.PatchConfig(func(cur schedule.Config) (schedule.Config, error) {
		return wire.DecodeConfigPatch(body, cur)
	})
	if err != nil {
		c.fail(err)
	}
	return prev, next
}

// ---- operations (docs/api.md#operations) ----

// startOperation admits an operation: 201 {"id", "state"}. The same client
// id with the same body returns the same operation (201 again); with a
// different body it is a 409 duplicate_id. It needs use on the pool; the
// caller becomes the operation's owner. A new operation whose demand would
// take the demand of the unfinished operations past 2^53 in a resource is
// 409 demand_overflow (server.Server.StartOperation).
func (s *Server) startOperation(ctx *fasthttp.RequestCtx) {
	spec, err := wire.DecodeStartOperation(ctx.PostBody())
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	owner := ""
	if id := who(ctx); id != nil {
		owner = id.Name
	}
	id, st, again, err := s.core.StartOperation(spec, ctx.PostBody(), owner, func() bool {
		return s.mayPool(ctx, tree.PermUse, spec.Pool, "$.pool", "start an operation in pool "+strconv.Quote(parentName(spec.Pool)))
	})
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !again {
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
	seqs := s.core.StartSeqs(infos)
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

// patchOperation changes an operation's runtime parameters
// (docs/api.md#operations): weight, pool, resource_limits and tasks, all
// or nothing (server.Server.PatchOperation). It needs administer on the pool
// or to be the owner, and use on the new pool.
func (s *Server) patchOperation(ctx *fasthttp.RequestCtx, id string) {
	if !s.checkName(ctx, id, "an operation id", "$.url.id", false) {
		return
	}
	p, err := wire.DecodeOperationPatch(ctx.PostBody())
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	err = s.core.PatchOperation(id, &p, func(cur schedule.OperationInfo, owner string) bool {
		return s.mayOperation(ctx, owner, cur.Pool, "change operation "+strconv.Quote(id))
	}, func() bool {
		return s.mayPool(ctx, tree.PermUse, p.Pool, "$.pool", "move operation "+strconv.Quote(id)+" into pool "+strconv.Quote(parentName(p.Pool)))
	})
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	s.logChange(ctx, "operation changed", "operation", id, "pool_changed", p.HasPool, "weight_changed", p.Weight.Set,
		"limits_changed", p.HasResourceLimits, "tasks_changed", len(p.Tasks) > 0)
	s.getOperation(ctx, id, false)
}

// finishOperation completes or aborts an operation; its allocations are
// told to stop on their nodes' next heartbeats. Finishing a finished
// operation again (a retry) answers its final state.
func (s *Server) finishOperation(ctx *fasthttp.RequestCtx, id, action string) {
	if !s.checkName(ctx, id, "an operation id", "$.url.id", false) {
		return
	}
	again, err := s.core.FinishOperation(id, action == "complete", func(cur schedule.OperationInfo, owner string) bool {
		return s.mayOperation(ctx, owner, cur.Pool, action+" operation "+strconv.Quote(id))
	})
	if err != nil {
		s.fail(ctx, err, "$")
		return
	}
	if !again {
		s.logChange(ctx, "operation "+map[string]string{"complete": "completed", "abort": "aborted"}[action], "operation", id)
	}
	s.getOperation(ctx, id, false)
}

// ---- orchid (docs/api.md#the-orchid) ----

// orchidPools answers GET /api/v1/orchid/pools: every pool's orchid view
// and the cluster's fairness error and its integral.
func (s *Server) orchidPools(ctx *fasthttp.RequestCtx) {
	s.writePools(ctx, wire.AppendPoolOrchid, s.appendFairness)
}

func (s *Server) orchidPool(ctx *fasthttp.RequestCtx, name string) {
	if s.checkName(ctx, name, "a pool name", "$.url.name", true) {
		s.writePool(ctx, fasthttp.StatusOK, name, wire.AppendPoolOrchid)
	}
}

func (s *Server) orchidNode(ctx *fasthttp.RequestCtx, name string) {
	if !s.checkNodeName(ctx, name) {
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

// ---- solve (docs/api.md#solve) ----

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
