// Package cpufeat reads the CPU's identity and features once, through
// github.com/klauspost/cpuid/v2, into plain values that cmd/ logs at start-up, exports as
// metrics and uses to select kernels.
//
// The core never imports this package (internal/lint forbids the import): core
// behaviour must not depend on the machine. Callers that pick a kernel by CPU feature
// pass the choice into the core as configuration.
package cpufeat

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/cpuid/v2"
)

// Info describes the CPU the process runs on. Fields that cpuid cannot detect are 0 or
// empty (cache sizes: 0, not cpuid's -1). An Info is a plain value; Features is shared
// between copies returned by Get and must not be modified.
type Info struct {
	Brand      string // brand string, e.g. "AMD EPYC 7B13 64-Core Processor"
	Vendor     string // vendor id, e.g. "Intel", "AMD", "Ampere", "VendorUnknown"
	Hypervisor string // hypervisor vendor when running in a VM, else ""
	Arch       string // runtime.GOARCH

	PhysicalCores  int // physical cores, 0 if undetectable
	ThreadsPerCore int // hardware threads per core, at least 1
	LogicalCores   int // physical cores × threads per core, 0 if undetectable
	NumCPU         int // runtime.NumCPU(): logical CPUs usable by this process

	Family, Model, Stepping int

	CacheLine   int // bytes, 0 if undetectable
	L1D, L2, L3 int // bytes, 0 if undetectable (per core or shared, as cpuid reports)

	X64Level int // amd64 microarchitecture level 1–4 (GOAMD64=vN), 0 if not amd64

	// Flags for kernel selection. On amd64 the x86 flags are meaningful; on arm64, ASIMD
	// and SVE.
	SSE42, POPCNT, LZCNT, BMI1, BMI2, FMA3 bool
	AVX, AVX2, AVX512F, AVX512BW, AVX512VL bool
	ASIMD, SVE                             bool

	// Features is every feature cpuid detected, sorted by name.
	Features []string
}

// Get returns the CPU description, detected on first use and cached; it is safe for
// concurrent use.
func Get() Info { return get() }

var get = sync.OnceValue(func() Info { return fromCPUID(&cpuid.CPU) })

// fromCPUID converts cpuid's description into an Info.
func fromCPUID(c *cpuid.CPUInfo) Info {
	info := Info{
		Brand:          strings.TrimSpace(c.BrandName),
		Vendor:         c.VendorID.String(),
		Arch:           runtime.GOARCH,
		PhysicalCores:  c.PhysicalCores,
		ThreadsPerCore: max(c.ThreadsPerCore, 1),
		LogicalCores:   c.LogicalCores,
		NumCPU:         runtime.NumCPU(),
		Family:         c.Family,
		Model:          c.Model,
		Stepping:       c.Stepping,
		CacheLine:      max(c.CacheLine, 0),
		L1D:            max(c.Cache.L1D, 0),
		L2:             max(c.Cache.L2, 0),
		L3:             max(c.Cache.L3, 0),
		X64Level:       c.X64Level(),

		SSE42:    c.Supports(cpuid.SSE42),
		POPCNT:   c.Supports(cpuid.POPCNT),
		LZCNT:    c.Supports(cpuid.LZCNT),
		BMI1:     c.Supports(cpuid.BMI1),
		BMI2:     c.Supports(cpuid.BMI2),
		FMA3:     c.Supports(cpuid.FMA3),
		AVX:      c.Supports(cpuid.AVX),
		AVX2:     c.Supports(cpuid.AVX2),
		AVX512F:  c.Supports(cpuid.AVX512F),
		AVX512BW: c.Supports(cpuid.AVX512BW),
		AVX512VL: c.Supports(cpuid.AVX512VL),
		ASIMD:    c.Supports(cpuid.ASIMD),
		SVE:      c.Supports(cpuid.SVE),

		Features: c.FeatureSet(),
	}
	if c.VM() {
		info.Hypervisor = c.HypervisorVendorID.String()
	}
	slices.Sort(info.Features)
	return info
}

// Has reports whether cpuid detected the named feature (as spelled in Features, e.g.
// "AVX2").
func (i *Info) Has(feature string) bool {
	_, ok := slices.BinarySearch(i.Features, feature)
	return ok
}

// String returns a one-line summary for start-up logs, e.g.
//
//	cpu="AMD EPYC 7B13" vendor=AMD arch=amd64 cores=1x2 logical=2 numcpu=2 family=25 model=1 cacheline=64 l2=512KiB l3=32MiB x64=v3 simd=AVX2,BMI2,FMA3 vm=KVM
func (i Info) String() string {
	b := make([]byte, 0, 256)
	b = append(b, "cpu="...)
	b = strconv.AppendQuote(b, i.Brand)
	b = append(b, " vendor="...)
	b = append(b, i.Vendor...)
	b = append(b, " arch="...)
	b = append(b, i.Arch...)
	b = append(b, " cores="...)
	b = strconv.AppendInt(b, int64(i.PhysicalCores), 10)
	b = append(b, 'x')
	b = strconv.AppendInt(b, int64(i.ThreadsPerCore), 10)
	b = append(b, " logical="...)
	b = strconv.AppendInt(b, int64(i.LogicalCores), 10)
	b = append(b, " numcpu="...)
	b = strconv.AppendInt(b, int64(i.NumCPU), 10)
	b = append(b, " family="...)
	b = strconv.AppendInt(b, int64(i.Family), 10)
	b = append(b, " model="...)
	b = strconv.AppendInt(b, int64(i.Model), 10)
	b = append(b, " cacheline="...)
	b = strconv.AppendInt(b, int64(i.CacheLine), 10)
	b = append(b, " l2="...)
	b = appendSize(b, i.L2)
	b = append(b, " l3="...)
	b = appendSize(b, i.L3)
	if i.X64Level > 0 {
		b = append(b, " x64=v"...)
		b = strconv.AppendInt(b, int64(i.X64Level), 10)
	}
	b = append(b, " simd="...)
	n := len(b)
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"AVX512F", i.AVX512F}, {"AVX512BW", i.AVX512BW}, {"AVX512VL", i.AVX512VL},
		{"AVX2", i.AVX2}, {"AVX", i.AVX}, {"FMA3", i.FMA3}, {"BMI2", i.BMI2},
		{"SVE", i.SVE}, {"ASIMD", i.ASIMD},
	} {
		if f.on {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, f.name...)
		}
	}
	if len(b) == n {
		b = append(b, "none"...)
	}
	if i.Hypervisor != "" {
		b = append(b, " vm="...)
		b = append(b, i.Hypervisor...)
	}
	return string(b)
}

// appendSize appends a byte count as KiB or MiB when exact, "?" when unknown.
func appendSize(b []byte, n int) []byte {
	switch {
	case n <= 0:
		return append(b, '?')
	case n%(1<<20) == 0:
		return append(strconv.AppendInt(b, int64(n>>20), 10), "MiB"...)
	case n%(1<<10) == 0:
		return append(strconv.AppendInt(b, int64(n>>10), 10), "KiB"...)
	}
	return append(strconv.AppendInt(b, int64(n), 10), 'B')
}
