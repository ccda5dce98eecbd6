package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// The harness commands that change entries by hand: rollback, archive,
// pin, apply. Each is one manual refinement (source admin), in the
// history and reversible by its id.

func newHarnessRollbackCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rollback ID",
		Short: "Roll back a refinement by its id: its applied edits reversed, in reverse order",
		Long: `Roll back refinement ID (an id from 'mull harness history') in its own
scope: its applied edits are reversed in reverse order, as one refinement
"rollback_<ID>" whose edits carry the reason "rollback:<ID>". Created
entries are deleted, deleted ones restored, updated ones get their previous
content, title, description and metadata back; every restored entry gets a
new version (the history only goes forward). An edit whose entry changed
since is rejected, the others still apply. A refinement rolls back once.
The same as POST /v1/admin/harness/refinements/ID/rollback.

Example:
  mull harness rollback refine_1234`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			out, err := a.harness.Rollback(cmd.Context(), args[0], harnesses.ByAdmin)
			if err != nil {
				return harnessErr(err)
			}
			return printApplied(g, out, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// lifecycleFlags are archive's and pin's common flags.
type lifecycleFlags struct {
	session, kind, reason string
	asJSON                bool
}

func (f *lifecycleFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.session, "session", "", "the entry of that session's local store (default: the global store)")
	fl.StringVar(&f.kind, "kind", "", "the entry's kind, when its id names several: prompt, memory, skill, subagent")
	fl.StringVar(&f.reason, "reason", "", "why (kept in the refinement; at most 500 characters)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
}

// run applies one lifecycle edit to the entry id.
func (f *lifecycleFlags) run(g *globals, cmd *cobra.Command, id string, archive, pin *bool) error {
	k, err := kindFlag(f.kind)
	if err != nil {
		return err
	}
	if n := len([]rune(f.reason)); n > api.MaxLifecycleReason {
		return usageErr("--reason: at most %d characters, got %d", api.MaxLifecycleReason, n)
	}
	a, err := g.open(cmd.Context(), manage)
	if err != nil {
		return err
	}
	defer a.close()
	ref := harnesses.EntryRef{Scope: harness.Local(f.session), Kind: k, ID: id}
	out, err := a.harness.SetLifecycle(cmd.Context(), ref, archive, pin, strings.TrimSpace(f.reason), harnesses.ByAdmin)
	if err != nil {
		return harnessErr(err)
	}
	return printApplied(g, out, f.asJSON)
}

func newHarnessArchiveCmd(g *globals) *cobra.Command {
	var f lifecycleFlags
	var restore bool
	cmd := &cobra.Command{
		Use:   "archive ID [--restore]",
		Short: "Archive an entry (hidden from the projection and the skills), or restore it",
		Long: `Archive entry ID: it stays in the store with its versions, but is no longer
injected into the agent's context nor materialized as a DSH skill. --restore
makes an archived entry active again. Either is one refinement (a version
+1), reversible with 'mull harness rollback'. The same as POST
/v1/admin/harness/entries/ID/archive.

Examples:
  mull harness archive stale-build-notes --reason "the Makefile changed"
  mull harness archive retry-flaky-tests --kind skill --restore`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			archive := !restore
			return f.run(g, cmd, args[0], &archive, nil)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&restore, "restore", false, "restore an archived entry instead")
	return cmd
}

func newHarnessPinCmd(g *globals) *cobra.Command {
	var f lifecycleFlags
	var unpin bool
	cmd := &cobra.Command{
		Use:   "pin ID [--unpin]",
		Short: "Pin an entry (the user's lock), or unpin it",
		Long: `Pin entry ID, or unpin it with --unpin: the pinned flag of its metadata, the
user's mark that the entry matters (the wrap-up keeps pinned entries). One
refinement (a version +1), reversible with 'mull harness rollback'. The
same as POST /v1/admin/harness/entries/ID/pin.

Examples:
  mull harness pin house-style --kind prompt
  mull harness pin house-style --unpin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pin := !unpin
			return f.run(g, cmd, args[0], nil, &pin)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&unpin, "unpin", false, "unpin instead")
	return cmd
}

func newHarnessApplyCmd(g *globals) *cobra.Command {
	var session string
	var automatic, asJSON bool
	cmd := &cobra.Command{
		Use:   "apply FILE",
		Short: "Apply a proposal from a JSON file under every rule (- reads stdin)",
		Long: `Apply a refinement proposal by hand, under the same six rules the review
job's plans go through. FILE (or - for stdin) holds either the admin API's
body, {"session"?, "proposal": {...}, "baseline"?: {"kind/id": version},
"automatic"?: bool}, or a bare proposal, {"summary", "edits": [...]}, with
--session and --automatic. An edit a rule rejects is listed with the rule's
message; the others apply. The same as POST /v1/admin/harness/apply.

An edit: {"action": "create"|"update"|"delete", "kind": "prompt"|"memory"|
"skill"|"subagent", "id", "content", "title", "description", "reason"
(required on update and delete), "blast_radius": "general"|"project"|
"session", "archive"/"pin" (update only)}.

Example:
  echo '{"summary":"note the build","edits":[{"action":"create","kind":"memory",
    "id":"build","content":"make test runs the race detector"}]}' | mull harness apply -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := readApplyFile(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("session") {
				body.Session = session
			}
			body.Automatic = body.Automatic || automatic
			if field, problem := body.Check(); field != "" {
				return usageErr("%s: %s: %s", args[0], field, problem)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			out, err := a.harness.Apply(cmd.Context(), body.Request(harnesses.ByAdmin))
			if err != nil {
				return harnessErr(err)
			}
			return printApplied(g, out, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&session, "session", "", "apply to that session's local store (default: the global store)")
	fl.BoolVar(&automatic, "automatic", false, "apply as the review job would: protected entries and kinds are immutable")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// readApplyFile reads an apply body, or a bare proposal, strictly: an
// unknown field is an error naming it.
func readApplyFile(name string, stdin io.Reader) (api.ApplyBody, error) {
	var raw []byte
	var err error
	if name == "-" {
		raw, err = io.ReadAll(io.LimitReader(stdin, 1<<20+1))
	} else {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return api.ApplyBody{}, usageErr("read %s: %v", name, err)
	}
	if len(raw) > 1<<20 {
		return api.ApplyBody{}, usageErr("%s: over 1 MiB", name)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return api.ApplyBody{}, usageErr("%s: not a JSON object: %v", name, err)
	}
	var body api.ApplyBody
	target := any(&body)
	if _, ok := probe["proposal"]; !ok {
		target = &body.Proposal
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return body, usageErr("%s: %s: want %s, got JSON %s", name, te.Field, te.Type, te.Value)
		}
		return body, usageErr("%s: %s", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	return body, nil
}

// decideHarnessProposal is `mull proposals accept|reject` for a proposal of
// kind harness (a global refinement harness.require_global_approval held):
// accept applies it, rule 6 against the state it was planned on.
func decideHarnessProposal(g *globals, cmd *cobra.Command, a *app, id, status, note string, asJSON bool) error {
	accept := status == store.ProposalAccepted
	out, err := a.harness.Decide(cmd.Context(), id, accept, strings.TrimSpace(note), store.DecidedByCLI)
	if err != nil {
		return harnessErr(err)
	}
	if asJSON {
		return printJSON(g, map[string]any{"id": id, "kind": store.ProposalHarness, "status": status, "decided_by": store.DecidedByCLI,
			"refinement": out.Refinement})
	}
	fmt.Fprintf(g.stdout, "%s harness proposal %s\n", status, id)
	if accept {
		printRefinement(g.stdout, out.Refinement)
	}
	return nil
}
