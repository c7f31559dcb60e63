package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/wire"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServe runs `fairsched serve` in process on a free loopback port with
// the embedded config, talks to it and stops it as SIGINT would.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	addrc := make(chan string, 1)
	exit := make(chan int, 1)
	go func() {
		exit <- serve(ctx, []string{"--listen", "127.0.0.1:0"}, &stdout, &stderr, serveHooks{ready: func(a string) { addrc <- a }})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case code := <-exit:
		t.Fatalf("serve exited with %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	code, body := get("/api/v1/pools")
	for _, pool := range []string{`"production"`, `"research"`, `"adhoc"`, `"enable_lightweight_operations":true`} {
		if code != 200 || !strings.Contains(body, pool) {
			t.Fatalf("/api/v1/pools lacks %s: %d %s", pool, code, body)
		}
	}
	if code, _ := get("/debug/pprof/"); code != 200 {
		t.Fatalf("/debug/pprof/ is on by default: %d", code)
	}
	if !strings.Contains(stdout.String(), "curl -s") || !strings.Contains(stderr.String(), "features=") {
		t.Fatalf("stdout %q, stderr %q: want a curl line and the CPU features", stdout.String(), stderr.String())
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeProfileRates: the sampling flags reach the runtime.
func TestServeProfileRates(t *testing.T) {
	defer runtime.SetMutexProfileFraction(0)
	defer runtime.SetBlockProfileRate(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan struct{})
	exit := make(chan int, 1)
	go func() {
		exit <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--mutex-profile-fraction", "7", "--block-profile-rate", "1000"},
			&stdout, &stderr, serveHooks{ready: func(string) { close(ready) }})
	}()
	select {
	case <-ready:
	case code := <-exit:
		t.Fatalf("serve exited with %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	if got := runtime.SetMutexProfileFraction(-1); got != 7 {
		t.Errorf("mutex profile fraction %d, want 7", got)
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestServeBadConfig(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(f, []byte(`{"pools": [{"name": "a", "parent": "missing"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := call("", "serve", "--listen", "127.0.0.1:0", "--config", f)
	if code != 2 || !strings.Contains(stderr, "$.pools[0].parent") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if err := os.WriteFile(f, []byte(`{"pools": [{"name": "a", "weight": -1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = call("", "serve", "--config", f)
	if code != 2 || !strings.Contains(stderr, "$.pools[0].weight") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := call("", "serve", "--config", filepath.Join(dir, "missing.json")); code != 1 {
		t.Fatalf("missing file: exit %d", code)
	}
	for _, bad := range [][]string{
		{"--finished-operation-retention", "0s"},
		{"--finished-operation-retention", "-1m"},
		{"--mutex-profile-fraction", "-1"},
		{"--block-profile-rate", "-5"},
		{"--mutex-profile-fraction", "5", "--pprof=false"},
		{"--block-profile-rate", "5", "--pprof=false"},
		{"--history-tiers", "10s"},
		{"--history-tiers", "10s/1x"},
		{"--history-tiers", "10s/1h,5s/24h"},
		{"--history-tiers", "0s/1h"},
	} {
		code, _, stderr := call("", append([]string{"serve", "--listen", "127.0.0.1:0"}, bad...)...)
		if code != 2 || !strings.Contains(stderr, bad[0]) {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 naming %s", bad, code, stderr, bad[0])
		}
	}
	if code, out, _ := call("", "help", "serve"); code != 0 || !strings.Contains(out, "--listen") || !strings.Contains(out, "--finished-operation-retention") {
		t.Fatalf("help serve: %d %q", code, out)
	}
}

// The embedded default is examples/serve.json and is valid.
func TestEmbeddedServeConfig(t *testing.T) {
	data, err := os.ReadFile("../../examples/serve.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, examples.ServeConfig) {
		t.Fatal("examples.ServeConfig differs from examples/serve.json")
	}
	if _, err := wire.DecodeServeConfig(examples.ServeConfig); err != nil {
		t.Fatal(err)
	}
}

// TestServeReloadsOnHUP: a reload (SIGHUP) applies the changed --config
// file; a bad file keeps the running config and says why.
func TestServeReloadsOnHUP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	file := filepath.Join(t.TempDir(), "serve.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"pools": [{"name": "a"}, {"name": "b", "parent": "a"}]}`)
	var stdout, stderr syncBuffer
	addrc := make(chan string, 1)
	reload := make(chan struct{})
	reloaded := make(chan error)
	exit := make(chan int, 1)
	go func() {
		exit <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--config", file}, &stdout, &stderr,
			serveHooks{ready: func(a string) { addrc <- a }, reload: reload, reloaded: func(err error) { reloaded <- err }})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case code := <-exit:
		t.Fatalf("serve exited with %d: %s", code, stderr.String())
	}
	pools := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/api/v1/pools")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	write(`{"pools": [{"name": "a", "weight": 4}, {"name": "c"}]}`)
	reload <- struct{}{}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if p := pools(); !strings.Contains(p, `"name":"a","parent":"<Root>","mode":"fair_share","weight":4`) ||
		!strings.Contains(p, `"name":"c"`) || strings.Contains(p, `"name":"b"`) {
		t.Fatalf("pools after the reload: %s", p)
	}
	if !strings.Contains(stderr.String(), "config reloaded") || !strings.Contains(stderr.String(), "pools_removed=[b]") {
		t.Fatalf("log: %s", stderr.String())
	}
	before := pools()
	write(`{"pools": [{"name": "a", "weight": -1}]}`)
	reload <- struct{}{}
	if err := <-reloaded; err == nil || !strings.Contains(err.Error(), "$.pools[0].weight") {
		t.Fatalf("bad file: %v", err)
	}
	if after := pools(); after != before {
		t.Fatalf("a refused reload changed the pools:\n%s\nwant\n%s", after, before)
	}
	if !strings.Contains(stderr.String(), "reload refused: the running config is kept") {
		t.Fatalf("log: %s", stderr.String())
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestServeLogFlags(t *testing.T) {
	tests := []struct {
		format, level string
		wantErr       string
	}{
		{"text", "info", ""},
		{"json", "debug", ""},
		{"json", "WARN", ""},
		{"yaml", "info", "--log-format"},
		{"text", "loud", "--log-level"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		log, err := newLogger(&buf, tt.format, tt.level)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s/%s: %v, want an error naming %s", tt.format, tt.level, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello", "k", 1)
		if tt.format == "json" && !strings.EqualFold(tt.level, "warn") && !json.Valid(buf.Bytes()) {
			t.Errorf("json log: %q", buf.String())
		}
		if strings.EqualFold(tt.level, "warn") && buf.Len() != 0 {
			t.Errorf("level warn logged info: %q", buf.String())
		}
	}
	code, _, errOut := call("", "serve", "--log-format", "xml")
	if code != 2 || !strings.Contains(errOut, `cannot use --log-format "xml"`) {
		t.Fatalf("serve --log-format xml: %d %s", code, errOut)
	}
}
