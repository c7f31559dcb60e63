package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// scanBest is the reference search the index replaces: the first operation
// in the snapshot (tree pre-order) with the least satisfaction among those
// that may be scheduled, whose filter and whose pools' filters match the
// node's tags and that have a pending job fitting free.
func scanBest(s *Scheduler, snap *Snapshot, free resource.Vec, tags []string, ignoreTags bool) (int32, int) {
	best, bestTask, bestSat := int32(-1), -1, 0.0
	for i := range snap.ops {
		v := &snap.ops[i]
		o := v.op
		if o.State() != StateRunning || o.graceful() && !v.belowFairShare || !ignoreTags && !pathMatches(s, o, tags) {
			continue
		}
		t, _ := o.fittingTask(free)
		if t < 0 {
			continue
		}
		if sat := satisfaction(v, snap.Total); best < 0 || sat < bestSat {
			best, bestTask, bestSat = int32(i), t, sat
		}
	}
	return best, bestTask
}

// pathMatches evaluates an operation's filter and its pools' on a node's
// tags with tagfilter's own evaluation, independently of the classes.
func pathMatches(s *Scheduler, o *operation, tags []string) bool {
	if !o.spec.SchedulingTagFilter.Match(tags) {
		return false
	}
	for p := s.tree.Parent(o.treeID); p != tree.None; p = s.tree.Parent(p) {
		if !s.tree.Pool(p).SchedulingTagFilter.Match(tags) {
			return false
		}
	}
	return true
}

// TestOpIndexMatchesScan drives a one-shard scheduler (every usage change
// is local, so the index must be exact) through random operations, pools,
// heartbeats, completions, failures and updates, and compares the index's
// choice with a scan of the snapshot for random free vectors. Pools and
// operations have random scheduling tag filters and nodes random tags.
func TestOpIndexMatchesScan(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			cfg := DefaultConfig()
			cfg.Shards = 1
			s := New(tree.New(tree.PoolConfig{}), cfg)
			nodes := make([]struct {
				hb    NodeHeartbeat // its name, limits and tags
				agent coretest.Node[uint64, struct{}]
			}, 1+r.IntN(5))
			if _, err := s.ApplyPools(
				tree.Mutation{Kind: tree.AddPool, Name: "p", Pool: tree.PoolConfig{Weight: tree.Some(1 + float64(r.IntN(3)))}},
				tree.Mutation{Kind: tree.AddPool, Name: "q", Pool: tree.PoolConfig{Mode: tree.ModeFIFO}},
				tree.Mutation{Kind: tree.AddPool, Name: "lim", Parent: "p", Pool: tree.PoolConfig{ResourceLimits: tree.PartialVec{V: resource.Vec{resource.CPU: cores(10)}, Set: [resource.Count]bool{resource.CPU: true}}}},
				tree.Mutation{Kind: tree.AddPool, Name: "gpu", Pool: tree.PoolConfig{SchedulingTagFilter: randomFilter(r)}},
				tree.Mutation{Kind: tree.AddPool, Name: "gpu2", Parent: "gpu", Pool: tree.PoolConfig{SchedulingTagFilter: randomFilter(r)}}); err != nil {
				t.Fatal(err)
			}
			now := 0.0
			durations := map[string][]float64{}
			beat := func(i int) {
				agentBeat(t, s, clock.FromSeconds(now), nodes[i].hb, &nodes[i].agent, durations)
			}
			tagNames := []string{"a", "b", "c"}
			for i := range nodes {
				nodes[i].hb = NodeHeartbeat{Node: fmt.Sprintf("n%03d", i), Limits: resource.Vec{resource.UserSlots: 20, resource.CPU: cores(16), resource.Memory: 64 * gib}}
				beat(i) // the node registers
			}
			for i := range nodes {
				nodes[i].hb.Limits[resource.CPU] = cores(float64(4 + r.IntN(16)))
				for _, tg := range tagNames {
					if r.IntN(2) == 0 {
						nodes[i].hb.Tags = append(nodes[i].hb.Tags, tg)
					}
				}
			}
			pools := []string{"", "p", "q", "lim", "gpu", "gpu2"}
			for i := range 6 + r.IntN(20) {
				var ts []TaskSpec
				for range 1 + r.IntN(3) {
					ts = append(ts, TaskSpec{JobCount: 1 + int64(r.IntN(30)), Resources: job(float64(1+r.IntN(6)), int64(1+r.IntN(8))), DurationHintS: float64(r.IntN(6))})
				}
				mode := PreemptionNormal
				if r.IntN(5) == 0 {
					mode = PreemptionGraceful
				}
				var flt tagfilter.Filter
				if r.IntN(3) == 0 {
					flt = randomFilter(r)
				}
				id, _, err := s.StartOperation(clock.FromSeconds(now), OperationSpec{ID: fmt.Sprintf("o%d", i), Pool: pools[r.IntN(len(pools))], Weight: tree.Some(1 + float64(r.IntN(4))), PreemptionMode: mode, Tasks: ts, SchedulingTagFilter: flt})
				if err != nil {
					t.Fatal(err)
				}
				for _, tk := range ts {
					durations[id] = append(durations[id], tk.DurationHintS)
				}
			}
			compared, filtered := 0, 0
			for step := range 300 {
				switch r.IntN(6) {
				case 0:
					now++
					s.UpdateFairShare(clock.FromSeconds(now))
				case 1:
					// A failed job returns to pending.
					a := &nodes[r.IntN(len(nodes))].agent
					if a.Len() > 0 {
						a.Finish(a.Allocs()[r.IntN(a.Len())].ID, coretest.AllocFailed)
					}
				default:
					now += 0.5
					beat(r.IntN(len(nodes)))
				}
				snap := s.Snapshot()
				if snap.Total.IsZero() || r.IntN(2) == 0 {
					// Without a search here, the next steps' heartbeats
					// may change operations while the index is behind.
					continue
				}
				sh := &s.shards[0]
				sh.mu.Lock()
				h := &sh.ops
				h.sync(snap)
				for range 4 {
					nodeIdx := r.IntN(len(nodes))
					sh.mu.Unlock()
					name := nodes[nodeIdx].hb.Node
					sh, hash := s.shardAndHash(name)
					n := sh.nodes.get(name, hash)
					sh.mu.Lock()
					var free resource.Vec
					free[resource.UserSlots] = int64(r.IntN(4))
					free[resource.CPU] = cores(float64(r.IntN(12)))
					free[resource.Memory] = int64(r.IntN(10)) * gib
					gi, gt := h.best(free, n)
					wi, wt := scanBest(s, snap, free, n.tags, false) // the tags of its last heartbeat
					if ui, _ := scanBest(s, snap, free, nil, true); ui != wi {
						filtered++
					}
					h.restore()
					if gi != wi || gt != wt {
						sh.mu.Unlock()
						t.Fatalf("step %d, free %v: index chose %d/%d, scan %d/%d", step, free, gi, gt, wi, wt)
					}
					if wi >= 0 {
						compared++
					}
				}
				sh.mu.Unlock()
			}
			if compared == 0 {
				t.Fatal("no search found an operation")
			}
			t.Logf("%d searches found an operation, %d chose another one than without the filters", compared, filtered)
		})
	}
}

// randomFilter is a small random formula over the tags a, b and c, or none.
func randomFilter(r *rand.Rand) tagfilter.Filter {
	return tagfilter.MustParse([]string{"", "a", "!a", "b", "a | b", "a & !c", "(b | c) & !a", "c"}[r.IntN(8)])
}

// TestCPUBucketOrder: need buckets are ordered as the cpu they hold, so
// that a search may skip every bucket above the free cpu's.
func TestCPUBucketOrder(t *testing.T) {
	prev := -1
	check := func(c uint32) {
		t.Helper()
		b := cpuBucket(c)
		if b < prev || b >= needBuckets {
			t.Fatalf("cpu %d: bucket %d after %d (%d buckets)", c, b, prev, needBuckets)
		}
		prev = b
	}
	for c := range uint32(1 << 16) {
		check(c)
	}
	for c := uint32(1 << 16); c < 1<<31; c += c >> 7 {
		check(c)
	}
	check(1<<32 - 1)
}
