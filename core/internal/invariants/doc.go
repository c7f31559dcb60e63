// Package invariants gates expensive consistency checks behind a build tag, in the style
// of cockroachdb/pebble's internal/invariants: they run under "go test -tags invariants"
// and "go test -race" and compile to nothing otherwise. A failed check is a bug in
// fairsched, never bad input, and panics with a message starting "BUG: ".
//
// The package has no dependencies beyond fmt and may be imported by any core package.
package invariants
