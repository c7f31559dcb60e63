package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile writes a CPU profile with one sample per (function, ns) pair.
func cpuProfile(t *testing.T, dir, name string, samples map[string]int64) string {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	id := uint64(1)
	for fn, ns := range samples {
		f := &profile.Function{ID: id, Name: fn, SystemName: fn, Filename: "x.go"}
		l := &profile.Location{ID: id, Address: 0x1000 * id, Line: []profile.Line{{Function: f, Line: 1}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{ns / 10_000_000, ns}})
		id++
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	return path
}

func readProfile(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, s := range p.Sample {
		out[s.Location[0].Line[0].Function.Name] += s.Value[1]
	}
	return out
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a := cpuProfile(t, dir, "a.pprof", map[string]int64{"main.hot": 3e9, "runtime.gc": 1e9})
	b := cpuProfile(t, dir, "b.pprof", map[string]int64{"main.hot": 1e9, "main.cold": 1e8})
	out := filepath.Join(dir, "merged.pgo")
	f := func(want map[string]int64, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"-o", out}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("pgomerge %v: exit %d: %s", args, code, stderr.String())
		}
		got := readProfile(t, out)
		if len(got) != len(want) {
			t.Fatalf("pgomerge %v: got %v, want %v", args, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("pgomerge %v: got %v, want %v", args, got, want)
			}
		}
	}
	f(map[string]int64{"main.hot": 4e9, "runtime.gc": 1e9, "main.cold": 1e8}, a, b)
	f(map[string]int64{"main.hot": 4e9, "main.cold": 1e8}, "-ignore", `^runtime\.`, a, b)
	f(map[string]int64{"main.hot": 4e9}, "-focus", `hot`, a, b)
	// Normalised: b (1.1 s) is scaled to a's 4 s.
	f(map[string]int64{"main.hot": 3e9 + 3636363636, "runtime.gc": 1e9, "main.cold": 363636364}, "-normalize", a, b)
}

func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	notProfile := filepath.Join(dir, "x.pprof")
	if err := os.WriteFile(notProfile, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	heap := &profile.Profile{SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}}}
	heapPath := filepath.Join(dir, "heap.pprof")
	hf, _ := os.Create(heapPath)
	_ = heap.Write(hf)
	hf.Close()
	f := func(code int, msg string, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if got := run(args, &stdout, &stderr); got != code || !strings.Contains(stderr.String(), msg) {
			t.Errorf("pgomerge %v: exit %d, stderr %q; want %d and %q", args, got, stderr.String(), code, msg)
		}
	}
	f(2, "usage", "-o", filepath.Join(dir, "o"))
	f(2, "usage", notProfile)
	f(1, "cannot parse", "-o", filepath.Join(dir, "o"), notProfile)
	f(1, "not a CPU profile", "-o", filepath.Join(dir, "o"), heapPath)
	f(2, "cannot use -focus", "-o", filepath.Join(dir, "o"), "-focus", "(", heapPath)
}
