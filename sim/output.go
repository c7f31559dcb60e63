package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/resource"
)

// Output file names inside the output directory.
const (
	TimeseriesFile = "timeseries.csv"
	SummaryFile    = "summary.json"
)

// csvResources is the order in which resources get their column groups: cpu
// first (the columns the issue names), then the others.
var csvResources = []resource.Kind{resource.CPU, resource.Memory, resource.GPU, resource.UserSlots, resource.Network}

// TimeseriesHeader returns the columns of timeseries.csv.
func TimeseriesHeader() []string {
	h := []string{"time_s", "pool",
		"usage_cpu", "demand_cpu", "fair_share_cpu", "strong_guarantee_cpu", "integral_guarantee_cpu",
		"weight_proportional_cpu", "accumulated_volume_cpu", "running_operations", "pending_operations",
		"starvation_status", "guarantee_cpu", "accumulated_resource_ratio_volume", "below_fair_share", "satisfaction"}
	for _, r := range csvResources[1:] {
		n := r.String()
		h = append(h, "usage_"+n, "demand_"+n, "fair_share_"+n, "strong_guarantee_"+n, "integral_guarantee_"+n,
			"weight_proportional_"+n, "guarantee_"+n, "accumulated_volume_"+n)
	}
	return h
}

// WriteTimeseries writes timeseries.csv: one row per pool per sample, in
// time order and tree pre-order within a time. Amounts are absolute: cpu in
// cores, memory in bytes; volumes in resource·seconds.
func WriteTimeseries(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(TimeseriesHeader(), ","))
	bw.WriteByte('\n')
	n := 0
	for _, p := range res.Pools {
		n = max(n, len(p.Samples))
	}
	var b []byte
	for i := range n {
		for _, p := range res.Pools {
			if i >= len(p.Samples) {
				continue
			}
			b = appendRow(b[:0], p.Name, &p.Samples[i])
			bw.Write(b)
		}
	}
	return bw.Flush()
}

func appendAmount(b []byte, x float64, r resource.Kind) []byte {
	if r == resource.CPU {
		return strconv.AppendFloat(b, fix(x, 100), 'f', 2, 64)
	}
	return strconv.AppendFloat(b, fix(x, 1), 'f', 0, 64)
}

// fix rounds x to 1/scale and turns -0 into 0, so that the text is stable.
func fix(x, scale float64) float64 {
	x = float64(int64(x*scale+copysignHalf(x))) / scale
	if x == 0 {
		return 0
	}
	return x
}

func copysignHalf(x float64) float64 {
	if x < 0 {
		return -0.5
	}
	return 0.5
}

func appendRow(b []byte, pool string, s *Sample) []byte {
	b = strconv.AppendFloat(b, s.TimeS, 'f', -1, 64)
	b = append(b, ',')
	b = append(b, pool...)
	cpu := resource.CPU
	for _, x := range []float64{s.Usage[cpu], s.Demand[cpu], s.FairShare[cpu], s.StrongGuarantee[cpu],
		s.IntegralGuarantee[cpu], s.WeightProportional[cpu]} {
		b = append(b, ',')
		b = appendAmount(b, x, cpu)
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, fix(s.AccumulatedVolume[cpu], 1), 'f', 0, 64)
	b = append(b, ',')
	b = strconv.AppendInt(b, s.Running, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, s.Pending, 10)
	b = append(b, ',')
	b = append(b, s.Starvation.String()...)
	b = append(b, ',')
	b = appendAmount(b, s.Guarantee[cpu], cpu)
	b = append(b, ',')
	b = strconv.AppendFloat(b, fix(s.VolumeRatio, 1000), 'f', 3, 64)
	b = append(b, ',')
	if s.BelowFairShare {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, fix(s.Satisfaction, 1e6), 'f', -1, 64)
	for _, r := range csvResources[1:] {
		for _, x := range []float64{s.Usage[r], s.Demand[r], s.FairShare[r], s.StrongGuarantee[r],
			s.IntegralGuarantee[r], s.WeightProportional[r], s.Guarantee[r]} {
			b = append(b, ',')
			b = appendAmount(b, x, r)
		}
		b = append(b, ',')
		b = strconv.AppendFloat(b, fix(s.AccumulatedVolume[r], 1), 'f', 0, 64)
	}
	return append(b, '\n')
}

// WorkloadsFile holds the per-workload time series.
const WorkloadsFile = "workloads.csv"

// WorkloadsHeader returns the columns of workloads.csv.
func WorkloadsHeader() []string {
	return []string{"time_s", "workload", "pool", "usage_cpu", "demand_cpu", "fair_share_cpu",
		"usage_memory", "demand_memory", "fair_share_memory", "operations", "running_jobs", "pending_jobs"}
}

// WriteWorkloads writes workloads.csv: one row per workload entry per
// sample, summed over its unfinished operations.
func WriteWorkloads(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(WorkloadsHeader(), ","))
	bw.WriteByte('\n')
	n := 0
	for _, wr := range res.Works {
		n = max(n, len(wr.Samples))
	}
	var b []byte
	cpu, mem := resource.CPU, resource.Memory
	for i := range n {
		for _, wr := range res.Works {
			if i >= len(wr.Samples) {
				continue
			}
			s := &wr.Samples[i]
			b = strconv.AppendFloat(b[:0], s.TimeS, 'f', -1, 64)
			b = append(b, ',')
			b = appendCSVString(b, wr.Name)
			b = append(b, ',')
			b = append(b, wr.Pool...)
			for _, x := range []float64{s.Usage[cpu], s.Demand[cpu], s.FairShare[cpu]} {
				b = append(b, ',')
				b = appendAmount(b, x, cpu)
			}
			for _, x := range []float64{s.Usage[mem], s.Demand[mem], s.FairShare[mem]} {
				b = append(b, ',')
				b = appendAmount(b, x, mem)
			}
			for _, x := range []int64{s.Operations, s.RunningJobs, s.PendingJobs} {
				b = append(b, ',')
				b = strconv.AppendInt(b, x, 10)
			}
			b = append(b, '\n')
			bw.Write(b)
		}
	}
	return bw.Flush()
}

// appendCSVString quotes a free-form name when CSV needs it.
func appendCSVString(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	return append(append(append(b, '"'), strings.ReplaceAll(s, `"`, `""`)...), '"')
}

// Summary is summary.json.
type Summary struct {
	Scenario               string             `json:"scenario"`
	Description            string             `json:"description,omitempty"`
	Seed                   uint64             `json:"seed"`
	DurationS              float64            `json:"duration_s"`
	WarmUpS                float64            `json:"warm_up_s"`
	HeartbeatPeriodS       float64            `json:"heartbeat_period_s"`
	FairShareUpdatePeriodS float64            `json:"fair_share_update_period_s"`
	SamplePeriodS          float64            `json:"sample_period_s"`
	TotalResources         map[string]float64 `json:"total_resources"`
	GuaranteeMetRatio      float64            `json:"guarantee_met_ratio"`
	// FairnessErrorMean and FairnessErrorIntegral are the run's fairness
	// error (FairnessSample): its time mean and its integral in
	// share·seconds.
	FairnessErrorMean     float64       `json:"fairness_error_mean"`
	FairnessErrorIntegral float64       `json:"fairness_error_integral"`
	Run                   RunStats      `json:"run"`
	Pools                 []PoolSummary `json:"pools"`
}

// Summarize builds summary.json's content.
func Summarize(res *Result) Summary {
	sc := res.Scenario
	var total Amounts
	for r := range resource.Count {
		total[r] = float64(res.Total[r])
	}
	total[resource.CPU] /= resource.CPUScale
	s := Summary{
		Scenario: sc.Name, Description: sc.Description, Seed: sc.Seed, DurationS: sc.DurationS, WarmUpS: sc.WarmUpS,
		HeartbeatPeriodS: sc.HeartbeatPeriodS, FairShareUpdatePeriodS: sc.FairShareUpdatePeriodS, SamplePeriodS: sc.SamplePeriodS,
		TotalResources: amounts(total, 1), GuaranteeMetRatio: GuaranteeMetRatio, Run: res.Run,
		FairnessErrorMean: res.FairnessErrorMean, FairnessErrorIntegral: res.FairnessErrorIntegral,
	}
	if sc.Trace != nil {
		s.DurationS = res.EndS
	}
	for _, p := range res.Pools {
		s.Pools = append(s.Pools, p.Summary)
	}
	return s
}

// WriteSummary writes summary.json (indented, with a final newline).
func WriteSummary(w io.Writer, res *Result) error {
	data, err := json.MarshalIndent(Summarize(res), "", "  ")
	if err != nil {
		return fmt.Errorf("sim: cannot encode the summary: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// WriteOutputs writes timeseries.csv, summary.json and the charts (SVG and
// PNG, see ChartFiles) into dir, creating it if needed. It returns the
// names of the files written, relative to dir.
func WriteOutputs(dir string, res *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: cannot create the output directory: %w", err)
	}
	var names []string
	write := func(name string, f func(io.Writer) error) error {
		var buf bytes.Buffer
		if err := f(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("sim: cannot write %s: %w", name, err)
		}
		names = append(names, name)
		return nil
	}
	if err := write(TimeseriesFile, func(w io.Writer) error { return WriteTimeseries(w, res) }); err != nil {
		return names, err
	}
	if err := write(WorkloadsFile, func(w io.Writer) error { return WriteWorkloads(w, res) }); err != nil {
		return names, err
	}
	if err := write(SummaryFile, func(w io.Writer) error { return WriteSummary(w, res) }); err != nil {
		return names, err
	}
	if res.Trace != nil {
		if err := write(ReportFile, func(w io.Writer) error { return WriteReport(w, res.Trace) }); err != nil {
			return names, err
		}
		if err := write(PoolsFile, func(w io.Writer) error { return WritePools(w, res.Trace) }); err != nil {
			return names, err
		}
		if err := write(FairnessFile, func(w io.Writer) error { return WriteFairness(w, res) }); err != nil {
			return names, err
		}
	}
	charts, err := Charts(res)
	if err != nil {
		return names, err
	}
	for _, c := range charts {
		if err := write(c.Name, func(w io.Writer) error { _, err := w.Write(c.Data); return err }); err != nil {
			return names, err
		}
	}
	return names, nil
}
