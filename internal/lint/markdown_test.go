package lint

import (
	"bufio"
	"bytes"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The repository's Markdown (README.md, docs/, bench/README.md,
// profiles/README.md, …) must stand on its own: a reader has the repository
// and nothing else. TestMarkdownLinks checks that every link points at a
// file of the repository (and a heading of it, for an anchor);
// TestMarkdownDesignNotes that no file mentions a design note by name
// (the API, specification, style, performance, persistence and security
// notes) unless the repository has a file of that name there.

// markdownFiles returns the Markdown files of the repository, relative to
// root, outside hidden folders, testdata and build outputs.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin" || name == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	return files
}

// markdownText is a Markdown file split into its prose (fenced blocks and
// inline code blanked out, so that examples are not taken for links) and
// its headings' anchors.
type markdownText struct {
	prose   []string // one entry per line
	full    []string // the lines as written
	anchors map[string]bool
}

var fence = regexp.MustCompile("^\\s*(```|~~~)")

func readMarkdown(t *testing.T, path string) *markdownText {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := &markdownText{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		m.full = append(m.full, l)
		if fence.MatchString(l) {
			inFence = !inFence
			m.prose = append(m.prose, "")
			continue
		}
		if inFence {
			m.prose = append(m.prose, "")
			continue
		}
		m.prose = append(m.prose, inlineCode.ReplaceAllString(l, "``"))
		if h, ok := heading(l); ok {
			a := slug(h)
			if n := seen[a]; n > 0 {
				seen[a]++
				a += "-" + strconv.Itoa(n)
			} else {
				seen[a] = 1
			}
			m.anchors[a] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// heading returns the text of an ATX heading line ("## Title").
func heading(l string) (string, bool) {
	t := strings.TrimLeft(l, "#")
	if n := len(l) - len(t); n == 0 || n > 6 || t != "" && t[0] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t), "#")), true
}

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens (a repeated heading gets -1, -2, … after).
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// markdownLink matches an inline link or image, [text](target "title"), and
// a reference definition, [label]: target.
var (
	markdownLink = regexp.MustCompile(`\]\(\s*<?([^()\s>]+(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+"[^"]*")?\s*\)`)
	referenceDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
)

// TestMarkdownLinks: every relative link of the repository's Markdown
// points at a file or folder of the repository, and an anchor at a heading
// of the Markdown file it names.
func TestMarkdownLinks(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	docs := map[string]*markdownText{}
	load := func(rel string) *markdownText {
		if docs[rel] == nil {
			docs[rel] = readMarkdown(t, filepath.Join(root, filepath.FromSlash(rel)))
		}
		return docs[rel]
	}
	links := 0
	for _, file := range files {
		m := load(file)
		for i, l := range m.prose {
			var targets []string
			for _, sub := range markdownLink.FindAllStringSubmatch(l, -1) {
				targets = append(targets, sub[1])
			}
			if sub := referenceDef.FindStringSubmatch(l); sub != nil {
				targets = append(targets, sub[1])
			}
			for _, target := range targets {
				links++
				if msg := checkLink(root, file, target, load); msg != "" {
					t.Errorf("%s:%d: link %s: %s", file, i+1, target, msg)
				}
			}
		}
	}
	t.Logf("%d links in %d Markdown files", links, len(files))
}

// checkLink returns what is wrong with a link of file, or "".
func checkLink(root, file, target string, load func(string) *markdownText) string {
	u, err := url.Parse(target)
	if err != nil {
		return "cannot parse it: " + err.Error()
	}
	if u.Scheme != "" || u.Host != "" {
		return "" // a web page: not checked here
	}
	rel := file
	if u.Path != "" {
		rel = filepath.ToSlash(filepath.Join(filepath.Dir(file), u.Path))
		if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(u.Path) {
			return "it points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return "no such file in the repository"
		}
	}
	if u.Fragment != "" {
		if !strings.HasSuffix(rel, ".md") {
			return "an anchor in a file that is not Markdown"
		}
		if !load(rel).anchors[u.Fragment] {
			return "no heading of " + rel + " has the anchor #" + u.Fragment
		}
	}
	return ""
}

// designNotes are the names of the design notes the project was written
// from. They are not part of the repository: a Markdown file may name one
// only when the repository has a file of that name where the mention
// points (docs/api.md is the repository's own).
var designNotes = regexp.MustCompile(`[A-Za-z0-9_./-]*\b(?:api|spec|style|performance|persistence|security)\.md\b`)

// outside matches a path that climbs out of the repository (../x/…).
var outside = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./])(\.\./[A-Za-z0-9_./-]+)`)

// TestMarkdownDesignNotes: no Markdown file of the repository mentions a
// design note as if the reader had it. A mention, in prose or in code, is
// fine when it names a file of the repository relative to the mentioning
// file or to the repository's root.
func TestMarkdownDesignNotes(t *testing.T) {
	root := repoRoot(t)
	for _, file := range markdownFiles(t, root) {
		m := readMarkdown(t, filepath.Join(root, filepath.FromSlash(file)))
		for i, l := range m.full {
			for _, name := range designNotes.FindAllString(l, -1) {
				if exists(root, filepath.Join(filepath.Dir(file), name)) || exists(root, name) {
					continue
				}
				t.Errorf("%s:%d: mentions %s, which the repository does not have: link the repository's own document (docs/) or say it in the file's own words", file, i+1, name)
			}
			for _, m := range outside.FindAllStringSubmatch(l, -1) {
				if !exists(root, filepath.Join(filepath.Dir(file), m[1])) {
					t.Errorf("%s:%d: mentions %s, outside the repository: a user of the repository does not have it", file, i+1, m[1])
				}
			}
		}
	}
}

// exists reports whether rel, relative to root, is a file of the
// repository.
func exists(root, rel string) bool {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	st, err := os.Stat(filepath.Join(root, rel))
	return err == nil && !st.IsDir()
}

// TestMarkdownHelpers checks the anchors and the link pattern on cases of
// the repository's own headings and links.
func TestMarkdownHelpers(t *testing.T) {
	f := func(h, want string) {
		t.Helper()
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	f("Health and this API's description", "health-and-this-apis-description")
	f("Load generator: the standard load", "load-generator-the-standard-load")
	f("Operation limits, pending queues and lightweight operations", "operation-limits-pending-queues-and-lightweight-operations")
	f("`fairsched serve`", "fairsched-serve")
	f("PGO A/B", "pgo-ab")
	g := func(l string, want ...string) {
		t.Helper()
		var got []string
		for _, sub := range markdownLink.FindAllStringSubmatch(l, -1) {
			got = append(got, sub[1])
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("links of %q: %q, want %q", l, got, want)
		}
	}
	g("see [api](docs/api.md#solve) and ![chart](docs/charts/a.png)", "docs/api.md#solve", "docs/charts/a.png")
	g(`[x](https://example.com/a_(b) "title")`, "https://example.com/a_(b)")
	g("no link [here] (x)")
	if h, ok := heading("## Title ##"); !ok || h != "Title" {
		t.Errorf("heading(%q) = %q, %v", "## Title ##", h, ok)
	}
	if _, ok := heading("#hashtag"); ok {
		t.Errorf("heading(%q) is a heading", "#hashtag")
	}
	// NB: the names are built by concatenation, so that this file cites nothing
	// (TestCodeCitations reads it).
	spec, perf, shared := "spec"+".md", "../"+"shared/design/performance"+".md", "../"+"shared/tools/x.py"
	if designNotes.FindString("see "+spec+" docs/semantics.md#preemption-statuses") != spec || designNotes.FindString(perf) != perf ||
		designNotes.FindString("openapi.json and api.go") != "" ||
		outside.FindStringSubmatch("see " + shared)[1] != shared || outside.FindString("a/../b") != "" {
		t.Errorf("designNotes matches the wrong text")
	}
}
