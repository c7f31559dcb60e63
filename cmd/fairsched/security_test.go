package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairsched/fairsched/facade/facadetest"
)

// Tokens of the end-to-end test's token file.
const (
	e2eAdmin = "e2e-admin-0123456789abcdef"
	e2eAlice = "e2e-alice-0123456789abcdef"
	e2eBob   = "e2e-bob-0123456789abcdef"
	e2eAgent = "e2e-agent-0123456789abcdef"
)

const e2eTokens = `{"users": [
	{"name": "root", "token": "` + e2eAdmin + `", "roles": ["admin"]},
	{"name": "alice", "token": "` + e2eAlice + `", "groups": ["ml"], "roles": ["user"]},
	{"name": "bob", "token": "` + e2eBob + `", "roles": ["user"]},
	{"name": "agent", "token": "` + e2eAgent + `", "roles": ["node"], "nodes": ["n-*"]}]}`

// e2eConfig: group ml may use research and administer research-ml; bob
// may read, nothing more.
const e2eConfig = `{"pools": [
	{"name": "research", "acl": [{"action": "allow", "subjects": ["group:ml"], "permissions": ["use"]}]},
	{"name": "research-ml", "parent": "research", "acl": [{"action": "allow", "subjects": ["group:ml"], "permissions": ["administer"]}]},
	{"name": "prod"}]}`

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// e2eClient sends requests to a fairsched serve child.
type e2eClient struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (c *e2eClient) do(token, method, path, body string, headers ...string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestServeSecurityEndToEnd runs fairsched serve with --auth-tokens and
// pool ACLs and sends every endpoint as every role — no token, a node
// token, a user the ACLs deny, a user they allow, an admin — checking
// each answer's status, and that a request without a valid token is 401
// and changes nothing; then the browser defences (Host, Origin,
// Sec-Fetch-Site, Content-Type) on the real server.
func TestServeSecurityEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fairsched serve")
	}
	child := startChild(t, "--auth-tokens", writeTemp(t, "tokens.json", e2eTokens), "--config", writeTemp(t, "config.json", e2eConfig),
		"--data-dir", t.TempDir(), "--log-level", "error")
	c := &e2eClient{t: t, base: child.base, hc: &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	hb := `{"resource_limits": {"user_slots": 8, "cpu": 8, "memory": 17179869184}}`
	task := `"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]`
	// Fixtures: an operation of alice's and a registered node.
	if st, out := c.do(e2eAlice, "POST", "/api/v1/operations", `{"id": "alice-op", "pool": "research", `+task+`}`); st != 201 {
		t.Fatalf("fixture: %d %s", st, out)
	}
	if st, out := c.do(e2eAgent, "POST", "/api/v1/nodes/n-1/heartbeat", hb); st != 200 {
		t.Fatalf("fixture: %d %s", st, out)
	}

	type who struct{ name, token string }
	roles := []who{{"none", ""}, {"node", e2eAgent}, {"denied user", e2eBob}, {"allowed user", e2eAlice}, {"admin", e2eAdmin}}
	// want is the status for each role, in the order of roles; the
	// requests of a row run in that order (so that the allowed ones come
	// last and find the state the denied ones left alone).
	rows := []struct {
		method, path, body string
		want               [5]int
	}{
		{"GET", "/healthz", "", [5]int{200, 200, 200, 200, 200}},
		{"GET", "/readyz", "", [5]int{200, 200, 200, 200, 200}},
		{"GET", "/ui/", "", [5]int{200, 200, 200, 200, 200}},
		{"GET", "/metrics", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/openapi.json", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/version", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/config", "", [5]int{401, 403, 200, 200, 200}},
		{"PATCH", "/api/v1/config", `{"node_heartbeat_timeout_s": 3600}`, [5]int{401, 403, 403, 403, 200}},
		{"PATCH", "/api/v1/config", `{"node_heartbeat_timeout_s": 60}`, [5]int{401, 403, 403, 403, 200}},
		{"GET", "/api/v1/pools", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/pools/research", "", [5]int{401, 403, 200, 200, 200}},
		{"PUT", "/api/v1/pools/ml-a", `{"parent": "research-ml"}`, [5]int{401, 403, 403, 201, 200}},
		{"PATCH", "/api/v1/pools/ml-a", `{"weight": 2}`, [5]int{401, 403, 403, 200, 200}},
		{"PATCH", "/api/v1/pools/research", `{"weight": 2}`, [5]int{401, 403, 403, 403, 200}},
		{"DELETE", "/api/v1/pools/ml-a", "", [5]int{401, 403, 403, 204, 404}},
		{"PUT", "/api/v1/pools/top", `{}`, [5]int{401, 403, 403, 403, 201}},
		{"DELETE", "/api/v1/pools/top", "", [5]int{401, 403, 403, 403, 204}},
		{"GET", "/api/v1/operations", "", [5]int{401, 403, 200, 200, 200}},
		{"POST", "/api/v1/operations", `{"id": "op-r", "pool": "research", ` + task + `}`, [5]int{401, 403, 403, 201, 201}},
		{"POST", "/api/v1/operations", `{"id": "op-p", "pool": "prod", ` + task + `}`, [5]int{401, 403, 403, 403, 201}},
		{"GET", "/api/v1/operations/alice-op", "", [5]int{401, 403, 200, 200, 200}},
		{"PATCH", "/api/v1/operations/alice-op", `{"weight": 2}`, [5]int{401, 403, 403, 200, 200}},
		{"PATCH", "/api/v1/operations/alice-op", `{"pool": "prod"}`, [5]int{401, 403, 403, 403, 200}},
		{"PATCH", "/api/v1/operations/op-p", `{"weight": 2}`, [5]int{401, 403, 403, 403, 200}},
		{"POST", "/api/v1/operations/op-r/complete", "", [5]int{401, 403, 403, 200, 200}},
		{"POST", "/api/v1/operations/op-p/abort", "", [5]int{401, 403, 403, 403, 200}},
		{"POST", "/api/v1/nodes/n-2/heartbeat", hb, [5]int{401, 200, 403, 403, 200}},
		{"POST", "/api/v1/nodes/x-1/heartbeat", hb, [5]int{401, 403, 403, 403, 200}},
		{"POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "n-3", "resource_limits": {}}]}`, [5]int{401, 200, 403, 403, 200}},
		{"POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "x-2", "resource_limits": {}}]}`, [5]int{401, 403, 403, 403, 200}},
		{"GET", "/api/v1/nodes", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/nodes/n-1", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/orchid/pools", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/orchid/pools/research", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/orchid/operations/alice-op", "", [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/orchid/nodes/n-1", "", [5]int{401, 403, 200, 200, 200}},
		{"POST", "/api/v1/solve", `{"total_resources": {"cpu": 1}, "tree": {}}`, [5]int{401, 403, 200, 200, 200}},
		{"GET", "/api/v1/backup", "", [5]int{401, 403, 403, 403, 200}},
		{"GET", "/debug/pprof/", "", [5]int{401, 403, 403, 403, 200}},
		{"GET", "/debug/pprof/heap", "", [5]int{401, 403, 403, 403, 200}},
		{"GET", "/api/v1/nothing", "", [5]int{401, 403, 404, 404, 404}},
		{"DELETE", "/api/v1/operations", "", [5]int{401, 403, 405, 405, 405}},
	}
	// state is what a change could touch, without what moves with time
	// (shares, heartbeat times).
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/api/v1/pools", "/api/v1/config"} {
			_, out := c.do(e2eAdmin, "GET", p, "")
			b.Write(out)
		}
		var ops struct {
			Operations []struct {
				ID, State, Pool string
				Weight          float64
			}
		}
		_, out := c.do(e2eAdmin, "GET", "/api/v1/operations", "")
		json.Unmarshal(out, &ops)
		fmt.Fprint(&b, ops)
		var nodes struct{ Nodes []struct{ ID string } }
		_, out = c.do(e2eAdmin, "GET", "/api/v1/nodes", "")
		json.Unmarshal(out, &nodes)
		fmt.Fprint(&b, nodes)
		return b.String()
	}
	for _, r := range rows {
		for i, role := range roles {
			var before string
			if r.want[i] >= 400 && r.method != "GET" {
				before = state()
			}
			st, out := c.do(role.token, r.method, r.path, r.body)
			if st != r.want[i] {
				t.Errorf("%s %s as %s: %d, want %d: %.300s", r.method, r.path, role.name, st, r.want[i], out)
				continue
			}
			if st == 401 && !bytes.Contains(out, []byte(`"code":"unauthenticated"`)) || st == 403 && !bytes.Contains(out, []byte(`"code":"forbidden"`)) {
				t.Errorf("%s %s as %s: %s", r.method, r.path, role.name, out)
			}
			if before != "" {
				if after := state(); after != before {
					t.Errorf("%s %s as %s answered %d and changed the state", r.method, r.path, role.name, st)
				}
			}
		}
		// A token that is not in the file is never more than 401.
		if st, _ := c.do("e2e-unknown-0123456789abc", r.method, r.path, r.body); st != 401 && !strings.HasPrefix(r.path, "/healthz") &&
			!strings.HasPrefix(r.path, "/readyz") && !strings.HasPrefix(r.path, "/ui/") {
			t.Errorf("%s %s with an unknown token: %d, want 401", r.method, r.path, st)
		}
	}

	// Browsers: as the admin, from a page of another origin or through a
	// rebound name.
	port := child.base[strings.LastIndexByte(child.base, ':')+1:]
	op := `{"pool": "prod", ` + task + `}`
	for _, b := range []struct {
		name    string
		headers []string
		want    int
		code    string
	}{
		{"a rebound name", []string{"Host", "evil.example:" + port}, 421, "misdirected_request"},
		{"a foreign Origin", []string{"Origin", "https://evil.example"}, 403, "cross_origin"},
		{"a cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross_origin"},
		{"a same-site fetch", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://other.localhost:" + port}, 403, "cross_origin"},
		{"a form post", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"text/plain", []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"its own origin", []string{"Origin", child.base, "Sec-Fetch-Site", "same-origin"}, 201, ""},
		{"localhost", []string{"Host", "localhost:" + port}, 201, ""},
	} {
		st, out := c.do(e2eAdmin, "POST", "/api/v1/operations", op, b.headers...)
		if st != b.want || b.code != "" && !bytes.Contains(out, []byte(`"code":"`+b.code+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", b.name, st, out, b.want, b.code)
		}
	}
}

// TestServeRefusesAnOpenListenWithoutTokens: a listen address that is not
// loopback needs --auth-tokens, or --insecure (which warns); TLS needs
// both its files.
func TestServeRefusesAnOpenListenWithoutTokens(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, 2, "without --auth-tokens"},
		{[]string{"--listen", ":0"}, 2, "without --auth-tokens"},
		{[]string{"--listen", "sched.example.com:0"}, 2, "without --auth-tokens"},
		{[]string{"--listen", "127.0.0.1:0", "--tls-cert", "x.pem"}, 2, "only one of --tls-cert and --tls-key"},
		{[]string{"--listen", "127.0.0.1:0", "--auth-tokens", "/nonexistent/tokens.json"}, 1, "--auth-tokens"},
		{[]string{"--listen", "127.0.0.1:0", "--auth-tokens", writeTemp(t, "bad.json", `{"users": [{"name": "a", "token": "short", "roles": ["user"]}]}`)}, 2, "$.users[0].token"},
		{[]string{"--listen", "127.0.0.1:0", "--allowed-origins", "evil.example"}, 2, "--allowed-origins"},
		{[]string{"--listen", "127.0.0.1:0", "--allowed-hosts", "a/b"}, 2, "--allowed-hosts"},
	} {
		var stdout, stderr syncBuffer
		code := serve(context.Background(), c.args, &stdout, &stderr, serveHooks{})
		if code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%v: exit %d, want %d; %s", c.args, code, c.code, stderr.String())
		}
		if strings.Contains(stderr.String(), "short") {
			t.Errorf("%v: the error repeats a token: %s", c.args, stderr.String())
		}
	}
	// --insecure serves, and says so.
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	addrc := make(chan string, 1)
	go func() {
		exit <- serve(ctx, []string{"--listen", "0.0.0.0:0", "--insecure"}, &stdout, &stderr, serveHooks{ready: func(a string) { addrc <- a }})
	}()
	select {
	case <-addrc:
	case code := <-exit:
		t.Fatalf("--insecure: exit %d: %s", code, stderr.String())
	}
	cancel()
	if code := <-exit; code != 0 || !strings.Contains(stderr.String(), "--insecure") || !strings.Contains(stderr.String(), "level=WARN") {
		t.Errorf("--insecure: exit %d, log %s", code, stderr.String())
	}
}

// TestServeTLSAndTokenReload: --tls-cert and --tls-key serve HTTPS; SIGHUP
// rereads the token file (a bad one keeps the running tokens).
func TestServeTLSAndTokenReload(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	tokens := writeTemp(t, "tokens.json", e2eTokens)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	addrc := make(chan string, 1)
	reload := make(chan struct{})
	reloaded := make(chan error)
	exit := make(chan int, 1)
	go func() {
		exit <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--auth-tokens", tokens, "--tls-cert", certFile, "--tls-key", keyFile},
			&stdout, &stderr, serveHooks{ready: func(a string) { addrc <- a }, reload: reload, reloaded: func(err error) { reloaded <- err }})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case code := <-exit:
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	c := &e2eClient{t: t, base: "https://" + addr, hc: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	if st, _ := c.do(e2eAdmin, "GET", "/api/v1/pools", ""); st != 200 {
		t.Fatalf("HTTPS with the admin token: %d", st)
	}
	if !strings.Contains(stdout.String(), "https://"+addr) {
		t.Errorf("the start line: %s", stdout.String())
	}
	// Origin is https on an HTTPS server.
	if st, out := c.do(e2eAdmin, "PATCH", "/api/v1/config", `{}`, "Origin", "https://"+addr); st != 200 {
		t.Errorf("its own https origin: %d %s", st, out)
	}
	// A bad token file keeps the running tokens.
	os.WriteFile(tokens, []byte(`{"users": []}`), 0o600)
	reload <- struct{}{}
	if err := <-reloaded; err == nil {
		t.Error("a bad token file reloaded")
	}
	if st, _ := c.do(e2eAdmin, "GET", "/api/v1/pools", ""); st != 200 {
		t.Errorf("after a refused reload: %d", st)
	}
	os.WriteFile(tokens, []byte(`{"users": [{"name": "new", "token": "e2e-new-0123456789abcdef", "roles": ["admin"]}]}`), 0o600)
	reload <- struct{}{}
	if err := <-reloaded; err != nil {
		t.Errorf("reload: %v", err)
	}
	if st, _ := c.do(e2eAdmin, "GET", "/api/v1/pools", ""); st != 401 {
		t.Errorf("the old token after the reload: %d", st)
	}
	if st, _ := c.do("e2e-new-0123456789abcdef", "GET", "/api/v1/pools", ""); st != 200 {
		t.Errorf("the new token after the reload: %d", st)
	}
	if strings.Contains(stderr.String(), e2eAdmin) || strings.Contains(stderr.String(), "e2e-new-") {
		t.Errorf("the log holds a token: %s", stderr.String())
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestServeSIGTERMWithASilentClient: SIGTERM with a client connected that
// never sends a byte exits 0 at once (issue 14: it waited the whole grace
// period and exited 1).
func TestServeSIGTERMWithASilentClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fairsched serve")
	}
	child := startChild(t, "--log-level", "error")
	silent, err := net.Dial("tcp", strings.TrimPrefix(child.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	idle, err := net.Dial("tcp", strings.TrimPrefix(child.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	// The answer on idle proves that silent was accepted (and tracked) before
	// the signal, with no wait: the server's one accept loop takes the
	// connections in the order they were made. idle may still be marked busy
	// for a moment after its answer; Shutdown ends its read once it is idle.
	if _, err := idle.Read(make([]byte, 512)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := child.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = child.cmd.Wait()
	if took := time.Since(start); err != nil || took > 3*time.Second {
		t.Errorf("SIGTERM: %v after %v, want exit 0 at once", err, took)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their files and a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, _ := facadetest.SelfSigned(t)
	certFile = writeTemp(t, "cert.pem", string(certPEM))
	keyFile = writeTemp(t, "key.pem", string(keyPEM))
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}
