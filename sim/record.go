package sim

import (
	"math"
	"slices"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/starvation"
	"github.com/fairsched/fairsched/core/tree"
)

// GuaranteeMetRatio is how much of its guarantee a pool must use for the
// guarantee to count as met: usage ≥ 95% of min(guarantee, demand) in the
// pool's dominant resource.
const GuaranteeMetRatio = 0.95

// Amounts are absolute amounts of the five resources in resource order
// (resource.Kind); cpu in cores, memory in bytes.
type Amounts [resource.Count]float64

// Sample is one pool's state at a fair-share update.
type Sample struct {
	TimeS float64
	// Usage, Demand and FairShare are the pool's; StrongGuarantee,
	// IntegralGuarantee and WeightProportional decompose FairShare
	// (docs/semantics.md#fair-share). Guarantee is what the pool is promised at the
	// moment: its strong guarantee plus its proposed integral share.
	Usage, Demand, FairShare                               Amounts
	StrongGuarantee, IntegralGuarantee, WeightProportional Amounts
	Guarantee                                              Amounts
	// AccumulatedVolume is the integral volume in resource·seconds (cpu in
	// core·seconds); VolumeRatio is accumulated_resource_ratio_volume.
	AccumulatedVolume Amounts
	VolumeRatio       float64
	Running, Pending  int64
	BelowFairShare    bool
	Starvation        starvation.State
	Satisfaction      float64
}

// PoolResult is what a run recorded about one pool.
type PoolResult struct {
	Name, Parent string
	Integral     tree.GuaranteeType
	// Capacity is the integral pool's volume capacity at the end of the
	// run, in resource·seconds (cpu in core·seconds).
	Capacity Amounts
	Samples  []Sample
	Summary  PoolSummary
}

// Result is what a run recorded.
type Result struct {
	Scenario *Scenario
	Total    resource.Vec // the cluster's resources
	Pools    []PoolResult // tree pre-order, the root first
	Works    []WorkResult // the scenario's workload order
	Run      RunStats
	// Fairness is the cluster's fairness error and utilization at each
	// sample; EndS is the last fair-share update's time.
	Fairness []FairnessSample
	EndS     float64
	// FairnessErrorMean is the time mean of the fairness error over the
	// run and FairnessErrorIntegral its integral in share·seconds.
	FairnessErrorMean, FairnessErrorIntegral float64
	// Trace is the trace replay's report (nil for scenario files).
	Trace *TraceReport
}

// RunStats count what the simulation did.
type RunStats struct {
	Nodes            int   `json:"nodes"`
	Heartbeats       int64 `json:"heartbeats"`
	FairShareUpdates int64 `json:"fair_share_updates"`
	// Samples are the samples the result keeps (each pool's, each
	// workload's and the fairness series alike).
	Samples int `json:"samples"`
	// SamplePeriodS is the period of the kept samples when max_samples
	// made the run thin them (absent otherwise: the scenario's).
	SamplePeriodS float64 `json:"sample_period_s,omitempty"`
	// SkippedHeartbeats are the idle heartbeats a trace replay skipped.
	SkippedHeartbeats int64 `json:"skipped_heartbeats,omitempty"`
	// SkippedUpdates are the fair-share updates a trace replay skipped
	// because nothing had changed since the previous one.
	SkippedUpdates int64 `json:"skipped_fair_share_updates,omitempty"`
}

// poolRec accumulates one pool's statistics.
type poolRec struct {
	name, parent string
	parentIdx    int
	integral     tree.GuaranteeType
	capacity     Amounts
	samples      []Sample

	time                          float64 // observed seconds
	usage, demand, fairShare      Amounts // time integrals
	demandTime, metTime           float64
	volMin, volMax, volLast       float64
	haveVol                       bool
	opsStarted, opsCompleted      int64
	opsRejected                   int64
	jobsStarted, jobsCompleted    int64
	jobsAborted                   int64
	preemptSuffered, preemptCause int64
	preemptGraceful               int64
	waits                         []clock.Duration

	// Trace replays: per trace job (operation), its wait (submit to the
	// start of its last job), bounded slowdown and the production wait the
	// trace recorded; the work preemptions lost (resource·seconds, cpu in
	// core·seconds).
	leaf bool
	// last is the latest observed sample and what it added to the
	// integrals per second, for the updates a trace replay skips.
	last                      Sample
	lastDemand, lastMet       bool
	traceSubmitted, traceDone int64
	traceWaits, slowdowns     []float64
	recordedWaits             []float64
	lost                      Amounts
}

type recorder struct {
	sc         *Scenario
	pools      []poolRec
	byName     map[string]int
	nextSample clock.Time
	// period is the sample period, doubled each time the samples are
	// thinned to stay within maxSamples.
	period     clock.Duration
	maxSamples int
	fsPeriod   clock.Duration
	end        clock.Time
	total      resource.Vec
	stats      RunStats
	works      []WorkResult

	// Fairness and utilization over the whole run (trace replays report
	// them): the time integral of the fairness error and of the root's
	// usage share per resource, and their values at each sample.
	fairIntegral float64
	fairTime     float64
	utilIntegral Amounts
	fairness     []FairnessSample
	lastT        clock.Time
	traceSkips   skips
	lastFE       float64
	// sinceFE, sinceUtil and sinceT integrate since the last sample, whose
	// FairnessSample holds the means over its interval.
	sinceFE   float64
	sinceUtil Amounts
	sinceT    float64
	lastUtil  Amounts
	lastWith  int
}

// FairnessSample is the cluster's fairness and utilization at a sample.
type FairnessSample struct {
	TimeS float64
	// Error is the fairness error: the mean, over the leaf pools with
	// demand, of |dominant usage share − dominant fair share|, each the
	// largest of the pool's shares of the cluster's resources (0 with no
	// demand), as the server's history computes it.
	Error           float64
	PoolsWithDemand int
	// Utilization is the root's usage share of each resource.
	Utilization Amounts
	// span is the simulated time the means cover (0 at the first sample,
	// which holds the values of the moment).
	span float64
}

func (r *recorder) init(sc *Scenario, pools []schedule.PoolInfo, end clock.Time) {
	r.sc = sc
	r.period = seconds(sc.SamplePeriodS)
	r.maxSamples = sc.MaxSamples
	if r.maxSamples <= 0 {
		r.maxSamples = DefaultMaxSamples
	}
	r.byName = make(map[string]int, len(pools))
	r.fsPeriod = seconds(sc.FairShareUpdatePeriodS)
	r.end = end
	for i, p := range pools {
		r.byName[p.Name] = i
		parent := -1
		if p.Parent != "" {
			parent = r.byName[p.Parent]
		}
		r.pools = append(r.pools, poolRec{name: p.Name, parent: p.Parent, parentIdx: parent, integral: p.Config.Integral.Type, leaf: true})
		if parent >= 0 {
			r.pools[parent].leaf = false
		}
	}
}

func (r *recorder) skip(reason string) { r.traceSkips.add(reason) }

func (r *recorder) traceSubmitted(pool int) {
	r.count(pool, func(p *poolRec) *int64 { return &p.traceSubmitted })
}

// slowdownFloor is the run time below which bounded slowdown counts a job
// as this long, so that very short jobs do not dominate the mean.
const slowdownFloor = 10.0

// traceCompleted records a finished trace job.
func (r *recorder) traceCompleted(pool int, tr *traceOp) {
	wait := tr.lastStart.Sub(tr.submit).Seconds()
	resp := tr.lastEnd.Sub(tr.submit).Seconds()
	sd := max(1, resp/max(tr.runS, slowdownFloor))
	r.up(pool, func(p *poolRec) {
		p.traceDone++
		p.traceWaits = append(p.traceWaits, wait)
		p.slowdowns = append(p.slowdowns, sd)
		if tr.recorded >= 0 {
			p.recordedWaits = append(p.recordedWaits, tr.recorded)
		}
	})
}

// lostWork records that a preempted or aborted job lost d of work.
func (r *recorder) lostWork(pool int, d clock.Duration, res resource.Vec) {
	s := d.Seconds()
	r.up(pool, func(p *poolRec) {
		for k := range resource.Count {
			x := float64(res[k])
			if k == int(resource.CPU) {
				x /= resource.CPUScale
			}
			p.lost[k] += x * s
		}
	})
}

func (r *recorder) poolIndex(name string) int {
	i, ok := r.byName[name]
	if !ok {
		panic("BUG: the decoder let through an unknown pool " + name)
	}
	return i
}

// up calls f for pool i and each of its ancestors.
func (r *recorder) up(i int, f func(p *poolRec)) {
	for ; i >= 0; i = r.pools[i].parentIdx {
		f(&r.pools[i])
	}
}

// count adds one to the counter f picks, for pool and its ancestors.
func (r *recorder) count(pool int, f func(p *poolRec) *int64) {
	r.up(pool, func(p *poolRec) { *f(p)++ })
}

func (r *recorder) jobStarted(pool int, wait clock.Duration) {
	r.up(pool, func(p *poolRec) {
		p.jobsStarted++
		p.waits = append(p.waits, wait)
	})
}

func (r *recorder) preempted(victim int, d schedule.PreemptDecision, preemptor int) {
	r.up(victim, func(p *poolRec) {
		p.preemptSuffered++
		if d.Reason == schedule.PreemptGraceful {
			p.preemptGraceful++
		}
	})
	if preemptor >= 0 {
		r.up(preemptor, func(p *poolRec) { p.preemptCause++ })
	}
}

// WorkSample is one workload's state at a sample: the sums over its
// unfinished operations.
type WorkSample struct {
	TimeS                    float64
	Usage, Demand, FairShare Amounts
	Operations               int64 // unfinished operations
	RunningJobs              int64
	PendingJobs              int64
}

// WorkResult is what a run recorded about one workload entry.
type WorkResult struct {
	Name, Pool string
	Samples    []WorkSample
}

// observeWorkloads records every workload's state from the operations'
// views at a sample.
func (r *recorder) observeWorkloads(e *engine, t clock.Time, total resource.Vec, ops []schedule.OperationInfo) {
	if len(r.works) == 0 {
		for i := range e.works {
			r.works = append(r.works, WorkResult{Name: e.works[i].w.Name, Pool: e.works[i].w.Pool})
		}
	}
	base := len(r.works[0].Samples)
	for i := range r.works {
		r.works[i].Samples = append(r.works[i].Samples, WorkSample{TimeS: t.Seconds()})
	}
	for k := range ops {
		info := &ops[k]
		o := e.ops[info.ID]
		if o == nil || info.State.Final() {
			continue
		}
		s := &r.works[o.work.index].Samples[base]
		a := &info.Attrs
		for res := range resource.Count {
			s.Usage[res] += absolute(a.UsageShare[res], total[res], res)
			s.Demand[res] += absolute(a.DemandShare[res], total[res], res)
			s.FairShare[res] += absolute(a.FairShare.Total[res], total[res], res)
		}
		s.Operations++
		s.RunningJobs += info.RunningAllocations
		s.PendingJobs += info.PendingJobs
	}
}

// observe records the state after the fair-share update at t and reports
// whether it took a sample.
func (r *recorder) observe(e *engine, t clock.Time, total resource.Vec, pools []schedule.PoolInfo) bool {
	r.total = total
	r.stats.FairShareUpdates++
	r.lastT = t
	dt := min(r.fsPeriod, r.end.Sub(t)).Seconds()
	var fairSum float64
	var withDemand int
	var util Amounts
	sample := r.due(t)
	for i := range pools {
		info := &pools[i]
		k, ok := r.byName[info.Name]
		if !ok {
			continue
		}
		p := &r.pools[k]
		a := &info.Attrs
		var s Sample
		s.TimeS = t.Seconds()
		guarantee := a.StrongGuaranteeShare.Add(a.ProposedIntegralShare)
		for res := range resource.Count {
			s.Usage[res] = absolute(a.UsageShare[res], total[res], res)
			s.Demand[res] = absolute(a.DemandShare[res], total[res], res)
			s.FairShare[res] = absolute(a.FairShare.Total[res], total[res], res)
			s.StrongGuarantee[res] = absolute(a.FairShare.StrongGuarantee[res], total[res], res)
			s.IntegralGuarantee[res] = absolute(a.FairShare.IntegralGuarantee[res], total[res], res)
			s.WeightProportional[res] = absolute(a.FairShare.WeightProportional[res], total[res], res)
			s.Guarantee[res] = absolute(guarantee[res], total[res], res)
			s.AccumulatedVolume[res] = a.Integral.AccumulatedVolume[res]
		}
		s.VolumeRatio = a.Integral.AccumulatedResourceRatioVolume
		s.Running, s.Pending = info.RunningOperationCount, info.PendingOperationCount
		s.BelowFairShare, s.Starvation, s.Satisfaction = info.BelowFairShare, info.Starvation, info.Satisfaction
		if p.integral != tree.GuaranteeNone {
			p.capacity = Amounts(a.Integral.Capacity)
			v := s.AccumulatedVolume[resource.CPU]
			if !p.haveVol {
				p.volMin, p.volMax, p.haveVol = v, v, true
			}
			p.volMin, p.volMax, p.volLast = min(p.volMin, v), max(p.volMax, v), v
		}

		p.time += dt
		for res := range resource.Count {
			p.usage[res] += s.Usage[res] * dt
			p.demand[res] += s.Demand[res] * dt
			p.fairShare[res] += s.FairShare[res] * dt
		}
		dom := a.DominantResource
		p.last, p.lastDemand, p.lastMet = s, false, false
		if p.parentIdx < 0 {
			for res := range resource.Count {
				util[res] = a.UsageShare[res]
			}
		}
		if p.leaf && a.DemandShare.MaxComponent() > resource.Epsilon {
			// As the server's history computes it (core/history).
			withDemand++
			fairSum += math.Abs(a.UsageShare.MaxComponent() - a.FairShare.Total.MaxComponent())
		}
		if s.Demand[dom] > 1e-9*math.Max(1, float64(total[dom])) {
			p.demandTime += dt
			p.lastDemand = true
			bound := min(s.Guarantee[dom], s.Demand[dom])
			if s.Usage[dom] >= GuaranteeMetRatio*bound-1e-9*math.Max(1, bound) {
				p.metTime += dt
				p.lastMet = true
			}
		}
		if sample {
			p.samples = append(p.samples, s)
		}
	}
	fe := 0.0
	if withDemand > 0 {
		fe = fairSum / float64(withDemand)
	}
	r.lastFE, r.lastUtil, r.lastWith = fe, util, withDemand
	r.integrateFairness(t, dt, sample)
	return sample
}

// due reports whether the fair-share update at t takes a sample. When the
// run already keeps maxSamples samples, it first thins them.
func (r *recorder) due(t clock.Time) bool {
	if t < r.nextSample {
		return false
	}
	if len(r.fairness) >= r.maxSamples {
		r.thin()
	}
	for r.nextSample <= t {
		r.nextSample = r.nextSample.Add(r.period)
	}
	return true
}

// thin halves the samples kept, keeping every second one (the first, the
// third, …), and doubles the sample period, so that a run's memory stays
// bounded however long it runs. The pools' and workloads' samples are the
// values of a moment: the kept ones stay as they are. A fairness sample
// holds the means since the previous one: each kept one takes in the one
// dropped before it, weighted by the time each covers, and a dropped last
// one goes back into the running integrals for the next sample.
func (r *recorder) thin() {
	r.period *= 2
	for i := range r.pools {
		r.pools[i].samples = everySecond(r.pools[i].samples)
	}
	for i := range r.works {
		r.works[i].Samples = everySecond(r.works[i].Samples)
	}
	fs := r.fairness
	n := 0
	for i := 0; i < len(fs); i += 2 {
		k := fs[i]
		if i > 0 {
			k = mergeFairness(fs[i-1], k)
		}
		fs[n] = k
		n++
	}
	if len(fs)%2 == 0 && len(fs) > 0 {
		d := fs[len(fs)-1]
		r.sinceFE += d.Error * d.span
		r.sinceT += d.span
		for res := range resource.Count {
			r.sinceUtil[res] += d.Utilization[res] * d.span
		}
	}
	r.fairness = fs[:n]
}

// everySecond keeps s[0], s[2], … in place.
func everySecond[S any](s []S) []S {
	n := 0
	for i := 0; i < len(s); i += 2 {
		s[n] = s[i]
		n++
	}
	return s[:n]
}

// mergeFairness is the fairness sample of a's and b's spans together,
// consecutive, at b's time.
func mergeFairness(a, b FairnessSample) FairnessSample {
	m := b
	m.span = a.span + b.span
	if m.span <= 0 {
		return m
	}
	m.Error = (a.Error*a.span + b.Error*b.span) / m.span
	for res := range resource.Count {
		m.Utilization[res] = (a.Utilization[res]*a.span + b.Utilization[res]*b.span) / m.span
	}
	return m
}

// integrateFairness adds dt of the last fairness error and utilization to
// the integrals and, at a sample, records their means since the previous
// one (the current values at the first).
func (r *recorder) integrateFairness(t clock.Time, dt float64, sample bool) {
	if sample {
		fs := FairnessSample{TimeS: t.Seconds(), Error: r.lastFE, PoolsWithDemand: r.lastWith, Utilization: r.lastUtil}
		if r.sinceT > 0 {
			fs.Error = r.sinceFE / r.sinceT
			for res := range resource.Count {
				fs.Utilization[res] = r.sinceUtil[res] / r.sinceT
			}
		}
		fs.span = r.sinceT
		r.fairness = append(r.fairness, fs)
		r.sinceFE, r.sinceUtil, r.sinceT = 0, Amounts{}, 0
	}
	r.fairIntegral += r.lastFE * dt
	r.fairTime += dt
	r.sinceFE += r.lastFE * dt
	r.sinceT += dt
	for res := range resource.Count {
		r.utilIntegral[res] += r.lastUtil[res] * dt
		r.sinceUtil[res] += r.lastUtil[res] * dt
	}
}

// repeat records a fair-share update at t that a trace replay skipped
// because nothing changed: every pool is as last observed.
func (r *recorder) repeat(e *engine, t clock.Time) {
	r.stats.FairShareUpdates++
	r.stats.SkippedUpdates++
	r.lastT = t
	dt := min(r.fsPeriod, r.end.Sub(t)).Seconds()
	sample := r.due(t)
	for i := range r.pools {
		p := &r.pools[i]
		p.time += dt
		for res := range resource.Count {
			p.usage[res] += p.last.Usage[res] * dt
			p.demand[res] += p.last.Demand[res] * dt
			p.fairShare[res] += p.last.FairShare[res] * dt
		}
		if p.lastDemand {
			p.demandTime += dt
		}
		if p.lastMet {
			p.metTime += dt
		}
		if sample {
			s := p.last
			s.TimeS = t.Seconds()
			p.samples = append(p.samples, s)
		}
	}
	r.integrateFairness(t, dt, sample)
	if sample {
		if len(r.works) > 0 {
			e.opInfos = e.sched.Operations(e.opInfos[:0])
			r.observeWorkloads(e, t, r.total, e.opInfos)
		}
	}
}

func (r *recorder) result(e *engine) *Result {
	res := &Result{Scenario: r.sc, Total: r.total, Works: r.works}
	r.stats.Nodes = len(e.nodes)
	r.stats.Heartbeats = int64(e.hbNext) + int64(len(e.nodes)) - r.stats.SkippedHeartbeats
	if r.sc.WarmUpS > 0 {
		r.stats.Heartbeats += int64(len(e.nodes))
	}
	r.stats.Samples = len(r.fairness)
	if p := seconds(r.sc.SamplePeriodS); r.period != p {
		r.stats.SamplePeriodS = r.period.Seconds()
	}
	res.Run = r.stats
	res.Fairness = r.fairness
	res.EndS = r.lastT.Seconds()
	res.FairnessErrorIntegral = r3(r.fairIntegral)
	if r.fairTime > 0 {
		res.FairnessErrorMean = r6(r.fairIntegral / r.fairTime)
	}
	if r.sc.Trace != nil {
		res.Trace = r.traceReport(e)
	}
	for i := range r.pools {
		p := &r.pools[i]
		res.Pools = append(res.Pools, PoolResult{
			Name: p.name, Parent: p.parent, Integral: p.integral, Capacity: p.capacity,
			Samples: p.samples, Summary: p.summary(),
		})
	}
	return res
}

// PoolSummary is one pool's entry of summary.json. Amounts are absolute
// (cpu in cores, memory in bytes); counts include the pool's descendants.
type PoolSummary struct {
	Pool                  string             `json:"pool"`
	Parent                string             `json:"parent,omitempty"`
	IntegralGuaranteeType string             `json:"integral_guarantee_type"`
	AverageUsage          map[string]float64 `json:"average_usage"`
	AverageDemand         map[string]float64 `json:"average_demand"`
	AverageFairShare      map[string]float64 `json:"average_fair_share"`
	// DemandTimeS is how long the pool had demand; GuaranteeMetFraction is
	// the part of that time in which its usage reached GuaranteeMetRatio of
	// min(guarantee, demand) in its dominant resource (null without demand).
	DemandTimeS          float64           `json:"demand_time_s"`
	GuaranteeMetTimeS    float64           `json:"guarantee_met_time_s"`
	GuaranteeMetFraction *float64          `json:"guarantee_met_fraction"`
	Preemptions          PreemptionSummary `json:"preemptions"`
	Operations           OperationSummary  `json:"operations"`
	Jobs                 JobSummary        `json:"jobs"`
	Integral             *IntegralSummary  `json:"integral,omitempty"`
}

// PreemptionSummary counts preempted allocations: suffered by the pool's
// jobs, caused by its jobs (the allocations they were preempted for), and
// the graceful ones among those suffered.
type PreemptionSummary struct {
	Suffered         int64 `json:"suffered"`
	Caused           int64 `json:"caused"`
	SufferedGraceful int64 `json:"suffered_graceful"`
}

// OperationSummary counts operations.
type OperationSummary struct {
	Started   int64 `json:"started"`
	Completed int64 `json:"completed"`
	Rejected  int64 `json:"rejected"`
}

// JobSummary counts jobs; a job's wait is the time from becoming pending
// (its operation's arrival, or its preemption) to starting.
type JobSummary struct {
	Started   int64       `json:"started"`
	Completed int64       `json:"completed"`
	Aborted   int64       `json:"aborted_by_scheduler"`
	WaitS     WaitSummary `json:"wait_s"`
}

// WaitSummary holds nearest-rank percentiles of job waits in seconds.
type WaitSummary struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// IntegralSummary describes an integral pool's volume in cpu core·seconds.
type IntegralSummary struct {
	CapacityCPU    float64 `json:"capacity_cpu"`
	MinVolumeCPU   float64 `json:"min_accumulated_volume_cpu"`
	MaxVolumeCPU   float64 `json:"max_accumulated_volume_cpu"`
	FinalVolumeCPU float64 `json:"final_accumulated_volume_cpu"`
}

func amounts(a Amounts, div float64) map[string]float64 {
	m := make(map[string]float64, resource.Count)
	names := resource.Names()
	for r, x := range a {
		v := 0.0
		if div > 0 {
			v = x / div
		}
		m[names[r]] = round(v, r)
	}
	return m
}

// round keeps two decimals of cpu and whole units of the rest.
func round(x float64, r int) float64 {
	if r == int(resource.CPU) {
		return math.Round(x*100) / 100
	}
	return math.Round(x)
}

func percentile(sorted []clock.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i].Seconds()
}

func (p *poolRec) summary() PoolSummary {
	s := PoolSummary{
		Pool: p.name, Parent: p.parent, IntegralGuaranteeType: p.integral.String(),
		AverageUsage:      amounts(p.usage, p.time),
		AverageDemand:     amounts(p.demand, p.time),
		AverageFairShare:  amounts(p.fairShare, p.time),
		DemandTimeS:       math.Round(p.demandTime*1000) / 1000,
		GuaranteeMetTimeS: math.Round(p.metTime*1000) / 1000,
		Preemptions:       PreemptionSummary{Suffered: p.preemptSuffered, Caused: p.preemptCause, SufferedGraceful: p.preemptGraceful},
		Operations:        OperationSummary{Started: p.opsStarted, Completed: p.opsCompleted, Rejected: p.opsRejected},
		Jobs:              JobSummary{Started: p.jobsStarted, Completed: p.jobsCompleted, Aborted: p.jobsAborted},
	}
	if p.demandTime > 0 {
		f := math.Round(p.metTime/p.demandTime*1e6) / 1e6
		s.GuaranteeMetFraction = &f
	}
	w := slices.Clone(p.waits)
	slices.Sort(w)
	s.Jobs.WaitS = WaitSummary{P50: percentile(w, 0.5), P90: percentile(w, 0.9), P99: percentile(w, 0.99), Max: percentile(w, 1)}
	if p.integral != tree.GuaranteeNone {
		s.Integral = &IntegralSummary{
			CapacityCPU:    math.Round(p.capacity[resource.CPU]),
			MinVolumeCPU:   math.Round(p.volMin),
			MaxVolumeCPU:   math.Round(p.volMax),
			FinalVolumeCPU: math.Round(p.volLast),
		}
	}
	return s
}
