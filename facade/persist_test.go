package facade

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/store"
)

// durableServer is a Server on a bbolt store in dir, with the shared manual
// clock; stop shuts it down and closes the store, as a clean stop would.
type durableServer struct {
	*testServer
	st   store.Backend
	stop func()
}

func startDurable(t *testing.T, dir string, mc *manualClock, config string, wrap func(store.Backend) store.Backend, opts ...func(*Options)) *durableServer {
	t.Helper()
	st, err := store.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	var backend store.Backend = st
	if wrap != nil {
		backend = wrap(st)
	}
	o := Options{Config: testConfig(t, config), Clock: mc, ManualUpdates: true, Logger: quietLogger(t), Store: backend}
	for _, f := range opts {
		f(&o)
	}
	srv, err := New(o)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ts, stopServing := serveForTest(t, srv, mc)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopServing()
			st.Close()
		})
	}
	t.Cleanup(stop)
	return &durableServer{testServer: ts, st: st, stop: stop}
}

// TestRestartKeepsTheState: what the API acknowledged — pools, the tree
// config, operations with their changes and final states — is there after a
// restart on the same data directory, whatever the --config file says then;
// ids are not reused; retries of starts and finishes answer as before.
func TestRestartKeepsTheState(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	mc.set(clock.Time(5_000_000))
	a := startDurable(t, dir, mc, `{"pools": [{"name": "prod", "weight": 2}, {"name": "etl", "parent": "prod"}]}`, nil)
	a.must(201, "PUT", "/api/v1/pools/ml", `{"parent": "prod", "max_running_operation_count": 1}`)
	a.must(200, "PATCH", "/api/v1/pools/prod", `{"weight": 5}`)
	a.must(201, "PUT", "/api/v1/pools/tmp", `{}`)
	a.must(204, "DELETE", "/api/v1/pools/tmp", ``)
	a.must(200, "PATCH", "/api/v1/config", `{"preemptive_scheduling_backoff_s": 4}`)
	job := `"tasks": [{"name": "map", "job_count": 3, "resources": {"cpu": 1}}]`
	a.must(201, "POST", "/api/v1/operations", `{"id": "train-1", "pool": "ml", `+job+`}`)
	a.must(201, "POST", "/api/v1/operations", `{"id": "train-2", "pool": "ml", `+job+`}`) // pending: limit 1
	named := a.must(201, "POST", "/api/v1/operations", `{"pool": "etl", `+job+`}`)["id"].(string)
	a.must(201, "POST", "/api/v1/operations", `{"id": "moved", "pool": "etl", `+job+`}`)
	a.must(200, "PATCH", "/api/v1/operations/moved", `{"pool": "prod", "weight": 3, "resource_limits": {"cpu": 2}}`)
	a.must(200, "POST", "/api/v1/operations/"+named+"/complete", ``)
	a.must(201, "POST", "/api/v1/operations", `{"id": "gone", `+job+`}`)
	a.must(200, "POST", "/api/v1/operations/gone/abort", ``)
	pools := a.must(200, "GET", "/api/v1/pools", "")
	cfg := a.must(200, "GET", "/api/v1/config", "")
	ops := a.must(200, "GET", "/api/v1/operations", "")
	a.stop()

	mc.AdvanceSeconds(30)
	b := startDurable(t, dir, mc, `{"pools": [{"name": "other"}]}`, nil)
	if got := b.must(200, "GET", "/api/v1/pools", ""); jsonText(t, got) != jsonText(t, pools) {
		t.Fatalf("pools after the restart:\n%s\nwant\n%s", jsonText(t, got), jsonText(t, pools))
	}
	if got := b.must(200, "GET", "/api/v1/config", ""); jsonText(t, got) != jsonText(t, cfg) {
		t.Fatalf("config after the restart:\n%s\nwant\n%s", jsonText(t, got), jsonText(t, cfg))
	}
	got := b.must(200, "GET", "/api/v1/operations", "")
	if a, b := opSummary(ops), opSummary(got); a != b {
		t.Fatalf("operations after the restart:\n%s\nwant\n%s", b, a)
	}
	m := b.must(200, "GET", "/api/v1/orchid/operations/moved", "")
	if m["pool"] != "prod" || num(m["weight"]) != 3 {
		t.Fatalf("moved after the restart: pool %v weight %v", m["pool"], m["weight"])
	}
	if st := b.must(200, "GET", "/healthz", ""); st["store"] != "bbolt" || st["quarantined"] != nil {
		t.Fatalf("/healthz: %v", st)
	}
	// Ids are not reused; retries answer as the first time.
	next := b.must(201, "POST", "/api/v1/operations", `{"pool": "etl", `+job+`}`)["id"].(string)
	if next == named || opNumber(next) <= opNumber(named) {
		t.Fatalf("a server-named id after the restart: %s (before: %s)", next, named)
	}
	if r := b.must(201, "POST", "/api/v1/operations", `{"id": "train-1", "pool": "ml", `+job+`}`); r["state"] != "running" {
		t.Fatalf("a repeated start after the restart: %v", r)
	}
	if r := b.must(200, "POST", "/api/v1/operations/gone/complete", ``); r["state"] != "aborted" {
		t.Fatalf("completing an aborted operation: %v", r)
	}
	b.stop()

	// A third start sees the second's changes too.
	c := startDurable(t, dir, mc, ``, nil)
	c.must(200, "GET", "/api/v1/operations/"+next, "")
	// The listing cursor (start order) continued from where it was.
	seqs := []string{}
	for _, o := range c.must(200, "GET", "/api/v1/operations", "")["operations"].([]any) {
		seqs = append(seqs, o.(map[string]any)["id"].(string))
	}
	if seqs[len(seqs)-1] != next {
		t.Fatalf("start order after two restarts: %v, want %s last", seqs, next)
	}
}

func opSummary(page map[string]any) string {
	var b strings.Builder
	for _, o := range page["operations"].([]any) {
		m := o.(map[string]any)
		b.WriteString(m["id"].(string) + " " + m["state"].(string) + " " + m["pool"].(string) + "\n")
	}
	return b.String()
}

func opNumber(id string) int {
	n := 0
	for _, c := range strings.TrimPrefix(id, "op-") {
		n = n*10 + int(c-'0')
	}
	return n
}

// failingStore fails every Apply once failing is set.
type failingStore struct {
	store.Backend
	failing atomic.Bool
}

func (f *failingStore) Apply(ws []store.Write) error {
	if f.failing.Load() {
		return errors.New("injected: no space left on device")
	}
	return f.Backend.Apply(ws)
}

// TestStoreFailureIsFailStop: a change the store cannot keep answers 503
// store_unavailable, so does every later change, reads go on, and the
// owner is told to stop; the restart has what was durable.
func TestStoreFailureIsFailStop(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	var fs *failingStore
	stopped := make(chan error, 1)
	a := startDurable(t, dir, mc, ``, func(b store.Backend) store.Backend { fs = &failingStore{Backend: b}; return fs },
		func(o *Options) { o.OnStoreFailure = func(err error) { stopped <- err } })
	a.must(201, "PUT", "/api/v1/pools/kept", `{}`)
	a.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": 4}}`)
	fs.failing.Store(true)
	e := a.must(503, "PUT", "/api/v1/pools/lost", `{}`)
	if obj(e["error"])["code"] != "store_unavailable" {
		t.Fatalf("the failed change: %v", e)
	}
	if err := <-stopped; err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("OnStoreFailure: %v", err)
	}
	fs.failing.Store(false) // even a store that recovers takes nothing more
	for _, req := range [][3]string{
		{"PUT", "/api/v1/pools/later", `{}`},
		{"POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`},
		{"PATCH", "/api/v1/config", `{"preemptive_scheduling_backoff_s": 9}`},
	} {
		if e := a.must(503, req[0], req[1], req[2]); obj(e["error"])["code"] != "store_unavailable" {
			t.Fatalf("%s %s after the failure: %v", req[0], req[1], e)
		}
	}
	// Reads and the heartbeats of registered nodes go on; a new node's
	// registration needs the store.
	a.must(200, "GET", "/api/v1/pools/kept", "")
	a.must(200, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": 4}}`)
	if e := a.must(503, "POST", "/api/v1/nodes/n2/heartbeat", `{"resource_limits": {"cpu": 4}}`); obj(e["error"])["code"] != "store_unavailable" {
		t.Fatalf("a new node after the failure: %v", e)
	}
	a.stop()

	b := startDurable(t, dir, mc, ``, nil)
	b.must(200, "GET", "/api/v1/pools/kept", "")
	b.must(404, "GET", "/api/v1/pools/lost", "")
	b.must(404, "GET", "/api/v1/pools/later", "")
}

// TestUnreadableOperationIsQuarantined: an operation record the server
// cannot read leaves that operation out (named at /healthz), not the
// server.
func TestUnreadableOperationIsQuarantined(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	a := startDurable(t, dir, mc, ``, nil)
	job := `"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]`
	a.must(201, "POST", "/api/v1/operations", `{"id": "good", `+job+`}`)
	a.must(201, "POST", "/api/v1/operations", `{"id": "bad", `+job+`}`)
	a.stop()
	st, err := store.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply([]store.Write{store.Put(store.Operations, "bad", []byte(`{"seq": "x"`))}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b := startDurable(t, dir, mc, ``, nil)
	b.must(200, "GET", "/api/v1/operations/good", "")
	b.must(404, "GET", "/api/v1/operations/bad", "")
	h := b.must(200, "GET", "/healthz", "")
	if q, _ := h["quarantined"].([]any); len(q) != 1 || q[0] != "bad" {
		t.Fatalf("/healthz: %v", h)
	}
}

// TestConcurrentStartsShareTransactions: starts from many clients are
// each durable before their 201 and share the store's transactions.
func TestConcurrentStartsShareTransactions(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	a := startDurable(t, dir, mc, `{"config": {"max_running_operation_count": 10000, "max_operation_count": 10000, "max_running_operation_count_per_pool": 10000, "max_operation_count_per_pool": 10000}}`, nil)
	const clients, each = 32, 8
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := "c" + itoa(c) + "-" + itoa(i)
				if status, out := a.do("POST", "/api/v1/operations", `{"id": "`+id+`", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`); status != 201 {
					t.Errorf("start %s: %d %s", id, status, out)
				}
			}
		}()
	}
	wg.Wait()
	groups, commits := a.srv.Core().StoreStats()
	if commits < clients*each {
		t.Fatalf("%d commits for %d starts", commits, clients*each)
	}
	t.Logf("%d starts in %d commits, %d transactions", clients*each, commits, groups)
	a.stop()
	b := startDurable(t, dir, mc, ``, nil)
	n := 0
	for c := range clients {
		for i := range each {
			if status, _ := b.do("GET", "/api/v1/operations/c"+itoa(c)+"-"+itoa(i), ""); status == 200 {
				n++
			}
		}
	}
	if n != clients*each {
		t.Fatalf("%d of %d acknowledged starts after the restart", n, clients*each)
	}
}

// TestBackupStartsAServer: the copy GET /api/v1/backup answers is a data
// directory's file with the state of that moment.
func TestBackupStartsAServer(t *testing.T) {
	mc := &manualClock{}
	a := startDurable(t, t.TempDir(), mc, ``, nil)
	a.must(201, "PUT", "/api/v1/pools/saved", `{"weight": 7}`)
	a.must(201, "POST", "/api/v1/operations", `{"id": "op-saved", "pool": "saved", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`)
	status, copyBytes := a.do("GET", "/api/v1/backup", "")
	if status != 200 || len(copyBytes) == 0 {
		t.Fatalf("backup: %d, %d bytes", status, len(copyBytes))
	}
	a.must(201, "PUT", "/api/v1/pools/after", `{}`)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, store.FileName), copyBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	b := startDurable(t, dir, mc, ``, nil)
	if p := b.must(200, "GET", "/api/v1/pools/saved", ""); num(p["weight"]) != 7 {
		t.Fatalf("saved: %v", p)
	}
	b.must(200, "GET", "/api/v1/operations/op-saved", "")
	b.must(404, "GET", "/api/v1/pools/after", "")
}

// TestStoreMetrics: a durable server's /metrics has the store's families.
func TestStoreMetrics(t *testing.T) {
	a := startDurable(t, t.TempDir(), &manualClock{}, ``, nil)
	a.must(201, "PUT", "/api/v1/pools/x", `{}`)
	mfs := scrape(t, a.testServer)
	for _, name := range []string{"fairsched_store_commits_total", "fairsched_store_transactions_total", "fairsched_store_up", "fairsched_store_quarantined_operations"} {
		mf := mfs[name]
		if mf == nil || mf.GetHelp() == "" {
			t.Fatalf("no %s", name)
		}
	}
	if v := mfs["fairsched_store_up"].Metric[0].GetGauge().GetValue(); v != 1 {
		t.Fatalf("fairsched_store_up = %v", v)
	}
	if v := mfs["fairsched_store_commits_total"].Metric[0].GetCounter().GetValue(); v < 2 {
		t.Fatalf("fairsched_store_commits_total = %v, want the seed and the PUT", v)
	}
}
