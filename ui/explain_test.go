package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fairsched/fairsched/client"
)

// TestBrowserExplain: the operation page of an operation held pending by
// its pool's max_running_operation_count shows the explanation of GET
// /api/v1/operations/{id}/explain: every finding in its order, the first
// marked binding, each with its code, its sentence and its numbers.
func TestBrowserExplain(t *testing.T) {
	needFull(t)
	cl := startDemo(t)
	ctx := context.Background()
	// batch runs at most 2 operations: the third waits.
	limit := int64(2)
	if _, _, err := cl.c.PutPool(ctx, "batch", client.Pool{Parent: "research", MaxRunningOperationCount: &limit}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		cl.start(client.OperationSpec{ID: fmt.Sprintf("batch-%d", i+1), Pool: "batch", Type: "vanilla", Tasks: job(20, 1, 1)})
	}
	cl.step(1)
	o, err := cl.c.OperationOrchid(ctx, "batch-3")
	if err != nil || o.State != "pending" {
		t.Fatalf("batch-3: %+v, %v; want pending", o, err)
	}
	raw := getJSON(t, cl.srv.URL+"/api/v1/operations/batch-3/explain")
	findings, _ := raw["findings"].([]any)
	if len(findings) == 0 || findings[0].(map[string]any)["code"] != "running_operation_limit" {
		t.Fatalf("the explanation of batch-3: %v", raw)
	}
	b := newBrowser(t, 60*time.Second)
	b.open(cl.srv.URL, "/operations/batch-3")
	b.waitFor("the explanation", fmt.Sprintf(`document.querySelectorAll('.findings .finding').length === %d`, len(findings)))
	type shown struct {
		Code, Message string
		Binding       bool
		Numbers       map[string]string
	}
	got := eval[[]shown](b, `[...document.querySelectorAll('.findings .finding')].map((li) => ({
		code: li.dataset.code, message: li.querySelector('.message').innerText, binding: li.classList.contains('binding'),
		numbers: Object.fromEntries([...li.querySelectorAll('dd[data-key]')].map((dd) => [dd.dataset.key, dd.innerText]))}))`)
	for i, f := range findings {
		f := f.(map[string]any)
		g := got[i]
		if g.Code != f["code"] || g.Message != f["message"] || g.Binding != (i == 0) {
			t.Errorf("finding %d: the page shows %+v, the API %v", i, g, f)
		}
		for k, v := range f {
			if k == "code" || k == "message" {
				continue
			}
			text, ok := g.Numbers[k]
			if !ok {
				t.Errorf("finding %d (%s): no %s on the page", i, f["code"], k)
				continue
			}
			switch v := v.(type) {
			case float64:
				if n, err := strconv.ParseFloat(strings.ReplaceAll(text, ",", ""), 64); err != nil || math.Abs(n-v) > 1e-6*math.Max(1, math.Abs(v)) {
					t.Errorf("finding %d (%s): %s shown %q, the API says %v", i, f["code"], k, text, v)
				}
			case string:
				if text != v {
					t.Errorf("finding %d (%s): %s shown %q, the API says %q", i, f["code"], k, text, v)
				}
			case []any:
				for _, x := range v {
					if s, ok := x.(string); ok && !strings.Contains(text, s) {
						t.Errorf("finding %d (%s): %s shown %q lacks %q", i, f["code"], k, text, s)
					}
				}
			}
		}
	}
	if msg := got[0].Message; !strings.Contains(msg, "max_running_operation_count") || !strings.Contains(msg, "batch") {
		t.Errorf("the binding finding says %q", msg)
	}
	checkA11y(t, b, "operation page with its explanation")
	b.screenshot("operation-explain")
}

// TestBrowserWhatIfPreview: on research's page, a weight of 3 previewed
// shows every pool's fair share before and after (POST /api/v1/whatif)
// and changes nothing; Apply sends the PATCH, and the next fair-share
// update gives the fair shares the preview showed. A change the server
// refuses shows its error and cannot be applied.
func TestBrowserWhatIfPreview(t *testing.T) {
	needFull(t)
	cl := startDemo(t)
	ctx := context.Background()
	b := newBrowser(t, 60*time.Second, "status of 400")
	b.open(cl.srv.URL, "/pools/research")
	b.waitFor("the change form", `document.getElementById('change-weight').value === '2'`)
	before := cl.pools()
	b.run("weight 3", chromedp.SetValue(chromedp.ID("change-weight"), "3"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('change-weight').dispatchEvent(new Event('input'))`))
	b.click("#change-preview")
	b.waitFor("the preview", `document.querySelectorAll('.preview-table tbody tr').length > 0 && !document.getElementById('change-apply').disabled`)
	type row struct{ Pool, Key, Resource, Before, After, Class string }
	rows := eval[[]row](b, `[...document.querySelectorAll('.preview-table tbody tr')].map((tr) => ({pool: tr.dataset.pool,
		key: tr.dataset.key, resource: tr.dataset.resource, before: tr.dataset.before, after: tr.dataset.after, class: tr.className}))`)
	// Nothing changed: the orchid is the one before.
	if p, err := cl.c.Pool(ctx, "research"); err != nil || p.Weight != 2 {
		t.Fatalf("after the preview research is %+v, %v; want weight 2", p, err)
	}
	checkA11y(t, b, "pool page with a preview")
	b.screenshot("pool-preview")
	b.click("#change-apply")
	b.waitFor("the change applied", `document.querySelector('.change + p, section [aria-live]') && [...document.querySelectorAll('[aria-live]')].some((p) => p.innerText.startsWith('Applied'))`)
	cl.srv.UpdateFairShare() // no time passes, no heartbeat: the same demand
	after := cl.pools()
	fair := 0
	for _, r := range rows {
		if r.Key != "fair_share" {
			continue
		}
		fair++
		wb, wa := share(before[r.Pool].FairShare, r.Resource), share(after[r.Pool].FairShare, r.Resource)
		gb, _ := strconv.ParseFloat(r.Before, 64)
		ga, _ := strconv.ParseFloat(r.After, 64)
		if math.Abs(gb-wb) > 1e-9 || math.Abs(ga-wa) > 1e-9 {
			t.Errorf("%s's fair share of %s: the preview showed %v → %v, the orchid %v → %v", r.Pool, r.Resource, gb, ga, wb, wa)
		}
		if changed := math.Abs(wa-wb) > 1e-9; changed != strings.Contains(r.Class, "changed") {
			t.Errorf("%s: marked %q, changed %v", r.Pool, r.Class, changed)
		}
	}
	if fair != len(before) {
		t.Errorf("the preview has the fair shares of %d pools, the tree %d", fair, len(before))
	}
	if share(after["research"].FairShare, "cpu") <= share(before["research"].FairShare, "cpu") {
		t.Errorf("research's weight 3 did not raise its fair share: %v → %v", before["research"].FairShare, after["research"].FairShare)
	}

	// A refused change: the server's error, and Apply stays disabled.
	b.run("a bad change", chromedp.SetValue(chromedp.ID("change-more"), `{"max_running_operation_count": -1}`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('change-more').dispatchEvent(new Event('input'))`))
	b.click("#change-preview")
	b.waitFor("the refusal", `[...document.querySelectorAll('[aria-live]')].some((p) => p.innerText.includes('would be refused'))`)
	if !eval[bool](b, `document.getElementById('change-apply').disabled`) {
		t.Error("Apply is enabled after a refused preview")
	}
	if msg := eval[string](b, `[...document.querySelectorAll('[aria-live]')].map((p) => p.innerText).join(' ')`); !strings.Contains(msg, "max_running_operation_count") {
		t.Errorf("the refusal %q does not name the attribute", msg)
	}
}

// getJSON fetches url's JSON object.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return v
}
