// Package lint holds repository-wide checks written as Go tests, in the style of
// cockroachdb/pebble's internal/lint: the import arrows that must
// never exist (TestForbiddenImports) and gofmt. They shell out to the go and gofmt binaries and skip when the
// go binary is not on PATH ("go test" puts GOROOT/bin first on PATH, so it normally is).
package lint

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fairsched/fairsched"

// mod returns the import path of a package of this module.
func mod(rel string) string { return module + "/" + rel }

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(path, p) {
			return true
		}
	}
	return false
}

// A rule forbids packages under any of from (except those under exceptFrom) to import
// packages under to (except those under allow). Direct rules look at the package's own
// imports; transitive rules at everything it depends on (Deps), which is how third-party
// modules are checked: standard-library rules must stay direct because fmt alone reaches
// os. Both kinds cover test files: direct rules read TestImports and XTestImports, and
// transitive rules read the Deps of the test variants (go list -test).
type rule struct {
	from, exceptFrom []string
	to, allow        []string
	// testAllow is additionally allowed in the package's _test.go files only.
	testAllow  []string
	transitive bool
	why        string
}

// coreTestStd are standard-library packages that the core's _test.go files may import
// although the core itself may not: reading and decoding golden files under testdata/
// (conformance vectors, datadriven scripts) is test scaffolding, not core behaviour.
// NB: keep this list short; the clock (time), randomness and unsafe stay forbidden in
// core tests too, so that tests are as deterministic as the code they test.
var coreTestStd = []string{"os", "io/fs", "encoding/json"}

var rules = []rule{
	{
		from:       []string{mod("core")},
		to:         []string{mod("facade"), mod("loadgen"), mod("bench"), mod("cmd"), mod("internal/cpufeat"), mod("internal/jsonpath"), mod("store"), "go.etcd.io/bbolt"},
		transitive: true,
		why:        "the core knows nothing of its callers",
	},
	{
		// The store is a key-value layer: the records' meaning is its caller's.
		from:       []string{mod("store")},
		to:         []string{module},
		allow:      []string{mod("store")},
		testAllow:  []string{mod("internal/etcdtest")},
		transitive: true,
		why:        "store keeps bytes under keys and knows nothing of the scheduler",
	},
	{
		from: []string{mod("core")},
		to: []string{
			"github.com/valyala/fasthttp",
			"github.com/goccy/go-json",
			"github.com/klauspost/cpuid",
			"github.com/google/pprof",
		},
		transitive: true,
		why:        "the core does no I/O, no encoding and nothing machine-dependent",
	},
	{
		from: []string{mod("core")},
		to: []string{
			"encoding/json", "net", "os", "io/fs", "log", "runtime/pprof", "unsafe", "time",
		},
		testAllow: coreTestStd,
		why:       "the core is a library with no I/O, no clock and no encoding (time arrives as core/clock.Time)",
	},
	{
		// math/rand (v1, global state) is forbidden; math/rand/v2, which is "under" it
		// as a path, is allowed for its PCG type behind core/rng.
		from:  []string{mod("core")},
		to:    []string{"math/rand"},
		allow: []string{"math/rand/v2"},
		why:   "no global randomness: use core/rng",
	},
	{
		from:       []string{mod("core")},
		exceptFrom: []string{mod("core/schedule"), mod("core/fairshare")},
		to:         []string{"sync"},
		why:        "sync (and sync/atomic) only in core/schedule for the node-shard locks and in core/fairshare for the goroutines that build and distribute disjoint subtrees within one update",
	},
	{
		from:       []string{mod("core/resource")},
		to:         []string{mod("core")},
		allow:      []string{mod("core/resource")},
		testAllow:  []string{mod("core/rng"), mod("core/internal")},
		transitive: true,
		why:        "core/resource is the leaf of the core",
	},
	{
		from:       []string{mod("core/tagfilter")},
		to:         []string{module},
		allow:      []string{mod("core/tagfilter")},
		transitive: true,
		why:        "core/tagfilter is a leaf: the tree, the scheduler and the decoders share its filters",
	},
	{
		// Every layer of the core and the decoders share its error type.
		from:       []string{mod("core/apierr")},
		to:         []string{module},
		allow:      []string{mod("core/apierr")},
		transitive: true,
		why:        "core/apierr is a leaf: the validation error that every layer shares",
	},
	{
		// The configuration tables of every layer share its kinds and checks.
		from: []string{mod("core/settings")},
		to:   []string{module},
		allow: []string{mod("core/settings"), mod("core/apierr"), mod("core/clock"), mod("core/resource"), mod("core/tree"), mod("core/tagfilter"),
			mod("core/internal/invariants")},
		transitive: true,
		why:        "core/settings is below every layer that owns a config: it knows values and the error type, never a layer",
	},
	{
		from:       []string{mod("core/tree")},
		to:         []string{mod("core/fairshare"), mod("core/schedule")},
		transitive: true,
		why:        "lower layers never reach up",
	},
	{
		from:       []string{mod("core/fairshare")},
		to:         []string{mod("core/schedule")},
		transitive: true,
		why:        "lower layers never reach up",
	},
	{
		from:       []string{mod("core")},
		to:         []string{mod("internal/jsonscan")},
		transitive: true,
		why:        "the core does no encoding: internal/jsonscan is the facade's and loadgen's tokenizer",
	},
	{
		// wire, sim, loadgen and cmd share it; it must not reach back.
		from:       []string{mod("internal/jsonpath")},
		to:         []string{module},
		allow:      []string{mod("core/resource"), mod("core/apierr"), mod("internal/jsonscan")},
		transitive: true,
		why:        "internal/jsonpath is the JSON decoders' toolkit: it knows resource vectors, the error type and the tokenizer and nothing else of the module",
	},
	{
		// The service below the HTTP API: the facade, a replica's term and
		// any other front end drive it.
		from:       []string{mod("server")},
		to:         []string{mod("facade"), mod("replica"), "github.com/valyala/fasthttp", "net/http"},
		transitive: true,
		why:        "server is the scheduling service without HTTP: it knows nothing of the API that serves it",
	},
	{
		from:       []string{mod("facade")},
		to:         []string{mod("loadgen"), mod("bench"), mod("cmd")},
		transitive: true,
		why:        "the facade knows nothing of its callers",
	},
	{
		// Direct only: core packages the facade uses legitimately import
		// core/internal/invariants.
		from: []string{mod("facade")},
		to:   []string{mod("core/internal")},
		why:  "core/internal is private to the core",
	},
	{
		from:       []string{mod("loadgen")},
		to:         []string{mod("facade")},
		allow:      []string{mod("wire")},
		transitive: true,
		why:        "loadgen talks to the facade over HTTP; it shares only the wire types",
	},
	{
		from: []string{mod("loadgen")},
		to:   []string{mod("core/internal")},
		why:  "loadgen's in-process driver uses core/coretest, never core/internal",
	},
	{
		from: []string{module},
		to:   []string{mod("cmd"), mod("bench")},
		why:  "cmd/... and bench are leaves: nothing imports them",
	},
	{
		from:       []string{module},
		exceptFrom: []string{mod("core/coretest")},
		to:         []string{"github.com/cockroachdb/datadriven"},
		testAllow:  []string{"github.com/cockroachdb/datadriven"},
		why:        "test-only dependencies appear only in _test.go files (and the shared test harness)",
	},
	{
		// The facade's OpenAPI tests validate the document and the answers
		// with it (facade/openapi_test.go).
		from:       []string{module},
		to:         []string{"github.com/santhosh-tekuri/jsonschema"},
		transitive: true,
		testAllow:  []string{"github.com/santhosh-tekuri/jsonschema"},
		why:        "test-only dependencies appear only in _test.go files",
	},
	{
		// The dashboard's browser tests drive Chromium (ui/browser_test.go).
		from:       []string{module},
		to:         []string{"github.com/chromedp"},
		transitive: true,
		testAllow:  []string{"github.com/chromedp"},
		why:        "test-only dependencies appear only in _test.go files",
	},
	{
		// Replicas (issue 15): the etcd client is the replica's and the
		// etcd store's; the scheduling core, the wire types and the facade
		// know nothing of where the state is replicated.
		from:       []string{mod("core"), mod("server"), mod("facade"), mod("client"), mod("loadgen")},
		to:         []string{"go.etcd.io/etcd"},
		transitive: true,
		why:        "etcd is reached through store/etcdstore and the replica package only",
	},
	{
		// The embedded etcd server runs in tests and the ha-demo helper:
		// the fairsched binary must not carry it.
		from:       []string{module},
		exceptFrom: []string{mod("internal/etcdtest")},
		to:         []string{"go.etcd.io/etcd/server"},
		transitive: true,
		testAllow:  []string{"go.etcd.io/etcd/server"},
		why:        "the embedded etcd server is test-only (internal/etcdtest, imported by _test.go files)",
	},
	{
		from:       []string{module},
		exceptFrom: []string{mod("internal/etcdtest")},
		to:         []string{mod("internal/etcdtest")},
		testAllow:  []string{mod("internal/etcdtest")},
		why:        "internal/etcdtest embeds an etcd server: only _test.go files may import it",
	},
	{
		// A test helper that starts a real server: production code never
		// carries it.
		from:       []string{module},
		exceptFrom: []string{mod("facade/facadetest")},
		to:         []string{mod("facade/facadetest")},
		testAllow:  []string{mod("facade/facadetest")},
		why:        "facade/facadetest starts servers for tests: only _test.go files may import it",
	},
	{
		// The dashboard is static files: it knows nothing of the server
		// that serves it.
		from:       []string{mod("ui")},
		to:         []string{module},
		allow:      []string{mod("ui")},
		testAllow:  []string{module}, // the browser tests start a server
		transitive: true,
		why:        "ui holds the dashboard's files and imports nothing of the module (its browser tests may)",
	},
}

// pkgImports is what go list reports for one package of the module.
type pkgImports struct {
	path                               string
	imports, testImports, xtestImports []string
	deps, testDeps                     []string // testDeps: union of the test variants' Deps
}

// registerInputs reads every Go file and go.mod/go.sum of the repository. The checks
// learn about the sources through subprocesses, which "go test" does not see; reading the
// files here records them as test inputs, so that a cached pass is invalidated whenever a
// source file changes.
func registerInputs(t *testing.T) {
	t.Helper()
	root := repoRoot(t)
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
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("cannot read the repository's sources: %v", err)
	}
}

func goBin(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("cannot find the %s binary: %v", name, err)
	}
	return p
}

// goList runs "go list" with args in the module root and returns its stdout.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(goBin(t, "go"), append([]string{"list", "-e"}, args...)...)
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cannot run go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	// This file is internal/lint/lint_test.go and tests run in its directory.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("cannot resolve the repository root: %v", err)
	}
	return root
}

// stripVariant turns "p [q.test]" into "p".
func stripVariant(p string) string {
	if i := strings.IndexByte(p, ' '); i >= 0 {
		return p[:i]
	}
	return p
}

func loadPackages(t *testing.T) map[string]*pkgImports {
	t.Helper()
	pkgs := map[string]*pkgImports{}
	const sep = "\t"
	out := goList(t, "-f",
		`{{.ImportPath}}`+sep+`{{join .Imports " "}}`+sep+`{{join .TestImports " "}}`+sep+
			`{{join .XTestImports " "}}`+sep+`{{join .Deps " "}}`, "./...")
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimRight(line, "\n"), sep)
		if len(f) != 5 {
			t.Fatalf("cannot parse go list line %q", line)
		}
		pkgs[f[0]] = &pkgImports{
			path:         f[0],
			imports:      strings.Fields(f[1]),
			testImports:  strings.Fields(f[2]),
			xtestImports: strings.Fields(f[3]),
			deps:         strings.Fields(f[4]),
		}
	}
	// The test variants ("p [p.test]", "p_test [p.test]") carry the transitive
	// dependencies of the test files; the generated "p.test" main only adds testing's.
	out = goList(t, "-test", "-f", `{{.ImportPath}}`+sep+`{{join .Deps " "}}`, "./...")
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimRight(line, "\n"), sep)
		if len(f) != 2 || !strings.Contains(f[0], " [") {
			continue
		}
		path := strings.TrimSuffix(stripVariant(f[0]), "_test")
		p := pkgs[path]
		if p == nil {
			continue
		}
		for _, d := range strings.Fields(f[1]) {
			p.testDeps = append(p.testDeps, stripVariant(d))
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no packages")
	}
	return pkgs
}

// TestForbiddenImports enforces the import arrows that must never exist (the table below). Packages that
// do not exist yet match no rule.
func TestForbiddenImports(t *testing.T) {
	registerInputs(t)
	pkgs := loadPackages(t)
	paths := make([]string, 0, len(pkgs))
	for p := range pkgs {
		paths = append(paths, p)
	}
	slices.Sort(paths)

	var violations []string
	for _, path := range paths {
		p := pkgs[path]
		for _, r := range rules {
			if !underAny(path, r.from) || underAny(path, r.exceptFrom) {
				continue
			}
			check := func(imp, how string, inTest bool) {
				imp = stripVariant(imp)
				switch {
				case imp == path, // a package's tests import the package itself
					!underAny(imp, r.to),
					underAny(imp, r.allow),
					inTest && underAny(imp, r.testAllow):
					return
				}
				violations = append(violations, fmt.Sprintf("%s %s %s: %s", path, how, imp, r.why))
			}
			if r.transitive {
				for _, imp := range p.deps {
					check(imp, "depends on", false)
				}
				for _, imp := range p.testDeps {
					if !slices.Contains(p.deps, imp) {
						check(imp, "depends (through tests) on", true)
					}
				}
			}
			// Direct imports are checked for transitive rules too, for a clearer message.
			for _, imp := range p.imports {
				check(imp, "imports", false)
			}
			for _, imp := range slices.Concat(p.testImports, p.xtestImports) {
				check(imp, "imports (in tests)", true)
			}
		}
	}
	slices.Sort(violations)
	violations = slices.Compact(violations)
	for _, v := range violations {
		t.Error(v)
	}
}

// stdlibOnly are packages that may depend, tests included, on the standard library only:
// leaves that any package of the module can share without taking on anything else.
var stdlibOnly = []string{mod("internal/jsonscan")}

// isStd reports whether an import path is the standard library's: its first element has
// no dot (go list reports third-party and module packages by their domain-based paths).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// TestStdlibOnly checks stdlibOnly against the packages' transitive dependencies and
// those of their tests.
func TestStdlibOnly(t *testing.T) {
	registerInputs(t)
	pkgs := loadPackages(t)
	for _, path := range stdlibOnly {
		p := pkgs[path]
		if p == nil {
			t.Errorf("%s: no such package (a stale entry of stdlibOnly)", path)
			continue
		}
		for _, d := range slices.Concat(p.deps, p.testDeps) {
			if d != path && !isStd(d) {
				t.Errorf("%s depends on %s: it may depend on the standard library only", path, d)
			}
		}
	}
	if isStd(mod("core")) || isStd("github.com/valyala/fasthttp") || !isStd("unicode/utf8") || !isStd("encoding/json") {
		t.Errorf("isStd misclassifies an import path")
	}
}

// TestRules guards the rule table itself against typos that would make a rule vacuous.
func TestRules(t *testing.T) {
	for i, r := range rules {
		if len(r.from) == 0 || len(r.to) == 0 || r.why == "" {
			t.Errorf("rule %d is incomplete: %+v", i, r)
		}
	}
	f := func(path, prefix string, want bool) {
		t.Helper()
		if got := under(path, prefix); got != want {
			t.Errorf("under(%q, %q) = %v, want %v", path, prefix, got, want)
		}
	}
	f("net", "net", true)
	f("net/http", "net", true)
	f("netip", "net", false)
	f("math/rand/v2", "math/rand", true)
	f("sync/atomic", "sync", true)
	f(mod("core/treex"), mod("core/tree"), false)
	if stripVariant("a/b [a/b.test]") != "a/b" {
		t.Errorf("stripVariant does not strip the test variant suffix")
	}
}

// TestGofmt fails listing the module's Go files that gofmt would change, including files
// excluded from the default build by build tags (core/internal/invariants/on.go).
func TestGofmt(t *testing.T) {
	registerInputs(t)
	out := goList(t, "-f",
		`{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`+
			`{{range .CgoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`+
			`{{range .TestGoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`+
			`{{range .XTestGoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`+
			`{{range .IgnoredGoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`,
		"./...")
	files := strings.Fields(out)
	if len(files) == 0 {
		t.Fatalf("go list found no Go files")
	}
	cmd := exec.Command(goBin(t, "gofmt"), append([]string{"-l"}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("gofmt -l failed: %v\n%s", err, stderr.String())
	}
	root := repoRoot(t)
	for _, f := range strings.Fields(string(res)) {
		if rel, err := filepath.Rel(root, f); err == nil {
			f = rel
		}
		t.Errorf("not gofmt-ed (run gofmt -w %s)", f)
	}
}
