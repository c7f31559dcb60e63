package wire

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// This file holds what the decoders of a pool's configuration share: the
// snapshot tree (docs/api.md#solve), PUT and PATCH /api/v1/pools/{name} and the serve
// configuration's pools (docs/api.md#pools) write the same attributes the same way.
// The pool API adds "name", "parent" and null (back to the default); a
// snapshot adds "pool", "children" and accumulated_resource_volume.

// poolAttrKeys are the attributes of tree.PoolConfig, in the order
// UnknownKey's suggestions prefer them.
var poolAttrKeys = []string{"mode", "weight", "strong_guarantee_resources", "min_share_resources",
	"resource_limits", "max_operation_count", "max_running_operation_count", "fifo_sort_parameters",
	"enable_lightweight_operations", "integral_guarantees", "fair_share_starvation_timeout_s",
	"fair_share_starvation_tolerance", "enable_aggressive_starvation", "allow_aggressive_preemption",
	"allow_normal_preemption", "non_preemptible_resource_usage_threshold", "compute_promised_guarantee_fair_share",
	"enable_priority_strong_guarantee_adjustment", "enable_priority_strong_guarantee_adjustment_donorship",
	"scheduling_tag_filter"}

var poolIGKeys = []string{"guarantee_type", "resource_flow", "burst_guarantee_resources",
	"relaxed_share_multiplier_limit", "can_accept_free_volume", "should_distribute_free_volume_among_children"}

// The strings of the enumerations in configurations and operation specs.
var (
	poolModes      = map[string]tree.Mode{"fair_share": tree.ModeFairShare, "fifo": tree.ModeFIFO}
	guaranteeTypes = map[string]tree.GuaranteeType{
		"none": tree.GuaranteeNone, "burst": tree.GuaranteeBurst, "relaxed": tree.GuaranteeRelaxed}
	fifoSortParams = map[string]tree.FifoSortParam{"weight": tree.FifoWeight, "start_time": tree.FifoStartTime,
		"pending_job_count": tree.FifoPendingJobCount, "pending_allocation_count": tree.FifoPendingJobCount}
	preemptionModes = map[string]schedule.PreemptionMode{
		"normal": schedule.PreemptionNormal, "graceful": schedule.PreemptionGraceful}
)

// poolAttr returns a pointer to the field of c that pool attribute k sets,
// or nil when k is none of poolAttrKeys. Both names of the strong guarantee
// point to StrongGuarantee.
func poolAttr(c *tree.PoolConfig, k string) any {
	switch k {
	case "mode":
		return &c.Mode
	case "weight":
		return &c.Weight
	case "strong_guarantee_resources", "min_share_resources":
		return &c.StrongGuarantee
	case "resource_limits":
		return &c.ResourceLimits
	case "max_operation_count":
		return &c.MaxOperationCount
	case "max_running_operation_count":
		return &c.MaxRunningOperationCount
	case "fifo_sort_parameters":
		return &c.FifoSortParameters
	case "enable_lightweight_operations":
		return &c.EnableLightweightOperations
	case "integral_guarantees":
		return &c.Integral
	case "fair_share_starvation_timeout_s":
		return &c.FairShareStarvationTimeout
	case "fair_share_starvation_tolerance":
		return &c.FairShareStarvationTolerance
	case "enable_aggressive_starvation":
		return &c.EnableAggressiveStarvation
	case "allow_aggressive_preemption":
		return &c.AllowAggressivePreemption
	case "allow_normal_preemption":
		return &c.AllowNormalPreemption
	case "non_preemptible_resource_usage_threshold":
		return &c.NonPreemptibleResourceUsageThreshold
	case "compute_promised_guarantee_fair_share":
		return &c.ComputePromisedGuaranteeFairShare
	case "enable_priority_strong_guarantee_adjustment":
		return &c.EnablePriorityStrongGuaranteeAdjustment
	case "enable_priority_strong_guarantee_adjustment_donorship":
		return &c.EnablePriorityStrongGuaranteeAdjustmentDonorship
	case "scheduling_tag_filter":
		return &c.SchedulingTagFilter
	}
	return nil
}

// integralAttr is poolAttr for the keys of a pool's integral_guarantees.
func integralAttr(ig *tree.IntegralConfig, k string) any {
	switch k {
	case "guarantee_type":
		return &ig.Type
	case "resource_flow":
		return &ig.ResourceFlow
	case "burst_guarantee_resources":
		return &ig.BurstGuarantee
	case "relaxed_share_multiplier_limit":
		return &ig.RelaxedShareMultiplierLimit
	case "can_accept_free_volume":
		return &ig.CanAcceptFreeVolume
	case "should_distribute_free_volume_among_children":
		return &ig.ShouldDistributeFreeVolume
	}
	return nil
}

// decodePoolAttr decodes attribute k of the pool object m, the value x at
// path p, into c. It reports false, and leaves c alone, when k is no pool
// attribute. Values are checked here as far as their type goes; ranges and
// consistency are tree.ValidatePool's.
func decodePoolAttr(c *tree.PoolConfig, m map[string]any, k, p string, x any) (bool, *Error) {
	f := poolAttr(c, k)
	if f == nil {
		return false, nil
	}
	if k == "min_share_resources" {
		if _, both := m["strong_guarantee_resources"]; both {
			return true, jsonpath.NewError(CodeInvalidValue, p, "cannot give both min_share_resources and strong_guarantee_resources: min_share_resources is its old name")
		}
	}
	return true, decodeAttr(f, p, x)
}

// strongAliased reports whether the pool object m gives its strong guarantee
// under the old name, so that tree errors name min_share_resources.
func strongAliased(m map[string]any) bool {
	x, ok := m["min_share_resources"]
	return ok && x != nil
}

// decodeAttr decodes the value x at path p into f, a field from poolAttr or
// integralAttr: the field's type decides the JSON form. On error a scalar
// field is left alone and integral_guarantees may be partly applied; callers
// drop the whole configuration then.
func decodeAttr(f any, p string, x any) *Error {
	switch f := f.(type) {
	case *bool:
		b, e := jsonpath.Bool(p, x)
		return set(f, b, e)
	case *tree.OptBool:
		b, e := jsonpath.Bool(p, x)
		return set(f, tree.SomeBool(b), e)
	case *tree.OptFloat:
		v, e := jsonpath.Number(p, x)
		return set(f, tree.Some(v), e)
	case *tree.OptDuration:
		v, e := jsonpath.Number(p, x)
		return set(f, tree.SomeDuration(clock.DurationFromSeconds(v)), e)
	case *tree.OptInt:
		n, e := jsonpath.Count(p, x)
		return set(f, tree.SomeInt(n), e)
	case *tree.PartialVec:
		v, e := resources(p, x)
		return set(f, v, e)
	case *tree.Mode:
		m, e := jsonpath.Lookup(p, x, poolModes, `"fair_share" or "fifo"`)
		return set(f, m, e)
	case *tree.GuaranteeType:
		t, e := jsonpath.Lookup(p, x, guaranteeTypes, "one of none, burst, relaxed")
		return set(f, t, e)
	case *[]tree.FifoSortParam:
		ps, e := fifoSortParameters(p, x)
		return set(f, ps, e)
	case *tree.IntegralConfig:
		return poolIntegral(p, x, f)
	case *tagfilter.Filter:
		flt, e := tagFilter(p, x)
		return set(f, flt, e)
	}
	panic("BUG: wire: no decoder for a configuration field of this type")
}

// set stores v in *f unless e is an error, and returns e.
func set[T any](f *T, v T, e *Error) *Error {
	if e == nil {
		*f = v
	}
	return e
}

// resetAttr sets f, a field from poolAttr, to its default: a PATCH's null.
// Every default is the zero value (tree.PoolConfig's zero value is the
// default pool).
func resetAttr(f any) {
	switch f := f.(type) {
	case *bool:
		*f = false
	case *tree.OptBool:
		*f = tree.OptBool{}
	case *tree.OptFloat:
		*f = tree.OptFloat{}
	case *tree.OptDuration:
		*f = tree.OptDuration{}
	case *tree.OptInt:
		*f = tree.OptInt{}
	case *tree.PartialVec:
		*f = tree.PartialVec{}
	case *tree.Mode:
		*f = tree.ModeFairShare
	case *[]tree.FifoSortParam:
		*f = nil
	case *tree.IntegralConfig:
		*f = tree.IntegralConfig{}
	case *tagfilter.Filter:
		*f = tagfilter.Filter{}
	default:
		panic("BUG: wire: no default for a configuration field of this type")
	}
}

// tagFilter decodes a scheduling_tag_filter (docs/semantics.md#scheduling-tag-filters): a formula
// string, "" for none. A formula that does not parse is an invalid_value
// at path whose message names the offset and what was expected there.
func tagFilter(path string, v any) (tagfilter.Filter, *Error) {
	s, e := jsonpath.String(path, v)
	if e != nil {
		return tagfilter.Filter{}, e
	}
	f, err := tagfilter.Parse(s)
	if err != nil {
		return tagfilter.Filter{}, jsonpath.NewError(CodeInvalidValue, path, err.Error())
	}
	return f, nil
}

func fifoSortParameters(path string, v any) ([]tree.FifoSortParam, *Error) {
	a, e := jsonpath.Array(path, v)
	if e != nil {
		return nil, e
	}
	ps := make([]tree.FifoSortParam, 0, len(a))
	for i, x := range a {
		fp, e := jsonpath.Lookup(jsonpath.Index(path, i), x, fifoSortParams,
			"one of weight, start_time, pending_allocation_count (pending_job_count)")
		if e != nil {
			return nil, e
		}
		ps = append(ps, fp)
	}
	return ps, nil
}

// poolIntegral applies the keys of a pool's integral_guarantees to ig.
func poolIntegral(path string, v any, ig *tree.IntegralConfig) *Error {
	m, e := jsonpath.Object(path, v)
	if e != nil {
		return e
	}
	for _, k := range jsonpath.SortedKeys(m) {
		f := integralAttr(ig, k)
		if f == nil {
			return jsonpath.UnknownKey(path, k, poolIGKeys, "a pool's integral_guarantees")
		}
		if e := decodeAttr(f, jsonpath.Key(path, k), m[k]); e != nil {
			return e
		}
	}
	return nil
}
