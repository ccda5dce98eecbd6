package harness

// Slice A replaces this file (rules.go, apply.go, rollback.go, gate.go):
// the signatures below are the contract.

// The seed's messages, verbatim (rules 1-6 and the lifecycle edits);
// MsgMissingReason is a format with the edit's id.
const (
	MsgMissingReason    = `edit "%s" rejected: missing reason, please re-add it`
	MsgBaseImmutable    = "the base system prompt is immutable"
	MsgIDRequired       = "edit id is required"
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

// Validate is rule 1 (the seed's validateEdit): "" when e is valid, else
// the seed's message. Checks, in order: kind ("unknown kind: X"), action
// ("unknown action: X"), base_system_prompt, id required, kebab-case skill
// ids, reason on update/delete, blast radius ("invalid blastRadius: X"),
// archive/pin on update only, content required.
func Validate(e Edit) string { return "" }

// Apply applies p to cur (the target store now) under the six rules in
// the seed's order, plus protected kinds and the shrink guard (after rule
// 4 and rule 5) and the trust gate (GateEdit, first). It returns the
// refinement record and the next state; cur is not modified. Versions
// start at 1 and go up by 1 on each update, archive or pin.
func Apply(cur State, p Proposal, o ApplyOptions) (Refinement, State) { return Refinement{}, cur }

// RollbackOf is the proposal that reverses r: its applied edits in
// reverse order, id "rollback_<r.ID>", every reason "rollback:<r.ID>",
// restoring whole entries from BeforeEntry.
func RollbackOf(r Refinement) Proposal { return Proposal{} }

// Fingerprint is the canonical serialization the baseline check compares
// (the seed's entryFingerprint: version, content, title, description,
// metadata without LastInjectedAt, protection).
func Fingerprint(e Entry) string { return "" }

// Merge is the view a session sees: local entries shadow global ones of
// the same kind and id; a shadowed global stays visible keyed
// LocalPrefix+id.
func Merge(global, local State) State { return global }

// GateEdit passes an edit's texts (content, title, description, reason)
// through the trust gate: redacted text replaces the original (redacted
// counts how many credentials), a quarantined text rejects the edit with
// MsgQuarantined and the gate's reason.
func GateEdit(e Edit) (out Edit, redacted int, rejected string) { return e, 0, "" }
