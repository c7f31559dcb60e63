package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what kube-bench writes with --report.
type Report struct {
	Config  map[string]any `json:"config"`
	Started time.Time      `json:"started"`
	Results []Result       `json:"results"`
	// Summary is each scheduler's medians over its runs, with ranges.
	Summary []Summary `json:"summary"`
}

// Summary is one scheduler's runs: the median of each figure and its
// range (min, max).
type Summary struct {
	Scheduler     string     `json:"scheduler"`
	Runs          int        `json:"runs"`
	BoundSeconds  [3]float64 `json:"all_bound_seconds"`
	PodsPerSecond [3]float64 `json:"pods_bound_per_second"`
	P50Ms         [3]float64 `json:"p50_pending_to_bound_ms"`
	P99Ms         [3]float64 `json:"p99_pending_to_bound_ms"`
	// GapRel is the largest relative fair-share gap (fairsched only).
	GapRel *[3]float64 `json:"max_relative_fair_share_gap,omitempty"`
}

// summarize groups results by scheduler, in their first order.
func summarize(results []Result) []Summary {
	var out []Summary
	by := map[string][]Result{}
	for _, r := range results {
		if _, ok := by[r.Scheduler]; !ok {
			out = append(out, Summary{Scheduler: r.Scheduler})
		}
		by[r.Scheduler] = append(by[r.Scheduler], r)
	}
	for i := range out {
		rs := by[out[i].Scheduler]
		pick := func(f func(Result) float64) [3]float64 {
			v := make([]float64, len(rs))
			for j, r := range rs {
				v[j] = f(r)
			}
			return medianRange(v)
		}
		out[i].Runs = len(rs)
		out[i].BoundSeconds = pick(func(r Result) float64 { return r.BoundSeconds })
		out[i].PodsPerSecond = pick(func(r Result) float64 { return r.PodsPerSecond })
		out[i].P50Ms = pick(func(r Result) float64 { return r.P50Ms })
		out[i].P99Ms = pick(func(r Result) float64 { return r.P99Ms })
		if rs[0].Gap != nil {
			g := pick(func(r Result) float64 {
				if r.Gap == nil {
					return 0
				}
				return r.Gap.MaxRel
			})
			out[i].GapRel = &g
		}
	}
	return out
}

// medianRange is the median of v (the mean of the middle two for an even
// count), its least and its greatest.
func medianRange(v []float64) [3]float64 {
	if len(v) == 0 {
		return [3]float64{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return [3]float64{m, s[0], s[len(s)-1]}
}

// Result is one scheduler's run. Times are from the watch: a pod's
// pending→bound latency runs from when the watch first saw it (under
// --backlog, from the scheduler's start) to when it first saw it bound;
// BoundSeconds from the first create request (under --backlog, the
// scheduler's start) to the last bind seen.
type Result struct {
	Scheduler     string  `json:"scheduler"`
	Run           int     `json:"run"`
	Pods          int     `json:"pods"`
	Nodes         int     `json:"nodes_used"`
	CreateSeconds float64 `json:"create_seconds"`
	BoundSeconds  float64 `json:"all_bound_seconds"`
	PodsPerSecond float64 `json:"pods_bound_per_second"`
	P50Ms         float64 `json:"p50_pending_to_bound_ms"`
	P99Ms         float64 `json:"p99_pending_to_bound_ms"`
	MaxMs         float64 `json:"max_pending_to_bound_ms"`
	Gap           *Gap    `json:"fair_share_gap,omitempty"`
}

// Gap is, after convergence, how far each pool's running (usage) share is
// from its fair share, in its dominant resource: the largest relative gap
// (|usage - fair| / fair) and absolute gap (in shares of the cluster).
type Gap struct {
	MaxRel float64              `json:"max_relative"`
	MaxAbs float64              `json:"max_absolute"`
	Pools  map[string]PoolShare `json:"pools"`
}

// PoolShare is one pool's shares of the cluster.
type PoolShare struct {
	Usage float64 `json:"usage_share"`
	Fair  float64 `json:"fair_share"`
}

func (r Result) line() string {
	s := fmt.Sprintf("%s run %d: %d pods bound in %.1f s (%.0f pods/s; created in %.1f s) on %d nodes; pending→bound p50 %.0f ms, p99 %.0f ms, max %.0f ms",
		r.Scheduler, r.Run, r.Pods, r.BoundSeconds, r.PodsPerSecond, r.CreateSeconds, r.Nodes, r.P50Ms, r.P99Ms, r.MaxMs)
	if r.Gap != nil {
		s += fmt.Sprintf("; largest fair-share gap %.1f%% (%.4f of the cluster)", 100*r.Gap.MaxRel, r.Gap.MaxAbs)
	}
	return s
}

func (rep Report) table() string {
	var b strings.Builder
	b.WriteString("\n| scheduler | run | pods | all bound (s) | pods/s | p50 (ms) | p99 (ms) | max (ms) | fair-share gap |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		gap := "n/a"
		if r.Gap != nil {
			gap = fmt.Sprintf("%.1f%%", 100*r.Gap.MaxRel)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.0f | %.0f | %.0f | %.0f | %s |\n", r.Scheduler, r.Run, r.Pods, r.BoundSeconds,
			r.PodsPerSecond, r.P50Ms, r.P99Ms, r.MaxMs, gap)
	}
	b.WriteString("\nMedians (min–max):\n\n| scheduler | runs | all bound (s) | pods/s | p50 (ms) | p99 (ms) | fair-share gap |\n|---|---|---|---|---|---|---|\n")
	for _, s := range rep.Summary {
		gap := "n/a"
		if s.GapRel != nil {
			gap = fmt.Sprintf("%.1f%% (%.1f–%.1f)", 100*s.GapRel[0], 100*s.GapRel[1], 100*s.GapRel[2])
		}
		f := func(v [3]float64, prec int) string {
			return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, v[0], prec, v[1], prec, v[2])
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", s.Scheduler, s.Runs, f(s.BoundSeconds, 1),
			f(s.PodsPerSecond, 0), f(s.P50Ms, 0), f(s.P99Ms, 0), gap)
	}
	return b.String()
}
