package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MemoryReport is the server's memory over the run, from its /metrics
// (VictoriaMetrics' process and Go metrics) and, at the end, from
// /debug/pprof/heap?gc=1 (the heap right after a forced GC).
type MemoryReport struct {
	Samples []MemSample `json:"samples"`
	End     *MemSample  `json:"end,omitempty"`
	// HeapAfterGC is HeapAlloc right after a forced GC at the end (-1 when
	// /debug/pprof is off).
	HeapAfterGC int64 `json:"heap_after_gc_bytes"`
	// Budget is the memory target of bench/README.md#load-generator-the-standard-load for the state at the end:
	// 1 KiB per running allocation + 4 KiB per node + 8 KiB per operation
	// the server holds (finished ones included).
	Budget        int64  `json:"budget_bytes"`
	BudgetVerdict string `json:"budget_verdict"`
	// Steady compares the medians of go_memstats_next_gc_bytes (twice the
	// heap live after the last GC, with GOGC=100) over the second and the
	// last quarter of the samples: the heap does not grow when the last is
	// at most 1.1 × the second.
	SecondQuarterMedian int64   `json:"second_quarter_median_next_gc_bytes,omitempty"`
	LastQuarterMedian   int64   `json:"last_quarter_median_next_gc_bytes,omitempty"`
	GrowthRatio         float64 `json:"growth_ratio,omitempty"`
	SteadyOK            *bool   `json:"steady_ok,omitempty"`
	Steady              string  `json:"steady,omitempty"`
}

// MemSample is one scrape of the server's /metrics.
type MemSample struct {
	TS         float64 `json:"t_s"`
	HeapAlloc  int64   `json:"heap_alloc_bytes"`
	HeapInuse  int64   `json:"heap_inuse_bytes"`
	NextGC     int64   `json:"next_gc_bytes"`
	RSS        int64   `json:"rss_bytes"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Running    int64   `json:"running_allocations"` // the load generator's count
	// Operations is every operation the server holds (fairsched_operations,
	// all states: finished ones stay for the facade's retention, 10 min).
	Operations  int64  `json:"operations_held"`
	Goroutines  int64  `json:"goroutines"`
	ScrapeError string `json:"scrape_error,omitempty"`
}

// SteadyGrowthLimit is the largest last-quarter / second-quarter median
// ratio of a steady heap.
const SteadyGrowthLimit = 1.1

type memSampler struct {
	h   *httpDriver
	cfg *Config

	mu      sync.Mutex
	samples []MemSample
}

func newMemSampler(h *httpDriver, cfg *Config) *memSampler { return &memSampler{h: h, cfg: cfg} }

// sample scrapes /metrics once.
func (m *memSampler) sample(ts float64, running int64) {
	s := MemSample{TS: ts, Running: running, CPUSeconds: -1}
	st, body, err := m.h.do("GET", "/metrics", nil, 10*time.Second)
	switch {
	case err != nil:
		s.ScrapeError = err.Error()
	case st != 200:
		s.ScrapeError = "status " + strconv.Itoa(st)
	default:
		v := parseMetrics(body, "go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_next_gc_bytes",
			"process_resident_memory_bytes", "process_cpu_seconds_total", "go_goroutines")
		s.HeapAlloc, s.HeapInuse, s.NextGC, s.RSS = int64(v[0]), int64(v[1]), int64(v[2]), int64(v[3])
		s.CPUSeconds, s.Goroutines = v[4], int64(v[5])
		s.Operations = int64(sumMetric(body, "fairsched_operations{"))
	}
	m.mu.Lock()
	m.samples = append(m.samples, s)
	m.mu.Unlock()
}

func (m *memSampler) loop(ctx context.Context, r *runner) {
	t := time.NewTicker(m.cfg.SampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.sample(time.Since(r.start).Seconds(), r.st.sum().running)
	}
}

// cpuAt returns the server's CPU seconds of sample i (-1: the last), or
// -1 when unknown.
func (m *memSampler) cpuAt(i int) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == 0 {
		return -1
	}
	if i < 0 {
		i = len(m.samples) - 1
	}
	return m.samples[i].CPUSeconds
}

// report builds the memory report; the last sample is the end's.
func (m *memSampler) report(running int64, nodes, ops int) *MemoryReport {
	m.mu.Lock()
	samples := slices.Clone(m.samples)
	m.mu.Unlock()
	r := &MemoryReport{Samples: samples, HeapAfterGC: -1}
	if len(samples) > 0 {
		r.End = &samples[len(samples)-1]
	}
	held := int64(ops)
	if r.End != nil && r.End.Operations > held {
		held = r.End.Operations // finished operations the server still holds
	}
	r.Budget = running<<10 + int64(nodes)<<12 + held<<13
	if st, body, err := m.h.do("GET", "/debug/pprof/heap?gc=1&debug=1", nil, 60*time.Second); err == nil && st == 200 {
		if i := bytes.Index(body, []byte("# HeapAlloc = ")); i >= 0 {
			rest := body[i+len("# HeapAlloc = "):]
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				rest = rest[:j]
			}
			if v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64); err == nil {
				r.HeapAfterGC = v
			}
		}
	}
	switch {
	case r.HeapAfterGC < 0:
		r.BudgetVerdict = "unknown (no /debug/pprof/heap)"
	case r.HeapAfterGC <= r.Budget:
		r.BudgetVerdict = fmt.Sprintf("met, %.0f%% of the budget", 100*float64(r.HeapAfterGC)/float64(r.Budget))
	default:
		r.BudgetVerdict = fmt.Sprintf("exceeded, %.0f%% of the budget", 100*float64(r.HeapAfterGC)/float64(r.Budget))
	}
	// The first sample is taken before the heartbeats start: leave it out.
	var series []int64
	for _, s := range samples[min(1, len(samples)):] {
		if s.ScrapeError == "" && s.NextGC > 0 {
			series = append(series, s.NextGC)
		}
	}
	r.steadiness(series)
	return r
}

// steadiness compares the medians of the second and the last quarter of
// series (at least 8 samples; fewer leave the verdict out).
func (r *MemoryReport) steadiness(series []int64) {
	q := len(series) / 4
	if q < 2 {
		return
	}
	r.SecondQuarterMedian = median(series[q : 2*q])
	r.LastQuarterMedian = median(series[len(series)-q:])
	r.GrowthRatio = float64(r.LastQuarterMedian) / float64(r.SecondQuarterMedian)
	ok := r.GrowthRatio <= SteadyGrowthLimit
	r.SteadyOK = &ok
	verdict := "steady"
	if !ok {
		verdict = "GROWING"
	}
	r.Steady = fmt.Sprintf("next_gc median %s in the second quarter, %s in the last: ratio %.3f (limit %.1f): %s",
		mib(r.SecondQuarterMedian), mib(r.LastQuarterMedian), r.GrowthRatio, SteadyGrowthLimit, verdict)
}

func median(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// parseMetrics returns the values of the named unlabelled metrics of a
// Prometheus text exposition (0 for the missing ones).
func parseMetrics(body []byte, names ...string) []float64 {
	out := make([]float64, len(names))
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 || line[0] == '#' {
			continue
		}
		for k, n := range names {
			if string(line[:sp]) == n {
				if v, err := strconv.ParseFloat(string(bytes.TrimSpace(line[sp+1:])), 64); err == nil {
					out[k] = v
				}
			}
		}
	}
	return out
}

// sumMetric returns the sum of the values of every series whose line starts
// with prefix (a metric name and "{": all its labels).
func sumMetric(body []byte, prefix string) float64 {
	sum := 0.0
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if !bytes.HasPrefix(line, []byte(prefix)) {
			continue
		}
		if sp := bytes.LastIndexByte(line, ' '); sp > 0 {
			if v, err := strconv.ParseFloat(string(line[sp+1:]), 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// captureProfiles fetches the server's profiles into pc.Dir: after pc.After,
// CPU, mutex and block profiles over pc.Seconds (in parallel), then the
// heap and allocs profiles. It returns the files written; failures are
// counted as errors of kind "profile".
func (h *httpDriver) captureProfiles(ctx context.Context, pc *ProfileCapture, st *stats) []string {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(pc.After):
	}
	if err := os.MkdirAll(pc.Dir, 0o755); err != nil {
		st.error(-1, "profile", err.Error())
		return nil
	}
	secs := strconv.Itoa(max(pc.Seconds, 1))
	var mu sync.Mutex
	var files []string
	fetch := func(name, path string) {
		status, body, err := h.do("GET", path, nil, time.Duration(pc.Seconds+60)*time.Second)
		if err == nil && status != 200 {
			err = fmt.Errorf("GET %s: status %d: %s", path, status, bytes.TrimSpace(body))
		}
		if err != nil {
			st.error(-1, "profile", err.Error())
			return
		}
		f := filepath.Join(pc.Dir, pc.Prefix+name+".pprof")
		if err := os.WriteFile(f, body, 0o644); err != nil {
			st.error(-1, "profile", err.Error())
			return
		}
		mu.Lock()
		files = append(files, f)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, p := range [][2]string{
		{"cpu", "/debug/pprof/profile?seconds=" + secs},
		{"mutex", "/debug/pprof/mutex?seconds=" + secs},
		{"block", "/debug/pprof/block?seconds=" + secs},
	} {
		wg.Add(1)
		go func() { defer wg.Done(); fetch(p[0], p[1]) }()
	}
	wg.Wait()
	fetch("heap", "/debug/pprof/heap")
	fetch("allocs", "/debug/pprof/allocs")
	slices.Sort(files)
	return files
}
