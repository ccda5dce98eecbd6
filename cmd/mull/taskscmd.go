package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/tasks"
)

func newTasksCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List and show the tasks agents opened (task_start) and how they were reflected on",
		Long: `A task is what an agent opened with task_start (POST /v1/tasks) and closed with
task_end: its goal and expected result, how it ended (succeeded, failed,
abandoned, aborted) and its result, and its window on the session's events
(a seq range). Opening it froze its decision environment: the lessons in
force for its session as the digest showed them, which later edits never
change. Closing it handed it to reflection.mode's reflector: the reflect_task
job (job), the agent through task_reflect (agent), or both; "show" lists
what each lesson of the reflection became (new, repeat, revise, none, or the
check that refused it).`,
	}
	cmd.AddCommand(newTasksListCmd(g), newTasksShowCmd(g))
	return cmd
}

func newTasksListCmd(g *globals) *cobra.Command {
	var f tasks.Filter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tasks, oldest opened first",
		Long: `List tasks, oldest opened first. --status takes open, closed (any outcome), or
one outcome: succeeded, failed, abandoned, aborted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Status != "" && !slices.Contains(tasks.Statuses, f.Status) {
				return usageErr("--status %q: want one of %s", f.Status, strings.Join(tasks.Statuses, ", "))
			}
			if f.Limit < 1 || f.Limit > 1000 {
				return usageErr("--limit %d: want 1 to 1000", f.Limit)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.tasks.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			views := make([]api.TaskView, 0, len(list))
			for _, t := range list {
				views = append(views, api.ViewTask(t))
			}
			if asJSON {
				return printJSON(g, views)
			}
			if len(views) == 0 {
				fmt.Fprintln(g.stdout, "no tasks")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSESSION\tSTATUS\tOPENED\tLESSONS\tREFLECTED\tGOAL")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", v.ID, v.SessionID, v.Status, v.OpenedAt.Format(time.RFC3339),
					v.Environment.Count, reflected(v), oneLine(v.Goal, 60))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.SessionID, "session", "", "only tasks of this DSH session")
	fl.StringVar(&f.Workspace, "workspace", "", "only tasks of this workspace (the DSH cwd)")
	fl.StringVar(&f.Status, "status", "", "only tasks in this status: "+strings.Join(tasks.Statuses, ", "))
	fl.IntVar(&f.Limit, "limit", 100, "at most this many (up to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// reflected says who reflected on a task, or who is to.
func reflected(v api.TaskView) string {
	switch {
	case v.ReflectedBy != "":
		return "by " + v.ReflectedBy
	case v.Status == "open":
		return "-"
	}
	return "pending (" + v.ReflectMode + ")"
}

// taskDetail is `mull tasks show --json`.
type taskDetail struct {
	Task        api.TaskView         `json:"task"`
	Environment lesson.Snapshot      `json:"environment"`
	Reflections []api.ReflectionView `json:"reflections"`
}

func newTasksShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a task, its decision environment and its reflection",
		Long: `Show a task: its goal, expected result, outcome and window of session events,
its decision environment rendered as the reflection material shows it (the
lessons in force when it opened, at most 12 in full), and each reflection
with what every lesson became.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			d, err := a.tasks.Show(cmd.Context(), args[0])
			if errors.Is(err, tasks.ErrNotFound) {
				return fmt.Errorf("no task %q", args[0])
			}
			if err != nil {
				return err
			}
			env, err := tasks.Environment(d.Task)
			if err != nil {
				return fmt.Errorf("task %s: its environment does not decode: %w", d.Task.ID, err)
			}
			out := taskDetail{Task: api.ViewTask(d.Task), Environment: env, Reflections: api.ViewReflections(d.Reflections)}
			if asJSON {
				return printJSON(g, out)
			}
			printTask(g, out)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printTask(g *globals, d taskDetail) {
	t := d.Task
	fmt.Fprintf(g.stdout, "task %s  %s  session %s\nworkspace %s\n", t.ID, t.Status, t.SessionID, t.Workspace)
	fmt.Fprintf(g.stdout, "goal %s\nexpected %s\n", oneLine(t.Goal, 300), oneLine(t.Expected, 300))
	fmt.Fprintf(g.stdout, "opened %s (seq %d)", t.OpenedAt.Format(time.RFC3339), t.OpenSeq)
	if t.ClosedAt != nil {
		fmt.Fprintf(g.stdout, "  closed %s (seq %d)\nresult %s", t.ClosedAt.Format(time.RFC3339), t.CloseSeq, oneLine(t.Result, 300))
	}
	fmt.Fprintln(g.stdout)
	switch {
	case t.ReflectedBy != "":
		fmt.Fprintf(g.stdout, "reflected by %s at %s (mode %s)\n", t.ReflectedBy, t.ReflectedAt.Format(time.RFC3339), t.ReflectMode)
	case t.Status != "open":
		fmt.Fprintf(g.stdout, "not reflected on yet (mode %s", t.ReflectMode)
		if t.ReflectJobID != 0 {
			fmt.Fprintf(g.stdout, ", reflect_task job %d", t.ReflectJobID)
		}
		fmt.Fprintln(g.stdout, ")")
	}
	fmt.Fprintln(g.stdout)
	fmt.Fprintln(g.stdout, lesson.RenderEnvironment(d.Environment))
	for _, r := range d.Reflections {
		fmt.Fprintf(g.stdout, "\nreflection %d by %s at %s: %d lesson(s) recorded", r.ID, r.By, r.RecordedAt.Format(time.RFC3339), r.LessonsRecorded)
		if r.Verdict != "" {
			fmt.Fprintf(g.stdout, ", review %s", r.Verdict)
		}
		fmt.Fprintf(g.stdout, "\nassessment %s\n", oneLine(r.Assessment, 300))
		for _, it := range r.Items {
			fmt.Fprintf(g.stdout, "  lessons[%d] %s: %s\n", it.Index, it.Relation, itemOutcome(it))
		}
	}
}

func itemOutcome(it api.ItemView) string {
	switch {
	case it.Refused != "":
		return "refused, " + it.Refused
	case it.ID != 0:
		return "stored as " + lesson.LessonRef(it.ID)
	case it.TargetID != 0:
		return "evidence for " + lesson.LessonRef(it.TargetID)
	}
	return "nothing stored"
}
