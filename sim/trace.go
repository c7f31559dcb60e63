package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/wire"
)

// TraceJob is one job of a workload trace, converted to what the simulation
// starts: an operation of one task of Jobs jobs of Resources each, arriving
// at SubmitS and running RunS seconds once started.
type TraceJob struct {
	Line    int     // the line of the trace it came from (1-based)
	ID      string  // the trace's job number or pod name
	SubmitS float64 // seconds since the trace's start
	// RunS is each job's run time; Forever marks a job that was still
	// running when the trace ended: it never completes.
	RunS    float64
	Forever bool
	Jobs    int64
	// Resources are one job's: for swf one cpu and one user slot.
	Resources resource.Vec
	Pool      string
	Gang      bool
	// Filter restricts the jobs to nodes with matching tags (alibaba's
	// gpu_spec against the nodes' models).
	Filter tagfilter.Filter
	// RecordedWaitS is the wait the production scheduler gave the job
	// (start − submit), or -1 when the trace does not record it.
	RecordedWaitS float64
}

// TraceReader yields a trace's jobs in submit order; Next returns io.EOF
// after the last one. Lines that are well formed but cannot be replayed
// (an unknown run time, a pod that was never scheduled, …) are skipped and
// counted in Skipped; a malformed line is an error (*TraceError) naming the
// line and the field.
type TraceReader interface {
	Next() (TraceJob, error)
	// Skipped counts the skipped lines by reason so far, in a fixed order.
	Skipped() []SkipCount
	// Lines is the number of lines read so far.
	Lines() int
}

// SkipCount is how many trace lines were skipped for one reason.
type SkipCount struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// skips counts skipped lines by reason, keeping the reasons in the order in
// which they were first met, so that reports are deterministic.
type skips struct{ list []SkipCount }

func (s *skips) add(reason string) {
	for i := range s.list {
		if s.list[i].Reason == reason {
			s.list[i].Count++
			return
		}
	}
	s.list = append(s.list, SkipCount{Reason: reason, Count: 1})
}

func (s *skips) get() []SkipCount { return slices.Clone(s.list) }

// TraceError is a malformed trace line: its number, the field (e.g.
// "field 4 (run time)" or "column cpu_milli") and what is wrong.
type TraceError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *TraceError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ":"
	}
	s += "line " + strconv.Itoa(e.Line)
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// maxLineBytes bounds a trace line.
const maxLineBytes = 1 << 20

// maxTracePools bounds the pools a trace may create.
const maxTracePools = 10000

// openMaybeGzip opens a file, decompressing it when it starts with gzip's
// magic bytes. The returned closer closes both.
func openMaybeGzip(path string) (io.Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open the trace: %w", err)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(2)
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cannot read %s as gzip: %w", path, err)
		}
		return zr, f, nil
	}
	return br, f, nil
}

// lineReader reads lines with their numbers, bounding their length.
type lineReader struct {
	sc   *bufio.Scanner
	line int
}

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	return &lineReader{sc: sc}
}

// next returns the next line without its end (and a trailing '\r'); io.EOF
// at the end.
func (l *lineReader) next() ([]byte, error) {
	if !l.sc.Scan() {
		err := l.sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &TraceError{Line: l.line + 1, Msg: "cannot read a line longer than 1 MiB"}
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: cannot read the trace: %w", l.line+1, err)
		}
		return nil, io.EOF
	}
	l.line++
	b := l.sc.Bytes()
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// TraceFormat names a trace format.
type TraceFormat string

// Trace formats.
const (
	FormatSWF     TraceFormat = "swf"
	FormatAlibaba TraceFormat = "alibaba-gpu-2023"
)

// TraceFormats are the formats --trace-format accepts.
var TraceFormats = []TraceFormat{FormatSWF, FormatAlibaba}

// TraceOptions say how a trace becomes a workload.
type TraceOptions struct {
	Format TraceFormat
	// PoolsBy is the field that names a job's pool: user, group or queue
	// (swf; default user) or qos (alibaba; the default and only choice).
	PoolsBy string
	// NoGang starts swf jobs as non-gang operations.
	NoGang bool
	// Nodes is the alibaba node list CSV (required for alibaba).
	Nodes string
}

// TraceSource opens a trace for reading, as many times as runs need it: a
// run streams the trace once, so that memory does not grow with it.
type TraceSource struct {
	Path string
	Opts TraceOptions
	// Cluster is the cluster the trace describes (swf: its header;
	// alibaba: the node list).
	Cluster []NodeGroup
	// Tags are the node groups' tags (alibaba: the gpu model).
	Tags [][]string
	// Header facts for the report.
	Info TraceInfo
}

// TraceInfo describes a trace after a full scan.
type TraceInfo struct {
	File     string      `json:"file"`
	Format   TraceFormat `json:"format"`
	PoolsBy  string      `json:"pools_by"`
	Gang     bool        `json:"gang"`
	Lines    int         `json:"lines"`
	Jobs     int64       `json:"jobs"`
	Skipped  []SkipCount `json:"skipped"`
	FirstS   float64     `json:"first_submit_s"`
	LastS    float64     `json:"last_submit_s"`
	Pools    []string    `json:"pools"`
	Recorded bool        `json:"recorded_waits"`
	// UnixStartTime is swf's header field (0 when absent).
	UnixStartTime int64 `json:"unix_start_time,omitempty"`
}

// Open starts a fresh read of the trace. The closer releases the file.
func (s *TraceSource) Open() (TraceReader, io.Closer, error) {
	r, c, err := openMaybeGzip(s.Path)
	if err != nil {
		return nil, nil, err
	}
	switch s.Opts.Format {
	case FormatSWF:
		tr, err := NewSWFReader(r, s.Opts)
		if err != nil {
			c.Close()
			return nil, nil, withFile(err, s.Path)
		}
		return fileReader{tr, s.Path}, c, nil
	case FormatAlibaba:
		tr, err := NewAlibabaReader(r, s.Opts)
		if err != nil {
			c.Close()
			return nil, nil, withFile(err, s.Path)
		}
		return fileReader{tr.withNodes(s.Cluster, s.Tags), s.Path}, c, nil
	}
	c.Close()
	return nil, nil, fmt.Errorf("cannot read trace format %q: want swf or alibaba-gpu-2023", s.Opts.Format)
}

// fileReader names the file in a reader's errors.
type fileReader struct {
	TraceReader
	file string
}

func (f fileReader) Next() (TraceJob, error) {
	j, err := f.TraceReader.Next()
	return j, withFile(err, f.file)
}

func withFile(err error, file string) error {
	var te *TraceError
	if errors.As(err, &te) && te.File == "" {
		c := *te
		c.File = file
		return &c
	}
	return err
}

// OpenTrace checks a trace from end to end — every line parses, submit
// times never decrease — and returns a source that runs stream from. The
// scan keeps only the distinct pools and the counts, so that it runs in
// memory bounded by the pools, not the jobs.
func OpenTrace(path string, opts TraceOptions) (*TraceSource, error) {
	switch opts.Format {
	case FormatSWF:
		if opts.PoolsBy == "" {
			opts.PoolsBy = "user"
		}
		if !slices.Contains([]string{"user", "group", "queue"}, opts.PoolsBy) {
			return nil, fmt.Errorf("cannot group swf jobs by %q: want user, group or queue", opts.PoolsBy)
		}
		if opts.Nodes != "" {
			return nil, errors.New("cannot use --trace-nodes with swf: the header describes the machine")
		}
	case FormatAlibaba:
		if opts.PoolsBy == "" {
			opts.PoolsBy = "qos"
		}
		if opts.PoolsBy != "qos" {
			return nil, fmt.Errorf("cannot group alibaba-gpu-2023 pods by %q: want qos", opts.PoolsBy)
		}
		if opts.Nodes == "" {
			return nil, errors.New("cannot replay alibaba-gpu-2023 without its node list: want --trace-nodes FILE")
		}
		if opts.NoGang {
			return nil, errors.New("cannot use --no-gang with alibaba-gpu-2023: a pod is one job")
		}
	default:
		return nil, fmt.Errorf("cannot read trace format %q: want swf or alibaba-gpu-2023", opts.Format)
	}
	src := &TraceSource{Path: path, Opts: opts}
	src.Info = TraceInfo{File: path, Format: opts.Format, PoolsBy: opts.PoolsBy, Gang: opts.Format == FormatSWF && !opts.NoGang}
	if opts.Format == FormatAlibaba {
		nodes, tags, err := readAlibabaNodes(opts.Nodes)
		if err != nil {
			return nil, err
		}
		src.Cluster, src.Tags = nodes, tags
	}
	r, c, err := src.Open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if sr, ok := r.(fileReader).TraceReader.(*SWFReader); ok {
		if src.Cluster, err = sr.Header.cluster(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		src.Info.UnixStartTime = sr.Header.UnixStartTime
	}
	seen := map[string]bool{}
	prev, prevLine := 0.0, 0
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if src.Info.Jobs > 0 && j.SubmitS < prev {
			return nil, &TraceError{File: path, Line: j.Line, Field: submitField(opts.Format),
				Msg: "cannot use " + ftoa(j.SubmitS) + ": earlier than line " + strconv.Itoa(prevLine) + "'s " + ftoa(prev) +
					"; the trace must be sorted by submit time"}
		}
		if src.Info.Jobs == 0 {
			src.Info.FirstS = j.SubmitS
		}
		prev, prevLine = j.SubmitS, j.Line
		src.Info.Jobs++
		src.Info.Recorded = src.Info.Recorded || j.RecordedWaitS >= 0
		if !seen[j.Pool] {
			if len(seen) == maxTracePools {
				return nil, &TraceError{File: path, Line: j.Line, Field: poolField(opts), Msg: "cannot create more than 10000 pools"}
			}
			seen[j.Pool] = true
			src.Info.Pools = append(src.Info.Pools, j.Pool)
		}
		if !fitsSomeNode(src.Cluster, src.Tags, &j) {
			return nil, &TraceError{File: path, Line: j.Line, Msg: "BUG: a job larger than every node passed the reader"}
		}
	}
	src.Info.LastS = prev
	src.Info.Lines = r.Lines()
	src.Info.Skipped = r.Skipped()
	if src.Info.Jobs == 0 {
		return nil, fmt.Errorf("%s: cannot replay a trace without jobs (%d lines, %s)", path, src.Info.Lines, describeSkips(src.Info.Skipped))
	}
	return src, nil
}

func describeSkips(s []SkipCount) string {
	if len(s) == 0 {
		return "none skipped"
	}
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += strconv.FormatInt(x.Count, 10) + " skipped: " + x.Reason
	}
	return out
}

func submitField(f TraceFormat) string {
	if f == FormatSWF {
		return swfFieldName(1)
	}
	return "column creation_time"
}

func poolField(o TraceOptions) string {
	if o.Format == FormatAlibaba {
		return "column qos"
	}
	switch o.PoolsBy {
	case "group":
		return swfFieldName(12)
	case "queue":
		return swfFieldName(14)
	}
	return swfFieldName(11)
}

// fitsSomeNode reports whether one of j's jobs fits an empty node it may
// use.
func fitsSomeNode(cluster []NodeGroup, tags [][]string, j *TraceJob) bool {
	for i, g := range cluster {
		var t []string
		if i < len(tags) {
			t = tags[i]
		}
		if g.Resources.Dominates(j.Resources) && (j.Filter.IsEmpty() || j.Filter.Match(t)) {
			return true
		}
	}
	return false
}

// TraceConfig is the optional configuration file of a trace replay: the
// pool tree (weights, guarantees, limits, preemption settings), where the
// trace's pools go in it, the scheduler's settings and the replay's
// periods. See the package documentation.
type TraceConfig struct {
	Name     string
	Seed     uint64
	Scenario *Scenario // periods, cluster override, scheduler, tree
	// Parents maps a trace pool to its parent pool in the tree; pools not
	// named go under DefaultParent (the root when empty). A trace pool that
	// the tree defines itself keeps its place and settings.
	Parents       map[string]string
	DefaultParent string
	clusterGiven  bool
	// DurationS caps the replay (0: until every finite job completed).
	DurationS float64
}

var traceConfigKeys = []string{"name", "description", "seed", "duration_s", "heartbeat_period_s", "fair_share_update_period_s",
	"sample_period_s", "max_samples", "cluster", "config", "scheduler", "tree", "pools", "default_parent"}

// Trace replays' defaults: months of virtual time in seconds of wall time.
const (
	traceHeartbeatS    = 10
	traceFairShareS    = 10
	traceSampleS       = 3600
	traceOpsPerPoolCap = 1_000_000
	// traceNodeTimeoutS is the node_heartbeat_timeout_s of replays: their
	// nodes never fail, and an idle node need not heartbeat to stay.
	traceNodeTimeoutS = 86400
)

// DecodeTraceConfig decodes a trace replay's configuration file; nil data
// gives the defaults (every trace pool a child of the root, equal weights).
// Errors are *Error with the JSON path of the first problem.
func DecodeTraceConfig(data []byte) (*TraceConfig, error) {
	c := &TraceConfig{Seed: 1}
	s := &Scenario{
		Seed: 1, HeartbeatPeriodS: traceHeartbeatS, FairShareUpdatePeriodS: traceFairShareS, SamplePeriodS: traceSampleS,
		MaxSamples: DefaultMaxSamples,
	}
	c.Scenario = s
	s.Scheduler = traceSchedulerDefaults()
	m := map[string]any{"tree": map[string]any{"children": []any{}}}
	if data != nil {
		var e *Error
		if m, e = jsonpath.DecodeObject(data, "file"); e != nil {
			return nil, e
		}
		if e := jsonpath.CheckKeys("$", m, traceConfigKeys, "a trace config"); e != nil {
			return nil, e
		}
		if _, ok := m["tree"]; !ok {
			m["tree"] = map[string]any{"children": []any{}}
		}
	}
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key("$", k), m[k]
		var e *Error
		switch k {
		case "name":
			c.Name, e = jsonpath.String(p, x)
		case "seed":
			var n int64
			n, e = jsonpath.Count(p, x)
			c.Seed = uint64(n)
		case "duration_s":
			c.DurationS, e = asSeconds(p, x, 0.001, "a number of seconds in [0.001, 1e9]")
		default:
			e = decodeRunKey(p, k, x, s)
		case "default_parent":
			c.DefaultParent, e = jsonpath.String(p, x)
		case "pools":
			var pm map[string]any
			if pm, e = jsonpath.Object(p, x); e != nil {
				break
			}
			c.Parents = map[string]string{}
			for _, name := range jsonpath.SortedKeys(pm) {
				kp := jsonpath.Key(p, name)
				if !tree.ValidName(name) {
					e = jsonpath.Invalid(kp, name, "a pool name of 1-128 characters of [A-Za-z0-9._:-]")
					break
				}
				var parent string
				if parent, e = jsonpath.String(kp, pm[name]); e != nil {
					break
				}
				c.Parents[name] = parent
			}
		}
		if e != nil {
			return nil, e
		}
	}
	s.Seed = c.Seed
	if e := checkRun(m, s); e != nil {
		return nil, e
	}
	if x, ok := m["scheduler"]; ok {
		if e := decodeSchedulerConfig("$.scheduler", x, &s.Scheduler); e != nil {
			return nil, e
		}
	}
	if x, ok := m["cluster"]; ok {
		if e := decodeCluster("$.cluster", x, s); e != nil {
			return nil, e
		}
		c.clusterGiven = true
	}
	if e := decodeTree(m, s); e != nil {
		return nil, e
	}
	has := func(name string) bool {
		return slices.ContainsFunc(s.Pools, func(m tree.Mutation) bool { return m.Name == name })
	}
	if c.DefaultParent != "" && !has(c.DefaultParent) {
		return nil, jsonpath.NewError(wire.CodeUnknownElement, "$.default_parent", "cannot find pool "+jsonpath.Describe(c.DefaultParent)+" in the tree")
	}
	for _, name := range sortedKeys(c.Parents) {
		if parent := c.Parents[name]; !has(parent) {
			return nil, jsonpath.NewError(wire.CodeUnknownElement, jsonpath.Key("$.pools", name), "cannot find pool "+jsonpath.Describe(parent)+" in the tree")
		}
	}
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// traceSchedulerDefaults are the core's defaults with the per-pool operation
// limits raised: a trace's user may submit thousands of jobs at once, and
// the replay should queue them, not reject them (a config's "scheduler"
// may set the limits back).
func traceSchedulerDefaults() schedule.Config {
	c := schedule.DefaultConfig()
	c.NodeHeartbeatTimeout = seconds(traceNodeTimeoutS)
	c.Limits.MaxOperationCount = traceOpsPerPoolCap
	c.Limits.MaxRunningOperationCount = traceOpsPerPoolCap
	c.Limits.MaxOperationCountPerPool = traceOpsPerPoolCap
	c.Limits.MaxRunningOperationCountPerPool = traceOpsPerPoolCap
	return c
}

// TraceScenario builds the scenario of a replay: the config's periods,
// scheduler and tree, the trace's cluster (unless the config gives one),
// and one workload entry per trace pool, created under its parent unless
// the tree has it.
func TraceScenario(src *TraceSource, c *TraceConfig) (*Scenario, error) {
	base := c.Scenario
	s := &Scenario{
		Name: c.Name, Description: base.Description, Seed: c.Seed,
		HeartbeatPeriodS: base.HeartbeatPeriodS, FairShareUpdatePeriodS: base.FairShareUpdatePeriodS, SamplePeriodS: base.SamplePeriodS,
		MaxSamples: base.MaxSamples, DurationS: c.DurationS, StopAtTimeout: base.StopAtTimeout, Scheduler: base.Scheduler,
		Pools: slices.Clone(base.Pools), Trace: src,
	}
	if s.Name == "" {
		s.Name = "trace"
	}
	s.Nodes, s.NodeTags = src.Cluster, src.Tags
	if c.clusterGiven {
		s.Nodes, s.NodeTags = base.Nodes, nil
	}
	for _, g := range s.Nodes {
		if spare := s.Scheduler.MinSpareAllocationResources; !g.Resources.Dominates(spare) {
			return nil, fmt.Errorf("cannot use a node of %s: no job could start on it, want at least the min_spare_allocation_resources %s", g.Resources, spare)
		}
	}
	for _, name := range src.Info.Pools {
		if !slices.ContainsFunc(s.Pools, func(m tree.Mutation) bool { return m.Name == name }) {
			parent := c.DefaultParent
			if p, ok := c.Parents[name]; ok {
				parent = p
			}
			s.Pools = append(s.Pools, tree.Mutation{Kind: tree.AddPool, Name: name, Parent: parent})
		}
		s.Workload = append(s.Workload, Workload{Name: name, Pool: name, Arrivals: Arrivals{Kind: ArriveTrace}})
	}
	t := tree.New(tree.PoolConfig{})
	if _, err := t.Apply(s.Pools...); err != nil {
		return nil, fmt.Errorf("cannot build the pool tree from the trace's pools: %w", err)
	}
	return s, nil
}
