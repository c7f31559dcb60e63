package ui_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fairsched/fairsched/client"
)

// chartJS reads a history chart of the pool page back from the rendered
// SVG: each series' vertices as [time, value], from the chart's scale and
// time range (its data- attributes).
const chartJS = `((chart) => {
  const svg = document.querySelector('.chart-fig[data-chart="' + chart + '"] svg');
  if (!svg) return null;
  const d = svg.dataset, top = +d.top, W = +d.w, H = +d.h, pad = +d.pad, from = +d.from, to = +d.to;
  const out = {};
  for (const el of svg.querySelectorAll('[data-series]')) {
    const pts = el.tagName === 'circle' ? [[+el.getAttribute('cx'), +el.getAttribute('cy')]]
      : el.getAttribute('points').trim().split(' ').map((p) => p.split(',').map(Number));
    for (const [x, y] of pts) {
      const t = to > from ? from + (x - pad) / (W - 2 * pad) * (to - from) : from;
      (out[el.dataset.series] = out[el.dataset.series] || []).push([Math.round(t), (H - pad - y) / (H - 2 * pad) * top, top]);
    }
  }
  return out;
})(%q)`

// TestBrowserPoolHistory: the pool page of a starving pool, opened from
// the pools view, charts its history as GET /api/v1/pools/{name}/history
// answers it: every point of usage, fair share and demand where the API
// has one (read back from the drawn SVG), a strip cell per point in the
// point's state, and the window switches to the coarse tier.
func TestBrowserPoolHistory(t *testing.T) {
	needFull(t)
	cl := startDemo(t)
	for range 30 { // a few more 10-second steps of the starving production
		cl.step(1)
	}
	b := newBrowser(t, 60*time.Second)
	b.open(cl.srv.URL, "/pools")
	b.waitFor("the pool tree", `!!document.querySelector('.pool-row[data-pool="production"] a.pool-page')`)
	b.click(poolRow("production") + ` a.pool-page`)
	b.waitFor("the charts", `document.querySelectorAll('.chart-fig svg [data-series]').length >= 3 && document.querySelectorAll('.strip rect').length > 0`)
	h, err := cl.c.PoolHistory(context.Background(), "production", -3600, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The page draws from the first point with an update.
	for len(h.Points) > 0 && h.Points[0].Samples == 0 {
		h.Points = h.Points[1:]
	}
	var want []client.HistoryPoint
	starving := false
	for _, p := range h.Points {
		if p.Samples > 0 {
			want = append(want, p)
			starving = starving || p.Starvation != "non_starving"
		}
	}
	if len(want) < 4 || !starving {
		t.Fatalf("production's history: %+v; want a few points, some starving", h)
	}
	for _, c := range []struct {
		chart, series string
		value         func(client.HistoryPoint) float64
	}{
		{"usage", "usage", func(p client.HistoryPoint) float64 { return p.Usage }},
		{"usage", "fair_share", func(p client.HistoryPoint) float64 { return p.FairShare }},
		{"demand", "demand", func(p client.HistoryPoint) float64 { return p.Demand }},
	} {
		got := eval[map[string][][3]float64](b, fmt.Sprintf(chartJS, c.chart))[c.series]
		if len(got) != len(want) {
			t.Errorf("%s: %d vertices drawn, the API has %d points with updates", c.series, len(got), len(want))
			continue
		}
		for i, p := range want {
			top := got[i][2]
			if got[i][0] != p.Time || math.Abs(got[i][1]-c.value(p)) > top*0.005 {
				t.Errorf("%s at %v: drawn (%v, %.4f), the API says %.4f (scale %.4f)", c.series, p.Time, got[i][0], got[i][1], c.value(p), top)
			}
		}
	}
	states := eval[[]string](b, `[...document.querySelectorAll('.strip rect')].map((r) => r.dataset.state)`)
	if len(states) != len(h.Points) {
		t.Fatalf("the strip has %d cells, the API %d points", len(states), len(h.Points))
	}
	for i, p := range h.Points {
		want := "normal"
		switch {
		case p.Samples == 0:
			want = "none"
		case p.Starvation == "aggressively_starving":
			want = "aggressively-starving"
		case p.Starvation == "starving":
			want = "starving"
		case p.BelowFairShare:
			want = "below"
		}
		if states[i] != want {
			t.Errorf("strip cell %d (%v): %s, want %s", i, p.Time, states[i], want)
		}
	}
	if label := eval[string](b, `document.querySelector('.strip').getAttribute('aria-label')`); !containsAll(label, "Starvation of production", "starving") {
		t.Errorf("the strip's label %q", label)
	}
	checkA11y(t, b, "pool page")
	b.screenshot("pool")

	// The last 24 hours: the coarse tier, 5-minute points.
	b.run("the 24-hour window", setSelect("history-window", "day"))
	day, err := cl.c.PoolHistory(context.Background(), "production", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for len(day.Points) > 0 && day.Points[0].Samples == 0 {
		day.Points = day.Points[1:]
	}
	b.waitFor("the 24-hour chart", fmt.Sprintf(`document.querySelectorAll('.strip rect').length === %d && document.querySelector('[aria-live]') !== null`, len(day.Points)))
	if day.StepS != 300 {
		t.Errorf("the 24-hour history's step is %v s, want 300", day.StepS)
	}
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// setSelect chooses value in the select of id and fires its change event.
func setSelect(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q;
		s.dispatchEvent(new Event('change')); })()`, id, value))
}
