package resource

import (
	"math"
	"testing"
)

func TestCPUIsExactInCentiCores(t *testing.T) {
	f := func(cores float64, want int64) {
		t.Helper()
		if got := Cores(cores); got != want {
			t.Errorf("Cores(%v) = %d, want %d", cores, got, want)
		}
		var v Vec
		v.SetFloat(CPU, cores)
		if v[CPU] != want || v.Float(CPU) != float64(want)/100 {
			t.Errorf("SetFloat/Float(%v): %d / %v", cores, v[CPU], v.Float(CPU))
		}
	}
	f(11.17, 1117)
	f(11.06, 1106)
	f(0.01, 1)
	f(32, 3200)
}

func TestFromResources(t *testing.T) {
	total := Vec{UserSlots: 10, CPU: Cores(11.17), Memory: 104857600}
	got := FromResources(Vec{UserSlots: 10, CPU: Cores(11.06), Memory: 103809024, Network: 5}, total)
	want := Share{1, 1106.0 / 1117.0, 0, 0.99, 0}
	if got != want {
		t.Fatalf("FromResources = %v, want %v (x/0 and 0/0 are 0)", got, want)
	}
}

func TestRatiosAndDominance(t *testing.T) {
	total := Vec{UserSlots: 100, CPU: Cores(100), Memory: 1000}
	x := Vec{UserSlots: 10, CPU: Cores(30), Memory: 500, GPU: 7}
	if r := GetMaxResourceRatio(x, total); r != 0.5 {
		t.Errorf("max ratio %v, want 0.5 (gpu has no total and is ignored)", r)
	}
	if r := GetMinResourceRatio(x, total); r != 0.1 {
		t.Errorf("min ratio %v, want 0.1", r)
	}
	if r := GetMinResourceRatio(x, Vec{}); r != 0 {
		t.Errorf("min ratio with no totals %v, want 0", r)
	}
	if k := DominantResource(x, total); k != Memory {
		t.Errorf("dominant %v, want memory", k)
	}
	if k := DominantResource(Vec{}, total); k != CPU {
		t.Errorf("dominant of nothing %v, want cpu", k)
	}
	if !x.Dominates(x) || x.StrictlyDominates(x) || !(Vec{1, 1, 1, 1, 1}).StrictlyDominates(Vec{}) {
		t.Error("dominance")
	}
	if got := (Vec{CPU: 3, Memory: 3}).Mul(0.5); got != (Vec{CPU: 2, Memory: 2}) {
		t.Errorf("Mul rounds to nearest: %v", got)
	}
	s := Share{0.1, 0.2, 0, 0.3, 0}
	if s.MaxComponent() != 0.3 || s.MinComponent() != 0 || !s.Near(s.Add(Uniform(1e-10)), 1e-9) {
		t.Error("share helpers")
	}
	if Infinite*4 < 0 || Infinite+Infinite < 0 || math.MaxInt64-Infinite < 2*Infinite {
		t.Error("infinite amounts must survive a few additions")
	}
}

func TestKindNames(t *testing.T) {
	for k := Kind(0); k < Count; k++ {
		got, ok := KindByName(k.String())
		if !ok || got != k {
			t.Errorf("KindByName(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if _, ok := KindByName("disk"); ok {
		t.Error("unknown resource accepted")
	}
}
