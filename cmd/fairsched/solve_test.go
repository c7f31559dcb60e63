package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the current output")

// call runs the command line in process and returns its exit status and output.
func call(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// skipUnlessSolves skips the test while snapshot.Solve is a stub.
func skipUnlessSolves(t *testing.T, code int, stderr string) {
	t.Helper()
	if code != 0 && strings.Contains(stderr, "not implemented") {
		t.Skipf("snapshot.Solve is not implemented yet: %s", strings.TrimSpace(stderr))
	}
}

// TestSolveGolden runs every snapshot example and compares the output with
// testdata/golden/<name>.json; -update rewrites the golden files. (The other
// files of examples/ are the serve configuration and simulator scenarios.)
func TestSolveGolden(t *testing.T) {
	for _, name := range []string{"demo.json", "drf-paper.json", "hierarchy.json"} {
		ex := filepath.Join("../../examples", name)
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			code, out, errOut := call("", "solve", ex)
			skipUnlessSolves(t, code, errOut)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !json.Valid([]byte(out)) || !strings.HasSuffix(out, "}\n") {
				t.Fatalf("output is not one JSON value and a newline:\n%s", out)
			}
			// The same snapshot from stdin gives the same bytes.
			data, err := os.ReadFile(ex)
			if err != nil {
				t.Fatal(err)
			}
			if code2, out2, _ := call(string(data), "solve"); code2 != 0 || out2 != out {
				t.Fatalf("stdin run: exit %d, output differs: %v", code2, out2 != out)
			}
			// NB: the golden file is the output indented by encoding/json.Indent,
			// which keeps every number's bytes, so that changes review as diffs.
			var indented bytes.Buffer
			if err := json.Indent(&indented, []byte(out), "", "  "); err != nil {
				t.Fatal(err)
			}
			got := indented.String()
			golden := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s does not exist: run go test ./cmd/fairsched -run TestSolveGolden -update", golden)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("output differs from %s (rerun with -update and review the diff):\n%s", golden, got)
			}
		})
	}
}

func TestSolveErrors(t *testing.T) {
	f := func(stdin string, args []string, wantCode int, wantStderr string) {
		t.Helper()
		code, out, errOut := call(stdin, append([]string{"solve"}, args...)...)
		if code != wantCode || !strings.HasPrefix(errOut, wantStderr) || out != "" {
			t.Errorf("solve %q: exit %d, stdout %q, stderr %q\nwant exit %d, stderr starting %q", args, code, out, errOut, wantCode, wantStderr)
		}
	}
	f(`{"total_resources": {"cpu": -1}, "tree": {}}`, nil, 2,
		"fairsched solve: $.total_resources.cpu: cannot use -1: want a non-negative number\n")
	f(`{"total_resources": {}, "tree": {"children": [{"pool": "a"}, {"pool": "b", "children": [{"operation": "o", "demand": {"cpu": -1}}]}]}}`,
		[]string{"-"}, 2, "fairsched solve: $.tree.children[1].children[0].demand.cpu: cannot use -1: want a non-negative number\n")
	f(`{`, nil, 2, "fairsched solve: $: cannot parse JSON")
	f(``, nil, 2, "fairsched solve: $: cannot parse an empty body")
	f(``, []string{filepath.Join(t.TempDir(), "missing.json")}, 1, "fairsched solve: cannot read the snapshot: open ")
	f(``, []string{"a.json", "b.json"}, 2, "fairsched solve: cannot read 2 files")
	f(``, []string{"-bogus"}, 2, "flag provided but not defined: -bogus")
}

// TestSolveLargeVolume: a snapshot taken from a live cluster holds volumes
// past 2^53 (memory in byte·seconds), which solve takes as the floats they are.
func TestSolveLargeVolume(t *testing.T) {
	data, err := os.ReadFile("../../examples/demo.json")
	if err != nil {
		t.Fatal(err)
	}
	const small, large = `"memory": 618475290624000`, `"memory": 1.05e16`
	if !bytes.Contains(data, []byte(small)) {
		t.Fatalf("examples/demo.json no longer holds %s", small)
	}
	code, out, errOut := call(string(bytes.Replace(data, []byte(small), []byte(large), 1)), "solve")
	skipUnlessSolves(t, code, errOut)
	if code != 0 || errOut != "" || !json.Valid([]byte(out)) {
		t.Fatalf("exit %d, stderr %q, output %.200q", code, errOut, out)
	}
	var res struct {
		Updates []struct {
			Elements map[string]struct {
				Volume map[string]float64 `json:"accumulated_resource_volume"`
			} `json:"elements"`
		} `json:"updates"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Updates) == 0 {
		t.Fatal("no updates in the output")
	}
	found := false
	for _, el := range res.Updates[0].Elements {
		if el.Volume["memory"] > 1<<53 {
			found = true
		}
	}
	if !found {
		t.Errorf("no element of the first update holds a memory volume past 2^53:\n%.500s", out)
	}
}

func TestSolveWriteError(t *testing.T) {
	var errOut bytes.Buffer
	code := run([]string{"solve", "../../examples/drf-paper.json"}, strings.NewReader(""), failingWriter{}, &errOut)
	skipUnlessSolves(t, code, errOut.String())
	if code != 1 || !strings.HasPrefix(errOut.String(), "fairsched solve: cannot write the result: ") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCommands(t *testing.T) {
	f := func(args []string, wantCode int, wantStdout, wantStderr string) {
		t.Helper()
		code, out, errOut := call("", args...)
		if code != wantCode || !strings.Contains(out, wantStdout) || !strings.Contains(errOut, wantStderr) ||
			wantStdout == "" && out != "" || wantStderr == "" && errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q\nwant exit %d, stdout with %q, stderr with %q",
				args, code, out, errOut, wantCode, wantStdout, wantStderr)
		}
	}
	f(nil, 2, "", "usage: fairsched <command>")
	f([]string{"help"}, 0, "solve [FILE]", "")
	f([]string{"-h"}, 0, "usage: fairsched <command>", "")
	f([]string{"help", "solve"}, 0, "usage: fairsched solve [FILE]", "")
	f([]string{"solve", "-h"}, 0, "", "usage: fairsched solve [FILE]")
	f([]string{"serve", "extra"}, 2, "", "fairsched serve: cannot use argument \"extra\"")
	f([]string{"help", "serve"}, 0, "usage: fairsched serve", "")
	f([]string{"simulate", "x"}, 2, "", "fairsched simulate: want --out DIR")
	f([]string{"help", "simulate"}, 0, "usage: fairsched simulate SCENARIO", "")
	f([]string{"frobnicate"}, 2, "", `fairsched: unknown command "frobnicate"`)
	code, out, _ := call("", "help")
	if code != 0 || !strings.Contains(out, "serve [--listen ADDR]") || !strings.Contains(out, "simulate SCENARIO --out DIR") {
		t.Errorf("help does not list serve and simulate as commands:\n%s", out)
	}
}
