// Package store keeps fairsched's durable records (docs/operations.md, "State and
// restarts"): the tree config, the pools, the operations, the node registry,
// the id counters and the checkpoints, as keys in a few buckets of a
// transactional key-value Backend. Bolt, on go.etcd.io/bbolt, is the embedded
// backend; a backend on a replicated store implements the same interface.
//
// Writes go through a Committer: concurrent Commits are grouped into one
// backend transaction without a timer (each transaction takes whatever queued
// while the previous one was being written), and each Commit returns once its
// writes are durable. A failed transaction is fail-stop: it and every later
// Commit fail with ErrUnavailable, and the server stops taking writes.
package store

import (
	"errors"
	"fmt"
)

// The buckets.
const (
	// Meta holds the schema version and the restart epoch.
	Meta = "meta"
	// Config holds the tree config under the key "tree".
	Config = "config"
	// Pools holds a record per pool, keyed by name.
	Pools = "pools"
	// Operations holds a record per operation, keyed by id: what its start
	// said, written once.
	Operations = "operations"
	// OperationStates holds what changes of an operation, keyed by id: its
	// pool, weight and limits, whether and when it finished.
	OperationStates = "operation_states"
	// Nodes holds the node registry, keyed by node name.
	Nodes = "nodes"
	// Counters holds the id counters' reserved block ends, keyed by name.
	Counters = "counters"
	// Checkpoints holds per-operation and per-pool progress (completed job
	// counts, integral volumes), keyed by element.
	Checkpoints = "checkpoints"
)

// Buckets are every bucket, in the order Load reads them.
var Buckets = []string{Meta, Config, Pools, Operations, OperationStates, Nodes, Counters, Checkpoints}

// SchemaVersion is the version of the records this binary writes; a store
// with a newer one is refused (ErrNewerSchema).
const SchemaVersion = 1

// Write is one change: Value under Key in Bucket, or, when Value is nil, the
// key removed.
type Write struct {
	Bucket string
	Key    string
	Value  []byte
}

// Put is a Write that stores value.
func Put(bucket, key string, value []byte) Write {
	return Write{Bucket: bucket, Key: key, Value: value}
}

// Delete is a Write that removes key.
func Delete(bucket, key string) Write { return Write{Bucket: bucket, Key: key} }

// Backend is a transactional key-value store.
type Backend interface {
	// Apply makes ws durable in one transaction, in order (a later write of
	// a key wins): all of them or, with an error, none.
	Apply(ws []Write) error
	// Scan calls fn with every key of bucket and its value, in key order;
	// the value is valid only during the call. An error of fn stops the
	// scan and is returned.
	Scan(bucket string, fn func(key string, value []byte) error) error
	// Get returns key's value in bucket (a copy), and whether it exists.
	Get(bucket, key string) ([]byte, bool, error)
	// Describe names the backend and where it keeps the data, for logs and
	// /healthz: "bbolt", "/var/lib/fairsched/fairsched.db".
	Describe() (kind, location string)
	// Close releases the store (its file lock, its connections).
	Close() error
}

// Limiter is a Backend whose transactions are bounded (etcd refuses more
// than 128 operations or 1.5 MiB in one request by default). The Committer
// puts at most writes Writes and bytes bytes of buckets, keys and values
// (0: no bound) into one Apply, except that a single Commit larger than
// that is applied alone.
type Limiter interface {
	Limits() (writes, bytes int)
}

// ErrUnavailable wraps every error of a Commit after a failed transaction:
// the store is no longer written, and the server must stop.
var ErrUnavailable = errors.New("store unavailable")

// ErrLocked is returned by Open when another process holds the store.
var ErrLocked = errors.New("store locked by another process")

// ErrNewerSchema is returned by Open when the store was written by a newer
// binary.
var ErrNewerSchema = errors.New("store written by a newer schema")

// unavailable wraps err as ErrUnavailable.
func unavailable(err error) error { return fmt.Errorf("%w: %w", ErrUnavailable, err) }
