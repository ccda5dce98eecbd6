package workflows

import (
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
)

type nopArgs struct{}

func (nopArgs) Kind() string { return "nop" }

func step(name string, after ...string) StepDef {
	return StepDef{Name: name, Args: nopArgs{}, After: after}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		def   Def
		error string // substring; "" means valid
	}{
		{"single root", Def{Name: "w", Steps: []StepDef{step("a")}}, ""},
		{"diamond", Def{Name: "w", Steps: []StepDef{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}}, ""},
		{"defined out of order", Def{Name: "w", Steps: []StepDef{step("d", "b", "c"), step("b", "a"), step("c", "a"), step("a")}}, ""},
		{"two roots", Def{Name: "w", Steps: []StepDef{step("a"), step("b"), step("c", "a", "b")}}, ""},
		{"no name", Def{Steps: []StepDef{step("a")}}, "definition has no name"},
		{"no steps", Def{Name: "w"}, `workflow "w": has no steps`},
		{"unnamed step", Def{Name: "w", Steps: []StepDef{step("a"), step("")}}, "step 2 has no name"},
		{"duplicate", Def{Name: "w", Steps: []StepDef{step("a"), step("b", "a"), step("a")}}, `step "a" is defined twice`},
		{"no args", Def{Name: "w", Steps: []StepDef{{Name: "a"}}}, `step "a" has no args`},
		{"unknown dep", Def{Name: "w", Steps: []StepDef{step("a"), step("b", "x")}}, `step "b" depends on unknown step "x"`},
		{"self dep", Def{Name: "w", Steps: []StepDef{step("a"), step("b", "b")}}, `step "b" depends on itself`},
		{"dep twice", Def{Name: "w", Steps: []StepDef{step("a"), step("b", "a", "a")}}, `step "b" lists dependency "a" twice`},
		{"no root", Def{Name: "w", Steps: []StepDef{step("a", "b"), step("b", "a")}}, "no root step"},
		{"cycle", Def{Name: "w", Steps: []StepDef{step("r"), step("a", "r", "c"), step("b", "a"), step("c", "b")}},
			"dependency cycle a → c → b → a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(tt.def)
			switch {
			case tt.error == "" && err != nil:
				t.Fatalf("validate: %v; want nil", err)
			case tt.error != "" && (err == nil || !strings.Contains(err.Error(), tt.error)):
				t.Fatalf("validate: %v; want an error containing %q", err, tt.error)
			}
		})
	}
}

func TestReady(t *testing.T) {
	st := func(name, status string, deps ...string) store.WorkflowStep {
		return store.WorkflowStep{Name: name, Status: status, Deps: deps}
	}
	const (
		pending   = store.WorkflowStepPending
		enqueued  = store.WorkflowStepEnqueued
		running   = store.WorkflowStepRunning
		succeeded = store.WorkflowStepSucceeded
		failed    = store.WorkflowStepFailed
		cancelled = store.WorkflowStepCancelled
	)
	tests := []struct {
		name  string
		steps []store.WorkflowStep
		want  []string
	}{
		{"roots of a new run", []store.WorkflowStep{st("a", pending), st("b", pending), st("c", pending, "a", "b")}, []string{"a", "b"}},
		{"fan-out after root", []store.WorkflowStep{st("a", succeeded), st("b", pending, "a"), st("c", pending, "a")}, []string{"b", "c"}},
		{"fan-in waits for all", []store.WorkflowStep{st("b", succeeded), st("c", running), st("d", pending, "b", "c")}, nil},
		{"fan-in when all succeeded", []store.WorkflowStep{st("b", succeeded), st("c", succeeded), st("d", pending, "b", "c")}, []string{"d"}},
		{"already enqueued is not ready again", []store.WorkflowStep{st("a", succeeded), st("b", enqueued, "a")}, nil},
		{"failed dep blocks", []store.WorkflowStep{st("a", failed), st("b", pending, "a")}, nil},
		{"cancelled is not pending", []store.WorkflowStep{st("a", succeeded), st("b", cancelled, "a")}, nil},
		{"all done", []store.WorkflowStep{st("a", succeeded), st("b", succeeded, "a")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ready(tt.steps); !slices.Equal(got, tt.want) {
				t.Fatalf("ready = %v; want %v", got, tt.want)
			}
		})
	}
}
