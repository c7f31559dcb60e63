package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// Comparison files of an A/B replay.
const (
	CompareJSONFile = "compare.json"
	CompareCSVFile  = "compare.csv"
)

// CompareRow is one metric of one scope (the whole cluster or a pool)
// under configurations A and B; Diff is B − A. A value a pool lacks under
// one configuration (its tree has no such pool) is null.
type CompareRow struct {
	Scope  string   `json:"scope"`
	Metric string   `json:"metric"`
	A      *float64 `json:"a"`
	B      *float64 `json:"b"`
	Diff   *float64 `json:"diff"`
}

// Comparison is compare.json.
type Comparison struct {
	A    string       `json:"a"`
	B    string       `json:"b"`
	Rows []CompareRow `json:"rows"`
}

// overallMetrics are the cluster-wide rows, in order.
var overallMetrics = []string{"fairness_error_mean", "fairness_error_integral", "utilization_cpu", "utilization_gpu",
	"simulated_s"}

// poolMetrics are each pool's (and the overall row's) metrics, in order.
var poolMetrics = []string{"completed", "unfinished", "wait_p50_s", "wait_p90_s", "wait_p99_s", "wait_mean_s",
	"bounded_slowdown_mean", "bounded_slowdown_p90", "preemptions", "lost_work_cpu", "lost_work_gpu",
	"usage_share_cpu", "fair_share_cpu"}

func poolMetric(p *PoolReport, m string) float64 {
	switch m {
	case "completed":
		return float64(p.Completed)
	case "unfinished":
		return float64(p.Unfinished)
	case "wait_p50_s":
		return p.WaitS.P50
	case "wait_p90_s":
		return p.WaitS.P90
	case "wait_p99_s":
		return p.WaitS.P99
	case "wait_mean_s":
		return p.WaitS.Mean
	case "bounded_slowdown_mean":
		return p.BoundedSlowdown.Mean
	case "bounded_slowdown_p90":
		return p.BoundedSlowdown.P90
	case "preemptions":
		return float64(p.Preemptions)
	case "lost_work_cpu":
		return p.LostWork["cpu"]
	case "lost_work_gpu":
		return p.LostWork["gpu"]
	case "usage_share_cpu":
		return p.UsageShare["cpu"]
	case "fair_share_cpu":
		return p.FairShare["cpu"]
	}
	panic("BUG: unknown metric " + m)
}

func overallMetric(t *TraceReport, m string) float64 {
	switch m {
	case "fairness_error_mean":
		return t.FairnessError
	case "fairness_error_integral":
		return t.FairnessErrorIntegral
	case "utilization_cpu":
		return t.Utilization["cpu"]
	case "utilization_gpu":
		return t.Utilization["gpu"]
	case "simulated_s":
		return t.SimulatedS
	}
	panic("BUG: unknown metric " + m)
}

// Compare lines up two replays of the same trace: the cluster's metrics,
// then every pool's (A's pools in tree order, then those only B has).
func Compare(nameA string, a *TraceReport, nameB string, b *TraceReport) Comparison {
	c := Comparison{A: nameA, B: nameB}
	row := func(scope, metric string, x, y *float64) {
		r := CompareRow{Scope: scope, Metric: metric, A: x, B: y}
		if x != nil && y != nil {
			d := r6(*y - *x)
			r.Diff = &d
		}
		c.Rows = append(c.Rows, r)
	}
	ptr := func(x float64) *float64 { return &x }
	for _, m := range overallMetrics {
		row("overall", m, ptr(overallMetric(a, m)), ptr(overallMetric(b, m)))
	}
	for _, m := range poolMetrics {
		row("overall", m, ptr(poolMetric(&a.Overall, m)), ptr(poolMetric(&b.Overall, m)))
	}
	find := func(t *TraceReport, name string) *PoolReport {
		for i := range t.Pools {
			if t.Pools[i].Pool == name {
				return &t.Pools[i]
			}
		}
		return nil
	}
	var names []string
	for _, p := range a.Pools {
		names = append(names, p.Pool)
	}
	for _, p := range b.Pools {
		if !slices.Contains(names, p.Pool) {
			names = append(names, p.Pool)
		}
	}
	for _, n := range names {
		pa, pb := find(a, n), find(b, n)
		for _, m := range poolMetrics {
			var x, y *float64
			if pa != nil {
				x = ptr(poolMetric(pa, m))
			}
			if pb != nil {
				y = ptr(poolMetric(pb, m))
			}
			row(n, m, x, y)
		}
	}
	return c
}

func fmtNum(x *float64) string {
	if x == nil {
		return "-"
	}
	v := *x
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func fmtDiff(r CompareRow) string {
	if r.Diff == nil {
		return "-"
	}
	s := fmtNum(r.Diff)
	if *r.Diff > 0 {
		s = "+" + s
	}
	if *r.A != 0 && *r.Diff != 0 {
		s += " (" + strconv.FormatFloat(*r.Diff/math.Abs(*r.A)*100, 'f', 1, 64) + "%)"
	}
	return s
}

// WriteCompareTable prints the comparison as a side-by-side table: every
// overall metric, then for each pool the rows that differ (all of them
// with all set).
func WriteCompareTable(w io.Writer, c Comparison, all bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%-28s %-24s %16s %16s %22s\n", "scope", "metric", "A: "+short(c.A), "B: "+short(c.B), "B − A")
	same := 0
	for _, r := range c.Rows {
		if r.Scope != "overall" && !all && r.Diff != nil && *r.Diff == 0 {
			same++
			continue
		}
		fmt.Fprintf(bw, "%-28s %-24s %16s %16s %22s\n", short(r.Scope), r.Metric, fmtNum(r.A), fmtNum(r.B), fmtDiff(r))
	}
	if same > 0 {
		fmt.Fprintf(bw, "(%d pool rows equal under A and B not shown; see %s)\n", same, CompareCSVFile)
	}
	return bw.Flush()
}

func short(s string) string {
	if len(s) > 28 {
		return s[:27] + "…"
	}
	return s
}

// WriteCompareCSV writes compare.csv: scope, metric, a, b, diff.
func WriteCompareCSV(w io.Writer, c Comparison) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("scope,metric,a,b,diff\n")
	var b []byte
	num := func(x *float64) {
		b = append(b, ',')
		if x != nil {
			b = strconv.AppendFloat(b, *x, 'f', -1, 64)
		}
	}
	for _, r := range c.Rows {
		b = appendCSVString(b[:0], r.Scope)
		b = append(b, ',')
		b = append(b, r.Metric...)
		num(r.A)
		num(r.B)
		num(r.Diff)
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}

// WriteComparison writes compare.json, compare.csv and the overlaid charts
// (compare-fairness-error, compare-utilization, compare-waits; SVG and
// PNG) into dir and returns the names written.
func WriteComparison(dir string, c Comparison, a, b *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: cannot create the output directory: %w", err)
	}
	var names []string
	write := func(name string, data []byte) error {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("sim: cannot write %s: %w", name, err)
		}
		names = append(names, name)
		return nil
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sim: cannot encode the comparison: %w", err)
	}
	if err := write(CompareJSONFile, append(data, '\n')); err != nil {
		return names, err
	}
	var buf bytes.Buffer
	if err := WriteCompareCSV(&buf, c); err != nil {
		return names, err
	}
	if err := write(CompareCSVFile, buf.Bytes()); err != nil {
		return names, err
	}
	charts := []struct {
		name string
		p    *plot.Plot
	}{
		{"compare-fairness-error", compareFairness(c, a, b)},
		{"compare-utilization", compareUtilization(c, a, b)},
		{"compare-waits", compareWaits(c, a, b)},
	}
	for _, ch := range charts {
		for _, f := range ChartFormats {
			wt, err := ch.p.WriterTo(chartWidth, chartHeight, f)
			if err != nil {
				return names, fmt.Errorf("sim: cannot render %s.%s: %w", ch.name, f, err)
			}
			var buf bytes.Buffer
			if _, err := wt.WriteTo(&buf); err != nil {
				return names, fmt.Errorf("sim: cannot render %s.%s: %w", ch.name, f, err)
			}
			if err := write(ch.name+"."+f, buf.Bytes()); err != nil {
				return names, err
			}
		}
	}
	return names, nil
}

var colB = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}

func compareFairness(c Comparison, a, b *Result) *plot.Plot {
	p := newPlot("fairness error over time: A ("+short(c.A)+") vs B ("+short(c.B)+")", "fairness error (share)")
	xa, ha := fairnessXYs(a)
	xb, hb := fairnessXYs(b)
	line(p, "A "+short(c.A), xa, colUsage, 1)
	line(p, "B "+short(c.B), xb, colB, 1, 3, 2)
	p.Y.Min, p.Y.Max = 0, max(ha, hb, 0.01)*headroom
	p.X.Min, p.X.Max = 0, max(runHours(a), runHours(b))
	return p
}

func compareUtilization(c Comparison, a, b *Result) *plot.Plot {
	p := newPlot("cluster utilization over time: A vs B", "usage share")
	for k, r := range reportResources {
		if !usedResource(a, r) && !usedResource(b, r) {
			continue
		}
		for i, res := range []*Result{a, b} {
			xys := make(plotter.XYs, len(res.Fairness))
			for j, s := range res.Fairness {
				xys[j] = plotter.XY{X: s.TimeS / 3600, Y: s.Utilization[r]}
			}
			if i == 0 {
				line(p, "A "+r.String(), xys, palette[k], 1)
			} else {
				line(p, "B "+r.String(), xys, palette[k], 1, 3, 2)
			}
		}
	}
	p.Y.Min, p.Y.Max = 0, headroom
	p.X.Min, p.X.Max = 0, max(runHours(a), runHours(b))
	return p
}

// compareWaits overlays the distributions of the jobs' waits: the share of
// completed jobs that waited at most x (log scale of 1 + wait).
func compareWaits(c Comparison, a, b *Result) *plot.Plot {
	p := newPlot("jobs' waits: fraction of completed jobs that waited at most x", "fraction of jobs")
	p.X.Label.Text = "wait (s, log scale of 1 + wait)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	hi := 10.0
	cdf := func(ws []float64) plotter.XYs {
		s := slices.Clone(ws)
		slices.Sort(s)
		// At most 1000 points: the chart cannot show more.
		step := max(1, len(s)/1000)
		var xys plotter.XYs
		for i := 0; i < len(s); i += step {
			xys = append(xys, plotter.XY{X: 1 + s[i], Y: float64(i+1) / float64(len(s))})
		}
		if n := len(s); n > 0 {
			xys = append(xys, plotter.XY{X: 1 + s[n-1], Y: 1})
			hi = max(hi, 1+s[n-1])
		}
		return xys
	}
	xa, xb := cdf(a.Trace.waits), cdf(b.Trace.waits)
	if len(xa) > 0 {
		line(p, "A "+short(c.A), xa, colUsage, 1.5)
	}
	if len(xb) > 0 {
		line(p, "B "+short(c.B), xb, colB, 1.5, 3, 2)
	}
	if rec := a.Trace.recorded; len(rec) > 0 {
		line(p, "recorded in the trace", cdf(rec), colDemand, 1, 1, 2)
	}
	p.X.Min, p.X.Max = 1, hi*1.5
	p.Y.Min, p.Y.Max = 0, headroom
	return p
}
