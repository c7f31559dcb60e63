package limits

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

// A clone has the counts, states and pending queues of the original, and
// changes of either leave the other as it was.
func TestClone(t *testing.T) {
	tr := tree.New(tree.PoolConfig{})
	if _, err := tr.Apply(tree.Mutation{Kind: tree.AddPool, Name: "p", Pool: tree.PoolConfig{MaxRunningOperationCount: tree.SomeInt(2)}}); err != nil {
		t.Fatal(err)
	}
	p, _ := tr.Lookup("p")
	l := New(tr, DefaultConfig())
	var ids []tree.ID
	for i := range 5 {
		name := "o" + strconv.Itoa(i)
		if _, err := tr.Apply(tree.Mutation{Kind: tree.AddOperation, Name: name, Parent: "p"}); err != nil {
			t.Fatal(err)
		}
		id, _ := tr.LookupOperation(name)
		l.Register(id)
		ids = append(ids, id)
	}
	state := func(l *Limits) []any {
		out := []any{l.RunningOperationCount(p), l.PendingOperationCount(p), l.OperationCount(p), l.Pending(p, nil)}
		for _, id := range ids {
			out = append(out, l.State(id))
		}
		return out
	}
	ct := tr.Clone()
	c := l.Clone(ct)
	want := state(l)
	if got := state(c); !reflect.DeepEqual(got, want) {
		t.Fatalf("clone %v, original %v", got, want)
	}
	// The clone finishes a running operation: the head of its queue starts
	// there, not in the original.
	started := c.Unregister(ids[0], nil)
	if _, err := ct.Apply(tree.Mutation{Kind: tree.RemoveOperation, Name: "o0"}); err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || started[0] != ids[2] || c.State(ids[2]) != Running {
		t.Errorf("the clone started %v", started)
	}
	if got := state(l); !reflect.DeepEqual(got, want) {
		t.Errorf("the original changed with its clone: %v, was %v", got, want)
	}
}
