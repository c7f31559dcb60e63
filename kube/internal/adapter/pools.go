package adapter

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/kube/internal/poolcrd"
)

// poolObjects are the Pool objects the informer holds, parents first.
func (a *Adapter) poolObjects() []poolcrd.Pool {
	var pools []poolcrd.Pool
	for _, obj := range a.poolStore.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		p, err := poolcrd.FromUnstructured(u)
		if err != nil {
			a.poolErr[u.GetName()] = err.Error()
			continue
		}
		pools = append(pools, p)
	}
	return poolcrd.ParentFirst(pools)
}

// syncPools mirrors the Pool objects to the server: every pool whose spec
// changed is PUT (parents first), every deleted one deleted (children
// first; one that still has operations is tried again later). It runs when
// a Pool changed and every StatusPeriod.
func (a *Adapter) syncPools(ctx context.Context) {
	now := a.cfg.Now()
	a.mu.Lock()
	dirty := a.poolsDirty
	a.poolsDirty = false
	deleted := make([]string, 0, len(a.deletedPools))
	for n := range a.deletedPools {
		deleted = append(deleted, n)
	}
	a.mu.Unlock()
	if !dirty && now.Before(a.nextPools) {
		return
	}
	a.nextPools = now.Add(a.cfg.StatusPeriod)
	if pools, err := a.api.Pools(ctx); err == nil {
		clear(a.serverPools)
		for _, p := range pools {
			a.serverPools[p.Name] = true
		}
	}
	objects := a.poolObjects()
	present := map[string]bool{}
	for _, p := range objects {
		present[p.Name] = true
		body := p.Spec.ToAPI()
		b, _ := json.Marshal(body)
		if a.lastPut[p.Name] == string(b) && a.serverPools[p.Name] {
			continue
		}
		if _, _, err := a.api.PutPool(ctx, p.Name, body); err != nil {
			a.poolErr[p.Name] = "cannot mirror the pool to fairsched: " + err.Error()
			a.log.Warn("fairsched-kube: cannot put pool", "pool", p.Name, "err", err)
			continue
		}
		delete(a.poolErr, p.Name)
		a.lastPut[p.Name] = string(b)
		a.serverPools[p.Name] = true
	}
	// Children first: the reverse of the last known parent-first order
	// of what is left.
	slices.Sort(deleted)
	for len(deleted) > 0 {
		progress := false
		for i := 0; i < len(deleted); i++ {
			n := deleted[i]
			if present[n] {
				deleted = slices.Delete(deleted, i, i+1)
				i--
				a.forgetDeleted(n)
				continue
			}
			err := a.api.DeletePool(ctx, n)
			if err != nil && client.ErrorCode(err) != "unknown_pool" {
				continue
			}
			delete(a.serverPools, n)
			delete(a.lastPut, n)
			delete(a.lastStatus, n)
			a.forgetDeleted(n)
			deleted = slices.Delete(deleted, i, i+1)
			i--
			progress = true
		}
		if !progress {
			a.log.Info("fairsched-kube: pools left to delete (children or operations left)", "pools", deleted)
			break
		}
	}
}

func (a *Adapter) forgetDeleted(n string) {
	a.mu.Lock()
	delete(a.deletedPools, n)
	a.mu.Unlock()
}

// writeStatus writes each Pool's live fair-share state into its status,
// and renews the FailedScheduling events of pending operations, every
// StatusPeriod. The writes run beside the loop (on a busy API server,
// they held a round, and every start it would bring, for seconds); a
// round skips the writing while the last one still runs.
func (a *Adapter) writeStatus(ctx context.Context, s *snapshot) {
	now := a.cfg.Now()
	if now.Before(a.nextStatus) {
		return
	}
	if !a.statusBusy.TryLock() {
		return
	}
	unlock := true
	defer func() {
		if unlock {
			a.statusBusy.Unlock()
		}
	}()
	for _, w := range a.statusDone {
		a.lastStatus[w.name] = w.st
	}
	a.statusDone = nil
	a.nextStatus = now.Add(a.cfg.StatusPeriod)
	orchids, err := a.api.PoolOrchids(ctx)
	if err != nil {
		a.log.Warn("fairsched-kube: cannot read the pools' state", "err", err)
		return
	}
	clear(a.orchids)
	for _, o := range orchids {
		a.orchids[o.Name] = o
	}
	var jobs []job
	var mu sync.Mutex
	for _, obj := range a.poolStore.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		name := u.GetName()
		st := poolcrd.Status{ObservedGeneration: u.GetGeneration(), Message: a.poolErr[name]}
		if o, ok := a.orchids[name]; ok {
			st = poolcrd.StatusOf(o, u.GetGeneration())
			st.Message = a.poolErr[name]
		}
		if last, ok := a.lastStatus[name]; ok && last == st {
			continue
		}
		jobs = append(jobs, func(ctx context.Context) {
			b, _ := json.Marshal(map[string]any{"status": st})
			_, err := a.dyn.Resource(poolcrd.Resource).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{},
				"status")
			if err != nil {
				a.log.Warn("fairsched-kube: cannot write a pool's status", "pool", name, "err", err)
				return
			}
			mu.Lock()
			a.statusDone = append(a.statusDone, statusWritten{name: name, st: st})
			mu.Unlock()
		})
	}
	jobs = append(jobs, a.explainPending(s, now, maps.Clone(a.orchids))...)
	if len(jobs) == 0 {
		return
	}
	unlock = false
	a.binds.Add(1)
	go func() {
		defer a.binds.Done()
		defer a.statusBusy.Unlock()
		a.run(ctx, jobs)
	}()
}

// statusWritten is a Pool status a writing batch wrote, for the loop to
// remember at its next writeStatus.
type statusWritten struct {
	name string
	st   poolcrd.Status
}

// maxExplained is the most operations whose state one round reads to
// explain their pending pods.
const maxExplained = 64

// explainPending gives the oldest pending pod of each operation that
// waits a FailedScheduling event saying why, in fairsched's terms, at most
// every ExplainPeriod.
func (a *Adapter) explainPending(s *snapshot, now time.Time, orchids map[string]client.PoolOrchid) []job {
	var jobs []job
	for _, key := range s.keys {
		if len(jobs) >= maxExplained {
			break
		}
		op := a.ops[key]
		kp := s.byKey[key]
		if op == nil || !op.started || op.finished || len(kp.pending) == 0 || now.Sub(op.lastExplain) < a.cfg.ExplainPeriod {
			continue
		}
		if now.Sub(kp.pending[0].CreationTimestamp.Time) < a.cfg.ExplainPeriod/2 {
			continue
		}
		id, first := op.id, kp.pending[0]
		op.lastExplain = now
		jobs = append(jobs, func(ctx context.Context) {
			o, err := a.api.Operation(ctx, id)
			if err != nil {
				return
			}
			var pool *client.PoolOrchid
			if p, ok := orchids[o.Pool]; ok {
				pool = &p
			}
			a.recorder.Event(first, corev1.EventTypeWarning, "FailedScheduling", "fairsched: "+explain(o, pool))
		})
	}
	return jobs
}
