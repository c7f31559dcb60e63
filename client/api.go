package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// RootPool is the root pool's name.
const RootPool = "<Root>"

const api = "/api/v1/"

func poolPath(name string) string { return api + "pools/" + url.PathEscape(name) }
func opPath(id string) string     { return api + "operations/" + url.PathEscape(id) }

// Health is GET /healthz.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	err := c.do(ctx, request{method: http.MethodGet, path: "/healthz", idempotent: true}, &h)
	return result(&h, err)
}

// Ready is GET /readyz: nil when the server takes requests, an *Error
// (503 shutting_down, …) when it does not. It is not retried.
func (c *Client) Ready(ctx context.Context) error {
	var r Ready
	return c.do(ctx, request{method: http.MethodGet, path: "/readyz", noRetry: true}, &r)
}

// OpenAPI is GET /api/v1/openapi.json: the API's OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var b []byte
	err := c.do(ctx, request{method: http.MethodGet, path: api + "openapi.json", idempotent: true}, &b)
	return b, err
}

// Version is GET /api/v1/version: the server's version, commit and Go
// version.
func (c *Client) Version(ctx context.Context) (*Version, error) {
	var v Version
	err := c.do(ctx, request{method: http.MethodGet, path: api + "version", idempotent: true}, &v)
	return result(&v, err)
}

// Backup is GET /api/v1/backup: a consistent copy of a durable server's
// store (loopback clients only), which it returns whole.
func (c *Client) Backup(ctx context.Context) ([]byte, error) {
	var b []byte
	err := c.do(ctx, request{method: http.MethodGet, path: api + "backup", idempotent: true}, &b)
	return b, err
}

// Metrics is GET /metrics: the Prometheus text exposition.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	var b []byte
	err := c.do(ctx, request{method: http.MethodGet, path: "/metrics", idempotent: true}, &b)
	return b, err
}

// Config is GET /api/v1/config: the tree config.
func (c *Client) Config(ctx context.Context) (Config, error) {
	var cfg Config
	err := c.do(ctx, request{method: http.MethodGet, path: api + "config", idempotent: true}, &cfg)
	return cfg, err
}

// PatchConfig changes the tree config keys of patch and answers the whole
// config as it now is.
func (c *Client) PatchConfig(ctx context.Context, patch Config) (Config, error) {
	var cfg Config
	err := c.do(ctx, request{method: http.MethodPatch, path: api + "config", body: patch,
		idempotent: true}, &cfg)
	return cfg, err
}

// Pools is GET /api/v1/pools: every pool, the root first, parents before
// children.
func (c *Client) Pools(ctx context.Context) ([]Pool, error) {
	var out struct {
		Pools []Pool `json:"pools"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: api + "pools", idempotent: true}, &out)
	return out.Pools, err
}

// Pool is GET /api/v1/pools/{name}.
func (c *Client) Pool(ctx context.Context, name string) (*Pool, error) {
	var p Pool
	err := c.do(ctx, request{method: http.MethodGet, path: poolPath(name), idempotent: true}, &p)
	return result(&p, err)
}

// PutPool creates the pool name or replaces its configuration by p (an
// attribute p leaves out takes its default; p.Name is not sent). created
// tells the two apart.
func (c *Client) PutPool(ctx context.Context, name string, p Pool) (pool *Pool, created bool, err error) {
	p.Name = ""
	var out Pool
	status := 0
	err = c.do(ctx, request{method: http.MethodPut, path: poolPath(name), body: p, idempotent: true},
		statusInto(&out, &status))
	if err != nil {
		return nil, false, err
	}
	return &out, status == http.StatusCreated, nil
}

// PatchPool changes the attributes patch sets.
func (c *Client) PatchPool(ctx context.Context, name string, patch PoolPatch) (*Pool, error) {
	var p Pool
	// A PATCH of absolute values has the same effect sent twice.
	err := c.do(ctx, request{method: http.MethodPatch, path: poolPath(name), body: patch,
		idempotent: true}, &p)
	return result(&p, err)
}

// DeletePool removes an empty pool.
func (c *Client) DeletePool(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: poolPath(name), idempotent: true}, nil)
}

// StartOperation is POST /api/v1/operations. A start that names its ID is
// retried after a transport error (the same id and body answer the same
// operation); one without an ID is not.
func (c *Client) StartOperation(ctx context.Context, spec OperationSpec) (*OperationStarted, error) {
	var out OperationStarted
	err := c.do(ctx, request{method: http.MethodPost, path: api + "operations", body: spec,
		idempotent: spec.ID != ""}, &out)
	return result(&out, err)
}

// Operation is GET /api/v1/operations/{id}.
func (c *Client) Operation(ctx context.Context, id string) (*Operation, error) {
	var op Operation
	err := c.do(ctx, request{method: http.MethodGet, path: opPath(id), idempotent: true}, &op)
	return result(&op, err)
}

// PatchOperation changes an operation's weight, pool or limits.
func (c *Client) PatchOperation(ctx context.Context, id string, patch OperationPatch) (*Operation, error) {
	var op Operation
	err := c.do(ctx, request{method: http.MethodPatch, path: opPath(id), body: patch,
		idempotent: true}, &op)
	return result(&op, err)
}

// CompleteOperation finishes an operation as completed: its running
// allocations are aborted at their nodes' next heartbeats.
func (c *Client) CompleteOperation(ctx context.Context, id string) (*Operation, error) {
	var op Operation
	err := c.do(ctx, request{method: http.MethodPost, path: opPath(id) + "/complete"}, &op)
	return result(&op, err)
}

// AbortOperation finishes an operation as aborted.
func (c *Client) AbortOperation(ctx context.Context, id string) (*Operation, error) {
	var op Operation
	err := c.do(ctx, request{method: http.MethodPost, path: opPath(id) + "/abort"}, &op)
	return result(&op, err)
}

// ListOperations is one page of GET /api/v1/operations.
func (c *Client) ListOperations(ctx context.Context, f OperationFilter) (*OperationPage, error) {
	q := url.Values{}
	if f.Pool != "" {
		q.Set("pool", f.Pool)
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	var page OperationPage
	err := c.do(ctx, request{method: http.MethodGet, path: api + "operations", query: q,
		idempotent: true}, &page)
	return result(&page, err)
}

// Operations iterates over every operation f selects, page by page from
// f.Cursor on; it stops at the first error, which it yields.
func (c *Client) Operations(ctx context.Context, f OperationFilter) iter.Seq2[Operation, error] {
	return func(yield func(Operation, error) bool) {
		for {
			page, err := c.ListOperations(ctx, f)
			if err != nil {
				yield(Operation{}, err)
				return
			}
			for _, op := range page.Operations {
				if !yield(op, nil) {
					return
				}
			}
			if page.NextCursor == nil {
				return
			}
			f.Cursor = *page.NextCursor
		}
	}
}

// Heartbeat is POST /api/v1/nodes/{id}/heartbeat. It is not retried after a
// transport error: the node sends its next heartbeat instead.
func (c *Client) Heartbeat(ctx context.Context, node string, hb Heartbeat) (*HeartbeatResponse, error) {
	var out HeartbeatResponse
	err := c.do(ctx, request{method: http.MethodPost, path: api + "nodes/" + url.PathEscape(node) + "/heartbeat",
		body: hb}, &out)
	return result(&out, err)
}

// Heartbeats is POST /api/v1/heartbeats: the heartbeats of several nodes in
// one request, each processed as its own. The results are in the order of
// hbs; an entry the server refused has Err set and the others apply. The
// error is for the whole batch (a bad envelope, too many entries, a node
// twice, the transport). Not retried after a transport error.
func (c *Client) Heartbeats(ctx context.Context, hbs []NodeHeartbeat) ([]NodeHeartbeatResult, error) {
	var out struct {
		Responses []NodeHeartbeatResult `json:"responses"`
	}
	body := struct {
		Heartbeats []NodeHeartbeat `json:"heartbeats"`
	}{hbs}
	err := c.do(ctx, request{method: http.MethodPost, path: api + "heartbeats", body: body}, &out)
	return out.Responses, err
}

// ListNodes is one page of GET /api/v1/nodes: the registered nodes after
// cursor ("": from the first) in id order, at most limit (0: the server's
// default page).
func (c *Client) ListNodes(ctx context.Context, cursor string, limit int) (*NodePage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var page NodePage
	err := c.do(ctx, request{method: http.MethodGet, path: api + "nodes", query: q, idempotent: true}, &page)
	return result(&page, err)
}

// Nodes iterates over every registered node, page by page; it stops at
// the first error, which it yields.
func (c *Client) Nodes(ctx context.Context) iter.Seq2[NodeSummary, error] {
	return func(yield func(NodeSummary, error) bool) {
		cursor := ""
		for {
			page, err := c.ListNodes(ctx, cursor, 0)
			if err != nil {
				yield(NodeSummary{}, err)
				return
			}
			for _, n := range page.Nodes {
				if !yield(n, nil) {
					return
				}
			}
			if page.NextCursor == nil {
				return
			}
			cursor = *page.NextCursor
		}
	}
}

// Node is GET /api/v1/nodes/{id}.
func (c *Client) Node(ctx context.Context, id string) (*NodeSummary, error) {
	var n NodeSummary
	err := c.do(ctx, request{method: http.MethodGet, path: api + "nodes/" + url.PathEscape(id), idempotent: true}, &n)
	return result(&n, err)
}

// PoolOrchids is GET /api/v1/orchid/pools: every pool's fair-share state.
func (c *Client) PoolOrchids(ctx context.Context) ([]PoolOrchid, error) {
	var out PoolOrchidList
	err := c.do(ctx, request{method: http.MethodGet, path: api + "orchid/pools", idempotent: true}, &out)
	return out.Pools, err
}

// PoolOrchidList is GET /api/v1/orchid/pools with the cluster's fairness
// error.
func (c *Client) PoolOrchidList(ctx context.Context) (*PoolOrchidList, error) {
	var out PoolOrchidList
	err := c.do(ctx, request{method: http.MethodGet, path: api + "orchid/pools", idempotent: true}, &out)
	return result(&out, err)
}

// PoolHistory is GET /api/v1/pools/{name}/history?since=&step=: since in
// Unix seconds, or negative seconds before now (0: the oldest kept); step
// in seconds (0: the resolution).
func (c *Client) PoolHistory(ctx context.Context, name string, since, step float64) (*PoolHistory, error) {
	q := url.Values{}
	if since != 0 {
		q.Set("since", strconv.FormatFloat(since, 'f', -1, 64))
	}
	if step != 0 {
		q.Set("step", strconv.FormatFloat(step, 'f', -1, 64))
	}
	var h PoolHistory
	err := c.do(ctx, request{method: http.MethodGet, path: api + "pools/" + url.PathEscape(name) + "/history", query: q,
		idempotent: true}, &h)
	return result(&h, err)
}

// PoolOrchid is GET /api/v1/orchid/pools/{name}.
func (c *Client) PoolOrchid(ctx context.Context, name string) (*PoolOrchid, error) {
	var p PoolOrchid
	err := c.do(ctx, request{method: http.MethodGet, path: api + "orchid/pools/" + url.PathEscape(name),
		idempotent: true}, &p)
	return result(&p, err)
}

// OperationOrchid is GET /api/v1/orchid/operations/{id}.
func (c *Client) OperationOrchid(ctx context.Context, id string) (*OperationOrchid, error) {
	var op OperationOrchid
	err := c.do(ctx, request{method: http.MethodGet, path: api + "orchid/operations/" + url.PathEscape(id),
		idempotent: true}, &op)
	return result(&op, err)
}

// NodeOrchid is GET /api/v1/orchid/nodes/{id}.
func (c *Client) NodeOrchid(ctx context.Context, id string) (*NodeOrchid, error) {
	var n NodeOrchid
	err := c.do(ctx, request{method: http.MethodGet, path: api + "orchid/nodes/" + url.PathEscape(id),
		idempotent: true}, &n)
	return result(&n, err)
}

// Solve is POST /api/v1/solve: the fair-share updates of a snapshot
// (docs/api.md, "Solve"). snapshot is anything that marshals to the
// snapshot's JSON (a json.RawMessage of a file, a map, a struct).
func (c *Client) Solve(ctx context.Context, snapshot any) (*SolveResult, error) {
	var out SolveResult
	// A solve changes nothing on the server.
	err := c.do(ctx, request{method: http.MethodPost, path: api + "solve", body: snapshot,
		idempotent: true}, &out)
	return result(&out, err)
}

// Explain is GET /api/v1/operations/{id}/explain: why the operation is in
// its state, the binding finding first (docs/why-waiting.md).
func (c *Client) Explain(ctx context.Context, id string) (*Explanation, error) {
	var e Explanation
	err := c.do(ctx, request{method: http.MethodGet, path: opPath(id) + "/explain", idempotent: true}, &e)
	return result(&e, err)
}

// ExplainPool is GET /api/v1/pools/{name}/explain: why the pool has its
// fair share and starvation status.
func (c *Client) ExplainPool(ctx context.Context, name string) (*Explanation, error) {
	var e Explanation
	err := c.do(ctx, request{method: http.MethodGet, path: poolPath(name) + "/explain", idempotent: true}, &e)
	return result(&e, err)
}

// WhatIf is POST /api/v1/whatif: every pool before and after the changes,
// applied in order to a copy of the server's state; nothing changes. A
// change the real request would refuse is that request's *Error, its
// path under $.changes[i].
func (c *Client) WhatIf(ctx context.Context, changes []WhatIfChange) (*WhatIfResult, error) {
	var out WhatIfResult
	body := struct {
		Changes []WhatIfChange `json:"changes"`
	}{changes}
	// A what-if changes nothing on the server.
	err := c.do(ctx, request{method: http.MethodPost, path: api + "whatif", body: body, idempotent: true}, &out)
	return result(&out, err)
}

// PoolPath is the API path of pool name, for a WhatIfChange.
func PoolPath(name string) string { return poolPath(name) }

// ConfigPath is the API path of the tree config, for a WhatIfChange.
const ConfigPath = api + "config"

func result[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// statusInto decodes an answer into out and records its status.
type statusOut struct {
	out    any
	status *int
}

func statusInto(out any, status *int) *statusOut { return &statusOut{out: out, status: status} }
