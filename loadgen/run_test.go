package loadgen

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRunInProcess plays a tiny bounded load on the core in process, one
// heartbeat at a time and in batches.
func TestRunInProcess(t *testing.T) {
	for _, batch := range []int{0, 4} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) { runInProcess(t, batch) })
	}
}

func runInProcess(t *testing.T, batch int) {
	cfg := Standard()
	cfg.Batch = batch
	cfg.InProcess = true
	cfg.Nodes, cfg.Pools, cfg.Operations = 20, 3, 10
	cfg.JobDuration = Dist{Kind: DistUniform, A: 0.05, B: 0.3}
	cfg.MinJobs, cfg.MaxJobs = 2, 20
	cfg.Connections = 2
	cfg.Duration = 3 * time.Second
	cfg.HeartbeatPeriod = 20 * time.Millisecond
	cfg.MaxHeartbeats = 4000
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Summary())
	if rep.Errors != 0 {
		t.Fatalf("%d errors: %v", rep.Errors, rep.ErrorSamples)
	}
	if rep.Heartbeats == 0 || rep.AllocationsStarted == 0 || rep.AllocationsCompleted == 0 {
		t.Fatalf("heartbeats %d, started %d, completed %d: want all > 0", rep.Heartbeats, rep.AllocationsStarted, rep.AllocationsCompleted)
	}
	if rep.OperationsCompleted == 0 || rep.OperationsStarted <= int64(cfg.Operations) {
		t.Fatalf("operations started %d, completed %d: want replacements", rep.OperationsStarted, rep.OperationsCompleted)
	}
	if rep.Heartbeats > cfg.MaxHeartbeats {
		t.Fatalf("%d heartbeats, more than --max-heartbeats %d", rep.Heartbeats, cfg.MaxHeartbeats)
	}
}

func TestConfigValidate(t *testing.T) {
	f := func(mut func(c *Config), ok bool) {
		t.Helper()
		c := Standard()
		c.Target = "http://127.0.0.1:8080"
		mut(&c)
		if err := c.Validate(); (err == nil) != ok {
			t.Errorf("Validate() = %v, want ok=%v", err, ok)
		}
	}
	f(func(*Config) {}, true)
	f(func(c *Config) { c.Target = "http://10.1.2.3:8080" }, false)
	f(func(c *Config) { c.Target = "http://10.1.2.3:8080"; c.InProcess = true }, true)
	f(func(c *Config) { c.Nodes = 0 }, false)
	f(func(c *Config) { c.Connections = 0 }, false)
	f(func(c *Config) { c.Duration = 0 }, false)
	f(func(c *Config) { c.Rate = -1 }, false)
	f(func(c *Config) { c.MinJobs, c.MaxJobs = 10, 5 }, false)
	f(func(c *Config) { c.PreemptStopFraction = 2 }, false)
	f(func(c *Config) { c.Pipeline = 4 }, true)
	f(func(c *Config) { c.Pipeline, c.InProcess = 4, true }, false)
	f(func(c *Config) { c.Pipeline = c.Connections + 1 }, false)
	f(func(c *Config) { c.Pipeline = -1 }, false)
	f(func(c *Config) { c.Batch = 64 }, true)
	f(func(c *Config) { c.Batch, c.InProcess = 64, true }, true)
	f(func(c *Config) { c.Batch, c.Pipeline = 64, 4 }, true)
	f(func(c *Config) { c.Batch = -1 }, false)
	f(func(c *Config) { c.Batch = MaxBatch + 1 }, false)
	f(func(c *Config) { c.Pipeline, c.PipelineDelay = 4, -time.Millisecond }, false)
	f(func(c *Config) { c.Pipeline, c.PipelineDelay = 4, 2*time.Second }, false)
	f(func(c *Config) { c.Replicas = []string{"http://127.0.0.1:8081"} }, true)
	f(func(c *Config) { c.Replicas, c.Pipeline = []string{"http://127.0.0.1:8081"}, 4 }, false)
}
