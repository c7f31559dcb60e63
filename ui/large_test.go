package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fairsched/fairsched/client"
)

// largeConfig is a tree of 1,000 pools: 10 groups under the root, 990
// leaves under them (group-00 has 150, more than the 100 a pool shows at
// first; the others 93 or 94).
func largeConfig() string {
	type pool struct {
		Name   string  `json:"name"`
		Parent string  `json:"parent,omitempty"`
		Weight float64 `json:"weight,omitempty"`
	}
	var pools []pool
	for g := range 10 {
		pools = append(pools, pool{Name: fmt.Sprintf("group-%02d", g), Weight: float64(1 + g%3)})
	}
	for i := range 990 {
		g := 0
		if i >= 150 {
			g = 1 + (i-150)%9
		}
		pools = append(pools, pool{Name: fmt.Sprintf("leaf-%03d", i), Parent: fmt.Sprintf("group-%02d", g), Weight: float64(1 + i%4)})
	}
	cfg := map[string]any{
		"config": map[string]any{"max_operation_count": 50000, "max_running_operation_count": 20000,
			"max_operation_count_per_pool": 100000, "max_running_operation_count_per_pool": 100000},
		"pools": pools,
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestBrowserLarge: with 1,000 pools and 10,000 operations the pools view
// draws only the expanded pools, at most 100 children of a pool until
// "Show more", and the operations view one page of 100; the times are
// logged and bounded (generously: this machine may be shared).
func TestBrowserLarge(t *testing.T) {
	needFull(t)
	cl := newCluster(t, largeConfig())
	cl.addNodes(20, 64, 256, func(i int) []string { return []string{fmt.Sprintf("rack-%d", i%4)} })
	cl.step(1)
	start := time.Now()
	const ops = 10000
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < ops; i += 4 {
				_, err := cl.c.StartOperation(context.Background(), client.OperationSpec{ID: fmt.Sprintf("op-%05d", i),
					Pool: fmt.Sprintf("leaf-%03d", i%990), Tasks: job(int64(1+i%7), 1, 1)})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cl.step(1)
	cl.step(1)
	t.Logf("1,000 pools and %d operations started in %v", ops, time.Since(start).Round(time.Millisecond))

	b := newBrowser(t, 3*time.Minute)
	rows := `document.querySelectorAll('.pool-row').length`
	// The timings are logged, not asserted: they depend on the machine
	// and its load (make test-ui runs with -v and prints them).
	measure := func(what, expr string) {
		t.Helper()
		t0 := time.Now()
		b.waitFor(what, expr)
		t.Logf("%s: %v", what, time.Since(t0).Round(time.Millisecond))
	}
	t0 := time.Now()
	b.open(cl.srv.URL, "/pools")
	measure("the pools view (root and 10 groups)", rows+` === 11`)
	t.Logf("page load and first draw: %v", time.Since(t0).Round(time.Millisecond))

	b.click(poolRow("group-00") + ` button.toggle`)
	measure("group-00 opened (100 of its 150 pools)", rows+` === 111 && !!document.querySelector('li.more button')`)
	b.click(`li.more button`)
	measure("the 50 more", rows+` === 161 && !document.querySelector('li.more button')`)

	// Expand all, timed in the page: the rows drawn and laid out.
	drawn := eval[float64](b, `(() => { const t0 = performance.now();
		[...document.querySelectorAll('button')].find(b => b.textContent === 'Expand all').click();
		document.body.getBoundingClientRect(); return performance.now() - t0; })()`)
	t.Logf("expand all: every pool drawn and laid out in %.0f ms", drawn)
	measure("every pool drawn", rows+` === 1001`)
	// A refresh with 1,000 rows in the page: fetch, decode, redraw in
	// place (the page notes how long its last refresh took).
	b.waitFor("a refresh after expand all", `(() => { const u = document.getElementById('updated');
		if (window.__first === undefined) window.__first = u.textContent + u.dataset.ms;
		return u.textContent + u.dataset.ms !== window.__first; })()`)
	ms := eval[string](b, `document.getElementById('updated').dataset.ms`)
	t.Logf("a refresh of the pools view with every pool drawn: %s ms", ms)
	prof, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(async () => { const t0 = performance.now(); const r = await fetch('/api/v1/orchid/pools'); const txt = await r.text(); const t1 = performance.now(); JSON.parse(txt); const t2 = performance.now(); return 'fetch ' + Math.round(t1-t0) + ' ms, ' + txt.length + ' bytes, parse ' + Math.round(t2-t1) + ' ms'; })()`, chromedp.EvalAwaitPromise))
	t.Logf("in the page: %s", prof)
	b.run("collapse all", chromedp.Click(chromedp.Search(`//button[text()="Collapse all"]`)))
	measure("back to the groups", rows+` === 11`)

	b.goTo("/operations")
	measure("the operations view (10,000 operations, page 1)",
		`document.querySelectorAll('table.ops tbody tr').length === 100 && document.querySelector('main p[aria-live]').innerText.startsWith('10,000 operations')`)
	b.click(`nav.pager button:last-child`)
	measure("page 2", `document.querySelector('nav.pager span').innerText.startsWith('101–200')`)
	if n := eval[int](b, `document.querySelectorAll('tr').length`); n > 102 {
		t.Errorf("the operations view has %d table rows, want one page", n)
	}
}
