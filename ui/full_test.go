package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/core/clock"
)

// needFull skips a test of the full browser suite unless -ui.full.
func needFull(t *testing.T) {
	t.Helper()
	chromiumPath(t)
	if !*fullUI {
		t.Skip("the full browser suite runs with -ui.full: make test-ui")
	}
}

// TestBrowserPools: the resource toggle redraws every bar for the chosen
// resource; the integral pools' sparklines follow their volumes as the
// server's clock advances; the keyboard moves through the tree and opens
// and closes pools; "Find" lists the matching pools with their paths.
func TestBrowserPools(t *testing.T) {
	needFull(t)
	cl := startDemo(t)
	b := newBrowser(t, 90*time.Second)
	b.open(cl.srv.URL, "/pools")
	b.waitFor("the pool tree", `document.querySelectorAll('.pool-row').length >= 4`)

	// The resource toggle: memory for every pool.
	b.click(`.resource-toggle input[value="memory"]`)
	b.waitFor("the bars for memory", `[...document.querySelectorAll('.bars')].every(b => b.dataset.resource === 'memory')`)
	orchid := cl.pools()
	for _, name := range []string{"<Root>", "production", "research", "adhoc"} {
		got, p := b.bars(poolRow(name)), orchid[name]
		if !near(got.Usage, min(1, p.UsageShare.Memory)) || !near(got.Strong+got.Integral+got.Weight, p.FairShare.Memory) ||
			!near(got.Demand, min(1, p.DemandShare.Memory)) {
			t.Errorf("%s for memory: bars %+v, orchid fair %.4f usage %.4f demand %.4f", name, got, p.FairShare.Memory, p.UsageShare.Memory, p.DemandShare.Memory)
		}
	}
	b.click(`.resource-toggle input[value="cpu"]`)
	b.waitFor("the bars for cpu", `[...document.querySelectorAll('.bars')].every(b => b.dataset.resource === 'cpu')`)

	// The sparklines: production's volume grows as the clock advances (by
	// less than the nodes' heartbeat timeout, with their heartbeats); the
	// page polls every 0.25 s, and each step waits until it shows the new
	// volume.
	for i := range 4 {
		cl.step(50)
		p := cl.pools()["production"]
		b.waitFor(fmt.Sprintf("production's volume %d", i), fmt.Sprintf(
			`Number(document.querySelector('.pool-row[data-pool="production"] .integral-cell').dataset.volume) === %s`,
			strconv.FormatFloat(p.AccumulatedResourceVolume.CPU, 'g', -1, 64)))
	}
	spark := `document.querySelector('.pool-row[data-pool="production"] .spark')`
	distinct := eval[int](b, `new Set(`+spark+`.querySelector('polyline').getAttribute('points').split(' ').map(p => p.split(',')[1])).size`)
	if distinct < 5 {
		t.Errorf("production's sparkline has %d distinct heights after 4 volume changes", distinct)
	}
	if label := eval[string](b, spark+`.getAttribute('aria-label')`); !strings.Contains(label, "of capacity") {
		t.Errorf("the sparkline's label %q", label)
	}

	// The page as a person sees it: research and production open, each
	// pool on its dominant resource.
	b.click(`.resource-toggle input[value="dominant"]`)
	b.click(poolRow("research") + ` button.toggle`)
	b.click(poolRow("production") + ` button.toggle`)
	b.waitFor("the child pools", `!!document.querySelector('.pool-row[data-pool="nlp"]') && !!document.querySelector('.pool-row[data-pool="etl"]')`)
	checkA11y(t, b, "pools")
	b.screenshot("pools")
	b.click(poolRow("research") + ` button.toggle`)
	b.click(poolRow("production") + ` button.toggle`)
	b.waitFor("the tree closed", `document.querySelectorAll('.pool-row').length === 4`)

	// The keyboard: down from the root to production, right opens research,
	// down enters it, left goes back to research, left closes it.
	b.run("focus the root", chromedp.Focus(chromedp.CSS(poolRow("<Root>")+` a.pool-link`)))
	focused := func() string {
		return eval[string](b, `document.activeElement.dataset.pool || document.activeElement.tagName`)
	}
	key := func(k string) { b.run("key", chromedp.KeyEvent(k)) }
	steps := []struct{ key, want string }{
		{kb.ArrowDown, "production"},
		{kb.ArrowDown, "research"},
		{kb.ArrowRight, "research"}, // opens it
		{kb.ArrowRight, "vision"},   // into it
		{kb.ArrowDown, "nlp"},
		{kb.ArrowLeft, "research"},
		{kb.ArrowLeft, "research"}, // closes it
		{kb.ArrowDown, "adhoc"},
		{kb.Home, "<Root>"},
		{kb.End, "adhoc"},
	}
	for i, s := range steps {
		key(s.key)
		if got := focused(); got != s.want {
			t.Fatalf("key %d: the focus is on %q, want %q", i, got, s.want)
		}
	}
	if eval[bool](b, `!!document.querySelector('.pool-row[data-pool="vision"]')`) {
		t.Errorf("research is closed but vision is still in the page")
	}

	// Find.
	b.run("find", chromedp.SendKeys(chromedp.ID("pool-find"), "n"))
	b.waitFor("the matches", `document.querySelectorAll('.pool-row').length === 3`)
	got := eval[[]string](b, `[...document.querySelectorAll('.pool-row')].map(r => r.dataset.pool + ' ' + r.querySelector('.path').innerText)`)
	want := []string{"production", "vision in research", "nlp in research"}
	if !slices.Equal(trimAll(got), trimAll(want)) {
		t.Errorf("Find n: %q, want %q", got, want)
	}
}

func trimAll(s []string) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = strings.TrimSpace(s[i])
	}
	return out
}

// TestBrowserOperations: the operations view lists the operations, filters
// them by pool and state, sorts them by start, usage and satisfaction; the
// operation page shows tasks and allocations by preemption status.
func TestBrowserOperations(t *testing.T) {
	needFull(t)
	cl := startDemo(t)
	b := newBrowser(t, 90*time.Second)
	ctx := context.Background()
	page, err := cl.c.ListOperations(ctx, client.OperationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ops := page.Operations
	b.open(cl.srv.URL, "/operations")
	b.waitFor("the operations", fmt.Sprintf(`document.querySelectorAll('table.ops tbody tr').length === %d`, len(ops)))
	rows := func() []string {
		return eval[[]string](b, `[...document.querySelectorAll('table.ops tbody tr')].map(tr => tr.dataset.op)`)
	}
	order := func(less func(a, b client.Operation) bool) []string {
		s := slices.Clone(ops)
		slices.SortStableFunc(s, func(a, b client.Operation) int {
			switch {
			case less(a, b):
				return -1
			case less(b, a):
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		ids := make([]string, len(s))
		for i := range s {
			ids[i] = s[i].ID
		}
		return ids
	}
	dominantUsage := func(o client.Operation) float64 {
		res, best := "cpu", -1.0
		for _, r := range []string{"cpu", "memory", "gpu", "user_slots", "network"} {
			if v := share(o.DemandShare, r); v > best {
				res, best = r, v
			}
		}
		return share(o.UsageShare, res)
	}
	if want := order(func(a, b client.Operation) bool { return a.StartTimeS > b.StartTimeS }); !slices.Equal(rows(), want) {
		t.Errorf("newest first: %q, want %q", rows(), want)
	}
	b.click(`th button`) // "Started": already sorted by it, so the order turns
	b.waitFor("oldest first", `document.querySelector('th[aria-sort="ascending"]') !== null`)
	if want := order(func(a, b client.Operation) bool { return a.StartTimeS < b.StartTimeS }); !slices.Equal(rows(), want) {
		t.Errorf("oldest first: %q, want %q", rows(), want)
	}
	b.run("sort by usage", chromedp.Click(chromedp.Search(`//th/button[text()="Usage"]`)))
	b.waitFor("by usage", `document.querySelectorAll('th[aria-sort="descending"]').length === 1`)
	if want := order(func(a, b client.Operation) bool { return dominantUsage(a) > dominantUsage(b) }); !slices.Equal(rows(), want) {
		t.Errorf("by usage: %q, want %q", rows(), want)
	}
	b.run("sort by satisfaction", chromedp.Click(chromedp.Search(`//th/button[text()="Satisfaction"]`)))
	b.waitFor("by satisfaction", `location.hash.includes('sort=satisfaction')`)
	if want := order(func(a, b client.Operation) bool { return a.SatisfactionRatio < b.SatisfactionRatio }); !slices.Equal(rows(), want) {
		t.Errorf("least satisfied first: %q, want %q", rows(), want)
	}
	// The usage column's bars are the operations' usage shares.
	for _, o := range ops {
		got := eval[float64](b, fmt.Sprintf(`(() => { const tr = document.querySelector('tr[data-op=%q]');
			const t = tr.querySelectorAll('.track')[0]; return t.querySelector('.seg').getBoundingClientRect().width / t.clientWidth; })()`, o.ID))
		if !near(got, min(1, dominantUsage(o))) {
			t.Errorf("%s: the usage bar is %.4f, the usage share is %.4f", o.ID, got, dominantUsage(o))
		}
	}
	checkA11y(t, b, "operations")
	b.screenshot("operations")

	// Filters: by pool, then by state as well.
	b.run("filter by pool", chromedp.SendKeys(chromedp.ID("op-pool"), "nlp\n"))
	b.waitFor("the operations of nlp", `document.querySelectorAll('table.ops tbody tr').length === 1 && location.hash.includes('pool=nlp')`)
	if got := rows(); !slices.Equal(got, []string{"sweep"}) {
		t.Errorf("pool nlp: %q", got)
	}
	b.run("filter by state", chromedp.SetValue(chromedp.ID("op-state"), "pending"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('op-state').dispatchEvent(new Event('change'))`))
	b.waitFor("no pending operation in nlp", `document.querySelectorAll('table.ops tbody tr').length === 0 && location.hash.includes('state=pending')`)

	// The operation page: tasks, allocations by preemption status.
	o, err := cl.c.OperationOrchid(ctx, "nightly-etl")
	if err != nil {
		t.Fatal(err)
	}
	b.goTo("/operations/nightly-etl")
	b.waitFor("the operation page", `document.querySelectorAll('table.tasks tbody tr').length === 1`)
	task := eval[string](b, `document.querySelector('table.tasks tbody tr').innerText`)
	for _, w := range []string{"map", "80", "cpu 1", "memory 4 GiB", "10 min"} {
		if !strings.Contains(task, w) {
			t.Errorf("the task row %q lacks %q", task, w)
		}
	}
	counts := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll('table.allocs tr[data-status]')].map(tr => [tr.dataset.status, tr.querySelector('td').innerText]))`)
	c := o.AllocationCounts
	for st, n := range map[string]int64{"non_preemptible": c.NonPreemptible, "aggressively_preemptible": c.AggressivelyPreemptible,
		"preemptible": c.Preemptible, "preempted": c.Preempted} {
		if counts[st] != fmt.Sprint(n) {
			t.Errorf("allocations %s: the page shows %q, the orchid %d", st, counts[st], n)
		}
	}
	if eval[bool](b, `document.querySelector('.preemptions').closest('section').querySelector('p.muted').hidden`) {
		t.Errorf("nightly-etl preempted nothing, the page does not say so")
	}
	bars := b.bars(`section[aria-labelledby="h-share"]`)
	res := o.DominantResource
	if !near(bars.Usage, min(1, share(o.UsageShare, res))) || !near(bars.Strong+bars.Integral+bars.Weight, share(o.FairShare, res)) {
		t.Errorf("nightly-etl's bars %+v, orchid fair %.4f usage %.4f (%s)", bars, share(o.FairShare, res), share(o.UsageShare, res), res)
	}
	if !strings.Contains(eval[string](b, `document.querySelector('.op-head').innerText`), "starving") {
		t.Errorf("nightly-etl is starving: the page does not say so")
	}
	checkA11y(t, b, "operation page")
}

// TestBrowserNodes: the nodes view shows each node's usage bars, tags,
// allocation count and heartbeat age; the node page its allocations.
func TestBrowserNodes(t *testing.T) {
	needFull(t)
	cl := startDemo(t)
	cl.srv.Advance(1500 * clock.Millisecond) // the heartbeats are 2.5 s old
	b := newBrowser(t, 60*time.Second)
	ctx := context.Background()
	page, err := cl.c.ListNodes(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	b.open(cl.srv.URL, "/nodes")
	b.waitFor("the nodes", fmt.Sprintf(`document.querySelectorAll('table.nodes tbody tr').length === %d`, len(page.Nodes)))
	for _, n := range page.Nodes {
		row := fmt.Sprintf(`document.querySelector('tr[data-node=%q]')`, n.ID)
		cpu := eval[float64](b, row+`.querySelector('td[data-resource="cpu"] .seg').getBoundingClientRect().width / `+row+`.querySelector('td[data-resource="cpu"] .track').clientWidth`)
		if want := min(1, n.ResourceUsage.CPU/n.ResourceLimits.CPU); !near(cpu, want) {
			t.Errorf("%s: the cpu bar is %.4f, usage/limit %.4f", n.ID, cpu, want)
		}
		text := eval[string](b, row+`.innerText`)
		for _, w := range append(slices.Clone(n.Tags), fmt.Sprint(n.AllocationCount), "2.5 s ago",
			fmt.Sprintf("%g / %g", n.ResourceUsage.CPU, n.ResourceLimits.CPU)) {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the row %q lacks %q", n.ID, text, w)
			}
		}
	}
	if eval[bool](b, `!document.querySelector('th[data-resource="gpu"]').hidden`) {
		t.Errorf("no node has a gpu, the gpu column is shown")
	}
	checkA11y(t, b, "nodes")
	b.screenshot("nodes")

	n := page.Nodes[0]
	b.click(fmt.Sprintf(`tr[data-node=%q] a.node-link`, n.ID))
	b.waitFor("the node page", fmt.Sprintf(`document.querySelectorAll('table.node-allocs tbody tr').length === %d`, n.AllocationCount))
}

// TestBrowserWhatIf: a snapshot pasted (the page's example) and one
// uploaded (examples/drf-paper.json) are solved and drawn; the bars are
// POST /api/v1/solve's fair shares.
func TestBrowserWhatIf(t *testing.T) {
	needFull(t)
	cl := newCluster(t, demoConfig)
	b := newBrowser(t, 60*time.Second, "status of 400") // the bad snapshot at the end
	b.open(cl.srv.URL, "/whatif")
	b.waitFor("the what-if form", `!!document.getElementById('snapshot')`)
	b.run("load the example", chromedp.Click(chromedp.Search(`//button[text()="Load an example"]`)))
	b.run("solve", chromedp.Click(chromedp.Search(`//button[text()="Solve"]`)))
	b.waitFor("the fair shares", `document.querySelectorAll('.whatif-tree .pool-row').length === 8`)
	snapshot := eval[string](b, `document.getElementById('snapshot').value`)
	checkSolve(t, b, cl, []byte(snapshot), []string{"<Root>", "production", "etl", "research", "train", "sweep", "adhoc", "notebook"})
	if got := eval[int](b, `document.querySelectorAll('#whatif-update option').length`); got != 2 {
		t.Errorf("the example has 2 updates, the page offers %d", got)
	}
	checkA11y(t, b, "what-if")
	checkA11yFinds(t, b)
	b.screenshot("whatif")

	drf, err := filepath.Abs("../examples/drf-paper.json")
	if err != nil {
		t.Fatal(err)
	}
	b.run("upload", chromedp.SetUploadFiles(chromedp.ID("snapshot-file"), []string{drf}))
	b.waitFor("the uploaded snapshot's fair shares", `!!document.querySelector('.whatif-tree .pool-row[data-element="userA"]')`)
	raw, err := os.ReadFile(drf)
	if err != nil {
		t.Fatal(err)
	}
	checkSolve(t, b, cl, raw, []string{"userA", "userB"})

	b.run("a bad snapshot", chromedp.SetValue(chromedp.ID("snapshot"), `{"tree": {}}`),
		chromedp.Click(chromedp.Search(`//button[text()="Solve"]`)))
	b.waitFor("the error", `document.querySelector('main p[aria-live]').innerText.includes('refused')`)
}

// checkSolve compares the what-if bars of the last update with the
// server's solve of the snapshot.
func checkSolve(t *testing.T, b *browser, cl *cluster, snapshot []byte, names []string) {
	t.Helper()
	var v any
	if err := json.Unmarshal(snapshot, &v); err != nil {
		t.Fatal(err)
	}
	res, err := cl.c.Solve(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	last := res.Updates[len(res.Updates)-1]
	for _, name := range names {
		e, ok := last.Elements[name]
		if !ok {
			t.Fatalf("solve has no element %s", name)
		}
		got := b.bars(fmt.Sprintf(`.whatif-tree .pool-row[data-element=%q]`, name))
		r := e.DominantResource
		if got.Resource != r || !near(got.Strong+got.Integral+got.Weight, share(e.FairShare, r)) ||
			!near(got.Usage, min(1, share(e.UsageShare, r))) || !near(got.Demand, min(1, share(e.DemandShare, r))) {
			t.Errorf("%s: bars %+v; solve: %s fair %.4f usage %.4f demand %.4f", name, got, r,
				share(e.FairShare, r), share(e.UsageShare, r), share(e.DemandShare, r))
		}
	}
}
