package schedule

import (
	"errors"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// TestValidateSpec: every range of an operation's spec is the core's to
// check, and the error names the field; StartOperation refuses the same
// specs and changes nothing.
func TestValidateSpec(t *testing.T) {
	ok := func() OperationSpec { return OperationSpec{Tasks: tasks(2, job(1, 1))} }
	many := make([]TaskSpec, MaxTasks+1)
	for i := range many {
		many[i] = TaskSpec{JobCount: 1, Resources: job(1, 1)}
	}
	big := resource.Vec{resource.Memory: 1 << 13}
	tests := []struct {
		name        string
		edit        func(*OperationSpec)
		code, field string
	}{
		{"valid", func(*OperationSpec) {}, "", ""},
		{"id", func(s *OperationSpec) { s.ID = "a b" }, tree.CodeInvalidName, "id"},
		{"pool", func(s *OperationSpec) { s.Pool = strings.Repeat("p", 129) }, tree.CodeInvalidName, "pool"},
		{"weight", func(s *OperationSpec) { s.Weight = tree.Some(0) }, CodeInvalidValue, "weight"},
		{"limits", func(s *OperationSpec) { s.ResourceLimits = partial(resource.CPU, -1) }, CodeInvalidValue, "resource_limits.cpu"},
		{"threshold", func(s *OperationSpec) {
			s.NonPreemptibleResourceUsageThreshold = partial(resource.Memory, resource.MaxAmount+1)
		}, CodeInvalidValue, "non_preemptible_resource_usage_threshold.memory"},
		{"negative threshold", func(s *OperationSpec) {
			s.NonPreemptibleResourceUsageThreshold = partial(resource.UserSlots, -1)
		}, CodeInvalidValue, "non_preemptible_resource_usage_threshold.user_slots"},
		{"timeout", func(s *OperationSpec) { s.AllocationPreemptionTimeout = tree.SomeDuration(-clock.Second) }, CodeInvalidValue, "allocation_preemption_timeout_s"},
		{"graceful timeout", func(s *OperationSpec) {
			s.AllocationGracefulPreemptionTimeout = tree.SomeDuration(tree.MaxDuration + 1)
		}, CodeInvalidValue, "allocation_graceful_preemption_timeout_s"},
		{"tolerance", func(s *OperationSpec) { s.FairShareStarvationTolerance = tree.Some(1.5) }, CodeInvalidValue, "fair_share_starvation_tolerance"},
		{"no tasks", func(s *OperationSpec) { s.Tasks = nil }, CodeInvalidValue, "tasks"},
		{"too many tasks", func(s *OperationSpec) { s.Tasks = many }, CodeInvalidValue, "tasks"},
		{"task name", func(s *OperationSpec) { s.Tasks[0].Name = strings.Repeat("n", MaxTaskNameLen+1) }, CodeInvalidValue, "tasks[0].name"},
		{"task name at the bound", func(s *OperationSpec) { s.Tasks[0].Name = strings.Repeat("n", MaxTaskNameLen) }, "", ""},
		{"no jobs", func(s *OperationSpec) { s.Tasks[0].JobCount = 0 }, CodeInvalidValue, "tasks[0].job_count"},
		{"too many jobs", func(s *OperationSpec) { s.Tasks[0].JobCount = MaxJobCount + 1 }, CodeInvalidValue, "tasks[0].job_count"},
		{"no resources", func(s *OperationSpec) { s.Tasks[0].Resources = resource.Vec{} }, CodeInvalidValue, "tasks[0].resources"},
		{"negative amount", func(s *OperationSpec) { s.Tasks[0].Resources[resource.CPU] = -1 }, CodeInvalidValue, "tasks[0].resources.cpu"},
		{"duration", func(s *OperationSpec) { s.Tasks[0].DurationHintS = 1e10 }, CodeInvalidValue, "tasks[0].duration_hint_s"},
		{"task total", func(s *OperationSpec) { s.Tasks = []TaskSpec{{JobCount: MaxJobCount, Resources: big.Scale(2)}} }, CodeInvalidValue, "tasks[0].job_count"},
		{"operation total", func(s *OperationSpec) {
			s.Tasks = []TaskSpec{{JobCount: MaxJobCount, Resources: big}, {JobCount: 1, Resources: big}}
		}, CodeInvalidValue, "tasks[1].job_count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok()
			tc.edit(&spec)
			err := ValidateSpec(&spec)
			s := New(tree.New(tree.PoolConfig{}), DefaultConfig())
			_, _, startErr := s.StartOperation(0, spec)
			if tc.code == "" {
				if err != nil || startErr != nil {
					t.Fatalf("refused: %v / %v", err, startErr)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Path != tc.field || !strings.HasPrefix(e.Message, "cannot ") {
				t.Fatalf("error %#v, want %s at %s", err, tc.code, tc.field)
			}
			if startErr == nil || startErr.Error() != err.Error() {
				t.Fatalf("StartOperation: %v, want %v", startErr, err)
			}
			if n := len(s.Operations(nil)); n != 0 {
				t.Fatalf("a refused spec left %d operations", n)
			}
		})
	}
}

// TestValidatePatch: the ranges of a patch that hold for any operation.
func TestValidatePatch(t *testing.T) {
	tests := []struct {
		name        string
		p           OperationPatch
		code, field string
	}{
		{"empty", OperationPatch{}, "", ""},
		{"job count 0", OperationPatch{Tasks: []TaskPatch{{JobCount: 0, HasJobCount: true}}}, "", ""},
		{"weight", OperationPatch{Weight: tree.Some(1e300)}, CodeInvalidValue, "weight"},
		{"pool", OperationPatch{Pool: "a/b", HasPool: true}, tree.CodeInvalidName, "pool"},
		{"limits", OperationPatch{ResourceLimits: partial(resource.Memory, -1), HasResourceLimits: true}, CodeInvalidValue, "resource_limits.memory"},
		{"too many tasks", OperationPatch{Tasks: make([]TaskPatch, MaxTasks+1)}, CodeInvalidValue, "tasks"},
		{"negative job count", OperationPatch{Tasks: []TaskPatch{{}, {JobCount: -1, HasJobCount: true}}}, CodeInvalidValue, "tasks[1].job_count"},
		{"too many jobs", OperationPatch{Tasks: []TaskPatch{{JobCount: MaxJobCount + 1, HasJobCount: true}}}, CodeInvalidValue, "tasks[0].job_count"},
		{"name", OperationPatch{Tasks: []TaskPatch{{Name: strings.Repeat("n", 200), HasName: true}}}, CodeInvalidValue, "tasks[0].name"},
		{"duration", OperationPatch{Tasks: []TaskPatch{{DurationHintS: -1}}}, CodeInvalidValue, "tasks[0].duration_hint_s"},
		{"amount", OperationPatch{Tasks: []TaskPatch{{Resources: resource.Vec{resource.GPU: -2}, HasResources: true}}}, CodeInvalidValue, "tasks[0].resources.gpu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePatch(&tc.p)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Path != tc.field {
				t.Fatalf("error %#v, want %s at %s", err, tc.code, tc.field)
			}
		})
	}
}

// partial is a partial vector of one component.
func partial(k resource.Kind, x int64) tree.PartialVec {
	var p tree.PartialVec
	p.V[k], p.Set[k] = x, true
	return p
}
