package replica

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
)

// TestHistoryAcrossTerms: a leader's checkpoints write the pools' history
// into etcd, and the next leader's term has it: every step the store held
// when the first leader died answers the same in the second's GET
// /api/v1/pools/{name}/history. History steps of 0.2 s, checkpoints every
// 0.1 s, on the wall clock.
func TestHistoryAcrossTerms(t *testing.T) {
	cl := newCluster(t, 2*time.Second)
	tiers := func(r *Replica) {
		r.cfg.Server.HistoryTiers = []history.Config{{Step: 200 * clock.Millisecond, Span: 60 * clock.Second}}
	}
	a := cl.start("a", tiers)
	l := leader(t, 10*time.Second, a)
	if st, body := do(t, "PATCH", l.url+"/api/v1/config", `{"checkpoint_period_s": 0.1, "fair_share_update_period_s": 0.05}`); st != 200 {
		t.Fatalf("PATCH config: %d %s", st, body)
	}
	if st := putPool(t, l.url, "p"); st != 201 {
		t.Fatalf("PUT pool: %d", st)
	}
	if st, body := do(t, "POST", l.url+"/api/v1/operations", `{"pool": "p", "tasks": [{"name": "t", "job_count": 4, "resources": {"cpu": 1}}]}`); st != 201 {
		t.Fatalf("start: %d %s", st, body)
	}
	if st, body := do(t, "POST", l.url+"/api/v1/nodes/n1/heartbeat", `{"resource_limits": {"cpu": 8, "user_slots": 8, "memory": 1073741824}}`); st != 200 {
		t.Fatalf("heartbeat: %d %s", st, body)
	}
	type point struct {
		Time, Usage, FairShare, Demand float64
		Starvation                     string
		Samples                        int
	}
	historyOf := func(url string) []point {
		t.Helper()
		st, body := do(t, "GET", url+"/api/v1/pools/p/history", "")
		if st != 200 {
			t.Fatalf("history: %d %s", st, body)
		}
		var h struct {
			Points []struct {
				Time       float64 `json:"time"`
				Usage      float64 `json:"usage"`
				FairShare  float64 `json:"fair_share"`
				Demand     float64 `json:"demand"`
				Starvation string  `json:"starvation"`
				Samples    int     `json:"samples"`
			} `json:"points"`
		}
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatal(err)
		}
		var out []point
		for _, p := range h.Points {
			if p.Samples > 0 {
				out = append(out, point{p.Time, p.Usage, p.FairShare, p.Demand, p.Starvation, p.Samples})
			}
		}
		return out
	}
	waitFor(t, "ten steps of history in etcd", 20*time.Second, func() bool {
		resp, err := cl.admin.Get(context.Background(), cl.prefix+"/checkpoints/history/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count >= 10
	})
	before := historyOf(l.url)
	a.crash()
	// What the store holds: the newest step of the segments.
	resp, err := cl.admin.Get(context.Background(), cl.prefix+"/checkpoints/history/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	stored := int64(math.MinInt64)
	for _, kv := range resp.Kvs {
		f := strings.Split(string(kv.Key), "/")
		last, err := strconv.ParseInt(f[len(f)-2], 10, 64)
		if err != nil {
			t.Fatalf("key %s: %v", kv.Key, err)
		}
		stored = max(stored, last)
	}
	b := cl.start("b", tiers)
	l = leader(t, 20*time.Second, b)
	after := historyOf(l.url)
	// The points complete when a answered (all but its newest) and stored
	// (at or before the newest stored step) are b's too, unchanged.
	checked := 0
	for _, p := range before[:len(before)-1] {
		if int64(math.Round(p.Time/0.2)) > stored {
			continue
		}
		checked++
		found := false
		for _, q := range after {
			if q.Time == p.Time {
				found = true
				if q != p {
					t.Errorf("the step at %v: %+v after the new term, %+v before", p.Time, q, p)
				}
			}
		}
		if !found {
			t.Errorf("the step at %v is missing after the new term", p.Time)
		}
	}
	if checked < 5 {
		t.Errorf("only %d steps to compare (%d before, the store up to step %d)", checked, len(before), stored)
	}
}
