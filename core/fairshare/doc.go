// Package fairshare computes fair shares: the Vector HDRF update of spec.md §2.
//
// An Updater is bound to one pool tree. Each call of Update computes, for
// every element, the fair share and its decomposition into strong-guarantee,
// integral-guarantee and weight-proportional parts, plus the shares and
// integral volumes of api.md §5. Time is an argument in virtual seconds; the
// package reads no clock.
//
// The pipeline follows the reference's order (spec.md §2.1): strong-guarantee
// inference (§2.2), bottom-up attributes, integral volume accounting (§2.5),
// guarantee adjustment (§2.3–2.4), burst and relaxed integral shares
// (§2.6–2.7), the fair-share functions (§2.8), the top-down distribution
// (§2.9), promised-guarantee fair share (§2.11) and the root (§2.10).
//
// Layout (style.md §2): the state is split by who reads it. Attributes (the
// output) and a small elem (functions by suggestion, generations) are
// indexed by tree.ID; operations' cached inputs are indexed by tree.ID too;
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
package fairshare
