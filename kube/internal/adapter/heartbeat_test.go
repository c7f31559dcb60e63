package adapter

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/podspec"
)

// loopAdapter is an adapter with the loop's state and no connections:
// enough for the parts of a round that only compute.
func loopAdapter(now time.Time) *Adapter {
	cfg := Config{Now: func() time.Time { return now }}
	cfg.defaults()
	return &Adapter{cfg: cfg, log: slog.Default(),
		ops: map[string]*opState{}, opByID: map[string]*opState{}, inflight: map[string]bound{},
		refused: map[string][]client.AllocationReport{}, held: map[string]*gang{}, waiting: map[string]*waitingStart{},
		preempting: map[string]*preemption{}, endedSent: map[string]bool{}}
}

// states writes a heartbeat's allocations as "id:state" in order.
func states(hb client.NodeHeartbeat) string {
	var out []string
	for _, a := range hb.Allocations {
		s := a.ID + ":" + a.State
		if a.OperationID == "" && a.State != client.AllocationRefused {
			s += "(no origin)"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestHeartbeats(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := loopAdapter(t0)
	running := boundPod("run", "op", 0, corev1.PodRunning, rl("cpu", "1"))
	starting := boundPod("start", "op", 0, corev1.PodPending, rl("cpu", "1"))
	done := boundPod("done", "op", 0, corev1.PodSucceeded, rl("cpu", "1"))
	failed := boundPod("failed", "op", 0, corev1.PodFailed, rl("cpu", "1"))
	reported := boundPod("reported", "op", 0, corev1.PodSucceeded, rl("cpu", "1"))
	pendingPod := testPod("pending", rl("cpu", "1"))
	other := testPod("other", rl("cpu", "2"), func(p *corev1.Pod) { p.Spec.SchedulerName = "x"; p.Spec.NodeName = "n1" })
	n1 := testNode("n1", rl("cpu", "8", "pods", "10"), map[string]string{"zone": "a"})
	n2 := testNode("n2", rl("cpu", "4", "pods", "10"), nil)
	n2.Spec.Unschedulable = true
	s := buildSnapshot("fairsched", podspec.BarePodsPod, []*corev1.Pod{running.pod, starting.pod, done.pod, failed.pod, reported.pod,
		pendingPod, other}, []*corev1.Node{n1, n2}, nil, slog.Default())
	a.cfg.NodeLabels = []string{"zone"}
	a.endedSent["a-reported"] = true
	a.endedSent["a-forgotten"] = true
	// A bind of pendingPod the informer has not shown yet, and one whose
	// pod is gone.
	a.inflight["a-inflight"] = bound{uid: string(pendingPod.UID), node: "n2",
		origin: podspec.Origin{AllocationID: "a-inflight", OperationID: "op"}}
	a.inflight["a-gone"] = bound{uid: "no-such-pod", node: "n1", origin: podspec.Origin{AllocationID: "a-gone"}}
	// A gang's grant held on n1; another gang's, held past the timeout.
	a.held["g"] = &gang{since: t0, grants: []grant{{node: "n1", start: client.AllocationStart{ID: "a-held",
		OperationID: "g"}}}}
	a.held["late"] = &gang{since: t0.Add(-2 * a.cfg.GangTimeout), grants: []grant{{node: "n2",
		start: client.AllocationStart{ID: "a-late", OperationID: "late"}}}}
	a.refuse("n1", "a-refused", "no pod fits")

	hbs := a.heartbeats(s)
	if len(hbs) != 2 || hbs[0].NodeID != "n1" || hbs[1].NodeID != "n2" {
		t.Fatalf("heartbeats of %d nodes, want n1 and n2", len(hbs))
	}
	// n1's allocations: bound pods (in the cache's order), then the held
	// grant, then the refused start.
	if got, want := states(hbs[0]), "a-run:running a-start:running a-done:completed a-failed:failed a-held:running a-refused:refused"; !sameSet(got, want) {
		t.Errorf("n1 allocations = %q, want %q", got, want)
	}
	if got, want := states(hbs[1]), "a-inflight:running a-late:refused"; !sameSet(got, want) {
		t.Errorf("n2 allocations = %q, want %q", got, want)
	}
	if hbs[0].ResourceLimits.CPU != 6 || hbs[0].ResourceLimits.UserSlots != 9 {
		t.Errorf("n1 limits = %+v, want 6 cpu and 9 slots (less the other scheduler's pod)", hbs[0].ResourceLimits)
	}
	if hbs[0].Schedulable != nil || hbs[1].Schedulable == nil || *hbs[1].Schedulable {
		t.Errorf("schedulable: n1 %v, n2 %v; want n1 left out (true) and n2 false (cordoned)", hbs[0].Schedulable,
			hbs[1].Schedulable)
	}
	if !slices.Equal(hbs[0].Tags, []string{"zone=a"}) {
		t.Errorf("n1 tags = %q", hbs[0].Tags)
	}
	if _, ok := a.inflight["a-gone"]; ok {
		t.Errorf("the bind of a pod that is gone is still in flight")
	}
	if a.endedSent["a-forgotten"] {
		t.Errorf("an ended allocation whose pod is gone is still remembered")
	}
	if _, ok := a.held["late"]; ok {
		t.Errorf("a gang past its timeout is still held")
	}
	for _, al := range hbs[0].Allocations {
		if al.ID == "a-run" && (al.OperationID != "op" || al.TaskIndex == nil || al.Resources == nil) {
			t.Errorf("a bound pod is reported without its origin: %+v", al)
		}
	}
}

func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func TestStarts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(name string, age time.Duration, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := testPod(name, rl("cpu", "1"), mutate...)
		p.Labels = map[string]string{podspec.LabelOperation: "job"}
		p.CreationTimestamp = metav1.NewTime(t0.Add(-age))
		return p
	}
	ssd := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }
	nodes := []*corev1.Node{testNode("plain", rl("cpu", "8"), nil),
		testNode("fast", rl("cpu", "8"), map[string]string{"disk": "ssd"})}
	start := func(id, node string) client.NodeHeartbeatResult {
		return client.NodeHeartbeatResult{NodeID: node, HeartbeatResponse: client.HeartbeatResponse{
			AllocationsToStart: []client.AllocationStart{{ID: id, OperationID: "k8s-ns.job", TaskIndex: 0}}}}
	}
	for _, tc := range []struct {
		name        string
		pods        []*corev1.Pod
		gang        bool
		answers     []client.NodeHeartbeatResult
		wantBound   map[string]string // allocation → pod
		wantRefused []string
		wantHeld    int
	}{
		{name: "the oldest pending pod first",
			pods:      []*corev1.Pod{mk("young", time.Second), mk("old", time.Minute), mk("mid", 10*time.Second)},
			answers:   []client.NodeHeartbeatResult{start("1", "plain"), start("2", "fast")},
			wantBound: map[string]string{"1": "old", "2": "mid"}},
		{name: "the oldest that fits the node",
			pods:      []*corev1.Pod{mk("old-ssd", time.Minute, ssd), mk("young", time.Second)},
			answers:   []client.NodeHeartbeatResult{start("1", "plain")},
			wantBound: map[string]string{"1": "young"}},
		{name: "starts after one passed over the head that does not fit",
			pods: []*corev1.Pod{mk("old-ssd", time.Hour, ssd), mk("mid", time.Minute), mk("young", time.Second),
				mk("new", 0)},
			answers: []client.NodeHeartbeatResult{start("1", "plain"), start("2", "plain"), start("3", "fast"),
				start("4", "fast")},
			wantBound: map[string]string{"1": "mid", "2": "young", "3": "old-ssd", "4": "new"}},
		{name: "no pod fits: refused",
			pods:        []*corev1.Pod{mk("ssd-only", time.Minute, ssd)},
			answers:     []client.NodeHeartbeatResult{start("1", "plain"), start("2", "fast")},
			wantBound:   map[string]string{"2": "ssd-only"},
			wantRefused: []string{"1"}},
		{name: "more starts than pods: the rest refused",
			pods:        []*corev1.Pod{mk("only", time.Minute)},
			answers:     []client.NodeHeartbeatResult{start("1", "plain"), start("2", "plain")},
			wantBound:   map[string]string{"1": "only"},
			wantRefused: []string{"2"}},
		{name: "a gang is held until whole",
			pods:     []*corev1.Pod{mk("g1", time.Minute), mk("g2", time.Minute), mk("g3", time.Minute)},
			gang:     true,
			answers:  []client.NodeHeartbeatResult{start("1", "plain"), start("2", "fast")},
			wantHeld: 2},
		{name: "a whole gang is bound",
			pods:      []*corev1.Pod{mk("g1", 3*time.Minute), mk("g2", 2*time.Minute)},
			gang:      true,
			answers:   []client.NodeHeartbeatResult{start("1", "plain"), start("2", "fast")},
			wantBound: map[string]string{"1": "g1", "2": "g2"}},
	} {
		a := loopAdapter(t0)
		s := buildSnapshot("fairsched", podspec.BarePodsPod, tc.pods, nodes, nil, slog.Default())
		op := &opState{key: "k8s-ns.job", id: "k8s-ns.job", started: true, gang: tc.gang}
		counts, _, _ := op.demand(s.byKey[op.key])
		op.sent = counts
		a.ops[op.key], a.opByID[op.id] = op, op
		jobs := a.starts(s, tc.answers)
		got := map[string]string{}
		for id, b := range a.inflight {
			got[id] = b.name
		}
		var refused []string
		for _, rs := range a.refused {
			for _, r := range rs {
				refused = append(refused, r.ID)
			}
		}
		slices.Sort(refused)
		held := 0
		for _, g := range a.held {
			held += len(g.grants)
		}
		if len(jobs) != len(tc.wantBound) || !mapsEqual(got, tc.wantBound) || !slices.Equal(refused, tc.wantRefused) ||
			held != tc.wantHeld {
			t.Errorf("%s: bound %v (%d binds), refused %v, held %d; want %v, %v, %d", tc.name, got, len(jobs), refused,
				held, tc.wantBound, tc.wantRefused, tc.wantHeld)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestStartWaitsForRoom: a start on a node whose pods being preempted
// still hold what it needs waits, reported running, and binds once they
// are gone; one that waits past RoomTimeout is refused; one that fits
// beside them binds at once.
func TestStartWaitsForRoom(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := testNode("n1", rl("cpu", "4", "memory", "8Gi", "pods", "10"), nil)
	victim := boundPod("victim", "other", 0, corev1.PodRunning, rl("cpu", "3"))
	gone := metav1.NewTime(t0)
	victim.pod.DeletionTimestamp = &gone
	pending := func(name, cpu string) *corev1.Pod {
		p := testPod(name, rl("cpu", cpu))
		p.Labels = map[string]string{podspec.LabelOperation: "job"}
		return p
	}
	start := func(id string) []client.NodeHeartbeatResult {
		return []client.NodeHeartbeatResult{{NodeID: "n1", HeartbeatResponse: client.HeartbeatResponse{
			AllocationsToStart: []client.AllocationStart{{ID: id, OperationID: "k8s-ns.job", TaskIndex: 0}}}}}
	}
	type round struct {
		at          time.Duration
		victimThere bool
		answers     []client.NodeHeartbeatResult
		wantBound   string // the allocation bound this round ("": none)
		wantWaiting int
		wantRefused string // a reason's part ("": none refused)
	}
	for _, tc := range []struct {
		name   string
		cpu    string // the pending pod's
		rounds []round
	}{
		{name: "waits until the victim is gone", cpu: "2", rounds: []round{
			{at: 0, victimThere: true, answers: start("s1"), wantWaiting: 1},
			{at: 5 * time.Second, victimThere: true, wantWaiting: 1},
			{at: 6 * time.Second, wantBound: "s1"},
		}},
		{name: "refused after the room timeout", cpu: "2", rounds: []round{
			{at: 0, victimThere: true, answers: start("s1"), wantWaiting: 1},
			{at: 2 * time.Minute, victimThere: true, wantRefused: "waited 2m0s for room: node n1 has 1 cpu free"},
		}},
		{name: "fits beside the victim: bound at once", cpu: "1", rounds: []round{
			{at: 0, victimThere: true, answers: start("s1"), wantBound: "s1"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := loopAdapter(t0)
			p := pending("new", tc.cpu)
			op := &opState{key: "k8s-ns.job", id: "k8s-ns.job", started: true}
			for _, r := range tc.rounds {
				a.cfg.Now = func() time.Time { return t0.Add(r.at) }
				pods := []*corev1.Pod{p}
				if r.victimThere {
					pods = append(pods, victim.pod)
				}
				s := buildSnapshot("fairsched", podspec.BarePodsPod, pods, []*corev1.Node{node}, nil, slog.Default())
				if op.sent == nil {
					op.sent, _, _ = op.demand(s.byKey[op.key])
					a.ops[op.key], a.opByID[op.id] = op, op
				}
				clear(a.refused)
				hbs := a.heartbeats(s)
				jobs := a.starts(s, r.answers)
				var bound []string
				for id := range a.inflight {
					bound = append(bound, id)
				}
				clear(a.inflight)
				var refused []string
				for _, rs := range a.refused {
					for _, x := range rs {
						refused = append(refused, x.Reason)
					}
				}
				wantBound := []string{}
				if r.wantBound != "" {
					wantBound = []string{r.wantBound}
				}
				if len(jobs) != len(wantBound) || !slices.Equal(append([]string{}, bound...), wantBound) ||
					len(a.waiting) != r.wantWaiting ||
					(r.wantRefused == "") != (len(refused) == 0) ||
					(r.wantRefused != "" && !strings.Contains(strings.Join(refused, ";"), r.wantRefused)) {
					t.Fatalf("at %s: bound %v (%d binds), waiting %d, refused %q; want %v, %d, %q", r.at, bound,
						len(jobs), len(a.waiting), refused, wantBound, r.wantWaiting, r.wantRefused)
				}
				// A waiting start is reported running on its node from
				// the heartbeat after it came.
				if r.answers == nil && r.wantWaiting > 0 && !strings.Contains(states(hbs[0]), "s1:running") {
					t.Errorf("at %s: the waiting start is not reported running: %q", r.at, states(hbs[0]))
				}
			}
		})
	}

	// The server's abort or preemption of a waiting start drops it.
	a := loopAdapter(t0)
	a.waiting["s1"] = &waitingStart{grant: grant{node: "n1", start: client.AllocationStart{ID: "s1"}}, since: t0}
	if !a.dropGrant("s1") || len(a.waiting) != 0 {
		t.Errorf("dropGrant of a waiting start: waiting %d, want 0", len(a.waiting))
	}
}

// TestBindFailureRefusedNextRound: a bind that fails beside the loop is
// refused at the next round, its allocation no longer in flight.
func TestBindFailureRefusedNextRound(t *testing.T) {
	a := loopAdapter(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a.inflight["s1"] = bound{uid: "u1", node: "n1", origin: podspec.Origin{AllocationID: "s1"}}
	a.inflight["s2"] = bound{uid: "u2", node: "n1", origin: podspec.Origin{AllocationID: "s2"}}
	var wg sync.WaitGroup
	wg.Go(func() { a.bindFailed("n1", "s1", "cannot bind pod ns/p1 to node n1: conflict") })
	wg.Wait()
	if len(a.refused) != 0 || len(a.inflight) != 2 {
		t.Fatalf("a failed bind changed the loop's state before the round: refused %v, in flight %d", a.refused, len(a.inflight))
	}
	a.takeBindFailures()
	if _, ok := a.inflight["s1"]; ok || len(a.inflight) != 1 {
		t.Errorf("the failed bind is still in flight: %v", a.inflight)
	}
	if rs := a.refused["n1"]; len(rs) != 1 || rs[0].ID != "s1" || rs[0].State != client.AllocationRefused ||
		!strings.Contains(rs[0].Reason, "conflict") {
		t.Errorf("refused on n1 = %+v, want s1 with the bind's error", rs)
	}
}
