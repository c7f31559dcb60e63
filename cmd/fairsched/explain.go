package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fairsched/fairsched/client"
)

// explainFlags is fairsched explain OPERATION | --pool NAME: why an
// operation (or a pool) is in its state, one sentence per finding, the
// binding one first (docs/why-waiting.md).
func explainFlags(fs *flag.FlagSet) func(*cliEnv, []string) error {
	pool := fs.String("pool", "", "explain this pool instead of an operation")
	return func(e *cliEnv, args []string) error {
		var ex *client.Explanation
		var err error
		switch {
		case *pool != "" && len(args) == 0:
			ex, err = e.c.ExplainPool(e.ctx, *pool)
		case *pool == "" && len(args) == 1:
			ex, err = e.c.Explain(e.ctx, args[0])
		default:
			return usagef("want OPERATION or --pool NAME")
		}
		if err != nil {
			return err
		}
		return e.emit(ex, func(tw *tabwriter.Writer) {
			who := "operation " + ex.Operation
			if ex.Pool != "" {
				who = "pool " + ex.Pool
			}
			fmt.Fprintf(tw, "%s is %s:\n", who, strings.ReplaceAll(ex.State, "_", " "))
			for i, f := range ex.Findings {
				fmt.Fprintf(tw, "%3d. %s. [%s]\n", i+1, f.Message, f.Code)
			}
		})
	}
}

// dryRunFlags is a pool change without a body that may be previewed with
// --dry-run.
func dryRunFlags(run func(e *cliEnv, args []string, dry bool) error) func(*flag.FlagSet) func(*cliEnv, []string) error {
	return func(fs *flag.FlagSet) func(*cliEnv, []string) error {
		dry := dryRunFlag(fs)
		return func(e *cliEnv, args []string) error { return run(e, args, *dry) }
	}
}

// dryRunFlag adds --dry-run to a pool command: with it, the command
// previews its change (POST /api/v1/whatif) and prints what it would
// change instead of making it.
func dryRunFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("dry-run", false, "preview the change: print the pools and fields it would change, and change nothing")
}

// dryRun previews change and prints the difference.
func (e *cliEnv) dryRun(change client.WhatIfChange) error {
	r, err := e.c.WhatIf(e.ctx, []client.WhatIfChange{change})
	if err != nil {
		return err
	}
	if e.output == "json" {
		return e.emit(r, nil)
	}
	diffs := whatIfDiff(r)
	if len(diffs) == 0 {
		fmt.Fprintln(e.stdout, "no pool would change")
		return nil
	}
	return e.emit(nil, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "POOL\tFIELD\tBEFORE\tAFTER")
		for _, d := range diffs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.pool, d.field, d.before, d.after)
		}
	})
}

// fieldDiff is one field of one pool that a what-if changes.
type fieldDiff struct{ pool, field, before, after string }

// whatIfDiff lists the fields that differ between the pools' views before
// and after, in the server's order of the pools and the views' order of
// the fields (nested ones as fair_share.cpu), numbers to 4 significant
// digits (a difference below that is none). A pool the changes create or
// remove is one line, "(created)" or "(removed)", with its fair share.
func whatIfDiff(r *client.WhatIfResult) []fieldDiff {
	var out []fieldDiff
	for _, p := range r.Pools {
		switch {
		case p.Before == nil && p.After != nil:
			out = append(out, fieldDiff{p.Name, "(created)", "-", "fair share " + shareText(p.After.FairShare)})
			continue
		case p.After == nil && p.Before != nil:
			out = append(out, fieldDiff{p.Name, "(removed)", "fair share " + shareText(p.Before.FairShare), "-"})
			continue
		case p.Before == nil:
			continue
		}
		before, after := flatten(p.Before), flatten(p.After)
		var keys []string
		for _, k := range append(before.keys, after.keys...) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			b, a := before.values[k], after.values[k]
			if b == a {
				continue
			}
			if b == "" {
				b = "-"
			}
			if a == "" {
				a = "-"
			}
			out = append(out, fieldDiff{p.Name, k, b, a})
		}
	}
	return out
}

// shareText is a share's nonzero resources.
func shareText(s client.Share) string {
	var parts []string
	for _, r := range []struct {
		name string
		v    float64
	}{{"user_slots", s.UserSlots}, {"cpu", s.CPU}, {"gpu", s.GPU}, {"memory", s.Memory}, {"network", s.Network}} {
		if r.v != 0 {
			parts = append(parts, r.name+"="+num4(r.v))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

func num4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// flatView is a pool view as dotted keys in the view's order and their
// values as printed.
type flatView struct {
	keys   []string
	values map[string]string
}

// flatten flattens a pool's orchid view (its JSON, the keys in order).
func flatten(p *client.PoolOrchid) flatView {
	b, _ := json.Marshal(p)
	f := flatView{values: map[string]string{}}
	f.add("", b)
	return f
}

// add adds the members of the JSON object obj, their keys under prefix.
func (f *flatView) add(prefix string, obj []byte) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return
		}
		k := prefix + t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return
		}
		if raw[0] == '{' {
			f.add(k+".", raw)
			continue
		}
		if k == "name" {
			continue
		}
		s := string(raw)
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&v) == nil {
			switch x := v.(type) {
			case json.Number:
				if fv, err := x.Float64(); err == nil {
					s = num4(fv)
				}
			case string:
				s = x
			}
		}
		f.keys = append(f.keys, k)
		f.values[k] = s
	}
}

// poolChange is the what-if change of a pool command.
func poolChange(method, name string, body any) client.WhatIfChange {
	return client.WhatIfChange{Method: method, Path: client.PoolPath(name), Body: body}
}
