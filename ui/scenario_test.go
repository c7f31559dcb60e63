package ui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/facade/facadetest"
)

// demoConfig is the known tree of the browser tests: examples/serve.json's
// three pools (production: a strong guarantee and a burst integral
// guarantee; research: weight 2 and a relaxed integral guarantee; adhoc:
// fifo with a cpu limit) with child pools under research and production.
const demoConfig = `{
  "config": {
    "main_resource": "cpu",
    "integral_guarantees": {"smooth_period_s": 60, "pool_capacity_saturation_period_s": 86400, "relaxed_share_multiplier_limit": 3},
    "fair_share_update_period_s": 0.2,
    "node_heartbeat_timeout_s": 60,
    "fair_share_starvation_timeout_s": 30,
    "preemptive_scheduling_backoff_s": 5,
    "max_operation_count": 50000,
    "max_running_operation_count": 2000
  },
  "pools": [
    {"name": "production", "strong_guarantee_resources": {"cpu": 100, "memory": 429496729600},
     "integral_guarantees": {"guarantee_type": "burst", "resource_flow": {"cpu": 40}, "burst_guarantee_resources": {"cpu": 120}}},
    {"name": "etl", "parent": "production"},
    {"name": "research", "weight": 2, "integral_guarantees": {"guarantee_type": "relaxed", "resource_flow": {"cpu": 60}}},
    {"name": "vision", "parent": "research", "weight": 2},
    {"name": "nlp", "parent": "research"},
    {"name": "adhoc", "mode": "fifo", "fifo_sort_parameters": ["weight", "start_time"], "resource_limits": {"cpu": 40},
     "max_running_operation_count": 5, "enable_lightweight_operations": true}
  ]
}`

// demoPools are the pools of demoConfig with the root, in the orchid's
// order of parents before children.
var demoPools = []string{"<Root>", "production", "etl", "research", "vision", "nlp", "adhoc"}

// simNode is a node of the scenario: a coretest.Node agent that runs what
// it is told to start until stopped and stops a preempted allocation at
// once (reported aborted in its next heartbeat).
type simNode struct {
	id     string
	tags   []string
	limits client.Resources
	agent  coretest.Node[string, struct{}]
}

// cluster is the running scenario: the server, a client and its nodes.
type cluster struct {
	t     testing.TB
	srv   *facadetest.Server
	c     *client.Client
	nodes []*simNode
	// preempted counts the preemptions the nodes were told of.
	preempted int
}

func newCluster(t testing.TB, config string) *cluster {
	t.Helper()
	srv := facadetest.Start(t, config)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, srv: srv, c: c}
}

func (cl *cluster) addNodes(n int, cpu float64, memGiB int64, tags func(i int) []string) {
	for i := range n {
		cl.nodes = append(cl.nodes, &simNode{id: fmt.Sprintf("node-%02d", len(cl.nodes)+1), tags: tags(i),
			limits: client.Resources{UserSlots: int64(cpu), CPU: cpu, Memory: memGiB << 30}})
	}
}

// heartbeats sends one heartbeat of every node and follows the answers.
func (cl *cluster) heartbeats() {
	cl.t.Helper()
	ctx := context.Background()
	now := cl.srv.Now()
	for _, n := range cl.nodes {
		hb := client.Heartbeat{ResourceLimits: n.limits, Tags: n.tags}
		n.agent.Advance(now, nil)
		for _, a := range n.agent.Allocs() {
			state := "running"
			if a.State == coretest.AllocAborted {
				state = "aborted"
			}
			hb.Allocations = append(hb.Allocations, client.AllocationReport{ID: a.ID, State: state})
		}
		r, err := cl.c.Heartbeat(ctx, n.id, hb)
		if err != nil {
			cl.t.Fatalf("heartbeat of %s: %v", n.id, err)
		}
		n.agent.Delivered(nil)
		for _, a := range r.AllocationsToStart {
			n.agent.Start(a.ID, clock.Never, struct{}{})
		}
		for _, a := range r.AllocationsToAbort {
			n.agent.Abort(a.ID)
		}
		for _, a := range r.AllocationsToPreempt {
			cl.preempted++
			n.agent.Preempt(now, a.ID)
		}
	}
}

// step lets sec seconds pass on the server's clock, runs a fair-share
// update and a round of heartbeats.
func (cl *cluster) step(sec float64) {
	cl.srv.Advance(clock.DurationFromSeconds(sec))
	cl.srv.UpdateFairShare()
	cl.heartbeats()
}

func (cl *cluster) start(spec client.OperationSpec) {
	cl.t.Helper()
	if _, err := cl.c.StartOperation(context.Background(), spec); err != nil {
		cl.t.Fatalf("start %s: %v", spec.ID, err)
	}
}

func job(jobs int64, cpu float64, memGiB int64) []client.Task {
	return []client.Task{{Name: "worker", JobCount: jobs, Resources: client.Resources{UserSlots: 1, CPU: cpu, Memory: memGiB << 30}}}
}

// startDemo builds the known state of the browser tests on demoConfig:
// four nodes of 32 cpu, research's sweep filling the cluster, a notebook
// in adhoc, then production's nightly-etl arriving: production goes below
// its fair share, starves after the 30 s timeout and preempts sweep's
// allocations (reason "… (starving)"). It stops right after the first
// preemptions, with a fresh fair-share update, so that production is
// starving in the orchid the page shows.
func startDemo(t testing.TB) *cluster {
	t.Helper()
	cl := newCluster(t, demoConfig)
	cl.addNodes(4, 32, 128, func(i int) []string {
		return [][]string{{"ssd", "rack-1"}, {"ssd", "rack-1"}, {"rack-2"}, {"gpu", "rack-2"}}[i]
	})
	cl.step(1)
	cl.start(client.OperationSpec{ID: "sweep", Pool: "nlp", Type: "vanilla", Tasks: job(400, 1, 2)})
	cl.start(client.OperationSpec{ID: "train-resnet", Pool: "vision", Type: "vanilla", Tasks: job(20, 2, 8)})
	cl.start(client.OperationSpec{ID: "notebook", Pool: "adhoc", Type: "vanilla", Tasks: job(4, 2, 4)})
	for range 3 {
		cl.step(1)
	}
	cl.start(client.OperationSpec{ID: "nightly-etl", Pool: "etl", Type: "map_reduce",
		Tasks: []client.Task{{Name: "map", JobCount: 80, Resources: client.Resources{UserSlots: 1, CPU: 1, Memory: 4 << 30}, DurationHintS: 600}}})
	for i := 0; cl.preempted == 0; i++ {
		if i == 120 {
			t.Fatal("no preemption after 120 s of virtual time")
		}
		cl.step(1)
	}
	cl.srv.Advance(clock.Second)
	cl.srv.UpdateFairShare()
	p, err := cl.c.PoolOrchid(context.Background(), "production")
	if err != nil || p.StarvationStatus == "non_starving" {
		t.Fatalf("production is not starving after the scenario: %+v, %v", p, err)
	}
	return cl
}

// pools returns the orchid of every pool by name.
func (cl *cluster) pools() map[string]client.PoolOrchid {
	cl.t.Helper()
	ps, err := cl.c.PoolOrchids(context.Background())
	if err != nil {
		cl.t.Fatal(err)
	}
	out := map[string]client.PoolOrchid{}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

// share returns a Share's value for a resource name.
func share(s client.Share, res string) float64 {
	switch strings.ToLower(res) {
	case "user_slots":
		return s.UserSlots
	case "cpu":
		return s.CPU
	case "gpu":
		return s.GPU
	case "memory":
		return s.Memory
	case "network":
		return s.Network
	}
	panic("unknown resource " + res)
}
