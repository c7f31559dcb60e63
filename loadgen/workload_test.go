package loadgen

import (
	"reflect"
	"testing"

	"github.com/fairsched/fairsched/core/tree"
)

func TestWorkloadDeterministic(t *testing.T) {
	cfg := Standard()
	a, b := NewWorkload(&cfg), NewWorkload(&cfg)
	if !reflect.DeepEqual(a.Pools, b.Pools) {
		t.Fatal("seed 1: two workloads have different pools")
	}
	for _, slot := range []int{0, 1, 999, 1999} {
		for _, gen := range []uint32{0, 1, 7} {
			if sa, sb := a.Operation(slot, gen), b.Operation(slot, gen); !reflect.DeepEqual(sa, sb) {
				t.Fatalf("seed 1: operation (%d, %d) differs:\n%+v\n%+v", slot, gen, sa, sb)
			}
		}
	}
	ra, rb := a.NodeRand(17), b.NodeRand(17)
	for range 10 {
		if x, y := cfg.JobDuration.Draw(&ra), cfg.JobDuration.Draw(&rb); x != y {
			t.Fatalf("seed 1: node 17's job durations differ: %v, %v", x, y)
		}
	}
	// Another seed gives another workload.
	cfg2 := cfg
	cfg2.Seed = 2
	c := NewWorkload(&cfg2)
	if reflect.DeepEqual(a.Pools, c.Pools) && reflect.DeepEqual(a.Operation(0, 0), c.Operation(0, 0)) {
		t.Fatal("seeds 1 and 2 give the same workload")
	}
	// Generations of a slot differ.
	if reflect.DeepEqual(a.Operation(5, 0).Tasks, a.Operation(5, 1).Tasks) && a.Operation(5, 0).Pool == a.Operation(5, 1).Pool {
		t.Fatal("generations 0 and 1 of slot 5 are the same operation")
	}
}

func TestWorkloadShape(t *testing.T) {
	cfg := Standard()
	w := NewWorkload(&cfg)
	if len(w.Pools) != cfg.Pools {
		t.Fatalf("%d pools, want %d", len(w.Pools), cfg.Pools)
	}
	index := map[string]int{}
	children := map[string]int{}
	for i, p := range w.Pools {
		if p.Parent != "" {
			j, ok := index[p.Parent]
			if !ok {
				t.Fatalf("pool %s comes before its parent %s", p.Name, p.Parent)
			}
			if w.Pools[j].Config.Mode == tree.ModeFIFO {
				t.Fatalf("fifo pool %s has a child pool %s", p.Parent, p.Name)
			}
			children[p.Parent]++
		}
		index[p.Name] = i
	}
	leaves := map[string]bool{}
	for _, p := range w.Pools {
		if children[p.Name] == 0 {
			leaves[p.Name] = true
		}
	}
	for slot := range cfg.Operations {
		spec := w.Operation(slot, 0)
		if !leaves[spec.Pool] {
			t.Fatalf("operation %d is in %s, not a leaf pool", slot, spec.Pool)
		}
		if n := Jobs(&spec); n < cfg.MinJobs || n > 2*cfg.MaxJobs {
			t.Fatalf("operation %d has %d jobs", slot, n)
		}
		if s, g, ok := w.ParseOpID([]byte(spec.ID)); !ok || s != int32(slot) || g != 0 {
			t.Fatalf("ParseOpID(%q) = %d, %d, %v", spec.ID, s, g, ok)
		}
	}
}

func TestParseOpID(t *testing.T) {
	cfg := Standard()
	w := NewWorkload(&cfg)
	w.RunID = "abc"
	f := func(id string, slot int32, gen uint32, ok bool) {
		t.Helper()
		s, g, k := w.ParseOpID([]byte(id))
		if k != ok || ok && (s != slot || g != gen) {
			t.Errorf("ParseOpID(%q) = %d, %d, %v; want %d, %d, %v", id, s, g, k, slot, gen, ok)
		}
	}
	f(w.OpID(12, 3), 12, 3, true)
	f("lgabc-0-0", 0, 0, true)
	f("lgabc-1999-4294967", 1999, 4294967, true)
	f("lgabc-2000-0", 0, 0, false) // beyond the slots
	f("lgabd-1-0", 0, 0, false)
	f("lgabc-1-", 0, 0, false)
	f("lgabc--1", 0, 0, false)
	f("lgabc-x-1", 0, 0, false)
	f("op-17", 0, 0, false)
	f("", 0, 0, false)
}

func TestParseDist(t *testing.T) {
	f := func(s string, ok bool) {
		t.Helper()
		d, err := ParseDist(s)
		if (err == nil) != ok {
			t.Errorf("ParseDist(%q) error %v, want ok=%v", s, err, ok)
		}
		if ok && d.String() != s {
			t.Errorf("ParseDist(%q).String() = %q", s, d.String())
		}
	}
	f("fixed:3", true)
	f("uniform:5:120", true)
	f("exp:30", true)
	f("exp:30:1:600", true)
	f("lognormal:30:1", true)
	f("lognormal:30:1:5:120", true)
	f("uniform:120:5", false)
	f("uniform:0:5", false)
	f("fixed:-1", false)
	f("fixed", false)
	f("exp:30:1", false)
	f("lognormal:30:11", false)
	f("pareto:1:2", false)
	f("uniform:a:b", false)
	f("fixed:NaN", false)
	f("fixed:Inf", false)
}
