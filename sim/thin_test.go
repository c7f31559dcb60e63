package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestMaxSamplesThins runs one scenario keeping every sample and again
// within max_samples 16: the bounded run keeps at most 16, each pool's and
// workload's kept samples are the unbounded run's at the same times, their
// period doubles with each thinning, and each kept fairness sample is the
// time-weighted mean of the unbounded run's samples it covers. Thinning
// never changes what the scheduler did: the summaries are equal.
func TestMaxSamplesThins(t *testing.T) {
	run := func(max int) *Result {
		s := loadExample(t, "fifo-vs-fair")
		s.MaxSamples = max
		res, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	full, small := run(1e7), run(16)
	if full.Run.SamplePeriodS != 0 || full.Run.Samples != len(full.Fairness) || full.Run.Samples <= 64 {
		t.Fatalf("unbounded run: %d samples (%d fairness), thinned period %v; want more than 64, untouched",
			full.Run.Samples, len(full.Fairness), full.Run.SamplePeriodS)
	}
	n := len(small.Fairness)
	if n > 16 || n < 8 || small.Run.Samples != n {
		t.Fatalf("bounded run kept %d fairness samples (run.samples %d), want 8 to 16", n, small.Run.Samples)
	}
	period := small.Scenario.SamplePeriodS
	want := period
	for len(full.Fairness)/int(math.Round(want/period)) > 16 {
		want *= 2
	}
	if small.Run.SamplePeriodS != want {
		t.Errorf("thinned period %v s, want %v s (the scenario's %v s doubled)", small.Run.SamplePeriodS, want, period)
	}

	at := make(map[float64]int, len(full.Fairness))
	for i, f := range full.Fairness {
		at[f.TimeS] = i
	}
	prev := -1
	for k, f := range small.Fairness {
		i, ok := at[f.TimeS]
		if !ok {
			t.Fatalf("kept sample %d at %v s is not a sample of the unbounded run", k, f.TimeS)
		}
		if k > 0 && f.TimeS-small.Fairness[k-1].TimeS < small.Run.SamplePeriodS-small.Scenario.FairShareUpdatePeriodS {
			t.Errorf("samples %d and %d are %v s apart, want about %v s", k-1, k, f.TimeS-small.Fairness[k-1].TimeS, small.Run.SamplePeriodS)
		}
		var sum, span float64
		for j := prev + 1; j <= i; j++ {
			sum += full.Fairness[j].Error * full.Fairness[j].span
			span += full.Fairness[j].span
		}
		if span > 0 && math.Abs(sum/span-f.Error) > 1e-12 {
			t.Errorf("fairness at %v s: %v, want %v, the mean of the unbounded run's samples %d..%d", f.TimeS, f.Error, sum/span, prev+1, i)
		}
		if f.PoolsWithDemand != full.Fairness[i].PoolsWithDemand {
			t.Errorf("pools with demand at %v s: %d, want %d", f.TimeS, f.PoolsWithDemand, full.Fairness[i].PoolsWithDemand)
		}
		for p := range small.Pools {
			if got, want := small.Pools[p].Samples[k], full.Pools[p].Samples[i]; got != want {
				t.Fatalf("pool %s at %v s: %+v, want %+v", small.Pools[p].Name, f.TimeS, got, want)
			}
		}
		for w := range small.Works {
			if got, want := small.Works[w].Samples[k], full.Works[w].Samples[i]; got != want {
				t.Fatalf("workload %s at %v s: %+v, want %+v", small.Works[w].Name, f.TimeS, got, want)
			}
		}
		prev = i
	}
	for p := range small.Pools {
		if len(small.Pools[p].Samples) != n {
			t.Errorf("pool %s keeps %d samples, want %d", small.Pools[p].Name, len(small.Pools[p].Samples), n)
		}
	}
	a, b := Summarize(full), Summarize(small)
	a.Run, b.Run = RunStats{}, RunStats{}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("summaries differ apart from the samples:\n%s\n%s", ja, jb)
	}
}
