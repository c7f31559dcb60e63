// Package schedule is fairsched's scheduling core (docs/semantics.md): it admits
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
//
//   - Nodes are sharded by a hash of their name (Config.Shards); each shard's
//     mutex guards its nodes and their allocations. Heartbeats of nodes in
//     different shards run in parallel and never take the control lock.
//
//   - What heartbeats need from the control plane is published after every
//     fair-share update as an immutable Snapshot behind an atomic pointer:
//     the schedulable operations with their fair, demand and limit shares and
//     statuses.
//
//   - Live per-operation state shared between shards — usage, pending jobs per
//     task, unfinished job counts, the operation's state — and the usage of
//     every pool with resource limits are atomics, so a heartbeat changes them
//     without a lock.
//
//   - Each shard keeps an index of the snapshot's operations (a heap by
//     satisfaction with live usage, refreshed lazily; see opIndex) for the
//     regular stage's search, so a heartbeat does not scan every operation.
//
//   - Each operation keeps its allocations' preemption statuses
//     (docs/semantics.md#preemption-statuses) in one list in start order cut in three by two boundaries, under
//     its own mutex, because its allocations live on nodes of every shard.
//     An allocation's status is where its rank falls between the
//     boundaries' ranks, which the operation publishes under a sequence
//     lock: a heartbeat reads the statuses of its node's allocations
//     without their operations' mutexes, and moving a boundary writes
//     nothing outside the operation.
//
// Lock order:
//
//	Scheduler.mu → shard.mu → operation.pre.mu
//
// Locks are only ever taken in this order, and any of them may be skipped (a
// heartbeat starts at a shard mutex; the fair-share publish goes from
// Scheduler.mu straight to operation mutexes). Heartbeats and the node
// sweep take shard mutexes one at a time; only the control plane, to swap
// limit counters exactly (pool limits change, an operation moves), holds
// all of them, taken in index order. Operation mutexes are taken one at a
// time; registry.mu (node names) and finishedMu are leaves. A heartbeat that finishes an operation's last job
// does not take the control lock: it marks the operation completed
// (atomically) and queues it; the control plane retires queued operations
// on its next call.
//
// # Allocations and preemption
//
// Allocation structs have stable addresses from start to release and are
// recycled through a per-shard free list; a node's allocations are kept
// sorted by ID. A preempted allocation leaves its operation's status lists
// and the limit counters at once, but keeps its resources on the node and
// in the operation's usage until the node reports it finished (or, after
// its deadline, is told to abort): a node's usage exceeds its limits only
// by preempted allocations. Heartbeats that change nothing, or that start,
// complete and preempt allocations into a reused Response, do not allocate.
//
// Time is virtual: every entry point takes now as a clock.Time (whole
// microseconds since the caller's epoch) and every configured span is a
// clock.Duration. The package reads no clock and does no I/O.
//
// # Where things are
//
//   - heartbeat.go: the heartbeat's decisions (start, preempt, abort) and
//     Heartbeat itself, which runs the stages below in docs/semantics.md#scheduling-on-a-heartbeat's order;
//   - regular_stage.go: the regular (non-preemptive) stage;
//   - preemptive_stages.go: the preemptive stages and which operations they
//     start for; victims.go: how victims are chosen and preempted;
//     graceful.go: graceful preemption; overcommit.go: the
//     node overcommit abort;
//   - preemption_status.go: allocations' preemption statuses, the
//     per-operation status lists;
//   - update.go: UpdateFairShare and what it publishes (the Snapshot,
//     starvation of operations and pools, docs/semantics.md#satisfaction-and-status); orchid.go: the read-only views
//     (operations, pools, nodes) the API serves;
//   - scheduler.go: operations' lifecycle and the pool tree's mutations;
//     settings.go: the configuration table; opindex.go: the shards' index of
//     schedulable operations; node.go and operation.go: their state;
//   - tags.go: scheduling tag filters (which nodes an operation may use,
//     compiled once per tree change and memoized per node) and what the
//     nodes allow each element in the fair-share update: the resources of
//     the nodes its filter matches and the best allocation share (docs/semantics.md#pools-and-operations,
//     docs/semantics.md#best-allocation-share).
package schedule
