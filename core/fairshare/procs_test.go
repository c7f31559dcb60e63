package fairshare_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
)

// The fair-share update builds and distributes disjoint subtrees on up to
// GOMAXPROCS goroutines (parallel.go); its results must not depend on how
// many. These tests run the same inputs at GOMAXPROCS 1, 2 and 8 and compare
// every attribute of every element after every update bit for bit (attrDiff),
// besides the checks each input has of its own.

// testProcs are the GOMAXPROCS values the results are compared across.
var testProcs = []int{1, 2, 8}

// withProcs runs f with GOMAXPROCS set to procs, restoring it after.
func withProcs(procs int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	f()
}

// run is the attributes of every element after each update of a sequence.
type run struct {
	updates []updateAttrs
}

// updateAttrs is every element's name and attributes after one update.
type updateAttrs struct {
	names []string
	attrs []fairshare.Attributes
}

// add records the attributes of u's tree's elements, in pre-order.
func (r *run) add(u *fairshare.Updater) {
	var ua updateAttrs
	u.Tree().Walk(func(id tree.ID) {
		ua.names = append(ua.names, u.Tree().Name(id))
		ua.attrs = append(ua.attrs, *u.Attributes(id))
	})
	r.updates = append(r.updates, ua)
}

// diffRuns returns the first difference between two runs, "" if none.
func diffRuns(a, b *run) string {
	if len(a.updates) != len(b.updates) {
		return fmt.Sprintf("%d updates against %d", len(a.updates), len(b.updates))
	}
	for i := range a.updates {
		ua, ub := &a.updates[i], &b.updates[i]
		if !slices.Equal(ua.names, ub.names) {
			return fmt.Sprintf("update %d: different elements", i)
		}
		for j := range ua.attrs {
			if d := attrDiff(reflect.ValueOf(ua.attrs[j]), reflect.ValueOf(ub.attrs[j]), ""); d != "" {
				return fmt.Sprintf("update %d, %s: %s", i, ua.names[j], d)
			}
		}
	}
	return ""
}

// compareProcs runs f at each of testProcs and fails if a run differs from
// the first (attrDiff's "incremental" is the run at procs, "full" the run at
// GOMAXPROCS 1).
func compareProcs(t *testing.T, f func(t *testing.T) *run) {
	t.Helper()
	var first *run
	for _, procs := range testProcs {
		var r *run
		withProcs(procs, func() { r = f(t) })
		if t.Failed() {
			t.Fatalf("GOMAXPROCS %d failed", procs)
		}
		if first == nil {
			first = r
			continue
		}
		if d := diffRuns(r, first); d != "" {
			t.Fatalf("GOMAXPROCS %d differs from %d: %s", procs, testProcs[0], d)
		}
	}
}

// TestConformanceAnyProcs runs the conformance vectors (testdata/conformance,
// decoded here with the subset of the snapshot format they use) through
// snapshot.Solve at each of testProcs: each run must match the vector's
// expected values within its tolerance, and the runs must agree bit for bit.
func TestConformanceAnyProcs(t *testing.T) {
	files, err := filepath.Glob("../../testdata/conformance/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance vectors found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Name      string                                       `json:"name"`
			Snapshot  map[string]any                               `json:"snapshot"`
			Expected  map[string]map[string]map[string]interface{} `json:"expected"`
			Tolerance float64                                      `json:"tolerance"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(v.Name, func(t *testing.T) {
			compareProcs(t, func(t *testing.T) *run {
				s := decodeVectorSnapshot(t, v.Snapshot)
				res, err := snapshot.Solve(s)
				if err != nil {
					t.Fatalf("solve: %v", err)
				}
				r := &run{}
				for _, up := range res.Updates {
					var ua updateAttrs
					for _, e := range up.Elements {
						ua.names = append(ua.names, e.Name)
						ua.attrs = append(ua.attrs, e.Attrs)
					}
					r.updates = append(r.updates, ua)
				}
				checkExpected(t, r, v.Expected, v.Tolerance)
				return r
			})
		})
	}
}

// checkExpected compares a run with a vector's expected values.
func checkExpected(t *testing.T, r *run, expected map[string]map[string]map[string]interface{}, tol float64) {
	t.Helper()
	idxs := make([]string, 0, len(expected))
	for k := range expected {
		idxs = append(idxs, k)
	}
	sort.Strings(idxs)
	for _, idx := range idxs {
		i, _ := strconv.Atoi(idx)
		if i < 0 {
			i += len(r.updates)
		}
		if i < 0 || i >= len(r.updates) {
			t.Fatalf("update %s missing (have %d)", idx, len(r.updates))
		}
		for el, attrs := range expected[idx] {
			j := slices.Index(r.updates[i].names, el)
			if j < 0 {
				t.Errorf("update %s: element %s missing", idx, el)
				continue
			}
			a := &r.updates[i].attrs[j]
			for name, want := range attrs {
				var parts map[string]*resource.Share
				switch name {
				case "fair_share":
					parts = map[string]*resource.Share{"": &a.FairShare.Total}
				case "promised_guarantee_fair_share":
					parts = map[string]*resource.Share{"": &a.PromisedGuaranteeFairShare.Total}
				case "demand_share":
					parts = map[string]*resource.Share{"": &a.DemandShare}
				case "limits_share":
					parts = map[string]*resource.Share{"": &a.LimitsShare}
				case "detailed":
					parts = map[string]*resource.Share{
						"strong_guarantee":    &a.FairShare.StrongGuarantee,
						"integral_guarantee":  &a.FairShare.IntegralGuarantee,
						"weight_proportional": &a.FairShare.WeightProportional,
					}
				default:
					t.Fatalf("expected attribute %q: extend checkExpected", name)
				}
				for part, got := range parts {
					w := want.(map[string]any)
					if part != "" {
						if w[part] == nil {
							continue // not checked
						}
						w = w[part].(map[string]any)
					}
					for res, x := range w {
						k, ok := resource.KindByName(res)
						if !ok {
							t.Fatalf("unknown resource %q", res)
						}
						if g := got[k]; math.IsNaN(g) || math.Abs(g-x.(float64)) > tol+1e-12 {
							t.Errorf("update %s: %s.%s.%s.%s: expected %v, got %v", idx, el, name, part, res, x, g)
						}
					}
				}
			}
		}
	}
}

// decodeVectorSnapshot decodes the subset of docs/api.md#solve's snapshot that the
// vectors use, as wire does (which the core may not import); a key
// outside it fails the test.
func decodeVectorSnapshot(t *testing.T, m map[string]any) *snapshot.Snapshot {
	t.Helper()
	s := &snapshot.Snapshot{Config: fairshare.DefaultConfig()}
	s.Total = vecOf(t, m["total_resources"])
	if c, ok := m["config"]; ok {
		s.Config = configOf(t, c, s.Config)
	}
	s.Root.Name = tree.RootName
	root := m["tree"].(map[string]any)
	s.Root.Children = elementsOf(t, root["children"])
	for _, uv := range m["updates"].([]any) {
		var up snapshot.Update
		for k, x := range uv.(map[string]any) {
			switch k {
			case "elapsed_s":
				if x != nil {
					up.Elapsed, up.HasElapsed = clock.DurationFromSeconds(x.(float64)), true
				}
			case "label":
				up.Label = x.(string)
			case "config":
				c := configOf(t, x, s.Config)
				up.Config = &c
			case "total_resources":
				v := vecOf(t, x)
				up.Total = &v
			case "set":
				keys := sortedKeys(x.(map[string]any))
				for _, key := range keys {
					dot := strings.LastIndexByte(key, '.')
					a := snapshot.Assignment{Element: key[:dot], Path: key}
					switch key[dot+1:] {
					case "demand":
						a.Attr, a.Vec = snapshot.AttrDemand, tree.Full(vecOf(t, x.(map[string]any)[key]))
					case "resource_limits":
						a.Attr, a.Vec = snapshot.AttrResourceLimits, partialOf(t, x.(map[string]any)[key])
					default:
						t.Fatalf("set %q: extend decodeVectorSnapshot", key)
					}
					up.Set = append(up.Set, a)
				}
			default:
				t.Fatalf("update key %q: extend decodeVectorSnapshot", k)
			}
		}
		s.Updates = append(s.Updates, up)
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configOf applies a config object's settings to c.
func configOf(t *testing.T, v any, c fairshare.Config) fairshare.Config {
	t.Helper()
	var set func(prefix string, m map[string]any)
	set = func(prefix string, m map[string]any) {
		for _, k := range sortedKeys(m) {
			if sub, ok := m[k].(map[string]any); ok {
				set(prefix+k+".", sub)
				continue
			}
			st, ok := fairshare.LookupSetting(prefix + k)
			if !ok {
				t.Fatalf("config key %q: extend decodeVectorSnapshot", prefix+k)
			}
			var val settings.Value
			switch x := m[k].(type) {
			case bool:
				val.Bool = x
			case float64:
				val.Number = x
			case string:
				val.Choice = x
			default:
				t.Fatalf("config key %q: %T", prefix+k, x)
			}
			if err := st.Set(&c, val); err != nil {
				t.Fatalf("config key %q: %v", prefix+k, err)
			}
		}
	}
	set("", v.(map[string]any))
	return c
}

// partialOf decodes a resource object (cpu in cores); vecOf makes missing
// components 0.
func partialOf(t *testing.T, v any) tree.PartialVec {
	t.Helper()
	var p tree.PartialVec
	for name, x := range v.(map[string]any) {
		k, ok := resource.KindByName(name)
		if !ok {
			t.Fatalf("unknown resource %q", name)
		}
		if k == resource.CPU {
			p.V[k] = resource.Cores(x.(float64))
		} else {
			p.V[k] = int64(x.(float64))
		}
		p.Set[k] = true
	}
	return p
}

func vecOf(t *testing.T, v any) resource.Vec { return partialOf(t, v).V }

func elementsOf(t *testing.T, v any) []snapshot.Element {
	t.Helper()
	if v == nil {
		return nil
	}
	var els []snapshot.Element
	for _, ev := range v.([]any) {
		m := ev.(map[string]any)
		var el snapshot.Element
		if name, ok := m["operation"]; ok {
			el.Name, el.IsOperation = name.(string), true
		} else {
			el.Name = m["pool"].(string)
		}
		c, op := &el.Pool, &el.Op
		for _, k := range sortedKeys(m) {
			x := m[k]
			switch k {
			case "pool", "operation":
			case "children":
				el.Children = elementsOf(t, x)
			case "weight":
				if el.IsOperation {
					op.Weight = tree.Some(x.(float64))
				} else {
					c.Weight = tree.Some(x.(float64))
				}
			case "demand":
				el.Demand = vecOf(t, x)
			case "usage":
				el.Usage = vecOf(t, x)
			case "job_resources":
				el.JobResources = vecOf(t, x)
			case "is_gang":
				op.IsGang = x.(bool)
			case "resource_limits":
				if el.IsOperation {
					op.ResourceLimits = partialOf(t, x)
				} else {
					c.ResourceLimits = partialOf(t, x)
				}
			case "strong_guarantee_resources":
				c.StrongGuarantee = partialOf(t, x)
			case "mode":
				c.Mode = map[string]tree.Mode{"fair_share": tree.ModeFairShare, "fifo": tree.ModeFIFO}[x.(string)]
			case "compute_promised_guarantee_fair_share":
				c.ComputePromisedGuaranteeFairShare = x.(bool)
			case "integral_guarantees":
				for ik, ix := range x.(map[string]any) {
					switch ik {
					case "guarantee_type":
						c.Integral.Type = map[string]tree.GuaranteeType{"none": tree.GuaranteeNone,
							"burst": tree.GuaranteeBurst, "relaxed": tree.GuaranteeRelaxed}[ix.(string)]
					case "resource_flow":
						c.Integral.ResourceFlow = partialOf(t, ix)
					case "burst_guarantee_resources":
						c.Integral.BurstGuarantee = partialOf(t, ix)
					default:
						t.Fatalf("integral_guarantees key %q: extend decodeVectorSnapshot", ik)
					}
				}
			default:
				t.Fatalf("element key %q: extend decodeVectorSnapshot", k)
			}
		}
		els = append(els, el)
	}
	return els
}

// TestIncrementalEqualsFullAnyProcs is TestIncrementalEqualsFull's check at
// each of testProcs, on its first seeds, with the runs compared across
// procs.
func TestIncrementalEqualsFullAnyProcs(t *testing.T) {
	seeds := uint64(20)
	switch {
	case testing.Short():
		seeds = 5
	case invariants.Enabled: // -race or -tags invariants: slower
		seeds = 8
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			compareProcs(t, func(t *testing.T) *run { return procsSequence(t, seed, 40) })
		})
	}
}

// procsSequence is incCheckSequence's sequence (the same draws, so the same
// trees and changes for a seed), recording the incremental Updater's
// attributes after every update.
func procsSequence(t *testing.T, seed uint64, steps int) *run {
	t.Helper()
	seq := newIncSequence(seed)
	res := &run{}
	for step := range steps {
		seq.step(step)
		seq.tr.Walk(func(id tree.ID) {
			if d := attrDiff(reflect.ValueOf(*seq.inc.Attributes(id)), reflect.ValueOf(*seq.full.Attributes(id)), ""); d != "" {
				t.Fatalf("seed %d, step %d: %s: %s", seed, step, seq.tr.Name(id), d)
			}
		})
		res.add(seq.inc)
	}
	return res
}

// TestGenTreeAnyProcs updates a GenTree tree (the benchmarks' generator, at a
// tenth of their smaller size, less under -race) in both fit-factor modes: incremental
// updates with demand changes and integral volumes filling, each checked
// against a full one, at each of testProcs, the runs compared bit for bit.
// Here the tree is cut into tens of subtrees, as the benchmark trees are.
func TestGenTreeAnyProcs(t *testing.T) {
	for _, improved := range []bool{true, false} {
		t.Run(fmt.Sprintf("improved=%v", improved), func(t *testing.T) {
			compareProcs(t, func(t *testing.T) *run {
				pools, steps := 100, 6
				if invariants.Enabled { // -race or -tags invariants: slower
					pools, steps = 40, 3
				}
				tr, total := coretest.GenTree(3, pools, 10*pools)
				cfg := fairshare.DefaultConfig()
				cfg.EnableImprovedFitFactor = improved
				inc, full := fairshare.New(tr, cfg), fairshare.New(tr, cfg)
				changes := coretest.NewDemandChanges(tr, 4)
				now := clock.Time(0)
				res := &run{}
				for step := range steps {
					for range step {
						id, d, u := changes.Next()
						tr.SetDemandUsage(id, d, u)
					}
					now = now.Add(clock.DurationFromSeconds(0.2 + 30*float64(step%2)))
					inc.Update(total, now)
					full.Invalidate()
					full.Update(total, now)
					tr.Walk(func(id tree.ID) {
						if d := attrDiff(reflect.ValueOf(*inc.Attributes(id)), reflect.ValueOf(*full.Attributes(id)), ""); d != "" {
							t.Fatalf("step %d: %s: %s", step, tr.Name(id), d)
						}
					})
					res.add(inc)
				}
				return res
			})
		})
	}
}
