// Package schedule is fairsched's scheduling core (spec.md §3–§7): it admits
// operations, answers node heartbeats with the allocations to start, preempt
// and abort, and runs the fair-share update that everything is judged by.
//
// # State and concurrency
//
// The Scheduler splits its state into a control plane and node shards.
//
//   - The control plane (Scheduler.mu) owns the pool tree, the operation
//     limits and pending queues (core/limits), the fair-share updater and the
//     table of operations. Starting, completing, aborting and moving
//     operations, pool changes and UpdateFairShare take it.
//   - Nodes are sharded by a hash of their name (Config.Shards); each shard's
//     mutex guards its nodes and their allocations. Heartbeats of nodes in
//     different shards run in parallel and never take the control lock.
//   - What heartbeats need from the control plane is published after every
//     fair-share update as an immutable Snapshot behind an atomic pointer:
//     the schedulable operations with their fair, demand and limit shares and
//     statuses.
//   - Live per-operation state shared between shards — usage, pending jobs per
//     task, unfinished job counts, the operation's state — and the usage of
//     every pool with resource limits are atomics, so a heartbeat changes them
//     without a lock.
//
// Lock order: Scheduler.mu before any shard mutex; shard mutexes are taken
// one at a time, never two together; registry.mu (node names) is a leaf.
// A heartbeat that finishes an operation's last job does not take the
// control lock: it marks the operation completed (atomically) and queues it;
// the control plane retires queued operations on its next call.
//
// Time is virtual: every entry point takes now in seconds. The package reads
// no clock and does no I/O.
package schedule
