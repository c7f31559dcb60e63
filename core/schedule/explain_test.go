package schedule_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
)

// TestExplainJSON pins the JSON of explanations (the answer of the
// explain endpoints, docs/api.md) for the situations docs/why-waiting.md
// walks through: the files under testdata/explain are what
// encoding/json makes of schedule.Explanation. Rewrite them with
//
//	go test ./core/schedule/ -run TestExplainJSON -rewrite
func TestExplainJSON(t *testing.T) {
	c := runScript(t, `
pool name=research max_running_operation_count=2
pool name=prod allow_normal_preemption=false
node count=2 slots=10 cpu=10 memory=100G
op id=serving pool=prod jobs=1000
update t=0
heartbeat
op id=train-1 pool=research jobs=1000 t=1
op id=train-2 pool=research jobs=1000
op id=train-3 pool=research jobs=1000
op id=etl pool=research jobs=1000
run until=45 dt=1 quiet
`)
	s := c.Scheduler()
	now := clock.FromSeconds(c.Now())
	for _, tc := range []struct {
		file string
		get  func() (schedule.Explanation, error)
	}{
		{"pending.json", func() (schedule.Explanation, error) { return s.ExplainOperation("etl", now, nil) }},
		{"starving.json", func() (schedule.Explanation, error) { return s.ExplainOperation("train-1", now, nil) }},
		{"pool.json", func() (schedule.Explanation, error) { return s.ExplainPool("research", now) }},
	} {
		e, err := tc.get()
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", "explain", tc.file)
		if *rewrite {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs (rewrite with -rewrite and review the diff):\n%s", path, got)
		}
	}
}
