package adapter

import (
	"context"
	"encoding/json"
	"slices"
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
// StatusPeriod.
func (a *Adapter) writeStatus(ctx context.Context, s *snapshot) {
	now := a.cfg.Now()
	if now.Before(a.nextStatus) {
		return
	}
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
		b, _ := json.Marshal(map[string]any{"status": st})
		_, err := a.dyn.Resource(poolcrd.Resource).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{},
			"status")
		if err != nil {
			a.log.Warn("fairsched-kube: cannot write a pool's status", "pool", name, "err", err)
			continue
		}
		a.lastStatus[name] = st
	}
	a.explainPending(ctx, s, now)
}

// maxExplained is the most operations whose state one round reads to
// explain their pending pods.
const maxExplained = 64

// explainPending gives the oldest pending pod of each operation that
// waits a FailedScheduling event saying why, in fairsched's terms, at most
// every ExplainPeriod.
func (a *Adapter) explainPending(ctx context.Context, s *snapshot, now time.Time) {
	asked := 0
	for _, key := range s.keys {
		if asked >= maxExplained {
			return
		}
		op := a.ops[key]
		kp := s.byKey[key]
		if op == nil || !op.started || op.finished || len(kp.pending) == 0 || now.Sub(op.lastExplain) < a.cfg.ExplainPeriod {
			continue
		}
		if now.Sub(kp.pending[0].CreationTimestamp.Time) < a.cfg.ExplainPeriod/2 {
			continue
		}
		asked++
		o, err := a.api.Operation(ctx, op.id)
		if err != nil {
			continue
		}
		op.lastExplain = now
		var pool *client.PoolOrchid
		if p, ok := a.orchids[o.Pool]; ok {
			pool = &p
		}
		a.recorder.Event(kp.pending[0], corev1.EventTypeWarning, "FailedScheduling", "fairsched: "+explain(o, pool))
	}
}
