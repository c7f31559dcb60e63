package adapter

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/podspec"
)

// opState is what the adapter knows of the operation of one key: its
// current epoch's id and whether the server has it, and the server's tasks.
type opState struct {
	key     string
	epoch   int
	id      string
	started bool // the server has the operation id
	// finished: the operation id completed or aborted; pods that come
	// later go to the next epoch.
	finished bool
	tasks    []taskState // the server's tasks, in order
	sent     []int64     // their job counts as the server has them
	weight   float64
	gang     bool
	pool     string
	// missingPool is the pool the last start named that did not exist.
	missingPool string
	lastExplain time.Time
}

type taskState struct {
	name      string
	resources client.Resources
}

func (op *opState) setEpoch(e int) {
	op.epoch = e
	op.id = podspec.OperationID(op.key, e)
	op.started, op.finished = false, false
	op.tasks, op.sent = nil, nil
}

// total is the operation's job count over its tasks.
func (op *opState) total() int64 {
	var n int64
	for _, c := range op.sent {
		n += c
	}
	return n
}

// taskIndex is the index of the task named name (-1: none).
func (op *opState) taskIndex(name string) int {
	return slices.IndexFunc(op.tasks, func(t taskState) bool { return t.name == name })
}

// demand is what the operation's tasks' job counts should be: per task,
// its pending pods and the pods bound under this id that did not fail and
// are not being deleted (a completed pod stays counted, as the server
// counts it completed). Tasks of pods no task matches are appended to
// op.tasks. live counts the pods that have not finished (pending, or bound
// and not finished), succeeded those bound under this id that completed.
func (op *opState) demand(kp *keyPods) (counts []int64, live, succeeded int) {
	bound := slices.Clone(kp.bound)
	slices.SortFunc(bound, func(x, y ourPod) int { return x.origin.TaskIndex - y.origin.TaskIndex })
	for _, b := range bound {
		if b.origin.OperationID != op.id {
			continue
		}
		if !podspec.Terminal(b.pod) {
			live++
		} else if b.pod.Status.Phase == corev1.PodSucceeded {
			succeeded++
		}
		if b.pod.Status.Phase == corev1.PodFailed || b.pod.DeletionTimestamp != nil {
			continue
		}
		i := b.origin.TaskIndex
		if op.started && i >= len(op.tasks) {
			continue // not a task of the server's: nothing to count it in
		}
		if !op.started {
			// Before the server's tasks are known, a bound pod's task
			// is found by its name as a pending pod's is.
			i = op.task(b.pod)
		}
		for len(counts) <= i {
			counts = append(counts, 0)
		}
		counts[i]++
	}
	for _, p := range kp.pending {
		live++
		i := op.task(p)
		for len(counts) <= i {
			counts = append(counts, 0)
		}
		counts[i]++
	}
	for len(counts) < len(op.tasks) {
		counts = append(counts, 0)
	}
	return counts, live, succeeded
}

// task is the index of pod's task, appended when new.
func (op *opState) task(pod *corev1.Pod) int {
	r := podspec.Resources(pod)
	name := podspec.TaskKey(pod, r)
	if i := op.taskIndex(name); i >= 0 {
		return i
	}
	op.tasks = append(op.tasks, taskState{name: name, resources: r})
	return len(op.tasks) - 1
}

// opSpec is the start of op for pods (the oldest sets the pool and the
// attributes).
func opSpec(op *opState, pool string, attrs podspec.Attributes, counts []int64) client.OperationSpec {
	spec := client.OperationSpec{
		ID: op.id, Pool: pool, Type: "vanilla", Weight: attrs.Weight, IsGang: attrs.Gang,
	}
	if attrs.Graceful {
		spec.PreemptionMode = "graceful"
		spec.AllocationGracefulPreemptionTimeoutS = attrs.GracefulTimeoutS
	}
	for i, t := range op.tasks {
		spec.Tasks = append(spec.Tasks, client.Task{Name: t.name, JobCount: counts[i], Resources: t.resources})
	}
	return spec
}

// syncOperations starts, resizes and finishes the operations of the
// pods, so that each task's job count is the number of its live pods.
func (a *Adapter) syncOperations(ctx context.Context, s *snapshot) {
	now := a.cfg.Now()
	var jobs []job
	for _, key := range s.keys {
		kp := s.byKey[key]
		op := a.ops[key]
		if op == nil {
			op = &opState{key: key}
			epoch := 1
			for _, b := range kp.bound {
				epoch = max(epoch, podspec.Epoch(key, b.origin.OperationID))
			}
			op.setEpoch(epoch)
			a.ops[key] = op
		}
		// Each operation's requests to the server are its own: they run
		// beside the others', Workers at a time (a thousand bare pods
		// are a thousand operations to start).
		jobs = append(jobs, func(ctx context.Context) { a.syncOperation(ctx, s, op, kp, now) })
	}
	for key, op := range a.ops {
		if _, ok := s.byKey[key]; ok {
			continue
		}
		if op.started && !op.finished {
			jobs = append(jobs, func(ctx context.Context) { a.finish(ctx, op, false) })
		}
		delete(a.opByID, op.id)
		delete(a.ops, key)
	}
	a.run(ctx, jobs)
}

// setOpID files op under its id (or, with ok false, takes id out): the
// operations of a round sync beside each other.
func (a *Adapter) setOpID(id string, op *opState, ok bool) {
	a.jobMu.Lock()
	defer a.jobMu.Unlock()
	if ok {
		a.opByID[id] = op
	} else {
		delete(a.opByID, id)
	}
}

func (a *Adapter) syncOperation(ctx context.Context, s *snapshot, op *opState, kp *keyPods, now time.Time) {
	if op.finished && len(kp.pending) > 0 {
		a.setOpID(op.id, nil, false)
		op.setEpoch(op.epoch + 1)
	}
	// The oldest pod of the operation sets its pool and attributes.
	var first *corev1.Pod
	if len(kp.pending) > 0 {
		first = kp.pending[0]
	}
	for _, b := range kp.bound {
		if b.origin.OperationID == op.id && (first == nil || olderFirst(b.pod, first) < 0) {
			first = b.pod
		}
	}
	if first == nil {
		if op.started && !op.finished {
			counts, _, succeeded := op.demand(kp)
			a.resize(ctx, op, counts)
			a.finish(ctx, op, succeeded > 0)
		}
		return
	}
	attrs, err := podspec.ParseAttributes(first)
	if err != nil && now.Sub(op.lastExplain) >= a.cfg.ExplainPeriod {
		a.recorder.Event(first, corev1.EventTypeWarning, "InvalidAnnotation", err.Error())
	}
	pool := podspec.Pool(first, s.namespaces[first.Namespace])
	for tries := 0; tries < 4 && !op.started; tries++ {
		op.tasks = nil // a start names the tasks of the pods there are now
		counts, live, _ := op.demand(kp)
		if live == 0 {
			return
		}
		op.pool, op.gang, op.weight = pool, attrs.Gang, attrs.Weight
		spec := opSpec(op, pool, attrs, counts)
		started, err := a.api.StartOperation(ctx, spec)
		switch {
		case err == nil && (started.State == "completed" || started.State == "aborted"):
			op.setEpoch(op.epoch + 1)
			continue
		case err == nil:
			op.started, op.sent, op.missingPool = true, counts, ""
			a.setOpID(op.id, op, true)
			a.log.Info("fairsched-kube: started operation", "operation", op.id, "pool", pool, "jobs", op.total())
		case client.ErrorCode(err) == "duplicate_id":
			if !a.adopt(ctx, op) {
				return
			}
		case client.ErrorCode(err) == "too_many_operations":
			if now.Sub(op.lastExplain) >= a.cfg.ExplainPeriod {
				op.lastExplain = now
				for _, p := range kp.pending {
					a.recorder.Eventf(p, corev1.EventTypeWarning, "FailedScheduling",
						"fairsched: pool %s has its limit of operations (max_operation_count): %v", pool, err)
				}
			}
			return
		case client.ErrorCode(err) == "unknown_pool":
			op.missingPool = pool
			if now.Sub(op.lastExplain) >= a.cfg.ExplainPeriod {
				op.lastExplain = now
				for _, p := range kp.pending {
					a.recorder.Eventf(p, corev1.EventTypeWarning, "FailedScheduling",
						"fairsched has no pool %q: create a Pool named %q, or set the pod's label or its namespace's annotation %s",
						pool, pool, podspec.LabelPool)
				}
			}
			return
		default:
			a.log.Warn("fairsched-kube: cannot start operation", "operation", op.id, "err", err)
			return
		}
	}
	if !op.started {
		return
	}
	counts, live, succeeded := op.demand(kp)
	a.resize(ctx, op, counts)
	if live == 0 {
		// Every pod of the operation is done (or being deleted): a Job
		// that completed, a ReplicaSet scaled to zero.
		a.finish(ctx, op, succeeded > 0)
		return
	}
	if op.started && !op.finished && attrs.Weight > 0 && attrs.Weight != op.weight {
		if _, err := a.api.PatchOperation(ctx, op.id, client.OperationPatch{Weight: attrs.Weight}); err == nil {
			op.weight = attrs.Weight
		}
	}
}

// adopt takes the tasks of an operation the server already has (after a
// restart of the adapter); a finished one moves op to the next epoch.
func (a *Adapter) adopt(ctx context.Context, op *opState) bool {
	o, err := a.api.OperationOrchid(ctx, op.id)
	if err != nil {
		a.log.Warn("fairsched-kube: cannot read operation", "operation", op.id, "err", err)
		return false
	}
	if o.State == "completed" || o.State == "aborted" {
		op.setEpoch(op.epoch + 1)
		return true
	}
	op.tasks, op.sent = nil, nil
	for _, t := range o.Tasks {
		op.tasks = append(op.tasks, taskState{name: t.Name, resources: t.Resources})
		op.sent = append(op.sent, t.JobCount)
	}
	op.started = true
	a.setOpID(op.id, op, true)
	a.log.Info("fairsched-kube: adopted operation", "operation", op.id, "tasks", len(op.tasks))
	return true
}

// resize sends the tasks' job counts that changed.
func (a *Adapter) resize(ctx context.Context, op *opState, counts []int64) {
	if slices.Equal(counts, op.sent) || op.finished {
		return
	}
	patch := client.OperationPatch{}
	for i, c := range counts {
		c := c
		if i < len(op.sent) {
			patch.Tasks = append(patch.Tasks, client.TaskPatch{JobCount: &c})
			continue
		}
		r := op.tasks[i].resources
		patch.Tasks = append(patch.Tasks, client.TaskPatch{Name: op.tasks[i].name, JobCount: &c, Resources: &r})
	}
	_, err := a.api.PatchOperation(ctx, op.id, patch)
	switch {
	case err == nil:
		op.sent = slices.Clone(counts)
	case client.ErrorCode(err) == "operation_finished":
		op.finished = true
	case client.ErrorCode(err) == "unknown_operation":
		op.started = false
		a.setOpID(op.id, nil, false)
	default:
		a.log.Warn("fairsched-kube: cannot change the job counts", "operation", op.id, "err", err)
	}
}

// finish completes (all its pods succeeded) or aborts an operation whose
// pods are all gone or finished.
func (a *Adapter) finish(ctx context.Context, op *opState, completed bool) {
	var err error
	if completed {
		_, err = a.api.CompleteOperation(ctx, op.id)
	} else {
		_, err = a.api.AbortOperation(ctx, op.id)
	}
	switch code := client.ErrorCode(err); {
	case err == nil, code == "operation_finished", code == "unknown_operation":
		op.finished = true
	default:
		a.log.Warn("fairsched-kube: cannot finish operation", "operation", op.id, "err", err)
	}
}

// explain is why a pending operation has no allocation, in fairsched's
// terms.
func explain(o *client.Operation, pool *client.PoolOrchid) string {
	if w := o.WaitingFor; w != nil {
		return fmt.Sprintf("operation %s waits: pool %s runs its limit of %d operations (max_running_operation_count)",
			o.ID, w.Pool, w.MaxRunningOperationCount)
	}
	if pool != nil && pool.LimitsShare.UserSlots+pool.LimitsShare.CPU+pool.LimitsShare.Memory+pool.LimitsShare.GPU > 0 &&
		atLimit(pool.UsageShare, pool.LimitsShare) {
		return fmt.Sprintf("pool %s is at its resource limits", pool.Name)
	}
	if d := dominantOf(o.FairShare, o.UsageShare); d != "" {
		return fmt.Sprintf("operation %s has reached its fair share of %s (%.3g of the cluster; usage %.3g)",
			o.ID, d, shareOf(o.FairShare, d), shareOf(o.UsageShare, d))
	}
	return fmt.Sprintf("operation %s is below its fair share and waits for room on a node its pods fit", o.ID)
}

// atLimit reports whether usage reaches a limited resource's limit.
func atLimit(usage, limits client.Share) bool {
	reached := func(u, l float64) bool { return l > 0 && l < 1 && u >= l-1e-9 }
	return reached(usage.UserSlots, limits.UserSlots) || reached(usage.CPU, limits.CPU) ||
		reached(usage.Memory, limits.Memory) || reached(usage.GPU, limits.GPU)
}

// dominantOf names a resource whose usage reaches the fair share ("" when
// none: the operation is below its fair share).
func dominantOf(fair, usage client.Share) string {
	for _, r := range []string{client.ResourceCPU, client.ResourceMemory, client.ResourceGPU, client.ResourceUserSlots} {
		if f := shareOf(fair, r); f > 0 && shareOf(usage, r) >= f-1e-9 {
			return r
		}
	}
	return ""
}

func shareOf(s client.Share, r string) float64 {
	switch r {
	case client.ResourceCPU:
		return s.CPU
	case client.ResourceMemory:
		return s.Memory
	case client.ResourceGPU:
		return s.GPU
	case client.ResourceUserSlots:
		return s.UserSlots
	}
	return s.Network
}
