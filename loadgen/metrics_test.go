package loadgen

import (
	"reflect"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	body := []byte(`# HELP x
go_memstats_heap_alloc_bytes 1.2345e+07
go_memstats_heap_alloc_bytes_total 99
process_cpu_seconds_total 12.5
fairsched_pool_fair_share{pool="a",resource="cpu"} 0.5
go_goroutines 17`)
	got := parseMetrics(body, "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "go_goroutines", "missing")
	if want := []float64{12345000, 12.5, 17, 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("parseMetrics = %v, want %v", got, want)
	}
}

func TestSumMetric(t *testing.T) {
	body := []byte("fairsched_operations{state=\"running\"} 2000\nfairsched_operations{state=\"completed\"} 15\nfairsched_operations_x 7\n")
	if got := sumMetric(body, "fairsched_operations{"); got != 2015 {
		t.Fatalf("sumMetric = %v, want 2015", got)
	}
}

func TestSteadiness(t *testing.T) {
	f := func(series []int64, ok *bool, ratio float64) {
		t.Helper()
		var r MemoryReport
		r.steadiness(series)
		if (r.SteadyOK == nil) != (ok == nil) || ok != nil && *r.SteadyOK != *ok || ok != nil && r.GrowthRatio != ratio {
			t.Errorf("steadiness(%v): ok %v ratio %v; want %v %v", series, r.SteadyOK, r.GrowthRatio, ok, ratio)
		}
	}
	yes, no := true, false
	f([]int64{1, 2, 3}, nil, 0)
	// Quarters of 2: second [100 100], last [105 105].
	f([]int64{50, 60, 100, 100, 90, 110, 105, 105}, &yes, 1.05)
	f([]int64{50, 60, 100, 100, 120, 130, 150, 150}, &no, 1.5)
	// A warm-up in the first quarter does not count.
	f([]int64{1, 1, 1, 100, 100, 100, 100, 100, 100, 100, 100, 100}, &yes, 1)
}
