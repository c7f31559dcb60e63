package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fairsched/fairsched/loadgen"
)

// runCompare prints the medians (and ranges) of the headline figures of
// two sets of reports, and B's median over A's: the A/B table of
// bench/README.md (make pgo-ab).
func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := fs.String("a", "", "`GLOB` of the A reports")
	b := fs.String("b", "", "`GLOB` of the B reports")
	names := fs.String("names", "A,B", "names of A and B")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *a == "" || *b == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: loadgen compare --a GLOB --b GLOB [--names A,B]")
		return 2
	}
	na, nb, ok := strings.Cut(*names, ",")
	if !ok {
		na, nb = "A", "B"
	}
	ra, err := readReports(*a)
	if err == nil {
		var rb []*loadgen.Report
		rb, err = readReports(*b)
		if err == nil {
			fmt.Fprint(stdout, compareTable(na, nb, ra, rb))
			return 0
		}
	}
	fmt.Fprintf(stderr, "loadgen compare: %v\n", err)
	return 1
}

func readReports(glob string) ([]*loadgen.Report, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("cannot find reports matching %s", glob)
	}
	var out []*loadgen.Report
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r loadgen.Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("cannot decode %s: %w", f, err)
		}
		out = append(out, &r)
	}
	return out, nil
}

type metric struct {
	name string
	get  func(r *loadgen.Report) float64
}

var metrics = []metric{
	{"heartbeats/s", func(r *loadgen.Report) float64 { return r.HeartbeatsPerS }},
	{"latency p50 ms", func(r *loadgen.Report) float64 { return r.LatencyMS.P50 }},
	{"latency p99 ms", func(r *loadgen.Report) float64 { return r.LatencyMS.P99 }},
	{"server µs/heartbeat", func(r *loadgen.Report) float64 {
		if r.CPU == nil {
			return -1
		}
		return r.CPU.ServerUSPerHB
	}},
	{"loadgen µs/heartbeat", func(r *loadgen.Report) float64 {
		if r.CPU == nil {
			return -1
		}
		return r.CPU.LoadgenUSPerHB
	}},
	{"allocations started/s", func(r *loadgen.Report) float64 { return r.AllocationsStartedPerS }},
	{"errors", func(r *loadgen.Report) float64 { return float64(r.Errors) }},
}

func compareTable(na, nb string, a, b []*loadgen.Report) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| metric | %s median (range, n=%d) | %s median (range, n=%d) | %s / %s |\n|---|---|---|---|\n", na, len(a), nb, len(b), nb, na)
	for _, m := range metrics {
		ma, loA, hiA := stats(a, m.get)
		mb, loB, hiB := stats(b, m.get)
		ratio := "—"
		if ma != 0 {
			ratio = fmt.Sprintf("%.3f", mb/ma)
		}
		fmt.Fprintf(&sb, "| %s | %s (%s–%s) | %s (%s–%s) | %s |\n", m.name, num(ma), num(loA), num(hiA), num(mb), num(loB), num(hiB), ratio)
	}
	return sb.String()
}

func stats(rs []*loadgen.Report, get func(*loadgen.Report) float64) (med, lo, hi float64) {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = get(r)
	}
	slices.Sort(xs)
	n := len(xs)
	med = xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return med, xs[0], xs[n-1]
}

func num(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}
