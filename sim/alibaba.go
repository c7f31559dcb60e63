package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

// The columns of Alibaba's 2023 GPU cluster trace (alibaba-gpu-2023).
var (
	alibabaPodColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
	alibabaNodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	alibabaPhases      = []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"}
)

// csvTable reads a CSV file whose first row names its columns; columns are
// found by name, in any order, and extra ones are ignored.
type csvTable struct {
	r    *csv.Reader
	col  map[string]int
	rec  []string
	line int
}

func newCSVTable(r io.Reader, want []string) (*csvTable, error) {
	t := &csvTable{r: csv.NewReader(r), col: map[string]int{}}
	t.r.ReuseRecord = true
	t.r.FieldsPerRecord = 0
	head, err := t.r.Read()
	if err == io.EOF {
		return nil, &TraceError{Line: 1, Msg: "cannot find the header row: want " + strings.Join(want, ",")}
	}
	if err != nil {
		return nil, t.csvError(err)
	}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup && slices.Contains(want, h) {
			return nil, &TraceError{Line: 1, Field: "column " + h, Msg: "cannot use it twice"}
		}
		t.col[h] = i
	}
	for _, w := range want {
		if _, ok := t.col[w]; !ok {
			return nil, &TraceError{Line: 1, Field: "column " + w, Msg: "cannot find it in the header: want " + strings.Join(want, ",")}
		}
	}
	t.line = 1
	return t, nil
}

func (t *csvTable) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &TraceError{Line: pe.Line, Field: "column " + strconv.Itoa(pe.Column), Msg: "cannot parse the CSV: " + pe.Err.Error()}
	}
	return fmt.Errorf("cannot read the CSV: %w", err)
}

// next reads the next row; io.EOF at the end.
func (t *csvTable) next() error {
	rec, err := t.r.Read()
	if err != nil {
		if err == io.EOF {
			return err
		}
		return t.csvError(err)
	}
	t.rec = rec
	t.line, _ = t.r.FieldPos(0)
	return nil
}

func (t *csvTable) get(c string) string { return strings.TrimSpace(t.rec[t.col[c]]) }

func (t *csvTable) bad(c, want string) error {
	return &TraceError{Line: t.line, Field: "column " + c, Msg: "cannot use " + strconv.Quote(t.get(c)) + ": want " + want}
}

// number reads column c as a number in [0, hi]; empty gives -1 when
// optional.
func (t *csvTable) number(c string, hi float64, optional bool) (float64, error) {
	s := t.get(c)
	if s == "" && optional {
		return -1, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > hi {
		return 0, t.bad(c, "a number in [0, "+ftoa(hi)+"]")
	}
	return v, nil
}

func (t *csvTable) whole(c string, hi float64) (int64, error) {
	v, err := t.number(c, hi, false)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) {
		return 0, t.bad(c, "a whole number in [0, "+ftoa(hi)+"]")
	}
	return int64(v), nil
}

// Bounds of the alibaba columns: 1 PiB of memory, 2^20 cores, 1024 gpus.
const (
	maxMilli = 1 << 30
	maxMiB   = 1 << 30
	maxGPUs  = 1024
)

// readAlibabaNodes reads the node list: one node a row, grouped into
// identical node groups (in the order first met), each tagged with its gpu
// model so that pods' gpu_spec can select them.
func readAlibabaNodes(path string) ([]NodeGroup, [][]string, error) {
	r, c, err := openMaybeGzip(path)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	nodes, tags, err := readAlibabaNodeList(r)
	return nodes, tags, withFile(err, path)
}

func readAlibabaNodeList(r io.Reader) ([]NodeGroup, [][]string, error) {
	t, err := newCSVTable(r, alibabaNodeColumns)
	if err != nil {
		return nil, nil, err
	}
	var (
		nodes []NodeGroup
		tags  [][]string
		total int
	)
	for {
		if err := t.next(); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, err
		}
		if t.get("sn") == "" {
			return nil, nil, t.bad("sn", "a node's serial number")
		}
		cpu, err := t.whole("cpu_milli", maxMilli)
		if err != nil {
			return nil, nil, err
		}
		mem, err := t.whole("memory_mib", maxMiB)
		if err != nil {
			return nil, nil, err
		}
		gpu, err := t.whole("gpu", maxGPUs)
		if err != nil {
			return nil, nil, err
		}
		model := t.get("model")
		var tg []string
		if model != "" {
			if !validTag(model) {
				return nil, nil, t.bad("model", "a gpu model of 1-256 characters of [A-Za-z0-9._:-]")
			}
			tg = []string{model}
		}
		var res resource.Vec
		res[resource.CPU] = cpu / 10
		res[resource.Memory] = mem << 20
		res[resource.GPU] = gpu
		res[resource.UserSlots] = defaultNodeUserSlots
		total++
		if total > 100000 {
			return nil, nil, &TraceError{Line: t.line, Msg: "cannot simulate more than 100000 nodes"}
		}
		k := slices.IndexFunc(nodes, func(g NodeGroup) bool { return g.Resources == res })
		for k >= 0 && !slices.Equal(tags[k], tg) {
			n := slices.IndexFunc(nodes[k+1:], func(g NodeGroup) bool { return g.Resources == res })
			if n < 0 {
				k = -1
			} else {
				k += 1 + n
			}
		}
		if k < 0 {
			nodes = append(nodes, NodeGroup{Resources: res})
			tags = append(tags, tg)
			k = len(nodes) - 1
		}
		nodes[k].Count++
	}
	if total == 0 {
		return nil, nil, &TraceError{Line: t.line + 1, Msg: "cannot replay on an empty node list: want one node a row"}
	}
	return nodes, tags, nil
}

// validTag reports whether s can be a node tag and a filter's tag.
func validTag(s string) bool { return tree.ValidName(s) }

// AlibabaReader reads the pod list of Alibaba's 2023 GPU cluster trace: a
// CSV with a header row naming (at least) the columns name, cpu_milli,
// memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
// creation_time, deletion_time, scheduled_time (times in seconds). A pod
// is an operation of one job of its cpu, memory and gpus in pool <qos>,
// arriving at creation_time and running deletion_time − scheduled_time:
//
//   - gpus: num_gpu whole gpus; a pod that shares a gpu (gpu_milli below
//     1000) takes the whole gpu, as the core counts gpus in whole units;
//   - gpu_spec ("V100M16|V100M32") restricts the pod to nodes of those
//     models, as a scheduling tag filter over the nodes' model tags;
//   - a pod never scheduled (no scheduled_time) is skipped and counted: it
//     has no run time to replay;
//   - a pod still running at the trace's end (no deletion_time) runs until
//     the replay ends and never completes;
//   - a pod larger than every node it may use is skipped and counted.
//
// The recorded wait is scheduled_time − creation_time.
type AlibabaReader struct {
	t      *csvTable
	opts   TraceOptions
	skips  skips
	nodes  []NodeGroup
	tags   [][]string
	lines  int
	pools  map[string]string
	filter map[string]tagfilter.Filter
}

// NewAlibabaReader reads the header row of a pod list; nodes and tags are
// the cluster's (readAlibabaNodes), against which pods are checked.
func NewAlibabaReader(r io.Reader, opts TraceOptions) (*AlibabaReader, error) {
	t, err := newCSVTable(r, alibabaPodColumns)
	if err != nil {
		return nil, err
	}
	return &AlibabaReader{t: t, opts: opts, lines: 1, pools: map[string]string{}, filter: map[string]tagfilter.Filter{}}, nil
}

// withNodes sets the cluster pods are checked against.
func (a *AlibabaReader) withNodes(nodes []NodeGroup, tags [][]string) *AlibabaReader {
	a.nodes, a.tags = nodes, tags
	return a
}

// Lines implements TraceReader.
func (a *AlibabaReader) Lines() int { return a.lines }

// Skipped implements TraceReader.
func (a *AlibabaReader) Skipped() []SkipCount { return a.skips.get() }

// Next implements TraceReader.
func (a *AlibabaReader) Next() (TraceJob, error) {
	for {
		if err := a.t.next(); err != nil {
			return TraceJob{}, err
		}
		a.lines = a.t.line
		j, reason, err := a.parse()
		if err != nil {
			return TraceJob{}, err
		}
		if reason != "" {
			a.skips.add(reason)
			continue
		}
		return j, nil
	}
}

func (a *AlibabaReader) parse() (TraceJob, string, error) {
	t := a.t
	j := TraceJob{Line: t.line, ID: t.get("name"), Jobs: 1}
	if j.ID == "" {
		return j, "", t.bad("name", "the pod's name")
	}
	cpu, err := t.whole("cpu_milli", maxMilli)
	if err != nil {
		return j, "", err
	}
	mem, err := t.whole("memory_mib", maxMiB)
	if err != nil {
		return j, "", err
	}
	ngpu, err := t.whole("num_gpu", maxGPUs)
	if err != nil {
		return j, "", err
	}
	milli, err := t.whole("gpu_milli", 1000)
	if err != nil {
		return j, "", err
	}
	if ngpu == 0 && milli > 0 {
		return j, "", t.bad("gpu_milli", "0 for a pod without gpus (num_gpu 0)")
	}
	if spec := t.get("gpu_spec"); spec != "" {
		f, ok := a.filter[spec]
		if !ok {
			for _, m := range strings.Split(spec, "|") {
				if !validTag(m) {
					return j, "", t.bad("gpu_spec", "gpu models of [A-Za-z0-9._:-] separated by |")
				}
			}
			if f, err = tagfilter.Parse(spec); err != nil {
				return j, "", t.bad("gpu_spec", "gpu models separated by |")
			}
			if len(a.filter) < 1024 {
				a.filter[spec] = f
			}
		}
		j.Filter = f
	}
	qos := t.get("qos")
	pool, ok := a.pools[qos]
	if !ok {
		if !tree.ValidName(qos) {
			return j, "", t.bad("qos", "a qos class of 1-128 characters of [A-Za-z0-9._:-] (it names the pool)")
		}
		pool = qos
		if len(a.pools) < maxTracePools {
			a.pools[qos] = pool
		}
	}
	j.Pool = pool
	phase := t.get("pod_phase")
	if !slices.Contains(alibabaPhases, phase) {
		return j, "", t.bad("pod_phase", strings.Join(alibabaPhases, ", "))
	}
	created, err := t.number("creation_time", maxSeconds, false)
	if err != nil {
		return j, "", err
	}
	deleted, err := t.number("deletion_time", maxSeconds, true)
	if err != nil {
		return j, "", err
	}
	scheduled, err := t.number("scheduled_time", maxSeconds, true)
	if err != nil {
		return j, "", err
	}
	if scheduled >= 0 && scheduled < created {
		return j, "", t.bad("scheduled_time", "a time at or after creation_time ("+ftoa(created)+")")
	}
	if deleted >= 0 && deleted < created {
		return j, "", t.bad("deletion_time", "a time at or after creation_time ("+ftoa(created)+")")
	}
	if deleted >= 0 && scheduled >= 0 && deleted < scheduled {
		return j, "", t.bad("deletion_time", "a time at or after scheduled_time ("+ftoa(scheduled)+")")
	}
	j.Resources[resource.CPU] = (cpu + 9) / 10 // milli-cores to the core's centi-cores, rounded up
	j.Resources[resource.Memory] = mem << 20
	j.Resources[resource.GPU] = ngpu
	j.Resources[resource.UserSlots] = 1
	j.SubmitS, j.RecordedWaitS = created, -1
	if scheduled < 0 {
		return j, "never scheduled (no scheduled_time)", nil
	}
	j.RecordedWaitS = scheduled - created
	if deleted < 0 {
		j.Forever = true
	} else {
		j.RunS = deleted - scheduled
	}
	if a.nodes != nil && !fitsSomeNode(a.nodes, a.tags, &j) {
		if !j.Filter.IsEmpty() && fitsSomeNode(a.nodes, nil, &TraceJob{Resources: j.Resources}) {
			return j, "no node of the gpu_spec's models is large enough", nil
		}
		return j, "larger than every node", nil
	}
	return j, "", nil
}
