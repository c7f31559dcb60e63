package sim

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Chart is one rendered chart file.
type Chart struct {
	Name string // file name, e.g. "pool-prod-usage.svg"
	Data []byte
}

// ChartFormats are the formats every chart is rendered in.
var ChartFormats = []string{"svg", "png"}

const (
	chartWidth  = 9 * vg.Inch
	chartHeight = 4 * vg.Inch
)

var (
	colUsage     = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colFairShare = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colDemand    = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colGuarantee = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colCapacity  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	palette      = []color.Color{colUsage, colFairShare, colGuarantee, colCapacity,
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}}
)

// fileName turns a pool name into a file-name part (':' is not portable).
func fileName(pool string) string { return strings.ReplaceAll(pool, ":", "_") }

// Charts renders the run's charts, each as SVG and PNG:
//
//   - cluster-usage: every top-level pool's cpu usage over time;
//   - pool-<name>-usage: a pool's cpu usage, demand, fair share and
//     guarantee (strong + integral) over time;
//   - pool-<name>-workloads (pools with two or more workload entries):
//     each entry's cpu usage and fair share;
//   - pool-<name>-volume (integral pools): the accumulated cpu volume and
//     the pool's capacity over time.
//
// The last two are the figures of YTsaurus's integral-guarantees
// documentation. Rendering is deterministic: equal results give equal bytes.
func Charts(res *Result) ([]Chart, error) {
	var out []Chart
	add := func(name string, p *plot.Plot) error {
		for _, f := range ChartFormats {
			wt, err := p.WriterTo(chartWidth, chartHeight, f)
			if err != nil {
				return fmt.Errorf("sim: cannot render %s.%s: %w", name, f, err)
			}
			var buf bytes.Buffer
			if _, err := wt.WriteTo(&buf); err != nil {
				return fmt.Errorf("sim: cannot render %s.%s: %w", name, f, err)
			}
			out = append(out, Chart{Name: name + "." + f, Data: buf.Bytes()})
		}
		return nil
	}
	if p := clusterChart(res); p != nil {
		if err := add("cluster-usage", p); err != nil {
			return nil, err
		}
	}
	if res.Trace != nil {
		for _, c := range []struct {
			name string
			p    *plot.Plot
		}{{"fairness-error", fairnessChart(res)}, {"utilization", utilizationChart(res)}} {
			if err := add(c.name, c.p); err != nil {
				return nil, err
			}
		}
	}
	// A trace replay may have hundreds of pools: it charts those that used
	// the most (see PoolChartLimit).
	var charted map[string]bool
	if res.Trace != nil {
		charted = topPools(res, "", PoolChartLimit)
	}
	for i := range res.Pools {
		pr := &res.Pools[i]
		if pr.Parent == "" || len(pr.Samples) == 0 {
			continue // the root: see cluster-usage
		}
		if charted != nil && !charted[pr.Name] {
			continue
		}
		if err := add("pool-"+fileName(pr.Name)+"-usage", usageChart(res, pr)); err != nil {
			return nil, err
		}
		if p := workloadsChart(res, pr); p != nil {
			if err := add("pool-"+fileName(pr.Name)+"-workloads", p); err != nil {
				return nil, err
			}
		}
		if pr.Integral != tree.GuaranteeNone {
			if err := add("pool-"+fileName(pr.Name)+"-volume", volumeChart(res, pr)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// niceTicks marks an axis every 1, 2, 2.5 or 5 × 10^k, about six times.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step))) + 1
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		for k := 1; k < 5; k++ {
			if m := v + step*float64(k)/5; m <= hi {
				ticks = append(ticks, plot.Tick{Value: m})
			}
		}
	}
	return ticks
}

// headroom leaves the top of a chart to its legend: data fill the lower
// 1/headroom of the height.
const headroom = 1.45

func newPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Y.Tick.Marker = niceTicks{}
	p.X.Tick.Marker = niceTicks{}
	p.Title.Text = title
	p.X.Label.Text = "time (h)"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Legend.YOffs = -vg.Points(6)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe0}
	g.Horizontal.Color = color.Gray{Y: 0xe0}
	p.Add(g)
	return p
}

func line(p *plot.Plot, label string, xys plotter.XYs, c color.Color, width float64, dashes ...float64) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		panic("BUG: cannot draw a line of finite points: " + err.Error())
	}
	l.LineStyle.Color = c
	l.LineStyle.Width = vg.Points(width)
	for _, d := range dashes {
		l.LineStyle.Dashes = append(l.LineStyle.Dashes, vg.Points(d))
	}
	p.Add(l)
	p.Legend.Add(label, l)
}

// series returns the points (hours, f(sample)) and their maximum, for the
// pools' and the workloads' samples alike.
func series[S any, P interface {
	*S
	hours() float64
}](samples []S, f func(*S) float64) (plotter.XYs, float64) {
	xys := make(plotter.XYs, len(samples))
	hi := 0.0
	for i := range samples {
		y := f(&samples[i])
		xys[i] = plotter.XY{X: P(&samples[i]).hours(), Y: y}
		hi = max(hi, y)
	}
	return xys, hi
}

func (s *Sample) hours() float64     { return s.TimeS / 3600 }
func (s *WorkSample) hours() float64 { return s.TimeS / 3600 }

func clip(xys plotter.XYs, hi float64) bool {
	clipped := false
	for i := range xys {
		if xys[i].Y > hi {
			xys[i].Y, clipped = hi, true
		}
	}
	return clipped
}

func xRange(p *plot.Plot, res *Result) {
	p.X.Min, p.X.Max = 0, runHours(res)
}

// runHours is the length of the run's record in hours.
func runHours(res *Result) float64 {
	if res.Scenario.Trace != nil {
		return res.EndS / 3600
	}
	return res.Scenario.DurationS / 3600
}

func usageChart(res *Result, pr *PoolResult) *plot.Plot {
	cpu := resource.CPU
	p := newPlot("pool "+pr.Name+": cpu usage, demand and fair share", "cpu (cores)")
	usage, uHi := series(pr.Samples, func(s *Sample) float64 { return s.Usage[cpu] })
	fair, fHi := series(pr.Samples, func(s *Sample) float64 { return s.FairShare[cpu] })
	guar, gHi := series(pr.Samples, func(s *Sample) float64 { return s.Guarantee[cpu] })
	demand, dHi := series(pr.Samples, func(s *Sample) float64 { return s.Demand[cpu] })
	// Demand may be many times the cluster (a backlog of pending jobs):
	// clip it just above the other lines, and say so in the legend.
	total := cores(res.Total[cpu])
	top := max(uHi, fHi, gHi, min(dHi, total))
	if top <= 0 {
		top = max(total, 1)
	}
	demandLabel := "demand"
	if clip(demand, top*1.12) {
		demandLabel = "demand (clipped)"
	}
	line(p, demandLabel, demand, colDemand, 1, 4, 3)
	line(p, "guarantee (strong + integral)", guar, colGuarantee, 1, 1, 2)
	line(p, "fair share", fair, colFairShare, 1.5)
	line(p, "usage", usage, colUsage, 1.5)
	p.Y.Min, p.Y.Max = 0, top*headroom
	xRange(p, res)
	return p
}

func volumeChart(res *Result, pr *PoolResult) *plot.Plot {
	cpu := resource.CPU
	p := newPlot("pool "+pr.Name+": accumulated integral volume", "volume (cpu·h)")
	vol, vHi := series(pr.Samples, func(s *Sample) float64 { return s.AccumulatedVolume[cpu] / 3600 })
	capacity := pr.Capacity[cpu] / 3600
	capLine := make(plotter.XYs, 0, 2)
	if len(vol) > 0 {
		capLine = append(capLine, plotter.XY{X: 0, Y: capacity}, plotter.XY{X: runHours(res), Y: capacity})
	}
	line(p, "capacity (resource_flow × saturation period)", capLine, colCapacity, 1, 4, 3)
	line(p, "accumulated volume", vol, colUsage, 1.5)
	p.Y.Min, p.Y.Max = 0, max(vHi, capacity, 1)*headroom
	xRange(p, res)
	return p
}

// clusterChart shows every top-level pool's cpu usage and the cluster's cpu.
func clusterChart(res *Result) *plot.Plot {
	cpu := resource.CPU
	if len(res.Pools) == 0 || len(res.Pools[0].Samples) == 0 {
		return nil
	}
	root := res.Pools[0].Name
	p := newPlot("cluster: cpu usage of the top-level pools", "cpu (cores)")
	total := cores(res.Total[cpu])
	hi := total
	k := 0
	shown := topPools(res, root, len(palette)-1)
	for i := range res.Pools {
		pr := &res.Pools[i]
		if pr.Parent != root || !shown[pr.Name] {
			continue
		}
		usage, uHi := series(pr.Samples, func(s *Sample) float64 { return s.Usage[cpu] })
		hi = max(hi, uHi)
		line(p, pr.Name, usage, palette[k%len(palette)], 1.5)
		k++
	}
	used, _ := series(res.Pools[0].Samples, func(s *Sample) float64 { return s.Usage[cpu] })
	line(p, "all pools", used, colDemand, 1, 4, 3)
	if n := len(shown); n < countChildren(res, root) {
		p.Title.Text = "cluster: cpu usage of the " + strconv.Itoa(n) + " top-level pools that used the most"
	}
	p.Y.Min, p.Y.Max = 0, hi*headroom
	xRange(p, res)
	return p
}

// workloadsChart shows the cpu usage and fair share of each workload entry
// of a pool that has two or more.
func workloadsChart(res *Result, pr *PoolResult) *plot.Plot {
	cpu := resource.CPU
	var works []*WorkResult
	for i := range res.Works {
		if res.Works[i].Pool == pr.Name && len(res.Works[i].Samples) > 0 {
			works = append(works, &res.Works[i])
		}
	}
	if len(works) < 2 {
		return nil
	}
	p := newPlot("pool "+pr.Name+": cpu usage (solid) and fair share (dashed) by workload", "cpu (cores)")
	hi := 0.0
	for k, w := range works {
		c := palette[k%len(palette)]
		usage, uHi := series(w.Samples, func(s *WorkSample) float64 { return s.Usage[cpu] })
		fair, fHi := series(w.Samples, func(s *WorkSample) float64 { return s.FairShare[cpu] })
		hi = max(hi, uHi, fHi)
		line(p, w.Name+" fair share", fair, c, 1, 4, 3)
		line(p, w.Name+" usage", usage, c, 1.5)
	}
	p.Y.Min, p.Y.Max = 0, max(hi, 1)*headroom
	xRange(p, res)
	return p
}

// PoolChartLimit is how many pools of a trace replay get their own charts:
// those with the most cpu usage over the run.
const PoolChartLimit = 12

// topPools returns the n pools with the most mean cpu usage among the
// children of parent ("" for every non-root pool), ties by tree order.
func topPools(res *Result, parent string, n int) map[string]bool {
	type pu struct {
		name  string
		usage float64
		i     int
	}
	var ps []pu
	for i := range res.Pools {
		pr := &res.Pools[i]
		if pr.Parent == "" || parent != "" && pr.Parent != parent {
			continue
		}
		ps = append(ps, pu{pr.Name, pr.Summary.AverageUsage["cpu"], i})
	}
	slices.SortStableFunc(ps, func(a, b pu) int {
		if a.usage != b.usage {
			if a.usage > b.usage {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	out := map[string]bool{}
	for _, p := range ps[:min(n, len(ps))] {
		out[p.name] = true
	}
	return out
}

func countChildren(res *Result, parent string) int {
	n := 0
	for i := range res.Pools {
		if res.Pools[i].Parent == parent {
			n++
		}
	}
	return n
}

func fairnessXYs(res *Result) (plotter.XYs, float64) {
	xys := make(plotter.XYs, len(res.Fairness))
	hi := 0.0
	for i, s := range res.Fairness {
		xys[i] = plotter.XY{X: s.TimeS / 3600, Y: s.Error}
		hi = max(hi, s.Error)
	}
	return xys, hi
}

// fairnessChart shows the fairness error over time.
func fairnessChart(res *Result) *plot.Plot {
	p := newPlot("fairness error: mean |dominant usage share − fair share| over pools with demand", "fairness error (share)")
	xys, hi := fairnessXYs(res)
	line(p, "fairness error", xys, colUsage, 1)
	p.Y.Min, p.Y.Max = 0, max(hi, 0.01)*headroom
	xRange(p, res)
	return p
}

// utilizationChart shows the cluster's usage share of cpu, memory and gpu
// (the resources it has) over time.
func utilizationChart(res *Result) *plot.Plot {
	p := newPlot("cluster utilization: usage share of each resource", "usage share")
	for k, r := range reportResources {
		if !usedResource(res, r) {
			continue
		}
		xys := make(plotter.XYs, len(res.Fairness))
		for i, s := range res.Fairness {
			xys[i] = plotter.XY{X: s.TimeS / 3600, Y: s.Utilization[r]}
		}
		line(p, r.String(), xys, palette[k], 1)
	}
	p.Y.Min, p.Y.Max = 0, headroom
	xRange(p, res)
	return p
}

// usedResource reports whether the run ever used resource r (an swf
// replay's nodes have memory that no job asks for).
func usedResource(res *Result, r resource.Kind) bool {
	for _, s := range res.Fairness {
		if s.Utilization[r] > 0 {
			return true
		}
	}
	return false
}
