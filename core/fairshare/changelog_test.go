package fairshare_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// TestChangeLogReaders checks the operations' changes as Updaters read them
// from the tree's change log (tree.ChangesSince): three Updaters on one tree,
// updated after every change, after every third and after every tenth, each
// agree bit for bit with an Updater that looks at every operation
// (Invalidate) at the same time. The changes go through every setter the log
// records (demand and usage, pending job count, node limits, weight,
// limits), several per operation between updates, and an operation changes
// again right after an update has read the log's last entry, its own.
func TestChangeLogReaders(t *testing.T) {
	tr, total := coretest.GenTree(3, 60, 600)
	var ops []tree.ID
	tr.Walk(func(id tree.ID) {
		if tr.IsOperation(id) {
			ops = append(ops, id)
		}
	})
	cfg := fairshare.DefaultConfig()
	every := []int{1, 3, 10}
	var us, fulls []*fairshare.Updater
	for range every {
		us = append(us, fairshare.New(tr, cfg))
		fulls = append(fulls, fairshare.New(tr, cfg))
	}
	r := rand.New(rand.NewPCG(5, 7))
	changes := coretest.NewDemandChanges(tr, 9)
	now := clock.Time(0)
	last := ops[0]
	for step := range 60 {
		for k := range 1 + r.IntN(4) {
			id := ops[r.IntN(len(ops))]
			if k == 0 && step%2 == 1 {
				// The last operation changed before the last update
				// again: the log's last entry, which a reader has seen.
				id = last
			}
			last = id
			switch r.IntN(5) {
			case 0:
				cid, d, u := changes.Next()
				tr.SetDemandUsage(cid, d, u)
				tr.SetPendingJobCount(cid, int64(r.IntN(5)))
				last = cid
			case 1:
				tr.SetPendingJobCount(id, int64(r.IntN(5)))
			case 2:
				var l tree.NodeLimits
				l.BestAllocationShare = resource.Ones().Mul(r.Float64())
				l.HasBestAllocationShare = r.IntN(2) == 0
				tr.SetNodeLimits(id, l)
			case 3:
				w := tree.Some(float64(1 + r.IntN(3)))
				if r.IntN(2) == 0 {
					w = tree.OptFloat{}
				}
				if err := tr.SetOperationWeight(id, w); err != nil {
					t.Fatal(err)
				}
			case 4:
				var l tree.PartialVec
				if r.IntN(2) == 0 {
					l.Set[resource.CPU], l.V[resource.CPU] = true, resource.Cores(float64(1+r.IntN(100)))
				}
				if err := tr.SetOperationLimits(id, l); err != nil {
					t.Fatal(err)
				}
			}
		}
		now = now.Add(200 * clock.Millisecond)
		for i, u := range us {
			if step%every[i] != 0 {
				continue
			}
			u.Update(total, now)
			full := fulls[i]
			full.Invalidate()
			full.Update(total, now)
			tr.Walk(func(id tree.ID) {
				if !reflect.DeepEqual(*u.Attributes(id), *full.Attributes(id)) {
					t.Fatalf("step %d, updated every %d: %s: attributes differ:\n%+v\n%+v", step, every[i], tr.Name(id), *u.Attributes(id), *full.Attributes(id))
				}
			})
		}
	}
}
