package sim

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/resource"
)

// swfFields are the 18 fields of a Standard Workload Format (v2.2) job line.
var swfFields = [18]string{"job number", "submit time", "wait time", "run time", "allocated processors",
	"average cpu time", "used memory", "requested processors", "requested time", "requested memory",
	"status", "user id", "group id", "executable number", "queue number", "partition number",
	"preceding job number", "think time"}

// swfFieldName names field i (0-based) as "field 4 (run time)".
func swfFieldName(i int) string { return "field " + strconv.Itoa(i+1) + " (" + swfFields[i] + ")" }

// swfWhole marks the fields that hold whole numbers; the others (times,
// memory) may have decimals.
var swfWhole = [18]bool{0: true, 4: true, 7: true, 10: true, 11: true, 12: true, 13: true, 14: true, 15: true, 16: true}

// SWFHeader is what the header comments say about the machine.
type SWFHeader struct {
	MaxProcs, MaxNodes int64
	UnixStartTime      int64
	// Queues maps a queue number to its name (the "Queue:" lines).
	Queues map[int64]string
}

// cluster turns the header into nodes: MaxNodes nodes sharing MaxProcs
// processors evenly (one node a processor when they do not divide), each
// processor one cpu and one user slot, with 1 GiB of memory a processor so
// that the core's min_spare_allocation_resources fit (swf jobs use none).
func (h *SWFHeader) cluster() ([]NodeGroup, error) {
	procs, nodes := h.MaxProcs, h.MaxNodes
	switch {
	case procs <= 0 && nodes <= 0:
		return nil, errors.New("cannot size the cluster: the header has neither MaxProcs nor MaxNodes (give a \"cluster\" in the trace config)")
	case procs <= 0:
		procs = nodes
	case nodes <= 0 || procs%nodes != 0:
		nodes = procs
	}
	if nodes > 100000 {
		return nil, errors.New("cannot simulate " + strconv.FormatInt(nodes, 10) + " nodes: at most 100000")
	}
	per := procs / nodes
	var r resource.Vec
	r[resource.CPU] = per * resource.CPUScale
	r[resource.UserSlots] = per
	r[resource.Memory] = per << 30
	return []NodeGroup{{Count: int(nodes), Resources: r}}, nil
}

// SWFReader reads a Standard Workload Format v2.2 trace: the header's ';'
// comments, then one job a line of 18 whitespace-separated fields, -1 for
// unknown. A job becomes an operation of one task of p jobs of one cpu and
// one user slot each, p the allocated processors (the requested ones when
// the allocation is unknown), running the job's run time, as a gang unless
// NoGang; its pool is "user-<id>", "group-<id>" or "queue-<name>" by
// PoolsBy ("…-unknown" for -1). Jobs whose run time, processors or submit
// time are unknown, or that want more processors than the machine has, are
// skipped and counted.
type SWFReader struct {
	Header SWFHeader
	lr     *lineReader
	opts   TraceOptions
	skips  skips
	// pending is the first job line, read with the header.
	pending []byte
	done    bool
	fields  [18]float64
	names   map[int64]string // pool names by id, so that each is built once
}

// NewSWFReader reads the header of an swf trace from r.
func NewSWFReader(r io.Reader, opts TraceOptions) (*SWFReader, error) {
	s := &SWFReader{lr: newLineReader(r), opts: opts, Header: SWFHeader{Queues: map[int64]string{}}, names: map[int64]string{}}
	if s.opts.PoolsBy == "" {
		s.opts.PoolsBy = "user"
	}
	for {
		line, err := s.lr.next()
		if err == io.EOF {
			s.done = true
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if t[0] != ';' {
			s.pending = line
			return s, nil
		}
		if err := s.headerLine(string(bytes.TrimSpace(t[1:]))); err != nil {
			return nil, err
		}
	}
}

// headerLine reads one "; Key: value" comment; keys it does not use are
// ignored (the format has many, and free text).
func (s *SWFReader) headerLine(t string) error {
	key, val, ok := strings.Cut(t, ":")
	if !ok {
		return nil
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	num := func(field string, dst *int64) error {
		n, err := strconv.ParseInt(strings.Fields(val + " x")[0], 10, 64)
		if err != nil || n < 0 {
			return &TraceError{Line: s.lr.line, Field: "header " + field, Msg: "cannot use " + strconv.Quote(val) + ": want a whole number ≥ 0"}
		}
		*dst = n
		return nil
	}
	switch key {
	case "MaxProcs":
		return num(key, &s.Header.MaxProcs)
	case "MaxNodes":
		return num(key, &s.Header.MaxNodes)
	case "UnixStartTime":
		return num(key, &s.Header.UnixStartTime)
	case "Queue", "Queues":
		f := strings.Fields(val)
		if len(f) == 0 {
			return nil
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			// "Queues: free text" in some logs.
			return nil
		}
		if len(f) > 1 {
			s.Header.Queues[n] = f[1]
		}
	}
	return nil
}

// Lines implements TraceReader.
func (s *SWFReader) Lines() int { return s.lr.line }

// Skipped implements TraceReader.
func (s *SWFReader) Skipped() []SkipCount { return s.skips.get() }

// Next implements TraceReader.
func (s *SWFReader) Next() (TraceJob, error) {
	for !s.done {
		var line []byte
		if s.pending != nil {
			line, s.pending = s.pending, nil
		} else {
			var err error
			if line, err = s.lr.next(); err == io.EOF {
				s.done = true
				break
			} else if err != nil {
				return TraceJob{}, err
			}
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == ';' {
			continue
		}
		j, reason, err := s.parse(t)
		if err != nil {
			return TraceJob{}, err
		}
		if reason != "" {
			s.skips.add(reason)
			continue
		}
		return j, nil
	}
	return TraceJob{}, io.EOF
}

func (s *SWFReader) parse(t []byte) (TraceJob, string, error) {
	n := 0
	for len(t) > 0 {
		i := bytes.IndexAny(t, " \t")
		if i < 0 {
			i = len(t)
		}
		if n == 18 {
			return TraceJob{}, "", &TraceError{Line: s.lr.line, Msg: "cannot use more than 18 fields: found " + strconv.Quote(string(t[:min(i, 32)])) + " after the think time"}
		}
		tok := t[:i]
		v, err := strconv.ParseFloat(string(tok), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > maxSeconds*1000 {
			return TraceJob{}, "", &TraceError{Line: s.lr.line, Field: swfFieldName(n), Msg: "cannot use " + strconv.Quote(string(tok)) + ": want a number"}
		}
		if swfWhole[n] && v != math.Trunc(v) {
			return TraceJob{}, "", &TraceError{Line: s.lr.line, Field: swfFieldName(n), Msg: "cannot use " + strconv.Quote(string(tok)) + ": want a whole number"}
		}
		if v < 0 && v != -1 {
			return TraceJob{}, "", &TraceError{Line: s.lr.line, Field: swfFieldName(n), Msg: "cannot use " + strconv.Quote(string(tok)) + ": want -1 (unknown) or a number ≥ 0"}
		}
		s.fields[n] = v
		n++
		t = bytes.TrimLeft(t[i:], " \t")
	}
	if n < 18 {
		return TraceJob{}, "", &TraceError{Line: s.lr.line, Field: swfFieldName(n), Msg: "cannot find it: want 18 fields, found " + strconv.Itoa(n)}
	}
	f := &s.fields
	if f[0] < 0 {
		return TraceJob{}, "", &TraceError{Line: s.lr.line, Field: swfFieldName(0), Msg: "cannot use -1: every job has a number"}
	}
	if st := f[10]; st > 5 {
		return TraceJob{}, "", &TraceError{Line: s.lr.line, Field: swfFieldName(10), Msg: "cannot use " + ftoa(st) + ": want -1 or 0 to 5"}
	}
	switch {
	case f[1] < 0:
		return TraceJob{}, "submit time unknown (-1)", nil
	case f[3] < 0:
		return TraceJob{}, "run time unknown (-1)", nil
	}
	procs := f[4]
	if procs <= 0 {
		procs = f[7]
	}
	switch {
	case procs <= 0:
		return TraceJob{}, "processors unknown or 0 (allocated and requested)", nil
	case s.Header.MaxProcs > 0 && procs > float64(s.Header.MaxProcs):
		return TraceJob{}, "more processors than MaxProcs", nil
	}
	j := TraceJob{
		Line: s.lr.line, ID: strconv.FormatInt(int64(f[0]), 10), SubmitS: f[1], RunS: f[3], Jobs: int64(procs),
		Gang: !s.opts.NoGang && procs > 1, RecordedWaitS: f[2],
	}
	j.Resources[resource.CPU] = resource.CPUScale
	j.Resources[resource.UserSlots] = 1
	j.Pool = s.pool()
	return j, "", nil
}

// pool names the current line's pool.
func (s *SWFReader) pool() string {
	var id float64
	var key int64
	switch s.opts.PoolsBy {
	case "group":
		id, key = s.fields[12], 1<<40
	case "queue":
		id, key = s.fields[14], 2<<40
	default:
		id = s.fields[11]
	}
	key += int64(id)
	if name, ok := s.names[key]; ok {
		return name
	}
	name := s.opts.PoolsBy + "-"
	switch {
	case id < 0:
		name += "unknown"
	case s.opts.PoolsBy == "queue" && validQueueName(s.Header.Queues[int64(id)]):
		name += s.Header.Queues[int64(id)]
	default:
		name += strconv.FormatInt(int64(id), 10)
	}
	s.names[key] = name
	return name
}

func validQueueName(q string) bool {
	if q == "" || len(q) > 100 {
		return false
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
