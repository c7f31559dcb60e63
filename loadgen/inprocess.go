package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/examples"
	"github.com/fairsched/fairsched/wire"
)

// inProcess drives core/schedule directly: the scheduler is built as
// `fairsched serve` builds it (the embedded examples/serve.json, then the
// workload's pools), the fair-share update runs every
// fair_share_update_period_s of wall time, and the nodes' heartbeats are
// Scheduler.Heartbeat calls with no HTTP and no JSON: the ceiling of the
// core on this machine.
type inProcess struct {
	cfg    *Config
	w      *Workload
	sched  *schedule.Scheduler
	period time.Duration
	start  time.Time

	// finishedAt is when the updater first saw an operation finished
	// (updater goroutine only).
	finishedAt map[string]time.Time
	stop       chan struct{}
	done       sync.WaitGroup
}

func newInProcess(cfg *Config, w *Workload) *inProcess {
	return &inProcess{cfg: cfg, w: w, start: time.Now(), finishedAt: map[string]time.Time{}, stop: make(chan struct{})}
}

// now is the scheduler's clock: seconds since the driver was created.
// now is the core's time: microseconds since the run started.
func (p *inProcess) now() clock.Time { return clock.Time(time.Since(p.start).Microseconds()) }

func (p *inProcess) setup(context.Context) error {
	sc, err := wire.DecodeServeConfig(examples.ServeConfig)
	if err != nil {
		return fmt.Errorf("loadgen: cannot decode the embedded serve config: %w", err)
	}
	root, ms, _, werr := sc.Tree()
	if werr != nil {
		return fmt.Errorf("loadgen: the embedded serve config: %w", werr)
	}
	for i := range p.w.Pools {
		pl := &p.w.Pools[i]
		ms = append(ms, tree.Mutation{Kind: tree.AddPool, Name: pl.Name, Parent: pl.Parent, Pool: pl.Config})
	}
	p.sched = schedule.New(tree.New(root), sc.Scheduler)
	if i, err := p.sched.ApplyPools(ms...); err != nil {
		return fmt.Errorf("loadgen: cannot create pool %s: %w", ms[i].Name, err)
	}
	p.period = time.Duration(sc.Scheduler.FairShareUpdatePeriod.Micros()) * time.Microsecond
	return nil
}

func (p *inProcess) startOperation(spec *schedule.OperationSpec) (bool, error) {
	_, st, err := p.sched.StartOperation(p.now(), *spec)
	if err != nil {
		return false, err
	}
	return st == schedule.StatePending, nil
}

// begin runs the first fair-share update and starts the updater, which
// also forgets operations finished a minute ago (as the server does after
// its retention).
func (p *inProcess) begin(time.Time) {
	p.sched.UpdateFairShare(p.now())
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(p.period)
		defer t.Stop()
		lastForget := time.Now()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			p.sched.UpdateFairShare(p.now())
			if time.Since(lastForget) >= 10*time.Second {
				lastForget = time.Now()
				p.forgetFinished()
			}
		}
	}()
}

func (p *inProcess) forgetFinished() {
	now := time.Now()
	for _, o := range p.sched.Operations(nil) {
		if !o.State.Final() || o.RunningAllocations > 0 {
			continue
		}
		at, seen := p.finishedAt[o.ID]
		switch {
		case !seen:
			p.finishedAt[o.ID] = now
		case now.Sub(at) >= time.Minute && p.sched.ForgetOperation(o.ID) == nil:
			delete(p.finishedAt, o.ID)
		}
	}
}

func (p *inProcess) end() {
	close(p.stop)
	p.done.Wait()
}

// inProcessWorker is one driver goroutine's reused request state.
type inProcessWorker struct {
	p       *inProcess
	reports []schedule.AllocationReport
	origins []schedule.AllocationOrigin
	resp    schedule.Response
}

func (p *inProcess) newWorker(int) heartbeater { return &inProcessWorker{p: p} }

func (wk *inProcessWorker) heartbeat(nodes []*Node, ds []Decisions, errs []*hbError) {
	now := wk.p.now()
	for i, n := range nodes {
		wk.reports = n.AppendReports(wk.reports[:0])
		wk.origins = n.AppendOrigins(wk.origins[:0])
		hb := schedule.NodeHeartbeat{Node: n.Name, Limits: n.limits, Tags: n.tags, Allocations: wk.reports, AllocationOrigins: wk.origins}
		wk.resp.Reset()
		if err := wk.p.sched.Heartbeat(now, &hb, &wk.resp); err != nil {
			errs[i] = &hbError{kind: "heartbeat", msg: n.Name + ": " + err.Error()}
			continue
		}
		FromResponse(&wk.resp, wk.p.w, &ds[i])
	}
}
