// Package wire holds fairsched's JSON wire formats: decoders that turn request
// bodies into core values and hand-written append encoders for responses
// (api.md). It imports core/ but nothing of the facade, so loadgen may use it.
//
// Decoders validate everything before returning and report the first problem
// as an *Error naming the JSON path of the offending field, e.g.
//
//	$.tree.children[1].children[0].demand.cpu: cannot use -1: want a non-negative number
//
// Encoders are append-style (style.md §3): they write into a caller-owned
// buffer, allocate nothing when it is large enough, never iterate maps, and so
// produce the same bytes for the same input.
package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
)

// Error is a validation error of a request body (api.md §1). Code is stable
// snake_case, Message a sentence naming the field and the value, Path the JSON
// path of the offending field ("$" for the whole body).
type Error struct {
	Code    string
	Message string
	Path    string
}

// Error returns "<path>: <message>".
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Error codes. Codes passed through from core/tree (tree.CodeFifoChildPool,
// …) keep their values.
const (
	// CodeMalformedJSON: the body is not one JSON value.
	CodeMalformedJSON = "malformed_json"
	// CodeWrongType: a value has the wrong JSON type (a string for a number, …).
	CodeWrongType = "wrong_type"
	// CodeInvalidValue: a value of the right type is out of range or unknown.
	CodeInvalidValue = "invalid_value"
	// CodeUnknownAttribute: an object has a key the format does not know.
	CodeUnknownAttribute = "unknown_attribute"
	// CodeMissingAttribute: a required key is absent.
	CodeMissingAttribute = "missing_attribute"
	// CodeUnknownElement: a name refers to no pool or operation.
	CodeUnknownElement = "unknown_element"
	// CodeDuplicateKey: an object has a key twice (heartbeats refuse it).
	CodeDuplicateKey = "duplicate_key"
	// CodeDuplicateName: two elements share a name.
	CodeDuplicateName = "duplicate_name"
	// CodeInvalidName: a name is not 1–128 characters of [A-Za-z0-9._:-].
	CodeInvalidName = tree.CodeInvalidName
	// CodeCycle: a pool would become its own ancestor. Snapshots nest pools,
	// so only the pool API (api.md §2) can produce it.
	CodeCycle = tree.CodeCycle
)

func errorf(code, path, msg string) *Error {
	return &Error{Code: code, Message: msg, Path: path}
}

// DecodeSnapshot decodes and validates a solve snapshot (api.md §6).
//
// Resource amounts follow api.md §1: cpu is converted to centi-cores (rounded
// to the nearest one), the other resources must be whole numbers; all are
// non-negative and at most 2^53 (cpu: 2^53 centi-cores). accumulated_resource_volume
// is in resource·seconds and stored with cpu in centi-core·seconds (×100) in
// Element.AccumulatedVolume. A missing config field takes its value from
// fairshare.DefaultConfig; an update's partial config overrides the snapshot's
// config for that update only, and Update.Config holds the full result (nil
// when the update names no config). Update.Total is nil when the update names
// no total_resources; like the config, it applies to its update only. Assignments of an update's "set" are sorted by
// key. A snapshot without "updates" runs one first update (elapsed_s null).
//
// The returned error is always an *Error. data is not retained.
func DecodeSnapshot(data []byte) (*snapshot.Snapshot, error) {
	v, e := decodeJSON(data)
	if e != nil {
		return nil, e
	}
	d := snapDecoder{names: make(map[string]nameInfo)}
	s, e := d.snapshot(v)
	if e != nil {
		return nil, e
	}
	return s, nil
}

// decodeJSON parses data into generic values, numbers as json.Number.
func decodeJSON(data []byte) (any, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errorf(CodeMalformedJSON, "$", "cannot parse an empty body: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, syntaxError(data, err)
	}
	var extra any
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, syntaxError(data, err)
		}
		return nil, errorf(CodeMalformedJSON, "$", "cannot parse JSON: want one value, found more after it")
	}
	return v, nil
}

func syntaxError(data []byte, err error) *Error {
	var se *json.SyntaxError
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of input"
	} else if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(data)) {
		line, col := lineCol(data[:se.Offset-1])
		msg = "line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + ": " + msg
	}
	return errorf(CodeMalformedJSON, "$", "cannot parse JSON: "+msg)
}

// lineCol returns the 1-based line and column (in bytes) just after prefix.
func lineCol(prefix []byte) (line, col int) {
	line = 1 + bytes.Count(prefix, []byte{'\n'})
	col = len(prefix) - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

// ---- paths and values ----

// key returns path.k, or path["k"] when k is not a plain identifier.
func key(path, k string) string {
	plain := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return path + "." + k
	}
	return string(appendString(append([]byte(path), '['), k)) + "]"
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// describe renders a JSON value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return string(v)
	case string:
		const maxLen = 64
		if len(v) > maxLen {
			v = v[:maxLen] + "…"
		}
		return string(appendString(nil, v))
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value"
}

func wrongType(path string, v any, want string) *Error {
	return errorf(CodeWrongType, path, "cannot use "+describe(v)+": want "+want)
}

func invalid(path string, v any, want string) *Error {
	return errorf(CodeInvalidValue, path, "cannot use "+describe(v)+": want "+want)
}

func asObject(path string, v any) (map[string]any, *Error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, wrongType(path, v, "an object")
	}
	return m, nil
}

func asArray(path string, v any) ([]any, *Error) {
	a, ok := v.([]any)
	if !ok {
		return nil, wrongType(path, v, "an array")
	}
	return a, nil
}

func asString(path string, v any) (string, *Error) {
	s, ok := v.(string)
	if !ok {
		return "", wrongType(path, v, "a string")
	}
	return s, nil
}

func asBool(path string, v any) (bool, *Error) {
	b, ok := v.(bool)
	if !ok {
		return false, wrongType(path, v, "true or false")
	}
	return b, nil
}

// asNumber returns a finite number.
func asNumber(path string, v any) (float64, *Error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, wrongType(path, v, "a number")
	}
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, invalid(path, v, "a finite number")
	}
	return x, nil
}

// asRange returns a number in [lo, hi] (hi may be +Inf).
func asRange(path string, v any, lo, hi float64, want string) (float64, *Error) {
	x, e := asNumber(path, v)
	if e != nil {
		return 0, e
	}
	if x < lo || x > hi {
		return 0, invalid(path, v, want)
	}
	return x, nil
}

// asPositive returns a finite number > 0.
func asPositive(path string, v any) (float64, *Error) {
	x, e := asNumber(path, v)
	if e != nil {
		return 0, e
	}
	if x <= 0 {
		return 0, invalid(path, v, "a positive number")
	}
	return x, nil
}

// asCount returns a whole number in [0, 2^53].
func asCount(path string, v any) (int64, *Error) {
	x, e := asNumber(path, v)
	if e != nil {
		return 0, e
	}
	if x < 0 || x > resource.MaxAmount || x != math.Trunc(x) {
		return 0, invalid(path, v, "a whole number in [0, 2^53]")
	}
	return int64(x), nil
}

// sortedKeys returns m's keys in order, so that errors are deterministic.
func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// unknownKey reports an unknown key k of an object whose keys are known,
// suggesting the nearest known one.
func unknownKey(path, k string, known []string, what string) *Error {
	msg := "cannot use unknown attribute " + describe(k) + " of " + what
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(k, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		msg += `: did you mean "` + best + `"?`
	}
	return errorf(CodeUnknownAttribute, key(path, k), msg)
}

// editDistance returns the Levenshtein distance of a and b, or limit when it
// is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	var rowBuf [65]int
	row := rowBuf[:len(b)+1]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return min(row[len(b)], limit)
}

// ---- resources ----

var resourceNames = func() []string {
	n := resource.Names()
	return n[:]
}()

// amount decodes one resource amount (api.md §1): cpu in cores with two
// decimal digits (rounded to centi-cores), the others whole numbers.
func amount(path string, k resource.Kind, v any) (int64, *Error) {
	x, e := asNumber(path, v)
	if e != nil {
		return 0, e
	}
	if x < 0 {
		return 0, invalid(path, v, "a non-negative number")
	}
	if k == resource.CPU {
		if x*resource.CPUScale > resource.MaxAmount {
			return 0, invalid(path, v, "at most 2^53 centi-cores (90071992547409.92 cpu)")
		}
		return resource.Cores(x), nil
	}
	if x > resource.MaxAmount {
		return 0, invalid(path, v, "at most 2^53 (9007199254740992)")
	}
	if x != math.Trunc(x) {
		return 0, invalid(path, v, "a whole number")
	}
	return int64(x), nil
}

// resources decodes a resource object; components not given stay unset.
func resources(path string, v any) (tree.PartialVec, *Error) {
	var p tree.PartialVec
	m, e := asObject(path, v)
	if e != nil {
		return p, e
	}
	for _, name := range sortedKeys(m) {
		k, ok := resource.KindByName(name)
		if !ok {
			return p, errorf(CodeUnknownAttribute, key(path, name),
				"cannot use unknown resource "+describe(name)+": want one of user_slots, cpu, gpu, memory, network")
		}
		x, e := amount(key(path, name), k, m[name])
		if e != nil {
			return p, e
		}
		p.V[k], p.Set[k] = x, true
	}
	return p, nil
}

// fullResources decodes a resource object whose missing components are 0.
func fullResources(path string, v any) (resource.Vec, *Error) {
	p, e := resources(path, v)
	return p.V, e
}

// volumes decodes an accumulated volume: non-negative finite resource·seconds,
// stored with cpu in centi-core·seconds.
func volumes(path string, v any) ([resource.Count]float64, *Error) {
	var vol [resource.Count]float64
	m, e := asObject(path, v)
	if e != nil {
		return vol, e
	}
	for _, name := range sortedKeys(m) {
		k, ok := resource.KindByName(name)
		if !ok {
			return vol, errorf(CodeUnknownAttribute, key(path, name),
				"cannot use unknown resource "+describe(name)+": want one of user_slots, cpu, gpu, memory, network")
		}
		x, e := asRange(key(path, name), m[name], 0, math.MaxFloat64/resource.CPUScale, "a non-negative number")
		if e != nil {
			return vol, e
		}
		if k == resource.CPU {
			x *= resource.CPUScale
		}
		vol[k] = x
	}
	return vol, nil
}

// ---- snapshot ----

type nameInfo struct {
	path string // JSON path of the element
	isOp bool
}

type snapDecoder struct {
	names map[string]nameInfo
}

var snapshotKeys = []string{"total_resources", "config", "tree", "updates"}

func (d *snapDecoder) snapshot(v any) (*snapshot.Snapshot, *Error) {
	m, e := asObject("$", v)
	if e != nil {
		return nil, e
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(snapshotKeys, k) {
			return nil, unknownKey("$", k, snapshotKeys, "a snapshot")
		}
	}
	s := &snapshot.Snapshot{Config: fairshare.DefaultConfig()}
	tv, ok := m["total_resources"]
	if !ok {
		return nil, errorf(CodeMissingAttribute, "$.total_resources", "cannot solve without total_resources: want the cluster's resources")
	}
	if s.Total, e = fullResources("$.total_resources", tv); e != nil {
		return nil, e
	}
	if cv, ok := m["config"]; ok {
		if s.Config, e = config("$.config", cv, s.Config); e != nil {
			return nil, e
		}
	}
	rv, ok := m["tree"]
	if !ok {
		return nil, errorf(CodeMissingAttribute, "$.tree", "cannot solve without a tree: want {\"children\": [...]}")
	}
	if e = d.root("$.tree", rv, &s.Root); e != nil {
		return nil, e
	}
	uv, ok := m["updates"]
	if !ok {
		s.Updates = []snapshot.Update{{}}
		return s, nil
	}
	if s.Updates, e = d.updates("$.updates", uv, s.Config); e != nil {
		return nil, e
	}
	return s, nil
}

var (
	configKeys   = []string{"main_resource", "integral_guarantees", "enable_step_function_for_gang_operations", "enable_improved_fair_share_by_fit_factor_computation", "forbid_immediate_operations_in_root", "infer_weight_from_guarantees_share_multiplier"}
	configIGKeys = []string{"smooth_period_s", "pool_capacity_saturation_period_s", "relaxed_share_multiplier_limit", "should_distribute_free_volume_among_children"}
)

// config applies the fields of a (partial) tree config to c.
func config(path string, v any, c fairshare.Config) (fairshare.Config, *Error) {
	m, e := asObject(path, v)
	if e != nil {
		return c, e
	}
	for _, k := range sortedKeys(m) {
		p, x := key(path, k), m[k]
		switch k {
		case "main_resource":
			var s string
			if s, e = asString(p, x); e == nil {
				kind, ok := resource.KindByName(s)
				if !ok {
					e = invalid(p, x, "one of user_slots, cpu, gpu, memory, network")
				}
				c.MainResource = kind
			}
		case "integral_guarantees":
			c, e = configIntegral(p, x, c)
		case "enable_step_function_for_gang_operations":
			c.EnableStepFunctionForGangOperations, e = asBool(p, x)
		case "enable_improved_fair_share_by_fit_factor_computation":
			c.EnableImprovedFitFactor, e = asBool(p, x)
		case "forbid_immediate_operations_in_root":
			// NB: accepted for compatibility with tree configs; a solve
			// places no operations, so it has no effect.
			_, e = asBool(p, x)
		case "infer_weight_from_guarantees_share_multiplier":
			if x == nil {
				c.InferWeightFromGuaranteesShareMultiplier = tree.OptFloat{}
				break
			}
			var f float64
			if f, e = asRange(p, x, 1, math.MaxFloat64, "null or a number of at least 1"); e == nil {
				c.InferWeightFromGuaranteesShareMultiplier = tree.Some(f)
			}
		default:
			e = unknownKey(path, k, configKeys, "a tree config")
		}
		if e != nil {
			return c, e
		}
	}
	return c, nil
}

func configIntegral(path string, v any, c fairshare.Config) (fairshare.Config, *Error) {
	m, e := asObject(path, v)
	if e != nil {
		return c, e
	}
	for _, k := range sortedKeys(m) {
		p, x := key(path, k), m[k]
		switch k {
		case "smooth_period_s":
			c.SmoothPeriodS, e = asPositive(p, x)
		case "pool_capacity_saturation_period_s":
			c.PoolCapacitySaturationPeriodS, e = asPositive(p, x)
		case "relaxed_share_multiplier_limit":
			c.RelaxedShareMultiplierLimit, e = asRange(p, x, 1, 10, "a number in [1, 10]")
		case "should_distribute_free_volume_among_children":
			c.ShouldDistributeFreeVolumeAmongChildren, e = asBool(p, x)
		default:
			e = unknownKey(path, k, configIGKeys, "the tree's integral_guarantees")
		}
		if e != nil {
			return c, e
		}
	}
	return c, nil
}

// ---- tree ----

var (
	rootKeys = []string{"children"}
	poolKeys = []string{"pool", "weight", "mode", "strong_guarantee_resources", "min_share_resources",
		"resource_limits", "max_operation_count", "max_running_operation_count", "fifo_sort_parameters",
		"enable_lightweight_operations", "integral_guarantees", "accumulated_resource_volume",
		"fair_share_starvation_timeout_s", "fair_share_starvation_tolerance", "enable_aggressive_starvation",
		"allow_aggressive_preemption", "allow_normal_preemption", "non_preemptible_resource_usage_threshold",
		"compute_promised_guarantee_fair_share", "enable_priority_strong_guarantee_adjustment",
		"enable_priority_strong_guarantee_adjustment_donorship", "children"}
	poolIGKeys = []string{"guarantee_type", "resource_flow", "burst_guarantee_resources",
		"relaxed_share_multiplier_limit", "can_accept_free_volume", "should_distribute_free_volume_among_children"}
	opKeys = []string{"operation", "weight", "demand", "usage", "job_resources", "is_gang", "start_time_s",
		"resource_limits", "type", "pending_job_count", "pending_allocation_count"}
	// opTypes are the operation types of api.md §3; only vanilla may be lightweight.
	opTypes = []string{"map", "reduce", "map_reduce", "sort", "merge", "erase", "join_reduce", "remote_copy", "vanilla"}
)

func (d *snapDecoder) root(path string, v any, el *snapshot.Element) *Error {
	m, e := asObject(path, v)
	if e != nil {
		return e
	}
	for _, k := range sortedKeys(m) {
		if k == "children" {
			continue
		}
		if slices.Contains(poolKeys, k) {
			return errorf(CodeUnknownAttribute, key(path, k),
				"cannot configure the root pool with "+describe(k)+": the tree takes only \"children\"")
		}
		return unknownKey(path, k, rootKeys, "the tree")
	}
	el.Name, el.Path = tree.RootName, path
	if cv, ok := m["children"]; ok {
		if el.Children, e = d.children(key(path, "children"), cv, tree.ModeFairShare); e != nil {
			return e
		}
	}
	return nil
}

func (d *snapDecoder) children(path string, v any, parentMode tree.Mode) ([]snapshot.Element, *Error) {
	a, e := asArray(path, v)
	if e != nil {
		return nil, e
	}
	els := make([]snapshot.Element, len(a))
	for i, cv := range a {
		p := index(path, i)
		if e := d.element(p, cv, &els[i]); e != nil {
			return nil, e
		}
		if !els[i].IsOperation && parentMode == tree.ModeFIFO {
			return nil, errorf(tree.CodeFifoChildPool, key(p, "pool"),
				"cannot put pool "+describe(els[i].Name)+" in a fifo pool: fifo pools hold only operations")
		}
	}
	return els, nil
}

func (d *snapDecoder) element(path string, v any, el *snapshot.Element) *Error {
	m, e := asObject(path, v)
	if e != nil {
		return e
	}
	pv, isPool := m["pool"]
	ov, isOp := m["operation"]
	switch {
	case isPool && isOp:
		return errorf(CodeInvalidValue, path, "cannot have both \"pool\" and \"operation\": want exactly one")
	case !isPool && !isOp:
		return errorf(CodeMissingAttribute, path, "cannot tell a pool from an operation: want a \"pool\" or an \"operation\" name")
	}
	el.Path, el.IsOperation = path, isOp
	namePath, nv := key(path, "pool"), pv
	if isOp {
		namePath, nv = key(path, "operation"), ov
	}
	if el.Name, e = asString(namePath, nv); e != nil {
		return e
	}
	if !tree.ValidName(el.Name) {
		return errorf(CodeInvalidName, namePath, "cannot use "+describe(nv)+" as a name: want 1-128 characters of [A-Za-z0-9._:-]")
	}
	if prev, ok := d.names[el.Name]; ok {
		return errorf(CodeDuplicateName, namePath, "cannot use name "+describe(nv)+" again: "+prev.path+" has it")
	}
	d.names[el.Name] = nameInfo{path: path, isOp: isOp}
	if isOp {
		return d.operation(path, m, el)
	}
	return d.pool(path, m, el)
}

func (d *snapDecoder) pool(path string, m map[string]any, el *snapshot.Element) *Error {
	c := &el.Pool
	aliased := false // strong guarantee given as min_share_resources
	var e *Error
	for _, k := range sortedKeys(m) {
		p, x := key(path, k), m[k]
		switch k {
		case "pool":
		case "weight":
			c.Weight.V, e = asNumber(p, x)
			c.Weight.Set = true
		case "mode":
			var s string
			if s, e = asString(p, x); e == nil {
				switch s {
				case "fair_share":
					c.Mode = tree.ModeFairShare
				case "fifo":
					c.Mode = tree.ModeFIFO
				default:
					e = invalid(p, x, "\"fair_share\" or \"fifo\"")
				}
			}
		case "strong_guarantee_resources":
			c.StrongGuarantee, e = resources(p, x)
		case "min_share_resources":
			if _, both := m["strong_guarantee_resources"]; both {
				e = errorf(CodeInvalidValue, p, "cannot give both min_share_resources and strong_guarantee_resources: min_share_resources is its old name")
				break
			}
			c.StrongGuarantee, e = resources(p, x)
			aliased = true
		case "resource_limits":
			c.ResourceLimits, e = resources(p, x)
		case "max_operation_count":
			c.MaxOperationCount.V, e = asCount(p, x)
			c.MaxOperationCount.Set = true
		case "max_running_operation_count":
			c.MaxRunningOperationCount.V, e = asCount(p, x)
			c.MaxRunningOperationCount.Set = true
		case "fifo_sort_parameters":
			c.FifoSortParameters, e = fifoSortParameters(p, x)
		case "enable_lightweight_operations":
			c.EnableLightweightOperations, e = asBool(p, x)
		case "integral_guarantees":
			e = poolIntegral(p, x, &c.Integral)
		case "accumulated_resource_volume":
			el.AccumulatedVolume, e = volumes(p, x)
		case "fair_share_starvation_timeout_s":
			c.FairShareStarvationTimeout.V, e = asNumber(p, x)
			c.FairShareStarvationTimeout.Set = true
		case "fair_share_starvation_tolerance":
			c.FairShareStarvationTolerance.V, e = asNumber(p, x)
			c.FairShareStarvationTolerance.Set = true
		case "enable_aggressive_starvation":
			c.EnableAggressiveStarvation.V, e = asBool(p, x)
			c.EnableAggressiveStarvation.Set = true
		case "allow_aggressive_preemption":
			c.AllowAggressivePreemption.V, e = asBool(p, x)
			c.AllowAggressivePreemption.Set = true
		case "allow_normal_preemption":
			c.AllowNormalPreemption.V, e = asBool(p, x)
			c.AllowNormalPreemption.Set = true
		case "non_preemptible_resource_usage_threshold":
			c.NonPreemptibleResourceUsageThreshold, e = resources(p, x)
		case "compute_promised_guarantee_fair_share":
			c.ComputePromisedGuaranteeFairShare, e = asBool(p, x)
		case "enable_priority_strong_guarantee_adjustment":
			c.EnablePriorityStrongGuaranteeAdjustment, e = asBool(p, x)
		case "enable_priority_strong_guarantee_adjustment_donorship":
			c.EnablePriorityStrongGuaranteeAdjustmentDonorship, e = asBool(p, x)
		case "children":
			// Decoded below, once the mode is known.
		case "parent":
			e = errorf(CodeUnknownAttribute, p, "cannot use \"parent\" in a snapshot: a pool's parent is the pool whose \"children\" list it")
		default:
			if slices.Contains(opKeys, k) {
				e = errorf(CodeUnknownAttribute, p, "cannot give pool "+describe(el.Name)+" the operation attribute "+describe(k))
			} else {
				e = unknownKey(path, k, poolKeys, "a pool")
			}
		}
		if e != nil {
			return e
		}
	}
	if err := tree.ValidatePool(c); err != nil {
		return treeError(path, err, aliased)
	}
	if cv, ok := m["children"]; ok {
		if el.Children, e = d.children(key(path, "children"), cv, c.Mode); e != nil {
			return e
		}
	}
	return nil
}

func fifoSortParameters(path string, v any) ([]tree.FifoSortParam, *Error) {
	a, e := asArray(path, v)
	if e != nil {
		return nil, e
	}
	ps := make([]tree.FifoSortParam, 0, len(a))
	for i, x := range a {
		p := index(path, i)
		s, e := asString(p, x)
		if e != nil {
			return nil, e
		}
		switch s {
		case "weight":
			ps = append(ps, tree.FifoWeight)
		case "start_time":
			ps = append(ps, tree.FifoStartTime)
		case "pending_job_count", "pending_allocation_count":
			ps = append(ps, tree.FifoPendingJobCount)
		default:
			return nil, invalid(p, x, "one of weight, start_time, pending_allocation_count (pending_job_count)")
		}
	}
	return ps, nil
}

func poolIntegral(path string, v any, ig *tree.IntegralConfig) *Error {
	m, e := asObject(path, v)
	if e != nil {
		return e
	}
	for _, k := range sortedKeys(m) {
		p, x := key(path, k), m[k]
		switch k {
		case "guarantee_type":
			var s string
			if s, e = asString(p, x); e == nil {
				switch s {
				case "none":
					ig.Type = tree.GuaranteeNone
				case "burst":
					ig.Type = tree.GuaranteeBurst
				case "relaxed":
					ig.Type = tree.GuaranteeRelaxed
				default:
					e = invalid(p, x, "one of none, burst, relaxed")
				}
			}
		case "resource_flow":
			ig.ResourceFlow, e = resources(p, x)
		case "burst_guarantee_resources":
			ig.BurstGuarantee, e = resources(p, x)
		case "relaxed_share_multiplier_limit":
			ig.RelaxedShareMultiplierLimit.V, e = asNumber(p, x)
			ig.RelaxedShareMultiplierLimit.Set = true
		case "can_accept_free_volume":
			ig.CanAcceptFreeVolume.V, e = asBool(p, x)
			ig.CanAcceptFreeVolume.Set = true
		case "should_distribute_free_volume_among_children":
			ig.ShouldDistributeFreeVolume.V, e = asBool(p, x)
			ig.ShouldDistributeFreeVolume.Set = true
		default:
			e = unknownKey(path, k, poolIGKeys, "a pool's integral_guarantees")
		}
		if e != nil {
			return e
		}
	}
	return nil
}

func (d *snapDecoder) operation(path string, m map[string]any, el *snapshot.Element) *Error {
	s := &el.Op
	var e *Error
	for _, k := range sortedKeys(m) {
		p, x := key(path, k), m[k]
		switch k {
		case "operation":
		case "weight":
			s.Weight.V, e = asNumber(p, x)
			s.Weight.Set = true
		case "demand":
			el.Demand, e = fullResources(p, x)
		case "usage":
			el.Usage, e = fullResources(p, x)
		case "job_resources":
			el.JobResources, e = fullResources(p, x)
		case "is_gang":
			s.IsGang, e = asBool(p, x)
		case "start_time_s":
			s.StartTime, e = asNumber(p, x)
		case "resource_limits":
			s.ResourceLimits, e = resources(p, x)
		case "type":
			var t string
			if t, e = asString(p, x); e == nil {
				if !slices.Contains(opTypes, t) {
					e = invalid(p, x, "one of "+strings.Join(opTypes, ", "))
				}
				s.Vanilla = t == "vanilla"
			}
		case "pending_job_count", "pending_allocation_count":
			// NB: validated but not kept: snapshot.Element has no pending
			// count yet, and the fair-share update does not use it.
			if _, both := m["pending_job_count"]; both && k == "pending_allocation_count" {
				e = errorf(CodeInvalidValue, p, "cannot give both pending_allocation_count and pending_job_count: pending_job_count is its old name")
				break
			}
			_, e = asCount(p, x)
		case "children":
			e = errorf(CodeUnknownAttribute, p, "cannot give operation "+describe(el.Name)+" children: only pools have them")
		default:
			if slices.Contains(poolKeys, k) {
				e = errorf(CodeUnknownAttribute, p, "cannot give operation "+describe(el.Name)+" the pool attribute "+describe(k))
			} else {
				e = unknownKey(path, k, opKeys, "an operation")
			}
		}
		if e != nil {
			return e
		}
	}
	if err := tree.ValidateOperation(s, el.Demand, el.Usage); err != nil {
		return treeError(path, err, false)
	}
	return nil
}

// treeError turns a core/tree validation error into an *Error whose path is
// the element's path followed by the error's field.
func treeError(path string, err error, aliased bool) *Error {
	var te *tree.Error
	if !errors.As(err, &te) {
		return errorf(CodeInvalidValue, path, err.Error())
	}
	p := path
	if te.Field != "" {
		field := te.Field
		if aliased && strings.HasPrefix(field, "strong_guarantee_resources") {
			field = "min_share_resources" + strings.TrimPrefix(field, "strong_guarantee_resources")
		}
		p = path + "." + field
	}
	return errorf(te.Code, p, te.Msg)
}

// ---- updates ----

var (
	updateKeys = []string{"elapsed_s", "label", "config", "total_resources", "set"}
)

func (d *snapDecoder) updates(path string, v any, cfg fairshare.Config) ([]snapshot.Update, *Error) {
	a, e := asArray(path, v)
	if e != nil {
		return nil, e
	}
	if len(a) == 0 {
		return nil, errorf(CodeInvalidValue, path, "cannot run an empty list of updates: want at least one, or no \"updates\" for one first update")
	}
	us := make([]snapshot.Update, len(a))
	for i, uv := range a {
		up := index(path, i)
		m, e := asObject(up, uv)
		if e != nil {
			return nil, e
		}
		u := &us[i]
		for _, k := range sortedKeys(m) {
			p, x := key(up, k), m[k]
			switch k {
			case "elapsed_s":
				if x != nil {
					u.Elapsed, e = asRange(p, x, 0, math.MaxFloat64, "null or a non-negative number of seconds")
					u.HasElapsed = true
				}
			case "label":
				u.Label, e = asString(p, x)
			case "config":
				// An update's config, like its total_resources, applies to that
				// update only: it overrides the snapshot's config.
				var c fairshare.Config
				if c, e = config(p, x, cfg); e == nil {
					u.Config = &c
				}
			case "total_resources":
				var t resource.Vec
				if t, e = fullResources(p, x); e == nil {
					u.Total = &t
				}
			case "set":
				u.Set, e = d.set(p, x)
			default:
				e = unknownKey(up, k, updateKeys, "an update")
			}
			if e != nil {
				return nil, e
			}
		}
	}
	return us, nil
}

func (d *snapDecoder) set(path string, v any) ([]snapshot.Assignment, *Error) {
	m, e := asObject(path, v)
	if e != nil {
		return nil, e
	}
	as := make([]snapshot.Assignment, 0, len(m))
	type setKey struct {
		name string
		attr snapshot.Attr
	}
	seen := make(map[setKey]string, len(m))
	for _, k := range sortedKeys(m) {
		p, x := key(path, k), m[k]
		dot := strings.LastIndexByte(k, '.')
		if dot < 0 {
			return nil, errorf(CodeInvalidValue, p, "cannot parse "+describe(k)+": want \"<element>.<attribute>\"")
		}
		name, attr := k[:dot], k[dot+1:]
		info, ok := d.names[name]
		if !ok {
			if name == tree.RootName {
				return nil, errorf(CodeInvalidValue, p, "cannot set attributes of the root pool")
			}
			return nil, errorf(CodeUnknownElement, p, "cannot find pool or operation "+describe(name))
		}
		kind := "pool"
		if info.isOp {
			kind = "operation"
		}
		a := snapshot.Assignment{Element: name, Path: p}
		switch attr {
		case "demand", "usage":
			if !info.isOp {
				return nil, errorf(CodeInvalidValue, p, "cannot set "+attr+" of pool "+describe(name)+": only operations have one")
			}
			a.Attr = snapshot.AttrDemand
			if attr == "usage" {
				a.Attr = snapshot.AttrUsage
			}
			var vec resource.Vec
			vec, e = fullResources(p, x)
			a.Vec = tree.Full(vec)
		case "weight":
			a.Attr = snapshot.AttrWeight
			if a.Num, e = asNumber(p, x); e == nil {
				if err := tree.ValidateOperation(&tree.OperationSpec{Weight: tree.Some(a.Num)}, resource.Vec{}, resource.Vec{}); err != nil {
					var te *tree.Error
					if errors.As(err, &te) {
						e = errorf(te.Code, p, te.Msg)
					} else {
						e = errorf(CodeInvalidValue, p, err.Error())
					}
				}
			}
		case "resource_limits":
			a.Attr = snapshot.AttrResourceLimits
			a.Vec, e = resources(p, x)
		case "strong_guarantee_resources", "min_share_resources":
			if info.isOp {
				return nil, errorf(CodeInvalidValue, p, "cannot set "+attr+" of operation "+describe(name)+": only pools have one")
			}
			a.Attr = snapshot.AttrStrongGuarantee
			a.Vec, e = resources(p, x)
		default:
			return nil, errorf(CodeUnknownAttribute, p, "cannot set unknown attribute "+describe(attr)+" of "+kind+" "+
				describe(name)+": want one of demand, usage, weight, resource_limits, strong_guarantee_resources")
		}
		if e != nil {
			return nil, e
		}
		if prev, dup := seen[setKey{name, a.Attr}]; dup {
			return nil, errorf(CodeInvalidValue, p, "cannot set "+attr+" of "+describe(name)+" twice: "+prev+" sets it too")
		}
		seen[setKey{name, a.Attr}] = p
		as = append(as, a)
	}
	return as, nil
}
