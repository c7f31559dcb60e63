package wire

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// This file holds the decoders of the control-plane requests of docs/api.md (#the-tree-config, #pools, #operations)
// and of the serve configuration. Like DecodeSnapshot they parse the body
// with go-json into generic values and validate every field before they
// return, reporting the first problem (keys in sorted order) as an *Error
// with its JSON path. They do not retain data.

// ---- pools (docs/api.md#pools) ----

// PoolBody is a decoded pool body: the attributes of PUT and PATCH
// /api/v1/pools/{name}, and an entry of a serve configuration's "pools".
type PoolBody struct {
	// Name is "name" when the body has one (always in a serve config).
	Name string
	// Parent is "parent" when HasParent: a pool name or tree.RootName
	// (null and "<Root>" both mean the root).
	Parent    string
	HasParent bool
	// Config is the base configuration with the body's attributes applied;
	// null resets an attribute to its default.
	Config tree.PoolConfig
}

// apiPoolKeys are the keys of a pool body: a snapshot's pool attributes
// and the access control list.
var apiPoolKeys = slices.Concat([]string{"name", "parent"}, poolAttrKeys, []string{"acl", "inherit_acl"})

// DecodePool decodes a pool body (docs/api.md#pools) and applies its attributes to
// base: the zero config for PUT (create or replace), the current config for
// PATCH. The result is validated with tree.ValidatePool; whether the parent
// exists and the move makes no cycle is the tree's to check.
func DecodePool(data []byte, base tree.PoolConfig) (*PoolBody, error) {
	v, e := jsonpath.Decode(data, "body")
	if e != nil {
		return nil, e
	}
	b, e := poolBody("$", v, base)
	if e != nil {
		return nil, e
	}
	return b, nil
}

func poolBody(path string, v any, base tree.PoolConfig) (*PoolBody, *Error) {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return nil, e
	}
	b := &PoolBody{Config: base}
	c := &b.Config
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		switch k {
		case "name":
			if x == nil {
				e = jsonpath.WrongType(p, nil, "a pool name")
			} else if b.Name, e = jsonpath.String(p, x); e == nil && !tree.ValidName(b.Name) {
				e = jsonpath.NewError(CodeInvalidName, p, "cannot use "+jsonpath.Describe(x)+" as a pool name: want 1-128 characters of [A-Za-z0-9._:-]")
			}
		case "parent":
			if x == nil {
				b.Parent, b.HasParent = tree.RootName, true
				break
			}
			var s string
			if s, e = jsonpath.String(p, x); e == nil {
				if s != tree.RootName && !tree.ValidName(s) {
					e = jsonpath.NewError(CodeInvalidName, p, "cannot use "+jsonpath.Describe(x)+" as a parent: want a pool name or \"<Root>\"")
				}
				b.Parent, b.HasParent = s, true
			}
		case "acl":
			c.ACL = nil
			if x != nil {
				c.ACL, e = decodeACL(p, x)
			}
		case "inherit_acl":
			c.InheritACL = tree.OptBool{}
			if x != nil {
				var inherit bool
				inherit, e = jsonpath.Bool(p, x)
				c.InheritACL = tree.SomeBool(inherit)
			}
		default:
			known := true
			if x == nil {
				// null: back to the default.
				if f := poolAttr(c, k); f != nil {
					resetAttr(f)
				} else {
					known = false
				}
			} else {
				known, e = decodePoolAttr(c, m, k, p, x)
			}
			if !known {
				e = jsonpath.UnknownKey(path, k, apiPoolKeys, "a pool")
			}
		}
		if e != nil {
			return nil, e
		}
	}
	if err := tree.ValidatePool(c); err != nil {
		return nil, treeError(path, err, strongAliased(m))
	}
	return b, nil
}

// AppendPool appends a pool's configuration as the body of GET
// /api/v1/pools/{name}: "name", "parent" (left out for the root), "mode"
// and every attribute that is set, in the keys of DecodePool, so that the
// output PUT back gives the same configuration.
func AppendPool(dst []byte, name, parent string, c *tree.PoolConfig) []byte {
	dst = append(dst, `{"name":`...)
	dst = jsonpath.AppendString(dst, name)
	if parent != "" {
		dst = append(dst, `,"parent":`...)
		dst = jsonpath.AppendString(dst, parent)
	}
	dst = append(dst, `,"mode":"`...)
	dst = append(dst, c.Mode.String()...)
	dst = append(dst, '"')
	dst = appendOptFloat(dst, "weight", c.Weight)
	dst = appendPartial(dst, "strong_guarantee_resources", &c.StrongGuarantee)
	dst = appendPartial(dst, "resource_limits", &c.ResourceLimits)
	dst = appendOptInt(dst, "max_operation_count", c.MaxOperationCount)
	dst = appendOptInt(dst, "max_running_operation_count", c.MaxRunningOperationCount)
	if c.FifoSortParameters != nil {
		dst = append(dst, `,"fifo_sort_parameters":[`...)
		for i, p := range c.FifoSortParameters {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			if p == tree.FifoPendingJobCount {
				dst = append(dst, "pending_allocation_count"...)
			} else {
				dst = append(dst, p.String()...)
			}
			dst = append(dst, '"')
		}
		dst = append(dst, ']')
	}
	if c.EnableLightweightOperations {
		dst = append(dst, `,"enable_lightweight_operations":true`...)
	}
	if ig := &c.Integral; *ig != (tree.IntegralConfig{}) {
		dst = append(dst, `,"integral_guarantees":{"guarantee_type":"`...)
		dst = append(dst, ig.Type.String()...)
		dst = append(dst, '"')
		dst = appendPartial(dst, "resource_flow", &ig.ResourceFlow)
		dst = appendPartial(dst, "burst_guarantee_resources", &ig.BurstGuarantee)
		dst = appendOptFloat(dst, "relaxed_share_multiplier_limit", ig.RelaxedShareMultiplierLimit)
		dst = appendOptBool(dst, "can_accept_free_volume", ig.CanAcceptFreeVolume)
		dst = appendOptBool(dst, "should_distribute_free_volume_among_children", ig.ShouldDistributeFreeVolume)
		dst = append(dst, '}')
	}
	dst = appendOptSeconds(dst, "fair_share_starvation_timeout_s", c.FairShareStarvationTimeout)
	dst = appendOptFloat(dst, "fair_share_starvation_tolerance", c.FairShareStarvationTolerance)
	dst = appendOptBool(dst, "enable_aggressive_starvation", c.EnableAggressiveStarvation)
	dst = appendOptBool(dst, "allow_aggressive_preemption", c.AllowAggressivePreemption)
	dst = appendOptBool(dst, "allow_normal_preemption", c.AllowNormalPreemption)
	dst = appendPartial(dst, "non_preemptible_resource_usage_threshold", &c.NonPreemptibleResourceUsageThreshold)
	if c.ComputePromisedGuaranteeFairShare {
		dst = append(dst, `,"compute_promised_guarantee_fair_share":true`...)
	}
	if c.EnablePriorityStrongGuaranteeAdjustment {
		dst = append(dst, `,"enable_priority_strong_guarantee_adjustment":true`...)
	}
	if c.EnablePriorityStrongGuaranteeAdjustmentDonorship {
		dst = append(dst, `,"enable_priority_strong_guarantee_adjustment_donorship":true`...)
	}
	dst = appendTagFilter(dst, &c.SchedulingTagFilter)
	dst = appendACL(dst, c)
	return append(dst, '}')
}

// appendTagFilter appends "scheduling_tag_filter" in canonical form, when
// the filter is not empty.
func appendTagFilter(dst []byte, f *tagfilter.Filter) []byte {
	if f.IsEmpty() {
		return dst
	}
	return jsonpath.AppendString(appendKey(dst, "scheduling_tag_filter"), f.String())
}

func appendKey(dst []byte, k string) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, k...)
	return append(dst, `":`...)
}

func appendOptFloat(dst []byte, k string, o tree.OptFloat) []byte {
	if !o.Set {
		return dst
	}
	return appendFloat(appendKey(dst, k), o.V)
}

func appendOptSeconds(dst []byte, k string, o tree.OptDuration) []byte {
	if !o.Set {
		return dst
	}
	return appendFloat(appendKey(dst, k), o.V.Seconds())
}

func appendOptInt(dst []byte, k string, o tree.OptInt) []byte {
	if !o.Set {
		return dst
	}
	return strconv.AppendInt(appendKey(dst, k), o.V, 10)
}

func appendOptBool(dst []byte, k string, o tree.OptBool) []byte {
	if !o.Set {
		return dst
	}
	return strconv.AppendBool(appendKey(dst, k), o.V)
}

func appendPartial(dst []byte, k string, p *tree.PartialVec) []byte {
	if p.IsEmpty() {
		return dst
	}
	return AppendPartialResources(appendKey(dst, k), p)
}

// AppendPartialResources appends the specified components of p, cpu in cores.
func AppendPartialResources(dst []byte, p *tree.PartialVec) []byte {
	return appendResourceMap(dst, &p.V, &p.Set)
}

// ---- operations (docs/api.md#operations) ----

var (
	startKeys = []string{"id", "type", "pool", "weight", "preemption_mode", "is_gang", "resource_limits",
		"allocation_preemption_timeout_s", "allocation_graceful_preemption_timeout_s",
		"fair_share_starvation_tolerance", "fair_share_starvation_timeout_s", "non_preemptible_resource_usage_threshold",
		"scheduling_tag_filter", "tasks"}
	taskKeys = []string{"name", "job_count", "resources", "duration_hint_s"}
)

// DecodeStartOperation decodes the body of POST /api/v1/operations
// (docs/api.md#operations) into a spec: it checks the JSON types and then the
// spec with schedule.ValidateSpec (the core owns the ranges: names, counts,
// amounts, and that every task's total Σ job_count × resources fits in
// 2^53, and so does the operation's total over its tasks), naming the field
// of either error ($.tasks[0].job_count). "pool": "<Root>" is the root
// (spec.Pool ""). The scheduler checks that the pool exists and the limits.
func DecodeStartOperation(data []byte) (schedule.OperationSpec, error) {
	var spec schedule.OperationSpec
	m, e := jsonpath.DecodeObject(data, "body")
	if e != nil {
		return spec, e
	}
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key("$", k), m[k]
		switch k {
		case "id":
			// The core's spec reads an empty id as none given: the
			// decoder refuses an empty one (the core checks the others).
			if spec.ID, e = jsonpath.String(p, x); e == nil && spec.ID == "" {
				e = jsonpath.NewError(CodeInvalidName, p, "cannot use \"\" as an operation id: want 1-128 characters of [A-Za-z0-9._:-]")
			}
		case "type":
			spec.Type, e = opType(p, x)
		case "pool":
			spec.Pool, e = poolRef(p, x)
		case "weight":
			spec.Weight, e = weight(p, x)
		case "preemption_mode":
			spec.PreemptionMode, e = jsonpath.Lookup(p, x, preemptionModes, `"normal" or "graceful"`)
		case "is_gang":
			spec.IsGang, e = jsonpath.Bool(p, x)
		case "resource_limits":
			spec.ResourceLimits, e = resources(p, x)
		case "allocation_preemption_timeout_s":
			spec.AllocationPreemptionTimeout, e = optSeconds(p, x)
		case "allocation_graceful_preemption_timeout_s":
			spec.AllocationGracefulPreemptionTimeout, e = optSeconds(p, x)
		case "fair_share_starvation_timeout_s":
			spec.FairShareStarvationTimeout, e = optSeconds(p, x)
		case "fair_share_starvation_tolerance":
			spec.FairShareStarvationTolerance, e = optNumber(p, x)
		case "non_preemptible_resource_usage_threshold":
			spec.NonPreemptibleResourceUsageThreshold, e = resources(p, x)
		case "scheduling_tag_filter":
			spec.SchedulingTagFilter, e = tagFilter(p, x)
		case "tasks":
			spec.Tasks, e = tasks(p, x)
		default:
			e = jsonpath.UnknownKey("$", k, startKeys, "an operation")
		}
		if e != nil {
			return spec, e
		}
	}
	if _, ok := m["tasks"]; !ok {
		return spec, jsonpath.NewError(CodeMissingAttribute, "$.tasks", "cannot start an operation without tasks: want a non-empty list of {\"name\", \"job_count\", \"resources\"}")
	}
	if err := schedule.ValidateSpec(&spec); err != nil {
		return spec, treeError("$", err, false)
	}
	return spec, nil
}

// opType decodes an operation's type (docs/api.md#operations).
func opType(p string, x any) (string, *Error) {
	t, e := jsonpath.String(p, x)
	if e == nil && !slices.Contains(opTypes, t) {
		e = jsonpath.Invalid(p, x, "one of "+strings.Join(opTypes, ", "))
	}
	return t, e
}

// poolRef decodes the pool an operation runs in: a pool name, or "<Root>"
// for the root (returned as ""); the core checks the name.
func poolRef(p string, x any) (string, *Error) {
	s, e := jsonpath.String(p, x)
	if e != nil {
		return "", e
	}
	switch s {
	case tree.RootName:
		return "", nil
	case "":
		// The core's spec reads an empty pool as the root: the decoder
		// refuses an empty name (the core checks the others).
		return "", jsonpath.NewError(CodeInvalidName, p, "cannot use \"\" as a pool name: want 1-128 characters of [A-Za-z0-9._:-] or \"<Root>\"")
	}
	return s, nil
}

// weight decodes an operation's weight; the core checks its range.
func weight(p string, x any) (tree.OptFloat, *Error) { return optNumber(p, x) }

func optNumber(p string, x any) (tree.OptFloat, *Error) {
	f, e := jsonpath.Number(p, x)
	if e != nil {
		return tree.OptFloat{}, e
	}
	return tree.Some(f), nil
}

// optSeconds decodes a duration in seconds (saturating: the core checks
// that it is in [0, 1e9] s).
func optSeconds(p string, x any) (tree.OptDuration, *Error) {
	f, e := jsonpath.Number(p, x)
	if e != nil {
		return tree.OptDuration{}, e
	}
	return tree.SomeDuration(clock.DurationFromSeconds(f)), nil
}

// wholeNumber decodes a count: a whole number that a float64 holds exactly
// (|n| ≤ 2^53); the core checks its range, which want describes for the
// numbers beyond.
func wholeNumber(p string, x any, want string) (int64, *Error) {
	return jsonpath.Whole(p, x, -resource.MaxAmount, resource.MaxAmount, want)
}

// tasks decodes an operation's tasks: their JSON types (taskPatches), and
// that each has a job count and resources (ValidateSpec checks the ranges).
func tasks(path string, v any) ([]schedule.TaskSpec, *Error) {
	ps, e := decodeTasks(path, v, "a whole number in [1, 2^40]")
	if e != nil {
		return nil, e
	}
	ts := make([]schedule.TaskSpec, len(ps))
	if len(ps) > schedule.MaxTasks {
		return ts, nil // not decoded: the core refuses so many (ValidateSpec)
	}
	for i := range ps {
		p, tp := &ps[i], jsonpath.Index(path, i)
		if !p.HasJobCount {
			return nil, jsonpath.NewError(CodeMissingAttribute, jsonpath.Key(tp, "job_count"), "cannot start a task without job_count")
		}
		if !p.HasResources {
			return nil, jsonpath.NewError(CodeMissingAttribute, jsonpath.Key(tp, "resources"), "cannot start a task without resources: want the resources of one job")
		}
		ts[i] = schedule.TaskSpec{Name: p.Name, JobCount: p.JobCount, Resources: p.Resources, DurationHintS: p.DurationHintS}
	}
	return ts, nil
}

// Demand returns an operation's total demand: Σ job_count × resources over
// its tasks (at most 2^53 per resource for a spec DecodeStartOperation
// returned).
func Demand(spec *schedule.OperationSpec) resource.Vec {
	var total resource.Vec
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		total = total.Add(t.Resources.Scale(t.JobCount))
	}
	return total
}

// OperationPatch is the body of PATCH /api/v1/operations/{id}: the core's
// patch, whose ranges the core checks (schedule.ValidatePatch, and
// PatchOperation where they depend on the operation's tasks).
type OperationPatch struct {
	schedule.OperationPatch
}

// Changes reports whether the patch changes anything.
func (p *OperationPatch) Changes() bool {
	return p.Weight.Set || p.HasPool || p.HasResourceLimits || len(p.Tasks) > 0
}

var patchOpKeys = []string{"weight", "pool", "resource_limits", "tasks"}

// DecodeOperationPatch decodes the body of PATCH /api/v1/operations/{id}:
// the JSON types, then schedule.ValidatePatch, naming the field of either
// error.
func DecodeOperationPatch(data []byte) (OperationPatch, error) {
	var op OperationPatch
	m, e := jsonpath.DecodeObject(data, "body")
	if e != nil {
		return op, e
	}
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key("$", k), m[k]
		switch k {
		case "weight":
			op.Weight, e = weight(p, x)
		case "pool":
			if op.Pool, e = poolRef(p, x); e == nil {
				op.HasPool = true
			}
		case "resource_limits":
			op.HasResourceLimits = true
			if x != nil {
				op.ResourceLimits, e = resources(p, x)
			}
		case "tasks":
			op.Tasks, e = taskPatches(p, x)
		default:
			e = jsonpath.UnknownKey("$", k, patchOpKeys, "an operation's runtime parameters")
		}
		if e != nil {
			return op, e
		}
	}
	if err := schedule.ValidatePatch(&op.OperationPatch); err != nil {
		return op, treeError("$", err, false)
	}
	return op, nil
}

// taskPatches decodes the tasks of a PATCH: each entry's JSON types;
// ValidatePatch checks the ranges that hold for any task and
// PatchOperation the entries against the operation's tasks.
func taskPatches(path string, v any) ([]schedule.TaskPatch, *Error) {
	return decodeTasks(path, v, "a whole number in [0, 2^40]")
}

// decodeTasks decodes a list of tasks' JSON types, saying which keys each
// entry has; jobCount describes the job counts beyond 2^53. A list longer
// than schedule.MaxTasks is not decoded (the core refuses it).
func decodeTasks(path string, v any, jobCount string) ([]schedule.TaskPatch, *Error) {
	a, e := jsonpath.Array(path, v)
	if e != nil {
		return nil, e
	}
	if len(a) > schedule.MaxTasks {
		return make([]schedule.TaskPatch, len(a)), nil
	}
	ts := make([]schedule.TaskPatch, len(a))
	for i, tv := range a {
		tp := jsonpath.Index(path, i)
		m, e := jsonpath.Object(tp, tv)
		if e != nil {
			return nil, e
		}
		t := &ts[i]
		for _, k := range jsonpath.SortedKeys(m) {
			p, x := jsonpath.Key(tp, k), m[k]
			switch k {
			case "name":
				t.Name, e = jsonpath.String(p, x)
				t.HasName = true
			case "job_count":
				t.JobCount, e = wholeNumber(p, x, jobCount)
				t.HasJobCount = true
			case "resources":
				var pv tree.PartialVec
				if pv, e = resources(p, x); e == nil {
					t.Resources, t.HasResources = pv.V, true
				}
			case "duration_hint_s":
				t.DurationHintS, e = jsonpath.Number(p, x)
			default:
				e = jsonpath.UnknownKey(tp, k, taskKeys, "a task")
			}
			if e != nil {
				return nil, e
			}
		}
	}
	return ts, nil
}

// ---- the tree config (docs/api.md#the-tree-config, docs/configuration.md) ----

// ServeConfig is the configuration of fairsched serve: the tree config and
// the initial pools, in the order to create them (parents first).
type ServeConfig struct {
	Scheduler schedule.Config
	// Root is the root pool's configuration: its entry (name "<Root>") may
	// set only its acl.
	Root  tree.PoolConfig
	Pools []PoolBody
	// PoolPaths are the JSON paths of Pools, for error messages.
	PoolPaths []string
}

// Tree returns the root pool's configuration and the mutations that add
// the other pools, parents first, with the JSON path of each (for the
// errors of applying them). A root entry with another parent, or a fifo
// root, is an error.
func (sc *ServeConfig) Tree() (root tree.PoolConfig, ms []tree.Mutation, paths []string, err *Error) {
	root = sc.Root
	for i := range sc.Pools {
		b := &sc.Pools[i]
		if b.Name == tree.RootName {
			if b.HasParent && b.Parent != tree.RootName {
				return root, nil, nil, &Error{Code: tree.CodeInvalidValue, Path: sc.PoolPaths[i] + ".parent", Message: "cannot give the root pool a parent"}
			}
			root = b.Config
			continue
		}
		parent := b.Parent
		if parent == tree.RootName {
			parent = ""
		}
		ms = append(ms, tree.Mutation{Kind: tree.AddPool, Name: b.Name, Parent: parent, Pool: b.Config})
		paths = append(paths, sc.PoolPaths[i])
	}
	if root.Mode == tree.ModeFIFO {
		return root, nil, nil, &Error{Code: tree.CodeInvalidValue, Path: "$.pools", Message: "cannot make the root pool fifo: the root is always fair_share"}
	}
	return root, ms, paths, nil
}

var serveKeys = []string{"config", "pools"}

// DecodeServeConfig decodes a serve configuration:
//
//	{"config": {<tree config, as GET /api/v1/config>},
//	 "pools": [{"name": "production", "parent": "<Root>", <pool attributes>}, …]}
//
// Missing config fields take schedule.DefaultConfig's values. A pool named
// "<Root>" configures the root. Pools must come after their parents.
func DecodeServeConfig(data []byte) (*ServeConfig, error) {
	m, e := jsonpath.DecodeObject(data, "body")
	if e != nil {
		return nil, e
	}
	sc := &ServeConfig{Scheduler: schedule.DefaultConfig()}
	if e := jsonpath.CheckKeys("$", m, serveKeys, "a serve configuration"); e != nil {
		return nil, e
	}
	if cv, ok := m["config"]; ok {
		if sc.Scheduler, e = schedConfig("$.config", cv, sc.Scheduler, true); e != nil {
			return nil, e
		}
	}
	if pv, ok := m["pools"]; ok {
		a, e := jsonpath.Array("$.pools", pv)
		if e != nil {
			return nil, e
		}
		seen := map[string]string{}
		for i, x := range a {
			p := jsonpath.Index("$.pools", i)
			if isRoot, e := rootEntry(p, x, &sc.Root); e != nil {
				return nil, e
			} else if isRoot {
				continue
			}
			b, e := poolBody(p, x, tree.PoolConfig{})
			if e != nil {
				return nil, e
			}
			if b.Name == "" {
				if pm, ok := x.(map[string]any); !ok || pm["name"] == nil {
					return nil, jsonpath.NewError(CodeMissingAttribute, jsonpath.Key(p, "name"), "cannot create a pool without a name")
				}
			}
			if prev, dup := seen[b.Name]; dup {
				return nil, jsonpath.NewError(CodeDuplicateName, jsonpath.Key(p, "name"), "cannot use name "+jsonpath.Describe(b.Name)+" again: "+prev+" has it")
			}
			seen[b.Name] = p
			sc.Pools = append(sc.Pools, *b)
			sc.PoolPaths = append(sc.PoolPaths, p)
		}
	}
	return sc, nil
}

// rootEntry reports whether the serve configuration's pool x is the root's
// entry, as GET /api/v1/pools writes it ({"name": "<Root>", "mode":
// "fair_share", "acl": […]}), which a configuration may carry so that the
// GET output round-trips; its acl goes to root. The root has no other
// attributes (and no ancestors to inherit from), so anything else in it is
// refused.
func rootEntry(p string, x any, root *tree.PoolConfig) (bool, *Error) {
	m, ok := x.(map[string]any)
	if !ok || m["name"] != tree.RootName {
		return false, nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch {
		case k == "name":
		case k == "mode" && (v == "fair_share" || v == nil):
		case k == "mode":
			return true, jsonpath.NewError(CodeInvalidValue, jsonpath.Key(p, k), "cannot use mode "+jsonpath.Describe(v)+" for the root: it is always fair_share")
		case k == "acl":
			root.ACL = nil
			if v != nil {
				acl, e := decodeACL(jsonpath.Key(p, k), v)
				if e != nil {
					return true, e
				}
				root.ACL = acl
			}
		default:
			return true, jsonpath.NewError(CodeInvalidValue, jsonpath.Key(p, k), "cannot set "+k+" of the root: its entry may have only name, mode and acl")
		}
	}
	return true, nil
}

// schedConfigKeys are the keys of a tree config: the fair-share keys of a
// snapshot's config, then the scheduler's settings table.
var schedConfigKeys = func() []string {
	keys := append([]string{}, configKeys...)
	for _, st := range schedule.Settings() {
		keys = append(keys, st.Key)
	}
	return keys
}()

// DecodeConfigPatch decodes the body of PATCH /api/v1/config and applies it
// to base. node_shards cannot change at run time.
func DecodeConfigPatch(data []byte, base schedule.Config) (schedule.Config, error) {
	v, e := jsonpath.Decode(data, "body")
	if e != nil {
		return base, e
	}
	c, e := schedConfig("$", v, base, false)
	if e != nil {
		return base, e
	}
	return c, nil
}

// SchedulerConfig applies the scheduler config object v at path (the keys
// of PATCH /api/v1/config) to base and validates the result: one decoder
// for every format that embeds a scheduler config (the simulator's
// scenarios restrict the keys first).
func SchedulerConfig(path string, v any, base schedule.Config) (schedule.Config, *Error) {
	return schedConfig(path, v, base, false)
}

// schedConfig applies a (partial) tree config to c and validates the result.
// The settings tables (schedule.Settings, and fairshare.Settings for the
// fair-share keys) own every range and default: this decoder only checks
// JSON types and maps the core's errors to JSON paths.
func schedConfig(path string, v any, c schedule.Config, startup bool) (schedule.Config, *Error) {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return c, e
	}
	for _, k := range jsonpath.SortedKeys(m) {
		p, x := jsonpath.Key(path, k), m[k]
		st, ok := schedule.LookupSetting(k)
		if !ok {
			// The fair-share keys, as a snapshot's config has them.
			known, e := fairShareKey(path, k, x, &c.FairShare)
			if !known {
				e = jsonpath.UnknownKey(path, k, schedConfigKeys, "a tree config")
			}
			if e != nil {
				return c, e
			}
			continue
		}
		val, e := settingValue(p, x, &st.Spec)
		if e != nil {
			return c, e
		}
		// A start-up setting may be repeated with its current value, so
		// that what GET answers can be sent back.
		if st.Startup && !startup && val != st.Get(&c) {
			return c, jsonpath.NewError(CodeInvalidValue, p, "cannot change "+k+" at run time: restart fairsched serve with a --config that sets it")
		}
		if err := st.Set(&c, val); err != nil {
			return c, jsonpath.Invalid(p, x, st.Want())
		}
	}
	if err := schedule.ValidateConfig(&c); err != nil {
		return c, configError(path, err)
	}
	return c, nil
}

// configError maps an error of a config's validation in the core, an
// *apierr.Error whose Path is a key (dotted inside a nested object), to its
// JSON path in the config object at path.
func configError(path string, err error) *Error {
	var se *apierr.Error
	if !errors.As(err, &se) {
		panic("BUG: wire: a config's validation returned " + err.Error())
	}
	return jsonpath.NewError(se.Code, apierr.Join(path, se.Path), se.Message)
}

// setSetting reads the JSON value x at p as the settings table's kind of st
// wants it and stores it in c; the range is the table's.
func setSetting[C any](p string, x any, st *settings.Setting[C], c *C) *Error {
	v, e := settingValue(p, x, &st.Spec)
	if e != nil {
		return e
	}
	if err := st.Set(c, v); err != nil {
		return jsonpath.Invalid(p, x, st.Want())
	}
	return nil
}

// settingValue reads the JSON value x at p as the settings table's kind of st
// wants it; ranges are the table's.
func settingValue(p string, x any, st *settings.Spec) (settings.Value, *Error) {
	var (
		v settings.Value
		e *Error
	)
	if x == nil && st.Nullable {
		return settings.Value{Null: true}, nil
	}
	switch st.Kind {
	case settings.KindDuration, settings.KindNumber, settings.KindCount:
		v.Number, e = jsonpath.Number(p, x)
	case settings.KindBool:
		v.Bool, e = jsonpath.Bool(p, x)
	case settings.KindChoice:
		v.Choice, e = jsonpath.String(p, x)
	case settings.KindResources:
		v.Resources, e = fullResources(p, x)
	case settings.KindPartialResources:
		v.Partial, e = resources(p, x)
	}
	return v, e
}

// AppendConfig appends the tree config as GET /api/v1/config answers it,
// with every key DecodeConfigPatch takes but those it ignores
// (forbid_immediate_operations_in_root): the fair-share settings table's,
// then the scheduler's, each in its order.
func AppendConfig(dst []byte, c *schedule.Config) []byte {
	dst = append(dst, '{')
	dst = appendSettings(dst, fairshare.Settings(), &c.FairShare, true)
	dst = appendSettings(dst, schedule.Settings(), c, false)
	return append(dst, '}')
}

// appendSettings appends the settings of rows, read from c, as members of an
// open JSON object: the rows of a nested object under its name, Ignored rows
// left out. first says whether they are the object's first members.
func appendSettings[C any](dst []byte, rows []settings.Setting[C], c *C, first bool) []byte {
	open := "" // the nested object being written
	for i := range rows {
		st := &rows[i]
		if st.Ignored {
			continue
		}
		if obj := st.Object(); obj != open {
			if open != "" {
				dst, first = append(dst, '}'), false
			}
			if obj != "" {
				dst, first = append(appendMember(dst, obj, first), '{'), true
			}
			open = obj
		}
		dst = appendSetting(appendMember(dst, st.Member(), first), &st.Spec, st.Get(c))
		first = false
	}
	if open != "" {
		dst = append(dst, '}')
	}
	return dst
}

// appendMember appends the key k of an object's member, after a comma
// unless it is the first.
func appendMember(dst []byte, k string, first bool) []byte {
	if first {
		dst = append(dst, '"')
		dst = append(dst, k...)
		return append(dst, `":`...)
	}
	return appendKey(dst, k)
}

// appendSetting appends the value v of the setting st.
func appendSetting(dst []byte, st *settings.Spec, v settings.Value) []byte {
	if v.Null {
		return append(dst, "null"...)
	}
	switch st.Kind {
	case settings.KindDuration, settings.KindNumber:
		return appendFloat(dst, v.Number)
	case settings.KindCount:
		return strconv.AppendInt(dst, int64(v.Number), 10)
	case settings.KindBool:
		return strconv.AppendBool(dst, v.Bool)
	case settings.KindChoice:
		return jsonpath.AppendString(dst, v.Choice)
	case settings.KindResources:
		return AppendResources(dst, &v.Resources)
	case settings.KindPartialResources:
		return AppendPartialResources(dst, &v.Partial)
	}
	panic("BUG: wire: no encoder for a setting of kind " + strconv.Itoa(int(st.Kind)))
}

// AppendTasks writes an operation's tasks as the start body takes them: a
// list of {"name", "job_count", "resources", "duration_hint_s"} (the hint
// when set).
func AppendTasks(dst []byte, tasks []schedule.TaskSpec) []byte {
	dst = append(dst, '[')
	for i := range tasks {
		t := &tasks[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = jsonpath.AppendString(dst, t.Name)
		dst = append(dst, `,"job_count":`...)
		dst = strconv.AppendInt(dst, t.JobCount, 10)
		dst = append(dst, `,"resources":`...)
		dst = AppendResources(dst, &t.Resources)
		if t.DurationHintS > 0 {
			dst = append(dst, `,"duration_hint_s":`...)
			dst = strconv.AppendFloat(dst, t.DurationHintS, 'g', -1, 64)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
