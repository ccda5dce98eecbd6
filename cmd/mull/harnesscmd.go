package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
)

func newHarnessCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "harness",
		Short: "List, show, refine, roll back, archive and pin harness entries (seed 004)",
		Long: `The harness is the agent's supplemental layer over DSH's base system prompt:
versioned entries of four kinds (prompt notes, memories, skills, subagent
specs), in a global store every session sees and a session-local store that
shadows same-id global entries. mull injects a ranked projection of them into
each step, and serves skill entries as DSH SKILL.md bundles (mull-<id>).

A refinement edits entries under the seed's six rules; every edit is
validated, every version kept, and a refinement is reversible by its id. The
refine_review job proposes refinements every harness.turn_interval (25) turns
and after a compaction; 'mull harness refine' runs one now.

Without --session a command works on the global store; with it, on that
session's local store (list and history show the global entries too). The
same is on the admin API under /v1/admin/harness/.`,
	}
	cmd.AddCommand(newHarnessListCmd(g), newHarnessShowCmd(g), newHarnessHistoryCmd(g), newHarnessReviewsCmd(g),
		newHarnessRefineCmd(g), newHarnessRollbackCmd(g), newHarnessArchiveCmd(g), newHarnessPinCmd(g), newHarnessApplyCmd(g))
	return cmd
}

// kindFlag checks a --kind value.
func kindFlag(v string) (harness.Kind, error) {
	k, problem := api.ParseHarnessKind(v)
	if problem != "" {
		return "", usageErr("--kind: %s", problem)
	}
	return k, nil
}

func newHarnessListCmd(g *globals) *cobra.Command {
	var f harnesses.ListFilter
	var kind string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List entries by kind then id: kind, id, version, scope, state, title or content",
		Long: `List the harness entries by kind then id. Without --session, the global
store; with it, that session's local entries and the global ones, a global
entry the session shadows marked "shadowed". Archived entries are left out
unless --archived.

Examples:
  mull harness list
  mull harness list --session 01J9… --kind skill
  mull harness list --archived --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.Kind, err = kindFlag(kind); err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.harness.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNilSlice(list))
			}
			printEntries(g.stdout, list)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Session, "session", "", "also that session's local entries (they shadow same-id global ones)")
	fl.StringVar(&kind, "kind", "", "only this kind: prompt, memory, skill, subagent")
	fl.BoolVar(&f.Archived, "archived", false, "include archived entries")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func printEntries(w io.Writer, list []harnesses.EntryView) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no entries")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tV\tSCOPE\tSTATE\tINJECTED\tTEXT")
	for _, e := range list {
		state := string(e.Metadata.Lifecycle)
		if state == "" {
			state = string(harness.Active)
		}
		if e.Metadata.Pinned {
			state += ",pinned"
		}
		if e.Shadowed {
			state += ",shadowed"
		}
		text := e.Title
		if text == "" {
			text = e.Content
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", e.Kind, oneLine(e.ID, 60), e.Version, e.Scope, state, e.Injections, oneLine(text, 80))
	}
	_ = tw.Flush()
}

func newHarnessShowCmd(g *globals) *cobra.Command {
	var session, kind, at string
	var versions bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one entry as JSON, now or as it was at a time, with every version",
		Long: `Show one entry as formatted JSON: its content, title, description,
protection, metadata (source session, lifecycle, pinned, last injected) and
version. --at T shows the version in force at T (RFC 3339): what the entry
said then; an entry deleted by then is not found. --versions adds every
version, oldest first, with the refinement that wrote it. --kind is needed
only when the id names entries of several kinds.

Examples:
  mull harness show retry-flaky-tests --kind skill --versions
  mull harness show build-notes --session 01J9… --at 2026-12-01T10:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := kindFlag(kind)
			if err != nil {
				return err
			}
			var t time.Time
			if at != "" {
				if t, err = time.Parse(time.RFC3339Nano, at); err != nil {
					return usageErr("--at %q: want an RFC 3339 time, e.g. 2026-12-01T10:00:00Z", at)
				}
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			ref := harnesses.EntryRef{Scope: harness.Local(session), Kind: k, ID: args[0]}
			e, err := a.harness.Get(cmd.Context(), ref, t)
			if err != nil {
				return harnessErr(err)
			}
			out := map[string]any{"entry": e}
			if versions {
				ref.Kind = e.Kind
				vs, err := a.harness.Versions(cmd.Context(), ref)
				if err != nil {
					return harnessErr(err)
				}
				out["versions"] = vs
			}
			return printJSON(g, out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&session, "session", "", "the entry of that session's local store (default: the global store)")
	fl.StringVar(&kind, "kind", "", "the entry's kind, when its id names several: prompt, memory, skill, subagent")
	fl.StringVar(&at, "at", "", "the version in force at this time (RFC 3339)")
	fl.BoolVar(&versions, "versions", false, "add every version, oldest first")
	return cmd
}

// harnessErr words the service's errors for the terminal: an unknown
// entry or refinement is exit 1 with the service's message.
func harnessErr(err error) error {
	var fe *harnesses.FieldError
	switch {
	case errors.As(err, &fe):
		return usageErr("%s", fe.Error())
	case errors.Is(err, harnesses.ErrNotFound):
		return &exitError{code: 1, err: err}
	}
	return err
}

func newHarnessHistoryCmd(g *globals) *cobra.Command {
	var f harnesses.HistoryFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List refinements, newest first: id, scope, source, edits applied and rejected, summary",
		Long: `List the refinement history, newest first: each refinement's id (the one
'mull harness rollback' takes), scope, source (job, agent or admin), how
many of its edits applied and how many a rule rejected, when it committed,
what rolled it back, and its summary. A refinement whose edits were all
rejected is listed too. --session shows that session's local refinements and
the global ones; --scope global or local narrows.

Examples:
  mull harness history
  mull harness history --session 01J9… --scope local --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Scope != "" && f.Scope != "global" && f.Scope != "local" {
				return usageErr("--scope %q: want global or local", f.Scope)
			}
			if f.Limit < 1 || f.Limit > 1000 {
				return usageErr("--limit %d: want 1 to 1000", f.Limit)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.harness.History(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNilSlice(list))
			}
			printHistory(g.stdout, list)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Session, "session", "", "that session's local refinements and the global ones")
	fl.StringVar(&f.Scope, "scope", "", "only global or only local refinements")
	fl.IntVar(&f.Limit, "limit", 100, "at most this many (up to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printHistory(w io.Writer, list []harnesses.RefinementView) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no refinements")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tSOURCE\tAPPLIED\tREJECTED\tCOMMITTED\tROLLED BACK BY\tSUMMARY")
	for _, r := range list {
		ok, bad := r.Counts()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Scope, r.Source, ok, bad,
			r.CommittedAt.UTC().Format(time.RFC3339), r.RolledBackBy, oneLine(r.Summary, 80))
	}
	_ = tw.Flush()
}

func newHarnessReviewsCmd(g *globals) *cobra.Command {
	var f harnesses.ReviewFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reviews",
		Short: "List refine_review verdicts, newest first: trigger, turns, outcome, refinement, rationale",
		Long: `List the review job's verdicts, newest first (the seed's reviews.jsonl): when,
which session, why it ran (turn-interval, compact, session-end, manual), the
turns since the last review, the outcome (declined: the review said no;
assessed: approved but no edit proposed; approved: edits applied, some may
have been rejected; failed: the attempt failed and touched nothing), the
refinement it applied, and the rationale or the failure.

Examples:
  mull harness reviews --session 01J9…
  mull harness reviews --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Limit < 1 || f.Limit > 1000 {
				return usageErr("--limit %d: want 1 to 1000", f.Limit)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.harness.Reviews(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNilSlice(list))
			}
			printReviews(g.stdout, list)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Session, "session", "", "only this session's reviews")
	fl.IntVar(&f.Limit, "limit", 100, "at most this many (up to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printReviews(w io.Writer, list []harnesses.ReviewRow) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no reviews")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tSESSION\tTRIGGER\tTURNS\tOUTCOME\tREJECTED\tREFINEMENT\tRATIONALE")
	for _, r := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", r.ID, r.At.UTC().Format(time.RFC3339), oneLine(r.Session, 40),
			r.Trigger, r.Turns, r.Outcome, len(r.Rejected), r.RefinementID, oneLine(r.Rationale, 80))
	}
	_ = tw.Flush()
}

// printRefinement prints a refinement and each of its edits: applied, or
// rejected with the rule's message.
func printRefinement(w io.Writer, r harness.Refinement) {
	ok, bad := r.Counts()
	rollback := ""
	if r.RollbackOf != "" {
		rollback = ", rolling back " + r.RollbackOf
	}
	fmt.Fprintf(w, "refinement %s (%s%s): %d applied, %d rejected\n", r.ID, r.Scope, rollback, ok, bad)
	if r.Summary != "" {
		fmt.Fprintf(w, "  summary: %s\n", oneLine(r.Summary, 200))
	}
	for _, e := range r.Edits {
		if e.Applied {
			fmt.Fprintf(w, "  applied   %s %s/%s: %s\n", e.Action, e.Kind, oneLine(e.ID, 60), oneLine(e.Reason, 120))
		} else {
			fmt.Fprintf(w, "  rejected  %s %s/%s: %s\n", e.Action, e.Kind, oneLine(e.ID, 60), oneLine(e.Error, 200))
		}
	}
}

// printApplied prints an apply's result, or where it waits.
func printApplied(g *globals, out harnesses.Applied, asJSON bool) error {
	if asJSON {
		return printJSON(g, out)
	}
	if out.Pending != "" {
		fmt.Fprintf(g.stdout, "waiting for approval as proposal %s (harness.require_global_approval): 'mull proposals accept %s' applies it\n",
			out.Pending, out.Pending)
		return nil
	}
	printRefinement(g.stdout, out.Refinement)
	return nil
}
