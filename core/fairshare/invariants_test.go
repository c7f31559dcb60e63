package fairshare

import (
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// TestCheckFairShares breaks the result of an update in the ways
// checkFairShares looks for: it panics under the invariants build tag and
// -race, and does nothing otherwise.
func TestCheckFairShares(t *testing.T) {
	cores := func(c float64) resource.Vec { return resource.Vec{resource.CPU: resource.Cores(c)} }
	f := func(name string, breakIt func(u *Updater, tr *tree.Tree), want string) {
		t.Helper()
		tr := tree.New(tree.PoolConfig{})
		if _, err := tr.Apply(
			tree.Mutation{Kind: tree.AddPool, Name: "p"},
			tree.Mutation{Kind: tree.AddOperation, Name: "a", Parent: "p", Demand: cores(30)},
			tree.Mutation{Kind: tree.AddOperation, Name: "b", Parent: "p", Demand: cores(90)},
		); err != nil {
			t.Fatal(err)
		}
		u := New(tr, DefaultConfig())
		u.Update(cores(100), 0)
		u.checkFairShares() // a correct result passes
		breakIt(u, tr)
		var msg string
		func() {
			defer func() {
				if r := recover(); r != nil {
					msg, _ = r.(string)
				}
			}()
			u.checkFairShares()
		}()
		switch {
		case !invariants.Enabled && msg != "":
			t.Errorf("%s: panicked with %q although invariants are disabled", name, msg)
		case invariants.Enabled && !strings.Contains(msg, want):
			t.Errorf("%s: panicked with %q, want a message containing %q", name, msg, want)
		}
	}
	id := func(tr *tree.Tree, name string) tree.ID {
		id, _ := tr.Lookup(name)
		return id
	}
	f("children above their pool", func(u *Updater, tr *tree.Tree) {
		u.attrs[id(tr, "a")].FairShare.Total[resource.CPU] += 1e-6
	}, `the children of "p" have fair share`)
	f("negative", func(u *Updater, tr *tree.Tree) {
		u.attrs[id(tr, "a")].FairShare.Total[resource.Memory] = -1e-6
	}, `"a" has fair share -1e-06 in memory, outside [0, 1]`)
	f("above one", func(u *Updater, tr *tree.Tree) {
		u.attrs[tree.Root].FairShare.Total[resource.CPU] = 1.001
		u.attrs[id(tr, "p")].FairShare.Total[resource.CPU] = 1.001
	}, `has fair share 1.001 in cpu, outside [0, 1]`)
}
