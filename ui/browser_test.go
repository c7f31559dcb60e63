package ui_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive headless Chromium with chromedp over the Chrome
// DevTools Protocol, against a real server (facade/facadetest: a
// facade.Server on a free 127.0.0.1 port, manual clock, stopped when the
// test ends), and assert what a person sees: names, bar widths measured in
// the rendered page against the orchid's numbers, statuses, reasons.
//
// go test (and so make test) runs TestBrowserShort, a few seconds of
// browser time, when a Chromium is found, and skips it with a message
// otherwise; -ui.full (make test-ui) runs every browser test;
// -ui.screenshots=DIR (make ui-screenshots, DIR docs/ui) writes a
// screenshot of each view.

var (
	fullUI  = flag.Bool("ui.full", false, "run every browser test (make test-ui), not only the short one that go test runs")
	shotDir = flag.String("ui.screenshots", "", "write a PNG screenshot of each view into this folder (make ui-screenshots writes docs/ui)")
)

// chromiumPath finds the browser: $FAIRSCHED_CHROMIUM, else chromium (the
// Debian package) or another Chrome on PATH. It skips the test when there
// is none.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FAIRSCHED_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (or FAIRSCHED_CHROMIUM): the browser tests of the dashboard are skipped; " +
		"`make test-ui` installs the chromium package (apt-get, as root) and runs them")
	return ""
}

// browser is a headless Chromium tab with a laptop's viewport. Every
// uncaught exception, console error or warning and browser log error (a
// directive of the Content-Security-Policy refused, a failed request) fails
// the test when it ends, but those that allow names.
type browser struct {
	t   testing.TB
	ctx context.Context
	mu  sync.Mutex
	bad []string
	// allow are substrings of messages that are expected (the 401s of the
	// auth test).
	allow []string
}

func newBrowser(t testing.TB, timeout time.Duration, allow ...string) *browser {
	t.Helper()
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1366, 900),
		chromedp.Flag("lang", "en-US"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	// Chromium now and then fails to start on a loaded machine (its
	// launcher script exits before it prints its DevTools address):
	// three tries before the test fails.
	var (
		ctx                                context.Context
		cancelAlloc, cancelTime, cancelTab context.CancelFunc
		err                                error
	)
	for try := 1; try <= 3; try++ {
		var actx, tctx context.Context
		actx, cancelAlloc = chromedp.NewExecAllocator(context.Background(), opts...)
		tctx, cancelTime = context.WithTimeout(actx, timeout)
		ctx, cancelTab = chromedp.NewContext(tctx)
		if err = chromedp.Do(ctx); err == nil {
			break
		}
		cancelTab()
		cancelTime()
		cancelAlloc()
		t.Logf("Chromium did not start (try %d of 3): %v", try, err)
	}
	if err != nil {
		t.Fatalf("cannot start Chromium (%s): %v", path, err)
	}
	b := &browser{t: t, ctx: ctx, allow: allow}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancelTab()
		cancelTime()
		cancelAlloc()
		<-done
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, m := range b.bad {
			t.Errorf("browser: %s", m)
		}
	})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleWarning && !m.IsException() {
				continue
			}
			b.mu.Lock()
			if !slices.ContainsFunc(b.allow, func(a string) bool { return strings.Contains(m.Text, a) || strings.Contains(m.URL, a) }) {
				b.bad = append(b.bad, fmt.Sprintf("%s: %s (%s)", m.Type, m.Text, m.URL))
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// expectMessage waits for a console message containing substr and takes
// it off the list of problems.
func (b *browser) expectMessage(substr string) {
	b.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b.mu.Lock()
		n := len(b.bad)
		b.bad = slices.DeleteFunc(b.bad, func(m string) bool { return strings.Contains(m, substr) })
		found := len(b.bad) < n
		b.mu.Unlock()
		if found {
			return
		}
	}
	b.t.Errorf("no console message with %q", substr)
}

// run runs chromedp actions and fails the test on an error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression into a T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", short(expr), err)
	}
	return v
}

// waitFor polls a JavaScript expression until it is truthy, then lets the
// page render twice: the predicate runs in an animation frame, before the
// frame's rendering, and rows out of view (content-visibility: auto) have
// no innerText until they were rendered once.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		snap, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
		b.t.Fatalf("waiting for %s (%s): %v\nthe page shows:\n%s", what, short(expr), err, snap)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](
		`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		b.t.Fatalf("waiting for %s to render: %v", what, err)
	}
}

// open loads a page of the dashboard, polled every 0.25 s.
func (b *browser) open(base, route string) {
	b.t.Helper()
	b.run("open "+route, chromedp.Navigate(base+"/ui/?refresh=0.25#"+route))
}

// goTo changes the route without reloading the page.
func (b *browser) goTo(route string) {
	b.t.Helper()
	b.run("go to "+route, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, route)))
}

// click clicks the element of a CSS selector.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.run("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// screenshot writes the page as name.png into -ui.screenshots, if given.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if *shotDir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(*shotDir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(*shotDir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s (%d bytes)", p, len(png))
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// near reports whether a measured fraction is within a pixel or so of the
// expected one (bars are drawn on tracks of 200–600 px).
func near(got, want float64) bool { return math.Abs(got-want) <= 0.006 }

// barFractions measures, in the rendered page, the bars of the row
// matching selector: each segment's width over its track's.
const barFractionsJS = `((sel) => {
  const row = document.querySelector(sel);
  if (!row) return null;
  const w = (track, seg) => {
    const t = row.querySelector('.track.' + track);
    const s = t.querySelector('.seg.' + seg);
    return s.getBoundingClientRect().width / t.clientWidth;
  };
  const mark = (cls) => {
    const m = row.querySelector('.track.fair .mark.' + cls);
    if (!m || m.hidden) return 0;
    const t = row.querySelector('.track.fair');
    return (m.getBoundingClientRect().left + 1 - t.getBoundingClientRect().left - t.clientLeft) / t.clientWidth;
  };
  return {
    resource: row.querySelector('.bars').dataset.resource,
    strong: w('fair', 'strong'), integral: w('fair', 'integral'), weight: w('fair', 'weight'),
    usage: w('usage', 'usage'), demand: w('demand', 'demand'),
    guarantee: mark('strong-mark'),
    text: row.innerText,
    className: row.className,
  };
})(%q)`

type bars struct {
	Resource                 string
	Strong, Integral, Weight float64
	Usage, Demand, Guarantee float64
	Text                     string
	ClassName                string `json:"className"`
}

func (b *browser) bars(selector string) bars {
	b.t.Helper()
	out := eval[*bars](b, fmt.Sprintf(barFractionsJS, selector))
	if out == nil {
		b.t.Fatalf("no row %s in the page", selector)
	}
	return *out
}
