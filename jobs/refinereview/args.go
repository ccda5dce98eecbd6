// Package refinereview is the refine_review job (seed 004): a session's
// trajectory is reviewed ({approved, rationale}); an approved review is
// planned ({id, summary, edits}) and the plan is applied to the harness
// under learn/harness's rules in the transaction that completes the job,
// so a worker killed at any point applies it once or not at all. Every
// verdict is a review row. Its ingest hooks (hooks.go) keep each
// session's review gate in the store: a review is due every
// harness.turn_interval turn_end events and after a compaction_end,
// harness.cooldown apart, and a session's end drains a due one.
//
// A manual refine (harness refine, the agent's harness_refine) is the
// same job with Trigger manual: no review call, the planner only. A
// person's (Source admin: the admin API, the CLI) is not automatic
// (protected entries may change); an agent's applies on the automatic
// path, protected entries and kinds immutable.
package refinereview

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
)

// Args are a refine_review job's arguments.
type Args struct {
	// Session is the session whose trajectory is read; "" only for a
	// global refine made without one (admin).
	Session   string `json:"session,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	// Global targets the global store; else the session's local one.
	Global  bool            `json:"global,omitempty"`
	Trigger harness.Trigger `json:"trigger"`
	// Instruction is the person's or the agent's focus (manual).
	Instruction string `json:"instruction,omitempty"`
	// Turns are the turns counted since the last review when it was due.
	Turns int `json:"turns,omitempty"`
	// Source is who asked for a manual refine: harnesses.ByAgent (the
	// agent's harness_refine) or harnesses.ByAdmin (the admin API, the
	// CLI); "" reads as admin (jobs enqueued before the field). Only an
	// admin's is the seed's "explicit user session": an agent's applies on
	// the automatic path (protected entries and kinds immutable).
	Source harnesses.Source `json:"source,omitempty"`
	// ScopeKey is the target scope's key (harness.Scope.Key): the job's
	// unique key, filled in by MarshalJSON from Session and Global, so
	// no insert path can leave it out.
	ScopeKey string `json:"scope" river:"unique"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "refine_review" }

// Scope is the store the job refines.
func (a Args) Scope() harness.Scope {
	if a.Global {
		return harness.Global
	}
	return harness.Local(a.Session)
}

// MarshalJSON writes the args with ScopeKey set from the scope, so River's
// unique key (ByArgs over the `unique` field only) is the scope whatever
// the caller filled in.
func (a Args) MarshalJSON() ([]byte, error) {
	type plain Args
	p := plain(a)
	p.ScopeKey = a.Scope().Key()
	return json.Marshal(p)
}

// Triggers are the triggers a job may carry.
var Triggers = []harness.Trigger{harness.TurnInterval, harness.Compact, harness.Manual, harness.SessionEnd}

// Validate says what is wrong with args, naming the field.
func (a Args) Validate() error {
	switch {
	case !slices.Contains(Triggers, a.Trigger):
		return fmt.Errorf("refine_review args: trigger %q is not one of %v", a.Trigger, Triggers)
	case !a.Global && a.Session == "":
		return errors.New("refine_review args: session is required for a local refine (or set global)")
	case a.Source != "" && a.Source != harnesses.ByAgent && a.Source != harnesses.ByAdmin:
		return fmt.Errorf("refine_review args: source %q is not %s or %s", a.Source, harnesses.ByAgent, harnesses.ByAdmin)
	case a.Global && a.Trigger != harness.Manual:
		return fmt.Errorf("refine_review args: an automatic review (trigger %s) refines a session's local store, not the global one", a.Trigger)
	}
	return nil
}

// automatic reports whether the job is the review gate's (not a manual
// refine): it makes the review call, keeps the session's gate and applies
// on the automatic path.
func (a Args) automatic() bool { return a.Trigger != harness.Manual }

// protectedImmutable reports whether the job applies on the automatic
// path (protected entries and kinds immutable): every review, and an
// agent's manual refine. Only a person's refine may edit them.
func (a Args) protectedImmutable() bool { return a.automatic() || a.Source == harnesses.ByAgent }

// source is the refinement's recorded source: the job's own for a review,
// the requester for a manual refine.
func (a Args) source() harnesses.Source {
	switch {
	case a.automatic():
		return harnesses.ByJob
	case a.Source == harnesses.ByAgent:
		return harnesses.ByAgent
	}
	return harnesses.ByAdmin
}

// InsertOpts make the job unique per scope while it waits or runs (at most
// one review in flight per scope): a trigger while one is queued joins it.
// Finished, cancelled and discarded jobs hold no key, so a dead letter
// never blocks the next review, and its retry is blocked only by a newer
// live job of its scope (dlq names that one).
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// Spec: the llm queue; 3 attempts 10 minutes apart (a review is worth
// less than a retro, and the next one comes within turn_interval turns),
// then the dead letters; two calls of at most llm.call_timeout each fit
// in the 10-minute timeout. Config [jobs.refine_review] overrides.
var Spec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 3, Backoff: 10 * time.Minute, Timeout: 10 * time.Minute}

// RefinementID is the id of the refinement job id applies: a retry of
// the job after its commit cannot apply it twice (the primary key).
func RefinementID(jobID int64) string { return fmt.Sprintf("refine_%d", jobID) }
