package server

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

func startOp(t *testing.T, s *Server, body string) {
	t.Helper()
	spec, err := wire.DecodeStartOperation([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.StartOperation(spec, []byte(body), "", func() bool { return true }); err != nil {
		t.Fatal(err)
	}
}

var testTiers = []history.Config{{Step: clock.Second, Span: 20 * clock.Second}, {Step: 5 * clock.Second, Span: 100 * clock.Second}}

// TestHistoryRestart: the fair-share update loop records each pool's
// history, the checkpoints write it, and a restart on the same bbolt file
// has it back to the last complete step each checkpoint wrote — the same
// points, the same fairness error integral — and goes on recording. A
// restart with other tiers keeps those whose step is still a tier's and
// deletes the others' segments. On a real bbolt file.
func TestHistoryRestart(t *testing.T) {
	dir := t.TempDir()
	c := clock.NewManual(clock.Time(1_000_000))
	cfg := serveConfig(t, `{"config": {"checkpoint_period_s": 3, "fair_share_update_period_s": 0.5},
		"pools": [{"name": "a", "parent": "<Root>"}, {"name": "b", "parent": "<Root>", "weight": 3}]}`)
	st := openBolt(t, dir)
	a, err := New(Options{Config: cfg, Clock: c, ManualUpdates: true, Logger: quiet(), Store: st, HistoryTiers: testTiers})
	if err != nil {
		t.Fatal(err)
	}
	startOp(t, a, `{"pool": "a", "tasks": [{"name": "t", "job_count": 50, "resources": {"cpu": 1, "memory": 1000}}]}`)
	startOp(t, a, `{"pool": "b", "tasks": [{"name": "t", "job_count": 50, "resources": {"cpu": 1, "memory": 1000}}]}`)
	for range 80 { // 40 s, a heartbeat and an update every 0.5 s
		heartbeat(t, a, "n1")
		a.UpdateFairShare()
		c.Advance(500 * clock.Millisecond)
	}
	if err := a.WaitDurable(); err != nil {
		t.Fatal(err)
	}
	query := func(s *Server, pool string, since clock.Time) []history.Point {
		t.Helper()
		pts, _, err := s.PoolHistory(pool, since, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	before := map[string][]history.Point{}
	for _, p := range []string{"a", "b"} {
		before[p+"/fine"] = query(a, p, c.Now()-clock.Time(20*clock.Second)) // 21 s to 40 s
		before[p+"/coarse"] = query(a, p, 0)
	}
	if pts := before["b/fine"]; len(pts) != 20 || pts[10].FairShare < 0.1 || pts[10].Samples != 1 {
		t.Fatalf("pool b's fine history: %+v", pts)
	}
	if pts := before["a/coarse"]; len(pts) != 9 || pts[0].Time != clock.Time(0) {
		t.Fatalf("pool a's coarse history: %+v", pts)
	}
	_, integral := a.FairnessError()
	// A kill: nothing more is written.
	a.Close()
	st.Close()

	c.Advance(30 * clock.Second)
	st = openBolt(t, dir)
	b, err := New(Options{Clock: c, ManualUpdates: true, Logger: quiet(), Store: st, HistoryTiers: testTiers})
	if err != nil {
		t.Fatal(err)
	}
	// The last checkpoint was at 39 s (every 3 s): the steps to 38 s of
	// the fine tier and to 30 s of the coarse one were written.
	for _, p := range []string{"a", "b"} {
		got := query(b, p, 0)
		want := before[p+"/coarse"]
		if !reflect.DeepEqual(got[:len(want)-2], want[:len(want)-2]) {
			t.Errorf("pool %s's coarse history after the restart:\n got %+v\nwant %+v", p, got, want)
		}
		fine, _ := b.hist.t.Tier(0).Query(p, c.Now()-clock.Time(50*clock.Second), 0, nil)
		want = before[p+"/fine"]
		if len(fine) != 18 || !reflect.DeepEqual(fine, want[:18]) || fine[17].Time != clock.Time(38*clock.Second) {
			t.Errorf("pool %s's fine history after the restart:\n got %+v\nwant %+v", p, fine, want)
		}
	}
	if _, got := b.FairnessError(); got <= 0 || got > integral || integral-got > 2 {
		t.Errorf("fairness error integral %v after the restart, %v before", got, integral)
	}
	// It goes on: an update now adds a point 30 s later.
	b.UpdateFairShare()
	if pts := query(b, "b", c.Now()); len(pts) != 1 || pts[0].Samples != 1 || pts[0].Time != c.Now() {
		t.Errorf("after the restart, a new update: %+v", pts)
	}
	b.Close()
	st.Close()

	// Other tiers: the coarse one is kept, the fine one's segments go.
	st = openBolt(t, dir)
	d, err := New(Options{Clock: c, ManualUpdates: true, Logger: quiet(), Store: st,
		HistoryTiers: []history.Config{{Step: 2 * clock.Second, Span: 20 * clock.Second}, testTiers[1]}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, want := query(d, "a", 0), before["a/coarse"]; !reflect.DeepEqual(got[:len(want)-2], want[:len(want)-2]) {
		t.Errorf("the coarse tier with other tiers:\n got %+v\nwant %+v", got, want)
	}
	if err := d.WaitDurable(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	st.Scan(store.Checkpoints, func(k string, v []byte) error {
		if strings.HasPrefix(k, historyPrefix) {
			keys = append(keys, k)
		}
		return nil
	})
	for _, k := range keys {
		if !strings.HasPrefix(k, historyPrefix+"5000000/") {
			t.Errorf("segment %s of a step no tier has is still stored", k)
		}
	}
	if len(keys) == 0 {
		t.Error("no segment is stored")
	}
}

// TestHistorySegmentsExpire: the store keeps a tier's segments for its
// span only, and a segment of many pools is cut into parts.
func TestHistorySegmentsExpire(t *testing.T) {
	c := clock.NewManual(0)
	var pools strings.Builder
	for i := range 3000 {
		if i > 0 {
			pools.WriteByte(',')
		}
		pools.WriteString(`{"name": "pool-with-a-long-name-` + strings.Repeat("x", 40) + `-` + strconv.Itoa(i) + `"}`)
	}
	cfg := serveConfig(t, `{"config": {"checkpoint_period_s": 1}, "pools": [`+pools.String()+`]}`)
	st := openBolt(t, t.TempDir())
	s, err := New(Options{Config: cfg, Clock: c, ManualUpdates: true, Logger: quiet(), Store: st,
		HistoryTiers: []history.Config{{Step: clock.Second, Span: 10 * clock.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 30 {
		c.Advance(2 * clock.Second) // two steps a checkpoint: 3000 × 2 × 7 bytes plus names, in parts
		s.UpdateFairShare()
	}
	if err := s.WaitDurable(); err != nil {
		t.Fatal(err)
	}
	lasts := map[string]int{}
	st.Scan(store.Checkpoints, func(k string, v []byte) error {
		if strings.HasPrefix(k, historyPrefix) {
			if len(v) > historyPartBytes+1024 {
				t.Errorf("segment %s has %d bytes", k, len(v))
			}
			f := strings.Split(k, "/")
			lasts[f[2]]++
		}
		return nil
	})
	// Head 60: the span keeps steps 51 to 60; segments end at odd steps (the
	// newest step is not complete), those ending at 51 to 59 are kept.
	if len(lasts) != 5 {
		t.Errorf("segments stored: %v, want those of 5 checkpoints", lasts)
	}
	for last, parts := range lasts {
		if parts < 2 {
			t.Errorf("the segment ending at step %s has %d part, want it cut", last, parts)
		}
	}
	if e, _ := s.FairnessError(); math.IsNaN(e) {
		t.Error("fairness error NaN")
	}
}
