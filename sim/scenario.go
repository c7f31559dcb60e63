package sim

import (
	"errors"
	"math"
	"slices"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/wire"
)

// maxSeconds bounds every duration of a scenario (about 31 years), so that
// virtual times in milliseconds stay far from overflowing.
const maxSeconds = 1e9

// Scenario is a decoded, validated scenario file: a cluster, a pool tree and a
// workload to replay on virtual time. See the package documentation for the
// file format.
type Scenario struct {
	Name        string
	Description string
	Seed        uint64

	DurationS float64
	// WarmUpS is an idle period before time 0: the scheduler's first
	// fair-share update runs at -WarmUpS with no operations and the next at
	// 0, so that integral pools start the recorded day with
	// min(WarmUpS × resource_flow, capacity) of accumulated volume.
	WarmUpS                float64
	HeartbeatPeriodS       float64
	FairShareUpdatePeriodS float64
	SamplePeriodS          float64
	// MaxSamples bounds the samples a run keeps (of each pool, each
	// workload and the cluster's fairness): when a run would take more, it
	// keeps every second one and samples half as often from then on, so
	// that memory stays bounded however long the run (DefaultMaxSamples).
	MaxSamples int

	Nodes []NodeGroup
	// StopAtTimeout makes simulated nodes keep a preempted job running
	// until its preemption timeout; by default it stops at once (reported
	// aborted at the node's next heartbeat).
	StopAtTimeout bool

	// Scheduler is the core's configuration, the tree config included.
	Scheduler schedule.Config
	// Pools creates the pool tree: AddPool mutations in pre-order.
	Pools    []tree.Mutation
	Workload []Workload

	// NodeTags are the tags of each node group's nodes (trace replays).
	NodeTags [][]string
	// Trace, when set, replaces the workload's arrivals: the run streams
	// the trace's jobs (TraceScenario builds such a scenario), and lasts
	// DurationS when it is set, otherwise until every job that will
	// finish has.
	Trace *TraceSource
}

// NodeGroup is Count identical nodes.
type NodeGroup struct {
	Count     int
	Resources resource.Vec
}

// Workload is a kind of operation and how often it arrives.
type Workload struct {
	Name           string
	Pool           string
	Type           string
	Weight         tree.OptFloat
	PreemptionMode schedule.PreemptionMode
	Tasks          []Task
	Arrivals       Arrivals
}

// Task is one task of a workload's operations.
type Task struct {
	Name      string
	JobCount  int64
	Resources resource.Vec
	Duration  Dist
}

// DistKind is a job-duration distribution.
type DistKind uint8

// Job-duration distributions.
const (
	DistFixed DistKind = iota
	DistUniform
	DistExponential
	DistLognormal
)

var distNames = []string{"fixed", "uniform", "exponential", "lognormal"}

func (k DistKind) String() string { return distNames[k] }

// Dist is a job-duration distribution in seconds: fixed A; uniform on
// [A, B]; exponential with mean A; lognormal with median A and sigma B.
type Dist struct {
	Kind DistKind
	A, B float64
}

// ArrivalKind says how a workload's operations arrive.
type ArrivalKind uint8

// Arrival processes.
const (
	// ArriveAt: at the listed times.
	ArriveAt ArrivalKind = iota
	// ArriveEvery: periodically, from the window's start.
	ArriveEvery
	// ArrivePoisson: a Poisson process of RatePerHour.
	ArrivePoisson
	// ArriveConcurrent: a closed loop keeping Concurrent operations
	// unfinished; a new one starts when one completes.
	ArriveConcurrent
	// ArriveTrace: from the scenario's trace (a trace pool's entry).
	ArriveTrace
)

// Arrivals is a workload's arrival process inside a window [StartS, EndS)
// that repeats every RepeatEveryS seconds (0: once).
type Arrivals struct {
	Kind         ArrivalKind
	AtS          []float64
	EveryS       float64
	RatePerHour  float64
	Concurrent   int
	StartS, EndS float64
	RepeatEveryS float64
}

var (
	scenarioKeys = []string{"name", "description", "seed", "duration_s", "warm_up_s", "heartbeat_period_s",
		"fair_share_update_period_s", "sample_period_s", "max_samples", "cluster", "config", "scheduler", "tree", "workload"}
	clusterKeys   = []string{"nodes", "preempted_job_stop"}
	nodeKeys      = []string{"count", "resources"}
	schedulerKeys = []string{"fair_share_starvation_timeout_s", "fair_share_aggressive_starvation_timeout_s",
		"fair_share_starvation_tolerance", "enable_aggressive_starvation", "enable_pool_starvation",
		"allocation_count_preemption_timeout_coefficient", "preemption_satisfaction_threshold",
		"aggressive_preemption_satisfaction_threshold", "preemptive_scheduling_backoff_s",
		"allocation_preemption_timeout_s", "allocation_graceful_preemption_timeout_s",
		"min_spare_allocation_resources", "max_started_allocations_per_heartbeat",
		"max_operation_count", "max_running_operation_count", "max_operation_count_per_pool",
		"max_running_operation_count_per_pool"}
	workloadKeys = []string{"name", "pool", "type", "weight", "preemption_mode", "tasks", "arrivals"}
	taskKeys     = []string{"name", "job_count", "resources", "duration"}
	distKeys     = []string{"distribution", "value_s", "min_s", "max_s", "mean_s", "median_s", "sigma"}
	arrivalKeys  = []string{"at_s", "every_s", "rate_per_hour", "concurrent", "start_s", "end_s", "repeat_every_s"}
	opTypes      = []string{"map", "reduce", "map_reduce", "sort", "merge", "erase", "join_reduce", "remote_copy", "vanilla"}

	// stopAtTimeout maps a cluster's preempted_job_stop to StopAtTimeout.
	stopAtTimeout   = map[string]bool{"immediately": false, "at_timeout": true}
	preemptionModes = map[string]schedule.PreemptionMode{"normal": schedule.PreemptionNormal, "graceful": schedule.PreemptionGraceful}
)

// DefaultMaxSamples is a run's default max_samples: enough points for a
// chart, a few megabytes at a hundred pools.
const DefaultMaxSamples = 2048

// decodeRunKey decodes one of the run's settings that scenario files and
// trace configurations share; other keys are left to the caller.
func decodeRunKey(p, k string, x any, s *Scenario) *Error {
	var e *Error
	switch k {
	case "description":
		s.Description, e = jsonpath.String(p, x)
	case "heartbeat_period_s":
		s.HeartbeatPeriodS, e = asSeconds(p, x, 0.001, "a number of seconds in [0.001, 1e9]")
	case "fair_share_update_period_s":
		// docs/configuration.md: the reference accepts [10 ms, 60 s].
		s.FairShareUpdatePeriodS, e = jsonpath.Range(p, x, 0.01, 60, "a number of seconds in [0.01, 60]")
	case "sample_period_s":
		s.SamplePeriodS, e = asSeconds(p, x, 0.001, "a number of seconds in [0.001, 1e9]")
	case "max_samples":
		var n float64
		n, e = jsonpath.Range(p, x, 16, 1e7, "a whole number of samples in [16, 1e7]")
		if e == nil && n != math.Trunc(n) {
			e = jsonpath.Invalid(p, x, "a whole number of samples in [16, 1e7]")
		}
		s.MaxSamples = int(n)
	}
	return e
}

// checkRun checks the run's settings against each other and derives the
// scheduler's from them.
func checkRun(m map[string]any, s *Scenario) *Error {
	if s.SamplePeriodS < s.FairShareUpdatePeriodS {
		return jsonpath.Invalid("$.sample_period_s", m["sample_period_s"], "at least fair_share_update_period_s ("+ftoa(s.FairShareUpdatePeriodS)+")")
	}
	s.Scheduler.FairShareUpdatePeriod = seconds(s.FairShareUpdatePeriodS)
	// One shard: the simulation heartbeats nodes one at a time.
	s.Scheduler.Shards = 1
	return nil
}

// Decode decodes and validates a scenario file. The returned error is always
// an *Error naming the JSON path of the first problem. data is not retained.
func Decode(data []byte) (*Scenario, error) {
	m, e := jsonpath.DecodeObject(data, "file")
	if e != nil {
		return nil, e
	}
	s, e := decodeScenario(m)
	if e != nil {
		return nil, e
	}
	return s, nil
}

func decodeScenario(m map[string]any) (*Scenario, *Error) {
	if e := jsonpath.CheckKeys("$", m, scenarioKeys, "a scenario"); e != nil {
		return nil, e
	}
	var e *Error
	s := &Scenario{
		Seed:                   1,
		HeartbeatPeriodS:       5,
		FairShareUpdatePeriodS: 1,
		SamplePeriodS:          60,
		MaxSamples:             DefaultMaxSamples,
		Scheduler:              schedule.DefaultConfig(),
	}
	// Scalars.
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key("$", k), m[k]
		switch k {
		case "name":
			s.Name, e = jsonpath.String(p, x)
		case "seed":
			var n int64
			n, e = jsonpath.Count(p, x)
			s.Seed = uint64(n)
		case "duration_s":
			s.DurationS, e = asSeconds(p, x, 0.001, "a number of seconds in [0.001, 1e9]")
		case "warm_up_s":
			s.WarmUpS, e = asSeconds(p, x, 0, "a number of seconds in [0, 1e9]")
		default:
			e = decodeRunKey(p, k, x, s)
		}
		if e != nil {
			return nil, e
		}
	}
	if _, ok := m["duration_s"]; !ok {
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, "$.duration_s", "cannot simulate without duration_s: want the simulated time in seconds")
	}
	if e := checkRun(m, s); e != nil {
		return nil, e
	}
	if x, ok := m["scheduler"]; ok {
		if e := decodeSchedulerConfig("$.scheduler", x, &s.Scheduler); e != nil {
			return nil, e
		}
	}
	cv, ok := m["cluster"]
	if !ok {
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, "$.cluster", "cannot simulate without a cluster: want {\"nodes\": [{\"count\": N, \"resources\": {...}}]}")
	}
	if e := decodeCluster("$.cluster", cv, s); e != nil {
		return nil, e
	}
	if e := decodeTree(m, s); e != nil {
		return nil, e
	}
	wv, ok := m["workload"]
	if !ok {
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, "$.workload", "cannot simulate without a workload: want a list of operation kinds")
	}
	if e := decodeWorkload("$.workload", wv, s); e != nil {
		return nil, e
	}
	return s, nil
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// decodeSchedulerConfig applies the scenario's "scheduler" object to c:
// the keys of PATCH /api/v1/config that a scenario may set (the update
// period and the shards are the scenario's own), decoded by the server's
// decoder.
func decodeSchedulerConfig(path string, v any, c *schedule.Config) *Error {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return e
	}
	if e := jsonpath.CheckKeys(path, m, schedulerKeys, "the scheduler config"); e != nil {
		return e
	}
	*c, e = wire.SchedulerConfig(path, m, *c)
	return e
}

// defaultNodeUserSlots is a node's user_slots when the scenario names none.
const defaultNodeUserSlots = 1000

func decodeCluster(path string, v any, s *Scenario) *Error {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return e
	}
	if e := jsonpath.CheckKeys(path, m, clusterKeys, "the cluster"); e != nil {
		return e
	}
	if x, ok := m["preempted_job_stop"]; ok {
		if s.StopAtTimeout, e = jsonpath.Lookup(jsonpath.Key(path, "preempted_job_stop"), x, stopAtTimeout, `"immediately" or "at_timeout"`); e != nil {
			return e
		}
	}
	nv, ok := m["nodes"]
	if !ok {
		return jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(path, "nodes"), "cannot simulate a cluster without nodes: want [{\"count\": N, \"resources\": {...}}]")
	}
	p := jsonpath.Key(path, "nodes")
	a, e := jsonpath.Array(p, nv)
	if e != nil {
		return e
	}
	if len(a) == 0 {
		return jsonpath.NewError(wire.CodeInvalidValue, p, "cannot simulate a cluster without nodes: want at least one node group")
	}
	total := 0
	for i, gv := range a {
		gp := jsonpath.Index(p, i)
		gm, e := jsonpath.Object(gp, gv)
		if e != nil {
			return e
		}
		if e := jsonpath.CheckKeys(gp, gm, nodeKeys, "a node group"); e != nil {
			return e
		}
		g := NodeGroup{Count: 1}
		if x, ok := gm["count"]; ok {
			n, e := jsonpath.Whole(jsonpath.Key(gp, "count"), x, 1, 100000, "a whole number in [1, 100000]")
			if e != nil {
				return e
			}
			g.Count = int(n)
		}
		rv, ok := gm["resources"]
		if !ok {
			return jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(gp, "resources"), "cannot simulate a node without resources: want e.g. {\"cpu\": 20, \"memory\": 137438953472}")
		}
		var given [resource.Count]bool
		if g.Resources, given, e = jsonpath.Resources(jsonpath.Key(gp, "resources"), rv); e != nil {
			return e
		}
		if !given[resource.UserSlots] {
			g.Resources[resource.UserSlots] = defaultNodeUserSlots
		}
		if spare := s.Scheduler.MinSpareAllocationResources; !g.Resources.Dominates(spare) {
			return jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(gp, "resources"),
				"cannot use a node of "+g.Resources.String()+": no job could start on it, want at least the min_spare_allocation_resources "+spare.String())
		}
		total += g.Count
		if total > 100000 {
			return jsonpath.Invalid(jsonpath.Key(gp, "count"), gm["count"], "at most 100000 nodes in all")
		}
		s.Nodes = append(s.Nodes, g)
	}
	return nil
}

// decodeTree decodes "config" and "tree" with wire's snapshot decoder,
// so that pools are written exactly as in solve snapshots (docs/api.md#solve) and
// errors carry the same paths.
func decodeTree(m map[string]any, s *Scenario) *Error {
	tv, ok := m["tree"]
	if !ok {
		return jsonpath.NewError(wire.CodeMissingAttribute, "$.tree", "cannot simulate without a tree: want {\"children\": [pools...]}")
	}
	doc := map[string]any{
		"total_resources": map[string]any{"cpu": json.Number("1")},
		"tree":            tv,
	}
	if cv, ok := m["config"]; ok {
		doc["config"] = cv
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return jsonpath.NewError(wire.CodeMalformedJSON, "$.tree", "cannot re-encode the tree: "+err.Error())
	}
	snap, err := wire.DecodeSnapshot(data)
	if err != nil {
		var we *Error
		if errors.As(err, &we) {
			return we
		}
		return jsonpath.NewError(wire.CodeInvalidValue, "$.tree", err.Error())
	}
	s.Scheduler.FairShare = snap.Config
	var walk func(parent string, els []snapshot.Element) *Error
	walk = func(parent string, els []snapshot.Element) *Error {
		for i := range els {
			el := &els[i]
			if el.IsOperation {
				return jsonpath.NewError(wire.CodeInvalidValue, el.Path,
					"cannot put operation "+jsonpath.Describe(el.Name)+" in a scenario's tree: operations come from the workload")
			}
			if el.AccumulatedVolume != [resource.Count]float64{} {
				return jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(el.Path, "accumulated_resource_volume"),
					"cannot give a simulated pool an initial volume: integral pools start empty; use warm_up_s to let them accumulate before time 0")
			}
			s.Pools = append(s.Pools, tree.Mutation{Kind: tree.AddPool, Name: el.Name, Parent: parent, Pool: el.Pool})
			if e := walk(el.Name, el.Children); e != nil {
				return e
			}
		}
		return nil
	}
	if e := walk("", snap.Root.Children); e != nil {
		return e
	}
	// The tree applies the mutations as a whole; a scenario that passes the
	// decoder but not the tree (it should not happen) is reported at $.tree.
	t := tree.New(tree.PoolConfig{})
	if _, err := t.Apply(s.Pools...); err != nil {
		return jsonpath.NewError(wire.CodeInvalidValue, "$.tree", err.Error())
	}
	return nil
}

func decodeWorkload(path string, v any, s *Scenario) *Error {
	a, e := jsonpath.Array(path, v)
	if e != nil {
		return e
	}
	if len(a) == 0 {
		return jsonpath.NewError(wire.CodeInvalidValue, path, "cannot simulate an empty workload: want at least one operation kind")
	}
	names := map[string]string{}
	for i, wv := range a {
		p := jsonpath.Index(path, i)
		w, e := decodeOne(p, wv, s)
		if e != nil {
			return e
		}
		if prev, ok := names[w.Name]; ok {
			return jsonpath.NewError(wire.CodeDuplicateName, jsonpath.Key(p, "name"), "cannot use name "+jsonpath.Describe(w.Name)+" again: "+prev+" has it")
		}
		names[w.Name] = p
		s.Workload = append(s.Workload, w)
	}
	return nil
}

func decodeOne(path string, v any, s *Scenario) (Workload, *Error) {
	var w Workload
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return w, e
	}
	if e := jsonpath.CheckKeys(path, m, workloadKeys, "a workload entry"); e != nil {
		return w, e
	}
	for _, k := range []string{"name", "pool", "tasks", "arrivals"} {
		if _, ok := m[k]; !ok {
			return w, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(path, k), "cannot simulate a workload entry without "+k)
		}
	}
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		switch k {
		case "name":
			if w.Name, e = jsonpath.String(p, x); e == nil && (w.Name == "" || len(w.Name) > 128) {
				e = jsonpath.Invalid(p, x, "1-128 characters")
			}
		case "pool":
			if w.Pool, e = jsonpath.String(p, x); e == nil && !slices.ContainsFunc(s.Pools, func(m tree.Mutation) bool { return m.Name == w.Pool }) {
				e = jsonpath.NewError(wire.CodeUnknownElement, p, "cannot find pool "+jsonpath.Describe(x)+" in the tree")
			}
		case "type":
			if w.Type, e = jsonpath.String(p, x); e == nil && !slices.Contains(opTypes, w.Type) {
				e = jsonpath.Invalid(p, x, "one of map, reduce, map_reduce, sort, merge, erase, join_reduce, remote_copy, vanilla")
			}
		case "weight":
			var f float64
			if f, e = jsonpath.Range(p, x, tree.MinWeight, tree.MaxWeight, "a weight in [1.5e-8, 6.7e7]"); e == nil {
				w.Weight = tree.Some(f)
			}
		case "preemption_mode":
			w.PreemptionMode, e = jsonpath.Lookup(p, x, preemptionModes, `"normal" or "graceful"`)
		case "tasks":
			w.Tasks, e = decodeTasks(p, x, s)
		case "arrivals":
			w.Arrivals, e = decodeArrivals(p, x, s)
		}
		if e != nil {
			return w, e
		}
	}
	return w, nil
}

func decodeTasks(path string, v any, s *Scenario) ([]Task, *Error) {
	a, e := jsonpath.Array(path, v)
	if e != nil {
		return nil, e
	}
	if len(a) == 0 {
		return nil, jsonpath.NewError(wire.CodeInvalidValue, path, "cannot start operations without tasks: want at least one")
	}
	tasks := make([]Task, 0, len(a))
	for i, tv := range a {
		p := jsonpath.Index(path, i)
		m, e := jsonpath.Object(p, tv)
		if e != nil {
			return nil, e
		}
		if e := jsonpath.CheckKeys(p, m, taskKeys, "a task"); e != nil {
			return nil, e
		}
		for _, k := range []string{"job_count", "resources", "duration"} {
			if _, ok := m[k]; !ok {
				return nil, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(p, k), "cannot simulate a task without "+k)
			}
		}
		t := Task{Name: "task" + strconv.Itoa(i)}
		for _, k := range jsonpath.SortedKeys(m) {
			kp, x := jsonpath.Key(p, k), m[k]
			switch k {
			case "name":
				t.Name, e = jsonpath.String(kp, x)
			case "job_count":
				t.JobCount, e = jsonpath.Whole(kp, x, 1, 1<<40, "a whole number in [1, 2^40]")
			case "resources":
				var given [resource.Count]bool
				if t.Resources, given, e = jsonpath.Resources(kp, x); e != nil {
					break
				}
				if !given[resource.UserSlots] {
					t.Resources[resource.UserSlots] = 1
				}
				if t.Resources.IsZero() {
					e = jsonpath.NewError(wire.CodeInvalidValue, kp, "cannot start jobs that use no resources")
					break
				}
				fits := false
				for _, g := range s.Nodes {
					fits = fits || g.Resources.Dominates(t.Resources)
				}
				if !fits {
					e = jsonpath.NewError(wire.CodeInvalidValue, kp, "cannot start a job of "+t.Resources.String()+": no node is large enough")
				}
			case "duration":
				t.Duration, e = decodeDist(kp, x)
			}
			if e != nil {
				return nil, e
			}
		}
		for r, x := range t.Resources {
			if x > 0 && t.JobCount > resource.MaxAmount/x {
				return nil, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(p, "job_count"),
					"cannot use job_count "+strconv.FormatInt(t.JobCount, 10)+": the task's total "+resource.Kind(r).String()+" exceeds 2^53")
			}
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func decodeDist(path string, v any) (Dist, *Error) {
	var d Dist
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return d, e
	}
	if e := jsonpath.CheckKeys(path, m, distKeys, "a duration"); e != nil {
		return d, e
	}
	dv, ok := m["distribution"]
	if !ok {
		return d, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(path, "distribution"), "cannot draw durations without a distribution: want one of fixed, uniform, exponential, lognormal")
	}
	name, e := jsonpath.String(jsonpath.Key(path, "distribution"), dv)
	if e != nil {
		return d, e
	}
	k := slices.Index(distNames, name)
	if k < 0 {
		return d, jsonpath.Invalid(jsonpath.Key(path, "distribution"), dv, "one of fixed, uniform, exponential, lognormal")
	}
	d.Kind = DistKind(k)
	var want []string
	switch d.Kind {
	case DistFixed:
		want = []string{"value_s"}
	case DistUniform:
		want = []string{"min_s", "max_s"}
	case DistExponential:
		want = []string{"mean_s"}
	case DistLognormal:
		want = []string{"sigma"}
		_, med := m["median_s"]
		_, mean := m["mean_s"]
		switch {
		case med && mean:
			return d, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(path, "mean_s"), "cannot give both median_s and mean_s: want one")
		case med:
			want = append(want, "median_s")
		default:
			want = append(want, "mean_s")
		}
	}
	for _, k := range jsonpath.SortedKeys(m) {
		if k != "distribution" && !slices.Contains(want, k) {
			return d, jsonpath.NewError(wire.CodeUnknownAttribute, jsonpath.Key(path, k),
				"cannot use "+jsonpath.Describe(k)+" with a "+name+" distribution: want "+joinQuoted(want))
		}
	}
	vals := map[string]float64{}
	for _, k := range want {
		x, ok := m[k]
		if !ok {
			return d, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(path, k), "cannot draw from a "+name+" distribution without "+k)
		}
		lo, what := 0.001, "a number of seconds in [0.001, 1e9]"
		if k == "sigma" {
			lo, what = 0, "a number in [0, 10]"
		}
		hi := maxSeconds
		if k == "sigma" {
			hi = 10
		}
		f, e := jsonpath.Range(jsonpath.Key(path, k), x, lo, hi, what)
		if e != nil {
			return d, e
		}
		vals[k] = f
	}
	switch d.Kind {
	case DistFixed:
		d.A = vals["value_s"]
	case DistUniform:
		d.A, d.B = vals["min_s"], vals["max_s"]
		if d.B < d.A {
			return d, jsonpath.Invalid(jsonpath.Key(path, "max_s"), m["max_s"], "at least min_s ("+ftoa(d.A)+")")
		}
	case DistExponential:
		d.A = vals["mean_s"]
	case DistLognormal:
		d.B = vals["sigma"]
		if med, ok := vals["median_s"]; ok {
			d.A = med
		} else {
			// mean = median · exp(σ²/2)
			d.A = vals["mean_s"] / math.Exp(d.B*d.B/2)
		}
	}
	return d, nil
}

func joinQuoted(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += " and "
		}
		out += strconv.Quote(x)
	}
	return out
}

func decodeArrivals(path string, v any, s *Scenario) (Arrivals, *Error) {
	a := Arrivals{EndS: s.DurationS}
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return a, e
	}
	if e := jsonpath.CheckKeys(path, m, arrivalKeys, "arrivals"); e != nil {
		return a, e
	}
	kinds := []string{"at_s", "every_s", "rate_per_hour", "concurrent"}
	found := ""
	for _, k := range kinds {
		if _, ok := m[k]; ok {
			if found != "" {
				return a, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(path, k), "cannot combine "+strconv.Quote(found)+" and "+strconv.Quote(k)+": want one arrival process")
			}
			found = k
		}
	}
	if found == "" {
		return a, jsonpath.NewError(wire.CodeMissingAttribute, path, "cannot tell when operations arrive: want one of at_s, every_s, rate_per_hour, concurrent")
	}
	const secs = "a number of seconds in [0, 1e9]"
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		switch k {
		case "at_s":
			a.Kind = ArriveAt
			var xs []any
			if xs, e = jsonpath.Array(p, x); e != nil {
				break
			}
			if len(xs) == 0 || len(xs) > 1_000_000 {
				e = jsonpath.NewError(wire.CodeInvalidValue, p, "cannot use "+strconv.Itoa(len(xs))+" arrival times: want 1 to 1000000")
				break
			}
			for j, tv := range xs {
				var t float64
				if t, e = asSeconds(jsonpath.Index(p, j), tv, 0, secs); e != nil {
					break
				}
				a.AtS = append(a.AtS, t)
			}
			slices.Sort(a.AtS)
		case "every_s":
			a.Kind = ArriveEvery
			a.EveryS, e = asSeconds(p, x, 0.001, "a number of seconds in [0.001, 1e9]")
		case "rate_per_hour":
			a.Kind = ArrivePoisson
			a.RatePerHour, e = jsonpath.Range(p, x, 1e-9, 3.6e6, "a rate in (0, 3600000] per hour")
		case "concurrent":
			a.Kind = ArriveConcurrent
			var n int64
			n, e = jsonpath.Whole(p, x, 1, 10000, "a whole number in [1, 10000]")
			a.Concurrent = int(n)
		case "start_s":
			a.StartS, e = asSeconds(p, x, 0, secs)
		case "end_s":
			a.EndS, e = asSeconds(p, x, 0, secs)
		case "repeat_every_s":
			a.RepeatEveryS, e = asSeconds(p, x, 0.001, "a number of seconds in [0.001, 1e9]")
		}
		if e != nil {
			return a, e
		}
	}
	if a.EndS <= a.StartS {
		p := jsonpath.Key(path, "end_s")
		if _, ok := m["end_s"]; !ok {
			p = jsonpath.Key(path, "start_s")
			return a, jsonpath.Invalid(p, m["start_s"], "less than the end of the window ("+ftoa(a.EndS)+" s)")
		}
		return a, jsonpath.Invalid(p, m["end_s"], "more than start_s ("+ftoa(a.StartS)+" s)")
	}
	if a.RepeatEveryS > 0 {
		if _, ok := m["end_s"]; !ok {
			return a, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(path, "end_s"), "cannot repeat a window without end_s")
		}
		if a.EndS-a.StartS > a.RepeatEveryS {
			return a, jsonpath.Invalid(jsonpath.Key(path, "repeat_every_s"), m["repeat_every_s"], "at least the window's length ("+ftoa(a.EndS-a.StartS)+" s)")
		}
		if a.Kind == ArriveAt && a.AtS[len(a.AtS)-1] >= a.RepeatEveryS {
			return a, jsonpath.Invalid(jsonpath.Key(path, "at_s"), m["at_s"], "times below repeat_every_s ("+ftoa(a.RepeatEveryS)+" s)")
		}
	}
	if a.Kind == ArrivePoisson || a.Kind == ArriveEvery {
		// Bound the number of arrivals so that a typo cannot exhaust memory.
		per := a.RatePerHour / 3600 * (a.EndS - a.StartS)
		if a.Kind == ArriveEvery {
			per = (a.EndS - a.StartS) / a.EveryS
		}
		windows := 1.0
		if a.RepeatEveryS > 0 {
			windows = math.Ceil(s.DurationS / a.RepeatEveryS)
		}
		if per*windows > 1e6 {
			return a, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(path, found),
				"cannot simulate about "+ftoa(math.Round(per*windows))+" operation arrivals: want at most 1000000")
		}
	}
	return a, nil
}
