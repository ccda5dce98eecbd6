package harness

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/trust"
)

// The seed's messages, verbatim (rules 1-6 and the lifecycle edits);
// MsgMissingReason is a format with the edit's id.
const (
	MsgMissingReason = `edit "%s" rejected: missing reason, please re-add it`
	MsgBaseImmutable = "the base system prompt is immutable"
	MsgIDRequired    = "edit id is required"
	// MsgIDChars (mull's): the id grammar of every kind but skills (which
	// keep the seed's kebab-case), so no id holds the ':' or whitespace
	// that would make a "scope:kind:id" key or a merged "local:<id>" key
	// ambiguous; MsgIDLong caps it at MaxIDRunes.
	MsgIDChars          = "edit ids may hold only letters, digits, '.', '_' and '-'"
	MsgIDLong           = "edit ids are at most 128 characters"
	MsgSkillKebab       = "skill ids must be kebab-case"
	MsgArchivePinUpdate = "archive/pin only valid on update edits"
	MsgContentRequired  = "non-delete edits require content"
	MsgGlobalReadOnly   = "global entries are read-only during a local refinement; create a local shadow first"
	MsgExists           = "entry already exists"
	MsgNotFound         = "entry not found"
	MsgProtected        = "protected entries are mutable only in explicit user sessions"
	MsgGrowth           = "entry growth exceeds the maxEntryGrowth cap"
	MsgChanged          = "entry changed during refinement planning"
	MsgAlreadyArchived  = "already archived"
	MsgNotArchived      = "not archived"
	// mull's own (not in the seed): harness.protected_kinds, the shrink
	// guard, and the trust gate.
	MsgProtectedKind = "%s entries are a protected kind (harness.protected_kinds), mutable only in explicit user sessions"
	MsgShrink        = "entry shrink exceeds the maxEntryShrink cap"
	MsgQuarantined   = "quarantined by the trust gate: %s"
)

// kebabCase is the seed's KEBAB_CASE_PATTERN: the form DSH requires of a
// skill's name, which is also a safe directory name.
var kebabCase = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// IsKebab reports whether id is kebab-case (a valid skill id).
func IsKebab(id string) bool { return kebabCase.MatchString(id) }

// MaxIDRunes caps an edit's id (the store indexes ids).
const MaxIDRunes = 128

// idChars is the id grammar of every kind: ASCII letters and digits, then
// also '.', '_' and '-'.
var idChars = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Validate is rule 1 (the seed's validateEdit): "" when e is valid, else
// the seed's message. Checks, in order: kind ("unknown kind: X"), action
// ("unknown action: X"), base_system_prompt, id required, kebab-case skill
// ids, the id grammar of every kind (MsgIDLong, MsgIDChars: mull's),
// reason on update/delete, blast radius ("invalid blastRadius: X"),
// archive/pin on update only, content required.
//
// A pointer field is "given" when non-nil, as a JSON key that is present:
// an update with Archive or Pin and no Content is a lifecycle edit.
func Validate(e Edit) string {
	switch {
	case !slices.Contains(Kinds, e.Kind):
		return "unknown kind: " + echo(string(e.Kind))
	case !slices.Contains(Actions, e.Action):
		return "unknown action: " + echo(string(e.Action))
	case e.ID == BaseSystemPromptID:
		return MsgBaseImmutable
	case e.ID == "":
		return MsgIDRequired
	case e.Kind == KindSkill && !kebabCase.MatchString(e.ID):
		return MsgSkillKebab
	case utf8.RuneCountInString(e.ID) > MaxIDRunes:
		return MsgIDLong
	case !idChars.MatchString(e.ID):
		return MsgIDChars
	case (e.Action == Update || e.Action == Delete) && strings.TrimSpace(e.Reason) == "":
		return fmt.Sprintf(MsgMissingReason, e.ID)
	case e.BlastRadius != "" && !slices.Contains(BlastRadii, e.BlastRadius):
		return "invalid blastRadius: " + echo(string(e.BlastRadius))
	case e.Action != Update && (e.Archive != nil || e.Pin != nil):
		return MsgArchivePinUpdate
	case e.Action != Delete && e.Content == nil && e.Archive == nil && e.Pin == nil:
		return MsgContentRequired
	}
	return ""
}

// echo is a bad enum value as a message repeats it: one line, at most 40
// runes (the value is the model's or a caller's, and the message is
// stored with the refinement).
func echo(s string) string { return truncate(trust.OneLine(s), 40) }

// fingerprint is what Fingerprint serializes, in the seed's key order.
type fingerprint struct {
	Version     int                 `json:"version"`
	Content     string              `json:"content"`
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Metadata    fingerprintMetadata `json:"metadata"`
	Protection  Protection          `json:"protection,omitempty"`
}

type fingerprintMetadata struct {
	SourceSession string    `json:"source_session,omitempty"`
	Lifecycle     Lifecycle `json:"lifecycle"`
	Pinned        bool      `json:"pinned,omitempty"`
}

// Fingerprint is the canonical serialization the baseline check compares
// (the seed's entryFingerprint: version, content, title, description,
// metadata without LastInjectedAt, protection).
//
// Unlike the seed, LastInjectedAt is left out: it is telemetry written on
// every injection, and an injection must not fail a refinement planned
// before it. The description counts for skills only (the seed's
// SkillEntry field), and lifecycle "" reads as active, so an entry read
// back from the store fingerprints as it was written.
func Fingerprint(e Entry) string {
	f := fingerprint{
		Version:    e.Version,
		Content:    e.Content,
		Title:      e.Title,
		Protection: e.Protection,
		Metadata: fingerprintMetadata{
			SourceSession: e.Metadata.SourceSession,
			Lifecycle:     lifecycleOf(e),
			Pinned:        e.Metadata.Pinned,
		},
	}
	if e.Kind == KindSkill {
		f.Description = e.Description
	}
	b, err := json.Marshal(f)
	if err != nil {
		panic("harness: fingerprint: " + err.Error()) // strings, ints and bools always marshal
	}
	return string(b)
}

// lifecycleOf is e's lifecycle with "" read as active (the seed's
// `lifecycleState ?? 'active'`).
func lifecycleOf(e Entry) Lifecycle {
	if e.Metadata.Lifecycle == "" {
		return Active
	}
	return e.Metadata.Lifecycle
}

// mull's own checks of the fields only a rollback or an admin sets.
const (
	MsgInvalidProtection = "invalid protection: %s"
	MsgInvalidLifecycle  = "invalid lifecycle: %s"
)

// validRestore checks the fields the seed's edits do not have: a
// protection and a metadata lifecycle must be one of theirs.
func validRestore(e Edit) string {
	if e.Protection != nil && !slices.Contains([]Protection{"", Bundled, Pinned, UserOwned}, *e.Protection) {
		return fmt.Sprintf(MsgInvalidProtection, *e.Protection)
	}
	if e.Metadata != nil && !slices.Contains([]Lifecycle{"", Active, Archived}, e.Metadata.Lifecycle) {
		return fmt.Sprintf(MsgInvalidLifecycle, e.Metadata.Lifecycle)
	}
	return ""
}
