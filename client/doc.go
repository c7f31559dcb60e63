// Package client is the typed Go client of fairsched's HTTP/JSON API
// (docs/api.md; the OpenAPI document is docs/openapi.json).
//
// One method per endpoint, each taking a context:
//
//	c, err := client.New("http://127.0.0.1:8080")
//	if err != nil { … }
//	_, err = c.PutPool(ctx, "etl", client.Pool{Weight: 2})
//	started, err := c.StartOperation(ctx, client.OperationSpec{
//		ID:   "etl-42",
//		Pool: "etl",
//		Tasks: []client.Task{{Name: "map", JobCount: 100,
//			Resources: client.Resources{CPU: 1, Memory: 4 << 30}}},
//	})
//	if client.ErrorCode(err) == "too_many_operations" { … }
//
// Errors the server answers are *Error values with the HTTP status, the
// stable code, the message and the JSON path of the offending field; other
// errors are the transport's.
//
// Retries: a request the server refused without applying it (429
// overloaded, 503) is retried after a backoff (the server's Retry-After
// when it gives one), and so is an idempotent request (GET, HEAD, PUT,
// DELETE, and an operation start that names its id) that failed in
// transport; a non-idempotent request that may have reached the server is
// not. A 503 not_leader that names the leader is followed there at once,
// and later requests go to it too. WithRetries and WithBackoff tune this.
//
// The node heartbeat methods are here for tools and tests; a node agent
// that sends hundreds of thousands of heartbeats per second wants the
// allocation-free codec of the load generator instead.
package client
