// Package starvation holds the post-update judgements of docs/semantics.md#satisfaction-and-status:
// satisfaction ratios and the below-fair-share status (satisfaction.go), and
// the starvation state machine, where the starvation timeouts are applied
// (timeout.go). Everything here is a pure function of shares and virtual
// time (core/clock).
package starvation
