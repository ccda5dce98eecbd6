package retro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
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
}

// Playbook is a reusable procedure (the seed's PLAYBOOK:<slug>), upserted by
// slug.
type Playbook struct {
	Slug  string   `json:"slug"`
	Steps []string `json:"steps"`
}

// Supersede names an existing memory the evidence proved wrong: the seed's
// "- [kind] old text".
type Supersede struct {
	// Kind is the section: facts, lessons, resources or methods.
	Kind string `json:"kind"`
	Text string `json:"text"`
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

// Validate checks the answer's shapes and reports the first bad field by
// its JSON path, as a *memory.FieldError.
func (o Output) Validate() error { return o.validate(true) }

func (o Output) validate(needHandoff bool) error {
	sections := []struct {
		name    string
		entries []Entry
		check   func(string) string
	}{
		{"lessons", o.Lessons, arrows}, {"facts", o.Facts, nil},
		{"resources", o.Resources, pipes}, {"methods", o.Methods, arrows},
	}
	for _, s := range sections {
		if err := validateEntries(s.name, s.entries, s.check); err != nil {
			return err
		}
	}
	if err := validateHandoff(o.Handoff); err != nil && (needHandoff || o.Handoff != nil) {
		return err
	}
	if err := validatePlaybooks(o.Playbooks); err != nil {
		return err
	}
	if err := validateSupersede(o.Supersede); err != nil {
		return err
	}
	return validateProposal(o.Proposal)
}

func bad(field, format string, args ...any) error {
	return &memory.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

func validateEntries(name string, es []Entry, check func(string) string) error {
	if len(es) > MaxEntries {
		return bad(name, "%d entries, at most %d", len(es), MaxEntries)
	}
	for i, e := range es {
		f := fmt.Sprintf("%s[%d]", name, i)
		if err := memory.CheckLine(f+".text", e.Text, memory.MinTextRunes, memory.MaxTextRunes); err != nil {
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
	}
	return nil
}

// arrows checks "a -> b -> c" (or with →): three non-empty parts.
func arrows(s string) string {
	parts := strings.Split(strings.ReplaceAll(s, "→", "->"), "->")
	if len(parts) != 3 || blank(parts) {
		return `must read "a -> b -> c": three non-empty parts joined by ->`
	}
	return ""
}

// pipes checks "name | link | use": three parts, the link may be empty.
func pipes(s string) string {
	parts := strings.Split(s, "|")
	if len(parts) != 3 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[2]) == "" {
		return `must read "name | link | use"`
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

func validateHandoff(lines []string) error {
	if len(lines) < MinHandoffLines || len(lines) > MaxHandoffLines {
		return bad("handoff", "%d lines, want %d to %d", len(lines), MinHandoffLines, MaxHandoffLines)
	}
	for i, l := range lines {
		if err := memory.CheckLine(fmt.Sprintf("handoff[%d]", i), l, 1, MaxHandoffRunes); err != nil {
			return err
		}
	}
	return nil
}

func validatePlaybooks(ps []Playbook) error {
	if len(ps) > MaxPlaybooks {
		return bad("playbooks", "%d playbooks, at most %d", len(ps), MaxPlaybooks)
	}
	seen := map[string]int{}
	for i, p := range ps {
		f := fmt.Sprintf("playbooks[%d]", i)
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
		seen[p.Slug] = i
		for k, s := range p.Steps {
			if err := memory.CheckLine(fmt.Sprintf("%s.steps[%d]", f, k), s, memory.MinTextRunes, MaxStepRunes); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateSupersede(ss []Supersede) error {
	if len(ss) > MaxEntries {
		return bad("supersede", "%d entries, at most %d", len(ss), MaxEntries)
	}
	for i, s := range ss {
		f := fmt.Sprintf("supersede[%d]", i)
		if _, ok := supersedeKinds[s.Kind]; !ok {
			return bad(f+".kind", "%q is not one of facts, lessons, resources, methods", s.Kind)
		}
		if err := memory.CheckLine(f+".text", s.Text, 1, memory.MaxTextRunes); err != nil {
			return err
		}
		if utf8.RuneCountInString(memory.Normalize(s.Text)) < minSupersedeRune {
			return bad(f+".text", "fewer than %d characters once normalized; it would match nothing", minSupersedeRune)
		}
	}
	return nil
}

func validateProposal(ps Proposals) error {
	if len(ps) > 1 {
		return bad("proposal", "%d proposals, at most one", len(ps))
	}
	for _, p := range ps {
		if err := memory.CheckLine("proposal.summary", p.Summary, memory.MinTextRunes, MaxSummaryRunes); err != nil {
			return err
		}
		if utf8.RuneCountInString(p.Detail) > MaxDetailRunes {
			return bad("proposal.detail", "longer than %d characters", MaxDetailRunes)
		}
	}
	return nil
}

// Additive returns the part of a truncated answer that is safe to apply:
// LESSONS, FACTS, RESOURCES, METHODS and HANDOFF, as the seed does when the
// model stopped at max-tokens. Playbooks, supersede and the proposal are
// dropped: a cut procedure or a cut invalidation does harm.
func Additive(o Output) Output {
	return Output{Lessons: o.Lessons, Facts: o.Facts, Resources: o.Resources, Methods: o.Methods, Handoff: o.Handoff}
}
