package lint

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The code, the scenario scripts and the Makefile stand on their own as the
// Markdown does: a comment, a script header or a make variable cites the
// repository's own documents (docs/semantics.md#fair-share,
// docs/api.md#node-heartbeats) or states the rule, never a design note the
// project was written from, a numbered section of one, or a folder beside
// the checkout.

// sectionSign matches a numbered section of a Markdown document (a section
// sign after the document's name):
// the repository's documents have anchors, not numbers.
var sectionSign = regexp.MustCompile(`\.md\s*§`)

// docAnchor matches a citation of a heading of the repository's Markdown,
// relative to its root (docs/semantics.md#fair-share): the file and the
// heading must exist.
var docAnchor = regexp.MustCompile(`\b((?:docs|bench|profiles|testdata)/[A-Za-z0-9_./-]*\.md)#([A-Za-z0-9_-]+)`)

// sharedFolder matches the design notes' folder beside the checkout.
var sharedFolder = regexp.MustCompile(`\.\./shared\b`)

// citingFiles returns the files whose lines TestCodeCitations reads,
// relative to root: every .go file, every .txt file under a testdata
// folder, and every Makefile, outside hidden folders and build outputs.
func citingFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "bin" || name == "out" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		inTestdata := strings.HasPrefix(rel, "testdata/") || strings.Contains(rel, "/testdata/")
		if strings.HasSuffix(name, ".go") || name == "Makefile" || inTestdata && strings.HasSuffix(name, ".txt") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	return files
}

// citationProblems returns what is wrong with a line of file (relative to
// root) as a citation: a design note the repository does not have, a
// numbered section, the folder beside the checkout.
func citationProblems(root, file, line string) []string {
	var probs []string
	for _, name := range designNotes.FindAllString(line, -1) {
		if exists(root, filepath.Join(filepath.Dir(file), name)) || exists(root, name) {
			continue
		}
		probs = append(probs, "cites "+name+", which the repository does not have: link docs/ with an anchor or state the rule")
	}
	if sectionSign.MatchString(line) {
		probs = append(probs, "cites a numbered section (§): the repository's documents have anchors (docs/semantics.md#fair-share)")
	}
	if sharedFolder.MatchString(line) {
		probs = append(probs, "names a folder outside the repository: a user of the repository does not have it")
	}
	return probs
}

// TestCodeCitations: no Go file, scenario script or Makefile cites a
// document the repository does not hold, and every heading they cite exists.
func TestCodeCitations(t *testing.T) {
	root := repoRoot(t)
	docs := map[string]*markdownText{}
	load := func(rel string) *markdownText {
		if docs[rel] == nil {
			docs[rel] = readMarkdown(t, filepath.Join(root, filepath.FromSlash(rel)))
		}
		return docs[rel]
	}
	for _, file := range citingFiles(t, root) {
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for n := 1; sc.Scan(); n++ {
			for _, p := range citationProblems(root, file, sc.Text()) {
				t.Errorf("%s:%d: %s", file, n, p)
			}
			for _, m := range docAnchor.FindAllStringSubmatch(sc.Text(), -1) {
				if !exists(root, m[1]) {
					t.Errorf("%s:%d: cites %s, which the repository does not have", file, n, m[1])
				} else if !load(m[1]).anchors[m[2]] {
					t.Errorf("%s:%d: cites %s#%s: no heading of %s has that anchor", file, n, m[1], m[2], m[1])
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
}

// TestCitationHelpers: the rule on cases of either side. The names are built
// by concatenation, so that this file cites nothing itself.
func TestCitationHelpers(t *testing.T) {
	root := repoRoot(t)
	const md = ".md"
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{"// see docs/semantics" + md + "#fair-share", false},
		{"// (docs/api" + md + "#node-heartbeats)", false},
		{"# a script header (docs/api" + md + "#batched-heartbeats)", false},
		{"// bench/README" + md + "#workload", false},
		{"// (spec" + md + " §4)", true},
		{"// (api" + md + " §7)", true},
		{"// (docs/api" + md + " §7)", true},
		{"// follows style" + md + " rule 4", true},
		{"// the target of performance" + md, true},
		{"// persistence" + md + ", security" + md, true},
		{"SHARED ?= ../" + "shared", true},
		{"// openapi.json and api.go", false},
	} {
		if got := len(citationProblems(root, "core/x/x.go", tc.line)) > 0; got != tc.bad {
			t.Errorf("%q: refused %v, want %v", tc.line, got, tc.bad)
		}
	}
}

// TestAPIDocPaths: docs/api.md names every path in full, from its root
// (`POST /api/v1/operations/{id}/abort`, not `…/abort` or `/orchid/pools`).
func TestAPIDocPaths(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "api"+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for n, l := range strings.Split(string(data), "\n") {
		for _, p := range apiPathProblems(l) {
			t.Errorf("docs/api.md:%d: %s", n+1, p)
		}
	}
}

var (
	// elidedPath: a path whose start is left out ("…/abort", ".../abort").
	elidedPath = regexp.MustCompile(`(?:…|\.\.\.)/[A-Za-z{]`)
	// codePath: a path at the start of inline code or after a method.
	codePath = regexp.MustCompile("(?:`|(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) )(/[A-Za-z][^`\\s]*)")
	// apiRoots are the roots of the server's paths.
	apiRoots = []string{"/api/v1/", "/api/v1`", "/healthz", "/readyz", "/metrics", "/debug/pprof/", "/ui/"}
)

// apiPathProblems returns the paths of a line of docs/api.md that are not
// named in full.
func apiPathProblems(l string) []string {
	var probs []string
	for _, m := range elidedPath.FindAllString(l, -1) {
		probs = append(probs, "names a path by its end ("+m+"…): write it in full")
	}
	for _, m := range codePath.FindAllStringSubmatch(l, -1) {
		p := m[1]
		ok := p == "/api/v1" || p == "/ui" || strings.HasPrefix(p, "/dev/")
		for _, r := range apiRoots {
			ok = ok || strings.HasPrefix(p+"`", r) || strings.HasPrefix(p, r)
		}
		if !ok {
			probs = append(probs, "names the path "+p+" without its root: write it in full")
		}
	}
	return probs
}

func TestAPIPathHelpers(t *testing.T) {
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{"| `POST /api/v1/operations/{id}/complete`, `POST /api/v1/operations/{id}/abort` |", false},
		{"`GET /debug/pprof/…`, `GET /healthz`, `/readyz`, `GET /ui/`", false},
		{"every `/api/v1` request", false},
		{"| `POST /api/v1/operations/{id}/complete`, `…/abort` |", true},
		{"and .../abort finish", true},
		{"`GET /api/v1/orchid/pools`, `/orchid/pools/{name}`", true},
	} {
		if got := len(apiPathProblems(tc.line)) > 0; got != tc.bad {
			t.Errorf("%q: refused %v (%q), want %v", tc.line, got, apiPathProblems(tc.line), tc.bad)
		}
	}
}
