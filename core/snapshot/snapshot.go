// Package snapshot is the model of a solve snapshot (docs/api.md#solve) in core
// types, and Solve, which runs its updates on the fair-share core.
//
// Decoding from JSON lives in wire; this package holds no encoding.
package snapshot

import (
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Snapshot is a pool tree with operations, the cluster's resources and a list
// of fair-share updates to run on virtual time.
type Snapshot struct {
	Total  resource.Vec
	Config fairshare.Config
	// Root describes the root pool; its Children are the tree.
	Root    Element
	Updates []Update
}

// Element is a pool or an operation of the snapshot's tree.
type Element struct {
	Name        string
	IsOperation bool
	// Path is the element's JSON path, for error messages.
	Path string

	Pool tree.PoolConfig // pools
	// AccumulatedVolume is an integral pool's initial volume in
	// resource·seconds (cpu in centi-core·seconds, like Vec).
	AccumulatedVolume [resource.Count]float64

	Op           tree.OperationSpec // operations
	Demand       resource.Vec
	Usage        resource.Vec
	JobResources resource.Vec // optional size of one job (informational)

	Children []Element
}

// Update is one fair-share update.
type Update struct {
	// Elapsed is the virtual time since the previous update; HasElapsed is
	// false for the first update after start (no integral refill).
	Elapsed    clock.Duration
	HasElapsed bool
	Label      string
	// Config, when non-nil, is the tree config of this update only: the
	// snapshot's config with the update's fields applied.
	Config *fairshare.Config
	// Total, when non-nil, is the total resources of this update only.
	Total *resource.Vec
	// Set changes element attributes before the update runs; the changes
	// persist for the following updates.
	Set []Assignment
}

// Attr names an attribute an Assignment may change.
type Attr uint8

// Settable attributes.
const (
	AttrDemand Attr = iota
	AttrUsage
	AttrWeight
	AttrResourceLimits
	AttrStrongGuarantee
)

// Assignment changes one attribute of one element before an update.
type Assignment struct {
	Element string
	Attr    Attr
	Vec     tree.PartialVec // demand, usage, resource_limits, strong_guarantee_resources
	Num     float64         // weight
	Path    string          // JSON path, for error messages
}

// Result is the output of Solve: one entry per update.
type Result struct {
	Updates []UpdateResult
}

// UpdateResult holds every element's attributes after one update, in tree
// pre-order with the root first.
type UpdateResult struct {
	Label    string
	Elements []ElementResult
}

// ElementResult is one element's attributes.
type ElementResult struct {
	Name        string
	IsOperation bool
	Attrs       fairshare.Attributes
	// FittingJobs is, for operations with JobResources, how many whole jobs
	// fit into the fair share (the DRF paper's task counts).
	FittingJobs int64
}
