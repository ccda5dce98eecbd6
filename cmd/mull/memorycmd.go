package main

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

func newMemoryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "List, search, show, add and forget remembered items",
		Long: `Memories are what DSH agents remember between sessions, per workspace (the
DSH cwd) or in the global library. Nothing is deleted: forget marks a memory
invalid, with a reason, and show prints both timelines (when mull recorded it,
and when it stopped being valid). verify records that you confirmed one: what
a retro or consolidation learned is capped at importance 5 until a person
vouches for it. Instruction-like text is quarantined at write: kept, flagged,
never served to the agent.`,
	}
	cmd.AddCommand(newMemoryListCmd(g), newMemorySearchCmd(g), newMemoryShowCmd(g),
		newMemoryForgetCmd(g), newMemoryAddCmd(g), newMemoryVerifyCmd(g),
		newMemoryStatusCmd(g), newMemoryPromoteCmd(g), newMemoryUsesCmd(g))
	return cmd
}

func newMemoryListCmd(g *globals) *cobra.Command {
	var ws, kind string
	var global, all, asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memories, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usageErr("--limit %d: want a positive number", limit)
			}
			f := store.MemoryFilter{Kind: kind, All: all, Limit: limit}
			switch {
			case global && ws != "":
				return usageErr("--global and --workspace: give one")
			case global:
				f.Workspaces = []string{""}
			case ws != "":
				f.Workspaces = []string{ws}
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.memories.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(list))
			}
			if len(list) == 0 {
				fmt.Fprintln(g.stdout, "no memories")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWORKSPACE\tKIND\tRECORDED\tVERIFIED\tUSES\tSTATE\tTEXT")
			for _, m := range list {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, libraryName(m.Workspace), m.Kind,
					m.RecordedAt.Format(time.RFC3339), timeOrDash(m.VerifiedAt), m.Uses, state(m), oneLine(m.Text, 70))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&ws, "workspace", "", "only this workspace's memories (the DSH cwd)")
	fl.BoolVar(&global, "global", false, "only the global library")
	fl.StringVar(&kind, "kind", "", "only this kind (fact, preference, lesson, …)")
	fl.BoolVar(&all, "all", false, "include forgotten and quarantined memories")
	fl.IntVar(&limit, "limit", 100, "at most this many")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemorySearchCmd(g *globals) *cobra.Command {
	var ws string
	var limit int
	var asJSON, use bool
	cmd := &cobra.Command{
		Use:         "search --workspace W QUERY…",
		Short:       "Search the memories a workspace reads, best first",
		Args:        cobra.MinimumNArgs(1),
		Annotations: map[string]string{argsName: "q"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > memories.MaxSearch {
				return usageErr("--limit %d: want 1 to %d", limit, memories.MaxSearch)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			hits, err := a.memories.Search(cmd.Context(), memories.Query{Workspace: ws, Text: strings.Join(args, " "), Limit: limit, Peek: !use})
			var fe *memory.FieldError
			if errors.As(err, &fe) {
				return usageErr("%s", fe)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(hits))
			}
			if len(hits) == 0 {
				fmt.Fprintln(g.stdout, "no matches")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSCORE\tKIND\tWORKSPACE\tTEXT")
			for _, h := range hits {
				fmt.Fprintf(tw, "%d\t%.1f\t%s\t%s\t%s\n", h.ID, h.Score, h.Kind, libraryName(h.Workspace), oneLine(h.Text, 80))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "the workspace searching (its scope decides which libraries); empty: the global library")
	cmd.Flags().IntVar(&limit, "limit", 10, "at most this many results")
	cmd.Flags().BoolVar(&use, "use", false, "count the hits as used, as the agent's memory_search does")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemoryShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one memory with both its timelines",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := memoryID(args[0])
			if err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			m, err := a.memories.Get(cmd.Context(), id)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no memory %d", id)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, m)
			}
			printMemory(g, m)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemoryForgetCmd(g *globals) *cobra.Command {
	var reason, keywords, ws string
	var supersededBy int64
	var yes bool
	cmd := &cobra.Command{
		Use:   "forget ID --reason \"…\" | forget --keywords \"…\" --workspace W [--yes]",
		Short: "Mark memories invalid from now on (they are kept, never deleted)",
		Long: `Mark one memory invalid from now on, by id, with a reason; or, as the /forget
slash command does, every live memory of the libraries workspace W reads that
the keywords match by the seed's rule (equal once normalized, or one containing
the other where the contained one has at least 6 characters; at least 4
characters). The matches are shown first and forgotten on your yes, or at once
with --yes. Nothing is deleted: each keeps its text and history.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keywords != "" {
				switch {
				case len(args) > 0:
					return usageErr("give an ID or --keywords, not both")
				case ws == "":
					return usageErr("--workspace: required with --keywords (the DSH cwd)")
				}
				a, err := g.open(cmd.Context(), manage)
				if err != nil {
					return err
				}
				defer a.close()
				return forgetByKeywords(cmd.Context(), g, a, ws, keywords, yes)
			}
			if len(args) == 0 {
				return usageErr("give a memory ID, or --keywords and --workspace")
			}
			id, err := memoryID(args[0])
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return usageErr("--reason: required, say why it is no longer true")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			m, changed, err := a.memories.Invalidate(cmd.Context(), id, reason, supersededBy)
			var fe *memory.FieldError
			switch {
			case errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("no memory %d", id)
			case errors.As(err, &fe):
				return usageErr("%s", fe)
			case err != nil:
				return err
			case !changed:
				fmt.Fprintf(g.stdout, "memory %d was already invalid since %s (%s)\n", id, m.InvalidAt.Format(time.RFC3339), m.InvalidReason)
			default:
				fmt.Fprintf(g.stdout, "forgot memory %d at %s: %s\n", id, m.InvalidAt.Format(time.RFC3339), m.InvalidReason)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it is no longer true (kept, up to 60 characters)")
	cmd.Flags().Int64Var(&supersededBy, "superseded-by", 0, "the id of the memory that replaces it")
	cmd.Flags().StringVar(&keywords, "keywords", "", "forget every live memory these words match (the /forget slash command)")
	cmd.Flags().StringVar(&ws, "workspace", "", "with --keywords: the workspace whose libraries are searched")
	cmd.Flags().BoolVar(&yes, "yes", false, "with --keywords: forget the matches without asking")
	return cmd
}

func newMemoryAddCmd(g *globals) *cobra.Command {
	var w memory.Write
	cmd := &cobra.Command{
		Use:         "add --workspace W --kind K TEXT…",
		Short:       "Remember something yourself (origin panel: an operator's word)",
		Args:        cobra.MinimumNArgs(1),
		Annotations: map[string]string{argsName: "text"},
		RunE: func(cmd *cobra.Command, args []string) error {
			w.Text = strings.Join(args, " ")
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			res, err := a.memories.Remember(cmd.Context(), w, memory.Provenance{Origin: memory.OriginPanel, By: store.ActorCLI})
			var fe *memory.FieldError
			var qe *memories.QuarantinedError
			switch {
			case errors.As(err, &fe):
				return usageErr("%s", fe)
			case errors.As(err, &qe):
				return qe
			case err != nil:
				return err
			case res.Duplicate:
				fmt.Fprintf(g.stdout, "already remembered as memory %d (uses now %d)\n", res.Memory.ID, res.Memory.Uses)
				if res.Verified {
					fmt.Fprintf(g.stdout, "verified memory %d at %s: you said it again\n", res.Memory.ID, res.Memory.VerifiedAt.Format(time.RFC3339))
				}
			default:
				fmt.Fprintf(g.stdout, "remembered memory %d\n", res.Memory.ID)
			}
			if res.Redacted > 0 {
				fmt.Fprintf(g.stdout, "redacted %d credential(s)\n", res.Redacted)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&w.Workspace, "workspace", "", "the workspace (the DSH cwd, absolute); empty: the global library")
	fl.StringVar((*string)(&w.Kind), "kind", "", "fact, preference, lesson, resource, method, principle, hypothesis, prefetch")
	fl.IntVar(&w.Importance, "importance", 0, "1 to 10 (0: the kind's default)")
	fl.StringVar((*string)(&w.Src), "src", "", "where it came from: user, agent, web, tool, doc")
	return cmd
}

func newMemoryVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify ID",
		Short: "Confirm a memory is true (verified now; a retro's is no longer capped)",
		Long: `Record that you confirmed memory ID: its verified time becomes now (again,
when it was verified before) and its src becomes user. A memory a retro or
consolidation wrote scores at most importance 5 until a person vouches for
it, and a memory's freshness (its TTL) runs from when it was last verified.
The memory records who verified it: "admin (cli)" (the panel records
"admin (panel)", the admin API "admin (api)", the agent "agent").
A forgotten or quarantined memory cannot be verified. Exit status: 1 for a
memory that does not exist or cannot be verified, 2 for a bad id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := memoryID(args[0])
			if err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			m, err := a.memories.Verify(cmd.Context(), id, store.ActorCLI)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no memory %d", id)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, m)
			}
			fmt.Fprintf(g.stdout, "verified memory %d at %s (importance now %d)\n", m.ID, m.VerifiedAt.Format(time.RFC3339),
				memory.Importance(m, a.store.Now()))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the memory as JSON")
	return cmd
}

func memoryID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usageErr("%q is not a memory id", s)
	}
	return id, nil
}

func libraryName(ws string) string {
	if ws == "" {
		return "(global)"
	}
	return ws
}

func state(m memory.Memory) string {
	switch {
	case m.Quarantined:
		return "quarantined"
	case !m.InvalidAt.IsZero():
		return "forgotten"
	}
	return "live"
}

func printMemory(g *globals, m memory.Memory) {
	fmt.Fprintf(g.stdout, "memory %d  %s  %s\nworkspace %s\n", m.ID, m.Kind, state(m), libraryName(m.Workspace))
	fmt.Fprintf(g.stdout, "text %s\n", m.Text)
	imp := strconv.Itoa(m.Importance)
	if m.Importance == 0 {
		imp = fmt.Sprintf("%d (kind default)", m.Kind.DefaultImportance())
	}
	fmt.Fprintf(g.stdout, "importance %s  src %s  origin %s  uses %d  ttl %d days\n", imp, cmp.Or(string(m.Src), "-"), m.Origin, m.Uses, memory.TTL(m))
	if m.SessionID != "" || m.JobID != 0 {
		fmt.Fprintf(g.stdout, "from session %s  job %d\n", cmp.Or(m.SessionID, "-"), m.JobID)
	}
	if m.PromotedFrom != "" {
		fmt.Fprintf(g.stdout, "promoted from %s\n", m.PromotedFrom)
	}
	fmt.Fprintf(g.stdout, "recorded %s\n", m.RecordedAt.Format(time.RFC3339))
	if !m.VerifiedAt.IsZero() {
		fmt.Fprintf(g.stdout, "verified %s by %s\n", m.VerifiedAt.Format(time.RFC3339), memories.Verifier(m))
	}
	if m.InvalidAt.IsZero() {
		fmt.Fprintln(g.stdout, "valid since recorded, still valid")
	} else {
		fmt.Fprintf(g.stdout, "invalid since %s: %s", m.InvalidAt.Format(time.RFC3339), m.InvalidReason)
		if m.SupersededBy != 0 {
			fmt.Fprintf(g.stdout, " (superseded by %d)", m.SupersededBy)
		}
		fmt.Fprintln(g.stdout)
	}
	if m.Quarantined {
		fmt.Fprintf(g.stdout, "quarantined: %s (never served)\n", m.QuarantineReason)
	}
}
