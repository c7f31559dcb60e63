package adapter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/podspec"
)

// maxBatch is the most heartbeats one batch carries (the server's default
// max_heartbeats_per_batch).
const maxBatch = 1024

// bound is a pod the adapter bound that the informer has not shown bound
// yet: heartbeats report it running from the bind on.
type bound struct {
	uid, namespace, name, node string
	origin                     podspec.Origin
}

// gang is the grants of a gang operation the adapter holds until all of
// its jobs are granted.
type gang struct {
	since  time.Time
	grants []grant
}

type grant struct {
	node  string
	start client.AllocationStart
}

// waitingStart is a start whose node has no room for its pod yet: the
// server counts a preempted allocation's resources as free from the
// answer that preempts it, while its pod may run on through its grace
// period. The start is reported running, and its pod bound once the node
// has room (or the start refused after RoomTimeout), so that the node is
// never overcommitted.
type waitingStart struct {
	grant
	since time.Time
}

// preemption is a pod to evict.
type preemption struct {
	uid, namespace, name string
	reason               string
	graceS               int64
	conditioned, evicted bool
}

func report(o podspec.Origin, state string) client.AllocationReport {
	ti, r := o.TaskIndex, o.Resources
	return client.AllocationReport{ID: o.AllocationID, State: state, OperationID: o.OperationID,
		TaskIndex: &ti, Resources: &r}
}

func originOf(node string, st client.AllocationStart) podspec.Origin {
	return podspec.Origin{AllocationID: st.ID, OperationID: st.OperationID, TaskIndex: st.TaskIndex,
		Resources: st.Resources}
}

// heartbeats are every node's heartbeat: its resources less others' pods,
// its tags, whether it takes new pods, and every allocation on it, with its
// origin: the pods the adapter bound (running until they finish, then
// once how they ended), the binds the informer has not shown yet, a gang's
// held grants, and the starts it refused.
func (a *Adapter) heartbeats(s *snapshot) []client.NodeHeartbeat {
	for id, b := range a.inflight {
		if p := s.byUID[b.uid]; p == nil || s.byAlloc[id] != nil || p.Spec.NodeName != "" {
			delete(a.inflight, id)
		}
	}
	for id := range a.endedSent {
		if s.byAlloc[id] == nil {
			delete(a.endedSent, id)
		}
	}
	now := a.cfg.Now()
	for id, g := range a.held {
		if now.Sub(g.since) < a.cfg.GangTimeout {
			continue
		}
		for _, gr := range g.grants {
			a.refuse(gr.node, gr.start.ID, fmt.Sprintf("gang operation %s: not every job was granted within %s",
				id, a.cfg.GangTimeout))
		}
		delete(a.held, id)
	}
	extra := map[string][]client.AllocationReport{}
	for _, b := range a.inflight {
		extra[b.node] = append(extra[b.node], report(b.origin, client.AllocationRunning))
	}
	for _, g := range a.held {
		for _, gr := range g.grants {
			extra[gr.node] = append(extra[gr.node], report(originOf(gr.node, gr.start), client.AllocationRunning))
		}
	}
	for _, w := range a.waiting {
		extra[w.node] = append(extra[w.node], report(originOf(w.node, w.start), client.AllocationRunning))
	}
	out := make([]client.NodeHeartbeat, 0, len(s.nodes))
	for _, node := range s.nodes {
		hb := client.NodeHeartbeat{NodeID: node.Name, Heartbeat: client.Heartbeat{
			ResourceLimits: nodeLimits(node, s.others[node.Name]),
			Tags:           nodeTags(node, a.cfg.NodeLabels),
		}}
		if !schedulable(node) {
			// Said only when false: true is the default.
			no := false
			hb.Schedulable = &no
		}
		for _, o := range s.ours[node.Name] {
			state := podspec.State(o.pod.Status.Phase)
			if state != client.AllocationRunning && a.endedSent[o.origin.AllocationID] {
				continue
			}
			hb.Allocations = append(hb.Allocations, report(o.origin, state))
		}
		hb.Allocations = append(hb.Allocations, extra[node.Name]...)
		hb.Allocations = append(hb.Allocations, a.refused[node.Name]...)
		out = append(out, hb)
	}
	return out
}

func (a *Adapter) refuse(node, id, reason string) {
	a.refused[node] = append(a.refused[node], client.AllocationReport{ID: id, State: client.AllocationRefused,
		Reason: reason})
}

// heartbeat sends every node's heartbeat and carries out the answers.
func (a *Adapter) heartbeat(ctx context.Context, s *snapshot) {
	hbs := a.heartbeats(s)
	var answers []client.NodeHeartbeatResult
	for i := 0; i < len(hbs); i += maxBatch {
		batch := hbs[i:min(i+maxBatch, len(hbs))]
		res, err := a.api.Heartbeats(ctx, batch)
		if err != nil {
			a.log.Warn("fairsched-kube: cannot send heartbeats", "nodes", len(batch), "err", err)
			continue
		}
		for j, r := range res {
			hb := batch[j]
			delete(a.refused, hb.NodeID)
			if r.Err != nil {
				a.log.Warn("fairsched-kube: heartbeat refused", "node", hb.NodeID, "err", r.Err)
				continue
			}
			for _, al := range hb.Allocations {
				if al.State == client.AllocationCompleted || al.State == client.AllocationFailed ||
					al.State == client.AllocationAborted {
					a.endedSent[al.ID] = true
				}
			}
			answers = append(answers, r)
		}
	}
	a.act(ctx, s, answers)
}

// job is one write to the API server a round makes.
type job func(ctx context.Context)

// run runs jobs, Workers at a time, and waits for them.
func (a *Adapter) run(ctx context.Context, jobs []job) {
	sem := make(chan struct{}, a.cfg.Workers)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			j(ctx)
		})
	}
	wg.Wait()
}

// act carries out the answers: aborts delete pods, preemptions evict them,
// starts bind pending pods (or, for a gang, are held until the gang is
// whole).
func (a *Adapter) act(ctx context.Context, s *snapshot, answers []client.NodeHeartbeatResult) {
	var jobs []job
	for _, r := range answers {
		for _, ab := range r.AllocationsToAbort {
			if a.dropGrant(ab.ID) {
				continue
			}
			pod := a.podOf(s, ab.ID)
			if pod == nil {
				continue
			}
			a.log.Info("fairsched-kube: deleting pod", "pod", pod.Namespace+"/"+pod.Name, "allocation", ab.ID,
				"reason", ab.Reason)
			jobs = append(jobs, func(ctx context.Context) {
				zero := int64(0)
				uid := pod.UID
				err := a.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
					GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					a.log.Warn("fairsched-kube: cannot delete pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				}
			})
		}
		for _, pr := range r.AllocationsToPreempt {
			if a.dropGrant(pr.ID) {
				continue
			}
			pod := a.podOf(s, pr.ID)
			if pod == nil || a.preempting[pr.ID] != nil {
				continue
			}
			a.preempting[pr.ID] = &preemption{uid: string(pod.UID), namespace: pod.Namespace, name: pod.Name,
				reason: pr.Reason, graceS: int64(pr.TimeoutS + 0.999)}
			a.recorder.Eventf(pod, corev1.EventTypeNormal, "Preempted", "fairsched preempts allocation %s: %s",
				pr.ID, pr.Reason)
		}
	}
	a.run(ctx, jobs)
	// The binds run on while the next rounds go: a round that waited for
	// its binds (hundreds of API calls on a busy API server) held back
	// the next heartbeat and every start it would bring.
	for _, j := range a.starts(s, answers) {
		a.goBind(ctx, j)
	}
}

// goBind runs a bind beside the loop, BindWorkers at a time.
func (a *Adapter) goBind(ctx context.Context, j job) {
	a.binds.Add(1)
	go func() {
		defer a.binds.Done()
		select {
		case a.bindSem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-a.bindSem }()
		j(ctx)
	}()
}

// podOf is the pod of an allocation, bound or being bound.
func (a *Adapter) podOf(s *snapshot, id string) *corev1.Pod {
	if p := s.byAlloc[id]; p != nil {
		return p
	}
	if b, ok := a.inflight[id]; ok {
		return s.byUID[b.uid]
	}
	return nil
}

// dropGrant forgets a held grant of a gang or a start waiting for room,
// reporting whether id was one.
func (a *Adapter) dropGrant(id string) bool {
	if _, ok := a.waiting[id]; ok {
		delete(a.waiting, id)
		return true
	}
	for op, g := range a.held {
		for i, gr := range g.grants {
			if gr.start.ID == id {
				g.grants = append(g.grants[:i], g.grants[i+1:]...)
				if len(g.grants) == 0 {
					delete(a.held, op)
				}
				return true
			}
		}
	}
	return false
}

// starts matches each allocation to start with the oldest pending pod of
// its operation and task that fits its node, and answers the binds to
// make; a start that no pod takes is refused at the next heartbeat. A
// start whose node has no room yet waits (waitingStart), the starts that
// waited before first.
func (a *Adapter) starts(s *snapshot, answers []client.NodeHeartbeatResult) []job {
	nodes := map[string]*corev1.Node{}
	for _, n := range s.nodes {
		nodes[n.Name] = n
	}
	now := a.cfg.Now()
	todo := slices.SortedFunc(maps.Values(a.waiting), func(x, y *waitingStart) int {
		if c := x.since.Compare(y.since); c != 0 {
			return c
		}
		return compare(x.start.ID, y.start.ID)
	})
	for _, r := range answers {
		for _, st := range r.AllocationsToStart {
			op := a.opByID[st.OperationID]
			if op != nil && op.gang {
				g := a.held[op.id]
				if g == nil {
					g = &gang{since: now}
					a.held[op.id] = g
				}
				g.grants = append(g.grants, grant{node: r.NodeID, start: st})
				continue
			}
			todo = append(todo, &waitingStart{grant: grant{node: r.NodeID, start: st}, since: now})
		}
	}
	for id, g := range a.held {
		if op := a.opByID[id]; op != nil && int64(len(g.grants)+a.running(s, op)) >= op.total() {
			for _, gr := range g.grants {
				todo = append(todo, &waitingStart{grant: gr, since: now})
			}
			delete(a.held, id)
		}
	}
	claimed := map[types.UID]bool{}
	// added are the pods on each node the informer does not show there
	// yet: binds in flight and those of this round.
	added := map[string][]*corev1.Pod{}
	for _, b := range a.inflight {
		claimed[types.UID(b.uid)] = true
		if p := s.byUID[b.uid]; p != nil && p.Spec.NodeName == "" {
			added[b.node] = append(added[b.node], p)
		}
	}
	var jobs []job
	for _, w := range todo {
		st := w.start
		node := nodes[w.node]
		pod, why := a.pick(s, node, st, claimed, added[w.node])
		if pod == nil {
			delete(a.waiting, st.ID)
			a.refuse(w.node, st.ID, why)
			a.log.Info("fairsched-kube: refusing a start", "allocation", st.ID, "operation", st.OperationID,
				"node", w.node, "reason", why)
			continue
		}
		if full := room(pod, node, append(s.onNode[w.node][:len(s.onNode[w.node]):len(s.onNode[w.node])],
			added[w.node]...)); full != "" {
			switch waited := now.Sub(w.since); {
			case waited >= a.cfg.RoomTimeout:
				delete(a.waiting, st.ID)
				why := fmt.Sprintf("pod %s/%s waited %s for room: %s", pod.Namespace, pod.Name, a.cfg.RoomTimeout, full)
				a.refuse(w.node, st.ID, why)
				a.log.Info("fairsched-kube: refusing a start", "allocation", st.ID, "operation", st.OperationID,
					"node", w.node, "reason", why)
			case a.waiting[st.ID] == nil:
				a.waiting[st.ID] = w
				a.log.Info("fairsched-kube: a start waits for room on its node", "allocation", st.ID,
					"operation", st.OperationID, "node", w.node, "reason", full)
			}
			continue
		}
		delete(a.waiting, st.ID)
		claimed[pod.UID] = true
		added[w.node] = append(added[w.node], pod)
		origin := originOf(w.node, st)
		name := w.node
		a.inflight[st.ID] = bound{uid: string(pod.UID), namespace: pod.Namespace, name: pod.Name, node: name,
			origin: origin}
		jobs = append(jobs, func(ctx context.Context) { a.bind(ctx, pod, name, origin) })
	}
	return jobs
}

// running counts the pods of op that are bound (or being bound) and have
// not finished: members of a gang that already run.
func (a *Adapter) running(s *snapshot, op *opState) int {
	n := 0
	if kp := s.byKey[op.key]; kp != nil {
		for _, b := range kp.bound {
			if b.origin.OperationID == op.id && !podspec.Terminal(b.pod) {
				n++
			}
		}
	}
	for id, b := range a.inflight {
		if b.origin.OperationID == op.id && s.byAlloc[id] == nil {
			n++
		}
	}
	return n
}

// pick is the pod an allocation starts, or nil and why there is none.
func (a *Adapter) pick(s *snapshot, node *corev1.Node, st client.AllocationStart, claimed map[types.UID]bool,
	added []*corev1.Pod) (*corev1.Pod, string) {
	if node == nil {
		return nil, "the node is gone"
	}
	op := a.opByID[st.OperationID]
	if op == nil || op.finished {
		return nil, fmt.Sprintf("fairsched-kube has no pending pod of operation %s", st.OperationID)
	}
	kp := s.byKey[op.key]
	if kp == nil {
		return nil, fmt.Sprintf("operation %s has no pending pod", st.OperationID)
	}
	onNode := append(s.onNode[node.Name][:len(s.onNode[node.Name]):len(s.onNode[node.Name])], added...)
	why := ""
	candidates := 0
	q := s.taskQueue(op, kp, st.TaskIndex)
	// The claimed pods at the head are skipped for good: a round's starts
	// take a task's pods oldest first, so each start need not walk over
	// those taken before it.
	for q.head < len(q.pods) && claimed[q.pods[q.head].UID] {
		q.head++
	}
	for _, p := range q.pods[q.head:] {
		if claimed[p.UID] {
			continue
		}
		candidates++
		w := fits(p, node, onNode)
		if w == "" {
			return p, ""
		}
		if why == "" {
			why = fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, w)
		}
	}
	if candidates == 0 {
		return nil, fmt.Sprintf("operation %s has no pending pod of task %d", st.OperationID, st.TaskIndex)
	}
	return nil, fmt.Sprintf("none of the %d pending pods of task %d fits node %s (%s)", candidates, st.TaskIndex,
		node.Name, why)
}

// taskQueue is the pending pods of an operation key's task, oldest first,
// and how many at its head the round's starts have claimed.
type taskQueue struct {
	pods []*corev1.Pod
	head int
}

// taskQueue is op's queue of task index ti (empty when it has none),
// made once a round for all of op's tasks.
func (s *snapshot) taskQueue(op *opState, kp *keyPods, ti int) *taskQueue {
	qs, ok := s.queues[op.key]
	if !ok {
		qs = make([]*taskQueue, len(op.tasks))
		for i := range qs {
			qs[i] = &taskQueue{}
		}
		for _, p := range kp.pending {
			if i := op.taskIndex(podspec.TaskKey(p, podspec.Resources(p))); i >= 0 {
				qs[i].pods = append(qs[i].pods, p)
			}
		}
		if s.queues == nil {
			s.queues = map[string][]*taskQueue{}
		}
		s.queues[op.key] = qs
	}
	if ti < 0 || ti >= len(qs) {
		return &taskQueue{}
	}
	return qs[ti]
}

// bind binds pod to node, writing its origin in the same request, on the
// condition that it is still the same pod. A bind that fails is refused
// at the next heartbeat.
func (a *Adapter) bind(ctx context.Context, pod *corev1.Pod, node string, o podspec.Origin) {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			Annotations: o.Annotations()},
		Target: corev1.ObjectReference{Kind: "Node", Name: node},
	}
	err := a.kube.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	if err != nil {
		a.bindFailed(node, o.AllocationID, fmt.Sprintf("cannot bind pod %s/%s to node %s: %v",
			pod.Namespace, pod.Name, node, err))
		return
	}
	a.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled",
		"Successfully assigned %s/%s to %s (fairsched allocation %s of operation %s)",
		pod.Namespace, pod.Name, node, o.AllocationID, o.OperationID)
}

// bindFailed files a bind that failed, for the loop to refuse at its next
// round (takeBindFailures).
func (a *Adapter) bindFailed(node, id, reason string) {
	a.jobMu.Lock()
	defer a.jobMu.Unlock()
	a.failedBinds = append(a.failedBinds, failedBind{node: node, id: id, reason: reason})
	a.log.Warn("fairsched-kube: refusing a start", "allocation", id, "node", node, "reason", reason)
}

type failedBind struct{ node, id, reason string }

// takeBindFailures refuses the starts whose binds failed since the last
// round: their allocations are no longer in flight.
func (a *Adapter) takeBindFailures() {
	a.jobMu.Lock()
	failed := a.failedBinds
	a.failedBinds = nil
	a.jobMu.Unlock()
	for _, f := range failed {
		delete(a.inflight, f.id)
		a.refuse(f.node, f.id, f.reason)
	}
}

// retryPreemptions marks each pod to preempt with the DisruptionTarget
// condition and evicts it with the allocation's timeout as its grace
// period; an eviction a PodDisruptionBudget refuses is tried again next
// round.
func (a *Adapter) retryPreemptions(ctx context.Context, s *snapshot) {
	var jobs []job
	var mu sync.Mutex
	for id, p := range a.preempting {
		pod := s.byUID[p.uid]
		if pod == nil {
			delete(a.preempting, id)
			continue
		}
		if p.evicted {
			continue
		}
		jobs = append(jobs, func(ctx context.Context) {
			done, conditioned := a.preempt(ctx, p)
			mu.Lock()
			p.evicted, p.conditioned = done, conditioned
			mu.Unlock()
		})
	}
	a.run(ctx, jobs)
}

func (a *Adapter) preempt(ctx context.Context, p *preemption) (evicted, conditioned bool) {
	pods := a.kube.CoreV1().Pods(p.namespace)
	conditioned = p.conditioned
	if !conditioned {
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"PreemptionByScheduler","message":%q,"lastTransitionTime":%q}]}}`,
			corev1.DisruptionTarget, "fairsched: "+p.reason, metav1.Now().UTC().Format(time.RFC3339))
		_, err := pods.Patch(ctx, p.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return true, true
		}
		if err != nil {
			a.log.Warn("fairsched-kube: cannot set DisruptionTarget", "pod", p.namespace+"/"+p.name, "err", err)
			return false, false
		}
		conditioned = true
	}
	uid := types.UID(p.uid)
	grace := p.graceS
	err := pods.EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.name, Namespace: p.namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return true, conditioned
	case apierrors.IsTooManyRequests(err):
		a.log.Info("fairsched-kube: eviction refused for now (PodDisruptionBudget)", "pod", p.namespace+"/"+p.name)
	default:
		a.log.Warn("fairsched-kube: cannot evict", "pod", p.namespace+"/"+p.name, "err", err)
	}
	return false, conditioned
}
