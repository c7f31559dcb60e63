// Package etcdstore is the store.Backend of fairsched's replicas: the
// records live in etcd under a prefix (docs/operations.md, "Replicas on
// etcd"), with the same buckets and keys as in bbolt:
//
//	<prefix>/<bucket>/<key>   a record (store.Buckets)
//	<prefix>/leader/<lease>   the replicas' election (concurrency.Election)
//
// A Store belongs to one leadership term: every Apply is one etcd
// transaction guarded by the leader key's create revision, so a replica
// that is no longer the leader (its key expired with its lease, or it
// resigned) cannot land a write: the guard fails, nothing is written, and
// Apply returns ErrDeposed. Reads are pinned at the revision at which Open
// confirmed the leadership and move to the revision of each of the term's
// own writes: the loader sees one consistent state, and the leader, the
// only writer, always reads what it wrote.
//
// A Store is safe for concurrent use; the Client is the caller's.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fairsched/fairsched/store"
)

// ErrDeposed is returned by Open and Apply when the leader key is gone or
// was created again (another term): the replica is no longer the leader.
var ErrDeposed = errors.New("etcdstore: deposed: the leader key of this term is gone, another replica leads or will")

// Transaction limits: etcd refuses more than --max-txn-ops (default 128)
// operations and more than --max-request-bytes (default 1.5 MiB) in one
// request. The Committer keeps its groups within these (store.Limiter),
// with room for the keys' prefix and the request's framing.
const (
	MaxTxnWrites = 128
	MaxTxnBytes  = 1 << 20
)

// scanPage is how many keys one range request of Scan reads.
const scanPage = 512

// Store is the Backend of one leadership term. See the package
// documentation.
type Store struct {
	c        *clientv3.Client
	prefix   string // "/fairsched/prod/", with the slash
	endpoint string // for Describe
	guardKey string
	guardRev int64
	ctx      context.Context
	timeout  time.Duration
	// rev is the revision reads are served at: the confirming
	// transaction's, then each successful Apply's.
	rev atomic.Int64
}

// Options are what Open needs besides the client.
type Options struct {
	// Prefix is the cluster's key prefix, without a trailing slash
	// ("/fairsched/prod").
	Prefix string
	// LeaderKey and LeaderRev are the election's key of this replica and
	// its create revision (concurrency.Election Key and Rev after Campaign
	// returned).
	LeaderKey string
	LeaderRev int64
	// Timeout bounds each etcd request (0: 5 s). A request that times out
	// fails the Apply, which makes the Committer fail-stop: the replica
	// steps down.
	Timeout time.Duration
}

// Open confirms the leadership with one guarded transaction and returns
// the term's Store, its reads pinned at that transaction's revision. It
// fails with ErrDeposed when the leader key is no longer this term's, and
// with store.ErrNewerSchema when a newer binary wrote the prefix; a prefix
// without a schema version gets this binary's (a guarded write). ctx ends
// the term: every later request of the Store fails.
func Open(ctx context.Context, c *clientv3.Client, o Options) (*Store, error) {
	if o.Prefix == "" || !strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/") {
		return nil, fmt.Errorf("etcdstore: cannot use the prefix %q: want /name[/name…] without a trailing slash", o.Prefix)
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	s := &Store{c: c, prefix: o.Prefix + "/", guardKey: o.LeaderKey, guardRev: o.LeaderRev, ctx: ctx, timeout: o.Timeout}
	if eps := c.Endpoints(); len(eps) > 0 {
		s.endpoint = strings.Join(eps, ",")
	}
	schemaKey := s.key(store.Meta, "schema")
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	resp, err := c.Txn(rctx).If(s.guard()).Then(clientv3.OpGet(schemaKey)).Commit()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("etcdstore: cannot confirm the leadership: %w", err)
	}
	if !resp.Succeeded {
		return nil, ErrDeposed
	}
	s.rev.Store(resp.Header.Revision)
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		if err := s.Apply([]store.Write{store.Put(store.Meta, "schema", []byte(strconv.Itoa(store.SchemaVersion)))}); err != nil {
			return nil, err
		}
		return s, nil
	}
	n, err := strconv.Atoi(string(kvs[0].Value))
	if err != nil {
		return nil, fmt.Errorf("etcdstore: %s: schema version %q is not a number", schemaKey, kvs[0].Value)
	}
	if n > store.SchemaVersion {
		return nil, fmt.Errorf("%w: %s has schema %d, this binary knows up to %d: run a newer fairsched",
			store.ErrNewerSchema, s.prefix, n, store.SchemaVersion)
	}
	return s, nil
}

// key is the etcd key of a record.
func (s *Store) key(bucket, key string) string { return s.prefix + bucket + "/" + key }

// guard holds while the leader key is this term's.
func (s *Store) guard() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(s.guardKey), "=", s.guardRev)
}

// Revision is the revision reads are served at.
func (s *Store) Revision() int64 { return s.rev.Load() }

// Limits are MaxTxnWrites and MaxTxnBytes (store.Limiter).
func (s *Store) Limits() (writes, bytes int) { return MaxTxnWrites, MaxTxnBytes }

// Apply writes ws in one transaction guarded by the leader key: all of
// them, or none and ErrDeposed when the replica is no longer the leader. A
// key written twice keeps its last write (etcd refuses a key twice in one
// transaction).
func (s *Store) Apply(ws []store.Write) error {
	if len(ws) == 0 {
		return nil
	}
	last := make(map[string]int, len(ws))
	for i, w := range ws {
		last[s.key(w.Bucket, w.Key)] = i
	}
	ops := make([]clientv3.Op, 0, len(last))
	for i, w := range ws {
		k := s.key(w.Bucket, w.Key)
		if last[k] != i {
			continue
		}
		if w.Value == nil {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, string(w.Value)))
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	resp, err := s.c.Txn(ctx).If(s.guard()).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("etcdstore: cannot write %d keys: %w", len(ops), err)
	}
	if !resp.Succeeded {
		return ErrDeposed
	}
	s.advance(resp.Header.Revision)
	return nil
}

// advance moves the read revision forward to rev.
func (s *Store) advance(rev int64) {
	for {
		cur := s.rev.Load()
		if rev <= cur || s.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// Scan calls fn for each key of bucket in key order, at the read revision.
func (s *Store) Scan(bucket string, fn func(key string, value []byte) error) error {
	pfx := s.prefix + bucket + "/"
	end := clientv3.GetPrefixRangeEnd(pfx)
	rev := s.rev.Load()
	from := pfx
	for {
		ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
		resp, err := s.c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithRev(rev),
			clientv3.WithLimit(scanPage), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		cancel()
		if err != nil {
			return fmt.Errorf("etcdstore: cannot read %s at revision %d: %w", pfx, rev, err)
		}
		for _, kv := range resp.Kvs {
			if err := fn(string(kv.Key[len(pfx):]), kv.Value); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Get returns key's value in bucket at the read revision.
func (s *Store) Get(bucket, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	k := s.key(bucket, key)
	resp, err := s.c.Get(ctx, k, clientv3.WithRev(s.rev.Load()))
	if err != nil {
		return nil, false, fmt.Errorf("etcdstore: cannot read %s: %w", k, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, false, nil
	}
	return resp.Kvs[0].Value, true, nil
}

// Describe is ("etcd", "ENDPOINTS PREFIX").
func (s *Store) Describe() (kind, location string) {
	return "etcd", s.endpoint + " " + strings.TrimSuffix(s.prefix, "/")
}

// Close does nothing: the client is the caller's, and the term ends with
// Open's context.
func (s *Store) Close() error { return nil }

var (
	_ store.Backend = (*Store)(nil)
	_ store.Limiter = (*Store)(nil)
)
