// Package wire holds fairsched's JSON wire formats: decoders that turn request
// bodies into core values and hand-written append encoders for responses
// (docs/api.md). It imports core/ but nothing of the facade, so loadgen may use it.
//
// Decoders validate everything before returning and report the first problem
// as an *Error naming the JSON path of the offending field, e.g.
//
//	$.tree.children[1].children[0].demand.cpu: cannot use -1: want a non-negative number
//
// Encoders are append-style: they write into a caller-owned
// buffer, allocate nothing when it is large enough, never iterate maps, and so
// produce the same bytes for the same input.
package wire

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// Error is a validation error of a request body (docs/api.md#errors): Code is stable
// snake_case, Message a sentence naming the field and the value, Path the
// JSON path of the offending field ("$" for the whole body). It is
// jsonpath.Error, which sim and loadgen share.
type Error = jsonpath.Error

// Error codes. The generic ones are internal/jsonpath's; codes passed through
// from core/tree (tree.CodeFifoChildPool, …) keep their values.
const (
	// CodeMalformedJSON: the body is not one JSON value.
	CodeMalformedJSON = jsonpath.CodeMalformedJSON
	// CodeWrongType: a value has the wrong JSON type (a string for a number, …).
	CodeWrongType = jsonpath.CodeWrongType
	// CodeInvalidValue: a value of the right type is out of range or unknown.
	CodeInvalidValue = jsonpath.CodeInvalidValue
	// CodeUnknownAttribute: an object has a key the format does not know.
	CodeUnknownAttribute = jsonpath.CodeUnknownAttribute
	// CodeMissingAttribute: a required key is absent.
	CodeMissingAttribute = jsonpath.CodeMissingAttribute
	// CodeUnknownElement: a name refers to no pool or operation.
	CodeUnknownElement = apierr.CodeUnknownElement
	// CodeDuplicateKey: an object has a key twice (heartbeats refuse it).
	CodeDuplicateKey = jsonpath.CodeDuplicateKey
	// CodeDuplicateName: two elements share a name.
	CodeDuplicateName = jsonpath.CodeDuplicateName
	// CodeInvalidName: a name is not 1–128 characters of [A-Za-z0-9._:-].
	CodeInvalidName = tree.CodeInvalidName
	// CodeCycle: a pool would become its own ancestor. Snapshots nest pools,
	// so only the pool API (docs/api.md#pools) can produce it.
	CodeCycle = tree.CodeCycle
)

// DecodeSnapshot decodes and validates a solve snapshot (docs/api.md#solve).
//
// Resource amounts follow docs/api.md#conventions: cpu is converted to centi-cores (rounded
// to the nearest one), the other resources must be whole numbers; all are
// non-negative and at most 2^53 (cpu: 2^53 centi-cores). accumulated_resource_volume
// is a finite non-negative float of any magnitude in resource·seconds and stored with cpu in centi-core·seconds (×100) in
// Element.AccumulatedVolume. A missing config field takes its value from
// fairshare.DefaultConfig; an update's partial config overrides the snapshot's
// config for that update only, and Update.Config holds the full result (nil
// when the update names no config). Update.Total is nil when the update names
// no total_resources; like the config, it applies to its update only. Assignments of an update's "set" are sorted by
// key. A snapshot without "updates" runs one first update (elapsed_s null).
//
// The returned error is always an *Error. data is not retained.
func DecodeSnapshot(data []byte) (*snapshot.Snapshot, error) {
	m, e := jsonpath.DecodeObject(data, "body")
	if e != nil {
		return nil, e
	}
	d := snapDecoder{names: make(map[string]nameInfo)}
	s, e := d.snapshot(m)
	if e != nil {
		return nil, e
	}
	return s, nil
}

// ---- resources ----

// resources decodes a resource object (docs/api.md#conventions); components not given stay
// unset.
func resources(path string, v any) (tree.PartialVec, *Error) {
	var p tree.PartialVec
	var e *Error
	p.V, p.Set, e = jsonpath.Resources(path, v)
	return p, e
}

// fullResources decodes a resource object whose missing components are 0.
func fullResources(path string, v any) (resource.Vec, *Error) {
	vec, _, e := jsonpath.Resources(path, v)
	return vec, e
}

// volumes decodes an accumulated volume: non-negative finite resource·seconds,
// stored with cpu in centi-core·seconds.
func volumes(path string, v any) ([resource.Count]float64, *Error) {
	var vol [resource.Count]float64
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return vol, e
	}
	for _, name := range jsonpath.SortedKeys(m) {
		k, ok := resource.KindByName(name)
		if !ok {
			return vol, jsonpath.UnknownResource(path, name)
		}
		x, e := jsonpath.Float(jsonpath.Key(path, name), m[name])
		if e != nil {
			return vol, e
		}
		switch {
		case x < 0:
			return vol, jsonpath.Invalid(jsonpath.Key(path, name), m[name], "a non-negative number")
		case k == resource.CPU && x > math.MaxFloat64/resource.CPUScale:
			// cpu is kept in centi-core·seconds, which must stay finite
			return vol, jsonpath.Invalid(jsonpath.Key(path, name), m[name], "at most 1.7976931348623157e306 core·seconds")
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

func (d *snapDecoder) snapshot(m map[string]any) (*snapshot.Snapshot, *Error) {
	if e := jsonpath.CheckKeys("$", m, snapshotKeys, "a snapshot"); e != nil {
		return nil, e
	}
	var e *Error
	s := &snapshot.Snapshot{Config: fairshare.DefaultConfig()}
	tv, ok := m["total_resources"]
	if !ok {
		return nil, jsonpath.NewError(CodeMissingAttribute, "$.total_resources", "cannot solve without total_resources: want the cluster's resources")
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
		return nil, jsonpath.NewError(CodeMissingAttribute, "$.tree", "cannot solve without a tree: want {\"children\": [...]}")
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

// configKeys are the keys of a tree config's fair-share settings
// (fairshare.Settings), the name of a nested object once; configMembers are
// the keys of each nested object ("integral_guarantees").
var configKeys, configMembers = objectKeys(fairshare.Settings())

// objectKeys returns the keys of an object holding the settings rows, a
// nested object's name once in place of its members' dotted keys, and the
// members of each nested object.
func objectKeys[C any](rows []settings.Setting[C]) (keys []string, members map[string][]string) {
	members = map[string][]string{}
	for i := range rows {
		st := &rows[i]
		obj := st.Object()
		if obj == "" {
			keys = append(keys, st.Key)
			continue
		}
		if members[obj] == nil {
			keys = append(keys, obj)
		}
		members[obj] = append(members[obj], st.Member())
	}
	return keys, members
}

// config applies the fields of a (partial) tree config to c and validates
// the result. The fair-share settings table (fairshare.Settings) owns every
// range and default: this decoder only checks JSON types and maps the core's
// errors to JSON paths.
func config(path string, v any, c fairshare.Config) (fairshare.Config, *Error) {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return c, e
	}
	for _, k := range jsonpath.SortedKeys(m) {
		known, e := fairShareKey(path, k, m[k], &c)
		if !known {
			e = jsonpath.UnknownKey(path, k, configKeys, "a tree config")
		}
		if e != nil {
			return c, e
		}
	}
	if err := fairshare.ValidateConfig(&c); err != nil {
		return c, configError(path, err)
	}
	return c, nil
}

// fairShareKey applies the key k of the tree config at path, with the value
// x, to c: a fair-share setting, or a nested object of them whose keys are
// applied in sorted order. It reports false, and does nothing, when k is
// neither.
func fairShareKey(path, k string, x any, c *fairshare.Config) (known bool, e *Error) {
	p := jsonpath.Key(path, k)
	if st, ok := fairshare.LookupSetting(k); ok && st.Object() == "" {
		return true, setSetting(p, x, st, c)
	}
	members, ok := configMembers[k]
	if !ok {
		return false, nil
	}
	m, e := jsonpath.Object(p, x)
	if e != nil {
		return true, e
	}
	for _, mk := range jsonpath.SortedKeys(m) {
		st, ok := fairshare.LookupSetting(k + "." + mk)
		if !ok || st.Object() != k {
			return true, jsonpath.UnknownKey(p, mk, members, "the tree's "+k)
		}
		if e := setSetting(jsonpath.Key(p, mk), m[mk], st, c); e != nil {
			return true, e
		}
	}
	return true, nil
}

// ---- tree ----

var (
	rootKeys = []string{"children"}
	// poolKeys are the keys of a pool in a snapshot's tree.
	poolKeys = slices.Concat([]string{"pool"}, poolAttrKeys, []string{"accumulated_resource_volume", "children"})
	opKeys   = []string{"operation", "weight", "demand", "usage", "job_resources", "is_gang", "start_time_s",
		"resource_limits", "type", "pending_job_count", "pending_allocation_count"}
	// opTypes are the operation types of docs/api.md#operations; only vanilla may be lightweight.
	opTypes = []string{"map", "reduce", "map_reduce", "sort", "merge", "erase", "join_reduce", "remote_copy", "vanilla"}
)

func (d *snapDecoder) root(path string, v any, el *snapshot.Element) *Error {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return e
	}
	for _, k := range jsonpath.SortedKeys(m) {
		if k == "children" {
			continue
		}
		if slices.Contains(poolKeys, k) {
			return jsonpath.NewError(CodeUnknownAttribute, jsonpath.Key(path, k),
				"cannot configure the root pool with "+jsonpath.Describe(k)+": the tree takes only \"children\"")
		}
		return jsonpath.UnknownKey(path, k, rootKeys, "the tree")
	}
	el.Name, el.Path = tree.RootName, path
	if cv, ok := m["children"]; ok {
		if el.Children, e = d.children(jsonpath.Key(path, "children"), cv, tree.ModeFairShare); e != nil {
			return e
		}
	}
	return nil
}

func (d *snapDecoder) children(path string, v any, parentMode tree.Mode) ([]snapshot.Element, *Error) {
	a, e := jsonpath.Array(path, v)
	if e != nil {
		return nil, e
	}
	els := make([]snapshot.Element, len(a))
	for i, cv := range a {
		p := jsonpath.Index(path, i)
		if e := d.element(p, cv, &els[i]); e != nil {
			return nil, e
		}
		if !els[i].IsOperation && parentMode == tree.ModeFIFO {
			return nil, jsonpath.NewError(tree.CodeFifoChildPool, jsonpath.Key(p, "pool"),
				"cannot put pool "+jsonpath.Describe(els[i].Name)+" in a fifo pool: fifo pools hold only operations")
		}
	}
	return els, nil
}

func (d *snapDecoder) element(path string, v any, el *snapshot.Element) *Error {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return e
	}
	pv, isPool := m["pool"]
	ov, isOp := m["operation"]
	switch {
	case isPool && isOp:
		return jsonpath.NewError(CodeInvalidValue, path, "cannot have both \"pool\" and \"operation\": want exactly one")
	case !isPool && !isOp:
		return jsonpath.NewError(CodeMissingAttribute, path, "cannot tell a pool from an operation: want a \"pool\" or an \"operation\" name")
	}
	el.Path, el.IsOperation = path, isOp
	namePath, nv := jsonpath.Key(path, "pool"), pv
	if isOp {
		namePath, nv = jsonpath.Key(path, "operation"), ov
	}
	if el.Name, e = jsonpath.String(namePath, nv); e != nil {
		return e
	}
	if !tree.ValidName(el.Name) {
		return jsonpath.NewError(CodeInvalidName, namePath, "cannot use "+jsonpath.Describe(nv)+" as a name: want 1-128 characters of [A-Za-z0-9._:-]")
	}
	if prev, ok := d.names[el.Name]; ok {
		return jsonpath.NewError(CodeDuplicateName, namePath, "cannot use name "+jsonpath.Describe(nv)+" again: "+prev.path+" has it")
	}
	d.names[el.Name] = nameInfo{path: path, isOp: isOp}
	if isOp {
		return d.operation(path, m, el)
	}
	return d.pool(path, m, el)
}

func (d *snapDecoder) pool(path string, m map[string]any, el *snapshot.Element) *Error {
	c := &el.Pool
	var e *Error
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		switch k {
		case "pool", "children":
			// The name is element's; the children are decoded below, once
			// the mode is known.
		case "accumulated_resource_volume":
			el.AccumulatedVolume, e = volumes(p, x)
		case "parent":
			e = jsonpath.NewError(CodeUnknownAttribute, p, "cannot use \"parent\" in a snapshot: a pool's parent is the pool whose \"children\" list it")
		default:
			var known bool
			known, e = decodePoolAttr(c, m, k, p, x)
			switch {
			case known:
			case slices.Contains(opKeys, k):
				e = jsonpath.NewError(CodeUnknownAttribute, p, "cannot give pool "+jsonpath.Describe(el.Name)+" the operation attribute "+jsonpath.Describe(k))
			default:
				e = jsonpath.UnknownKey(path, k, poolKeys, "a pool")
			}
		}
		if e != nil {
			return e
		}
	}
	if err := tree.ValidatePool(c); err != nil {
		return treeError(path, err, strongAliased(m))
	}
	if cv, ok := m["children"]; ok {
		if el.Children, e = d.children(jsonpath.Key(path, "children"), cv, c.Mode); e != nil {
			return e
		}
	}
	return nil
}

func (d *snapDecoder) operation(path string, m map[string]any, el *snapshot.Element) *Error {
	s := &el.Op
	var e *Error
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		switch k {
		case "operation":
		case "weight":
			s.Weight.V, e = jsonpath.Number(p, x)
			s.Weight.Set = true
		case "demand":
			el.Demand, e = fullResources(p, x)
		case "usage":
			el.Usage, e = fullResources(p, x)
		case "job_resources":
			el.JobResources, e = fullResources(p, x)
		case "is_gang":
			s.IsGang, e = jsonpath.Bool(p, x)
		case "start_time_s":
			var start float64
			start, e = jsonpath.Number(p, x)
			s.StartTime = clock.FromSeconds(start)
		case "resource_limits":
			s.ResourceLimits, e = resources(p, x)
		case "type":
			var t string
			t, e = opType(p, x)
			s.Vanilla = t == "vanilla"
		case "pending_job_count", "pending_allocation_count":
			// NB: validated but not kept: snapshot.Element has no pending
			// count yet, and the fair-share update does not use it.
			if _, both := m["pending_job_count"]; both && k == "pending_allocation_count" {
				e = jsonpath.NewError(CodeInvalidValue, p, "cannot give both pending_allocation_count and pending_job_count: pending_job_count is its old name")
				break
			}
			_, e = jsonpath.Count(p, x)
		case "children":
			e = jsonpath.NewError(CodeUnknownAttribute, p, "cannot give operation "+jsonpath.Describe(el.Name)+" children: only pools have them")
		default:
			if slices.Contains(poolKeys, k) {
				e = jsonpath.NewError(CodeUnknownAttribute, p, "cannot give operation "+jsonpath.Describe(el.Name)+" the pool attribute "+jsonpath.Describe(k))
			} else {
				e = jsonpath.UnknownKey(path, k, opKeys, "an operation")
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
// the element's path followed by the error's (relative) path.
func treeError(path string, err error, aliased bool) *Error {
	var te *apierr.Error
	if !errors.As(err, &te) {
		return jsonpath.NewError(CodeInvalidValue, path, err.Error())
	}
	field := te.Path
	if aliased && strings.HasPrefix(field, "strong_guarantee_resources") {
		field = "min_share_resources" + strings.TrimPrefix(field, "strong_guarantee_resources")
	}
	return jsonpath.NewError(te.Code, apierr.Join(path, field), te.Message)
}

// ---- updates ----

var (
	updateKeys = []string{"elapsed_s", "label", "config", "total_resources", "set"}
)

func (d *snapDecoder) updates(path string, v any, cfg fairshare.Config) ([]snapshot.Update, *Error) {
	a, e := jsonpath.Array(path, v)
	if e != nil {
		return nil, e
	}
	if len(a) == 0 {
		return nil, jsonpath.NewError(CodeInvalidValue, path, "cannot run an empty list of updates: want at least one, or no \"updates\" for one first update")
	}
	us := make([]snapshot.Update, len(a))
	for i, uv := range a {
		up := jsonpath.Index(path, i)
		m, e := jsonpath.Object(up, uv)
		if e != nil {
			return nil, e
		}
		u := &us[i]
		for _, k := range jsonpath.SortedKeys(m) {
			p, x := jsonpath.Key(up, k), m[k]
			switch k {
			case "elapsed_s":
				if x != nil {
					var elapsed float64
					elapsed, e = jsonpath.Range(p, x, 0, math.MaxFloat64, "null or a non-negative number of seconds")
					u.Elapsed = clock.DurationFromSeconds(elapsed)
					u.HasElapsed = true
				}
			case "label":
				u.Label, e = jsonpath.String(p, x)
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
				e = jsonpath.UnknownKey(up, k, updateKeys, "an update")
			}
			if e != nil {
				return nil, e
			}
		}
	}
	return us, nil
}

func (d *snapDecoder) set(path string, v any) ([]snapshot.Assignment, *Error) {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return nil, e
	}
	as := make([]snapshot.Assignment, 0, len(m))
	type setKey struct {
		name string
		attr snapshot.Attr
	}
	seen := make(map[setKey]string, len(m))
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		dot := strings.LastIndexByte(k, '.')
		if dot < 0 {
			return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot parse "+jsonpath.Describe(k)+": want \"<element>.<attribute>\"")
		}
		name, attr := k[:dot], k[dot+1:]
		info, ok := d.names[name]
		if !ok {
			if name == tree.RootName {
				return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot set attributes of the root pool")
			}
			return nil, jsonpath.NewError(CodeUnknownElement, p, "cannot find pool or operation "+jsonpath.Describe(name))
		}
		kind := "pool"
		if info.isOp {
			kind = "operation"
		}
		a := snapshot.Assignment{Element: name, Path: p}
		switch attr {
		case "demand", "usage":
			if !info.isOp {
				return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot set "+attr+" of pool "+jsonpath.Describe(name)+": only operations have one")
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
			if a.Num, e = jsonpath.Number(p, x); e == nil {
				if err := tree.ValidateOperation(&tree.OperationSpec{Weight: tree.Some(a.Num)}, resource.Vec{}, resource.Vec{}); err != nil {
					var te *apierr.Error
					if errors.As(err, &te) {
						e = jsonpath.NewError(te.Code, p, te.Message)
					} else {
						e = jsonpath.NewError(CodeInvalidValue, p, err.Error())
					}
				}
			}
		case "resource_limits":
			a.Attr = snapshot.AttrResourceLimits
			a.Vec, e = resources(p, x)
		case "strong_guarantee_resources", "min_share_resources":
			if info.isOp {
				return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot set "+attr+" of operation "+jsonpath.Describe(name)+": only pools have one")
			}
			a.Attr = snapshot.AttrStrongGuarantee
			a.Vec, e = resources(p, x)
		default:
			return nil, jsonpath.NewError(CodeUnknownAttribute, p, "cannot set unknown attribute "+jsonpath.Describe(attr)+" of "+kind+" "+
				jsonpath.Describe(name)+": want one of demand, usage, weight, resource_limits, strong_guarantee_resources")
		}
		if e != nil {
			return nil, e
		}
		if prev, dup := seen[setKey{name, a.Attr}]; dup {
			return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot set "+attr+" of "+jsonpath.Describe(name)+" twice: "+prev+" sets it too")
		}
		seen[setKey{name, a.Attr}] = p
		as = append(as, a)
	}
	return as, nil
}
