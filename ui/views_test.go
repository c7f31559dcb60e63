package ui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// poolRow is the selector of a pool's row in the pools view.
func poolRow(name string) string { return fmt.Sprintf(`.pool-row[data-pool=%q]`, name) }

// checkPools asserts that each pool's row shows its name and bars whose
// widths, measured in the page, are the orchid's shares of the pool's
// dominant resource: the fair share's three stacked parts, usage, demand
// (capped at the track's end) and the strong guarantee's marker.
func checkPools(t *testing.T, b *browser, cl *cluster, names []string) {
	t.Helper()
	orchid := cl.pools()
	for _, name := range names {
		p, ok := orchid[name]
		if !ok {
			t.Fatalf("no pool %s in the orchid", name)
		}
		got := b.bars(poolRow(name))
		res := p.DominantResource
		if got.Resource != res {
			t.Errorf("%s: bars drawn for %s, the dominant resource is %s", name, got.Resource, res)
		}
		if !strings.Contains(got.Text, name) {
			t.Errorf("%s: the row does not show the name: %q", name, got.Text)
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"strong part of the fair share", got.Strong, share(p.Detailed.StrongGuarantee, res)},
			{"integral part of the fair share", got.Integral, share(p.Detailed.IntegralGuarantee, res)},
			{"weight-proportional part of the fair share", got.Weight, share(p.Detailed.WeightProportional, res)},
			{"usage", got.Usage, min(1, share(p.UsageShare, res))},
			{"demand", got.Demand, min(1, share(p.DemandShare, res))},
			{"strong guarantee marker", got.Guarantee, min(1, share(p.StrongGuaranteeShare, res))},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s: the %s bar is %.4f of its track, the orchid says %.4f (%s)", name, c.what, c.got, c.want, res)
			}
		}
		if sum := got.Strong + got.Integral + got.Weight; !near(sum, share(p.FairShare, res)) {
			t.Errorf("%s: the fair share bar is %.4f of its track, the orchid says %.4f", name, sum, share(p.FairShare, res))
		}
	}
}

// TestBrowserShort is the browser test that go test (make test) runs: the
// pools view shows the known tree with bars matching the orchid and the
// starving pool marked, and the operation page of a preempted operation
// shows the preemption's reason. A few seconds of browser time.
func TestBrowserShort(t *testing.T) {
	chromiumPath(t)
	cl := startDemo(t)
	b := newBrowser(t, 60*time.Second)

	b.open(cl.srv.URL, "/pools")
	b.waitFor("the pool tree", `document.querySelectorAll('.pool-row').length >= 4`)
	checkPools(t, b, cl, []string{"<Root>", "production", "research", "adhoc"})
	b.click(poolRow("research") + ` button.toggle`)
	b.click(poolRow("production") + ` button.toggle`)
	b.waitFor("the child pools", `!!document.querySelector('.pool-row[data-pool="nlp"]') && !!document.querySelector('.pool-row[data-pool="etl"]')`)
	checkPools(t, b, cl, demoPools)

	// Production starves: its row says so in words and is marked.
	prod := b.bars(poolRow("production"))
	if !strings.Contains(prod.ClassName, "starving") || !strings.Contains(prod.Text, "starving") {
		t.Errorf("production is starving, its row is %q: %q", prod.ClassName, prod.Text)
	}
	if r := b.bars(poolRow("adhoc")); strings.Contains(r.Text, "starving") {
		t.Errorf("adhoc is not starving, its row says %q", r.Text)
	}

	// The operation page of sweep shows its preemptions with their reasons.
	o, err := cl.c.OperationOrchid(context.Background(), "sweep")
	if err != nil || len(o.RecentPreemptions) == 0 {
		t.Fatalf("sweep: %+v, %v; want recent preemptions", o, err)
	}
	b.goTo("/operations/sweep")
	b.waitFor("the preemptions of sweep", `document.querySelectorAll('.preemptions td.reason').length > 0`)
	reasons := eval[[]string](b, `[...document.querySelectorAll('.preemptions tbody tr')].map(tr => tr.dataset.allocation + ' ' + tr.querySelector('.reason').innerText)`)
	if len(reasons) != len(o.RecentPreemptions) {
		t.Fatalf("the page shows %d preemptions, the orchid has %d: %q", len(reasons), len(o.RecentPreemptions), reasons)
	}
	b.screenshot("operation")
	for i, p := range o.RecentPreemptions {
		if want := p.AllocationID + " " + p.Reason; reasons[i] != want {
			t.Errorf("preemption %d: the page shows %q, want %q", i, reasons[i], want)
		}
		if !strings.Contains(p.Reason, "of operation nightly-etl (starving)") {
			t.Errorf("preemption %d: reason %q", i, p.Reason)
		}
	}

	// The Content-Security-Policy holds: an inline script is refused, and
	// the refusal reaches the test (so would any other).
	if eval[bool](b, `(() => { const s = document.createElement('script'); s.textContent = 'window.__inline = true';
		document.body.append(s); return window.__inline === true; })()`) {
		t.Errorf("an inline script ran: the Content-Security-Policy does not hold")
	}
	b.expectMessage("Content Security Policy")
}
