package facade

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/store"
)

// echoNode is a node of the durable tests: a coretest.Node agent that
// keeps what it was told to start (each allocation's Meta its
// allocations_to_start entry) and reports it back with its origin, as
// docs/api.md#node-heartbeats asks.
type echoNode struct {
	name   string
	limits string
	agent  coretest.Node[string, map[string]any]
}

// heartbeat sends the node's reports, those in finished ended in the state
// given (reported once), and keeps what it is told to start; it returns
// the answer.
func (n *echoNode) heartbeat(ts *durableServer, finished map[string]string) map[string]any {
	ts.t.Helper()
	for id, st := range finished {
		n.agent.Finish(id, map[string]coretest.AllocState{"completed": coretest.AllocCompleted, "failed": coretest.AllocFailed, "aborted": coretest.AllocAborted}[st])
	}
	reports := []map[string]any{}
	for _, al := range n.agent.Allocs() {
		a := al.Meta
		r := map[string]any{"id": a["id"], "state": simStates[al.State], "operation_id": a["operation_id"],
			"task_index": a["task_index"], "resources": a["resources"]}
		reports = append(reports, r)
	}
	body, _ := json.Marshal(map[string]any{"resource_limits": json.RawMessage(n.limits), "allocations": reports})
	resp := ts.must(200, "POST", "/api/v1/nodes/"+n.name+"/heartbeat", string(body))
	n.agent.Delivered(nil)
	for _, s := range arr(resp["allocations_to_start"]) {
		n.start(obj(s))
	}
	for _, ab := range arr(resp["allocations_to_abort"]) {
		n.agent.Abort(obj(ab)["id"].(string))
	}
	return resp
}

// start makes the node run an allocations_to_start entry.
func (n *echoNode) start(a map[string]any) { n.agent.Start(a["id"].(string), clock.Never, a) }

// ids returns the node's allocations in the order they started.
func (n *echoNode) ids() []string {
	var ids []string
	for _, a := range n.agent.Allocs() {
		ids = append(ids, a.ID)
	}
	return ids
}

// TestRestartAdoptsRunningWork: after a restart the nodes that report
// their running allocations with their origins keep them (adopted, counted
// as running, not started again); the server is "recovering" until every
// node alive before the stop reported; completed jobs of the last
// checkpoint stay completed; no allocation id is handed out twice.
func TestRestartAdoptsRunningWork(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	mc.set(clock.Time(1_000_000))
	a := startDurable(t, dir, mc, ``, nil)
	a.must(201, "POST", "/api/v1/operations", `{"id": "work", "tasks": [{"name": "map", "job_count": 9, "resources": {"cpu": 1}}]}`)
	n1 := &echoNode{name: "n1", limits: `{"cpu": 4.5, "user_slots": 10, "memory": 17179869184}`}
	n2 := &echoNode{name: "n2", limits: `{"cpu": 2.5, "user_slots": 10, "memory": 17179869184}`}
	n1.heartbeat(a, nil)
	n2.heartbeat(a, nil)
	a.srv.UpdateFairShare()
	n1.heartbeat(a, nil)
	n2.heartbeat(a, nil)
	if n1.agent.Len() != 4 || n2.agent.Len() != 2 {
		t.Fatalf("before the restart: n1 holds %d, n2 %d allocations; want 4 and 2", n1.agent.Len(), n2.agent.Len())
	}
	handedOut := append(n1.ids(), n2.ids()...)
	// One job completes, and a checkpoint keeps it.
	n1.heartbeat(a, map[string]string{n1.ids()[0]: "completed"})
	mc.AdvanceSeconds(6)
	a.srv.UpdateFairShare()
	a.srv.Core().WaitDurable() // the checkpoint is not awaited: wait for it here
	if n1.agent.Len() != 4 {
		t.Fatalf("n1 holds %d allocations after the completion, want 4 (one started in its place)", n1.agent.Len())
	}
	handedOut = append(handedOut, n1.ids()[3])
	a.stop()

	mc.AdvanceSeconds(30)
	b := startDurable(t, dir, mc, ``, nil)
	h := b.must(200, "GET", "/healthz", "")
	rec := obj(h["recovery"])
	if h["status"] != "recovering" || num(rec["expected_nodes"]) != 2 || num(h["epoch"]) != 2 {
		t.Fatalf("/healthz after the restart: %v, want recovering, 2 expected nodes, epoch 2", h)
	}
	if err := loadOpenAPI(t).schema(t, "#/components/schemas/Health").Validate(jsonValue(mustMarshal(h))); err != nil {
		t.Fatalf("/healthz while recovering does not match the documented schema: %v", err)
	}
	if e := b.must(503, "GET", "/readyz", ""); obj(e["error"])["code"] != CodeRecovering {
		t.Fatalf("/readyz while recovering: %v", e)
	}
	r := n1.heartbeat(b, nil)
	if len(arr(r["allocations_to_abort"])) != 0 || len(arr(r["allocations_to_start"])) != 0 {
		t.Fatalf("n1's first heartbeat after the restart: %v, want its 4 allocations adopted and nothing started", r)
	}
	op := b.must(200, "GET", "/api/v1/orchid/operations/work", "")
	if num(obj(op["allocation_counts"])["running"]) != 4 || num(op["completed_job_count"]) != 1 || num(op["pending_job_count"]) != 4 {
		t.Fatalf("work after n1's report: %s, want 4 running allocations, 1 completed and 4 pending jobs", mustMarshal(op))
	}
	// n2 also reports an allocation nobody handed out.
	n2.start(map[string]any{"id": "4295067295", "operation_id": "work", "task_index": 0, "resources": map[string]any{"cpu": 1}})
	r = n2.heartbeat(b, nil)
	if ab := arr(r["allocations_to_abort"]); len(ab) != 1 || obj(ab[0])["id"] != "4295067295" {
		t.Fatalf("n2's first heartbeat after the restart: %v, want only 4295067295 aborted", r)
	}
	h = b.must(200, "GET", "/healthz", "")
	rec = obj(h["recovery"])
	if h["status"] != "ok" || rec["active"] != false || num(rec["adopted_allocations"]) != 6 || num(rec["reported_nodes"]) != 2 {
		t.Fatalf("/healthz once every node reported: %v", h)
	}
	b.must(200, "GET", "/readyz", "")
	if n, _ := b.srv.sched.NodeSummary("n1"); n.AllocationCount != 4 {
		t.Fatalf("n1 holds %d allocations after the recovery, want 4", n.AllocationCount)
	}
	// New allocations get ids never handed out before.
	b.srv.UpdateFairShare()
	held := n1.ids()
	r = n1.heartbeat(b, map[string]string{held[0]: "completed", held[1]: "completed"})
	started := arr(r["allocations_to_start"])
	if len(started) != 2 {
		t.Fatalf("n1 after two completions: %v, want the last 2 pending jobs started", r)
	}
	for _, st := range started {
		if id := obj(st)["id"].(string); slices.Contains(handedOut, id) {
			t.Fatalf("allocation id %s handed out again after the restart (before: %v)", id, handedOut)
		}
	}
	if op := b.must(200, "GET", "/api/v1/orchid/operations/work", ""); num(op["completed_job_count"]) != 3 {
		t.Fatalf("completed jobs after the restart: %v, want 3", op["completed_job_count"])
	}
}

// TestRecoveryWindowTimesOut: a node that was alive before the stop and
// never comes back holds the window open for recovery_timeout_s at most.
func TestRecoveryWindowTimesOut(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	a := startDurable(t, dir, mc, `{"config": {"recovery_timeout_s": 3}}`, nil)
	a.must(201, "POST", "/api/v1/operations", `{"id": "w", "tasks": [{"name": "t", "job_count": 9, "resources": {"cpu": 1}}]}`)
	gone := &echoNode{name: "gone", limits: `{"cpu": 3, "user_slots": 10, "memory": 17179869184}`}
	back := &echoNode{name: "back", limits: `{"cpu": 3, "user_slots": 10, "memory": 17179869184}`}
	gone.heartbeat(a, nil)
	back.heartbeat(a, nil)
	mc.AdvanceSeconds(6) // a checkpoint names both nodes
	a.srv.UpdateFairShare()
	a.srv.Core().WaitDurable()
	a.stop()

	b := startDurable(t, dir, mc, ``, nil)
	b.srv.UpdateFairShare()
	back.heartbeat(b, nil)
	if r := back.heartbeat(b, nil); len(arr(r["allocations_to_start"])) != 0 {
		t.Fatalf("a start during the recovery window: %v", r)
	}
	mc.AdvanceSeconds(3)
	b.srv.UpdateFairShare()
	if h := b.must(200, "GET", "/healthz", ""); h["status"] != "ok" || num(obj(h["recovery"])["reported_nodes"]) != 1 {
		t.Fatalf("/healthz after recovery_timeout_s: %v", h)
	}
	if r := back.heartbeat(b, nil); len(arr(r["allocations_to_start"])) != 3 {
		t.Fatalf("after the window: %v, want 3 starts", r)
	}
}

// TestInMemoryServerSaysSo: without a store /healthz names the memory
// store and no recovery.
func TestInMemoryServerHasNoRecovery(t *testing.T) {
	ts := startServer(t, ``, nil)
	h := ts.must(200, "GET", "/healthz", "")
	if h["store"] != "memory" || h["recovery"] != nil || h["status"] != "ok" {
		t.Fatalf("/healthz of an in-memory server: %v", h)
	}
	if b, _ := json.Marshal(h); strings.Contains(string(b), "epoch") {
		t.Fatalf("/healthz of an in-memory server has an epoch: %s", b)
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func arr(v any) []any {
	a, _ := v.([]any)
	return a
}

// TestRestartKeepsIntegralVolumes: an integral pool's accumulated volume is
// checkpointed and restored, so a restart does not empty its burst.
func TestRestartKeepsIntegralVolumes(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	a := startDurable(t, dir, mc, `{"pools": [{"name": "burst", "integral_guarantees": {"guarantee_type": "burst",
		"resource_flow": {"cpu": 1}, "burst_guarantee_resources": {"cpu": 4}}}]}`, nil)
	n := &echoNode{name: "n1", limits: `{"cpu": 16, "user_slots": 16, "memory": 68719476736}`}
	n.heartbeat(a, nil)
	for range 40 {
		mc.AdvanceSeconds(1)
		a.srv.UpdateFairShare()
	}
	a.srv.Core().WaitDurable()
	vol := func(ts *durableServer) float64 {
		p := ts.must(200, "GET", "/api/v1/orchid/pools/burst", "")
		return num(obj(p["accumulated_resource_volume"])["cpu"])
	}
	before := vol(a)
	if before <= 0 {
		t.Fatalf("the burst pool accumulated no volume in 40 s: %v", before)
	}
	a.stop()

	b := startDurable(t, dir, mc, ``, nil)
	// The checkpoint is at most checkpoint_period_s (5 s) old: at most 5 s
	// of refill (1 cpu·s per s) is lost.
	if after := vol(b); after < before-5 || after > before {
		t.Fatalf("accumulated volume after the restart: %v, before: %v", after, before)
	}
}

// TestConcurrentRegistrations: first heartbeats of the same new nodes sent
// at once, singly and in batches, register each node once, with one index.
func TestConcurrentRegistrations(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	a := startDurable(t, dir, mc, ``, nil)
	const nodes = 8
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w%2 == 0 {
				var entries []string
				for i := range nodes {
					entries = append(entries, fmt.Sprintf(`{"node_id": "n%d", "resource_limits": {"cpu": 4}}`, (i+w)%nodes))
				}
				if st, body := a.do("POST", "/api/v1/heartbeats", `{"heartbeats": [`+strings.Join(entries, ",")+`]}`); st != 200 || strings.Contains(string(body), `"error"`) {
					errs <- fmt.Sprintf("batch: %d %s", st, body)
				}
				return
			}
			for i := range nodes {
				if st, body := a.do("POST", fmt.Sprintf("/api/v1/nodes/n%d/heartbeat", (i+w)%nodes), `{"resource_limits": {"cpu": 4}}`); st != 200 {
					errs <- fmt.Sprintf("heartbeat: %d %s", st, body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	a.stop()
	st, err := store.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	indices := map[uint32]string{}
	if err := st.Scan(store.Nodes, func(k string, v []byte) error {
		var r server.NodeRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if other, ok := indices[r.Index]; ok {
			t.Errorf("nodes %s and %s share index %d", k, other, r.Index)
		}
		indices[r.Index] = k
		if r.SeqEnd != server.NodeSeqBlock {
			t.Errorf("node %s reserved up to seq %d, want one block (%d): registered more than once", k, r.SeqEnd, server.NodeSeqBlock)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(indices) != nodes {
		t.Fatalf("%d nodes registered, want %d", len(indices), nodes)
	}
}

// TestCompletionWrittenAtOnce: an operation whose last job completes in a
// heartbeat is written completed without waiting for a janitor pass, and
// stays completed after a restart.
func TestCompletionWrittenAtOnce(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	a := startDurable(t, dir, mc, ``, nil)
	a.must(201, "POST", "/api/v1/operations", `{"id": "one", "tasks": [{"name": "t", "job_count": 1, "resources": {"cpu": 1}}]}`)
	n := &echoNode{name: "n1", limits: `{"cpu": 4, "user_slots": 10, "memory": 17179869184}`}
	n.heartbeat(a, nil)
	a.srv.UpdateFairShare()
	n.heartbeat(a, nil)
	if n.agent.Len() != 1 {
		t.Fatalf("n1 runs %d allocations, want 1", n.agent.Len())
	}
	n.heartbeat(a, map[string]string{n.ids()[0]: "completed"})
	// No fair-share update (no janitor pass) from here on.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, ok, err := a.st.Get(store.OperationStates, "one")
		if err != nil {
			t.Fatal(err)
		}
		var st server.OperationState
		if ok && json.Unmarshal(v, &st) == nil && st.State == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation_states/one is %s 10 s after its last job completed, want completed", v)
		}
		time.Sleep(time.Millisecond) // NB: polls the store with a deadline; the write is the server's own goroutine's
	}
	a.stop()
	b := startDurable(t, dir, mc, ``, nil)
	if op := b.must(200, "GET", "/api/v1/operations/one", ""); op["state"] != "completed" {
		t.Fatalf("after the restart: %v, want completed", op["state"])
	}
}

// TestRecoveryExpectsNodesRegisteredSinceTheCheckpoint: nodes whose first
// heartbeats came after the last checkpoint (a kill within
// checkpoint_period_s of them) are in the durable node registry, and the
// restart's recovery window waits for them; a node that had gone (expired
// after node_heartbeat_timeout_s) by the last checkpoint is not waited for.
func TestRecoveryExpectsNodesRegisteredSinceTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	mc.set(clock.Time(1_000_000))
	a := startDurable(t, dir, mc, `{"config": {"node_heartbeat_timeout_s": 2, "checkpoint_period_s": 5}}`, nil)
	old := &echoNode{name: "old", limits: `{"cpu": 1, "user_slots": 10, "memory": 17179869184}`}
	old.heartbeat(a, nil)
	mc.AdvanceSeconds(6) // "old" expires, and a checkpoint sees it gone
	a.srv.UpdateFairShare()
	a.srv.Core().WaitDurable()
	if a.srv.sched.NodeRegistered("old") {
		t.Fatal("node old is still registered after node_heartbeat_timeout_s")
	}
	n1 := &echoNode{name: "n1", limits: `{"cpu": 2, "user_slots": 10, "memory": 17179869184}`}
	n2 := &echoNode{name: "n2", limits: `{"cpu": 2, "user_slots": 10, "memory": 17179869184}`}
	mc.AdvanceSeconds(1) // within checkpoint_period_s of the checkpoint: none follows
	n1.heartbeat(a, nil)
	n2.heartbeat(a, nil)
	a.stop()

	b := startDurable(t, dir, mc, ``, nil)
	h := b.must(200, "GET", "/healthz", "")
	if rec := obj(h["recovery"]); h["status"] != "recovering" || num(rec["expected_nodes"]) != 2 || num(rec["reported_nodes"]) != 0 {
		t.Fatalf("/healthz after the restart: %v, want recovering with n1 and n2 expected", h)
	}
	if e := b.must(503, "GET", "/readyz", ""); obj(e["error"])["code"] != CodeRecovering {
		t.Fatalf("/readyz before any node reported: %v", e)
	}
	n1.heartbeat(b, nil)
	b.must(503, "GET", "/readyz", "")
	n2.heartbeat(b, nil)
	h = b.must(200, "GET", "/healthz", "")
	if rec := obj(h["recovery"]); h["status"] != "ok" || num(rec["reported_nodes"]) != 2 {
		t.Fatalf("/healthz once n1 and n2 reported: %v", h)
	}
	b.must(200, "GET", "/readyz", "")
}
