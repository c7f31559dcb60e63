// Command pgomerge merges CPU profiles into one profile for profile-guided
// optimisation (profiles/fairsched.pgo, copied to cmd/fairsched/default.pgo
// by make pgo), on github.com/google/pprof/profile:
//
//	pgomerge -o OUT [-focus RE] [-ignore RE] [-normalize] PROFILE...
//
// -focus keeps only the samples with a frame whose function matches RE,
// -ignore drops those with one; -normalize scales every input to the same
// total CPU time before merging, so that a long capture does not outweigh
// a short one. The output is a gzipped pprof profile.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/google/pprof/profile"
)

const usage = `usage: pgomerge -o OUT [-focus RE] [-ignore RE] [-normalize] PROFILE...

Merges CPU profiles (pprof format, as /debug/pprof/profile writes them) into
OUT for profile-guided optimisation (go build -pgo=OUT).

flags:
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pgomerge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	out := fs.String("o", "", "write the merged profile to `FILE` (required)")
	focus := fs.String("focus", "", "keep only samples with a function matching `RE`")
	ignore := fs.String("ignore", "", "drop samples with a function matching `RE`")
	normalize := fs.Bool("normalize", false, "scale every input to the same total before merging")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	var focusRE, ignoreRE *regexp.Regexp
	for _, f := range []struct {
		src string
		dst **regexp.Regexp
		nm  string
	}{{*focus, &focusRE, "-focus"}, {*ignore, &ignoreRE, "-ignore"}} {
		if f.src == "" {
			continue
		}
		re, err := regexp.Compile(f.src)
		if err != nil {
			fmt.Fprintf(stderr, "pgomerge: cannot use %s %q: %v\n", f.nm, f.src, err)
			return 2
		}
		*f.dst = re
	}
	merged, st, err := merge(fs.Args(), focusRE, ignoreRE, *normalize)
	if err != nil {
		fmt.Fprintf(stderr, "pgomerge: %v\n", err)
		return 1
	}
	f, err := os.Create(*out)
	if err == nil {
		err = merged.Write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "pgomerge: cannot write %s: %v\n", *out, err)
		return 1
	}
	fmt.Fprintf(stdout, "pgomerge: %d profiles, %d of %d samples kept (%.1f s of CPU) -> %s\n",
		st.inputs, st.kept, st.total, st.cpuSeconds, *out)
	return 0
}

type mergeStats struct {
	inputs, total, kept int
	cpuSeconds          float64
}

// merge reads, filters, optionally normalises and merges the profiles.
func merge(files []string, focus, ignore *regexp.Regexp, normalize bool) (*profile.Profile, mergeStats, error) {
	var st mergeStats
	var ps []*profile.Profile
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, st, err
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			return nil, st, fmt.Errorf("cannot parse %s: %w", name, err)
		}
		if cpuIndex(p) < 0 {
			return nil, st, fmt.Errorf("cannot use %s: it is not a CPU profile (no cpu/nanoseconds samples)", name)
		}
		st.total += len(p.Sample)
		if focus != nil || ignore != nil {
			p.FilterSamplesByName(focus, ignore, nil, nil)
		}
		st.kept += len(p.Sample)
		ps = append(ps, p)
	}
	if normalize && len(ps) > 1 {
		// Scale each profile's CPU time to the first one's.
		ref := cpuTotal(ps[0])
		for _, p := range ps[1:] {
			if t := cpuTotal(p); t > 0 && ref > 0 {
				p.Scale(float64(ref) / float64(t))
			}
		}
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		return nil, st, fmt.Errorf("cannot merge: %w", err)
	}
	if err := merged.CheckValid(); err != nil {
		return nil, st, fmt.Errorf("the merged profile is not valid: %w", err)
	}
	st.inputs = len(ps)
	st.cpuSeconds = float64(cpuTotal(merged)) / 1e9
	return merged.Compact(), st, nil
}

// cpuIndex returns the index of the cpu/nanoseconds sample type, or -1.
func cpuIndex(p *profile.Profile) int {
	for i, t := range p.SampleType {
		if t.Type == "cpu" && t.Unit == "nanoseconds" {
			return i
		}
	}
	return -1
}

func cpuTotal(p *profile.Profile) int64 {
	i := cpuIndex(p)
	if i < 0 {
		return 0
	}
	var t int64
	for _, s := range p.Sample {
		t += s.Value[i]
	}
	return t
}
