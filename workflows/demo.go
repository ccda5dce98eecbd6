package workflows

import (
	"context"
	"fmt"
	"time"

	"github.com/mullhq/mull/engine"
)

// Register adds the workflow job kinds: demo_step (for operators and crash
// tests) and workflow_reconcile. Every mull process calls it, API-only ones
// too: Start refuses step kinds it was not told about, and River refuses to
// insert kinds without a worker. Step kinds of real workflows are added with
// AddStep by their own packages.
//
// workflow_reconcile runs from a built-in cron entry every minute: it fails
// runs whose step jobs died where no step code could record it (a worker
// killed on a last attempt, an operator's cancel in River UI).
func Register(reg *engine.Registry, r *Runner) {
	AddStep(reg, r, DemoSpec, demoStep)
	engine.Add(reg, ReconcileSpec, &reconcileWorker{r: r})
	reg.Cron("workflow-reconcile", "@every 1m", ReconcileArgs{})
}

// DemoArgs are the args of one demo step.
type DemoArgs struct {
	// Value is added to the sum of the step's dependencies' values.
	Value int `json:"value"`
	// WorkMS is how long the step pretends to work, in milliseconds: long
	// enough to kill a worker in the middle of a run.
	WorkMS int64 `json:"work_ms,omitempty"`
}

// Kind is stable: it is stored with every job.
func (DemoArgs) Kind() string { return "demo_step" }

// DemoOutput is what each demo step outputs.
type DemoOutput struct {
	Value int `json:"value"`
}

// DemoSpec: enough attempts to survive a crash test that kills the worker
// mid-step several times (a killed attempt counts), and a timeout well above
// the longest work Demo accepts.
var DemoSpec = engine.Spec{Queue: "default", MaxAttempts: 10, Backoff: time.Second, Timeout: 2 * time.Minute}

// demoMaxWork keeps demo work under DemoSpec's timeout.
const demoMaxWork = time.Minute

// Demo defines a three-level diamond an operator can start to see
// workflows work end to end, and that a crash test can kill a worker in:
// "split" fans out to parts "part_1"…"part_N", which fan in to "join".
// Each step waits work, then outputs its Value plus the sum of its
// dependencies' outputs, so join outputs DemoTotal(parts) exactly when
// every step ran and handed its output on.
func Demo(parts int, work time.Duration) (Def, error) {
	if parts < 1 || parts > 1000 {
		return Def{}, fmt.Errorf("demo: parts must be between 1 and 1000, got %d", parts)
	}
	if work < 0 || work > demoMaxWork {
		return Def{}, fmt.Errorf("demo: work must be between 0 and %s, got %s", demoMaxWork, work)
	}
	ms := work.Milliseconds()
	def := Def{Name: "demo", Input: map[string]any{"parts": parts, "work_ms": ms}}
	def.Steps = append(def.Steps, StepDef{Name: "split", Args: DemoArgs{Value: 1, WorkMS: ms}})
	var partNames []string
	for i := 1; i <= parts; i++ {
		name := fmt.Sprintf("part_%d", i)
		partNames = append(partNames, name)
		def.Steps = append(def.Steps, StepDef{Name: name, Args: DemoArgs{Value: i, WorkMS: ms}, After: []string{"split"}})
	}
	def.Steps = append(def.Steps, StepDef{Name: "join", Args: DemoArgs{WorkMS: ms}, After: partNames})
	return def, nil
}

// DemoTotal is what Demo's join step outputs when all went well: each part
// i outputs i plus split's 1.
func DemoTotal(parts int) int { return parts*(parts+1)/2 + parts }

// demoStep waits, cancellably, then sums.
func demoStep(ctx context.Context, step *Step[DemoArgs]) (Result, error) {
	timer := time.NewTimer(time.Duration(step.Args.WorkMS) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-timer.C:
	}
	sum := step.Args.Value
	for _, dep := range step.Deps() {
		var out DemoOutput
		if err := step.Output(dep, &out); err != nil {
			return Result{}, err
		}
		sum += out.Value
	}
	return Result{Output: DemoOutput{Value: sum}}, nil
}
