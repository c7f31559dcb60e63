package server

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

func serveConfig(t *testing.T, doc string) *wire.ServeConfig {
	t.Helper()
	sc, err := wire.DecodeServeConfig([]byte(doc))
	if err != nil {
		t.Fatalf("config %s: %v", doc, err)
	}
	return sc
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestConfigApplicationRefreshesDerived: a SIGHUP reload and a PATCH of
// the config apply a config the same way, through one function: the core
// takes it, and what is derived from it and read without the core (the
// batches' bound, the updater's period) follows.
func TestConfigApplicationRefreshesDerived(t *testing.T) {
	apply := map[string]func(t *testing.T, s *Server){
		"reload": func(t *testing.T, s *Server) {
			if _, err := s.Reload(serveConfig(t, `{"config": {"max_heartbeats_per_batch": 3, "fair_share_update_period_s": 0.5}}`)); err != nil {
				t.Fatal(err)
			}
		},
		"patch": func(t *testing.T, s *Server) {
			_, _, err := s.PatchConfig(func(cur schedule.Config) (schedule.Config, error) {
				return wire.DecodeConfigPatch([]byte(`{"max_heartbeats_per_batch": 3, "fair_share_update_period_s": 0.5}`), cur)
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, fn := range apply {
		t.Run(name, func(t *testing.T) {
			s, err := New(Options{Config: serveConfig(t, `{"config": {"max_heartbeats_per_batch": 2}}`),
				Clock: clock.NewManual(0), ManualUpdates: true, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.MaxHeartbeatsPerBatch(); got != 2 {
				t.Fatalf("max_heartbeats_per_batch %d before, want 2", got)
			}
			fn(t, s)
			if got := s.MaxHeartbeatsPerBatch(); got != 3 {
				t.Errorf("max_heartbeats_per_batch %d after, want 3", got)
			}
			if got := s.Period(); got != 500*time.Millisecond {
				t.Errorf("fair-share period %v after, want 500ms", got)
			}
			if got := s.Scheduler().Config().MaxHeartbeatsPerBatch; got != 3 {
				t.Errorf("the core's max_heartbeats_per_batch %d after, want 3", got)
			}
			if got := s.Config().FairShareUpdatePeriod; got != 500*clock.Millisecond {
				t.Errorf("the server's fair_share_update_period %v after, want 0.5 s", got)
			}
		})
	}
}

// openBolt opens a bbolt store in dir, closed when the test ends.
func openBolt(t *testing.T, dir string) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func heartbeat(t *testing.T, s *Server, node string) {
	t.Helper()
	var limits resource.Vec
	limits[resource.CPU] = 2 * resource.CPUScale
	limits[resource.UserSlots] = 10
	limits[resource.Memory] = 1 << 34
	var resp schedule.Response
	if err := s.Heartbeat(s.Now(), &schedule.NodeHeartbeat{Node: node, Limits: limits}, &resp); err != nil {
		t.Fatalf("heartbeat of %s: %v", node, err)
	}
}

// TestRecoveryExpectsRegisteredNodes: a restart's recovery window expects
// every node of the durable registry that is not known to have gone —
// also those whose first heartbeats came after the last checkpoint (a kill
// within checkpoint_period_s of them) — and not a node that had expired
// (node_heartbeat_timeout_s) by the last checkpoint, unless it registered
// again since. On a real bbolt file.
func TestRecoveryExpectsRegisteredNodes(t *testing.T) {
	tests := []struct {
		name string
		// before runs on the first server, whose clock is at 1 s, after
		// "old" registered and a checkpoint saw it gone at 7 s.
		before   func(t *testing.T, s *Server, c *clock.Manual)
		expected []string
	}{
		{name: "registered after the last checkpoint",
			before: func(t *testing.T, s *Server, c *clock.Manual) {
				heartbeat(t, s, "n1")
				heartbeat(t, s, "n2")
			},
			expected: []string{"n1", "n2"}},
		{name: "gone, then back after the last checkpoint",
			before: func(t *testing.T, s *Server, c *clock.Manual) {
				heartbeat(t, s, "old")
				heartbeat(t, s, "n1")
			},
			expected: []string{"n1", "old"}},
		{name: "alive at the last checkpoint",
			before: func(t *testing.T, s *Server, c *clock.Manual) {
				heartbeat(t, s, "n1")
				c.Advance(5 * clock.Second)
				heartbeat(t, s, "n1")
				s.UpdateFairShare()
			},
			expected: []string{"n1"}},
		{name: "none since",
			before:   func(t *testing.T, s *Server, c *clock.Manual) {},
			expected: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := clock.NewManual(clock.Time(1_000_000))
			cfg := serveConfig(t, `{"config": {"node_heartbeat_timeout_s": 2, "checkpoint_period_s": 5, "recovery_timeout_s": 60}}`)
			st := openBolt(t, dir)
			a, err := New(Options{Config: cfg, Clock: c, ManualUpdates: true, Logger: quiet(), Store: st})
			if err != nil {
				t.Fatal(err)
			}
			heartbeat(t, a, "old")
			c.Advance(6 * clock.Second) // "old" expires; the checkpoint sees it gone
			a.UpdateFairShare()
			if a.Scheduler().NodeRegistered("old") {
				t.Fatal("node old is still registered after node_heartbeat_timeout_s")
			}
			c.Advance(clock.Second)
			tt.before(t, a, c)
			if err := a.WaitDurable(); err != nil {
				t.Fatal(err)
			}
			// A kill: nothing more is written (no checkpoint at the stop).
			a.Close()
			st.Close()

			b, err := New(Options{Clock: c, ManualUpdates: true, Logger: quiet(), Store: openBolt(t, dir)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rec := b.Recovery()
			if rec.ExpectedNodes != len(tt.expected) || rec.Active != (len(tt.expected) > 0) {
				t.Fatalf("recovery after the restart: %+v, want %d expected nodes (%v)", rec, len(tt.expected), tt.expected)
			}
			for i, n := range tt.expected {
				heartbeat(t, b, n)
				rec := b.Recovery()
				if rec.ReportedNodes != i+1 || rec.Active != (i+1 < len(tt.expected)) {
					t.Fatalf("after %v reported: %+v", tt.expected[:i+1], rec)
				}
			}
			if !slices.IsSorted(tt.expected) {
				t.Fatal("BUG: expected nodes not sorted")
			}
		})
	}
}
