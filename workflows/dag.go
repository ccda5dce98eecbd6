package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// validate checks a definition's shape before anything is written: named,
// at least one step, unique step names, known and distinct dependencies, at
// least one root and no cycle. Errors name the step at fault.
func validate(def Def) error {
	if def.Name == "" {
		return errors.New("workflows: definition has no name")
	}
	if len(def.Steps) == 0 {
		return fmt.Errorf("workflow %q: has no steps", def.Name)
	}
	if err := checkSteps(def.Steps); err != nil {
		return fmt.Errorf("workflow %q: %w", def.Name, err)
	}
	if err := checkRoots(def.Steps); err != nil {
		return fmt.Errorf("workflow %q: %w", def.Name, err)
	}
	if cycle := findCycle(def.Steps); cycle != nil {
		return fmt.Errorf("workflow %q: dependency cycle %s (each step waits for the next)", def.Name, strings.Join(cycle, " → "))
	}
	return nil
}

// checkSteps checks each step on its own and against the set of names.
func checkSteps(steps []StepDef) error {
	names := map[string]bool{}
	for i, st := range steps {
		switch {
		case st.Name == "":
			return fmt.Errorf("step %d has no name", i+1)
		case names[st.Name]:
			return fmt.Errorf("step %q is defined twice", st.Name)
		case st.Args == nil:
			return fmt.Errorf("step %q has no args", st.Name)
		}
		names[st.Name] = true
	}
	for _, st := range steps {
		seen := map[string]bool{}
		for _, dep := range st.After {
			switch {
			case dep == st.Name:
				return fmt.Errorf("step %q depends on itself", st.Name)
			case !names[dep]:
				return fmt.Errorf("step %q depends on unknown step %q", st.Name, dep)
			case seen[dep]:
				return fmt.Errorf("step %q lists dependency %q twice", st.Name, dep)
			}
			seen[dep] = true
		}
	}
	return nil
}

// checkRoots makes sure some step can start at once.
func checkRoots(steps []StepDef) error {
	for _, st := range steps {
		if len(st.After) == 0 {
			return nil
		}
	}
	return errors.New("no root step: every step depends on another")
}

// findCycle returns a cycle as a path of step names that starts and ends
// on the same step, or nil. It walks steps and dependencies in definition
// order, so the cycle it reports is stable.
func findCycle(steps []StepDef) []string {
	after := map[string][]string{}
	for _, st := range steps {
		after[st.Name] = st.After
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(name string) []string
	visit = func(name string) []string {
		switch state[name] {
		case onPath:
			start := slices.Index(path, name)
			return append(append([]string{}, path[start:]...), name)
		case done:
			return nil
		}
		state[name] = onPath
		path = append(path, name)
		for _, dep := range after[name] {
			if cycle := visit(dep); cycle != nil {
				return cycle
			}
		}
		path = path[:len(path)-1]
		state[name] = done
		return nil
	}
	for _, st := range steps {
		if cycle := visit(st.Name); cycle != nil {
			return cycle
		}
	}
	return nil
}
