package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fairsched/fairsched/internal/etcdtest"
	"github.com/fairsched/fairsched/store"
)

func dial(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lead campaigns on prefix/leader with a new session and returns the
// session and the election once it leads.
func lead(t testing.TB, c *clientv3.Client, prefix string) (*concurrency.Session, *concurrency.Election) {
	t.Helper()
	s, err := concurrency.NewSession(c, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := concurrency.NewElection(s, prefix+"/leader")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Campaign(ctx, "me"); err != nil {
		t.Fatal(err)
	}
	return s, e
}

func open(t testing.TB, c *clientv3.Client, prefix string, e *concurrency.Election) *Store {
	t.Helper()
	s, err := Open(context.Background(), c, Options{Prefix: prefix, LeaderKey: e.Key(), LeaderRev: e.Rev()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreRoundTrip(t *testing.T) {
	c := dial(t, etcdtest.Endpoint(t))
	prefix := etcdtest.Prefix(t)
	_, e := lead(t, c, prefix)
	s := open(t, c, prefix, e)
	if v, ok, err := s.Get(store.Meta, "schema"); err != nil || !ok || string(v) != strconv.Itoa(store.SchemaVersion) {
		t.Fatalf("meta/schema of a new prefix: %q %v %v", v, ok, err)
	}
	var ws []store.Write
	for i := range 1200 { // more than a Scan page
		ws = append(ws, store.Put(store.Operations, fmt.Sprintf("op-%04d", i), []byte(strconv.Itoa(i))))
	}
	for chunk := range slices.Chunk(ws, MaxTxnWrites) {
		if err := s.Apply(chunk); err != nil {
			t.Fatal(err)
		}
	}
	// A key twice in one Apply: the last write wins.
	if err := s.Apply([]store.Write{store.Put(store.Pools, "a", []byte("1")), store.Put(store.Pools, "a", []byte("2")),
		store.Delete(store.Operations, "op-0000")}); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Get(store.Pools, "a"); !ok || string(v) != "2" {
		t.Fatalf("pools/a = %q, want the last write 2", v)
	}
	var keys []string
	if err := s.Scan(store.Operations, func(k string, v []byte) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1199 || keys[0] != "op-0001" || !slices.IsSorted(keys) {
		t.Fatalf("Scan: %d keys from %v, want 1199 sorted from op-0001", len(keys), keys[:min(3, len(keys))])
	}
	// A bucket whose name is a prefix of another's ("pools" of
	// "pools2") sees only its own keys.
	n := 0
	s.Scan(store.Pools, func(string, []byte) error { n++; return nil })
	if n != 1 {
		t.Fatalf("pools holds %d keys, want 1", n)
	}
	if kind, loc := s.Describe(); kind != "etcd" || loc == "" {
		t.Fatalf("Describe: %q %q", kind, loc)
	}
}

// TestReadsArePinned: a Store reads at the revision of its confirmation or
// its own last write, not later writes of others.
func TestReadsArePinned(t *testing.T) {
	c := dial(t, etcdtest.Endpoint(t))
	prefix := etcdtest.Prefix(t)
	_, e := lead(t, c, prefix)
	s := open(t, c, prefix, e)
	if _, err := c.Put(context.Background(), prefix+"/pools/x", "outside"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(store.Pools, "x"); ok {
		t.Fatal("a write after the confirmation is visible to the pinned reads")
	}
	if err := s.Apply([]store.Write{store.Put(store.Pools, "y", []byte("mine"))}); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Get(store.Pools, "y"); !ok || string(v) != "mine" {
		t.Fatalf("the Store's own write is not read back: %q %v", v, ok)
	}
}

// TestDeposedWriteIsRefused: once the leader key is gone (resigned, or its
// lease expired or was revoked), an Apply writes nothing and answers
// ErrDeposed; so does Open.
func TestDeposedWriteIsRefused(t *testing.T) {
	c := dial(t, etcdtest.Endpoint(t))
	prefix := etcdtest.Prefix(t)
	f := func(name string, depose func(*concurrency.Session, *concurrency.Election)) {
		t.Run(name, func(t *testing.T) {
			sess, e := lead(t, c, prefix)
			s := open(t, c, prefix, e)
			if err := s.Apply([]store.Write{store.Put(store.Pools, "before-"+name, []byte("1"))}); err != nil {
				t.Fatal(err)
			}
			depose(sess, e)
			err := s.Apply([]store.Write{store.Put(store.Pools, "after-"+name, []byte("1"))})
			if !errors.Is(err, ErrDeposed) {
				t.Fatalf("Apply after %s: %v, want ErrDeposed", name, err)
			}
			resp, err := c.Get(context.Background(), prefix+"/pools/after-"+name)
			if err != nil || len(resp.Kvs) != 0 {
				t.Fatalf("the deposed write is in etcd: %v %v", resp, err)
			}
			if _, err := Open(context.Background(), c, Options{Prefix: prefix, LeaderKey: e.Key(), LeaderRev: e.Rev()}); !errors.Is(err, ErrDeposed) && e.Key() != "" {
				t.Fatalf("Open after %s: %v, want ErrDeposed", name, err)
			}
		})
	}
	f("resign", func(_ *concurrency.Session, e *concurrency.Election) {
		key, rev := e.Key(), e.Rev()
		if err := e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Resign forgets the key; Open below checks the old one.
		_, err := Open(context.Background(), c, Options{Prefix: prefix, LeaderKey: key, LeaderRev: rev})
		if !errors.Is(err, ErrDeposed) {
			t.Fatalf("Open after resigning: %v, want ErrDeposed", err)
		}
	})
	f("lease revoked", func(s *concurrency.Session, _ *concurrency.Election) {
		if _, err := c.Revoke(context.Background(), s.Lease()); err != nil {
			t.Fatal(err)
		}
	})
	f("another leader", func(s *concurrency.Session, _ *concurrency.Election) {
		// The key expires and another replica's campaign creates a new
		// one: the old term's guard fails even though the prefix has a
		// leader.
		if _, err := c.Revoke(context.Background(), s.Lease()); err != nil {
			t.Fatal(err)
		}
		lead(t, c, prefix)
	})
}

func TestNewerSchemaIsRefused(t *testing.T) {
	c := dial(t, etcdtest.Endpoint(t))
	prefix := etcdtest.Prefix(t)
	if _, err := c.Put(context.Background(), prefix+"/meta/schema", strconv.Itoa(store.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	_, e := lead(t, c, prefix)
	_, err := Open(context.Background(), c, Options{Prefix: prefix, LeaderKey: e.Key(), LeaderRev: e.Rev()})
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("Open: %v, want ErrNewerSchema", err)
	}
}

func TestOpenRefusesABadPrefix(t *testing.T) {
	for _, p := range []string{"", "fairsched", "/fairsched/"} {
		if _, err := Open(context.Background(), nil, Options{Prefix: p}); err == nil {
			t.Errorf("Open with the prefix %q: no error", p)
		}
	}
}

// TestCommitterOnEtcd: concurrent Commits through the Committer land, in
// groups within the transaction limits.
func TestCommitterOnEtcd(t *testing.T) {
	c := dial(t, etcdtest.Endpoint(t))
	prefix := etcdtest.Prefix(t)
	_, e := lead(t, c, prefix)
	s := open(t, c, prefix, e)
	cm := store.NewCommitter(s)
	defer cm.Close()
	const writers, each = 64, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Four records a Commit, like an operation's start.
				k := fmt.Sprintf("w%02d-%02d", w, i)
				err := cm.Commit(store.Put(store.Operations, k, []byte(k)), store.Put(store.OperationStates, k, []byte(k)),
					store.Put(store.Counters, "operation_id", []byte(k)), store.Put(store.Counters, "start_seq", []byte(k)))
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := 0
	s.Scan(store.Operations, func(string, []byte) error { n++; return nil })
	if n != writers*each {
		t.Fatalf("%d operations in etcd, want %d", n, writers*each)
	}
	groups, commits := cm.Stats()
	t.Logf("%d commits in %d transactions", commits, groups)
}

// TestMeasureFencedWrites measures guarded transactions of one ≈200-byte
// record through the Committer, for 2 s each: one writer, then 64. It runs
// with FAIRSCHED_HA_MEASURE=1 (make ha-bench), on an embedded etcd that
// syncs to disk, or FAIRSCHED_ETCD's.
func TestMeasureFencedWrites(t *testing.T) {
	if os.Getenv("FAIRSCHED_HA_MEASURE") == "" {
		t.Skip("set FAIRSCHED_HA_MEASURE=1 (make ha-bench) to measure")
	}
	ep := os.Getenv(etcdtest.EnvEndpoint)
	if ep == "" {
		srv, err := etcdtest.Start(t.TempDir(), etcdtest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ep = srv.Endpoint
	} else if !strings.Contains(ep, "://") {
		ep = "http://" + ep
	}
	c := dial(t, ep)
	prefix := etcdtest.Prefix(t)
	_, e := lead(t, c, prefix)
	s := open(t, c, prefix, e)
	val := make([]byte, 200)
	var seq atomic.Int64
	for _, writers := range []int{1, 64} {
		cm := store.NewCommitter(s)
		lat := make([][]time.Duration, writers)
		deadline := time.Now().Add(2 * time.Second)
		var wg sync.WaitGroup
		start := time.Now()
		for w := range writers {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					k := strconv.FormatInt(seq.Add(1), 10)
					t0 := time.Now()
					if err := cm.Commit(store.Put(store.Operations, k, val)); err != nil {
						t.Error(err)
						return
					}
					lat[w] = append(lat[w], time.Since(t0))
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		cm.Close()
		all := slices.Concat(lat...)
		slices.Sort(all)
		groups, commits := cm.Stats()
		t.Logf("fenced writes, %d writer(s): %.0f/s, p50 %v, p99 %v (%d commits in %d transactions)",
			writers, float64(len(all))/took.Seconds(), all[len(all)/2], all[len(all)*99/100], commits, groups)
	}
}
