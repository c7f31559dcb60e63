package schedule

import (
	"strconv"

	"github.com/fairsched/fairsched/core/resource"
)

// checkNodeLimits refuses a heartbeat whose resource_limits exceed
// max_node_resource_limits in some resource (the first, in resource order),
// before anything of it applies: a node cannot claim more than a bounded
// part of the cluster, nor make the scheduler start an unbounded number of
// allocations on it. The caller holds a shard's lock (s.cfg is written
// under every shard's).
func (s *Scheduler) checkNodeLimits(hb *NodeHeartbeat) error {
	max := &s.cfg.MaxNodeResourceLimits
	if *max == (resource.Vec{}) {
		return nil // a Config built in code without the bound
	}
	for k, v := range hb.Limits {
		if v > max[k] {
			kind := resource.Kind(k)
			return errorf(CodeInvalidValue, "resource_limits."+kind.String(),
				"cannot register node %q with %s %s: above max_node_resource_limits (%s)",
				hb.Node, kind.String(), amount(kind, v), amount(kind, max[k]))
		}
	}
	return nil
}

// amount writes a resource amount as the API does: cpu in cores.
func amount(k resource.Kind, v int64) string {
	if k == resource.CPU {
		return strconv.FormatFloat(float64(v)/resource.CPUScale, 'g', -1, 64)
	}
	return strconv.FormatInt(v, 10)
}
