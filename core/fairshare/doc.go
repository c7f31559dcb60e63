// Package fairshare computes fair shares: the Vector HDRF update of docs/semantics.md#fair-share.
//
// An Updater is bound to one pool tree. Each call of Update computes, for
// every element, the fair share and its decomposition into strong-guarantee,
// integral-guarantee and weight-proportional parts, plus the shares and
// integral volumes of docs/api.md#the-orchid. Time is an argument, a clock.Time (whole
// microseconds); the volume arithmetic converts the elapsed span to seconds
// once per update. The package reads no clock.
//
// The pipeline follows the reference's order (docs/semantics.md#fair-share): strong-guarantee
// inference, bottom-up attributes, integral volume accounting,
// guarantee adjustment, burst and relaxed integral shares, the fair-share
// functions, the top-down distribution, promised-guarantee fair share and
// the root (docs/design/fair-share.md).
//
// Layout (flat arrays by element ID): the state is split by who reads it. Attributes (the
// output), a small elem (kind and pool slot) and the operations' raw inputs
// are indexed by tree.ID; the functions by suggestion, the weights and the
// top-down pass's node states are indexed by position, an element's index in
// the list of all pools' children, so that a pool's children are adjacent;
// everything only pools have (subtree totals, guarantees, integral volumes,
// fit-factor functions) lives in a dense table of pool slots. Operations are
// visited once per update, in ID order (updateOperations): that pass
// detects their changes, rebuilds their functions and sums their usage and
// demand into their parents, so the bottom-up and top-down passes over pools
// skip them. Only the top-down distribution visits operations again, and
// only below pools whose distribution changed.
//
// Ownership and allocation: the Updater owns per-element state and every
// function buffer; they are reused across updates, so a steady tree updates
// without allocating. An Updater is not safe for concurrent use; the caller
// serialises Update with tree mutations.
//
// Concurrency inside an update (parallel.go): the function building and the
// top-down pass of disjoint subtrees run on up to GOMAXPROCS goroutines,
// started by Update for each parallel phase and finished before the phase
// ends, so none outlives Update and an Updater needs no Close. The results
// are the same bit for bit for any GOMAXPROCS.
//
// # Files
//
// One file per phase, in the order Update runs them:
//
//   - update.go: the Updater, New and Update, which calls the phases in
//     spec order.
//   - state.go, layout.go: the per-element and per-pool state, and its
//     layout after structural changes of the tree.
//   - validate.go: configuration alerts (step 1 of the update).
//   - guarantees.go: strong guarantee inference, adjustment
//     and weight inference.
//   - bottomup.go: the operations' inputs and the pools' subtree attributes
//     (step 4 of the update), FIFO order.
//   - integral.go: integral volumes, refilled and consumed in refill,
//     the burst and relaxed pools' integral shares.
//   - functions.go, sweep.go, envelope.go: the fair-share functions:
//     FSBFF of operations and pools (the sweep over children's critical
//     points), FSBS and MFFBS from FSBFF, compression.
//   - distribute.go: the top-down distribution, classic and improved.
//   - parallel.go: the workers of the parallel phases and the cut of the
//     tree into subtrees they take.
//   - promised.go: promised-guarantee fair share.
//   - detailed.go: the detailed decomposition and the root.
//   - invariants.go: the fair-share sums checked after every update under
//     -tags invariants and -race.
//
// Beside them, config.go holds Config and the per-element Attributes an
// update produces, and settings.go the table of the fair-share config's keys
// (their ranges, defaults and docs; see core/settings).
//
// # Terms
//
// The code uses the reference's abbreviations. Shares are fractions of the
// tree's total resources, one per resource (resource.Share).
//
//   - Suggestion (s, sug): the scalar in [0, 1] a parent offers a child on
//     top of the child's guarantee share; the root gets 1.
//   - Fit factor (f, ff): the monotone parameter of an element's FSBFF. For
//     an operation f ∈ [0, 2], f = 1 being its usage and f = 2 its demand;
//     for a fair-share pool f ∈ [0, 1] in the classic mode, child i getting
//     suggestion min(1, f·w_i/w_min) (w_min: the smallest child weight above
//     resource.Epsilon); for a FIFO pool f ∈ [0, n], child k getting
//     clamp(f − k, 0, 1). In the improved mode every critical point of
//     a fair-share pool takes one unit of f instead.
//   - FSBFF, fair share by fit factor: the share an element takes at fit
//     factor f; a pool's is built from its children's FSBS.
//   - MFFBS, max fit factor by suggestion: the largest fit factor an element
//     can take at suggestion s within its guarantee share + s and its limits
//     share. Kept only in the classic mode (poolState.mffbs).
//   - FSBS, fair share by suggestion: FSBFF∘MFFBS, the share an element
//     takes at suggestion s. Built by bySuggestion (envelope.go).
//   - Guarantee share (G): strong guarantee share + proposed integral share,
//     what an element takes at suggestion 0 if it needs it.
//   - Strong guarantee share: the inferred and adjusted
//     strong guarantee as a share. Tiers: its priority and regular parts.
//   - Burst ratio, flow ratio: an integral pool's burst guarantee and
//     resource flow as their maximum share of the total; total_*: own plus
//     descendants'.
//   - Volume (accumulated volume): an integral pool's saved resource·seconds.
//     Volume ratio: the integral share it sustains for one smooth
//     period. Capacity: the volume the flow fills in the pool capacity
//     saturation period. Overflow, acceptable: volume above the capacity and
//     room below it, passed up and redistributed as free volume.
//   - Proposed integral share: an integral pool's (and its ancestors')
//     integral guarantee for this update. Last share ratio: its
//     maximum component, paid from the volume at the next update.
//   - Hierarchical available limits: limits share − guarantee share, the
//     minimum over an element and its non-root ancestors.
//   - Temporary functions (tmpFsbs): an integral pool's FSBS under the
//     burst pass's guarantee or the relaxed pass's limits.
//   - Critical point (cp): an argument where a child's scaled FSBS bends or
//     jumps; the improved mode lays out jumps one child at a time.
//   - Classic, improved mode: Config.EnableImprovedFitFactor, the reference's
//     enable_improved_fair_share_by_fit_factor_computation.
//   - Left-continuous: at a jump a function takes its left limit.
//   - Detailed: a fair share split into strong-guarantee, integral-guarantee
//     and weight-proportional parts.
//   - Promised-guarantee fair share: what a pool gets from its guarantees
//     alone, a top-down pass from suggestion 0.
//   - Position (pos): an element's index in the children list, by which
//     functions and node states are stored; pool slot: a pool's index in the
//     pool table (see Layout above).
//   - Generation (gen, fnGen, fsbffGen): a number drawn whenever a function
//     is rebuilt, never the same twice (each worker draws from its own
//     range); parents key their own functions on their children's
//     generations so that unchanged functions are kept across updates.
package fairshare
