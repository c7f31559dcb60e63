package schedule

import (
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/tree"
)

// applyPoolMutations is what ApplyPools does to the pool tree and the
// operation limits, shared with the what-if sandbox (whatif.go) so that a
// previewed change is validated and applied exactly as the real one: only
// pool mutations, applied whole or not at all by the tree; pools that moved
// re-check their pending queues; raised limits start queued operations. It
// returns the index of a refused mutation (-1 when none) and scratch, and
// changes nothing when it refuses.
func applyPoolMutations(t *tree.Tree, l *limits.Limits, scratch []tree.ID, ms []tree.Mutation) (int, []tree.ID, error) {
	for i, m := range ms {
		switch m.Kind {
		case tree.AddPool, tree.SetPool, tree.RemovePool:
		default:
			return i, scratch, errorf(CodeInvalidValue, "", "cannot apply an operation mutation to the pool tree: use StartOperation")
		}
	}
	type move struct{ pool, oldParent tree.ID }
	var moves []move
	for _, m := range ms {
		if m.Kind == tree.SetPool && m.Parent != "" {
			if id, ok := t.Lookup(m.Name); ok && !t.IsOperation(id) {
				moves = append(moves, move{id, t.Parent(id)})
			}
		}
	}
	i, err := t.Apply(ms...)
	if err != nil {
		return i, scratch, err
	}
	for _, mv := range moves {
		if t.Parent(mv.pool) != mv.oldParent {
			scratch = l.PoolMoved(mv.pool, mv.oldParent, scratch[:0])
		}
	}
	// Limits may have been raised: re-check the pending queues.
	scratch = l.RescanAll(scratch[:0])
	return -1, scratch, nil
}

// checkRuntimeConfig is SetConfig's validation, shared with the what-if
// sandbox: the shard count cannot change at run time (0 keeps it), and
// the configuration must pass ValidateConfig.
func checkRuntimeConfig(cfg *Config, shards int) error {
	if cfg.Shards != 0 && cfg.Shards != shards {
		return errorf(CodeInvalidValue, "shards", "cannot change the shard count at run time (have %d)", shards)
	}
	return ValidateConfig(cfg)
}
