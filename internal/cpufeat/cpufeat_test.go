package cpufeat

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	i := Get()
	t.Log(i.String())
	if i.Arch != runtime.GOARCH {
		t.Fatalf("Arch = %q, want %q", i.Arch, runtime.GOARCH)
	}
	if i.NumCPU != runtime.NumCPU() || i.NumCPU < 1 {
		t.Fatalf("NumCPU = %d, runtime.NumCPU() = %d", i.NumCPU, runtime.NumCPU())
	}
	if i.ThreadsPerCore < 1 {
		t.Fatalf("ThreadsPerCore = %d, want ≥ 1", i.ThreadsPerCore)
	}
	if i.CacheLine < 0 || i.L1D < 0 || i.L2 < 0 || i.L3 < 0 {
		t.Fatalf("negative cache size in %+v", i)
	}
	if i.Vendor == "" {
		t.Fatalf("empty Vendor")
	}
	if !slices.IsSorted(i.Features) {
		t.Fatalf("Features not sorted: %v", i.Features)
	}
	for _, f := range i.Features {
		if !i.Has(f) {
			t.Fatalf("Has(%q) = false for a listed feature", f)
		}
	}
	if i.Has("NO_SUCH_FEATURE") {
		t.Fatalf("Has reports an unknown feature")
	}
	// The flags agree with the feature list.
	f := func(name string, flag bool) {
		t.Helper()
		if i.Has(name) != flag {
			t.Fatalf("flag %s = %v but Has(%q) = %v", name, flag, name, i.Has(name))
		}
	}
	f("AVX2", i.AVX2)
	f("AVX512F", i.AVX512F)
	f("BMI2", i.BMI2)
	f("FMA3", i.FMA3)
	f("POPCNT", i.POPCNT)
	f("SSE42", i.SSE42)
	if runtime.GOARCH == "amd64" {
		// Go itself requires x86-64-v1 (SSE2); cpuid reports at least level 1 on amd64.
		if i.X64Level < 1 {
			t.Fatalf("X64Level = %d on amd64", i.X64Level)
		}
	}
	if j := Get(); j.String() != i.String() {
		t.Fatalf("Get is not stable: %q then %q", i.String(), j.String())
	}
}

func TestString(t *testing.T) {
	i := Info{
		Brand: "Test CPU  ", Vendor: "AMD", Arch: "amd64",
		PhysicalCores: 8, ThreadsPerCore: 2, LogicalCores: 16, NumCPU: 16,
		Family: 25, Model: 1, CacheLine: 64, L2: 512 << 10, L3: 32 << 20,
		X64Level: 3, AVX2: true, AVX: true, FMA3: true, BMI2: true, Hypervisor: "KVM",
	}
	want := `cpu="Test CPU  " vendor=AMD arch=amd64 cores=8x2 logical=16 numcpu=16 family=25 model=1 cacheline=64 l2=512KiB l3=32MiB x64=v3 simd=AVX2,AVX,FMA3,BMI2 vm=KVM`
	if got := i.String(); got != want {
		t.Fatalf("String():\n got %s\nwant %s", got, want)
	}
	if got := (Info{}).String(); !strings.Contains(got, "l2=? l3=? simd=none") || strings.Contains(got, "x64=") || strings.Contains(got, "vm=") {
		t.Fatalf("zero Info String() = %s", got)
	}
	if strings.Contains(i.String(), "\n") {
		t.Fatalf("String() is not one line")
	}
}
