package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test runs `fairsched serve` in a child process: the test binary
// itself, told by FAIRSCHED_TEST_RUN to run the command line instead of the
// tests.
func TestMain(m *testing.M) {
	if args := os.Getenv("FAIRSCHED_TEST_RUN"); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(run(argv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child is a fairsched serve process.
type child struct {
	cmd  *exec.Cmd
	base string
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return startChildArgs(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
}

// startChildArgs runs fairsched with argv (a serve command line) in a
// child process and waits until it listens.
func startChildArgs(t *testing.T, args []string) *child {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAIRSCHED_TEST_RUN="+string(argv))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if _, addr, ok := strings.Cut(lines.Text(), "listening on "); ok {
			go io.Copy(io.Discard, stdout)
			return &child{cmd: cmd, base: strings.Fields(addr)[0]}
		}
	}
	cmd.Wait()
	t.Fatalf("fairsched serve did not start: %s", stderr.String())
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// kill9 stops the child as a crash would.
func (c *child) kill9(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// ledger is what the server acknowledged (2xx) to the load.
type ledger struct {
	mu    sync.Mutex
	pools map[string]float64 // pool → weight acknowledged last
	// sentPools are the weights sent since the last acknowledged one, and
	// sentConfig the last value sent: a change in flight at the kill may or
	// may not have applied, and a request whose answer the kill lost is
	// followed by the next one (to the dead server) before the load stops.
	sentPools  map[string][]float64
	sentConfig []float64
	ops        map[string]string // operation → "live", "completed" or "aborted"
	// ackRound is the round whose server acknowledged each operation's
	// start: a server-chosen id whose start a kill cut short names no
	// operation after the restart and may name a later start, so an
	// allocation counts as one of an acknowledged operation only when
	// the start was acknowledged no later than the allocation was handed
	// out (round is the current round).
	ackRound map[string]int
	round    int
	named    map[string]bool // server-chosen ids ever acknowledged
	config   float64         // preemptive_scheduling_backoff_s acknowledged last
	// nodes are the simulated nodes, which outlive the server's restarts;
	// allocIDs every allocation id the servers handed out; violations what
	// the nodes saw go wrong (checked after each round).
	nodes      []*crashNode
	allocIDs   map[string]string // id → node
	violations []string
	adopted    int           // allocations kept over a restart
	duplicates int           // second allocations of a job, not adopted
	started    chan struct{} // a signal per allocation started (dropped when full)
}

// loadThenKill runs the nodes and the crash load of round against the
// server at base until acks changes were acknowledged and then starts
// allocations started, kills it with kill while requests are in flight,
// and waits for the load to stop; the nodes' next heartbeat is then their
// first to a restarted server.
func (l *ledger) loadThenKill(t *testing.T, base string, round, acks, starts int, kill func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	l.round = round
	l.mu.Unlock()
	acked := make(chan struct{}, 1024)
	loadDone, nodesDone := make(chan struct{}), make(chan struct{})
	go func() { runNodes(ctx, base, l, uint64(round)); close(nodesDone) }()
	go func() { crashLoad(ctx, base, l, round, uint64(round), acked); close(loadDone) }()
	for range acks {
		<-acked
	}
	// Allocations started after those (the fair-share update runs every
	// 0.2 s).
	for len(l.started) > 0 {
		<-l.started
	}
	timeout := time.After(30 * time.Second)
	for range starts {
		select {
		case <-l.started:
		case <-timeout:
			cancel()
			t.Fatalf("round %d: no allocation started within 30 s", round)
		}
	}
	kill()
	cancel()
	<-loadDone
	<-nodesDone
	for _, n := range l.nodes {
		n.restarted = true
	}
}

// reportOnce sends one heartbeat of every node to the server at base,
// which adopts what they run.
func (l *ledger) reportOnce(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	for i, n := range l.nodes {
		if !n.heartbeat(ctx, hc, base, l, rand.New(rand.NewPCG(1, uint64(i)))) {
			t.Fatalf("node %s: no answer from %s", n.name, base)
		}
	}
}

// newLedger returns an empty ledger with six nodes.
func newLedger() *ledger {
	l := &ledger{pools: map[string]float64{}, sentPools: map[string][]float64{}, ops: map[string]string{}, ackRound: map[string]int{}, named: map[string]bool{},
		allocIDs: map[string]string{}, started: make(chan struct{}, 1024)}
	for i := range 6 {
		l.nodes = append(l.nodes, &crashNode{name: fmt.Sprintf("node-%d", i)})
	}
	return l
}

// crashNode is a simulated node: it runs what it is told to start until it
// completes it (each heartbeat completes a running allocation with
// probability 1/8), and reports its running allocations with their origins.
type crashNode struct {
	name    string
	running []map[string]any // allocations_to_start entries
	// restarted: the next answered heartbeat is the first one to a
	// restarted server (it must adopt everything running).
	restarted bool
}

// crashNodeLimits are a crash node's resources: 8 jobs of {cpu 1}.
const crashNodeLimits = `{"cpu": 8, "user_slots": 100, "memory": 68719476736}`

// heartbeat sends one heartbeat and applies the answer; it reports false
// when no answer came.
func (n *crashNode) heartbeat(ctx context.Context, hc *http.Client, base string, l *ledger, rng *rand.Rand) bool {
	reports := []map[string]any{}
	var keep []map[string]any
	for _, a := range n.running {
		r := map[string]any{"id": a["id"], "state": "running", "operation_id": a["operation_id"], "task_index": a["task_index"], "resources": a["resources"]}
		// A job completes once: it is reported completed until a heartbeat
		// is answered (a node never runs a completed job again).
		if a["completed"] == nil && !n.restarted && rng.IntN(8) == 0 {
			a["completed"] = true
		}
		if a["completed"] != nil {
			r["state"] = "completed"
		} else {
			keep = append(keep, a)
		}
		reports = append(reports, r)
	}
	body, _ := json.Marshal(map[string]any{"resource_limits": json.RawMessage(crashNodeLimits), "allocations": reports})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/nodes/"+n.name+"/heartbeat", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	aborted := map[any]bool{}
	opOf := map[any]string{}
	roundOf := map[any]int{}
	for _, a := range n.running {
		opOf[a["id"]], _ = a["operation_id"].(string)
		roundOf[a["id"]], _ = a["round"].(int)
	}
	for _, x := range m["allocations_to_abort"].([]any) {
		ab := x.(map[string]any)
		aborted[ab["id"]] = true
		reason, _ := ab["reason"].(string)
		_, acked := l.ops[opOf[ab["id"]]]
		acked = acked && l.ackRound[opOf[ab["id"]]] <= roundOf[ab["id"]]
		if n.restarted && acked && !strings.HasPrefix(reason, "operation ") {
			// Only allocations of finished operations may go, those of
			// operations whose start was never acknowledged (the kill came
			// before it was durable), and a second allocation of a job
			// that another one runs: the server had ended this one (a
			// vanished or timed-out allocation, its job started again
			// elsewhere), and the answer that told the node was lost to
			// the kill or to a timed-out request the server answered late.
			detail := ""
			var o map[string]any
			if r, err := hc.Get(base + "/api/v1/orchid/operations/" + opOf[ab["id"]]); err == nil {
				json.NewDecoder(r.Body).Decode(&o)
				r.Body.Close()
				detail = fmt.Sprintf(" (now: state %v, pending jobs %v, completed %v, allocations %v, waiting %v)", o["state"], o["pending_job_count"], o["completed_job_count"], o["allocation_counts"], o["waiting_for"])
			}
			if strings.Contains(reason, "not adopted") && o["state"] == "running" && o["pending_job_count"] == float64(0) {
				l.duplicates++
				continue
			}
			if r, err := hc.Get(base + "/healthz"); err == nil {
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				detail += " healthz " + string(b)
			}
			l.violations = append(l.violations, fmt.Sprintf("node %s: allocation %v of operation %s aborted after the restart: %s%s", n.name, ab["id"], opOf[ab["id"]], reason, detail))
		}
	}
	if n.restarted {
		l.adopted += len(keep) - len(aborted)
	}
	n.restarted = false
	n.running = slices.DeleteFunc(keep, func(a map[string]any) bool { return aborted[a["id"]] })
	for _, x := range m["allocations_to_start"].([]any) {
		a := x.(map[string]any)
		id := a["id"].(string)
		if other, ok := l.allocIDs[id]; ok {
			l.violations = append(l.violations, fmt.Sprintf("allocation id %s handed out to %s, already to %s", id, n.name, other))
		}
		l.allocIDs[id] = n.name
		a["round"] = l.round // not sent: the reports name their keys
		n.running = append(n.running, a)
		select {
		case l.started <- struct{}{}:
		default:
		}
	}
	return true
}

// runNodes heartbeats the nodes until ctx ends.
func runNodes(ctx context.Context, base string, l *ledger, seed uint64) {
	hc := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 100+uint64(i)))
			for ctx.Err() == nil {
				if !n.heartbeat(ctx, hc, base, l, rng) {
					time.Sleep(5 * time.Millisecond) // the server is down: the next try
				}
			}
		}()
	}
	wg.Wait()
}

// crashLoad sends changes from several clients, each on its own keys, until
// ctx ends; every 2xx goes into the ledger.
func crashLoad(ctx context.Context, base string, l *ledger, round int, seed uint64, acked chan<- struct{}) {
	hc := &http.Client{Timeout: 5 * time.Second}
	send := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode/100 == 2 {
			select {
			case acked <- struct{}{}:
			default:
			}
		}
		return resp.StatusCode, m
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			pool := fmt.Sprintf("p%d", w)
			for i := 0; ctx.Err() == nil; i++ {
				switch rng.IntN(6) {
				case 0:
					weight := float64(1 + rng.IntN(9))
					l.mu.Lock()
					l.sentPools[pool] = append(l.sentPools[pool], weight)
					l.mu.Unlock()
					if st, _ := send("PUT", "/api/v1/pools/"+pool, fmt.Sprintf(`{"weight": %g}`, weight)); st == 200 || st == 201 {
						l.mu.Lock()
						l.pools[pool] = weight
						l.sentPools[pool] = nil
						l.mu.Unlock()
					}
				case 1, 2:
					id := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					body := `{"id": "` + id + `", "tasks": [{"job_count": 2, "resources": {"cpu": 1}}]}`
					if st, _ := send("POST", "/api/v1/operations", body); st == 201 {
						l.mu.Lock()
						l.ops[id], l.ackRound[id] = "live", round
						l.mu.Unlock()
					}
				case 3:
					if st, m := send("POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`); st == 201 {
						id, _ := m["id"].(string)
						l.mu.Lock()
						if l.named[id] {
							l.named["REUSED:"+id] = true
						}
						l.named[id], l.ops[id], l.ackRound[id] = true, "live", round
						l.mu.Unlock()
					}
				case 4:
					l.mu.Lock()
					var id string
					for k, v := range l.ops {
						if v == "live" && strings.Contains(k, fmt.Sprintf("-w%d-", w)) {
							id = k
							break
						}
					}
					l.mu.Unlock()
					if id == "" {
						continue
					}
					action := []string{"complete", "abort"}[rng.IntN(2)]
					if st, m := send("POST", "/api/v1/operations/"+id+"/"+action, ``); st == 200 {
						l.mu.Lock()
						l.ops[id], _ = m["state"].(string)
						l.mu.Unlock()
					}
				case 5:
					if w != 0 {
						continue
					}
					v := float64(1 + rng.IntN(30))
					l.mu.Lock()
					l.sentConfig = append(l.sentConfig, v)
					l.mu.Unlock()
					if st, _ := send("PATCH", "/api/v1/config", fmt.Sprintf(`{"preemptive_scheduling_backoff_s": %g}`, v)); st == 200 {
						l.mu.Lock()
						l.config, l.sentConfig = v, nil
						l.mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
}

// check compares a restarted server with the ledger.
func (l *ledger) check(t *testing.T, base string) {
	t.Helper()
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for pool, weight := range l.pools {
		st, m := get("/api/v1/pools/" + pool)
		w, _ := m["weight"].(float64)
		if st != 200 || w != weight && !slices.Contains(l.sentPools[pool], w) {
			t.Errorf("pool %s: %d %v, acknowledged weight %g", pool, st, m["weight"], weight)
		}
	}
	if l.config != 0 {
		if _, m := get("/api/v1/config"); m["preemptive_scheduling_backoff_s"] != l.config && !slices.Contains(l.sentConfig, m["preemptive_scheduling_backoff_s"].(float64)) {
			t.Errorf("preemptive_scheduling_backoff_s = %v, acknowledged %g", m["preemptive_scheduling_backoff_s"], l.config)
		}
	}
	for id, state := range l.ops {
		st, m := get("/api/v1/operations/" + id)
		switch {
		case st != 200:
			t.Errorf("operation %s: %d after the restart, acknowledged %s", id, st, state)
		case state != "live" && m["state"] != state:
			t.Errorf("operation %s: %v after the restart, acknowledged %s", id, m["state"], state)
		case state == "live" && (m["state"] == "completed" || m["state"] == "aborted"):
			// A finish that was sent but not acknowledged may have
			// applied: fine.
		}
	}
	for id := range l.named {
		if strings.HasPrefix(id, "REUSED:") {
			t.Errorf("server-chosen id %s was handed out twice", strings.TrimPrefix(id, "REUSED:"))
		}
	}
	for _, v := range l.violations {
		t.Error(v)
	}
	l.violations = nil
	// No node is over its limits.
	_, nodes := get("/api/v1/nodes")
	for _, x := range nodes["nodes"].([]any) {
		n := x.(map[string]any)
		usage, limits := n["resource_usage"].(map[string]any), n["resource_limits"].(map[string]any)
		for k, v := range usage {
			if lim, _ := limits[k].(float64); v.(float64) > lim {
				t.Errorf("node %v uses %s %v, its limit is %v", n["id"], k, v, lim)
			}
		}
	}
	// The running-operation limits hold after the restart.
	_, pools := get("/api/v1/orchid/pools")
	for _, p := range pools["pools"].([]any) {
		m := p.(map[string]any)
		if run, limit := m["running_operation_count"].(float64), m["max_running_operation_count"].(float64); run > limit {
			t.Errorf("pool %v runs %g operations, its limit is %g", m["name"], run, limit)
		}
	}
}

// TestCrashRestartKeepsAcknowledged: kill -9 under load, restart, and
// everything acknowledged is there; terminal operations stay terminal; no
// id is handed out twice. CRASH_ROUNDS sets the number of kills (30 by
// default; make crash-soak runs many).
func TestCrashRestartKeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fairsched serve processes")
	}
	rounds := 30
	if s := os.Getenv("CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CRASH_ROUNDS=%q", s)
		}
		rounds = n
	}
	dir := t.TempDir()
	l := newLedger()
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range rounds {
		c := startChild(t, "--data-dir", dir, "--log-level", "error")
		if round > 0 {
			l.check(t, c.base)
			if t.Failed() {
				t.Fatalf("after kill %d", round)
			}
		}
		l.loadThenKill(t, c.base, round, 20+rng.IntN(200), 1+rng.IntN(40), func() { c.kill9(t) })
	}
	c := startChild(t, "--data-dir", dir, "--log-level", "error")
	l.reportOnce(t, c.base)
	l.check(t, c.base)
	l.mu.Lock()
	t.Logf("%d kills: %d pools, %d operations (%d server-named) acknowledged and found; %d allocations handed out, %d kept over restarts, %d second allocations of a job not adopted",
		rounds, len(l.pools), len(l.ops), len(l.named), len(l.allocIDs), l.adopted, l.duplicates)
	if l.adopted == 0 {
		t.Errorf("no running allocation was kept over a restart: the test proves nothing about adoption")
	}
	l.mu.Unlock()
}
