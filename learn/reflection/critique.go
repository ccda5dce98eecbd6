package reflection

import (
	"github.com/mullhq/mull/learn/trust"
	"slices"
	"strings"
)

// The structured self-opposition of the seed (adversarialReview): a lesson
// comes with a traceable argument, whose opposition was strengthened in
// rounds before it was stored. mull checks the structure only — it cannot
// tell a strong argument from a well-worded one; the aim is that a
// perfunctory review leaves a trace.

// ArgumentFields are the eleven fields of an argument, in the seed's order.
// Each must be written: with content, or with an n/a marker.
var ArgumentFields = []string{"claim", "premises", "evidence", "inference", "conclusion", "steelman",
	"counterexamples", "scope", "alternatives", "revision_conditions", "unresolved"}

// Links are what a steelman round may threaten: the argument's parts an
// opposition can attack (the eleven fields but steelman and unresolved,
// which are the review's own).
var Links = []string{"claim", "premises", "evidence", "inference", "conclusion",
	"counterexamples", "scope", "alternatives", "revision_conditions"}

// MinRounds is the least number of steelman rounds: one round is not
// opposition, it is a formality.
const MinRounds = 2

// Limits on a critique.
const (
	MaxRounds        = 6
	MaxArgumentRunes = 1500
)

// Markers are the seed's n/a markers, compared trimmed and case-folded: a
// field written so is kept apart from the argument.
var Markers = []string{"n/a", "unknown", "无", "不适用"}

// IsMarker reports whether s is an n/a marker.
func IsMarker(s string) bool {
	s = strings.TrimSpace(s)
	for _, m := range Markers {
		if strings.EqualFold(s, m) {
			return true
		}
	}
	return false
}

// Verdict is a review's outcome.
type Verdict string

// The verdicts.
const (
	// Holds: the lesson is stored as it is.
	Holds Verdict = "holds"
	// Narrowed: stored, with applies_when saying where it stops applying,
	// and the critique's scope as its boundary ([BOUNDARIES]).
	Narrowed Verdict = "narrowed"
	// Withdrawn: nothing is stored.
	Withdrawn Verdict = "withdrawn"
)

// The validity scales, kept apart: an argument can be formally valid on
// premises nothing supports.
var (
	Deductive    = []string{"valid", "invalid", "not_applicable", "unresolved"}
	Inductive    = []string{"strong", "moderate", "weak", "not_applicable", "unresolved"}
	PremiseTruth = []string{"established", "partial", "assumed", "unresolved"}
)

// Critique is a lesson's adversarial review as stored (reflections.critique
// is its JSON). A field written as an n/a marker is not in Argument: it is
// in Markers and UnresolvedKeys, so "not written" and "written as none"
// stay apart.
type Critique struct {
	// Argument maps each written argument field to its text.
	Argument           map[string]string `json:"argument"`
	SteelmanRounds     []Round           `json:"steelman_rounds"`
	OppositionResidual string            `json:"opposition_residual"`
	Validity           Validity          `json:"validity"`
	Verdict            Verdict           `json:"verdict"`
	// Markers maps a field written as an n/a marker to the marker.
	Markers map[string]string `json:"markers,omitempty"`
	// UnresolvedKeys lists the marked fields, in ArgumentFields order.
	UnresolvedKeys []string `json:"unresolved_keys,omitempty"`
	// Scope is Argument["scope"]: where the conclusion holds.
	Scope string `json:"-"`
}

// Round is one steelman round: the link it threatens, the opposition
// strengthened against it, the response, and what survived the response.
type Round struct {
	Threatens string `json:"threatens"`
	Argument  string `json:"argument"`
	Response  string `json:"response"`
	Survives  string `json:"survives"`
}

// Validity is the three validities, assessed apart.
type Validity struct {
	Deductive    string `json:"deductive,omitempty"`
	Inductive    string `json:"inductive,omitempty"`
	PremiseTruth string `json:"premise_truth"`
}

var (
	critiqueKeys = append(slices.Clone(ArgumentFields), "steelman_rounds", "opposition_residual", "validity", "verdict")
	roundKeys    = []string{"threatens", "argument", "response", "survives"}
	validityKeys = []string{"deductive", "inductive", "premise_truth"}
)

// parseCritique reads and checks a critique. Each refusal of a seed rule
// names it: "one round is refused", "repeated threatens is refused",
// "empty residual is refused".
func parseCritique(v any, path string) (*Critique, error) {
	o, err := asObj(path, v)
	if err != nil {
		return nil, err
	}
	if err = o.done(critiqueKeys...); err != nil {
		return nil, err
	}
	c := &Critique{Argument: map[string]string{}}
	for _, f := range ArgumentFields {
		s, err := o.strOrList(f, MaxArgumentRunes)
		if err != nil {
			return nil, err
		}
		switch {
		case s == "":
			return nil, refuse(o.at(f), "required: write it, or write n/a (unknown, 无, 不适用) when it does not apply")
		case IsMarker(s):
			if c.Markers == nil {
				c.Markers = map[string]string{}
			}
			c.Markers[f] = s
			c.UnresolvedKeys = append(c.UnresolvedKeys, f)
		default:
			c.Argument[f] = s
		}
	}
	c.Scope = c.Argument["scope"]
	if c.SteelmanRounds, err = rounds(o); err != nil {
		return nil, err
	}
	if c.OppositionResidual, err = o.str("opposition_residual", MaxArgumentRunes); err != nil {
		return nil, err
	}
	if c.OppositionResidual == "" || IsMarker(c.OppositionResidual) {
		return nil, refuse(o.at("opposition_residual"), "empty residual is refused: say what part of the opposition you did not refute")
	}
	if c.Validity, err = validity(o, c); err != nil {
		return nil, err
	}
	if !o.has("verdict") {
		return nil, refuse(o.at("verdict"), "required: holds, narrowed or withdrawn")
	}
	if c.Verdict, err = enum(o, "verdict", Verdict(""), Holds, Narrowed, Withdrawn); err != nil {
		return nil, err
	}
	if c.Verdict == "" {
		return nil, refuse(o.at("verdict"), "required: holds, narrowed or withdrawn")
	}
	if c.Verdict == Narrowed && c.Scope == "" {
		return nil, refuse(o.at("scope"), "narrowed without scope is refused: the scope is where the old way is still better")
	}
	return c, nil
}

func rounds(o obj) ([]Round, error) {
	p := o.at("steelman_rounds")
	arr, err := o.array("steelman_rounds", MaxRounds)
	if err != nil {
		return nil, err
	}
	if len(arr) < MinRounds {
		return nil, refuse(p, "one round is refused: at least %d steelman rounds, each threatening a different link (got %d)", MinRounds, len(arr))
	}
	var out []Round
	for i, v := range arr {
		r, err := asObj(index(p, i), v)
		if err != nil {
			return nil, err
		}
		if err = r.done(roundKeys...); err != nil {
			return nil, err
		}
		var x Round
		for _, f := range []struct {
			key    string
			dst    *string
			marker bool // may be an n/a marker
		}{{"threatens", &x.Threatens, false}, {"argument", &x.Argument, false}, {"response", &x.Response, false}, {"survives", &x.Survives, true}} {
			if *f.dst, err = r.str(f.key, MaxArgumentRunes); err != nil {
				return nil, err
			}
			if *f.dst == "" || (!f.marker && IsMarker(*f.dst)) {
				return nil, refuse(r.at(f.key), "required")
			}
		}
		x.Threatens = strings.ToLower(x.Threatens)
		if !slices.Contains(Links, x.Threatens) {
			return nil, refuse(r.at("threatens"), "%q is not a link of the argument (one of %s)", x.Threatens, strings.Join(Links, ", "))
		}
		for j, prev := range out {
			if prev.Threatens == x.Threatens {
				return nil, refuse(r.at("threatens"), "repeated threatens is refused: round %d already threatens %s; each round attacks a different link", j, x.Threatens)
			}
		}
		out = append(out, x)
	}
	return out, nil
}

func validity(o obj, c *Critique) (Validity, error) {
	var v Validity
	if !o.has("validity") {
		return v, refuse(o.at("validity"), "required: deductive, inductive and premise_truth")
	}
	vo, err := asObj(o.at("validity"), o.m["validity"])
	if err != nil {
		return v, err
	}
	if err = vo.done(validityKeys...); err != nil {
		return v, err
	}
	if v.Deductive, err = enum(vo, "deductive", "", Deductive...); err != nil {
		return v, err
	}
	if v.Inductive, err = enum(vo, "inductive", "", Inductive...); err != nil {
		return v, err
	}
	if !vo.has("premise_truth") {
		return v, refuse(vo.at("premise_truth"), "required: %s", strings.Join(PremiseTruth, ", "))
	}
	if v.PremiseTruth, err = enum(vo, "premise_truth", "", PremiseTruth...); err != nil {
		return v, err
	}
	if v.PremiseTruth == "" {
		return v, refuse(vo.at("premise_truth"), "required: %s", strings.Join(PremiseTruth, ", "))
	}
	if v.PremiseTruth == "unresolved" && c.Argument["unresolved"] == "" {
		return v, refuse(o.at("unresolved"), "premise_truth unresolved needs unresolved to say what is not settled")
	}
	return v, nil
}

// Gated is c with every text through the write-time trust gate
// (trust.Check): credentials redacted, and an instruction-like text kept
// out as "(withheld by the trust gate: <reason>)". A critique is model or
// agent output and is stored for lessons_lookup; the lookup gates it again
// when it renders it.
func (c Critique) Gated() Critique {
	gate := func(s string) string {
		if s == "" {
			return s
		}
		v := trust.Check(s)
		if v.Quarantined {
			return "(withheld by the trust gate: " + v.Reason + ")"
		}
		return v.Text
	}
	out := c
	out.Argument = make(map[string]string, len(c.Argument))
	for k, v := range c.Argument {
		out.Argument[k] = gate(v)
	}
	out.SteelmanRounds = make([]Round, len(c.SteelmanRounds))
	for i, r := range c.SteelmanRounds {
		out.SteelmanRounds[i] = Round{Threatens: r.Threatens, Argument: gate(r.Argument), Response: gate(r.Response), Survives: gate(r.Survives)}
	}
	out.OppositionResidual = gate(c.OppositionResidual)
	out.Scope = gate(c.Scope)
	return out
}
