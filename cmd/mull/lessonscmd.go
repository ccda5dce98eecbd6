package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

func newLessonsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lessons",
		Short: "List, check, add, move, remove and deprecate structured lessons; reflection stats",
		Long: `A lesson is a memory of kind lesson (a heuristic), directive (a required
method) or failure (an action to avoid), with the seed's structured fields
and a scope: global (every session), workspace (every session of one
workspace), session (one named session) or reflection (the session it was
reflected in). Nothing is deleted: move is a promotion (the source stays,
covered on the new lesson's paths), remove writes a tombstone, deprecate
keeps the lesson but stops serving it. The same operations are on the admin
API under /v1/admin/lessons.`,
	}
	cmd.AddCommand(newLessonsListCmd(g), newLessonsCheckCmd(g), newLessonsAddCmd(g), newLessonsMoveCmd(g),
		newLessonsRemoveCmd(g), newLessonsDeprecateCmd(g), newLessonsStatsCmd(g))
	return cmd
}

// lessonRef reads a lesson id as mull shows it ("L42") or bare ("42").
func lessonRef(s string) (int64, error) {
	id, err := lesson.ParseLessonRef(s)
	if err != nil {
		return 0, usageErr("%v", err)
	}
	return id, nil
}

// lessonErr sorts a service error: a bad field or target is a usage error
// (exit 2), an unknown lesson names itself.
func lessonErr(id int64, err error) error {
	var fe *memory.FieldError
	var ns *memories.NoSessionError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no lesson %s", lesson.LessonRef(id))
	case errors.As(err, &fe):
		return usageErr("--%s: %s", strings.ReplaceAll(fe.Field, "_", "-"), fe.Problem)
	case errors.As(err, &ns):
		return usageErr("--%s: %s", ns.Field, ns.Error())
	}
	return err
}

func newLessonsListCmd(g *globals) *cobra.Command {
	var q memories.LessonQuery
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--session S] [--workspace W] [--all]",
		Short: "List the lessons a session has in force, grouped by scope",
		Long: `Without --all, list shows what the session actually sees: the structured
lessons of its workspace and the global library, active, not quarantined,
whose scope shows them to it, and not covered by a promotion (lesson.InForce).
The agent reads them through its digest, which changes only at a watermark:
a lesson marked "notice" is newer than the published digest (the agent got
it as a notice), one marked "omitted" was in force at the digest's watermark
but its text left it out (the lessons quota, the shrink, the render-time
gate: it is not in a task's snapshot either), and the lessons the digest still shows that are no longer
in force are listed after, until the next publication.
--session alone takes the session's workspace; --workspace alone shows what
any session of that workspace sees (no session or reflection lessons); with
neither, the global lessons. --all lists every lesson stored, every state,
quarantined ones included.`,
		Args: cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			v, err := a.memories.Lessons(ctx, q)
			if err != nil {
				return lessonErr(0, err)
			}
			if asJSON {
				v.Lessons = nonNil(v.Lessons)
				return printJSON(g, v)
			}
			printLessons(g, v)
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&q.Session, "session", "", "the session whose view to show")
	fl.StringVar(&q.Workspace, "workspace", "", "the workspace (default: the session's)")
	fl.BoolVar(&q.All, "all", false, "every lesson stored, every state, quarantined included")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printLessons prints a view's lessons grouped by scope, in the digest's
// order, then what the published digest still shows that is gone.
func printLessons(g *globals, v memories.LessonView) {
	list := v.Lessons
	if len(list) == 0 {
		fmt.Fprintln(g.stdout, "no lessons")
	}
	for _, sc := range memory.LessonScopes {
		var group []memory.Memory
		for _, m := range list {
			if lesson.ScopeOf(m) == sc {
				group = append(group, m)
			}
		}
		if len(group) == 0 {
			continue
		}
		fmt.Fprintf(g.stdout, "%s (%d)\n", sc, len(group))
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		for _, m := range group {
			conf := "-"
			if m.Lesson != nil {
				conf = cmp.Or(string(m.Lesson.Confidence), "-")
			}
			seen := "digest"
			switch {
			case slices.Contains(v.InDigest, m.ID):
			case slices.Contains(v.Omitted, m.ID):
				seen = "omitted" // in force at the digest's watermark, left out of its text
			default:
				seen = "notice"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", lesson.LessonRef(m.ID), m.Kind, conf, lessonState(m),
				seen, lessonWhose(m), oneLine(m.Text, 70))
		}
		tw.Flush()
	}
	var gone []string
	for _, id := range v.InDigest {
		if !slices.ContainsFunc(list, func(m memory.Memory) bool { return m.ID == id }) {
			gone = append(gone, lesson.LessonRef(id))
		}
	}
	if len(gone) > 0 {
		fmt.Fprintf(g.stdout, "still in the digest published %s until the next watermark: %s\n",
			v.CommittedAt.Format(time.RFC3339), strings.Join(gone, ", "))
	}
}

func lessonState(m memory.Memory) string {
	if m.Quarantined {
		return "quarantined"
	}
	return string(lesson.StateOf(m))
}

func lessonWhose(m memory.Memory) string {
	switch lesson.ScopeOf(m) {
	case memory.LessonSession, memory.LessonReflection:
		return "session " + m.ScopeSession
	case memory.LessonWorkspace:
		return m.Workspace
	}
	return "(global)"
}

func newLessonsCheckCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check every lesson's references, states, scopes and boundaries; exit 1 on problems",
		Long: `check runs the structure checker (the seed's lessons check) over every lesson
stored, every state, and every declared conflict: fields for the kind, scope
against workspace and sessions, a boundary outside the reflection scope,
states against the timeline, superseded_by and promoted_from references,
conflict ends. It checks structure, not meaning. Each problem is one line,
"L12 rule: detail"; exit status 1 when there is any.`,
		Args: cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			ps, err := a.memories.CheckLessons(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(g, nonNil(ps)); err != nil {
					return err
				}
			} else {
				for _, p := range ps {
					fmt.Fprintln(g.stdout, p.String())
				}
			}
			if len(ps) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("lessons check: %d problem(s)", len(ps))}
			}
			if !asJSON {
				fmt.Fprintln(g.stdout, "lessons check: no problems")
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newLessonsAddCmd(g *globals) *cobra.Command {
	var w memories.LessonWrite
	var kind, scope, pattern, confidence string
	cmd := &cobra.Command{
		Use:   "add --scope S --kind K --problem … (--correction … | --avoid …) --boundary …",
		Short: "Add a structured lesson (origin panel, through the trust gate)",
		Long: `add writes an operator's lesson. A lesson and a directive need --correction
(never narrower than --problem); a failure needs --avoid, and may give
--instead. --boundary says why the lesson belongs to its scope and is
required outside the reflection scope. --pattern is the seed's old name of
--problem. Every field goes through the trust gate: credentials are
redacted, and an instruction-like field quarantines the lesson (kept,
flagged, never served; exit 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pattern != "" {
				if w.Fields.Problem != "" && w.Fields.Problem != pattern {
					return usageErr("--pattern and --problem: give one (--pattern is the old name of --problem)")
				}
				w.Fields.Problem = pattern
			}
			w.Kind, w.Scope, w.Fields.Confidence = memory.Kind(kind), memory.LessonScope(scope), memory.Confidence(confidence)
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			res, err := a.memories.AddLesson(cmd.Context(), w, memory.Provenance{Origin: memory.OriginPanel})
			var qe *memories.QuarantinedError
			if errors.As(err, &qe) {
				return err
			}
			if err != nil {
				return lessonErr(0, err)
			}
			fmt.Fprintf(g.stdout, "added lesson %s (%s, %s)\n", lesson.LessonRef(res.Memory.ID), res.Memory.Kind, lessonWhose(res.Memory))
			if res.Redacted > 0 {
				fmt.Fprintf(g.stdout, "redacted %d credential(s)\n", res.Redacted)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&scope, "scope", "", "global, workspace, session or reflection (required)")
	fl.StringVar(&w.Workspace, "workspace", "", "the workspace of a workspace lesson (a session lesson takes its session's)")
	fl.StringVar(&w.Session, "session", "", "the named session of a session lesson, the source session of a reflection lesson")
	fl.StringVar(&kind, "kind", "lesson", "lesson, directive or failure")
	fl.StringVar(&w.Fields.Problem, "problem", "", "what happened: the observable phenomenon")
	fl.StringVar(&pattern, "pattern", "", "the seed's old name of --problem")
	fl.StringVar(&w.Fields.Attempted, "attempted", "", "what was done then, without judging it")
	fl.StringVar(&w.Fields.Correction, "correction", "", "what to do instead (lesson, directive)")
	fl.StringVar(&w.Fields.AppliesWhen, "applies-when", "", "when the lesson applies")
	fl.StringVar(&w.Fields.Avoid, "avoid", "", "what not to do (failure)")
	fl.StringVar(&w.Fields.Instead, "instead", "", "a known alternative to --avoid (failure)")
	fl.StringVar(&confidence, "confidence", "", "low, medium or high")
	fl.StringVar(&w.Fields.Boundary, "boundary", "", "why the lesson belongs to its scope (required outside reflection)")
	fl.StringVar(&w.Fields.Source, "source", "", "where the lesson came from, in your words")
	return cmd
}

func newLessonsMoveCmd(g *globals) *cobra.Command {
	var to, boundary string
	cmd := &cobra.Command{
		Use:   "move ID --to global|session:S|workspace:W [--boundary …]",
		Short: "Move (promote) a lesson to another scope: a transition, not a copy",
		Long: `move derives a new active lesson in the target scope with PromotedFromID = ID.
The source is not changed, but it stops being in force on the new lesson's
paths: moved to global, it is hidden everywhere; to session:S, only in S
(it still shows in its own session); to workspace:W, in W's sessions.
--boundary says why it belongs to the new scope (default: the source's).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := lessonRef(args[0])
			if err != nil {
				return err
			}
			t, err := lesson.ParseTarget(to)
			if err != nil {
				return usageErr("--to: %v", err)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			mv, err := a.memories.MoveLesson(cmd.Context(), id, t, boundary)
			if err != nil {
				return lessonErr(id, err)
			}
			fmt.Fprintf(g.stdout, "moved %s to %s as %s\n", lesson.LessonRef(id), t, lesson.LessonRef(mv.Lesson.ID))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "global, session:<session id> or workspace:<absolute path> (required)")
	cmd.Flags().StringVar(&boundary, "boundary", "", "why the lesson belongs to its new scope (default: the source's)")
	return cmd
}

func newLessonsRemoveCmd(g *globals) *cobra.Command {
	var yes bool
	var reason string
	cmd := &cobra.Command{
		Use:   "remove ID [--yes] [--reason …]",
		Short: "Remove a lesson (a tombstone); previews and exits 3 until --yes",
		Long: `remove first prints what removing the lesson touches (its conflicts, the
lessons moved from it, the closed tasks that had it in force) and exits 3
without changing anything. With --yes it writes the tombstone: the lesson is
never served again; its row, history and the snapshots that held it stay.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := lessonRef(args[0])
			if err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			rm, err := a.memories.RemoveLesson(cmd.Context(), id, reason, yes)
			if err != nil {
				return lessonErr(id, err)
			}
			m := rm.Lesson
			if rm.Removed {
				fmt.Fprintf(g.stdout, "removed %s (a tombstone: kept, never served)\n", lesson.LessonRef(id))
				return nil
			}
			fmt.Fprintf(g.stdout, "would remove %s  %s  %s  %s\n  %s\n", lesson.LessonRef(id), m.Kind, lessonState(m), lessonWhose(m), m.Text)
			fmt.Fprintf(g.stdout, "  conflicts naming it: %d (kept)\n", len(rm.Links))
			if len(rm.PromotedTo) > 0 {
				refs := make([]string, len(rm.PromotedTo))
				for i, p := range rm.PromotedTo {
					refs[i] = lesson.LessonRef(p)
				}
				fmt.Fprintf(g.stdout, "  moved to: %s (they stay in force)\n", strings.Join(refs, ", "))
			}
			fmt.Fprintf(g.stdout, "  in force in %d closed task(s) (their snapshots keep it)\n", rm.Exposures)
			return &exitError{code: 3, err: fmt.Errorf("nothing removed; run again with --yes to remove %s", lesson.LessonRef(id))}
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "remove it (without: a preview, exit 3)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept on the tombstone)")
	return cmd
}

func newLessonsDeprecateCmd(g *globals) *cobra.Command {
	var reason, ws string
	var list, asJSON bool
	cmd := &cobra.Command{
		Use:   "deprecate ID --reason … | deprecate --list",
		Short: "Deprecate a lesson (kept, no longer served), or list deprecated ones",
		Long: `deprecate marks an active lesson no longer recommended: it stops being in
force (the digest drops it at its next watermark), and its text, reason and
history stay. --list shows the deprecated lessons (of --workspace and the
global library, or of every library), with when and why.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case list && len(args) > 0:
				return usageErr("--list takes no lesson id")
			case !list && len(args) == 0:
				return usageErr("give a lesson id, or --list")
			case !list && strings.TrimSpace(reason) == "":
				return usageErr("--reason: required, say why it is no longer recommended")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			if list {
				ls, err := a.memories.DeprecatedLessons(cmd.Context(), ws)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(g, nonNil(ls))
				}
				for _, m := range ls {
					fmt.Fprintf(g.stdout, "%s  %s  %s  since %s: %s\n  %s\n", lesson.LessonRef(m.ID), m.Kind, lessonWhose(m),
						m.InvalidAt.Format("2006-01-02"), m.InvalidReason, m.Text)
				}
				if len(ls) == 0 {
					fmt.Fprintln(g.stdout, "no deprecated lessons")
				}
				return nil
			}
			id, err := lessonRef(args[0])
			if err != nil {
				return err
			}
			if _, err := a.memories.DeprecateLesson(cmd.Context(), id, reason); err != nil {
				return lessonErr(id, err)
			}
			fmt.Fprintf(g.stdout, "deprecated %s\n", lesson.LessonRef(id))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it is no longer recommended (required)")
	cmd.Flags().BoolVar(&list, "list", false, "list the deprecated lessons")
	cmd.Flags().StringVar(&ws, "workspace", "", "with --list: this workspace's and the global ones")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --list: print JSON")
	return cmd
}

func newLessonsStatsCmd(g *globals) *cobra.Command {
	var ws string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats [--workspace W]",
		Short: "Relation counts (new, repeat, revise, none) and precedent-gate refusals",
		Long: `stats counts the reflections on tasks: by who reflected (job, agent), each
relation proposed and accepted, and the refusals by the check that refused
them (no_evidence, unknown_or_open, succeeded, not_in_snapshot, …). Watch
revise: a gate that refuses every revise shows as revise proposed, 0
accepted.`,
		Args: cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			st, err := a.memories.LessonStats(ctx, ws)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, st)
			}
			fmt.Fprintf(g.stdout, "reflections %d (job %d, agent %d), lessons recorded %d\n", st.Reflections,
				st.ByReflectedBy[store.ReflectedByJob], st.ByReflectedBy[store.ReflectedByAgent], st.LessonsRecorded)
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RELATION\tPROPOSED\tACCEPTED")
			for _, r := range memories.Relations {
				fmt.Fprintf(tw, "%s\t%d\t%d\n", r, st.Proposed[r], st.Accepted[r])
			}
			tw.Flush()
			checks := make([]string, 0, len(st.Refusals))
			for c := range st.Refusals {
				checks = append(checks, c)
			}
			slices.Sort(checks)
			total := 0
			for _, n := range st.Refusals {
				total += n
			}
			fmt.Fprintf(g.stdout, "refusals %d\n", total)
			for _, c := range checks {
				fmt.Fprintf(g.stdout, "  %s %d\n", c, st.Refusals[c])
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "only tasks of this workspace")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
