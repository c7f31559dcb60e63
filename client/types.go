package client

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The resource names of Resources and Limits.
const (
	ResourceUserSlots = "user_slots"
	ResourceCPU       = "cpu"
	ResourceGPU       = "gpu"
	ResourceMemory    = "memory"
	ResourceNetwork   = "network"
)

// Resources is an amount per resource: a demand, a usage, a guarantee, a
// job's size. An amount of 0 is left out of the JSON, which the server reads
// as 0. cpu is in cores (kept in hundredths by the server), memory in bytes.
type Resources struct {
	UserSlots int64   `json:"user_slots,omitempty"`
	CPU       float64 `json:"cpu,omitempty"`
	GPU       int64   `json:"gpu,omitempty"`
	Memory    int64   `json:"memory,omitempty"`
	Network   int64   `json:"network,omitempty"`
}

// Limits are resource limits by resource name (ResourceCPU, …): a resource
// that is not in the map is unlimited, and one mapped to 0 may not be used
// at all.
type Limits map[string]float64

// Share is a fraction of the cluster per resource.
type Share struct {
	UserSlots float64 `json:"user_slots"`
	CPU       float64 `json:"cpu"`
	GPU       float64 `json:"gpu"`
	Memory    float64 `json:"memory"`
	Network   float64 `json:"network"`
}

// Optional is a value of a PATCH body: left out (the zero Optional: the
// attribute keeps its value), Set to a value, or Reset (JSON null: the
// attribute goes back to its default).
type Optional[T any] struct {
	value T
	state optionalState
}

type optionalState uint8

const (
	optionalOmitted optionalState = iota
	optionalSet
	optionalNull
)

// Set is an Optional holding v.
func Set[T any](v T) Optional[T] { return Optional[T]{value: v, state: optionalSet} }

// Reset is an Optional that resets the attribute to its default.
func Reset[T any]() Optional[T] { return Optional[T]{state: optionalNull} }

// IsZero reports whether o is left out (encoding/json's omitzero).
func (o Optional[T]) IsZero() bool { return o.state == optionalOmitted }

// Get returns the value and whether o is Set.
func (o Optional[T]) Get() (T, bool) { return o.value, o.state == optionalSet }

// MarshalJSON writes the value, or null for Reset.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	switch o.state {
	case optionalSet:
		return json.Marshal(o.value)
	case optionalNull:
		return []byte("null"), nil
	}
	return nil, fmt.Errorf("client: an omitted Optional is written only with omitzero")
}

// UnmarshalJSON reads null as Reset and anything else as Set.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*o = Reset[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = Set(v)
	return nil
}

// Pool is a pool's configuration: what GET answers (the attributes that are
// set) and what PUT takes (an attribute left out takes its default). Name is
// the pool's name in answers; PutPool takes the name as an argument.
type Pool struct {
	Name                                             string              `json:"name,omitempty"`
	Parent                                           string              `json:"parent,omitempty"`
	Mode                                             string              `json:"mode,omitempty"`
	Weight                                           float64             `json:"weight,omitempty"`
	StrongGuaranteeResources                         *Resources          `json:"strong_guarantee_resources,omitempty"`
	MinShareResources                                *Resources          `json:"min_share_resources,omitempty"`
	ResourceLimits                                   Limits              `json:"resource_limits,omitempty"`
	MaxOperationCount                                *int64              `json:"max_operation_count,omitempty"`
	MaxRunningOperationCount                         *int64              `json:"max_running_operation_count,omitempty"`
	FifoSortParameters                               []string            `json:"fifo_sort_parameters,omitempty"`
	EnableLightweightOperations                      *bool               `json:"enable_lightweight_operations,omitempty"`
	IntegralGuarantees                               *IntegralGuarantees `json:"integral_guarantees,omitempty"`
	FairShareStarvationTimeoutS                      *float64            `json:"fair_share_starvation_timeout_s,omitempty"`
	FairShareStarvationTolerance                     *float64            `json:"fair_share_starvation_tolerance,omitempty"`
	EnableAggressiveStarvation                       *bool               `json:"enable_aggressive_starvation,omitempty"`
	AllowAggressivePreemption                        *bool               `json:"allow_aggressive_preemption,omitempty"`
	AllowNormalPreemption                            *bool               `json:"allow_normal_preemption,omitempty"`
	NonPreemptibleResourceUsageThreshold             *Resources          `json:"non_preemptible_resource_usage_threshold,omitempty"`
	ComputePromisedGuaranteeFairShare                *bool               `json:"compute_promised_guarantee_fair_share,omitempty"`
	EnablePriorityStrongGuaranteeAdjustment          *bool               `json:"enable_priority_strong_guarantee_adjustment,omitempty"`
	EnablePriorityStrongGuaranteeAdjustmentDonorship *bool               `json:"enable_priority_strong_guarantee_adjustment_donorship,omitempty"`
	SchedulingTagFilter                              string              `json:"scheduling_tag_filter,omitempty"`
	// ACL is the pool's access control list and InheritACL whether its
	// ancestors' entries apply too (default true).
	ACL        []ACLEntry `json:"acl,omitempty"`
	InheritACL *bool      `json:"inherit_acl,omitempty"`
}

// ACLEntry is an entry of a pool's ACL: Action "allow" or "deny",
// Subjects user names and "group:<name>", Permissions "use" and
// "administer".
type ACLEntry struct {
	Action      string   `json:"action"`
	Subjects    []string `json:"subjects"`
	Permissions []string `json:"permissions"`
}

// IntegralGuarantees are an integral pool's settings.
type IntegralGuarantees struct {
	GuaranteeType                           string     `json:"guarantee_type,omitempty"`
	ResourceFlow                            *Resources `json:"resource_flow,omitempty"`
	BurstGuaranteeResources                 *Resources `json:"burst_guarantee_resources,omitempty"`
	RelaxedShareMultiplierLimit             *float64   `json:"relaxed_share_multiplier_limit,omitempty"`
	CanAcceptFreeVolume                     *bool      `json:"can_accept_free_volume,omitempty"`
	ShouldDistributeFreeVolumeAmongChildren *bool      `json:"should_distribute_free_volume_among_children,omitempty"`
}

// PoolPatch changes the attributes it sets (PATCH /api/v1/pools/{name});
// Reset puts one back to its default. In IntegralGuarantees, the members
// that are set change and the others keep their values.
type PoolPatch struct {
	Parent                                           Optional[string]             `json:"parent,omitzero"`
	Mode                                             Optional[string]             `json:"mode,omitzero"`
	Weight                                           Optional[float64]            `json:"weight,omitzero"`
	StrongGuaranteeResources                         Optional[Resources]          `json:"strong_guarantee_resources,omitzero"`
	MinShareResources                                Optional[Resources]          `json:"min_share_resources,omitzero"`
	ResourceLimits                                   Optional[Limits]             `json:"resource_limits,omitzero"`
	MaxOperationCount                                Optional[int64]              `json:"max_operation_count,omitzero"`
	MaxRunningOperationCount                         Optional[int64]              `json:"max_running_operation_count,omitzero"`
	FifoSortParameters                               Optional[[]string]           `json:"fifo_sort_parameters,omitzero"`
	EnableLightweightOperations                      Optional[bool]               `json:"enable_lightweight_operations,omitzero"`
	IntegralGuarantees                               Optional[IntegralGuarantees] `json:"integral_guarantees,omitzero"`
	FairShareStarvationTimeoutS                      Optional[float64]            `json:"fair_share_starvation_timeout_s,omitzero"`
	FairShareStarvationTolerance                     Optional[float64]            `json:"fair_share_starvation_tolerance,omitzero"`
	EnableAggressiveStarvation                       Optional[bool]               `json:"enable_aggressive_starvation,omitzero"`
	AllowAggressivePreemption                        Optional[bool]               `json:"allow_aggressive_preemption,omitzero"`
	AllowNormalPreemption                            Optional[bool]               `json:"allow_normal_preemption,omitzero"`
	NonPreemptibleResourceUsageThreshold             Optional[Resources]          `json:"non_preemptible_resource_usage_threshold,omitzero"`
	ComputePromisedGuaranteeFairShare                Optional[bool]               `json:"compute_promised_guarantee_fair_share,omitzero"`
	EnablePriorityStrongGuaranteeAdjustment          Optional[bool]               `json:"enable_priority_strong_guarantee_adjustment,omitzero"`
	EnablePriorityStrongGuaranteeAdjustmentDonorship Optional[bool]               `json:"enable_priority_strong_guarantee_adjustment_donorship,omitzero"`
	SchedulingTagFilter                              Optional[string]             `json:"scheduling_tag_filter,omitzero"`
	ACL                                              Optional[[]ACLEntry]         `json:"acl,omitzero"`
	InheritACL                                       Optional[bool]               `json:"inherit_acl,omitzero"`
}

// Config is the tree config: every key of docs/configuration.md with its
// value as JSON gives it (numbers are float64, integral_guarantees an
// object). PatchConfig takes the keys to change.
type Config map[string]any

// OperationSpec is an operation to start (POST /api/v1/operations).
type OperationSpec struct {
	// ID is the client's id for the operation: starting the same id with
	// the same body again answers the same operation, so such a start is
	// retried safely. Empty: the server names it.
	ID                                   string     `json:"id,omitempty"`
	Type                                 string     `json:"type,omitempty"`
	Pool                                 string     `json:"pool,omitempty"`
	Weight                               float64    `json:"weight,omitempty"`
	PreemptionMode                       string     `json:"preemption_mode,omitempty"`
	IsGang                               bool       `json:"is_gang,omitempty"`
	ResourceLimits                       Limits     `json:"resource_limits,omitempty"`
	AllocationPreemptionTimeoutS         *float64   `json:"allocation_preemption_timeout_s,omitempty"`
	AllocationGracefulPreemptionTimeoutS *float64   `json:"allocation_graceful_preemption_timeout_s,omitempty"`
	FairShareStarvationTolerance         *float64   `json:"fair_share_starvation_tolerance,omitempty"`
	FairShareStarvationTimeoutS          *float64   `json:"fair_share_starvation_timeout_s,omitempty"`
	NonPreemptibleResourceUsageThreshold *Resources `json:"non_preemptible_resource_usage_threshold,omitempty"`
	SchedulingTagFilter                  string     `json:"scheduling_tag_filter,omitempty"`
	Tasks                                []Task     `json:"tasks"`
}

// Task is a group of alike jobs of an operation.
type Task struct {
	Name          string    `json:"name,omitempty"`
	JobCount      int64     `json:"job_count"`
	Resources     Resources `json:"resources"`
	DurationHintS float64   `json:"duration_hint_s,omitempty"`
}

// OperationStarted is the answer to a start: the operation's id and state.
type OperationStarted struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// OperationPatch changes an operation's runtime parameters, all or nothing.
type OperationPatch struct {
	Weight         float64          `json:"weight,omitempty"`
	Pool           string           `json:"pool,omitempty"`
	ResourceLimits Optional[Limits] `json:"resource_limits,omitzero"`
	// Tasks changes the tasks' job counts: entry i changes task i, and
	// entries past the operation's last task append new tasks. Tasks are
	// never removed (a job count may go down to 0).
	Tasks []TaskPatch `json:"tasks,omitempty"`
}

// TaskPatch is one entry of OperationPatch.Tasks. For an existing task,
// JobCount is its new job count (nil: unchanged) and Name and Resources,
// when given, must equal the task's (resources are immutable). For a new
// task (an entry past the last one), JobCount and Resources are required,
// as at a start.
type TaskPatch struct {
	Name          string     `json:"name,omitempty"`
	JobCount      *int64     `json:"job_count,omitempty"`
	Resources     *Resources `json:"resources,omitempty"`
	DurationHintS float64    `json:"duration_hint_s,omitempty"`
}

// Operation is an operation's state, demand, usage and shares as of the
// last fair-share update.
type Operation struct {
	ID                          string           `json:"id"`
	State                       string           `json:"state"`
	Pool                        string           `json:"pool"`
	Demand                      Resources        `json:"demand"`
	Usage                       Resources        `json:"usage"`
	SchedulingTagFilter         string           `json:"scheduling_tag_filter,omitempty"`
	FairShare                   Share            `json:"fair_share"`
	UsageShare                  Share            `json:"usage_share"`
	DemandShare                 Share            `json:"demand_share"`
	SatisfactionRatio           float64          `json:"satisfaction_ratio"`
	Status                      string           `json:"status"`
	StarvationStatus            string           `json:"starvation_status"`
	LocalSatisfactionRatio      float64          `json:"local_satisfaction_ratio"`
	SchedulingSatisfactionRatio float64          `json:"scheduling_satisfaction_ratio"`
	SchedulingPriority          string           `json:"scheduling_priority"`
	AllocationCounts            AllocationCounts `json:"allocation_counts"`
	PreemptionPriority          string           `json:"preemption_priority"`
	PendingJobCount             int64            `json:"pending_job_count"`
	CompletedJobCount           int64            `json:"completed_job_count"`
	StartTimeS                  float64          `json:"start_time_s"`
	// WaitingFor names the pool whose running limit keeps a pending
	// operation waiting.
	WaitingFor *WaitingFor `json:"waiting_for,omitempty"`
}

// AllocationCounts counts an operation's running allocations by how
// preemptible they are.
type AllocationCounts struct {
	Running                 int64 `json:"running"`
	NonPreemptible          int64 `json:"non_preemptible"`
	AggressivelyPreemptible int64 `json:"aggressively_preemptible"`
	Preemptible             int64 `json:"preemptible"`
	Preempted               int64 `json:"preempted"`
}

// WaitingFor is the pool and limit a pending operation waits for.
type WaitingFor struct {
	Pool                     string `json:"pool"`
	MaxRunningOperationCount int64  `json:"max_running_operation_count"`
}

// OperationPage is one page of GET /api/v1/operations.
type OperationPage struct {
	Operations []Operation `json:"operations"`
	// NextCursor is the cursor of the next page; nil on the last page.
	NextCursor *string `json:"next_cursor"`
}

// OperationFilter selects the operations of a listing; the zero value lists
// every operation with the server's default page size.
type OperationFilter struct {
	Pool   string // only this pool's (and not its subtree's)
	State  string // pending, running, completed or aborted
	Limit  int    // page size (0: the server's default)
	Cursor string // the previous page's NextCursor
}

// Detailed is a fair share in its three parts.
type Detailed struct {
	StrongGuarantee    Share `json:"strong_guarantee"`
	IntegralGuarantee  Share `json:"integral_guarantee"`
	WeightProportional Share `json:"weight_proportional"`
}

// Shares are an element's fair-share attributes of the last update.
type Shares struct {
	FairShare                  Share    `json:"fair_share"`
	Detailed                   Detailed `json:"detailed"`
	UsageShare                 Share    `json:"usage_share"`
	DemandShare                Share    `json:"demand_share"`
	LimitsShare                Share    `json:"limits_share"`
	StrongGuaranteeShare       Share    `json:"strong_guarantee_share"`
	ProposedIntegralShare      Share    `json:"proposed_integral_share"`
	PromisedGuaranteeFairShare Share    `json:"promised_guarantee_fair_share"`
	Weight                     float64  `json:"weight"`
	DominantResource           string   `json:"dominant_resource"`
}

// Integral is an integral pool's state; every field is nil or empty for
// other pools.
type Integral struct {
	IntegralGuaranteeType              string   `json:"integral_guarantee_type,omitempty"`
	AccumulatedResourceVolume          *Share   `json:"accumulated_resource_volume,omitempty"`
	AccumulatedResourceRatioVolume     *float64 `json:"accumulated_resource_ratio_volume,omitempty"`
	IntegralPoolCapacity               *Share   `json:"integral_pool_capacity,omitempty"`
	SpecifiedBurstRatio                *float64 `json:"specified_burst_ratio,omitempty"`
	SpecifiedResourceFlowRatio         *float64 `json:"specified_resource_flow_ratio,omitempty"`
	TotalBurstRatio                    *float64 `json:"total_burst_ratio,omitempty"`
	TotalResourceFlowRatio             *float64 `json:"total_resource_flow_ratio,omitempty"`
	EstimatedBurstUsageDurationSeconds *float64 `json:"estimated_burst_usage_duration_seconds,omitempty"`
}

// PoolOrchid is a pool as of the last fair-share update.
type PoolOrchid struct {
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	Mode   string `json:"mode"`
	Shares
	SatisfactionRatio                 float64    `json:"satisfaction_ratio"`
	Status                            string     `json:"status"`
	StarvationStatus                  string     `json:"starvation_status"`
	LocalSatisfactionRatio            float64    `json:"local_satisfaction_ratio"`
	OperationCount                    int64      `json:"operation_count"`
	RunningOperationCount             int64      `json:"running_operation_count"`
	LightweightRunningOperationCount  int64      `json:"lightweight_running_operation_count"`
	PendingOperationCount             int64      `json:"pending_operation_count"`
	MaxOperationCount                 int64      `json:"max_operation_count"`
	MaxRunningOperationCount          int64      `json:"max_running_operation_count"`
	SchedulingTagFilter               string     `json:"scheduling_tag_filter,omitempty"`
	SchedulingTagFilterResourceLimits *Resources `json:"scheduling_tag_filter_resource_limits,omitempty"`
	Integral
}

// OperationOrchid is an operation with every fair-share attribute of the
// last update.
type OperationOrchid struct {
	Operation
	Detailed                          Detailed   `json:"detailed"`
	LimitsShare                       Share      `json:"limits_share"`
	StrongGuaranteeShare              Share      `json:"strong_guarantee_share"`
	ProposedIntegralShare             Share      `json:"proposed_integral_share"`
	PromisedGuaranteeFairShare        Share      `json:"promised_guarantee_fair_share"`
	Weight                            float64    `json:"weight"`
	DominantResource                  string     `json:"dominant_resource"`
	BestAllocationShare               Share      `json:"best_allocation_share"`
	SchedulingTagFilterResourceLimits *Resources `json:"scheduling_tag_filter_resource_limits,omitempty"`
	// Tasks are its tasks with their current job counts.
	Tasks []Task `json:"tasks"`
	// RecentPreemptions are its last preemptions, the most recent first.
	RecentPreemptions []Preemption `json:"recent_preemptions"`
}

// Preemption is one of an operation's recent preemptions: when (seconds
// since the server started), the allocation, its node and the reason
// sentence the node was sent.
type Preemption struct {
	TimeS        float64 `json:"time_s"`
	AllocationID string  `json:"allocation_id"`
	NodeID       string  `json:"node_id"`
	Reason       string  `json:"reason"`
}

// Heartbeat is a node's heartbeat.
type Heartbeat struct {
	ResourceLimits Resources          `json:"resource_limits"`
	ResourceUsage  *Resources         `json:"resource_usage,omitempty"`
	Tags           []string           `json:"tags,omitempty"`
	Allocations    []AllocationReport `json:"allocations,omitempty"`
	// Schedulable false cordons the node: nothing new starts there, its
	// allocations keep running (nil: true).
	Schedulable *bool `json:"schedulable,omitempty"`
}

// The states of an AllocationReport.
const (
	AllocationRunning   = "running"
	AllocationCompleted = "completed"
	AllocationFailed    = "failed"
	AllocationAborted   = "aborted"
	// AllocationRefused is an allocation of allocations_to_start the node
	// did not start: its job returns to pending, and its operation is not
	// offered the node again for refused_allocation_backoff_s.
	AllocationRefused = "refused"
)

// AllocationReport is one allocation of a heartbeat: running, how it
// ended, or refused.
type AllocationReport struct {
	ID            string     `json:"id"`
	State         string     `json:"state"`
	ResourceUsage *Resources `json:"resource_usage,omitempty"`
	// Reason says why a refused allocation was refused (State
	// AllocationRefused only).
	Reason string `json:"reason,omitempty"`
	// OperationID, TaskIndex and Resources are the allocation's origin,
	// as AllocationStart gave them (all three or none): a restarted server
	// adopts a running allocation by them.
	OperationID string     `json:"operation_id,omitempty"`
	TaskIndex   *int       `json:"task_index,omitempty"`
	Resources   *Resources `json:"resources,omitempty"`
}

// HeartbeatResponse tells the node what to start, preempt and abort.
type HeartbeatResponse struct {
	AllocationsToStart   []AllocationStart   `json:"allocations_to_start"`
	AllocationsToPreempt []AllocationPreempt `json:"allocations_to_preempt"`
	AllocationsToAbort   []AllocationAbort   `json:"allocations_to_abort"`
}

// AllocationStart is an allocation the node is to start.
type AllocationStart struct {
	ID          string    `json:"id"`
	OperationID string    `json:"operation_id"`
	TaskIndex   int       `json:"task_index"`
	Resources   Resources `json:"resources"`
}

// AllocationPreempt is an allocation the node is to stop within TimeoutS.
type AllocationPreempt struct {
	ID          string  `json:"id"`
	OperationID string  `json:"operation_id"`
	Reason      string  `json:"reason"`
	TimeoutS    float64 `json:"timeout_s"`
}

// AllocationAbort is an allocation the node is to stop now.
type AllocationAbort struct {
	ID          string `json:"id"`
	OperationID string `json:"operation_id,omitempty"`
	Reason      string `json:"reason"`
}

// NodeOrchid is a node's resources and allocations.
type NodeOrchid struct {
	ID             string    `json:"id"`
	ResourceLimits Resources `json:"resource_limits"`
	ResourceUsage  Resources `json:"resource_usage"`
	LastHeartbeatS float64   `json:"last_heartbeat_s"`
	Tags           []string  `json:"tags"`
	// Schedulable is false while the node is cordoned.
	Schedulable bool             `json:"schedulable"`
	Allocations []NodeAllocation `json:"allocations"`
}

// NodeAllocation is one of a node's allocations.
type NodeAllocation struct {
	ID                  string    `json:"id"`
	OperationID         string    `json:"operation_id"`
	TaskIndex           int       `json:"task_index"`
	Resources           Resources `json:"resources"`
	StartTimeS          float64   `json:"start_time_s"`
	PreemptionStatus    string    `json:"preemption_status"`
	Preempted           bool      `json:"preempted"`
	PreemptionDeadlineS *float64  `json:"preemption_deadline_s,omitempty"`
}

// SolveResult is the answer of POST /api/v1/solve: one entry per update.
type SolveResult struct {
	Updates []SolveUpdate `json:"updates"`
}

// SolveUpdate is one update's elements.
type SolveUpdate struct {
	Label string `json:"label,omitempty"`
	// Elements by name, the root ("<Root>") included.
	Elements map[string]SolveElement `json:"elements"`
	// Order is the elements' names as the server wrote them: the root
	// first, then in tree order.
	Order []string `json:"-"`
}

// UnmarshalJSON reads the update and keeps the order of its elements.
func (u *SolveUpdate) UnmarshalJSON(b []byte) error {
	var raw struct {
		Label    string          `json:"label"`
		Elements json.RawMessage `json:"elements"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	u.Label, u.Elements, u.Order = raw.Label, nil, nil
	if err := json.Unmarshal(raw.Elements, &u.Elements); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Elements))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return err
		}
		u.Order = append(u.Order, name.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// SolveElement is one element's attributes after an update.
type SolveElement struct {
	Shares
	FittingJobs *int64 `json:"fitting_jobs,omitempty"`
	Integral
}

// Health is GET /healthz's answer.
type Health struct {
	// Status is "ok", "recovering" during a restart's recovery window, or
	// "stopping" once the server began to shut down.
	Status string `json:"status"`
	// Role is the server's part in a group of replicas ("standalone", or
	// "leader" or "follower" for a replica of fairsched serve --etcd).
	Role string `json:"role"`
	// Leader is, for a replica, the leader's advertised URL (nil while
	// none serves; nil for a standalone server too).
	Leader *string `json:"leader,omitempty"`
	// Store is where the server keeps its state ("memory", "bbolt",
	// "etcd").
	Store string `json:"store"`
	// Quarantined are the operations of the store the server could not
	// restore.
	Quarantined []string `json:"quarantined,omitempty"`
	// Epoch is, for a durable server, how many times its store was opened.
	Epoch int64 `json:"epoch,omitempty"`
	// Recovery is, after a restart with state, its recovery window.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// Recovery is a restarted server's recovery window (Health.Recovery).
type Recovery struct {
	// Active: heartbeats only report until the nodes alive before the stop
	// reported or recovery_timeout_s passed.
	Active             bool  `json:"active"`
	ExpectedNodes      int   `json:"expected_nodes"`
	ReportedNodes      int   `json:"reported_nodes"`
	AdoptedAllocations int64 `json:"adopted_allocations"`
	AbortedAllocations int64 `json:"aborted_allocations"`
	// RemainingS is, while active, the seconds until the window closes.
	RemainingS float64 `json:"remaining_s,omitempty"`
}

// Ready is GET /readyz's answer.
type Ready struct {
	Status string `json:"status"`
}

// Version is the server's build: GET /api/v1/version.
type Version struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// NodeHeartbeat is one heartbeat of a batch: the node's id and its
// heartbeat.
type NodeHeartbeat struct {
	NodeID string `json:"node_id"`
	Heartbeat
}

// NodeHeartbeatResult is the answer to one heartbeat of a batch: what the
// node must do, or Err when this heartbeat alone was refused (nothing of it
// applied).
type NodeHeartbeatResult struct {
	NodeID string `json:"node_id"`
	HeartbeatResponse
	Err *Error `json:"-"`
}

// UnmarshalJSON reads an answer or an error entry.
func (r *NodeHeartbeatResult) UnmarshalJSON(b []byte) error {
	var raw struct {
		NodeID string `json:"node_id"`
		HeartbeatResponse
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Path    string `json:"path"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = NodeHeartbeatResult{NodeID: raw.NodeID, HeartbeatResponse: raw.HeartbeatResponse}
	if raw.Error != nil {
		r.Err = &Error{StatusCode: statusOfEntry(raw.Error.Code), Code: raw.Error.Code,
			Message: raw.Error.Message, Path: raw.Error.Path}
	}
	return nil
}

// statusOfEntry is the status a refused heartbeat would have had on its own:
// 409 for a foreign allocation, 400 for the rest.
func statusOfEntry(code string) int {
	if code == "foreign_allocation" {
		return 409
	}
	return 400
}

// NodeSummary is a registered node without its allocations.
type NodeSummary struct {
	ID                string    `json:"id"`
	ResourceLimits    Resources `json:"resource_limits"`
	ResourceUsage     Resources `json:"resource_usage"`
	Tags              []string  `json:"tags"`
	AllocationCount   int64     `json:"allocation_count"`
	LastHeartbeatS    float64   `json:"last_heartbeat_s"`
	LastHeartbeatAgeS float64   `json:"last_heartbeat_age_s"`
	// Schedulable is false while the node is cordoned.
	Schedulable bool `json:"schedulable"`
}

// NodePage is one page of GET /api/v1/nodes.
type NodePage struct {
	Nodes []NodeSummary `json:"nodes"`
	// NextCursor is the cursor of the next page; nil on the last page.
	NextCursor *string `json:"next_cursor"`
}

// PoolHistory is GET /api/v1/pools/{name}/history: the pool's points,
// oldest first (docs/api.md#pool-history).
type PoolHistory struct {
	Pool string `json:"pool"`
	// Now is the answer's time, Unix seconds; ResolutionS the resolution
	// of the tier the points come from and StepS the step used.
	Now         float64        `json:"now"`
	ResolutionS float64        `json:"resolution_s"`
	StepS       float64        `json:"step_s"`
	Points      []HistoryPoint `json:"points"`
}

// HistoryPoint is one step of a pool's history: the means of its dominant
// shares over the step, its worst starvation state, whether it was below
// its fair share, and how many of the resolution's steps had an update (0:
// none, the values are then 0).
type HistoryPoint struct {
	Time           float64 `json:"time"`
	Usage          float64 `json:"usage"`
	FairShare      float64 `json:"fair_share"`
	Demand         float64 `json:"demand"`
	Starvation     string  `json:"starvation"`
	BelowFairShare bool    `json:"below_fair_share"`
	Samples        int     `json:"samples"`
}

// PoolOrchidList is GET /api/v1/orchid/pools: every pool, the root first,
// and the cluster's fairness error and its integral (share·seconds).
type PoolOrchidList struct {
	Pools                 []PoolOrchid `json:"pools"`
	FairnessError         float64      `json:"fairness_error"`
	FairnessErrorIntegral float64      `json:"fairness_error_integral"`
}

// Explanation is GET /api/v1/operations/{id}/explain or
// /api/v1/pools/{name}/explain: the conditions that decide an operation's
// state or a pool's status, the binding one first (docs/why-waiting.md).
type Explanation struct {
	Operation string    `json:"operation,omitempty"`
	Pool      string    `json:"pool,omitempty"`
	State     string    `json:"state"`
	Findings  []Finding `json:"findings"`
}

// Finding is one condition of an explanation: a stable Code
// (docs/why-waiting.md#the-codes), a sentence, and the numbers it is about
// (nil or empty where they do not apply). Shares are fractions of the
// cluster's resources, times seconds of the scheduler's clock.
type Finding struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Pool     string `json:"pool,omitempty"`
	Setting  string `json:"setting,omitempty"`
	Resource string `json:"resource,omitempty"`

	Running     *int64   `json:"running,omitempty"`
	Limit       *int64   `json:"limit,omitempty"`
	Position    *int64   `json:"position,omitempty"`
	QueueLength *int64   `json:"queue_length,omitempty"`
	MustFinish  *int64   `json:"must_finish,omitempty"`
	Operations  []string `json:"operations,omitempty"`

	Shares          []ResourceShares `json:"shares,omitempty"`
	Usage           *float64         `json:"usage,omitempty"`
	FairShare       *float64         `json:"fair_share,omitempty"`
	Demand          *float64         `json:"demand,omitempty"`
	Bound           *float64         `json:"bound,omitempty"`
	Guarantee       *float64         `json:"guarantee,omitempty"`
	Weight          *float64         `json:"weight,omitempty"`
	WeightSum       *float64         `json:"weight_sum,omitempty"`
	ParentFairShare *float64         `json:"parent_fair_share,omitempty"`
	Shared          *float64         `json:"shared,omitempty"`
	Amount          *float64         `json:"amount,omitempty"`
	LimitAmount     *float64         `json:"limit_amount,omitempty"`
	JobAmount       *float64         `json:"job_amount,omitempty"`

	Tolerance           *float64 `json:"tolerance,omitempty"`
	BelowSince          *float64 `json:"below_since,omitempty"`
	Timeout             *float64 `json:"timeout,omitempty"`
	StarvesIn           *float64 `json:"starves_in,omitempty"`
	AggressiveTimeout   *float64 `json:"aggressive_timeout,omitempty"`
	AggressivelyStarves *float64 `json:"aggressively_starves_in,omitempty"`

	Nodes         *int64          `json:"nodes,omitempty"`
	MatchingNodes *int64          `json:"matching_nodes,omitempty"`
	NodesWithRoom *int64          `json:"nodes_with_room,omitempty"`
	Candidates    *int64          `json:"candidates,omitempty"`
	Protected     []ProtectedRule `json:"protected,omitempty"`

	Allocation    *uint64  `json:"allocation,omitempty"`
	Node          string   `json:"node,omitempty"`
	Time          *float64 `json:"time,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	ForOperation  string   `json:"for_operation,omitempty"`
	ForAllocation *uint64  `json:"for_allocation,omitempty"`
	Status        string   `json:"status,omitempty"`
	Deadline      *float64 `json:"deadline,omitempty"`
}

// ResourceShares are an element's shares of one resource.
type ResourceShares struct {
	Resource  string  `json:"resource"`
	Usage     float64 `json:"usage"`
	FairShare float64 `json:"fair_share"`
	Demand    float64 `json:"demand"`
}

// ProtectedRule counts the candidate victims one rule protects.
type ProtectedRule struct {
	Rule  string `json:"rule"`
	Count int64  `json:"count"`
	Pool  string `json:"pool,omitempty"`
}

// WhatIfChange is one change of a what-if: the method, path and body of
// the real request (PUT, PATCH or DELETE of /api/v1/pools/{name}, PATCH
// /api/v1/config). Body is anything that marshals to the request's body
// (a Pool, a PoolPatch, a Config); nil sends none.
type WhatIfChange struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   any    `json:"body,omitempty"`
}

// PoolWhatIf is one pool before and after a what-if's changes: Before is
// nil for a pool they create, After for one they remove.
type PoolWhatIf struct {
	Name          string
	Before, After *PoolOrchid
}

// WhatIfResult is POST /api/v1/whatif's answer: every pool, in the
// server's order (the current tree in pre-order, then the pools the
// changes create).
type WhatIfResult struct {
	Pools []PoolWhatIf
}

// MarshalJSON writes the server's shape, {"pools": {"<name>": {"before",
// "after"}, …}}, the pools in their order.
func (r WhatIfResult) MarshalJSON() ([]byte, error) {
	b := []byte(`{"pools":{`)
	for i, p := range r.Pools {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(p.Name)
		v, err := json.Marshal(struct {
			Before *PoolOrchid `json:"before"`
			After  *PoolOrchid `json:"after"`
		}{p.Before, p.After})
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, name...), ':'), v...)
	}
	return append(b, "}}"...), nil
}

// UnmarshalJSON reads {"pools": {"<name>": {"before", "after"}, …}},
// keeping the order of the pools.
func (r *WhatIfResult) UnmarshalJSON(b []byte) error {
	var top struct {
		Pools json.RawMessage `json:"pools"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(top.Pools))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("cannot read a what-if's pools: want an object")
	}
	r.Pools = r.Pools[:0]
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var p struct {
			Before *PoolOrchid `json:"before"`
			After  *PoolOrchid `json:"after"`
		}
		if err := d.Decode(&p); err != nil {
			return err
		}
		r.Pools = append(r.Pools, PoolWhatIf{Name: name, Before: p.Before, After: p.After})
	}
	return nil
}
