package retro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
)

// Limits on one answer. The seed capped the whole answer (8000 chars)
// rather than each section; mull caps each section so one runaway section
// cannot crowd out the others.
const (
	MaxEntries       = 12 // per memory section, and supersede
	MaxPlaybooks     = 3
	MaxSteps         = 15
	MaxStepRunes     = 300
	MaxSlugLen       = 60
	MinHandoffLines  = 3 // the seed's HANDOFF: 3–5 lines
	MaxHandoffLines  = 5
	MaxHandoffRunes  = 200 // per line
	MaxSummaryRunes  = 200
	MaxDetailRunes   = 2000
	MaxSupersedes    = 3 // ids one entry replaces
	MaxWhyRunes      = 200
	MaxEvidence      = 8 // evidence task ids per supersede
	minSupersedeRune = 4 // memory.Matches matches nothing shorter
)

// Output is the model's answer, the seed's retro sections as one JSON
// object. It implements llm.Validator, for llm.CompleteJSON.
type Output struct {
	Lessons   []Entry     `json:"lessons"`
	Facts     []Entry     `json:"facts"`
	Resources []Entry     `json:"resources"`
	Methods   []Entry     `json:"methods"`
	Handoff   []string    `json:"handoff"`
	Playbooks []Playbook  `json:"playbooks"`
	Supersede []Supersede `json:"supersede"`
	Proposal  Proposals   `json:"proposal"`
}

// Entry is one new memory the model proposes: the seed's section line with
// its optional {imp:N} or {src:web|tool} meta.
type Entry struct {
	Text string `json:"text"`
	// Importance is the claimed 1–10; 0 takes the kind's default. The
	// memory's origin is retro, so scoring caps it at memory.UntrustedCap.
	Importance int `json:"importance,omitempty"`
	// Src is web or tool, as in the seed; a retro may not claim user (that
	// would lift the untrusted cap) or agent.
	Src memory.Src `json:"src,omitempty"`
	// Repeats is the id of a memory of the library the prompt showed that
	// this entry says again: that memory is bumped instead of a copy
	// stored. Zero: the model named none, and mull's text check
	// (memory.Duplicate) decides.
	Repeats Ref `json:"repeats,omitzero"`
	// Supersedes are ids of the library shown that this entry replaces:
	// each is invalidated and linked to it. At most MaxSupersedes.
	Supersedes []Ref `json:"supersedes,omitempty"`
	// Evidence are the task ids that challenge the structured lessons
	// Supersedes names: the precedent gate (GatePrecedent) refuses a
	// supersede of a structured lesson without them. At most
	// MaxEvidence.
	Evidence []string `json:"evidence_task_ids,omitempty"`
}

// Ref is a memory id as the model wrote it, an untrusted value: a JSON
// integer, or a string holding one ("12", "id 12", "[id 12]"). Anything
// else decodes without error as a malformed Ref (Raw set, ID 0), so that
// Plan drops that one reference, and counts why, instead of the whole
// answer failing and the call being paid for again.
type Ref struct {
	ID int64
	// Raw is the JSON the model wrote when it is not an id.
	Raw string
}

// IsZero reports a Ref the model did not write (json omitzero).
func (r Ref) IsZero() bool { return r.ID == 0 && r.Raw == "" }

// Malformed reports a Ref that names no id.
func (r Ref) Malformed() bool { return r.ID <= 0 && !r.IsZero() }

// refDigits reads the id in "12", "id 12", "[id 12]" or "#12".
var refDigits = regexp.MustCompile(`^\[?\s*(?:id\s*)?#?\s*([0-9]{1,18})\s*\]?$`)

// UnmarshalJSON accepts an integer or a string holding one; null is no
// Ref; any other value is kept as a malformed Ref.
func (r *Ref) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*r = Ref{}
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if id, err := n.Int64(); err == nil && id > 0 {
			r.ID = id
			return nil
		}
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if m := refDigits.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s))); m != nil {
			if id, err := strconv.ParseInt(m[1], 10, 64); err == nil && id > 0 {
				r.ID = id
				return nil
			}
		}
	}
	r.Raw = string(b)
	if len(r.Raw) > 40 {
		r.Raw = r.Raw[:40]
	}
	return nil
}

// MarshalJSON writes the id, or what the model wrote.
func (r Ref) MarshalJSON() ([]byte, error) {
	if r.ID > 0 {
		return []byte(strconv.FormatInt(r.ID, 10)), nil
	}
	if r.Raw != "" && json.Valid([]byte(r.Raw)) {
		return []byte(r.Raw), nil
	}
	return json.Marshal(r.Raw)
}

// Playbook is a reusable procedure (the seed's PLAYBOOK:<slug>), upserted by
// slug.
type Playbook struct {
	Slug  string   `json:"slug"`
	Steps []string `json:"steps"`
}

// Supersede names an existing memory the evidence proved wrong, with no
// entry of the answer replacing it: by its id in the library shown, or as
// the seed did ("- [kind] old text") by its kind and text, matched by mull.
type Supersede struct {
	// ID is a memory of the library shown; when set, Kind and Text are not
	// needed.
	ID Ref `json:"id,omitzero"`
	// Why is the reason, kept (through the trust gate, cut to
	// memory.MaxReasonRunes with the job's id) on the invalidated memory.
	Why string `json:"why,omitempty"`
	// Kind is the section: facts, lessons, resources or methods.
	Kind string `json:"kind,omitempty"`
	Text string `json:"text,omitempty"`
	// Evidence are the task ids that challenge a structured lesson it
	// names (see Entry.Evidence).
	Evidence []string `json:"evidence_task_ids,omitempty"`
}

// Proposal is an improvement to the agent's setup, for the user to decide.
type Proposal struct {
	Summary string `json:"summary"`
	Detail  string `json:"detail,omitempty"`
}

// Proposals holds the proposal field. The schema asks for null or one
// object; an array is decoded too, so that Validate can name the field when
// the model sends more than one instead of failing as a type error.
type Proposals []Proposal

// UnmarshalJSON accepts null, an object or an array of objects, refusing
// unknown fields as llm.CompleteJSON does for the rest of the answer.
func (p *Proposals) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*p = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if len(b) > 0 && b[0] == '[' {
		var s []Proposal
		err := dec.Decode(&s)
		*p = s
		return err
	}
	var one Proposal
	if err := dec.Decode(&one); err != nil {
		return err
	}
	*p = Proposals{one}
	return nil
}

// MarshalJSON writes null or the one proposal, as the schema has it.
func (p Proposals) MarshalJSON() ([]byte, error) {
	switch len(p) {
	case 0:
		return []byte("null"), nil
	case 1:
		return json.Marshal(p[0])
	}
	return json.Marshal([]Proposal(p))
}

// supersedeKinds maps a SUPERSEDE section name to the memory kind.
var supersedeKinds = map[string]memory.Kind{
	"facts": memory.Fact, "lessons": memory.Lesson, "resources": memory.Resource, "methods": memory.Method,
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// Validate checks the answer's structure, the part a retry of the call
// can fix and no single entry owns: how many entries each section has,
// the handoff's 3–5 lines, at most one proposal. It reports the first bad
// field by its JSON path, as a *memory.FieldError. Each entry's own
// content (its text, importance, src, a playbook's slug and steps, a
// supersede's kind) is checked by Plan, entry by entry (CheckEntries): one
// bad entry is rejected alone and the rest of the answer applies, instead
// of the whole answer failing and the call being paid for again.
func (o Output) Validate() error { return o.validate(true) }

func (o Output) validate(needHandoff bool) error {
	for _, s := range []struct {
		name string
		n    int
	}{{"lessons", len(o.Lessons)}, {"facts", len(o.Facts)}, {"resources", len(o.Resources)},
		{"methods", len(o.Methods)}, {"supersede", len(o.Supersede)}} {
		if s.n > MaxEntries {
			return bad(s.name, "%d entries, at most %d", s.n, MaxEntries)
		}
	}
	if n := len(o.Handoff); (needHandoff || o.Handoff != nil) && (n < MinHandoffLines || n > MaxHandoffLines) {
		return bad("handoff", "%d lines, want %d to %d", n, MinHandoffLines, MaxHandoffLines)
	}
	if len(o.Playbooks) > MaxPlaybooks {
		return bad("playbooks", "%d playbooks, at most %d", len(o.Playbooks), MaxPlaybooks)
	}
	if len(o.Proposal) > 1 {
		return bad("proposal", "%d proposals, at most one", len(o.Proposal))
	}
	return nil
}

func bad(field, format string, args ...any) error {
	return &memory.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// checkText is every entry text's first check: storable by both databases
// (no NUL, valid UTF-8), then one line of lo to hi runes.
func checkText(field, s string, lo, hi int) error {
	if err := memory.CheckStorable(field, s); err != nil {
		return err
	}
	return memory.CheckLine(field, s, lo, hi)
}

// checkEntry checks one memory entry of a section; check, when given, is
// the section's format.
func checkEntry(f string, e Entry, check func(string) string) error {
	if err := checkText(f+".text", e.Text, memory.MinTextRunes, memory.MaxTextRunes); err != nil {
		return err
	}
	if check != nil {
		if p := check(e.Text); p != "" {
			return bad(f+".text", "%s", p)
		}
	}
	if e.Importance != 0 && (e.Importance < 1 || e.Importance > 10) {
		return bad(f+".importance", "must be between 1 and 10, got %d", e.Importance)
	}
	if e.Src != "" && e.Src != memory.SrcWeb && e.Src != memory.SrcTool {
		return bad(f+".src", "%q is not web or tool", e.Src)
	}
	if len(e.Supersedes) > MaxSupersedes {
		return bad(f+".supersedes", "%d ids, at most %d", len(e.Supersedes), MaxSupersedes)
	}
	return checkEvidence(f, e.Evidence)
}

// checkEvidence checks a supersede's evidence task ids: how many, and
// each storable and one short line. Whether they pass the precedent gate
// is GatePrecedent's.
func checkEvidence(f string, ids []string) error {
	if len(ids) > MaxEvidence {
		return bad(f+".evidence_task_ids", "%d ids, at most %d", len(ids), MaxEvidence)
	}
	for i, id := range ids {
		if err := checkText(fmt.Sprintf("%s.evidence_task_ids[%d]", f, i), id, 1, maxTaskIDRunes); err != nil {
			return err
		}
	}
	return nil
}

// maxTaskIDRunes bounds an evidence task id ("task-<uuid>" is 41,
// "turn-<session>-<n>" longer).
const maxTaskIDRunes = 300

// arrows checks "a -> b -> c" (or with →): three non-empty parts.
func arrows(s string) string {
	parts := strings.Split(strings.ReplaceAll(s, "→", "->"), "->")
	if len(parts) != 3 || blank(parts) {
		return "must read “a -> b -> c”: three non-empty parts joined by ->"
	}
	return ""
}

// pipes checks "name | link | use": three parts, the link may be empty.
func pipes(s string) string {
	parts := strings.Split(s, "|")
	if len(parts) != 3 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[2]) == "" {
		return "must read “name | link | use”"
	}
	return ""
}

func blank(parts []string) bool {
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			return true
		}
	}
	return false
}

// checkHandoff checks each handoff line; one bad line refuses the handoff
// (the previous one stays).
func checkHandoff(lines []string) error {
	for i, l := range lines {
		if err := checkText(fmt.Sprintf("handoff[%d]", i), l, 1, MaxHandoffRunes); err != nil {
			return err
		}
	}
	return nil
}

// checkPlaybook checks one playbook; seen holds the slugs of the ones
// before it, by index.
func checkPlaybook(f string, p Playbook, seen map[string]int) error {
	if err := memory.CheckStorable(f+".slug", p.Slug); err != nil {
		return err
	}
	switch j, dup := seen[p.Slug]; {
	case p.Slug == "":
		return bad(f+".slug", "required")
	case len(p.Slug) > MaxSlugLen:
		return bad(f+".slug", "longer than %d characters", MaxSlugLen)
	case !kebab.MatchString(p.Slug):
		return bad(f+".slug", "%q is not kebab-case (a-z, 0-9, single dashes)", p.Slug)
	case dup:
		return bad(f+".slug", "%q repeats playbooks[%d]", p.Slug, j)
	case len(p.Steps) == 0 || len(p.Steps) > MaxSteps:
		return bad(f+".steps", "%d steps, want 1 to %d", len(p.Steps), MaxSteps)
	}
	for k, s := range p.Steps {
		if err := checkText(fmt.Sprintf("%s.steps[%d]", f, k), s, memory.MinTextRunes, MaxStepRunes); err != nil {
			return err
		}
	}
	return nil
}

func checkSupersede(f string, s Supersede) error {
	if err := memory.CheckStorable(f+".why", s.Why); err != nil {
		return err
	}
	if err := checkEvidence(f, s.Evidence); err != nil {
		return err
	}
	if utf8.RuneCountInString(s.Why) > MaxWhyRunes {
		return bad(f+".why", "longer than %d characters", MaxWhyRunes)
	}
	if !s.ID.IsZero() {
		if s.Kind != "" || s.Text != "" {
			return bad(f, "names an id and a kind or text: give one or the other")
		}
		return nil // the id itself is checked against the library shown, by Plan
	}
	if _, ok := supersedeKinds[s.Kind]; !ok {
		return bad(f+".kind", "%q is not one of facts, lessons, resources, methods", s.Kind)
	}
	if err := checkText(f+".text", s.Text, 1, memory.MaxTextRunes); err != nil {
		return err
	}
	if utf8.RuneCountInString(memory.Normalize(s.Text)) < minSupersedeRune {
		return bad(f+".text", "fewer than %d characters once normalized; it would match nothing", minSupersedeRune)
	}
	return nil
}

func checkProposal(p Proposal) error {
	if err := checkText("proposal.summary", p.Summary, memory.MinTextRunes, MaxSummaryRunes); err != nil {
		return err
	}
	if err := memory.CheckStorable("proposal.detail", p.Detail); err != nil {
		return err
	}
	if utf8.RuneCountInString(p.Detail) > MaxDetailRunes {
		return bad("proposal.detail", "longer than %d characters", MaxDetailRunes)
	}
	return nil
}

// CheckEntries checks every entry of an answer on its own, as Plan does,
// and returns each problem found, in answer order: what Plan rejects.
func CheckEntries(o Output) []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range memorySections(o) {
		for i, e := range s.entries {
			add(checkEntry(fmt.Sprintf("%s[%d]", s.name, i), e, s.check))
		}
	}
	add(checkHandoff(o.Handoff))
	seen := map[string]int{}
	for i, p := range o.Playbooks {
		err := checkPlaybook(fmt.Sprintf("playbooks[%d]", i), p, seen)
		if err == nil {
			seen[p.Slug] = i
		}
		add(err)
	}
	for i, s := range o.Supersede {
		add(checkSupersede(fmt.Sprintf("supersede[%d]", i), s))
	}
	for _, p := range o.Proposal {
		add(checkProposal(p))
	}
	return errs
}

// memSection is one memory section of an answer.
type memSection struct {
	name    string
	kind    memory.Kind
	entries []Entry
	check   func(string) string
}

func memorySections(o Output) []memSection {
	return []memSection{
		{"lessons", memory.Lesson, o.Lessons, arrows}, {"facts", memory.Fact, o.Facts, nil},
		{"resources", memory.Resource, o.Resources, pipes}, {"methods", memory.Method, o.Methods, arrows},
	}
}

// Additive returns the part of a truncated answer that is safe to apply:
// LESSONS, FACTS, RESOURCES, METHODS and HANDOFF, as the seed does when the
// model stopped at max-tokens. Playbooks, supersede and the proposal are
// dropped: a cut procedure or a cut invalidation does harm. So are the ids
// the entries supersede (their repeats stay: a bump does no harm).
func Additive(o Output) Output {
	add := func(es []Entry) []Entry {
		out := make([]Entry, len(es))
		for i, e := range es {
			e.Supersedes = nil
			out[i] = e
		}
		if es == nil {
			return nil
		}
		return out
	}
	return Output{Lessons: add(o.Lessons), Facts: add(o.Facts), Resources: add(o.Resources), Methods: add(o.Methods), Handoff: o.Handoff}
}
