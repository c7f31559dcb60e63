package loadgen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fairsched/fairsched/core/rng"
)

// Config is a load run: the workload, the driver and its bounds. The zero
// value is not usable; start from Standard or Tiny.
type Config struct {
	// Target is the base URL of the server (http://127.0.0.1:8080, or
	// https:// for a server with --tls-cert); it must be loopback
	// (CheckTarget). Ignored by the in-process driver.
	Target string
	// Replicas are the base URLs of the Target's fellow replicas
	// (fairsched serve --etcd), loopback like it. Heartbeats follow a
	// not_leader answer to the leader it names, and a replica that cannot
	// be reached is left for the next of Target and Replicas; the typed
	// client's calls go where the heartbeats go (and follow not_leader
	// themselves).
	Replicas []string
	// Token, when set, is sent as "Authorization: Bearer <token>" with
	// every request (a server with --auth-tokens): the token of an admin,
	// as the load generator creates pools, starts operations and sends
	// heartbeats.
	Token string
	// TLS is the client configuration of an https:// Target (nil: the
	// system's roots).
	TLS *tls.Config
	// Reset aborts, before the run, the operations a previous load left
	// running or pending on the server (ids lg…); without it such
	// leftovers stop the run at setup.
	Reset bool
	// InProcess drives core/schedule directly with the same workload.
	InProcess bool

	Nodes      int // simulated nodes
	Pools      int // pools created under the root
	Operations int // operations kept running (replaced when they complete)

	// Node shape: every node has NodeCPU cores, NodeMemory bytes and
	// NodeSlots user slots.
	NodeCPU    float64
	NodeMemory int64
	NodeSlots  int64

	// JobDuration is the distribution of a job's run time (seconds).
	JobDuration Dist
	// MinJobs and MaxJobs bound a task's job count (log-uniform between).
	MinJobs, MaxJobs int64
	// PreemptStopFraction: a node stops a preempted allocation after a
	// uniform fraction of [0, PreemptStopFraction] of its timeout (0: at
	// once, in the next heartbeat).
	PreemptStopFraction float64

	Duration      time.Duration // bound on the run's wall time
	MaxHeartbeats int64         // bound on heartbeats (0: none beyond Duration)
	Connections   int           // driver goroutines (and HTTP connections)
	// Pipeline, when > 0, carries the Connections concurrent heartbeats
	// over this many HTTP/1.1 connections with pipelining: requests that
	// wait for the same connection leave in one write and their answers
	// come back in one read (0: one connection per driver goroutine, one
	// request in flight on each, as separate nodes would).
	Pipeline int
	// PipelineDelay is how long a pipelined connection waits for more
	// requests before it writes what it has (0: writes as soon as no
	// request waits).
	PipelineDelay time.Duration
	// Batch, when > 0, sends the heartbeats of this many nodes in one
	// request (POST /api/v1/heartbeats, docs/api.md#batched-heartbeats), as a node agent that
	// relays a rack would: each driver goroutine takes its nodes in
	// groups of Batch, in turn (0: one heartbeat per request). In process,
	// a batch is that many Heartbeat calls at one reading of the clock.
	Batch int
	// OriginsAlways makes every heartbeat report each running allocation's
	// origin (operation_id, task_index, resources: docs/api.md#node-heartbeats). Without it
	// a node reports them in its first heartbeat and in the first after
	// every failed one, the heartbeats a restarted server or a new leader
	// adopts allocations from.
	OriginsAlways bool
	// Rate is the total heartbeats per second to aim at (0: as fast as
	// possible).
	Rate float64
	// HeartbeatPeriod is each node's period (0: as soon as its turn comes).
	HeartbeatPeriod time.Duration
	Seed            uint64

	// Progress, when set, is called every ProgressEvery (default 1 s) with
	// a progress line (the command prints it to stderr).
	Progress      func(line string)
	ProgressEvery time.Duration
	// SampleEvery samples the server's /metrics (heap, RSS, CPU) at this
	// period into Report.Memory (0: only at the start and the end). HTTP
	// driver only.
	SampleEvery time.Duration
	// Profiles, when set, captures the server's /debug/pprof profiles
	// during the run (HTTP driver only).
	Profiles *ProfileCapture
	// Labels are copied into the report (the commit, the binary).
	Labels map[string]string
}

// ProfileCapture says which of the server's profiles to fetch and where.
type ProfileCapture struct {
	Dir    string        // directory to write into
	Prefix string        // file name prefix, e.g. "load-"
	After  time.Duration // start the CPU (and mutex, block) capture this long after the heartbeats start
	// Seconds is the length of the CPU, mutex and block captures.
	Seconds int
}

// MaxBatch is the largest Config.Batch: the server's largest
// max_heartbeats_per_batch.
const MaxBatch = 65536

// Standard returns the standard load of bench/README.md#load-generator-the-standard-load: 10,000 nodes,
// 200 pools, 2,000 operations, jobs of 5–120 s, for 30 s, as fast as
// possible, seed 1.
func Standard() Config {
	return Config{
		Nodes:               10000,
		Pools:               200,
		Operations:          2000,
		NodeCPU:             32,
		NodeMemory:          128 << 30,
		NodeSlots:           32,
		JobDuration:         Dist{Kind: DistUniform, A: 5, B: 120},
		MinJobs:             10,
		MaxJobs:             2000,
		PreemptStopFraction: 0,
		Duration:            30 * time.Second,
		Connections:         16,
		Seed:                1,
	}
}

// Validate reports the first problem of c.
func (c *Config) Validate() error {
	switch {
	case c.Nodes < 1 || c.Nodes > 1_000_000:
		return fmt.Errorf("loadgen: cannot use %d nodes: want 1-1000000", c.Nodes)
	case c.Pools < 1 || c.Pools > 100_000:
		return fmt.Errorf("loadgen: cannot use %d pools: want 1-100000", c.Pools)
	case c.Operations < 1 || c.Operations > 1_000_000:
		return fmt.Errorf("loadgen: cannot use %d operations: want 1-1000000", c.Operations)
	case !(c.NodeCPU >= 1 && c.NodeCPU <= 4096):
		return fmt.Errorf("loadgen: cannot use node cpu %v: want 1-4096 cores", c.NodeCPU)
	case c.NodeMemory < 1<<30:
		return fmt.Errorf("loadgen: cannot use node memory %d: want at least 1 GiB", c.NodeMemory)
	case c.NodeSlots < 1 || c.NodeSlots > 4096:
		return fmt.Errorf("loadgen: cannot use %d node slots: want 1-4096", c.NodeSlots)
	case c.MinJobs < 1 || c.MaxJobs < c.MinJobs || c.MaxJobs > 1_000_000:
		return fmt.Errorf("loadgen: cannot use job counts %d-%d: want 1 <= min <= max <= 1000000", c.MinJobs, c.MaxJobs)
	case !(c.PreemptStopFraction >= 0 && c.PreemptStopFraction <= 1):
		return fmt.Errorf("loadgen: cannot use preempt stop fraction %v: want [0, 1]", c.PreemptStopFraction)
	case c.Duration <= 0 || c.Duration > 24*time.Hour:
		return fmt.Errorf("loadgen: cannot use duration %v: want (0, 24h]", c.Duration)
	case c.MaxHeartbeats < 0:
		return fmt.Errorf("loadgen: cannot use max heartbeats %d: want >= 0", c.MaxHeartbeats)
	case c.Connections < 1 || c.Connections > 4096:
		return fmt.Errorf("loadgen: cannot use %d connections: want 1-4096", c.Connections)
	case c.Pipeline < 0 || c.Pipeline > c.Connections:
		return fmt.Errorf("loadgen: cannot use %d pipelined connections: want 0 (off) to --connections (%d)", c.Pipeline, c.Connections)
	case c.Pipeline > 0 && c.InProcess:
		return fmt.Errorf("loadgen: cannot use --pipeline %d in process: it shapes HTTP connections", c.Pipeline)
	case c.Pipeline > 0 && len(c.Replicas) > 0:
		return fmt.Errorf("loadgen: cannot use --pipeline %d with --replicas: pipelined connections stay on --target and do not follow the leader (use --batch)", c.Pipeline)
	case c.Batch < 0 || c.Batch > MaxBatch:
		return fmt.Errorf("loadgen: cannot use batches of %d heartbeats: want 0 (one heartbeat per request) to %d", c.Batch, MaxBatch)
	case c.PipelineDelay < 0 || c.PipelineDelay > time.Second:
		return fmt.Errorf("loadgen: cannot use pipeline delay %v: want 0 to 1s", c.PipelineDelay)
	case !(c.Rate >= 0 && c.Rate <= 1e8):
		return fmt.Errorf("loadgen: cannot use rate %v: want 0 (as fast as possible) to 1e8", c.Rate)
	case c.HeartbeatPeriod < 0:
		return fmt.Errorf("loadgen: cannot use heartbeat period %v: want >= 0", c.HeartbeatPeriod)
	case c.SampleEvery < 0:
		return fmt.Errorf("loadgen: cannot use sample period %v: want >= 0", c.SampleEvery)
	}
	if err := c.JobDuration.validate(); err != nil {
		return err
	}
	if !c.InProcess {
		if _, err := CheckTarget(c.Target); err != nil {
			return err
		}
		for _, r := range c.Replicas {
			if _, err := CheckTarget(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// DistKind names a job-duration distribution.
type DistKind uint8

// Distributions of job durations.
const (
	DistFixed     DistKind = iota // A seconds
	DistUniform                   // uniform in [A, B)
	DistExp                       // exponential of mean A, clamped to [B, C] when C > 0
	DistLogNormal                 // log-normal of median A and sigma B, clamped to [C, D] when D > 0
)

// Dist is a distribution of durations in seconds. Its text form (String,
// ParseDist) is one of
//
//	fixed:D  uniform:LO:HI  exp:MEAN[:MIN:MAX]  lognormal:MEDIAN:SIGMA[:MIN:MAX]
type Dist struct {
	Kind       DistKind
	A, B, C, D float64
}

// ParseDist parses the text form of a Dist.
func ParseDist(s string) (Dist, error) {
	parts := strings.Split(s, ":")
	nums := make([]float64, 0, 4)
	for _, p := range parts[1:] {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return Dist{}, fmt.Errorf("loadgen: cannot parse %q in distribution %q: want a number of seconds", p, s)
		}
		nums = append(nums, f)
	}
	var d Dist
	want := ""
	switch parts[0] {
	case "fixed":
		d.Kind, want = DistFixed, "fixed:D"
		if len(nums) != 1 {
			break
		}
		d.A, want = nums[0], ""
	case "uniform":
		d.Kind, want = DistUniform, "uniform:LO:HI"
		if len(nums) != 2 {
			break
		}
		d.A, d.B, want = nums[0], nums[1], ""
	case "exp":
		d.Kind, want = DistExp, "exp:MEAN[:MIN:MAX]"
		if len(nums) != 1 && len(nums) != 3 {
			break
		}
		d.A, want = nums[0], ""
		if len(nums) == 3 {
			d.B, d.C = nums[1], nums[2]
		}
	case "lognormal":
		d.Kind, want = DistLogNormal, "lognormal:MEDIAN:SIGMA[:MIN:MAX]"
		if len(nums) != 2 && len(nums) != 4 {
			break
		}
		d.A, d.B, want = nums[0], nums[1], ""
		if len(nums) == 4 {
			d.C, d.D = nums[2], nums[3]
		}
	default:
		return Dist{}, fmt.Errorf("loadgen: cannot parse distribution %q: want fixed:D, uniform:LO:HI, exp:MEAN[:MIN:MAX] or lognormal:MEDIAN:SIGMA[:MIN:MAX]", s)
	}
	if want != "" {
		return Dist{}, fmt.Errorf("loadgen: cannot parse distribution %q: want %s", s, want)
	}
	return d, d.validate()
}

func (d Dist) validate() error {
	ok := true
	switch d.Kind {
	case DistFixed:
		ok = d.A > 0
	case DistUniform:
		ok = d.A > 0 && d.B >= d.A
	case DistExp:
		ok = d.A > 0 && (d.C == 0 && d.B == 0 || d.B >= 0 && d.C >= d.B && d.C > 0)
	case DistLogNormal:
		ok = d.A > 0 && d.B >= 0 && d.B <= 10 && (d.D == 0 && d.C == 0 || d.C >= 0 && d.D >= d.C && d.D > 0)
	default:
		ok = false
	}
	if !ok || math.IsInf(d.A+d.B+d.C+d.D, 0) || math.IsNaN(d.A+d.B+d.C+d.D) || d.A > 1e6 || d.B > 1e6 || d.C > 1e6 || d.D > 1e6 {
		return errors.New("loadgen: cannot use job-duration distribution " + d.String() + ": want positive durations up to 1e6 s, min <= max")
	}
	return nil
}

// String is the text form of d (ParseDist).
func (d Dist) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch d.Kind {
	case DistFixed:
		return "fixed:" + f(d.A)
	case DistUniform:
		return "uniform:" + f(d.A) + ":" + f(d.B)
	case DistExp:
		if d.C > 0 {
			return "exp:" + f(d.A) + ":" + f(d.B) + ":" + f(d.C)
		}
		return "exp:" + f(d.A)
	case DistLogNormal:
		if d.D > 0 {
			return "lognormal:" + f(d.A) + ":" + f(d.B) + ":" + f(d.C) + ":" + f(d.D)
		}
		return "lognormal:" + f(d.A) + ":" + f(d.B)
	}
	return "unknown"
}

// Draw returns one duration in seconds from r.
func (d Dist) Draw(r *rng.Rand) float64 {
	switch d.Kind {
	case DistFixed:
		return d.A
	case DistUniform:
		return d.A + r.Float64()*(d.B-d.A)
	case DistExp:
		x := r.ExpFloat64() * d.A
		if d.C > 0 {
			x = min(max(x, d.B), d.C)
		}
		return x
	case DistLogNormal:
		x := d.A * math.Exp(d.B*r.NormFloat64())
		if d.D > 0 {
			x = min(max(x, d.C), d.D)
		}
		return x
	}
	return 1
}

// Median returns the distribution's median in seconds (the operations'
// duration_hint_s).
func (d Dist) Median() float64 {
	switch d.Kind {
	case DistUniform:
		return (d.A + d.B) / 2
	case DistExp:
		x := d.A * math.Ln2
		if d.C > 0 {
			x = min(max(x, d.B), d.C)
		}
		return x
	case DistLogNormal:
		x := d.A
		if d.D > 0 {
			x = min(max(x, d.C), d.D)
		}
		return x
	}
	return d.A
}
