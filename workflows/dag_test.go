package workflows

import (
	"strings"
	"testing"
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
