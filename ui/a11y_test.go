package ui_test

import (
	"strings"
	"testing"
)

// a11yJS checks the page as it stands for what a screen reader and a
// person with low vision need, and returns the problems found:
//
//   - every form control has a label (a <label for>, an enclosing label,
//     aria-label or aria-labelledby);
//   - every button and link has a name (its text or aria-label), every
//     role="img" an aria-label;
//   - the main region has one h1;
//   - every visible text is readable: its contrast with the background
//     behind it (WCAG 2 relative luminance) is at least 4.5:1, or 3:1 for
//     large text (24 px, or 18.66 px bold).
const a11yJS = `(() => {
  const problems = [];
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  const name = (el) => (el.getAttribute('aria-label') || el.textContent || el.title || '').trim();
  const where = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (el.type === 'hidden') continue;
    const labelled = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.closest('label') ||
      (el.id && document.querySelector('label[for="' + el.id + '"]'));
    if (!labelled) problems.push('no label: ' + where(el));
  }
  for (const el of document.querySelectorAll('button, a[href]')) {
    if (visible(el) && !name(el)) problems.push('no name: ' + where(el));
  }
  for (const el of document.querySelectorAll('[role="img"]')) {
    if (!el.getAttribute('aria-label')) problems.push('no aria-label: ' + where(el));
  }
  const h1 = document.querySelectorAll('main h1').length;
  if (h1 !== 1) problems.push(h1 + ' h1 in main');

  const rgba = (s) => { const m = s.match(/[\d.]+/g).map(Number); return { r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1 }; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c.a > 0.5) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || seen.has(el) || !visible(el) || el.closest('.sr-only, [hidden], noscript')) continue;
    seen.add(el);
    const st = getComputedStyle(el);
    const fg = rgba(st.color);
    const bg = background(el);
    const l1 = lum(fg), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(st.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) problems.push('contrast ' + ratio.toFixed(2) + ' of ' + where(el) + ' "' + n.textContent.trim().slice(0, 30) + '"');
  }
  return problems;
})()`

// checkA11y fails the test with the page's accessibility problems.
func checkA11y(t *testing.T, b *browser, view string) {
	t.Helper()
	if problems := eval[[]string](b, a11yJS); len(problems) > 0 {
		t.Errorf("%s: %d accessibility problems:\n  %s", view, len(problems), strings.Join(problems, "\n  "))
	}
}

// checkA11yFinds checks the checker: a faint text, a button without a
// name and an unlabelled field put into the page are found.
func checkA11yFinds(t *testing.T, b *browser) {
	t.Helper()
	eval[bool](b, `(() => { const m = document.querySelector('main');
		const p = document.createElement('p'); p.id = 'a11y-probe-text'; p.textContent = 'faint'; p.style.color = '#c8c8c8'; m.append(p);
		const btn = document.createElement('button'); btn.id = 'a11y-probe-button'; btn.style.width = '2rem'; btn.style.height = '1rem'; m.append(btn);
		const i = document.createElement('input'); i.id = 'a11y-probe-input'; m.append(i); return true; })()`)
	got := strings.Join(eval[[]string](b, a11yJS), "\n")
	eval[bool](b, `(() => { for (const id of ['a11y-probe-text', 'a11y-probe-button', 'a11y-probe-input']) document.getElementById(id).remove(); return true; })()`)
	for _, want := range []string{"contrast", "no name: button#a11y-probe-button", "no label: input#a11y-probe-input"} {
		if !strings.Contains(got, want) {
			t.Errorf("the accessibility check missed %q; it found:\n%s", want, got)
		}
	}
}
