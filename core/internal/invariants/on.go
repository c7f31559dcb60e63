//go:build invariants || race

package invariants

import "fmt"

// Enabled is true when the binary was built with the "invariants" tag or with -race.
// Guard expensive checks with it so that they compile away otherwise:
//
//	if invariants.Enabled {
//		invariants.Check(sumChildren <= parent, "children's fair share %v exceeds parent's %v", sumChildren, parent)
//	}
const Enabled = true

// Check panics with "BUG: " followed by the formatted message if cond is false.
// It is a no-op in builds without the invariants tag or -race.
func Check(cond bool, format string, args ...any) {
	if !cond {
		panic("BUG: " + fmt.Sprintf(format, args...))
	}
}
