package facade

import (
	"bytes"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape parses /metrics with Prometheus's own text parser.
func scrape(t *testing.T, ts *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	status, out := ts.do("GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("Prometheus's parser refuses /metrics: %v", err)
	}
	return mfs
}

// TestMetricsArePrometheusTrue: /metrics parses with Prometheus's text
// parser; every family has help text and a type; counters end in _total;
// histograms have cumulative le buckets ending at +Inf that equal _count, so
// that histogram_quantile works; every family of fairsched is documented in
// docs/operations.md and every documented one exists.
func TestMetricsArePrometheusTrue(t *testing.T) {
	ts := startServer(t, twoPools, nil)
	n := newNode("n1", 8, 16)
	ts.heartbeat(n)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.must(201, "POST", "/api/v1/operations", `{"pool": "prod", "tasks": [{"job_count": 4, "resources": {"cpu": 1}}]}`)
	ts.clock.advanceAndUpdate(ts.srv)
	ts.heartbeat(n)
	ts.must(404, "GET", "/api/v1/pools/none", "")
	mfs := scrape(t, ts)
	var ours []string
	for name, mf := range mfs {
		if mf.GetHelp() == "" {
			t.Errorf("%s: no help text", name)
		}
		if mf.Type == nil {
			t.Errorf("%s: no type", name)
		}
		if mf.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("%s: a counter whose name does not end in _total", name)
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, m := range mf.Metric {
				h := m.GetHistogram()
				prev := uint64(0)
				bs := h.GetBucket()
				for _, b := range bs {
					if b.GetCumulativeCount() < prev {
						t.Errorf("%s: buckets are not cumulative", name)
					}
					prev = b.GetCumulativeCount()
				}
				// The text format's +Inf bucket is the count.
				if len(bs) == 0 || prev > h.GetSampleCount() {
					t.Errorf("%s: %d buckets, last %d, count %d", name, len(bs), prev, h.GetSampleCount())
				}
			}
		}
		if strings.HasPrefix(name, "fairsched_") {
			ours = append(ours, name)
		}
	}
	// Values: the heartbeat counted, its latency in the histogram, the
	// allocations started, the 404 counted, the build's info.
	value := func(name string, labels ...string) float64 {
		mf := mfs[name]
		if mf == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range mf.Metric {
			if matches(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
		t.Fatalf("no %s%v", name, labels)
		return 0
	}
	if value("fairsched_heartbeats_total") != 2 || value("fairsched_heartbeat_duration_seconds") != 2 ||
		value("fairsched_allocations_started_total") != 4 || value("fairsched_http_errors_total", "code", "404") != 1 ||
		value("fairsched_build_info", "go_version", runtimeVersion()) != 1 || value("fairsched_nodes") != 1 ||
		value("fairsched_operations", "state", "running") != 1 || value("fairsched_operation_pending_wait_seconds") != 1 {
		t.Fatalf("values: %v", mfs)
	}
	if v := value("fairsched_pool_fair_share", "pool", "prod", "resource", "cpu"); v <= 0 || v > 1 || math.IsNaN(v) {
		t.Fatalf("prod's cpu fair share %v", v)
	}

	// The reference in docs/operations.md names exactly these families.
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(fairsched_[a-z0-9_]+)").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	// Families that exist only with a store are documented too.
	durableOnly := []string{"fairsched_store_commits_total", "fairsched_store_transactions_total", "fairsched_store_up",
		"fairsched_store_quarantined_operations"}
	sort.Strings(ours)
	want := slices.Clone(documented)
	// And those of replicas (replica/, TestFollowerAnswersNotLeader).
	replicaOnly := []string{"fairsched_replica_leader", "fairsched_replica_terms_total"}
	want = slices.DeleteFunc(want, func(s string) bool { return slices.Contains(durableOnly, s) || slices.Contains(replicaOnly, s) })
	sort.Strings(want)
	if !slices.Equal(ours, want) {
		t.Fatalf("families:\n  served     %v\n  documented %v", ours, want)
	}
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.Label {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func runtimeVersion() string { return runtime.Version() }
