package facade

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/wire"
)

// Tokens of the tests' token file (at least 16 characters each).
const (
	adminToken = "admin-token-0123456789"
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
	agentToken = "agent-token-0123456789"
	carolToken = "carol-token-0123456789"
)

func sha(s string) string { d := sha256.Sum256([]byte(s)); return hex.EncodeToString(d[:]) }

// testTokens: an admin; alice in group ml; bob; carol with user and node
// roles; a node agent for the nodes n-*.
var testTokens = `{"users": [
	{"name": "root", "token": "` + adminToken + `", "roles": ["admin"]},
	{"name": "alice", "token_sha256": "` + sha(aliceToken) + `", "groups": ["ml"], "roles": ["user"]},
	{"name": "bob", "token": "` + bobToken + `", "roles": ["user"]},
	{"name": "carol", "token": "` + carolToken + `", "roles": ["user", "node"], "nodes": ["c-1"]},
	{"name": "agent", "token": "` + agentToken + `", "roles": ["node"], "nodes": ["n-*", "edge"]}]}`

// aclConfig: ml may use research and administer research-ml; bob may use
// research but is denied it in research-ml; team is bob's to administer;
// private keeps its ancestors' entries out.
const aclConfig = `{"pools": [
	{"name": "<Root>", "acl": [{"action": "allow", "subjects": ["group:ml", "bob"], "permissions": ["use"]}]},
	{"name": "research", "acl": [{"action": "allow", "subjects": ["group:ml", "bob"], "permissions": ["use"]}]},
	{"name": "research-ml", "parent": "research", "acl": [
		{"action": "allow", "subjects": ["group:ml"], "permissions": ["administer"]},
		{"action": "deny", "subjects": ["bob"], "permissions": ["use"]}]},
	{"name": "team", "acl": [{"action": "allow", "subjects": ["bob"], "permissions": ["administer", "use"]}]},
	{"name": "private", "parent": "team", "inherit_acl": false},
	{"name": "prod"}]}`

func mustTokens(t *testing.T, s string) *Tokens {
	t.Helper()
	tk, err := ParseTokens([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// req sends a request with headers and returns the status, the body and
// the answer's headers.
func (ts *testServer) req(method, path, body string, headers ...string) (int, []byte, http.Header) {
	ts.t.Helper()
	r, err := http.NewRequest(method, ts.base+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			r.Host = headers[i+1]
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ts.hc.Do(r)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header
}

func bearerOf(token string) []string { return []string{"Authorization", "Bearer " + token} }

// errOf decodes an error body.
func errOf(t *testing.T, body []byte) (code, path, msg string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Path, Message string } `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an error body: %v: %s", err, body)
	}
	return e.Error.Code, e.Error.Path, e.Error.Message
}

// TestParseTokens: a valid token file, and every way one can be wrong,
// refused at its path with a message that never repeats a token.
func TestParseTokens(t *testing.T) {
	tk := mustTokens(t, testTokens)
	if tk.Users() != 5 {
		t.Fatalf("%d users", tk.Users())
	}
	for token, want := range map[string]string{adminToken: "root", aliceToken: "alice", agentToken: "agent", "nope-nope-nope-nope": "", "": ""} {
		id := tk.Lookup([]byte(token))
		if got := ""; id != nil {
			got = id.Name
			if got != want {
				t.Errorf("Lookup(%q) = %s, want %s", token, got, want)
			}
		} else if want != "" {
			t.Errorf("Lookup(%q) = nil, want %s", token, want)
		}
	}
	if id := tk.Lookup([]byte(agentToken)); !id.mayHeartbeat("n-17") || !id.mayHeartbeat("edge") || id.mayHeartbeat("m-1") || id.mayHeartbeat("edge2") {
		t.Errorf("agent's node patterns: %v", id.Nodes)
	}
	if id := tk.Lookup([]byte(adminToken)); !id.mayHeartbeat("anything") {
		t.Error("an admin may send any node's heartbeat")
	}
	if id := tk.Lookup([]byte(aliceToken)); id.mayHeartbeat("n-1") {
		t.Error("a user may not send heartbeats")
	}

	const secret = "s3cret-s3cret-s3cret"
	f := func(file, path string) {
		t.Helper()
		_, err := ParseTokens([]byte(file))
		var e *wire.Error
		if !errors.As(err, &e) || e.Path != path {
			t.Errorf("%s: %v, want an error at %s", file, err, path)
			return
		}
		if strings.Contains(e.Error(), secret) || strings.Contains(e.Error(), "s3cret") {
			t.Errorf("%s: the error repeats the token: %v", file, e)
		}
	}
	user := func(members string) string { return `{"users": [{"name": "u", ` + members + `}]}` }
	f(``, "$")
	f(`[]`, "$")
	f(`{}`, "$.users")
	f(`{"users": []}`, "$.users")
	f(`{"users": [], "groups": []}`, "$.groups")
	f(`{"users": [1]}`, "$.users[0]")
	f(user(`"token": "`+secret+`", "roles": ["user"], "extra": 1`), "$.users[0].extra")
	f(`{"users": [{"token": "`+secret+`", "roles": ["user"]}]}`, "$.users[0].name")
	f(`{"users": [{"name": "a b", "token": "`+secret+`", "roles": ["user"]}]}`, "$.users[0].name")
	f(`{"users": [{"name": "group:x", "token": "`+secret+`", "roles": ["user"]}]}`, "$.users[0].name")
	f(user(`"roles": ["user"]`), "$.users[0].token")
	f(user(`"token": "short", "roles": ["user"]`), "$.users[0].token")
	f(user(`"token": "`+secret+` x", "roles": ["user"]`), "$.users[0].token")
	f(user(`"token": 5, "roles": ["user"]`), "$.users[0].token")
	f(user(`"token": "`+secret+`", "token_sha256": "`+sha(secret)+`", "roles": ["user"]`), "$.users[0].token_sha256")
	f(user(`"token_sha256": "abc", "roles": ["user"]`), "$.users[0].token_sha256")
	f(user(`"token": "`+secret+`"`), "$.users[0].roles")
	f(user(`"token": "`+secret+`", "roles": []`), "$.users[0].roles")
	f(user(`"token": "`+secret+`", "roles": ["root"]`), "$.users[0].roles[0]")
	f(user(`"token": "`+secret+`", "roles": ["user", "user"]`), "$.users[0].roles[1]")
	f(user(`"token": "`+secret+`", "roles": ["node"]`), "$.users[0].nodes")
	f(user(`"token": "`+secret+`", "roles": ["node"], "nodes": []`), "$.users[0].nodes")
	f(user(`"token": "`+secret+`", "roles": ["node"], "nodes": ["[x"]`), "$.users[0].nodes[0]")
	f(user(`"token": "`+secret+`", "roles": ["node"], "nodes": ["a/b"]`), "$.users[0].nodes[0]")
	f(user(`"token": "`+secret+`", "roles": ["user"], "nodes": ["x"]`), "$.users[0].nodes")
	f(user(`"token": "`+secret+`", "roles": ["user"], "groups": ["a:b"]`), "$.users[0].groups[0]")
	f(user(`"token": "`+secret+`", "roles": ["user"], "groups": ["g", "g"]`), "$.users[0].groups[1]")
	f(`{"users": [{"name": "a", "token": "`+secret+`", "roles": ["user"]}, {"name": "a", "token": "`+secret+`x", "roles": ["user"]}]}`, "$.users[1].name")
	f(`{"users": [{"name": "a", "token": "`+secret+`", "roles": ["user"]}, {"name": "b", "token_sha256": "`+sha(secret)+`", "roles": ["user"]}]}`, "$.users[1]")
	f(`{"users": [{"name": "a", "name": "b", "token": "`+secret+`", "roles": ["user"]}]}`, "$.users[0].name")
	f(`{"users": [{"name": "a", "token": `+secret+`, "roles": ["user"]}]}`, "$")
}

// FuzzParseTokens: the token file's decoder never panics, answers an
// error with a path or a token table, and never repeats a token in an
// error.
func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(testTokens))
	f.Add([]byte(`{"users": [{"name": "u", "token": "zzzzzzzzzzzzzzzzzzzz", "roles": ["node"], "nodes": ["n-*", "[a-c]?"]}]}`))
	f.Add([]byte(`{"users": [{"name": "u", "token": zzzzzzzzzzzzzzzzzzzz, "roles": ["user"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := ParseTokens(data)
		if err != nil {
			var e *wire.Error
			if !errors.As(err, &e) || e.Path == "" || !strings.HasPrefix(e.Message, "cannot ") {
				t.Fatalf("%q: %#v", data, err)
			}
			// A token is a string value of at least 16 characters: none of
			// the file's may be quoted in the error.
			var doc struct {
				Users []struct {
					Token string `json:"token"`
				} `json:"users"`
			}
			if json.Unmarshal(data, &doc) == nil {
				for _, u := range doc.Users {
					if len(u.Token) >= minTokenLength && strings.Contains(e.Message, u.Token) {
						t.Fatalf("%q: the error repeats a token: %v", data, e)
					}
				}
			}
			return
		}
		for _, id := range tk.users {
			if tk.Lookup(nil) != nil || id.Roles == 0 || !wire.ValidPrincipal(id.Name) {
				t.Fatalf("%q: %+v", data, id)
			}
		}
	})
}

// TestPermitted: an effective ACL is the pool's entries and its
// ancestors' while inherit_acl holds; a deny wins; groups count; admins
// may everything, nodes nothing.
func TestPermitted(t *testing.T) {
	ts := startServer(t, aclConfig, nil)
	tk := mustTokens(t, testTokens)
	id := func(tok string) *Identity { return tk.Lookup([]byte(tok)) }
	root, alice, bob, agent := id(adminToken), id(aliceToken), id(bobToken), id(agentToken)
	use, adm := tree.PermUse, tree.PermAdminister
	for _, c := range []struct {
		who  *Identity
		perm tree.Permission
		pool string
		want bool
	}{
		{root, adm, "prod", true},
		{root, use, tree.RootName, true},
		{nil, adm, "prod", true}, // no tokens
		{alice, use, "research", true},
		{alice, use, "research-ml", true}, // inherited
		{alice, adm, "research-ml", true},
		{alice, adm, "research", false},
		{alice, use, "prod", true}, // the root's entry
		{alice, adm, "prod", false},
		{alice, use, "team", true},
		{alice, use, "private", false}, // private inherits nothing
		{bob, use, "research", true},
		{bob, use, "research-ml", false}, // deny wins over the inherited allow
		{bob, adm, "team", true},
		{bob, adm, "private", false},
		{bob, use, "nope", true}, // unknown: the handler says so
		{agent, use, "prod", false},
		{agent, adm, "prod", false},
	} {
		name := "anonymous"
		if c.who != nil {
			name = c.who.Name
		}
		if got := ts.srv.permitted(c.who, c.perm, c.pool); got != c.want {
			t.Errorf("%s %s on %s: %v, want %v", name, wire.PermissionName(c.perm), c.pool, got, c.want)
		}
	}
}

// TestAuthenticatedServer: with tokens, every request without a valid one
// is 401 (whatever the path and method) and changes nothing; a node token
// sends its nodes' heartbeats and nothing else; users read everything and
// change what the ACLs allow; /healthz and /readyz need no token.
func TestAuthenticatedServer(t *testing.T) {
	ts := startServer(t, aclConfig, func(o *Options) { o.Tokens = mustTokens(t, testTokens); o.Pprof = true })
	hb := `{"resource_limits": {"user_slots": 10, "cpu": 10, "memory": 10737418240}}`
	for _, path := range []string{"/api/v1/pools", "/api/v1/nothing", "/metrics", "/debug/pprof/", "/api/v1/openapi.json", "/ui/nothing"} {
		for _, auth := range [][]string{nil, bearerOf("wrong-token-0123456789"), {"Authorization", "Basic " + adminToken}, {"Authorization", adminToken}} {
			st, body, h := ts.req("GET", path, "", auth...)
			if path == "/ui/nothing" {
				if st != 404 {
					t.Errorf("GET %s with %v: %d, want 404 (the dashboard's files need no token)", path, auth, st)
				}
				continue
			}
			if code, p, _ := errOf(t, body); st != 401 || code != "unauthenticated" || p != "$" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("GET %s with %v: %d %s %s (%q), want 401 unauthenticated", path, auth, st, code, p, h.Get("WWW-Authenticate"))
			}
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/api/v1/config", `{"node_heartbeat_timeout_s": 0.001}`},
		{"DELETE", "/api/v1/pools/prod", ""},
		{"POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`},
		{"POST", "/api/v1/nodes/n-1/heartbeat", hb},
		{"POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "n-1", "resource_limits": {}}]}`},
		{"PUT", "/api/v1/pools/x", `{}`},
		{"POST", "/api/v1/solve", `{}`},
		{"OPTIONS", "/api/v1/pools", ""},
	} {
		if st, _, _ := ts.req(c.method, c.path, c.body); st != 401 {
			t.Errorf("%s %s without a token: %d, want 401", c.method, c.path, st)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if st, _, _ := ts.req("GET", p, ""); st != 200 {
			t.Errorf("GET %s without a token: %d", p, st)
		}
	}
	if st, body, _ := ts.req("GET", "/api/v1/nodes", "", bearerOf(adminToken)...); st != 200 || !bytes.Contains(body, []byte(`"nodes":[]`)) {
		t.Fatalf("a refused heartbeat registered a node: %d %s", st, body)
	}

	// The node token: its nodes' heartbeats only.
	if st, body, _ := ts.req("POST", "/api/v1/nodes/n-1/heartbeat", hb, bearerOf(agentToken)...); st != 200 {
		t.Fatalf("agent's heartbeat of n-1: %d %s", st, body)
	}
	st, body, _ := ts.req("POST", "/api/v1/nodes/m-1/heartbeat", hb, bearerOf(agentToken)...)
	if code, p, msg := errOf(t, body); st != 403 || code != "forbidden" || p != "$.url.id" || !strings.Contains(msg, `"agent"`) {
		t.Errorf("agent's heartbeat of m-1: %d %s %s %s", st, code, p, msg)
	}
	st, body, _ = ts.req("POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "n-2", "resource_limits": {}}, {"node_id": "x", "resource_limits": {}}]}`, bearerOf(agentToken)...)
	if code, p, _ := errOf(t, body); st != 403 || code != "forbidden" || p != "$.heartbeats[1].node_id" {
		t.Errorf("agent's batch with a foreign node: %d %s %s", st, code, p)
	}
	if _, ok := ts.srv.Scheduler().NodeSummary("n-2"); ok {
		t.Error("a refused batch registered its first node")
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/pools", ""}, {"GET", "/metrics", ""}, {"POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`},
		{"PATCH", "/api/v1/config", `{}`}, {"GET", "/api/v1/version", ""},
	} {
		st, body, _ := ts.req(c.method, c.path, c.body, bearerOf(agentToken)...)
		if code, _, _ := errOf(t, body); st != 403 || code != "forbidden" {
			t.Errorf("agent %s %s: %d %s", c.method, c.path, st, code)
		}
	}
	// carol is user and node: her node's heartbeats, and reads.
	if st, _, _ := ts.req("POST", "/api/v1/nodes/c-1/heartbeat", hb, bearerOf(carolToken)...); st != 200 {
		t.Errorf("carol's heartbeat of c-1: %d", st)
	}
	if st, _, _ := ts.req("POST", "/api/v1/nodes/n-3/heartbeat", hb, bearerOf(carolToken)...); st != 403 {
		t.Errorf("carol's heartbeat of n-3: %d", st)
	}

	// Users: reads yes; heartbeats, the config, profiles and backups no.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/api/v1/pools", "", 200}, {"GET", "/api/v1/config", "", 200}, {"GET", "/metrics", "", 200},
		{"GET", "/api/v1/orchid/pools", "", 200}, {"GET", "/api/v1/operations", "", 200}, {"GET", "/api/v1/nodes", "", 200},
		{"POST", "/api/v1/solve", `{"total_resources": {"cpu": 1}, "tree": {}}`, 200},
		{"POST", "/api/v1/nodes/n-1/heartbeat", hb, 403}, {"PATCH", "/api/v1/config", `{}`, 403},
		{"GET", "/debug/pprof/", "", 403}, {"GET", "/api/v1/backup", "", 403},
	} {
		st, body, _ := ts.req(c.method, c.path, c.body, bearerOf(aliceToken)...)
		if st != c.want {
			t.Errorf("alice %s %s: %d, want %d: %.200s", c.method, c.path, st, c.want, body)
		}
	}
	// The admin: everything.
	if st, _, _ := ts.req("GET", "/debug/pprof/", "", bearerOf(adminToken)...); st != 200 {
		t.Errorf("admin's pprof: %d", st)
	}
	if st, _, _ := ts.req("PATCH", "/api/v1/config", `{"preemptive_scheduling_backoff_s": 3}`, bearerOf(adminToken)...); st != 200 {
		t.Errorf("admin's config change: %d", st)
	}

	// A reload of the tokens: the old token is refused, the new one taken.
	ts.srv.SetTokens(mustTokens(t, `{"users": [{"name": "root2", "token": "new-admin-token-0123", "roles": ["admin"]}]}`))
	if st, _, _ := ts.req("GET", "/api/v1/pools", "", bearerOf(adminToken)...); st != 401 {
		t.Errorf("the old token after a reload: %d", st)
	}
	if st, _, _ := ts.req("GET", "/api/v1/pools", "", bearerOf("new-admin-token-0123")...); st != 200 {
		t.Errorf("the new token after a reload: %d", st)
	}
}

// TestPoolACLs: starting operations needs use on the pool, changing pools
// administer; the owner of an operation may change, move (where it may
// use), complete and abort it; a 403 names the permission and the pool
// and changes nothing.
func TestPoolACLs(t *testing.T) {
	ts := startServer(t, aclConfig, func(o *Options) { o.Tokens = mustTokens(t, testTokens) })
	as := func(tok string) []string { return bearerOf(tok) }
	task := `"tasks": [{"job_count": 2, "resources": {"cpu": 1}}]`
	expect := func(who string, tok []string, want int, method, path, body, wantMsg string) {
		t.Helper()
		st, out, _ := ts.req(method, path, body, tok...)
		if st != want {
			t.Fatalf("%s %s %s %s: %d, want %d: %s", who, method, path, body, st, want, out)
		}
		if want == 403 {
			code, _, msg := errOf(t, out)
			if code != "forbidden" || !strings.Contains(msg, wantMsg) {
				t.Fatalf("%s %s %s: %s %q, want forbidden naming %q", who, method, path, code, msg, wantMsg)
			}
		}
	}
	alice, bob, root := as(aliceToken), as(bobToken), as(adminToken)
	// use.
	expect("alice", alice, 201, "POST", "/api/v1/operations", `{"id": "a1", "pool": "research-ml", `+task+`}`, "")
	expect("bob", bob, 403, "POST", "/api/v1/operations", `{"id": "b1", "pool": "research-ml", `+task+`}`, `use permission on pool "research-ml"`)
	expect("bob", bob, 201, "POST", "/api/v1/operations", `{"id": "b1", "pool": "research", `+task+`}`, "")
	expect("alice", alice, 403, "POST", "/api/v1/operations", `{"id": "a2", "pool": "private", `+task+`}`, `use permission on pool "private"`)
	expect("alice", alice, 201, "POST", "/api/v1/operations", `{"id": "a3", `+task+`}`, "") // the root's entry
	expect("alice", alice, 400, "POST", "/api/v1/operations", `{"id": "a4", "pool": "nope", `+task+`}`, "")
	// Operations: the owner, or administer on the pool.
	expect("bob", bob, 403, "PATCH", "/api/v1/operations/a1", `{"weight": 2}`, `administer permission on pool "research-ml"`)
	expect("alice", alice, 200, "PATCH", "/api/v1/operations/a1", `{"weight": 2}`, "")
	expect("alice", alice, 403, "PATCH", "/api/v1/operations/b1", `{"weight": 2}`, `administer permission on pool "research"`)
	expect("bob", bob, 200, "PATCH", "/api/v1/operations/b1", `{"weight": 3}`, "")
	expect("bob", bob, 403, "PATCH", "/api/v1/operations/b1", `{"pool": "research-ml"}`, `use permission on pool "research-ml"`)
	expect("bob", bob, 200, "PATCH", "/api/v1/operations/b1", `{"pool": "team"}`, "")
	expect("alice", alice, 403, "POST", "/api/v1/operations/b1/abort", ``, `administer permission on pool "team"`)
	expect("bob", bob, 200, "POST", "/api/v1/operations/b1/abort", ``, "")
	expect("alice", alice, 200, "POST", "/api/v1/operations/a1/complete", ``, "")
	expect("root", root, 200, "POST", "/api/v1/operations/a3/abort", ``, "")
	expect("bob", bob, 404, "POST", "/api/v1/operations/nope/abort", ``, "")
	// Pools: administer.
	expect("alice", alice, 200, "PATCH", "/api/v1/pools/research-ml", `{"weight": 2}`, "")
	expect("bob", bob, 403, "PATCH", "/api/v1/pools/research-ml", `{"weight": 3}`, `administer permission on pool "research-ml"`)
	expect("alice", alice, 403, "PUT", "/api/v1/pools/research", `{"weight": 3}`, `administer permission on pool "research"`)
	expect("alice", alice, 201, "PUT", "/api/v1/pools/ml-child", `{"parent": "research-ml"}`, "")
	expect("alice", alice, 403, "PUT", "/api/v1/pools/ml-top", `{}`, `administer permission on pool "<Root>"`)
	expect("alice", alice, 403, "PATCH", "/api/v1/pools/ml-child", `{"parent": "team"}`, `administer permission on pool "team"`)
	expect("bob", bob, 403, "PATCH", "/api/v1/pools/private", `{"weight": 2}`, `administer permission on pool "private"`)
	expect("bob", bob, 201, "PUT", "/api/v1/pools/team-child", `{"parent": "team"}`, "")
	expect("bob", bob, 403, "PATCH", "/api/v1/pools/team", `{"parent": "research"}`, `administer permission on pool "research"`)
	expect("bob", bob, 204, "DELETE", "/api/v1/pools/team-child", ``, "")
	expect("bob", bob, 403, "DELETE", "/api/v1/pools/prod", ``, `administer permission on pool "prod"`)
	expect("bob", bob, 404, "DELETE", "/api/v1/pools/nope", ``, "")
	expect("alice", alice, 403, "PATCH", "/api/v1/pools/%3CRoot%3E", `{"acl": null}`, `administer permission on pool "<Root>"`)
	// An administrator of a pool may change its ACL, and so take the
	// permission away from others (and give it).
	expect("alice", alice, 200, "PATCH", "/api/v1/pools/ml-child", `{"acl": [{"action": "allow", "subjects": ["bob"], "permissions": ["use"]}], "inherit_acl": false}`, "")
	expect("alice", alice, 403, "POST", "/api/v1/operations", `{"id": "a5", "pool": "ml-child", `+task+`}`, `use permission on pool "ml-child"`)
	expect("bob", bob, 201, "POST", "/api/v1/operations", `{"id": "b5", "pool": "ml-child", `+task+`}`, "")
	// The root takes an acl and nothing else.
	expect("root", root, 400, "PATCH", "/api/v1/pools/%3CRoot%3E", `{"weight": 2}`, "")
	expect("root", root, 400, "PATCH", "/api/v1/pools/%3CRoot%3E", `{"inherit_acl": false}`, "")
	expect("root", root, 200, "PATCH", "/api/v1/pools/%3CRoot%3E", `{"acl": [{"action": "allow", "subjects": ["group:ml"], "permissions": ["administer"]}]}`, "")
	expect("alice", alice, 201, "PUT", "/api/v1/pools/ml-top", `{}`, "")
	expect("bob", bob, 403, "POST", "/api/v1/operations", `{"id": "b6", `+task+`}`, `use permission on pool "<Root>"`)
}

// TestBrowserDefences: the Host header must name the server (421), a
// browser's cross-site request is refused (403 cross_origin) unless its
// origin is allowed, and a body must be declared JSON (415) — issue 14's
// cross-site text/plain POST and DNS-rebinding Host among them.
func TestBrowserDefences(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "p"}]}`, func(o *Options) {
		o.ListenHost = "127.0.0.1"
		o.AllowedHosts = []string{"sched.example.com", "*.corp.example"}
		o.AllowedOrigins = []string{"https://dash.example.com"}
		o.Pprof = true
	})
	port := ts.base[strings.LastIndexByte(ts.base, ':')+1:]
	own := "http://127.0.0.1:" + port
	op := `{"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`
	f := func(name string, want int, code, method, path, body string, headers ...string) {
		t.Helper()
		st, out, _ := ts.req(method, path, body, headers...)
		if st != want {
			t.Errorf("%s: %d, want %d: %s", name, st, want, out)
			return
		}
		if code != "" {
			if c, p, _ := errOf(t, out); c != code || p != "$" {
				t.Errorf("%s: %s at %s, want %s at $", name, c, p, code)
			}
		}
	}
	// Host.
	f("own address", 200, "", "GET", "/api/v1/pools", "")
	f("localhost", 200, "", "GET", "/api/v1/pools", "", "Host", "localhost:"+port)
	f("loopback IPv6", 200, "", "GET", "/api/v1/pools", "", "Host", "[::1]:"+port)
	f("allowed host", 200, "", "GET", "/api/v1/pools", "", "Host", "sched.example.com")
	f("allowed subdomain", 200, "", "GET", "/api/v1/pools", "", "Host", "a.b.corp.example:8080")
	f("the domain of a wildcard", 421, CodeMisdirected, "GET", "/api/v1/pools", "", "Host", "corp.example")
	f("DNS rebinding", 421, CodeMisdirected, "GET", "/api/v1/pools", "", "Host", "evil.example:"+port)
	f("DNS rebinding of pprof", 421, CodeMisdirected, "GET", "/debug/pprof/", "", "Host", "evil.example")
	f("another IP on a loopback server", 421, CodeMisdirected, "GET", "/api/v1/pools", "", "Host", "10.1.2.3")
	f("a change by a rebinding page", 421, CodeMisdirected, "POST", "/api/v1/operations", op, "Host", "evil.example")
	f("probes need no Host", 200, "", "GET", "/healthz", "", "Host", "evil.example")
	// Origin and Sec-Fetch-Site.
	f("issue 14: cross-site text/plain POST", 403, CodeCrossOrigin, "POST", "/api/v1/operations", op,
		"Content-Type", "text/plain", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	f("a foreign Origin", 403, CodeCrossOrigin, "POST", "/api/v1/operations", op, "Origin", "https://evil.example")
	f("Origin null", 403, CodeCrossOrigin, "POST", "/api/v1/operations", op, "Origin", "null")
	f("cross-site", 403, CodeCrossOrigin, "DELETE", "/api/v1/pools/p", "", "Sec-Fetch-Site", "cross-site")
	f("same-site", 403, CodeCrossOrigin, "GET", "/api/v1/pools", "", "Sec-Fetch-Site", "same-site")
	f("cross-site read", 403, CodeCrossOrigin, "GET", "/api/v1/pools", "", "Sec-Fetch-Site", "cross-site")
	f("another port of the same host", 403, CodeCrossOrigin, "POST", "/api/v1/operations", op, "Origin", "http://127.0.0.1:1")
	f("https origin of an http server", 403, CodeCrossOrigin, "POST", "/api/v1/operations", op, "Origin", "https://127.0.0.1:"+port)
	f("same origin", 201, "", "POST", "/api/v1/operations", op, "Origin", own, "Sec-Fetch-Site", "same-origin")
	f("typed in the address bar", 200, "", "GET", "/api/v1/pools", "", "Sec-Fetch-Site", "none")
	f("an allowed origin", 201, "", "POST", "/api/v1/operations", op, "Origin", "https://dash.example.com", "Sec-Fetch-Site", "cross-site")
	f("a link to the dashboard", 200, "", "GET", "/ui/", "", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate")
	f("a script of another site on the dashboard", 403, CodeCrossOrigin, "GET", "/ui/", "", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors")
	// Content types.
	f("text/plain", 415, CodeUnsupportedMediaType, "POST", "/api/v1/operations", op, "Content-Type", "text/plain")
	f("a form", 415, CodeUnsupportedMediaType, "PATCH", "/api/v1/config", `{}`, "Content-Type", "application/x-www-form-urlencoded")
	f("multipart", 415, CodeUnsupportedMediaType, "PUT", "/api/v1/pools/q", `{}`, "Content-Type", "multipart/form-data; boundary=x")
	f("a heartbeat as text", 415, CodeUnsupportedMediaType, "POST", "/api/v1/nodes/n1/heartbeat", `{"resource_limits": {}}`, "Content-Type", "text/plain")
	f("JSON with a charset", 201, "", "POST", "/api/v1/operations", op, "Content-Type", "Application/JSON; charset=utf-8")
	f("no body, no type", 200, "", "POST", "/api/v1/operations/op-1/abort", "")
	if st, out, _ := ts.req("GET", "/api/v1/operations", ""); st != 200 || bytes.Count(out, []byte(`"id"`)) != 3 {
		t.Errorf("the refused requests started operations: %s", out)
	}
	// No Content-Type at all (curl -d sends a form's; a bare client none).
	r, _ := http.NewRequest("POST", ts.base+"/api/v1/operations", strings.NewReader(op))
	resp, err := ts.hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("a body without Content-Type: %d, want 415", resp.StatusCode)
	}
}

// rawRequest writes a request on a new connection and returns what the
// server answers first, read until the end of its headers.
func rawRequest(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil || line == "\r\n" {
			break
		}
	}
	return head.String()
}

// TestExpectContinue: a request that waits for "100 Continue" gets the
// final answer at once when its declared body is over the limit (413) or
// its token is not known (401), and 100 Continue otherwise.
func TestExpectContinue(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.MaxBodySize = 1 << 20 })
	addr := strings.TrimPrefix(ts.base, "http://")
	ask := func(length int, extra string) string {
		return fmt.Sprintf("POST /api/v1/operations HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n%s\r\n", addr, length, extra)
	}
	if head := rawRequest(t, addr, ask(20<<20, "")); !strings.HasPrefix(head, "HTTP/1.1 413") || strings.Contains(head, "100 Continue") {
		t.Errorf("20 MB declared: %q, want 413 without 100 Continue", head)
	}
	if head := rawRequest(t, addr, ask(1<<20+1, "")); !strings.HasPrefix(head, "HTTP/1.1 413") {
		t.Errorf("one byte over the limit: %q", head)
	}
	if head := rawRequest(t, addr, ask(1<<20, "")); !strings.HasPrefix(head, "HTTP/1.1 100 Continue") {
		t.Errorf("at the limit: %q, want 100 Continue", head)
	}
	tok := startServer(t, "", func(o *Options) { o.Tokens = mustTokens(t, testTokens) })
	addr = strings.TrimPrefix(tok.base, "http://")
	if head := rawRequest(t, addr, ask(100, "")); !strings.HasPrefix(head, "HTTP/1.1 401") || !strings.Contains(strings.ToLower(head), "www-authenticate: bearer") {
		t.Errorf("without a token: %q, want 401", head)
	}
	if head := rawRequest(t, addr, ask(100, "Authorization: Bearer "+adminToken+"\r\n")); !strings.HasPrefix(head, "HTTP/1.1 100 Continue") {
		t.Errorf("with a token: %q, want 100 Continue", head)
	}
}

// TestShutdownWithSilentClients: Shutdown ends connections that never
// send a byte, and idle keep-alive ones, at once, and still answers the
// request being handled (issue 14: one silent client held SIGTERM for the
// whole grace period).
func TestShutdownWithSilentClients(t *testing.T) {
	srv, err := New(Options{ManualUpdates: true, Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + "/api/v1/pools") // leaves an idle keep-alive connection
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// A request in flight when the shutdown begins is answered.
	release := make(chan struct{})
	inHandler := make(chan struct{})
	hook := func(path []byte) {
		if string(path) == "/api/v1/version" {
			close(inHandler)
			<-release
		}
	}
	srv.panicHook.Store(&hook)
	slow := make(chan int, 1)
	go func() {
		r, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/api/v1/version")
		if err != nil {
			slow <- 0
			return
		}
		r.Body.Close()
		slow <- r.StatusCode
	}()
	<-inHandler
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	// The request is released once the shutdown has begun: the listener
	// refuses new connections (polled, with a deadline).
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts 5 s after Shutdown began")
		}
	}
	close(release)
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Shutdown took %v with a silent client", took)
	}
	if st := <-slow; st != 200 {
		t.Errorf("the request in flight: %d", st)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	silent.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadAll(silent); err != nil {
		t.Errorf("the silent connection is still open: %v", err)
	}
}

// TestSeparateNamespacesAndDotNames: an operation id does not block a
// pool name, nor a pool name an operation id; "." and ".." are refused as
// ids and names (issue 14).
func TestSeparateNamespacesAndDotNames(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "prod"}]}`, nil)
	task := `"tasks": [{"job_count": 1, "resources": {"cpu": 1}}]`
	ts.must(201, "POST", "/api/v1/operations", `{"id": "team-a", `+task+`}`)
	ts.must(201, "PUT", "/api/v1/pools/team-a", `{}`)
	ts.must(200, "GET", "/api/v1/pools/team-a", "")
	ts.must(201, "POST", "/api/v1/operations", `{"id": "prod", "pool": "team-a", `+task+`}`)
	if o := ts.must(200, "GET", "/api/v1/operations/prod", ""); o["pool"] != "team-a" {
		t.Errorf("operation prod: %v", o)
	}
	ts.must(200, "POST", "/api/v1/operations/team-a/complete", "")
	for _, id := range []string{".", ".."} {
		st, out := ts.do("POST", "/api/v1/operations", `{"id": "`+id+`", `+task+`}`)
		if code, p, _ := errOf(t, out); st != 400 || code != "invalid_name" || p != "$.id" {
			t.Errorf("operation id %q: %d %s %s", id, st, code, p)
		}
		st, out = ts.do("PATCH", "/api/v1/operations/prod", `{"pool": "`+id+`"}`)
		if code, p, _ := errOf(t, out); st != 400 || code != "invalid_name" || p != "$.pool" {
			t.Errorf("pool %q: %d %s %s", id, st, code, p)
		}
	}
}

// TestControlPlaneBounds: above 2^53 is refused on the control plane as
// the heartbeat refuses it, 2^53 itself taken; duplicate keys are refused
// (issue 14).
func TestControlPlaneBounds(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "p"}]}`, nil)
	f := func(method, path, body string, want int, code, at string) {
		t.Helper()
		st, out := ts.do(method, path, body)
		if st != want {
			t.Errorf("%s %s %s: %d, want %d: %s", method, path, body, st, want, out)
			return
		}
		if code != "" {
			if c, p, _ := errOf(t, out); c != code || p != at {
				t.Errorf("%s %s %s: %s at %s, want %s at %s", method, path, body, c, p, code, at)
			}
		}
	}
	f("PATCH", "/api/v1/config", `{"max_operation_count": 9007199254740993}`, 400, "invalid_value", "$.max_operation_count")
	f("PATCH", "/api/v1/config", `{"max_operation_count": 9007199254740992}`, 200, "", "")
	f("PUT", "/api/v1/pools/q", `{"resource_limits": {"memory": 9007199254740993}}`, 400, "invalid_value", "$.resource_limits.memory")
	f("PUT", "/api/v1/pools/q", `{"resource_limits": {"memory": 9.007199254740993e15}}`, 400, "invalid_value", "$.resource_limits.memory")
	f("PUT", "/api/v1/pools/q", `{"resource_limits": {"memory": 9007199254740992}}`, 201, "", "")
	f("POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"memory": 9007199254740993}}]}`, 400, "invalid_value", "$.tasks[0].resources.memory")
	f("POST", "/api/v1/operations", `{"tasks": [{"job_count": 1, "resources": {"memory": 9007199254740992}}]}`, 201, "", "")
	f("PATCH", "/api/v1/config", `{"node_heartbeat_timeout_s": 30, "node_heartbeat_timeout_s": 0.001}`, 400, "duplicate_key", "$.node_heartbeat_timeout_s")
	f("PUT", "/api/v1/pools/r", `{"weight": 1, "weight": 2}`, 400, "duplicate_key", "$.weight")
	f("POST", "/api/v1/operations", `{"pool": "p", "tasks": [{"job_count": 1, "job_count": 2, "resources": {"cpu": 1}}]}`, 400, "duplicate_key", "$.tasks[0].job_count")
	f("PATCH", "/api/v1/operations/op-1", `{"weight": 2, "weight": 3}`, 400, "duplicate_key", "$.weight")
	f("POST", "/api/v1/solve", `{"total_resources": {"cpu": 1}, "total_resources": {"cpu": 2}, "tree": {}}`, 400, "duplicate_key", "$.total_resources")
	if c := ts.must(200, "GET", "/api/v1/config", ""); c["node_heartbeat_timeout_s"] != 60.0 {
		t.Errorf("a refused duplicate changed the config: %v", c["node_heartbeat_timeout_s"])
	}
}

// TestDemandNeverWraps: the live operations' demand stays within 2^53 per
// resource, so no pool's demand wraps (issue 14: two operations of 513
// tasks × 2^40 jobs made a pool's demand negative); a finished operation
// gives its share back.
func TestDemandNeverWraps(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "p"}]}`, nil)
	half := `{"pool": "p", "tasks": [{"job_count": 1099511627776, "resources": {"memory": 4096}}]}` // 2^52
	ts.must(201, "POST", "/api/v1/operations", strings.Replace(half, `{"pool"`, `{"id": "a", "pool"`, 1))
	ts.must(201, "POST", "/api/v1/operations", strings.Replace(half, `{"pool"`, `{"id": "b", "pool"`, 1)) // 2^53: the bound
	ts.must(201, "POST", "/api/v1/operations", strings.Replace(half, `{"pool"`, `{"id": "b", "pool"`, 1)) // a retry
	st, out := ts.do("POST", "/api/v1/operations", `{"pool": "p", "tasks": [{"job_count": 1, "resources": {"memory": 1}}]}`)
	if code, p, _ := errOf(t, out); st != 409 || code != CodeDemandOverflow || p != "$.tasks" {
		t.Fatalf("past 2^53: %d %s %s", st, code, p)
	}
	ts.must(200, "POST", "/api/v1/operations/a/abort", "")
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "p", "tasks": [{"job_count": 1, "resources": {"memory": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	for _, p := range ts.must(200, "GET", "/api/v1/orchid/pools", "")["pools"].([]any) {
		pm := p.(map[string]any)
		if d, _ := pm["demand_share"].(map[string]any); d != nil && d["memory"].(float64) < 0 {
			t.Errorf("pool %v: negative demand share %v", pm["name"], d)
		}
	}
	// One operation over its tasks: refused as it is decoded.
	tasks := make([]string, 513)
	for i := range tasks {
		tasks[i] = `{"job_count": 1099511627776, "resources": {"memory": 8192}}`
	}
	st, out = ts.do("POST", "/api/v1/operations", `{"pool": "p", "tasks": [`+strings.Join(tasks, ",")+`]}`)
	if code, p, _ := errOf(t, out); st != 400 || code != "invalid_value" || p != "$.tasks[1].job_count" {
		t.Errorf("513 tasks of 2^40 jobs: %d %s %s", st, code, p)
	}
}

// TestHeartbeatAnswerIsBounded: issue 14's operation of 2^40 tiny jobs
// and a node with huge resource_limits: the node's limits above
// max_node_resource_limits are refused, and a node at the bound starts at
// most max_started_allocations_per_heartbeat allocations, in an answer
// well under 1 MiB.
func TestHeartbeatAnswerIsBounded(t *testing.T) {
	ts := startServer(t, `{"pools": [{"name": "p"}]}`, nil)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "p", "tasks": [{"job_count": 1099511627776, "resources": {"cpu": 0.01}}]}`)
	st, out := ts.do("POST", "/api/v1/nodes/huge/heartbeat", `{"resource_limits": {"cpu": 9e13, "user_slots": 9007199254740992, "memory": 9007199254740992}}`)
	if code, p, _ := errOf(t, out); st != 400 || code != "invalid_value" || p != "$.resource_limits.user_slots" && p != "$.resource_limits.cpu" {
		t.Fatalf("9e13 cpu: %d %s %s", st, code, p)
	}
	for _, c := range []struct {
		limits string
		want   int
		at     string
	}{
		{`{"cpu": 16384.01}`, 400, "$.resource_limits.cpu"},
		{`{"memory": 70368744177665}`, 400, "$.resource_limits.memory"},
		{`{"user_slots": 65537}`, 400, "$.resource_limits.user_slots"},
		{`{"gpu": 1025}`, 400, "$.resource_limits.gpu"},
		{`{"network": 1099511627777}`, 400, "$.resource_limits.network"},
	} {
		st, out := ts.do("POST", "/api/v1/nodes/one-past/heartbeat", `{"resource_limits": `+c.limits+`}`)
		if _, p, _ := errOf(t, out); st != c.want || p != c.at {
			t.Errorf("%s: %d at %s, want %d at %s", c.limits, st, p, c.want, c.at)
		}
	}
	if _, ok := ts.srv.Scheduler().NodeSummary("one-past"); ok {
		t.Error("a refused heartbeat registered its node")
	}
	big := `{"resource_limits": {"user_slots": 65536, "cpu": 16384, "gpu": 1024, "memory": 70368744177664, "network": 1099511627776}}`
	ts.must(200, "POST", "/api/v1/nodes/big/heartbeat", big)
	ts.clock.advanceAndUpdate(ts.srv)
	st, out = ts.do("POST", "/api/v1/nodes/big/heartbeat", big)
	if st != 200 {
		t.Fatalf("%d %s", st, out)
	}
	var resp struct {
		Start []json.RawMessage `json:"allocations_to_start"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Start) != 1024 || len(out) > 256<<10 {
		t.Errorf("a heartbeat started %d allocations in %d bytes, want 1024 in at most 256 KiB", len(resp.Start), len(out))
	}
}

// TestNodeTagsAreBounded: a node sends at most 256 tags, the cluster
// keeps at most MaxDistinctNodeTags distinct ones (at the bound taken,
// one past refused with 400 too_many_tags), and tags no node has any more
// are forgotten when room is needed (issue 14: every tag was kept for ever).
func TestNodeTagsAreBounded(t *testing.T) {
	ts := startServer(t, "", nil)
	ts.srv.tags.gcEvery = 0
	tags := func(node, prefix string, n int) string {
		ts := make([]string, n)
		for i := range ts {
			ts[i] = fmt.Sprintf(`"%s-%d"`, prefix, i)
		}
		return `{"resource_limits": {"cpu": 1}, "tags": [` + strings.Join(ts, ",") + `]}`
	}
	st, out := ts.do("POST", "/api/v1/nodes/n/heartbeat", tags("n", "t", wire.MaxHeartbeatTags+1))
	if _, p, _ := errOf(t, out); st != 400 || p != "$.tags" && !strings.HasPrefix(p, "$.tags[") {
		t.Errorf("257 tags: %d at %s", st, p)
	}
	for i := range MaxDistinctNodeTags / wire.MaxHeartbeatTags {
		ts.must(200, "POST", fmt.Sprintf("/api/v1/nodes/n%d/heartbeat", i), tags("", fmt.Sprintf("g%d", i), wire.MaxHeartbeatTags))
	}
	st, out = ts.do("POST", "/api/v1/nodes/late/heartbeat", `{"resource_limits": {"cpu": 1}, "tags": ["g0-1", "new"]}`)
	if code, p, _ := errOf(t, out); st != 400 || code != CodeTooManyTags || p != "$.tags[1]" {
		t.Fatalf("one tag past the bound: %d %s %s", st, code, p)
	}
	st, out = ts.do("POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "n1", "resource_limits": {"cpu": 1}, "tags": ["g1-0"]}, {"node_id": "late", "resource_limits": {"cpu": 1}, "tags": ["new"]}]}`)
	if st != 200 || !bytes.Contains(out, []byte(`{"node_id":"n1","allocations_to_start"`)) || bytes.Contains(out, []byte(`too_many_tags`)) {
		// n1 goes first and drops 255 tags, which "new" then takes.
		t.Fatalf("a batch that frees tags before it takes one: %d %s", st, out)
	}
	st, out = ts.do("POST", "/api/v1/heartbeats", `{"heartbeats": [{"node_id": "late", "resource_limits": {"cpu": 1}, "tags": ["new", "g1-5"]}, {"node_id": "late2", "resource_limits": {"cpu": 1}, "tags": `+
		`["`+strings.Repeat("z", 10)+`"]}]}`)
	if st != 200 {
		t.Fatalf("%d %s", st, out)
	}
	// Fill the set again, then a batch entry past the bound is refused
	// alone.
	for i := 0; ; i++ {
		st, out := ts.do("POST", fmt.Sprintf("/api/v1/nodes/f%d/heartbeat", i), tags("", fmt.Sprintf("f%d", i), wire.MaxHeartbeatTags))
		if st == 400 {
			break
		}
		if st != 200 || i > 10 {
			t.Fatalf("%d %s", st, out)
		}
	}
	n2 := `{"node_id": "n2", ` + strings.TrimPrefix(tags("", "g2", wire.MaxHeartbeatTags), "{") // n2's tags, unchanged
	st, out = ts.do("POST", "/api/v1/heartbeats", `{"heartbeats": [`+n2+`, {"node_id": "late3", "resource_limits": {"cpu": 1}, "tags": ["g2-0", "newer"]}]}`)
	if st != 200 || !bytes.Contains(out, []byte(`{"node_id":"n2","allocations_to_start"`)) ||
		!bytes.Contains(out, []byte(`"code":"too_many_tags"`)) || !bytes.Contains(out, []byte(`"path":"$.heartbeats[1].tags[1]"`)) {
		t.Fatalf("a batch past the bound: %d %s", st, out)
	}
}

// TestSolveIsBounded: a solve's answer holds at most MaxSolveResults
// element results (issue 14: 20,000 updates answered 53 MB).
func TestSolveIsBounded(t *testing.T) {
	ts := startServer(t, "", nil)
	snap := func(updates int) string {
		return `{"total_resources": {"cpu": 10}, "tree": {"children": [{"operation": "o", "demand": {"cpu": 1}}]}, "updates": [` +
			strings.TrimSuffix(strings.Repeat(`{"elapsed_s": 1},`, updates), ",") + `]}`
	}
	if st, out := ts.do("POST", "/api/v1/solve", snap(MaxSolveResults/2)); st != 200 || len(out) > 16<<20 {
		t.Errorf("at the bound: %d, %d bytes", st, len(out))
	}
	st, out := ts.do("POST", "/api/v1/solve", snap(MaxSolveResults/2+1))
	if code, p, msg := errOf(t, out); st != 400 || code != CodeSolveTooLarge || p != "$" || !strings.Contains(msg, "10000") {
		t.Errorf("one past: %d %s %s %s", st, code, p, msg)
	}
}

// TestAuditLog: every change is a line naming the user, what and the
// result; refusals too, 401 and 403 among them; no token ever appears.
func TestAuditLog(t *testing.T) {
	var buf lockedBuffer
	ts := startServer(t, aclConfig, func(o *Options) {
		o.Tokens = mustTokens(t, testTokens)
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})
	buf.lines(t)
	ts.req("PUT", "/api/v1/pools/ml2", `{"parent": "research-ml"}`, bearerOf(aliceToken)...)
	ts.req("DELETE", "/api/v1/pools/prod", "", bearerOf(bobToken)...)
	ts.req("DELETE", "/api/v1/pools/prod", "", bearerOf("not-a-token-0123456789")...)
	ts.req("POST", "/api/v1/operations", `{"pool": "research", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, bearerOf(bobToken)...)
	raw := func() string { buf.mu.Lock(); defer buf.mu.Unlock(); return buf.b.String() }()
	for _, tok := range []string{adminToken, aliceToken, bobToken, "not-a-token-0123456789"} {
		if strings.Contains(raw, tok) {
			t.Fatalf("the log holds a token: %s", raw)
		}
	}
	lines := buf.lines(t)
	want := []struct{ msg, caller, result, code string }{
		{"pool created", "alice", "ok", ""},
		{"request refused", "bob", "refused", "forbidden"},
		{"request refused", "anonymous", "refused", "unauthenticated"},
		{"operation started", "bob", "ok", ""},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l["msg"] != w.msg || l["caller"] != w.caller || l["result"] != w.result || w.code != "" && l["code"] != w.code {
			t.Errorf("line %d: %v, want %+v", i, l, w)
		}
	}
}

// TestOwnersAndACLsSurviveARestart: the user who started an operation,
// the pools' ACLs (the root's included) and the live demand are stored and
// restored.
func TestOwnersAndACLsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	mc := &manualClock{}
	mc.set(clock.Time(5_000_000))
	withTokens := func(o *Options) { o.Tokens = mustTokens(t, testTokens) }
	a := startDurable(t, dir, mc, aclConfig, nil, withTokens)
	task := `"tasks": [{"job_count": 1099511627776, "resources": {"memory": 4096}}]` // 2^52
	for _, c := range []struct {
		tok, method, path, body string
		want                    int
	}{
		{aliceToken, "POST", "/api/v1/operations", `{"id": "a1", "pool": "research", ` + task + `}`, 201},
		{bobToken, "POST", "/api/v1/operations", `{"id": "b1", "pool": "team", ` + task + `}`, 201},
		{adminToken, "PATCH", "/api/v1/pools/%3CRoot%3E", `{"acl": [{"action": "deny", "subjects": ["bob"], "permissions": ["use"]}]}`, 200},
	} {
		if st, out, _ := a.req(c.method, c.path, c.body, bearerOf(c.tok)...); st != c.want {
			t.Fatalf("%s %s: %d %s", c.method, c.path, st, out)
		}
	}
	a.stop()
	b := startDurable(t, dir, mc, "", nil, withTokens)
	if st, out, _ := b.req("GET", "/api/v1/pools/%3CRoot%3E", "", bearerOf(bobToken)...); st != 200 || !bytes.Contains(out, []byte(`"action":"deny","subjects":["bob"]`)) {
		t.Fatalf("the root's acl after the restart: %d %s", st, out)
	}
	for _, c := range []struct {
		tok, method, path, body string
		want                    int
	}{
		{bobToken, "POST", "/api/v1/operations", `{"id": "b2", "pool": "team", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`, 403}, // the root's deny
		{adminToken, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1, "resources": {"memory": 1}}]}`, 409},        // 2^53 live
		{bobToken, "POST", "/api/v1/operations/a1/abort", ``, 403},
		{aliceToken, "POST", "/api/v1/operations/a1/abort", ``, 200}, // the owner
		{adminToken, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 1, "resources": {"memory": 1}}]}`, 201},
	} {
		if st, out, _ := b.req(c.method, c.path, c.body, bearerOf(c.tok)...); st != c.want {
			t.Errorf("after the restart, %s %s: %d, want %d: %s", c.method, c.path, st, c.want, out)
		}
	}
}

// TestTokensNeverEchoed: a request the HTTP parser refuses is answered and
// logged without quoting it, so a token in it stays out of both.
func TestTokensNeverEchoed(t *testing.T) {
	var buf lockedBuffer
	ts := startServer(t, "", func(o *Options) {
		o.Tokens = mustTokens(t, testTokens)
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})
	addr := strings.TrimPrefix(ts.base, "http://")
	for _, req := range []string{
		"POST /api/v1/operations HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + adminToken + "\r\nContent-Length: x" + adminToken + "\r\n\r\n",
		"GET /api/v1/pools HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\nAuthorization: Bearer " + adminToken + "x\r\n\r\n",
		"GET /api/v1/pools HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\nAuthorization: " + adminToken + "\r\n\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		out, _ := io.ReadAll(io.LimitReader(c, 1<<16))
		c.Close()
		if !bytes.HasPrefix(out, []byte("HTTP/1.1 4")) || bytes.Contains(out, []byte(adminToken)) {
			t.Errorf("%q: answered %q", req, out)
		}
	}
	if raw := func() string { buf.mu.Lock(); defer buf.mu.Unlock(); return buf.b.String() }(); strings.Contains(raw, adminToken) {
		t.Errorf("the log holds a token: %s", raw)
	}
}

// TestAllowedOriginsCORS: a page of an allowed origin gets its preflight
// answered and its answers labelled for it; another origin gets neither.
func TestAllowedOriginsCORS(t *testing.T) {
	ts := startServer(t, "", func(o *Options) {
		o.Tokens = mustTokens(t, testTokens)
		o.AllowedOrigins = []string{"https://dash.example.com"}
	})
	st, _, h := ts.req("OPTIONS", "/api/v1/operations", "", "Origin", "https://dash.example.com",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type", "Sec-Fetch-Site", "cross-site")
	if st != 204 || h.Get("Access-Control-Allow-Origin") != "https://dash.example.com" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", st, h)
	}
	st, _, h = ts.req("GET", "/api/v1/pools", "", "Origin", "https://dash.example.com", "Sec-Fetch-Site", "cross-site", "Authorization", "Bearer "+aliceToken)
	if st != 200 || h.Get("Access-Control-Allow-Origin") != "https://dash.example.com" {
		t.Errorf("a read from the allowed origin: %d %v", st, h)
	}
	st, _, h = ts.req("GET", "/api/v1/pools", "", "Origin", "https://dash.example.com")
	if st != 401 || h.Get("Access-Control-Allow-Origin") == "" {
		t.Errorf("a read without a token from the allowed origin: %d %v", st, h)
	}
	st, _, h = ts.req("OPTIONS", "/api/v1/operations", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if st != 401 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's preflight: %d %v", st, h)
	}
}
