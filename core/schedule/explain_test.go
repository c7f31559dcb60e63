package schedule_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest/scenario"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
)

// TestExplainJSON pins the JSON of explanations (the answer of the
// explain endpoints, docs/api.md) for the situations docs/why-waiting.md
// walks through: the files under testdata/explain are what
// encoding/json makes of schedule.Explanation. Rewrite them with
//
//	go test ./core/schedule/ -run TestExplainJSON -rewrite
func TestExplainJSON(t *testing.T) {
	c := runScript(t, `
pool name=research max_running_operation_count=2
pool name=prod allow_normal_preemption=false
node count=2 slots=10 cpu=10 memory=100G
op id=serving pool=prod jobs=1000
update t=0
heartbeat
op id=train-1 pool=research jobs=1000 t=1
op id=train-2 pool=research jobs=1000
op id=train-3 pool=research jobs=1000
op id=etl pool=research jobs=1000
run until=45 dt=1 quiet
`)
	s := c.Scheduler()
	now := clock.FromSeconds(c.Now())
	// docs/why-waiting.md's what-if: research's weight 1 → 3 takes its
	// fair share from 0.5 to 0.75, prod's from 0.5 to 0.25.
	w := s.WhatIf()
	r, _ := w.Pool("research")
	rc := r.Config
	rc.Weight = tree.Some(3)
	if _, err := w.ApplyPools(tree.Mutation{Kind: tree.SetPool, Name: "research", Pool: rc}); err != nil {
		t.Fatal(err)
	}
	for _, pc := range w.Result() {
		t.Logf("what-if: %s fair share %v → %v", pc.Name, pc.Before.Attrs.FairShare.Total, pc.After.Attrs.FairShare.Total)
		b, a := pc.Before.Attrs.FairShare.Total.MaxComponent(), pc.After.Attrs.FairShare.Total.MaxComponent()
		want := map[string][2]float64{"research": {0.5, 0.75}, "prod": {0.5, 0.25}}[pc.Name]
		if want != [2]float64{} && (math.Abs(b-want[0]) > 1e-9 || math.Abs(a-want[1]) > 1e-9) {
			t.Errorf("what-if of research's weight 3: %s %v → %v, want %v", pc.Name, b, a, want)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "why-waiting.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		get  func() (schedule.Explanation, error)
	}{
		{"pending.json", func() (schedule.Explanation, error) { return s.ExplainOperation("etl", now, nil) }},
		{"starving.json", func() (schedule.Explanation, error) { return s.ExplainOperation("train-1", now, nil) }},
		{"pool.json", func() (schedule.Explanation, error) { return s.ExplainPool("research", now) }},
		{"preempted.json", func() (schedule.Explanation, error) {
			// prod allows normal preemption: train-1 preempts serving's
			// preemptible allocations; serving's explanation lists them
			// with the preemptions the heartbeats decided (the log).
			more := c.Now()
			runMore(t, c, "pool name=prod allow_normal_preemption=true\nrun until="+strconv.FormatFloat(more+3, 'g', -1, 64)+" dt=1 quiet\n")
			var recent []schedule.Preemption
			for _, ev := range c.Events() {
				if ev.Kind == scenario.EventPreempt && ev.Operation == "serving" {
					recent = append(recent, schedule.Preemption{Time: clock.FromSeconds(ev.T), Node: ev.Node, Decision: ev.Preempt})
				}
			}
			if len(recent) == 0 {
				t.Fatal("nothing was preempted for train-1")
			}
			return s.ExplainOperation("serving", clock.FromSeconds(c.Now()), recent[:1])
		}},
	} {
		e, err := tc.get()
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", "explain", tc.file)
		if *rewrite {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs (rewrite with -rewrite and review the diff):\n%s", path, got)
		}
		// docs/why-waiting.md walks through these answers: it must show
		// them as the scheduler gives them.
		var shown []byte
		switch tc.file {
		case "pending.json", "starving.json":
			shown = got
		case "preempted.json":
			shown, _ = json.MarshalIndent(e.Findings[len(e.Findings)-1], "", "  ")
		}
		if shown != nil && !strings.Contains(string(doc), strings.TrimSpace(string(shown))) {
			t.Errorf("docs/why-waiting.md does not show the answer of %s as it is now:\n%s", tc.file, shown)
		}
	}
}

// Explanations, what-ifs and history samples read the scheduler while
// heartbeats (which start, complete and preempt allocations) and updates
// run: under -race this checks that they read only what their locks
// guard.
func TestExplainConcurrent(t *testing.T) {
	c := runScript(t, `
pool name=a
pool name=b allow_normal_preemption=false
node count=2 slots=10 cpu=10 memory=100G
op id=ob pool=b jobs=1000 duration=3
update t=0
heartbeat
op id=oa pool=a jobs=1000 duration=2 t=1
`)
	s := c.Scheduler()
	done := make(chan struct{})
	go func() {
		defer close(done)
		limits := resource.Vec{resource.UserSlots: 10, resource.CPU: resource.Cores(10), resource.Memory: 100 << 30}
		var resp schedule.Response
		hb := &schedule.NodeHeartbeat{Node: "extra", Limits: limits}
		for i := range 300 {
			now := clock.FromSeconds(2 + float64(i)*0.5)
			resp.Reset()
			if err := s.Heartbeat(now, hb, &resp); err != nil {
				t.Error(err)
				return
			}
			hb.Allocations = hb.Allocations[:0]
			for _, st := range resp.Start {
				hb.Allocations = append(hb.Allocations, schedule.AllocationReport{ID: st.Allocation, State: schedule.AllocCompleted})
			}
			if i%4 == 0 {
				s.UpdateFairShare(now)
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		now := clock.FromSeconds(2 + float64(i))
		for _, id := range []string{"oa", "ob"} {
			if _, err := s.ExplainOperation(id, now, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.ExplainPool("a", now); err != nil {
			t.Fatal(err)
		}
		w := s.WhatIf()
		if _, err := w.ApplyPools(tree.Mutation{Kind: tree.SetPool, Name: "a", Pool: tree.PoolConfig{Weight: tree.Some(3)}}); err != nil {
			t.Fatal(err)
		}
		w.Result()
		s.PoolSamples(nil)
	}
}
