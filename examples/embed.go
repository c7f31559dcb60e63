// Package examples holds the shipped example inputs: solve snapshots
// (demo.json, drf-paper.json, hierarchy.json) and the default configuration
// of fairsched serve (serve.json), which this package embeds.
package examples

import _ "embed"

// ServeConfig is serve.json: the tree config and the demonstration pools
// that fairsched serve runs with when it is given no --config — a burst
// production pool, a relaxed research pool and an ad-hoc fifo pool with
// lightweight operations.
//
//go:embed serve.json
var ServeConfig []byte
