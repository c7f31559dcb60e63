package wire

import (
	"math"
	"strconv"

	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/snapshot"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// AppendSolveResult appends the JSON of a solve result (docs/api.md#solve) to dst and
// returns the extended buffer:
//
//	{"updates":[{"label":"…","elements":{"<Root>":{…},"PoolA":{…}}}]}
//
// Elements appear in the order of r (tree pre-order, root first); "label" is
// left out when empty. Per element it writes fair_share, detailed
// {strong_guarantee, integral_guarantee, weight_proportional}, usage_share,
// demand_share, limits_share, strong_guarantee_share, proposed_integral_share,
// promised_guarantee_fair_share (resource maps of shares), weight and
// dominant_resource; fitting_jobs for operations with FittingJobs > 0; and for
// pools with an integral guarantee integral_guarantee_type,
// accumulated_resource_volume (resource·seconds, cpu in core·seconds, as
// fairshare.IntegralAttributes holds it), accumulated_resource_ratio_volume,
// integral_pool_capacity, the four ratios and, for burst pools,
// estimated_burst_usage_duration_seconds. Numbers are written with
// strconv.AppendFloat(…, 'g', -1, 64); a non-finite number (an infinite burst
// duration, or a NaN that would be a bug) is written as null.
//
// The output is deterministic: the same result gives the same bytes. It
// allocates only to grow dst.
func AppendSolveResult(dst []byte, r *snapshot.Result) []byte {
	dst = append(dst, `{"updates":[`...)
	for i := range r.Updates {
		if i > 0 {
			dst = append(dst, ',')
		}
		u := &r.Updates[i]
		dst = append(dst, '{')
		if u.Label != "" {
			dst = append(dst, `"label":`...)
			dst = jsonpath.AppendString(dst, u.Label)
			dst = append(dst, ',')
		}
		dst = append(dst, `"elements":{`...)
		for j := range u.Elements {
			if j > 0 {
				dst = append(dst, ',')
			}
			e := &u.Elements[j]
			dst = jsonpath.AppendString(dst, e.Name)
			dst = append(dst, ':')
			dst = appendElement(dst, e)
		}
		dst = append(dst, "}}"...)
	}
	return append(dst, "]}"...)
}

func appendElement(dst []byte, e *snapshot.ElementResult) []byte {
	a := &e.Attrs
	dst = appendShares(append(dst, '{'), a)
	if e.IsOperation && e.FittingJobs > 0 {
		dst = append(dst, `,"fitting_jobs":`...)
		dst = strconv.AppendInt(dst, e.FittingJobs, 10)
	}
	if !e.IsOperation && a.Integral.Type != tree.GuaranteeNone {
		dst = appendIntegral(dst, &a.Integral)
	}
	return append(dst, '}')
}

// appendShares appends the fair-share attributes of a pool or an operation
// (docs/api.md#the-orchid, docs/api.md#solve) as members of an object, the solve result's and the
// orchid's alike: fair_share with its detailed parts, usage_share,
// demand_share, limits_share, strong_guarantee_share,
// proposed_integral_share, promised_guarantee_fair_share, weight and
// dominant_resource. The caller writes what goes before ('{' or ',').
func appendShares(dst []byte, a *fairshare.Attributes) []byte {
	dst = append(dst, `"fair_share":`...)
	dst = appendShare(dst, &a.FairShare.Total)
	dst = append(dst, `,"detailed":{"strong_guarantee":`...)
	dst = appendShare(dst, &a.FairShare.StrongGuarantee)
	dst = append(dst, `,"integral_guarantee":`...)
	dst = appendShare(dst, &a.FairShare.IntegralGuarantee)
	dst = append(dst, `,"weight_proportional":`...)
	dst = appendShare(dst, &a.FairShare.WeightProportional)
	dst = append(dst, `},"usage_share":`...)
	dst = appendShare(dst, &a.UsageShare)
	dst = append(dst, `,"demand_share":`...)
	dst = appendShare(dst, &a.DemandShare)
	dst = append(dst, `,"limits_share":`...)
	dst = appendShare(dst, &a.LimitsShare)
	dst = append(dst, `,"strong_guarantee_share":`...)
	dst = appendShare(dst, &a.StrongGuaranteeShare)
	dst = append(dst, `,"proposed_integral_share":`...)
	dst = appendShare(dst, &a.ProposedIntegralShare)
	dst = append(dst, `,"promised_guarantee_fair_share":`...)
	dst = appendShare(dst, &a.PromisedGuaranteeFairShare.Total)
	dst = append(dst, `,"weight":`...)
	dst = appendFloat(dst, a.Weight)
	dst = append(dst, `,"dominant_resource":"`...)
	dst = append(dst, a.DominantResource.String()...)
	return append(dst, '"')
}

func appendIntegral(dst []byte, ig *fairshare.IntegralAttributes) []byte {
	dst = append(dst, `,"integral_guarantee_type":"`...)
	dst = append(dst, ig.Type.String()...)
	dst = append(dst, `","accumulated_resource_volume":`...)
	dst = appendResourceFloats(dst, &ig.AccumulatedVolume)
	dst = append(dst, `,"accumulated_resource_ratio_volume":`...)
	dst = appendFloat(dst, ig.AccumulatedResourceRatioVolume)
	dst = append(dst, `,"integral_pool_capacity":`...)
	dst = appendResourceFloats(dst, &ig.Capacity)
	dst = append(dst, `,"specified_burst_ratio":`...)
	dst = appendFloat(dst, ig.SpecifiedBurstRatio)
	dst = append(dst, `,"specified_resource_flow_ratio":`...)
	dst = appendFloat(dst, ig.SpecifiedResourceFlowRatio)
	dst = append(dst, `,"total_burst_ratio":`...)
	dst = appendFloat(dst, ig.TotalBurstRatio)
	dst = append(dst, `,"total_resource_flow_ratio":`...)
	dst = appendFloat(dst, ig.TotalResourceFlowRatio)
	if ig.Type == tree.GuaranteeBurst {
		dst = append(dst, `,"estimated_burst_usage_duration_seconds":`...)
		dst = appendFloat(dst, ig.EstimatedBurstUsageDurationSeconds)
	}
	return dst
}

// resourceKeys are the JSON keys of a resource map, each preceded by the
// separator that goes before it.
var resourceKeys = [resource.Count]string{`{"user_slots":`, `,"cpu":`, `,"gpu":`, `,"memory":`, `,"network":`}

func appendShare(dst []byte, s *resource.Share) []byte {
	return appendResourceFloats(dst, (*[resource.Count]float64)(s))
}

// appendResourceFloats appends a resource map of plain numbers.
func appendResourceFloats(dst []byte, v *[resource.Count]float64) []byte {
	for k := range v {
		dst = append(dst, resourceKeys[k]...)
		dst = appendFloat(dst, v[k])
	}
	return append(dst, '}')
}

// appendFloat appends f as a JSON number, or null when f is not finite.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// AppendError appends the error body of docs/api.md#errors to dst:
//
//	{"error":{"code":"…","message":"…","path":"…"}}
//
// "path" is left out when e.Path is empty.
func AppendError(dst []byte, e *Error) []byte {
	dst = append(dst, `{"error":`...)
	dst = AppendErrorObject(dst, e)
	return append(dst, '}')
}

// AppendErrorObject appends the error object alone, {"code", "message",
// "path"} (path left out when empty): the value of "error" in an error
// body, and in an entry of a batch's answer.
func AppendErrorObject(dst []byte, e *Error) []byte {
	dst = append(dst, `{"code":`...)
	dst = jsonpath.AppendString(dst, e.Code)
	dst = append(dst, `,"message":`...)
	dst = jsonpath.AppendString(dst, e.Message)
	if e.Path != "" {
		dst = append(dst, `,"path":`...)
		dst = jsonpath.AppendString(dst, e.Path)
	}
	return append(dst, '}')
}
