package limits

import (
	"slices"

	"github.com/fairsched/fairsched/core/tree"
)

// Clone returns a copy of the limits for t, a copy of the tree they were
// built on (tree.Tree.Clone, with the same IDs): the same counts, states
// and pending queues, in the same order. Mutations of either copy leave the
// other as it was. It allocates O(elements); it is meant for previews.
func (l *Limits) Clone(t *tree.Tree) *Limits {
	return &Limits{
		t:     t,
		cfg:   l.cfg,
		pools: slices.Clone(l.pools),
		ops:   slices.Clone(l.ops),
		seq:   l.seq,
	}
}
