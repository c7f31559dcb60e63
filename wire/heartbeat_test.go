package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonscan"
)

// apiHeartbeat is the request example of docs/api.md#node-heartbeats.
const apiHeartbeat = `{
  "resource_limits": {"user_slots": 32, "cpu": 32, "memory": 137438953472},
  "resource_usage":  {"user_slots": 30, "cpu": 29.5, "memory": 120000000000},
  "tags": ["ssd", "rack-12"],
  "allocations": [
    {"id": "1783", "state": "running", "resource_usage": {"cpu": 1, "memory": 4294967296}},
    {"id": "1790", "state": "completed"},
    {"id": "1791", "state": "failed"}
  ]
}`

func TestDecodeHeartbeat(t *testing.T) {
	var h Heartbeat
	if err := h.Decode([]byte(apiHeartbeat), nil); err != nil {
		t.Fatal(err)
	}
	want := Heartbeat{
		Limits: resource.Vec{resource.UserSlots: 32, resource.CPU: 3200, resource.Memory: 137438953472},
		Usage:  resource.Vec{resource.UserSlots: 30, resource.CPU: 2950, resource.Memory: 120000000000},
		Tags:   []string{"ssd", "rack-12"},
		Allocations: []schedule.AllocationReport{
			{ID: 1783, State: schedule.AllocRunning, HasUsage: true}, {ID: 1790, State: schedule.AllocCompleted}, {ID: 1791, State: schedule.AllocFailed},
		},
		AllocationUsage: []resource.Vec{{resource.CPU: 100, resource.Memory: 4294967296}},
	}
	h.sc, want.sc = scanner{}, scanner{}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
}

func TestDecodeHeartbeatErrors(t *testing.T) {
	f := func(body, code, path string) {
		t.Helper()
		var h Heartbeat
		err := h.Decode([]byte(body), nil)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: got %v, want an *Error", body, err)
		}
		if e.Code != code || e.Path != path {
			t.Fatalf("%s: got %s at %q (%s), want %s at %q", body, e.Code, e.Path, e.Message, code, path)
		}
	}
	f(``, CodeMalformedJSON, "$")
	f(`{`, CodeMalformedJSON, "$")
	f(`{"resource_limits": {}} x`, CodeMalformedJSON, "$")
	f(`[]`, CodeWrongType, "$")
	f(`{}`, CodeMissingAttribute, "$.resource_limits")
	f(`{"resource_limits": {"cpu": -1}}`, CodeInvalidValue, "$.resource_limits.cpu")
	f(`{"resource_limits": {"cpu": "1"}}`, CodeWrongType, "$.resource_limits.cpu")
	f(`{"resource_limits": {"cpu": null}}`, CodeWrongType, "$.resource_limits.cpu")
	f(`{"resource_limits": {"memory": 1.5}}`, CodeInvalidValue, "$.resource_limits.memory")
	f(`{"resource_limits": {"memory": 1e300}}`, CodeInvalidValue, "$.resource_limits.memory")
	f(`{"resource_limits": {"memory": 1e400}}`, CodeInvalidValue, "$.resource_limits.memory")
	f(`{"resource_limits": {"memory": 1152921504606846976}}`, CodeInvalidValue, "$.resource_limits.memory")
	f(`{"resource_limits": {"memory": 9007199254740993}}`, CodeInvalidValue, "$.resource_limits.memory")
	f(`{"resource_limits": {"tpu": 1}}`, CodeUnknownAttribute, "$.resource_limits.tpu")
	f(`{"resource_limits": {}, "taggs": []}`, CodeUnknownAttribute, "$.taggs")
	f(`{"resource_limits": {}, "tags": ["a", 1]}`, CodeWrongType, "$.tags[1]")
	f(`{"resource_limits": {}, "tags": [""]}`, CodeInvalidValue, "$.tags[0]")
	f(`{"resource_limits": {}, "allocations": {}}`, CodeWrongType, "$.allocations")
	f(`{"resource_limits": {}, "allocations": [{"id": 17, "state": "running"}]}`, CodeWrongType, "$.allocations[0].id")
	f(`{"resource_limits": {}, "allocations": [{"id": "017", "state": "running"}]}`, CodeInvalidValue, "$.allocations[0].id")
	f(`{"resource_limits": {}, "allocations": [{"id": "18446744073709551616", "state": "running"}]}`, CodeInvalidValue, "$.allocations[0].id")
	f(`{"resource_limits": {}, "allocations": [{"id": "1", "state": "lost"}]}`, CodeInvalidValue, "$.allocations[0].state")
	f(`{"resource_limits": {}, "allocations": [{"id": "1"}]}`, CodeMissingAttribute, "$.allocations[0].state")
	f(`{"resource_limits": {}, "allocations": [{"state": "running"}]}`, CodeMissingAttribute, "$.allocations[0].id")
	f(`{"resource_limits": {}, "allocations": [{"id": "1", "state": "running", "x": 1}]}`, CodeUnknownAttribute, "$.allocations[0].x")
	f(`{"resource_limits": {}, "allocations": [{"id": "1", "state": "running", "resource_usage": {"cpu": -2}}]}`, CodeInvalidValue, "$.allocations[0].resource_usage.cpu")
	// The compact form gets the same errors as the spaced one.
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running"},{"id":"017","state":"running"}]}`, CodeInvalidValue, "$.allocations[1].id")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"lost"}]}`, CodeInvalidValue, "$.allocations[0].state")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running"}`, CodeMalformedJSON, "$")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running"}}`, CodeMalformedJSON, "$")
	// Origins: all three fields or none, each valid.
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","resources":{}}]}`, CodeMissingAttribute, "$.allocations[0].task_index")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running","task_index":0}]}`, CodeMissingAttribute, "$.allocations[0].operation_id")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a b","task_index":0,"resources":{}}]}`, CodeInvalidName, "$.allocations[0].operation_id")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":-1,"resources":{}}]}`, CodeInvalidValue, "$.allocations[0].task_index")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":0,"resources":{"cpu":-1}}]}`, CodeInvalidValue, "$.allocations[0].resources.cpu")
	f(`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":"0","resources":{}}]}`, CodeWrongType, "$.allocations[0].task_index")
	// A semantic error followed by broken JSON is reported as the syntax error.
	f(`{"resource_limits": {"cpu": -1}, `, CodeMalformedJSON, "$")
}

func TestParseNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "29.5", "0.07", "11.17", "9007199254740992", "9007199254740993",
		"1e3", "1E-7", "123456789012345678901234567890", "0.1000000000000000055511151231257827", "-3.25", "1e-400", "4.9e-324"} {
		f, _, _ := jsonscan.ParseNumber([]byte(s))
		want, _ := strconv.ParseFloat(s, 64)
		if f != want && !(math.IsNaN(f) && math.IsNaN(want)) {
			t.Errorf("ParseNumber(%s) = %v, want %v", s, f, want)
		}
	}
}

// ---- differential: the scanner against encoding/json and go-json ----

// refHeartbeat decodes a heartbeat with encoding/json into generic values
// and applies docs/api.md's rules to them: an independent implementation of
// Decode, for TestHeartbeatDifferential and FuzzHeartbeat.
func refHeartbeat(data []byte) (*Heartbeat, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, errors.New("trailing data")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	if hasDuplicateKeys(data) {
		return nil, errors.New("duplicate key")
	}
	h := &Heartbeat{}
	res := func(v any) (resource.Vec, error) {
		var out resource.Vec
		m, ok := v.(map[string]any)
		if !ok {
			return out, errors.New("resources: not an object")
		}
		for k, x := range m {
			kind, ok := resource.KindByName(k)
			if !ok {
				return out, errors.New("unknown resource")
			}
			n, ok := x.(json.Number)
			if !ok {
				return out, errors.New("not a number")
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || f < 0 || math.IsInf(f, 0) {
				return out, errors.New("bad number")
			}
			if kind == resource.CPU {
				if f*100 > resource.MaxAmount {
					return out, errors.New("too much cpu")
				}
				out[kind] = resource.Cores(f)
				continue
			}
			if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
				if u > resource.MaxAmount {
					return out, errors.New("above 2^53")
				}
				out[kind] = int64(u)
				continue
			}
			if f > resource.MaxAmount || f != math.Trunc(f) {
				return out, errors.New("not a whole number of at most 2^53")
			}
			out[kind] = int64(f)
		}
		return out, nil
	}
	lv, ok := m["resource_limits"]
	if !ok {
		return nil, errors.New("no limits")
	}
	var err error
	for k, x := range m {
		switch k {
		case "resource_limits":
			h.Limits, err = res(lv)
		case "resource_usage":
			h.Usage, err = res(x)
		case "schedulable":
			b, ok := x.(bool)
			if !ok {
				return nil, errors.New("schedulable: not a boolean")
			}
			h.Unschedulable = !b
		case "tags":
			a, ok := x.([]any)
			if !ok {
				return nil, errors.New("tags: not an array")
			}
			h.Tags = []string{}
			for _, tv := range a {
				s, ok := tv.(string)
				if !ok || len(s) == 0 || len(s) > MaxTagLength || len(h.Tags) >= MaxHeartbeatTags {
					return nil, errors.New("bad tag")
				}
				h.Tags = append(h.Tags, s)
			}
		case "allocations":
			a, ok := x.([]any)
			if !ok {
				return nil, errors.New("allocations: not an array")
			}
			h.Allocations, h.AllocationUsage = []schedule.AllocationReport{}, []resource.Vec{}
			h.AllocationOrigins = []schedule.AllocationOrigin{}
			h.Reasons = nil
			for _, av := range a {
				am, ok := av.(map[string]any)
				if !ok {
					return nil, errors.New("allocation: not an object")
				}
				var r schedule.AllocationReport
				var u resource.Vec
				ids, ok := am["id"].(string)
				if !ok {
					return nil, errors.New("allocation id")
				}
				id, perr := strconv.ParseUint(ids, 10, 64)
				if perr != nil || strings.HasPrefix(ids, "+") || len(ids) > 1 && ids[0] == '0' {
					return nil, errors.New("allocation id")
				}
				r.ID = id
				st, ok := am["state"].(string)
				if !ok {
					return nil, errors.New("allocation state")
				}
				if r.State, ok = allocationState([]byte(st)); !ok {
					return nil, errors.New("allocation state")
				}
				var o schedule.AllocationOrigin
				origin := 0
				for k, x := range am {
					switch k {
					case "id", "state":
					case "reason":
						text, ok := x.(string)
						if !ok || len(text) > MaxReasonLength {
							return nil, errors.New("reason")
						}
						h.Reasons = append(h.Reasons, Reason{Index: len(h.Allocations), Text: []byte(text)})
					case "resource_usage":
						if u, err = res(x); err != nil {
							return nil, err
						}
						r.HasUsage = true
					case "operation_id":
						op, ok := x.(string)
						if !ok || !tree.ValidName(op) {
							return nil, errors.New("operation_id")
						}
						o.Operation = []byte(op)
						origin++
					case "task_index":
						n, ok := x.(json.Number)
						if !ok {
							return nil, errors.New("task_index: not a number")
						}
						f, err := strconv.ParseFloat(string(n), 64)
						if err != nil || f < 0 || f != math.Trunc(f) || f > maxTaskIndex || strings.HasPrefix(string(n), "-") {
							return nil, errors.New("task_index")
						}
						o.Task = int(f)
						origin++
					case "resources":
						if o.Resources, err = res(x); err != nil {
							return nil, err
						}
						origin++
					default:
						return nil, errors.New("allocation key")
					}
				}
				switch origin {
				case 0:
				case 3:
					r.HasOrigin = true
				default:
					return nil, errors.New("a partial origin")
				}
				if r.State == schedule.AllocRefused {
					h.Refused++
				}
				h.Allocations = append(h.Allocations, r)
				h.AllocationUsage = append(h.AllocationUsage, u)
				h.AllocationOrigins = append(h.AllocationOrigins, o)
			}
			// AllocationUsage and AllocationOrigins end at the last report
			// with a usage and an origin.
			for len(h.AllocationUsage) > 0 && !h.Allocations[len(h.AllocationUsage)-1].HasUsage {
				h.AllocationUsage = h.AllocationUsage[:len(h.AllocationUsage)-1]
			}
			for len(h.AllocationOrigins) > 0 && !h.Allocations[len(h.AllocationOrigins)-1].HasOrigin {
				h.AllocationOrigins = h.AllocationOrigins[:len(h.AllocationOrigins)-1]
			}
		default:
			return nil, errors.New("unknown key")
		}
		if err != nil {
			return nil, err
		}
	}
	return h, nil
}

// hasDuplicateKeys reports whether an object of the (valid) JSON data has a
// key twice, comparing keys after unescaping.
func hasDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj    bool
		keys   map[string]bool
		expect bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].expect = true
				}
				continue
			}
			k := tok.(string)
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object expects a key again.
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].expect = true
		}
	}
}

// goccyHeartbeat is the heartbeat as go-json decodes typed values.
type goccyHeartbeat struct {
	ResourceLimits map[string]float64 `json:"resource_limits"`
	Tags           []string           `json:"tags"`
	Allocations    []struct {
		ID    uint64 `json:"id,string"`
		State string `json:"state"`
	} `json:"allocations"`
}

// checkDifferential decodes data three ways and reports disagreements.
func checkDifferential(t *testing.T, data []byte) {
	t.Helper()
	var h Heartbeat
	err := h.Decode(data, nil)
	ref, refErr := refHeartbeat(data)
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%q: Decode: %v; encoding/json reference: %v", data, err, refErr)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Code == "" || !strings.HasPrefix(e.Path, "$") {
			t.Fatalf("%q: error %#v has no code or path", data, err)
		}
		return
	}
	norm := func(h *Heartbeat) string {
		origins := ""
		for _, o := range h.AllocationOrigins {
			origins += fmt.Sprintf("{%q %d %v}", o.Operation, o.Task, o.Resources)
		}
		reasons := ""
		for _, r := range h.Reasons {
			reasons += fmt.Sprintf("{%d %q}", r.Index, r.Text)
		}
		return fmt.Sprintf("%v %v %q %v %v %s unschedulable %v refused %d reasons %s", h.Limits, h.Usage, h.Tags, h.Allocations, h.AllocationUsage, origins,
			h.Unschedulable, h.Refused, reasons)
	}
	h.Tags, h.Allocations, h.AllocationUsage = nonNil(h.Tags), nonNil(h.Allocations), nonNil(h.AllocationUsage)
	ref.Tags, ref.Allocations, ref.AllocationUsage = nonNil(ref.Tags), nonNil(ref.Allocations), nonNil(ref.AllocationUsage)
	if norm(&h) != norm(ref) {
		t.Fatalf("%q:\nDecode    %s\nreference %s", data, norm(&h), norm(ref))
	}
	var g goccyHeartbeat
	if err := gojson.Unmarshal(data, &g); err != nil {
		t.Fatalf("%q: go-json rejects what Decode accepts: %v", data, err)
	}
	if len(g.Allocations) != len(h.Allocations) || len(g.Tags) != len(h.Tags) {
		t.Fatalf("%q: go-json decodes %d allocations and %d tags, Decode %d and %d", data, len(g.Allocations), len(g.Tags), len(h.Allocations), len(h.Tags))
	}
	for i := range g.Allocations {
		if g.Allocations[i].ID != h.Allocations[i].ID || g.Allocations[i].State != AllocationStateName(h.Allocations[i].State) {
			t.Fatalf("%q: allocation %d: go-json %+v, Decode %+v", data, i, g.Allocations[i], h.Allocations[i])
		}
	}
	for i := range g.Tags {
		if g.Tags[i] != h.Tags[i] {
			t.Fatalf("%q: tag %d: go-json %q, Decode %q", data, i, g.Tags[i], h.Tags[i])
		}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

var heartbeatSeeds = []string{
	apiHeartbeat,
	`{"resource_limits": {}}`,
	`{"resource_limits":{"cpu":0.07,"gpu":8},"tags":[],"allocations":[]}`,
	`{"allocations": [{"state": "aborted", "id": "18446744073709551615"}], "resource_limits": {"network": 0}}`,
	`{"resource_limits": {"cpu": 1}, "resource_limits": {"memory": 2}}`,
	`{"resource_limits": {"cpu": 1, "cpu": 2}}`,
	`{"resource_limits": {}, "allocations": [{"id": "1", "state": "", "state": "failed"}]}`,
	`{"resource_limits": {}, "allocations": [{"id": "1", "state": "running"}], "tags": [{"a": 1, "a": 2}]}`,
	"{\"resource_limits\": {\"c\\u0070u\": 1.5}, \"tags\": [\"\\ud83d\\ude00\", \"\\u00e9\", \"a\\\"b\", \"\xff\"]}",
	` { "resource_limits" : { "cpu" : 1e2 , "memory" : 4E3 } } `,
	`{"resource_limits": {"memory": 9007199254740992}}`,
	`{"resource_limits": {"memory": 9007199254740993}}`,
	`{"resource_limits": {"cpu": 90071992547409.92}}`,
	`{"resource_limits": {"cpu": -0}}`,
	`{"resource_limits": {"cpu": 1}, "allocations": [{"id": "1", "state": "running"}, {"id": "1", "state": "completed"}]}`,
	`{"resource_limits": {"cpu": 1.}}`,
	`{"resource_limits": {"cpu": 01}}`,
	`{"resource_limits": {"cpu": 1}`,
	`{"resource_limits": {"cpu": 1}} {}`,
	`{"resource_limits": [1, 2]}`,
	`{"tags": "ssd", "resource_limits": {}}`,
	`null`,
	`"x"`,
	"{\"resource_limits\": {}, \"tags\": [\"a\x01\"]}",
	// The compact form nodes write (compactAllocation) and its near misses.
	`{"resource_limits":{"cpu":32},"allocations":[{"id":"17179869190","state":"running"},{"id":"7","state":"completed"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"07","state":"running"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"18446744073709551616","state":"running"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"lost"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"runn\u0069ng"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"\u0031","state":"running"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running"},{"id":"1","state":"running"}x]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running" }]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","resource_usage":{"cpu":1}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running"}}]}`,
	// Origins (docs/api.md#node-heartbeats): the compact form loadgen echoes, repeated ones,
	// and near misses the general path takes.
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"op-1","task_index":0,"resources":{"user_slots":1,"cpu":0.5,"memory":2147483648}},{"id":"2","state":"running","operation_id":"op-1","task_index":0,"resources":{"user_slots":1,"cpu":0.5,"memory":2147483648}},{"id":"3","state":"running","operation_id":"op-2","task_index":1,"resources":{}},{"id":"4","state":"completed"},{"id":"5","state":"running","operation_id":"op-1","task_index":0,"resources":{"user_slots":1,"cpu":0.5,"memory":2147483648}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":12,"resources":{"cpu":1.25,"gpu":0}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":1,"resources":{"cpu":1.255}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":1,"resources":{"cpu":1e2}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":1,"resources":{"memory":9007199254740993}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":1,"resources":{"memory":999999999999999}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":1,"resources":{"cpu":1,"cpu":2}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":01,"resources":{}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":-1,"resources":{}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":1.5,"resources":{}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a b","task_index":1,"resources":{}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"..","task_index":1,"resources":{}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","resources":{}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":0,"resources":{"tpu":1}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":0,"resources":{"cpu":01}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","operation_id":"a","task_index":0,"resources":{"cpu":1}},{"id":"2","state":"running","operation_id":"a","task_index":0,"resources":{"cpu":1}}x]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"completed","operation_id":"a","task_index":0,"resources":{"cpu":1}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"running","resource_usage":{"cpu":2},"operation_id":"a","task_index":0,"resources":{"cpu":1}}]}`,
	// Cordons and refusals (fairsched-kube).
	`{"resource_limits":{},"schedulable":false,"allocations":[{"id":"1","state":"running"}]}`,
	`{"schedulable": true, "resource_limits":{}}`,
	`{"resource_limits":{},"schedulable":0}`,
	`{"resource_limits":{},"schedulable":null}`,
	`{"resource_limits":{},"schedulable":false,"schedulable":true}`,
	`{"resource_limits":{},"schedulable":fals}`,
	`{"resource_limits":{},"allocations":[{"id":"1","state":"refused"},{"id":"2","state":"running"},{"id":"3","state":"refused","reason":"no port 80 free"}]}`,
	`{"resource_limits":{},"allocations":[{"reason":"a\u00e9\n","id":"3","state":"refused","operation_id":"a","task_index":0,"resources":{"cpu":1}}]}`,
	`{"resource_limits":{},"allocations":[{"id":"3","state":"refused","reason":""}]}`,
	`{"resource_limits":{},"allocations":[{"id":"3","state":"refused","reason":7}]}`,
	`{"resource_limits":{},"allocations":[{"id":"3","state":"refused","reason":"a","reason":"b"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"3","state":"running","reason":"` + strings.Repeat("r", MaxReasonLength) + `"}]}`,
	`{"resource_limits":{},"allocations":[{"id":"3","state":"refused","reason":"` + strings.Repeat("r", MaxReasonLength+1) + `"}]}`,
}

func TestHeartbeatDifferential(t *testing.T) {
	for _, s := range heartbeatSeeds {
		checkDifferential(t, []byte(s))
	}
	for _, s := range heartbeatSeeds {
		// Every prefix is a broken body.
		for i := range s {
			checkDifferential(t, []byte(s[:i]))
		}
	}
}

func FuzzHeartbeat(f *testing.F) {
	for _, s := range heartbeatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDifferential(t, data)
	})
}

func TestAppendHeartbeatResponse(t *testing.T) {
	r := &schedule.Response{
		Start:   []schedule.StartDecision{{Allocation: 1802, Operation: "op-17", Resources: resource.Vec{resource.CPU: 150, resource.Memory: 4294967296}}},
		Preempt: []schedule.PreemptDecision{{Allocation: 1783, Operation: "op-3", Reason: schedule.PreemptForStarving, Timeout: 10 * clock.Second, ForAllocation: 1802, ForOperation: "op-21"}},
		Abort:   []schedule.AbortDecision{{Allocation: 1650, Operation: "op-9", Reason: schedule.AbortOperationFinished, OperationState: schedule.StateAborted}, {Allocation: 7, Reason: schedule.AbortUnknownAllocation}},
	}
	got := string(AppendHeartbeatResponse(nil, r))
	want := `{"allocations_to_start":[{"id":"1802","operation_id":"op-17","task_index":0,"resources":{"cpu":1.5,"memory":4294967296}}],` +
		`"allocations_to_preempt":[{"id":"1783","operation_id":"op-3","reason":"preempted to start allocation 1802 of operation op-21 (starving)","timeout_s":10}],` +
		`"allocations_to_abort":[{"id":"1650","operation_id":"op-9","reason":"operation op-9 aborted"},{"id":"7","reason":"allocation 7 is unknown to the scheduler"}]}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatal("not JSON")
	}
	if got := string(AppendHeartbeatResponse(nil, &schedule.Response{})); got != `{"allocations_to_start":[],"allocations_to_preempt":[],"allocations_to_abort":[]}` {
		t.Fatal(got)
	}
}

func TestAppendAmount(t *testing.T) {
	f := func(k resource.Kind, x int64, want string) {
		t.Helper()
		if got := string(appendAmount(nil, k, x)); got != want {
			t.Fatalf("appendAmount(%v, %d) = %s, want %s", k, x, got, want)
		}
	}
	f(resource.CPU, 0, "0")
	f(resource.CPU, 7, "0.07")
	f(resource.CPU, 1117, "11.17")
	f(resource.CPU, 2950, "29.5")
	f(resource.CPU, -150, "-1.5")
	f(resource.Memory, 137438953472, "137438953472")
}

func TestInterner(t *testing.T) {
	in := NewInterner(2)
	a := in.Intern([]byte("a"))
	if b := in.Intern([]byte("a")); b != a || in.Len() != 1 {
		t.Fatal("not interned")
	}
	in.Intern([]byte("b"))
	in.Intern([]byte("c")) // over the limit: not kept
	if in.Len() != 2 {
		t.Fatalf("holds %d strings, want 2", in.Len())
	}
	var nilIn *Interner
	if nilIn.Intern([]byte("x")) != "x" {
		t.Fatal("nil interner")
	}
}
