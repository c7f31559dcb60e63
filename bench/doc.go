// Package bench holds fairsched's cross-package benchmark suites at realistic
// sizes: the standard scenarios of bench/README.md, whose names are fixed
// (reports and comparisons rely on them; add more, never rename). See
// README.md for how to run them and the latest measured medians;
// bench/results/*.txt keep the raw runs in benchstat format.
//
// The package holds only tests. Nothing imports it (internal/lint enforces
// that), and it may import any package of the module.
package bench
