package schedule_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/coretest/scenario"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// runScript builds a cluster from scenario commands (core/coretest/scenario),
// one a line, and fails the test on a broken script.
func runScript(t *testing.T, text string) *scenario.Cluster {
	t.Helper()
	s, err := coretest.ParseScript(t.Name(), strings.ReplaceAll(text, "\n", "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := scenario.New()
	if err := s.Run(c.Exec); err != nil {
		t.Fatal(err)
	}
	return c
}

// runMore runs more scenario commands, one a line, on the cluster.
func runMore(t *testing.T, c *scenario.Cluster, text string) {
	t.Helper()
	s, err := coretest.ParseScript(t.Name(), strings.ReplaceAll(text, "\n", "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(c.Exec); err != nil {
		t.Fatal(err)
	}
}

// orchidBytes encodes everything the orchid shows of the scheduler: every
// pool, operation and node view, the published snapshot's time and total,
// and the config.
func orchidBytes(t *testing.T, s *schedule.Scheduler, nodes ...string) []byte {
	t.Helper()
	var ns []schedule.NodeInfo
	for _, n := range nodes {
		info, ok := s.Node(n)
		if !ok {
			t.Fatalf("no node %s", n)
		}
		ns = append(ns, info)
	}
	snap := s.Snapshot()
	b, err := json.Marshal(struct {
		Pools      []schedule.PoolInfo
		Operations []schedule.OperationInfo
		Nodes      []schedule.NodeInfo
		Time       clock.Time
		Config     schedule.Config
	}{s.Pools(nil), s.Operations(nil), ns, snap.Time, s.Config()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const whatIfScript = `
node count=4 slots=10 cpu=10 memory=100G
pool name=team
pool name=a parent=team weight=1
pool name=b parent=team weight=1
pool name=other
pool name=queue max_running_operation_count=1
pool name=burst integral_type=burst burst_guarantee=cpu:10,slots:10 resource_flow=cpu:5,slots:5
op id=oa pool=a jobs=1000
op id=ob pool=b jobs=1000
op id=oo pool=other jobs=10
op id=q1 pool=queue jobs=5
op id=q2 pool=queue jobs=5
op id=ib pool=burst jobs=2
update t=1
heartbeat
run until=20 dt=1 quiet
`

func TestWhatIfWeightChange(t *testing.T) {
	c := runScript(t, whatIfScript)
	s := c.Scheduler()
	nodes := []string{"n000", "n001", "n002", "n003"}
	live := orchidBytes(t, s, nodes...)

	// A what-if without changes answers after = before.
	for _, pc := range s.WhatIf().Result() {
		if !reflect.DeepEqual(pc.Before, pc.After) {
			t.Errorf("no change, pool %s: before\n%+v\nafter\n%+v", pc.Name, pc.Before, pc.After)
		}
	}

	w := s.WhatIf()
	a, err := w.Pool("a")
	if err != nil {
		t.Fatal(err)
	}
	cfg := a.Config
	cfg.Weight = tree.Some(3)
	change := tree.Mutation{Kind: tree.SetPool, Name: "a", Pool: cfg}
	if _, err := w.ApplyPools(change); err != nil {
		t.Fatal(err)
	}
	res := w.Result()
	if got := orchidBytes(t, s, nodes...); string(got) != string(live) {
		t.Fatalf("the what-if changed the live state:\nbefore %s\nafter  %s", live, got)
	}
	byName := map[string]schedule.PoolChange{}
	for _, pc := range res {
		byName[pc.Name] = pc
	}
	fa, fb := byName["a"].After.Attrs.FairShare.Total, byName["b"].After.Attrs.FairShare.Total
	if r := fa.MaxComponent() / fb.MaxComponent(); r < 2.999 || r > 3.001 {
		t.Errorf("after the weight change a's fair share %v is not 3 times b's %v", fa, fb)
	}
	if ba, bb := byName["a"].Before.Attrs.FairShare.Total, byName["b"].Before.Attrs.FairShare.Total; ba.MaxComponent() != bb.MaxComponent() {
		t.Errorf("before the change a's fair share %v differs from b's %v", ba, bb)
	}

	// The real change, then an update at the same time: every pool's view
	// is what the what-if answered.
	if _, err := s.ApplyPools(change); err != nil {
		t.Fatal(err)
	}
	s.UpdateFairShare(clock.FromSeconds(c.Now()))
	for _, p := range s.Pools(nil) {
		pc, ok := byName[p.Name]
		if !ok {
			t.Fatalf("pool %s missing from the what-if", p.Name)
		}
		if !reflect.DeepEqual(*pc.After, p) {
			t.Errorf("pool %s: what-if answered\n%+v\nthe real change gives\n%+v", p.Name, *pc.After, p)
		}
	}
}

// A refused change answers the error the real mutation answers, and
// leaves the sandbox as it was; later changes still apply.
func TestWhatIfRefused(t *testing.T) {
	c := runScript(t, whatIfScript)
	s := c.Scheduler()
	live := orchidBytes(t, s)
	refused := []tree.Mutation{
		{Kind: tree.RemovePool, Name: "a"},                                            // not empty
		{Kind: tree.SetPool, Name: "team", Parent: "a"},                               // a cycle
		{Kind: tree.AddPool, Name: "a"},                                               // exists
		{Kind: tree.SetPool, Name: "nosuch"},                                          // unknown
		{Kind: tree.AddPool, Name: "bad name"},                                        // invalid name
		{Kind: tree.AddOperation, Name: "x"},                                          // not a pool mutation
		{Kind: tree.SetPool, Name: "b", Pool: tree.PoolConfig{Weight: tree.Some(-1)}}, // invalid weight
	}
	w := s.WhatIf()
	for _, m := range refused {
		wi, werr := w.ApplyPools(m)
		ri, rerr := s.ApplyPools(m)
		if werr == nil || rerr == nil {
			t.Fatalf("%+v: what-if error %v, real error %v: want both refused", m, werr, rerr)
		}
		var we, re *apierr.Error
		if !asAPI(werr, &we) || !asAPI(rerr, &re) || *we != *re || wi != ri {
			t.Errorf("%+v: what-if answers %d %#v, the real mutation %d %#v", m, wi, werr, ri, rerr)
		}
	}
	cfg := w.Config()
	cfg.FairShareStarvationTolerance = 2
	werr, rerr := w.SetConfig(cfg), s.SetConfig(cfg)
	var we, re *apierr.Error
	if !asAPI(werr, &we) || !asAPI(rerr, &re) || *we != *re {
		t.Errorf("config: what-if answers %#v, the real change %#v", werr, rerr)
	}
	if got := orchidBytes(t, s); string(got) != string(live) {
		t.Fatalf("refused changes changed the live state")
	}
	for _, pc := range w.Result() {
		if !reflect.DeepEqual(pc.Before, pc.After) {
			t.Errorf("after refused changes, pool %s changed:\n%+v\n%+v", pc.Name, pc.Before, pc.After)
		}
	}
}

// Changes that start pending operations, create, move and remove pools
// and change the config preview what the real changes then produce.
func TestWhatIfSequence(t *testing.T) {
	c := runScript(t, whatIfScript)
	s := c.Scheduler()
	live := orchidBytes(t, s)
	w := s.WhatIf()
	q, _ := w.Pool("queue")
	qc := q.Config
	qc.MaxRunningOperationCount = tree.SomeInt(2)
	changes := [][]tree.Mutation{
		{{Kind: tree.SetPool, Name: "queue", Pool: qc}},
		{{Kind: tree.AddPool, Name: "fresh", Parent: "team", Pool: tree.PoolConfig{Weight: tree.Some(2)}}},
		{{Kind: tree.SetPool, Name: "other", Parent: "team"}},
		{{Kind: tree.RemovePool, Name: "fresh"}},
	}
	for _, ms := range changes {
		if _, err := w.ApplyPools(ms...); err != nil {
			t.Fatal(err)
		}
	}
	cfg := w.Config()
	cfg.FairShareStarvationTolerance = 0.5
	if err := w.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	res := w.Result()
	if got := orchidBytes(t, s); string(got) != string(live) {
		t.Fatalf("the what-if changed the live state")
	}
	for _, ms := range changes {
		if _, err := s.ApplyPools(ms...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	s.UpdateFairShare(clock.FromSeconds(c.Now()))
	pools := s.Pools(nil)
	var after []schedule.PoolInfo
	for _, pc := range res {
		if pc.After != nil {
			after = append(after, *pc.After)
		}
	}
	byName := map[string]schedule.PoolInfo{}
	for _, p := range after {
		byName[p.Name] = p
	}
	if len(after) != len(pools) {
		t.Fatalf("the what-if has %d pools after, the real changes %d", len(after), len(pools))
	}
	for _, p := range pools {
		if !reflect.DeepEqual(byName[p.Name], p) {
			t.Errorf("pool %s: what-if answered\n%+v\nthe real changes give\n%+v", p.Name, byName[p.Name], p)
		}
	}
	if q := byName["queue"]; q.RunningOperationCount != 2 || q.PendingOperationCount != 0 {
		t.Errorf("queue after raising max_running_operation_count: %d running, %d pending; want 2, 0", q.RunningOperationCount, q.PendingOperationCount)
	}
	for _, pc := range res {
		if pc.Name == "fresh" {
			t.Errorf("a removed new pool is in the answer: %+v", pc)
		}
	}
}

func asAPI(err error, dst **apierr.Error) bool {
	e, ok := err.(*apierr.Error)
	*dst = e
	return ok
}

// An operation a heartbeat finished is retired by the next real pool
// change before it applies (ApplyPools): a what-if retires it in its copy
// too, so removing its emptied pool previews as the real removal goes.
func TestWhatIfRetiresFinished(t *testing.T) {
	c := runScript(t, `
pool name=x
node count=1 slots=10 cpu=10 memory=100G
op id=o pool=x jobs=1 duration=1
update t=0
heartbeat t=0
heartbeat t=2
heartbeat t=3
`)
	s := c.Scheduler()
	if info, err := s.Operation("o"); err != nil || !info.State.Final() {
		t.Fatalf("o: %+v, %v: want it finished by the heartbeats", info, err)
	}
	live := orchidBytes(t, s)
	w := s.WhatIf()
	if _, err := w.ApplyPools(tree.Mutation{Kind: tree.RemovePool, Name: "x"}); err != nil {
		t.Fatalf("what-if of removing x: %v", err)
	}
	var removed bool
	for _, pc := range w.Result() {
		removed = removed || pc.Name == "x" && pc.Before != nil && pc.After == nil
	}
	if !removed {
		t.Errorf("the what-if does not answer x removed")
	}
	if got := orchidBytes(t, s); string(got) != string(live) {
		t.Fatalf("the what-if changed the live state")
	}
	if _, err := s.ApplyPools(tree.Mutation{Kind: tree.RemovePool, Name: "x"}); err != nil {
		t.Fatalf("the real removal of x: %v", err)
	}
}
