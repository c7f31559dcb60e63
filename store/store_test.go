package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func openTemp(t *testing.T) (*Bolt, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dir
}

func TestBoltKeepsWritesAcrossReopen(t *testing.T) {
	b, dir := openTemp(t)
	if err := b.Apply([]Write{Put(Pools, "b", []byte("2")), Put(Pools, "a", []byte("1")),
		Put(Operations, "op-1", []byte("x")), Put(Pools, "c", []byte("3")), Delete(Pools, "c"),
		Put(Pools, "a", []byte("1'"))}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	var keys, vals []string
	if err := b2.Scan(Pools, func(k string, v []byte) error {
		keys, vals = append(keys, k), append(vals, string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"a", "b"}) || !slices.Equal(vals, []string{"1'", "2"}) {
		t.Fatalf("pools %v = %v: want a later write of a key to win and a delete to remove it", keys, vals)
	}
	if v, ok, err := b2.Get(Operations, "op-1"); err != nil || !ok || string(v) != "x" {
		t.Fatalf("Get = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := b2.Get(Operations, "op-2"); err != nil || ok {
		t.Fatalf("Get of a missing key: %v, %v", ok, err)
	}
	if kind, loc := b2.Describe(); kind != "bbolt" || loc != filepath.Join(dir, FileName) {
		t.Fatalf("Describe = %s, %s", kind, loc)
	}
}

func TestBoltApplyIsAllOrNothing(t *testing.T) {
	b, _ := openTemp(t)
	err := b.Apply([]Write{Put(Pools, "a", []byte("1")), Put("no-such-bucket", "k", []byte("v"))})
	if err == nil {
		t.Fatal("a write to a missing bucket succeeded")
	}
	if _, ok, _ := b.Get(Pools, "a"); ok {
		t.Fatal("the failed transaction's first write is visible")
	}
}

func TestBoltIsLocked(t *testing.T) {
	_, dir := openTemp(t)
	if _, err := OpenBolt(dir); !errors.Is(err, ErrLocked) || !contains(err.Error(), dir) {
		t.Fatalf("a second open: %v, want ErrLocked naming %s", err, dir)
	}
}

func TestBoltRefusesANewerSchema(t *testing.T) {
	b, dir := openTemp(t)
	if err := b.Apply([]Write{Put(Meta, "schema", []byte(strconv.Itoa(SchemaVersion+1)))}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := OpenBolt(dir); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("open: %v, want ErrNewerSchema", err)
	}
}

func TestBoltUnwritableDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBolt(filepath.Join(file, "sub")); err == nil {
		t.Fatal("opened a store below a file")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestCommitterGroups: concurrent Commits all become durable, in fewer
// transactions than Commits, and each Commit's writes are in the store when
// it returns.
func TestCommitterGroups(t *testing.T) {
	b, _ := openTemp(t)
	c := NewCommitter(b)
	defer c.Close()
	const writers, each = 32, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("w%02d-%03d", w, i)
				if err := c.Commit(Put(Operations, key, []byte(key))); err != nil {
					t.Error(err)
					return
				}
				if v, ok, err := b.Get(Operations, key); err != nil || !ok || string(v) != key {
					t.Errorf("%s after its Commit: %q %v %v", key, v, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	groups, commits := c.Stats()
	if commits != writers*each {
		t.Fatalf("%d commits, want %d", commits, writers*each)
	}
	n := 0
	b.Scan(Operations, func(string, []byte) error { n++; return nil })
	if n != writers*each {
		t.Fatalf("%d keys in the store, want %d", n, writers*each)
	}
	t.Logf("%d commits in %d transactions", commits, groups)
	if groups >= commits {
		t.Logf("no grouping happened (possible on a quiet machine, not a failure)")
	}
}

// failing is a Backend whose Apply fails from the n-th call on.
type failing struct {
	Backend
	mu     sync.Mutex
	calls  int
	failAt int
}

func (f *failing) Apply(ws []Write) error {
	f.mu.Lock()
	f.calls++
	fail := f.calls >= f.failAt
	f.mu.Unlock()
	if fail {
		return errors.New("disk full")
	}
	return f.Backend.Apply(ws)
}

// TestCommitterFailStop: after a failed transaction every Commit fails with
// ErrUnavailable, and nothing more is written.
func TestCommitterFailStop(t *testing.T) {
	b, _ := openTemp(t)
	f := &failing{Backend: b, failAt: 2}
	c := NewCommitter(f)
	defer c.Close()
	if err := c.Commit(Put(Pools, "a", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	err := c.Commit(Put(Pools, "b", []byte("2")))
	if !errors.Is(err, ErrUnavailable) || !contains(err.Error(), "disk full") {
		t.Fatalf("the failing commit: %v", err)
	}
	if err := c.Commit(Put(Pools, "c", []byte("3"))); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a commit after the failure: %v", err)
	}
	if c.Err() == nil {
		t.Fatal("Err is nil after a failure")
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d transactions, want 2: nothing is written after the failure", calls)
	}
	if _, ok, _ := b.Get(Pools, "c"); ok {
		t.Fatal("a write after the failure reached the store")
	}
}

func TestCommitterClose(t *testing.T) {
	b, _ := openTemp(t)
	c := NewCommitter(b)
	if err := c.Commit(Put(Pools, "a", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
	if err := c.Commit(Put(Pools, "b", []byte("2"))); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if err := c.Commit(); err != nil {
		t.Fatalf("an empty Commit: %v", err)
	}
}

// BenchmarkCommit measures durable commits per second through the
// Committer on a bbolt file at 1, 16 and 64 concurrent writers, with
// ≈200-byte records (one op is one Commit).
func BenchmarkCommit(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			dir := b.TempDir()
			st, err := OpenBolt(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			c := NewCommitter(st)
			defer c.Close()
			value := []byte(strings.Repeat("x", 200))
			var next sync.Mutex
			i := 0
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / writers
			for w := range writers {
				n := per
				if w == 0 {
					n += b.N - per*writers
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						next.Lock()
						i++
						key := strconv.Itoa(i)
						next.Unlock()
						if err := c.Commit(Put(Operations, key, value)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			groups, commits := c.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			b.ReportMetric(float64(commits)/float64(max(groups, 1)), "commits/txn")
		})
	}
}

// TestSubmitKeepsOrder: writes submitted in order land in that order, a
// later write of a key winning, even when they share a transaction.
func TestSubmitKeepsOrder(t *testing.T) {
	b, _ := openTemp(t)
	c := NewCommitter(b)
	defer c.Close()
	var ps []Pending
	for i := range 100 {
		ps = append(ps, c.Submit(Put(Pools, "k", []byte(strconv.Itoa(i)))))
	}
	for _, p := range ps {
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if v, _, _ := b.Get(Pools, "k"); string(v) != "99" {
		t.Fatalf("k = %s, want the last write, 99", v)
	}
}

// TestBoltBackup: WriteTo's copy is a store with the same records.
func TestBoltBackup(t *testing.T) {
	b, _ := openTemp(t)
	if err := b.Apply([]Write{Put(Pools, "a", []byte("1"))}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, ok, err := c.Get(Pools, "a"); err != nil || !ok || string(v) != "1" {
		t.Fatalf("the copy: %q %v %v", v, ok, err)
	}
}

// limited is a Backend with a Limiter that records the size of each
// transaction.
type limited struct {
	Backend
	writes, bytes int
	mu            sync.Mutex
	sizes         []int
	block         chan struct{} // the first Apply waits for it
}

func (l *limited) Limits() (int, int) { return l.writes, l.bytes }

func (l *limited) Apply(ws []Write) error {
	l.mu.Lock()
	first := len(l.sizes) == 0
	l.sizes = append(l.sizes, len(ws))
	l.mu.Unlock()
	if first {
		<-l.block
	}
	return l.Backend.Apply(ws)
}

// TestCommitterLimits: a Limiter bounds each transaction; a Commit larger
// than the bound alone is applied alone.
func TestCommitterLimits(t *testing.T) {
	f := func(writes, bytes int, commits []int, want []int) {
		t.Helper()
		b, _ := openTemp(t)
		l := &limited{Backend: b, writes: writes, bytes: bytes, block: make(chan struct{})}
		c := NewCommitter(l)
		defer c.Close()
		first := c.Submit(Put(Pools, "first", []byte("x")))
		// The writer is inside the first Apply: the rest queue behind it.
		for {
			l.mu.Lock()
			n := len(l.sizes)
			l.mu.Unlock()
			if n == 1 {
				break
			}
			runtime.Gosched()
		}
		var ps []Pending
		for i, n := range commits {
			var ws []Write
			for j := range n {
				ws = append(ws, Put(Pools, fmt.Sprintf("c%d-%d", i, j), []byte("0123456789")))
			}
			ps = append(ps, c.Submit(ws...))
		}
		close(l.block)
		if err := first.Wait(); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		l.mu.Lock()
		got := l.sizes[1:]
		l.mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("limits (%d writes, %d bytes), commits %v: transactions of %v writes, want %v", writes, bytes, commits, got, want)
		}
	}
	f(0, 0, []int{3, 3, 3}, []int{9})
	f(4, 0, []int{2, 2, 2, 1}, []int{4, 3})
	f(4, 0, []int{6, 1, 1}, []int{6, 2})
	f(5, 0, []int{1, 6, 1}, []int{1, 6, 1})
	// Each write is 6+2+10 = 18 bytes or more ("pools", "cI-J", 10).
	f(0, 40, []int{1, 1, 1, 1}, []int{2, 2})
}

// TestSubmitChunked: writes that need not be one transaction are written
// in pieces within the backend's limits, in order.
func TestSubmitChunked(t *testing.T) {
	b, _ := openTemp(t)
	l := &limited{Backend: b, writes: 4, block: make(chan struct{})}
	close(l.block)
	c := NewCommitter(l)
	defer c.Close()
	var ws []Write
	for i := range 10 {
		ws = append(ws, Put(Pools, fmt.Sprintf("k%02d", i), []byte("v")))
	}
	ws = append(ws, Put(Pools, "k00", []byte("last"))) // a later write of a key wins
	if err := c.SubmitChunked(ws...).Wait(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	sizes := slices.Clone(l.sizes)
	l.mu.Unlock()
	total := 0
	for _, n := range sizes {
		if n > 4 {
			t.Fatalf("a transaction of %d writes, over the limit of 4: %v", n, sizes)
		}
		total += n
	}
	if total != 11 {
		t.Fatalf("%d writes applied, want 11: %v", total, sizes)
	}
	if v, _, _ := b.Get(Pools, "k00"); string(v) != "last" {
		t.Fatalf("k00 = %q, want the later write", v)
	}
	if v, ok, _ := b.Get(Pools, "k09"); !ok || string(v) != "v" {
		t.Fatalf("k09 = %q %v", v, ok)
	}
}
