package schedule

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// TestConcurrentHeartbeatsKeepInvariants runs heartbeats of many nodes in
// parallel goroutines together with operation starts, aborts and fair-share
// updates, then checks that every operation's usage equals the sum of its
// allocations, that no node is overcommitted, and that pool limits hold.
func TestConcurrentHeartbeatsKeepInvariants(t *testing.T) {
	const (
		nodes   = 32
		workers = 4
		rounds  = 60
	)
	cfg := DefaultConfig()
	cfg.Shards = 8
	s := New(tree.New(tree.PoolConfig{}), cfg)
	limit := resource.Vec{resource.UserSlots: 1000, resource.CPU: cores(40), resource.Memory: 1000 * gib}
	if _, err := s.ApplyPools(
		tree.Mutation{Kind: tree.AddPool, Name: "a", Pool: tree.PoolConfig{ResourceLimits: tree.Full(limit)}},
		tree.Mutation{Kind: tree.AddPool, Name: "b", Pool: tree.PoolConfig{Weight: tree.Some(2)}},
	); err != nil {
		t.Fatal(err)
	}
	node := resource.Vec{resource.UserSlots: 16, resource.CPU: cores(16), resource.Memory: 64 * gib}
	var ops []string
	for i := range 8 {
		pool := []string{"a", "b", ""}[i%3]
		id, _, err := s.StartOperation(0, OperationSpec{Pool: pool, Tasks: []TaskSpec{{JobCount: 200, Resources: job(float64(1+i%3), 1)}}})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, id)
	}
	// Register the nodes, then publish a first snapshot.
	var resp Response
	for i := range nodes {
		if err := s.Heartbeat(0, &NodeHeartbeat{Node: fmt.Sprintf("n%d", i), Limits: node}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	s.UpdateFairShare(0)

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			held := make(map[int][]AllocationReport)
			var resp Response
			for round := range rounds {
				for i := w; i < nodes; i += workers {
					reports := held[i]
					for j := range reports {
						if r.IntN(4) == 0 {
							reports[j].State = AllocCompleted
						}
					}
					resp.Reset()
					now := float64(round)
					if err := s.Heartbeat(now, &NodeHeartbeat{Node: fmt.Sprintf("n%d", i), Limits: node, Allocations: reports}, &resp); err != nil {
						t.Error(err)
						return
					}
					kept := reports[:0]
					for _, a := range reports {
						aborted := false
						for _, ab := range resp.Abort {
							aborted = aborted || ab.Allocation == a.ID
						}
						if a.State == AllocRunning && !aborted {
							kept = append(kept, a)
						}
					}
					for _, st := range resp.Start {
						kept = append(kept, AllocationReport{ID: st.Allocation, State: AllocRunning})
					}
					held[i] = kept
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := range rounds {
			s.UpdateFairShare(float64(round))
			switch round {
			case 10:
				s.AbortOperation(ops[0])
			case 20:
				s.StartOperation(float64(round), OperationSpec{Pool: "b", Tasks: []TaskSpec{{JobCount: 50, Resources: job(2, 2)}}})
			}
		}
	}()
	wg.Wait()

	// Invariants.
	sum := map[string]resource.Vec{}
	for i := range nodes {
		info, ok := s.Node(fmt.Sprintf("n%d", i))
		if !ok {
			t.Fatalf("node n%d lost", i)
		}
		var u resource.Vec
		for _, a := range info.Allocations {
			u = u.Add(a.Resources)
			sum[a.Operation] = sum[a.Operation].Add(a.Resources)
		}
		if u != info.Usage || !info.Limits.Dominates(u) {
			t.Errorf("node %s: usage %v, allocations %v, limits %v", info.Name, info.Usage, u, info.Limits)
		}
	}
	var poolA resource.Vec
	for _, info := range s.Operations(nil) {
		if info.Usage != sum[info.ID] {
			t.Errorf("operation %s: usage %v, its allocations %v", info.ID, info.Usage, sum[info.ID])
		}
		if info.Pool == "a" {
			poolA = poolA.Add(info.Usage)
		}
	}
	if !limit.Dominates(poolA) {
		t.Errorf("pool a uses %v over its limits %v", poolA, limit)
	}
	s.UpdateFairShare(rounds)
	for _, p := range s.Pools(nil) {
		running := int64(0)
		for _, info := range s.Operations(nil) {
			if (info.Pool == p.Name || p.Name == tree.RootName) && info.State == StateRunning {
				running++
			}
		}
		if p.RunningOperationCount != running {
			t.Errorf("pool %s: running count %d, want %d", p.Name, p.RunningOperationCount, running)
		}
	}
}
