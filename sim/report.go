package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/resource"
)

// Trace replays' report files.
const (
	ReportFile   = "report.json"
	PoolsFile    = "pools.csv"
	FairnessFile = "fairness.csv"
)

// TraceReport is report.json: what a trace replay did, per pool and
// overall.
type TraceReport struct {
	Trace TraceInfo `json:"trace"`
	// SkippedAtReplay counts the trace jobs the replay could not start (a
	// configured cluster too small for them, the scheduler's limits).
	SkippedAtReplay []SkipCount `json:"skipped_at_replay"`
	// SimulatedS is the virtual time the replay took: until every job
	// that will finish has (or the config's duration_s).
	SimulatedS float64 `json:"simulated_s"`
	// Ended says why the replay ended: EndedDone, EndedDuration or
	// EndedStalled (the unfinished jobs are counted per pool).
	Ended string `json:"ended"`
	// FairnessError is the time mean of the fairness error (see
	// FairnessSample) and FairnessErrorIntegral its integral over the
	// run, in share·seconds.
	FairnessError         float64 `json:"fairness_error_mean"`
	FairnessErrorIntegral float64 `json:"fairness_error_integral"`
	// Utilization is the cluster's mean usage share of each resource.
	Utilization map[string]float64 `json:"utilization"`
	Overall     PoolReport         `json:"overall"`
	Pools       []PoolReport       `json:"pools"`

	// waits and recorded are every completed job's simulated and
	// recorded waits, for the comparison's chart.
	waits, recorded []float64
}

// PoolReport is one pool's (and its descendants') trace jobs.
type PoolReport struct {
	Pool   string `json:"pool"`
	Parent string `json:"parent,omitempty"`
	// Submitted trace jobs, Completed ones, and those still unfinished
	// when the replay ended (pods running at the trace's end among them).
	Submitted  int64 `json:"submitted"`
	Completed  int64 `json:"completed"`
	Unfinished int64 `json:"unfinished"`
	// WaitS is the simulated wait of the completed jobs: submit to the
	// start of their last job; RecordedWaitS the production scheduler's
	// wait that the trace recorded for the same jobs (null when it
	// records none).
	WaitS         Stats  `json:"wait_s"`
	RecordedWaitS *Stats `json:"recorded_wait_s"`
	// BoundedSlowdown is max(1, (wait + run) / max(run, 10 s)) per job.
	BoundedSlowdown Stats `json:"bounded_slowdown"`
	// Preemptions of the pool's jobs and the work they lost: resource ×
	// seconds run before the preemption (cpu in core·seconds, memory in
	// byte·seconds, gpu in gpu·seconds).
	Preemptions int64              `json:"preemptions"`
	LostWork    map[string]float64 `json:"lost_work"`
	// Mean usage share and fair share of the cluster, per resource.
	UsageShare map[string]float64 `json:"usage_share"`
	FairShare  map[string]float64 `json:"fair_share"`
}

// Stats are the mean and nearest-rank percentiles of a sample.
type Stats struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func stats(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(f float64) float64 {
		i := max(0, min(int(math.Ceil(f*float64(len(s))))-1, len(s)-1))
		return r3(s[i])
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Stats{Count: int64(len(s)), Mean: r3(sum / float64(len(s))), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: q(1)}
}

func r3(x float64) float64 { return math.Round(x*1000) / 1000 }
func r6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// reportResources are the resources the report shows shares of.
var reportResources = []resource.Kind{resource.CPU, resource.Memory, resource.GPU}

func (r *recorder) traceReport(e *engine) *TraceReport {
	tr := &TraceReport{Trace: r.sc.Trace.Info, SkippedAtReplay: r.traceSkips.get(), SimulatedS: r3(r.lastT.Seconds()), Ended: e.ended,
		FairnessErrorIntegral: r3(r.fairIntegral), Utilization: map[string]float64{}}
	if tr.SkippedAtReplay == nil {
		tr.SkippedAtReplay = []SkipCount{}
	}
	if r.fairTime > 0 {
		tr.FairnessError = r6(r.fairIntegral / r.fairTime)
		for _, k := range reportResources {
			tr.Utilization[k.String()] = r6(r.utilIntegral[k] / r.fairTime)
		}
	}
	for i := range r.pools {
		p := &r.pools[i]
		pr := PoolReport{Pool: p.name, Parent: p.parent, Submitted: p.traceSubmitted, Completed: p.traceDone,
			Unfinished: p.traceSubmitted - p.traceDone, WaitS: stats(p.traceWaits), BoundedSlowdown: stats(p.slowdowns),
			Preemptions: p.preemptSuffered, LostWork: map[string]float64{}, UsageShare: map[string]float64{}, FairShare: map[string]float64{}}
		if len(p.recordedWaits) > 0 {
			s := stats(p.recordedWaits)
			pr.RecordedWaitS = &s
		}
		for _, k := range reportResources {
			pr.LostWork[k.String()] = math.Round(p.lost[k])
			tot := float64(r.total[k])
			if k == resource.CPU {
				tot /= resource.CPUScale
			}
			if p.time > 0 && tot > 0 {
				pr.UsageShare[k.String()] = r6(p.usage[k] / p.time / tot)
				pr.FairShare[k.String()] = r6(p.fairShare[k] / p.time / tot)
			} else {
				pr.UsageShare[k.String()], pr.FairShare[k.String()] = 0, 0
			}
		}
		if p.parentIdx < 0 {
			tr.Overall = pr
			tr.waits, tr.recorded = p.traceWaits, p.recordedWaits
		} else {
			tr.Pools = append(tr.Pools, pr)
		}
	}
	return tr
}

// WriteReport writes report.json (indented, with a final newline).
func WriteReport(w io.Writer, tr *TraceReport) error {
	data, err := json.MarshalIndent(tr, "", "  ")
	if err != nil {
		return fmt.Errorf("sim: cannot encode the report: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// PoolsHeader returns the columns of pools.csv.
func PoolsHeader() []string {
	h := []string{"pool", "parent", "submitted", "completed", "unfinished",
		"wait_p50_s", "wait_p90_s", "wait_p99_s", "wait_mean_s",
		"recorded_wait_p50_s", "recorded_wait_p90_s", "recorded_wait_p99_s",
		"bounded_slowdown_mean", "bounded_slowdown_p50", "bounded_slowdown_p90", "bounded_slowdown_p99",
		"preemptions"}
	for _, k := range reportResources {
		h = append(h, "lost_work_"+k.String())
	}
	for _, k := range reportResources {
		h = append(h, "usage_share_"+k.String(), "fair_share_"+k.String())
	}
	return h
}

// WritePools writes pools.csv: the overall row (the root) first, then one
// row per pool in tree pre-order. Recorded waits are empty when the trace
// records none.
func WritePools(w io.Writer, tr *TraceReport) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(PoolsHeader(), ","))
	bw.WriteByte('\n')
	var b []byte
	f := func(x float64) { b = append(b, ','); b = strconv.AppendFloat(b, x, 'f', -1, 64) }
	for _, p := range append([]PoolReport{tr.Overall}, tr.Pools...) {
		b = appendCSVString(b[:0], p.Pool)
		b = append(b, ',')
		b = appendCSVString(b, p.Parent)
		for _, n := range []int64{p.Submitted, p.Completed, p.Unfinished} {
			f(float64(n))
		}
		for _, x := range []float64{p.WaitS.P50, p.WaitS.P90, p.WaitS.P99, p.WaitS.Mean} {
			f(x)
		}
		if rw := p.RecordedWaitS; rw != nil {
			f(rw.P50)
			f(rw.P90)
			f(rw.P99)
		} else {
			b = append(b, ",,,"...)
		}
		for _, x := range []float64{p.BoundedSlowdown.Mean, p.BoundedSlowdown.P50, p.BoundedSlowdown.P90, p.BoundedSlowdown.P99, float64(p.Preemptions)} {
			f(x)
		}
		for _, k := range reportResources {
			f(p.LostWork[k.String()])
		}
		for _, k := range reportResources {
			f(p.UsageShare[k.String()])
			f(p.FairShare[k.String()])
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}

// FairnessHeader returns the columns of fairness.csv.
func FairnessHeader() []string {
	return []string{"time_s", "fairness_error", "pools_with_demand", "utilization_cpu", "utilization_memory", "utilization_gpu"}
}

// WriteFairness writes fairness.csv: the fairness error and the cluster's
// utilization at each sample.
func WriteFairness(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(FairnessHeader(), ","))
	bw.WriteByte('\n')
	var b []byte
	for _, s := range res.Fairness {
		b = strconv.AppendFloat(b[:0], s.TimeS, 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, fix(s.Error, 1e6), 'f', -1, 64)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(s.PoolsWithDemand), 10)
		for _, k := range reportResources {
			b = append(b, ',')
			b = strconv.AppendFloat(b, fix(s.Utilization[k], 1e6), 'f', -1, 64)
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}
