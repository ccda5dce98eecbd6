// Package harness holds the pure rules of harness refinement (seed 004,
// jasen215/dsh-continual-harness): the agent's harness is a set of
// versioned entries (prompt notes, memories, skills, subagent specs) that a
// refinement edits under the seed's governance, every edit validated,
// recorded and reversible by id.
//
// Here are the apply rules in the seed's order with its exact messages,
// rollback, the fingerprint the baseline check compares, the review and
// planner prompts and the strict parsing of their answers, the trajectory
// the model reads, the projection (ranking, rendering) the agent is shown,
// the SKILL.md bundles DSH reads, the wrap-up suggestions and the review
// gate's trigger rules. The package is pure: no SQL, River or HTTP.
package harness

import "time"

// Kind is what an entry holds.
type Kind string

// The kinds, in the seed's order (the projection renders them so).
const (
	KindPrompt   Kind = "prompt"
	KindMemory   Kind = "memory"
	KindSkill    Kind = "skill"
	KindSubagent Kind = "subagent"
)

// Kinds lists the kinds in the seed's order.
var Kinds = []Kind{KindPrompt, KindMemory, KindSkill, KindSubagent}

// Action is what an edit does to its entry.
type Action string

// The actions.
const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
)

// Actions lists the actions.
var Actions = []Action{Create, Update, Delete}

// BlastRadius is how far an edit's effects may reach beyond the entry.
type BlastRadius string

// The blast radii; an edit without one is RadiusGeneral.
const (
	RadiusGeneral BlastRadius = "general"
	RadiusProject BlastRadius = "project"
	RadiusSession BlastRadius = "session"
)

// BlastRadii lists the blast radii.
var BlastRadii = []BlastRadius{RadiusGeneral, RadiusProject, RadiusSession}

// Protection is an entry's governance protection; "" is unprotected.
type Protection string

// The protections. A protected entry is immutable on the automatic path.
const (
	Bundled   Protection = "bundled"
	Pinned    Protection = "pinned"
	UserOwned Protection = "user-owned"
)

// Lifecycle is an entry's lifecycle state. Archived entries are hidden
// from the projection and from skill materialization; a deleted entry is
// a tombstone (its versions are kept, it is in no state).
type Lifecycle string

// The lifecycle states.
const (
	Active   Lifecycle = "active"
	Archived Lifecycle = "archived"
)

// BaseSystemPromptID is the id of the immutable base system prompt: never
// an editable id.
const BaseSystemPromptID = "base_system_prompt"

// LocalPrefix: in a merged state (Merge), a global entry that a
// session-local entry of the same id shadows stays visible keyed
// LocalPrefix+id, as in the seed.
const LocalPrefix = "local:"

// Scope names a store: the global one (every session) or one session's
// local store, which shadows same-id global entries.
type Scope struct {
	// Session is "" for the global store, else the session id.
	Session string `json:"session,omitempty"`
}

// Global is the global scope.
var Global = Scope{}

// Local is a session's local scope.
func Local(session string) Scope { return Scope{Session: session} }

// IsGlobal reports whether s is the global scope.
func (s Scope) IsGlobal() bool { return s.Session == "" }

// String is "global" or "local" (the seed's scope field).
func (s Scope) String() string {
	if s.IsGlobal() {
		return "global"
	}
	return "local"
}

// Key is the scope as one string: "global", or "session:<id>" (the unique
// key of the review job, the store's scope column).
func (s Scope) Key() string {
	if s.IsGlobal() {
		return "global"
	}
	return "session:" + s.Session
}

// Metadata is an entry's provenance and lifecycle.
type Metadata struct {
	// SourceSession is the session whose trajectory made the entry.
	SourceSession string `json:"source_session,omitempty"`
	// Lifecycle is active or archived ("" reads as active).
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// Pinned is the user's lock (the field only, as in the seed).
	Pinned bool `json:"pinned,omitempty"`
	// LastInjectedAt is when the entry last reached the agent's context.
	// It is telemetry: not part of the fingerprint, not versioned.
	LastInjectedAt *time.Time `json:"last_injected_at,omitempty"`
}

// Entry is one versioned harness entry.
type Entry struct {
	ID      string `json:"id"`
	Kind    Kind   `json:"kind"`
	Version int    `json:"version"`
	Content string `json:"content"`
	Title   string `json:"title,omitempty"`
	// Description is a skill's one-line summary (SKILL.md frontmatter).
	Description string     `json:"description,omitempty"`
	Protection  Protection `json:"protection,omitempty"`
	Metadata    Metadata   `json:"metadata"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Archived reports whether the entry is archived.
func (e Entry) Archived() bool { return e.Metadata.Lifecycle == Archived }

// Edit is one planned edit of a refinement (the planner's JSON, or one a
// person or a rollback made).
type Edit struct {
	Action      Action      `json:"action"`
	Kind        Kind        `json:"kind"`
	ID          string      `json:"id"`
	Content     *string     `json:"content,omitempty"`
	Description *string     `json:"description,omitempty"`
	Title       *string     `json:"title,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	BlastRadius BlastRadius `json:"blast_radius,omitempty"`
	// Archive and Pin are the lifecycle edits (update only): archive true
	// archives, false restores; pin sets Metadata.Pinned.
	Archive *bool `json:"archive,omitempty"`
	Pin     *bool `json:"pin,omitempty"`
	// Metadata, on a rollback's edits, restores the entry's metadata.
	Metadata *Metadata `json:"metadata,omitempty"`
	// Protection, on a rollback's create, restores the protection.
	Protection *Protection `json:"protection,omitempty"`
}

// Proposal is a refinement plan: the planner's answer
// {id, summary, edits[]}. The id the model gives is advisory; mull names
// the refinement itself.
type Proposal struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
	Edits   []Edit `json:"edits"`
}

// AppliedEdit records one edit of a refinement: applied or, with Error,
// rejected by a rule.
type AppliedEdit struct {
	Action      Action      `json:"action"`
	Kind        Kind        `json:"kind"`
	ID          string      `json:"id"`
	Before      *string     `json:"before,omitempty"`
	After       *string     `json:"after,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	BlastRadius BlastRadius `json:"blast_radius"`
	Error       string      `json:"error,omitempty"`
	// BeforeEntry and AfterEntry are the whole entries, so a rollback
	// restores title, description, metadata and protection too.
	BeforeEntry *Entry `json:"before_entry,omitempty"`
	AfterEntry  *Entry `json:"after_entry,omitempty"`
	Applied     bool   `json:"applied"`
}

// Refinement is the record of one committed refinement.
type Refinement struct {
	ID          string        `json:"id"`
	Summary     string        `json:"summary"`
	RollbackOf  string        `json:"rollback_of,omitempty"`
	Edits       []AppliedEdit `json:"applied_edits"`
	CommittedAt time.Time     `json:"committed_at"`
	Scope       Scope         `json:"scope"`
}

// Counts are how many edits applied and how many a rule rejected.
func (r Refinement) Counts() (applied, rejected int) {
	for _, e := range r.Edits {
		if e.Applied {
			applied++
		} else {
			rejected++
		}
	}
	return applied, rejected
}

// State is one store's entries: kind → id → entry (tombstones excluded).
type State map[Kind]map[string]Entry

// Get returns the entry of kind and id.
func (s State) Get(k Kind, id string) (Entry, bool) {
	e, ok := s[k][id]
	return e, ok
}

// ApplyOptions are what an apply needs besides the proposal.
type ApplyOptions struct {
	// ID is the refinement's id (mull's: "refine_<job id>",
	// "rollback_<id>", ...).
	ID         string
	RollbackOf string
	Scope      Scope
	// Baseline is the target store as the planner saw it; an entry whose
	// fingerprint changed since fails rule 6.
	Baseline State
	// Global is the global store, for rule 2 during a local refinement.
	Global State
	// Automatic is true on the review job's path: protected entries and
	// ProtectedKinds are immutable there.
	Automatic bool
	// ProtectedKinds is harness.protected_kinds (default [skill]):
	// entries of these kinds are immutable on the automatic path.
	ProtectedKinds []Kind
	// MaxGrowth is harness.max_entry_growth (0.5; 0 disables); MaxShrink
	// harness.max_entry_shrink (0.5; 0 disables).
	MaxGrowth float64
	MaxShrink float64
	// SourceSession is stamped on created and content-updated entries.
	SourceSession string
	// Tombstones are the last versions of the deleted entries of the
	// target store, keyed TombstoneKey(kind, id): a create of a deleted id
	// starts at that version + 1, so an entry's history stays monotonic.
	Tombstones map[string]int
	// Now is the commit time.
	Now time.Time
}

// Trigger is why a review ran.
type Trigger string

// The triggers (the seed's AutoRefineReason).
const (
	TurnInterval Trigger = "turn-interval"
	Compact      Trigger = "compact"
	Manual       Trigger = "manual"
	// SessionEnd is a pending review drained at the session's end.
	SessionEnd Trigger = "session-end"
)

// Outcome is a review's verdict, as recorded.
type Outcome string

// The outcomes (the seed's reviews.jsonl).
const (
	// Declined: the review call said no.
	Declined Outcome = "declined"
	// Assessed: approved, but the planner proposed no edit.
	Assessed Outcome = "assessed"
	// Approved: approved and planned; edits applied (some may be rejected).
	Approved Outcome = "approved"
	// Failed: the attempt failed (the model, the schema, the store).
	Failed Outcome = "failed"
)

// Review is the review call's answer {approved, rationale}.
type Review struct {
	Approved  bool   `json:"approved"`
	Rationale string `json:"rationale"`
}

// Rejected is one rejected edit as a review row records it.
type Rejected struct {
	Kind   Kind   `json:"kind"`
	ID     string `json:"id"`
	Action Action `json:"action"`
	Error  string `json:"error"`
}
