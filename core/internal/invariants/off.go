//go:build !invariants && !race

package invariants

// Enabled is true when the binary was built with the "invariants" tag or with -race.
// Guard expensive checks with it so that they compile away otherwise:
//
//	if invariants.Enabled {
//		invariants.Check(sumChildren <= parent, "children's fair share %v exceeds parent's %v", sumChildren, parent)
//	}
const Enabled = false

// Check panics with "BUG: " followed by the formatted message if cond is false.
// It is a no-op in builds without the invariants tag or -race.
//
// NB: the arguments are still evaluated at the call site; wrap calls whose arguments
// cost anything (loops, sums, conversions to interfaces of non-constant values in hot
// paths) in "if invariants.Enabled".
func Check(cond bool, format string, args ...any) {}
