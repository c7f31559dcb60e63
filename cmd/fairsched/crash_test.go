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
	named      map[string]bool   // server-chosen ids ever acknowledged
	config     float64           // preemptive_scheduling_backoff_s acknowledged last
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
						l.ops[id] = "live"
						l.mu.Unlock()
					}
				case 3:
					if st, m := send("POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`); st == 201 {
						id, _ := m["id"].(string)
						l.mu.Lock()
						if l.named[id] {
							l.named["REUSED:"+id] = true
						}
						l.named[id], l.ops[id] = true, "live"
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
// id is handed out twice. CRASH_ROUNDS sets the number of kills (3 by
// default; make crash-soak runs many).
func TestCrashRestartKeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fairsched serve processes")
	}
	rounds := 3
	if s := os.Getenv("CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CRASH_ROUNDS=%q", s)
		}
		rounds = n
	}
	dir := t.TempDir()
	l := &ledger{pools: map[string]float64{}, sentPools: map[string][]float64{}, ops: map[string]string{}, named: map[string]bool{}}
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range rounds {
		c := startChild(t, "--data-dir", dir, "--log-level", "error")
		if round > 0 {
			l.check(t, c.base)
			if t.Failed() {
				t.Fatalf("after kill %d", round)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		acked := make(chan struct{}, 1024)
		go func() { crashLoad(ctx, c.base, l, round, uint64(round), acked); close(done) }()
		// Kill while requests are in flight, after a random number of
		// acknowledged ones.
		for range 20 + rng.IntN(200) {
			<-acked
		}
		c.kill9(t)
		cancel()
		<-done
	}
	c := startChild(t, "--data-dir", dir, "--log-level", "error")
	l.check(t, c.base)
	l.mu.Lock()
	t.Logf("%d kills: %d pools, %d operations (%d server-named) acknowledged and found", rounds, len(l.pools), len(l.ops), len(l.named))
	l.mu.Unlock()
}
