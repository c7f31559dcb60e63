package sim

import "testing"

// BenchmarkDay simulates a day of each 100-node integral-guarantees example
// (heartbeats every 5 s, fair-share updates every second).
func BenchmarkDay(b *testing.B) {
	for _, name := range []string{"integral-guarantees", "integral-guarantees-strong"} {
		b.Run("scenario="+name, func(b *testing.B) {
			s := loadExample(b, name)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(s.DurationS*float64(b.N)/b.Elapsed().Seconds(), "sim-s/s")
		})
	}
}
