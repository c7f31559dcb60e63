package ui

import (
	"regexp"
	"strings"
	"testing"
)

// TestStaticFiles checks the dashboard's files without a browser: each has
// a content type and an ETag; nothing is fetched from another origin (no
// URL but the SVG namespace's); the page has no inline script, style or
// event handler (the Content-Security-Policy would refuse them); the
// scripts build no HTML from strings and evaluate no code; and every file
// the page and the modules refer to is served.
func TestStaticFiles(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no files")
	}
	urls := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, n := range names {
		f, _ := Lookup(n)
		if f.ContentType == "" || !strings.HasPrefix(f.ETag, `"`) || len(f.Body) == 0 {
			t.Errorf("%s: content type %q, ETag %q, %d bytes", n, f.ContentType, f.ETag, len(f.Body))
		}
		body := strings.ReplaceAll(string(f.Body), "http://www.w3.org/2000/svg", "")
		if m := urls.FindString(body); m != "" {
			t.Errorf("%s refers to another origin (%s): the dashboard serves everything itself", n, m)
		}
		if strings.Contains(body, "@import") {
			t.Errorf("%s: @import", n)
		}
	}

	page, ok := Lookup("")
	if !ok || page.Name != Index {
		t.Fatalf("Lookup(\"\") = %v, %v; want %s", page, ok, Index)
	}
	html := string(page.Body)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(\s[^>]*)?>\s*[^<\s]`), // an inline script
		regexp.MustCompile(`(?i)<style`),                  // a style element
		regexp.MustCompile(`(?i)\sstyle\s*=`),             // a style attribute
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),          // an event handler attribute
		regexp.MustCompile(`(?i)javascript:`),             // a javascript: URL
	} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("%s: %q: the Content-Security-Policy refuses inline code and styles", Index, m)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(html, -1) {
		if !strings.Contains(tag, `type="module"`) || !strings.Contains(tag, `src="`) {
			t.Errorf("%s: %s: want JavaScript modules from files", Index, tag)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#?:]+)"`)
	for _, m := range refs.FindAllStringSubmatch(html, -1) {
		if strings.HasPrefix(m[1], "../") {
			continue // the API, from the noscript text
		}
		if _, ok := Lookup(m[1]); !ok {
			t.Errorf("%s refers to %s, which is not served", Index, m[1])
		}
	}

	imports := regexp.MustCompile(`(?m)^\s*(?:import|export)\s[^'"]*from\s+'([^']+)'`)
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\('style'|\.cssText|setTimeout\('`)
	for _, n := range names {
		if !strings.HasSuffix(n, ".js") {
			continue
		}
		f, _ := Lookup(n)
		src := string(f.Body)
		for _, m := range imports.FindAllStringSubmatch(src, -1) {
			name, ok := strings.CutPrefix(m[1], "./")
			if _, found := Lookup(name); !ok || !found {
				t.Errorf("%s imports %s: want a module of this folder (./name.js)", n, m[1])
			}
		}
		if m := forbidden.FindString(src); m != "" {
			t.Errorf("%s uses %s: build elements with dom.js's h() and set text, never HTML or code from strings", n, m)
		}
	}
}

// TestLookup: the page is served for the empty name and under its own
// name; unknown names and paths are not.
func TestLookup(t *testing.T) {
	for _, n := range []string{"", Index, "app.js", "style.css"} {
		if _, ok := Lookup(n); !ok {
			t.Errorf("Lookup(%q): not found", n)
		}
	}
	for _, n := range []string{"nothing.js", "static/index.html", "../ui.go", "/app.js", "app.js/"} {
		if _, ok := Lookup(n); ok {
			t.Errorf("Lookup(%q) found a file", n)
		}
	}
}
