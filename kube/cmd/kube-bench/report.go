package main

import (
	"fmt"
	"strings"
	"time"
)

// Report is what kube-bench writes with --report.
type Report struct {
	Config  map[string]any `json:"config"`
	Started time.Time      `json:"started"`
	Results []Result       `json:"results"`
}

// Result is one scheduler's run. Times are from the watch: a pod's
// pending→bound latency runs from when the watch first saw it to when it
// first saw it bound; BoundSeconds from the first create request to the
// last bind seen.
type Result struct {
	Scheduler     string  `json:"scheduler"`
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
	s := fmt.Sprintf("%s: %d pods bound in %.1f s (%.0f pods/s; created in %.1f s) on %d nodes; pending→bound p50 %.0f ms, p99 %.0f ms, max %.0f ms",
		r.Scheduler, r.Pods, r.BoundSeconds, r.PodsPerSecond, r.CreateSeconds, r.Nodes, r.P50Ms, r.P99Ms, r.MaxMs)
	if r.Gap != nil {
		s += fmt.Sprintf("; largest fair-share gap %.1f%% (%.4f of the cluster)", 100*r.Gap.MaxRel, r.Gap.MaxAbs)
	}
	return s
}

func (rep Report) table() string {
	var b strings.Builder
	b.WriteString("\n| scheduler | pods | all bound (s) | pods/s | p50 (ms) | p99 (ms) | max (ms) | fair-share gap |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		gap := "n/a"
		if r.Gap != nil {
			gap = fmt.Sprintf("%.1f%%", 100*r.Gap.MaxRel)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.0f | %.0f | %.0f | %.0f | %s |\n", r.Scheduler, r.Pods, r.BoundSeconds, r.PodsPerSecond, r.P50Ms, r.P99Ms, r.MaxMs, gap)
	}
	return b.String()
}
