package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

// TestDecodePoolACL: a pool's acl and inherit_acl decode, re-encode in
// canonical form, and every malformed entry is refused at its path; the
// bounds are taken at their value and refused one past it.
func TestDecodePoolACL(t *testing.T) {
	b, err := DecodePool([]byte(`{"acl": [{"action": "deny", "subjects": ["bob"], "permissions": ["administer", "use"]},
		{"permissions": ["use"], "subjects": ["group:ml", "alice@example.com"], "action": "allow"}], "inherit_acl": false}`), tree.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := []tree.ACLEntry{{Deny: true, Subjects: []string{"bob"}, Permissions: tree.PermUse | tree.PermAdminister},
		{Subjects: []string{"group:ml", "alice@example.com"}, Permissions: tree.PermUse}}
	if !reflect.DeepEqual(b.Config.ACL, want) || b.Config.InheritACL != tree.SomeBool(false) {
		t.Fatalf("decoded %+v %+v", b.Config.ACL, b.Config.InheritACL)
	}
	got := string(AppendPool(nil, "p", "", &b.Config))
	if w := `{"name":"p","mode":"fair_share","acl":[{"action":"deny","subjects":["bob"],"permissions":["use","administer"]},{"action":"allow","subjects":["group:ml","alice@example.com"],"permissions":["use"]}],"inherit_acl":false}`; got != w {
		t.Errorf("encoded %s\nwant    %s", got, w)
	}
	// null resets both; PATCH keeps what it does not name.
	if b2, err := DecodePool([]byte(`{"weight": 2}`), b.Config); err != nil || !reflect.DeepEqual(b2.Config.ACL, want) {
		t.Errorf("PATCH without acl: %+v %v", b2, err)
	}
	if b2, err := DecodePool([]byte(`{"acl": null, "inherit_acl": null}`), b.Config); err != nil || b2.Config.ACL != nil || b2.Config.InheritACL.Set {
		t.Errorf("null: %+v %v", b2, err)
	}

	f := func(body, code, path string) {
		t.Helper()
		_, err := DecodePool([]byte(body), tree.PoolConfig{})
		var e *Error
		if !errors.As(err, &e) || e.Code != code || e.Path != path {
			t.Errorf("%s: %v, want %s at %s", body, err, code, path)
		}
	}
	entry := func(s string) string { return `{"acl": [` + s + `]}` }
	f(`{"acl": {}}`, CodeWrongType, "$.acl")
	f(entry(`1`), CodeWrongType, "$.acl[0]")
	f(entry(`{"action": "permit", "subjects": ["a"], "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].action")
	f(entry(`{"subjects": ["a"], "permissions": ["use"]}`), CodeMissingAttribute, "$.acl[0].action")
	f(entry(`{"action": "allow", "permissions": ["use"]}`), CodeMissingAttribute, "$.acl[0].subjects")
	f(entry(`{"action": "allow", "subjects": ["a"]}`), CodeMissingAttribute, "$.acl[0].permissions")
	f(entry(`{"action": "allow", "subjects": [], "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].subjects")
	f(entry(`{"action": "allow", "subjects": ["a b"], "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].subjects[0]")
	f(entry(`{"action": "allow", "subjects": ["group:"], "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].subjects[0]")
	f(entry(`{"action": "allow", "subjects": ["group:a:b"], "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].subjects[0]")
	f(entry(`{"action": "allow", "subjects": ["a", "a"], "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].subjects[1]")
	f(entry(`{"action": "allow", "subjects": ["a"], "permissions": []}`), CodeInvalidValue, "$.acl[0].permissions")
	f(entry(`{"action": "allow", "subjects": ["a"], "permissions": ["read"]}`), CodeInvalidValue, "$.acl[0].permissions[0]")
	f(entry(`{"action": "allow", "subjects": ["a"], "permissions": ["use", "use"]}`), CodeInvalidValue, "$.acl[0].permissions[1]")
	f(entry(`{"action": "allow", "subjects": ["a"], "permissions": ["use"], "who": 1}`), CodeUnknownAttribute, "$.acl[0].who")
	f(`{"inherit_acl": "no"}`, CodeWrongType, "$.inherit_acl")

	// Bounds: 64 entries of 64 subjects are taken, one more is refused.
	subjects := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("%q", fmt.Sprintf("u%d", i))
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	one := `{"action": "allow", "subjects": ` + subjects(MaxACLSubjects) + `, "permissions": ["use"]}`
	many := strings.TrimSuffix(strings.Repeat(one+",", MaxACLEntries), ",")
	if _, err := DecodePool([]byte(entry(many)), tree.PoolConfig{}); err != nil {
		t.Errorf("%d entries of %d subjects: %v", MaxACLEntries, MaxACLSubjects, err)
	}
	f(entry(many+","+one), CodeInvalidValue, "$.acl")
	f(entry(`{"action": "allow", "subjects": `+subjects(MaxACLSubjects+1)+`, "permissions": ["use"]}`), CodeInvalidValue, "$.acl[0].subjects")
}

// TestServeConfigRootACL: the root's entry of a serve configuration may
// carry an acl, and nothing else but its name and mode.
func TestServeConfigRootACL(t *testing.T) {
	sc, err := DecodeServeConfig([]byte(`{"pools": [{"name": "<Root>", "mode": "fair_share", "acl": [{"action": "allow", "subjects": ["group:admins"], "permissions": ["administer"]}]}, {"name": "a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Root.ACL) != 1 || sc.Root.ACL[0].Subjects[0] != "group:admins" || len(sc.Pools) != 1 {
		t.Errorf("root %+v, pools %+v", sc.Root, sc.Pools)
	}
	for body, path := range map[string]string{
		`{"pools": [{"name": "<Root>", "inherit_acl": false}]}`: "$.pools[0].inherit_acl",
		`{"pools": [{"name": "<Root>", "acl": [1]}]}`:           "$.pools[0].acl[0]",
	} {
		_, err := DecodeServeConfig([]byte(body))
		var e *Error
		if !errors.As(err, &e) || e.Path != path {
			t.Errorf("%s: %v, want an error at %s", body, err, path)
		}
	}
}

// TestOperationTotalDemand: an operation's total demand over its tasks
// stays within 2^53 per resource (issue 14: 513 tasks of 2^40 jobs made a
// pool's demand wrap negative); 2^53 itself is taken.
func TestOperationTotalDemand(t *testing.T) {
	task := func(jobs, memory int64) string {
		return fmt.Sprintf(`{"job_count": %d, "resources": {"memory": %d}}`, jobs, memory)
	}
	ok := `{"tasks": [` + task(1<<40, 1<<12) + `,` + task(1<<40, 1<<12) + `]}` // 2^52 + 2^52
	spec, err := DecodeStartOperation([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if d := Demand(&spec); d[3] != 1<<53 {
		t.Errorf("demand %v", d)
	}
	over := `{"tasks": [` + task(1<<40, 1<<12) + `,` + task(1<<40, 1<<12) + `,` + task(1, 1) + `]}`
	_, err = DecodeStartOperation([]byte(over))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidValue || e.Path != "$.tasks[2].job_count" {
		t.Errorf("2^53+1: %v", err)
	}
	// The 513 tasks of 2^40 jobs (each task at 2^53).
	tasks := make([]string, 513)
	for i := range tasks {
		tasks[i] = task(1<<40, 1<<13)
	}
	_, err = DecodeStartOperation([]byte(`{"tasks": [` + strings.Join(tasks, ",") + `]}`))
	if !errors.As(err, &e) || e.Path != "$.tasks[1].job_count" {
		t.Errorf("513 × 2^40: %v", err)
	}
}
