package bench

// TEMPORARY STUB (slice C, issue 14): minimal stand-ins for slice A's
// prompts and parsers so jobs/benchcell builds and tests before A lands.
// Delete this file at merge; A's real implementations replace it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/learn/trust"
)

// ExecutorSystem is the seed's EXECUTOR_SYSTEM_PROMPT (stub).
const ExecutorSystem = `You are the executor of a benchmark cell. Complete the statement against the harness state overview, then report structured evidence of what you did.

You only see the statement and the harness state — no scoring rubric.

Respond with ONLY a JSON object:
{"completed":true|false,"summary":"one line","actions":["..."],"observations":["..."],"artifacts":[{"name":"...","content":"..."}]}`

// JudgeSystem is the seed's REVIEWER_SYSTEM_PROMPT (stub).
const JudgeSystem = `You are the reviewer of one benchmark cell. Given the statement, the rubric, and the executor's evidence, score the executor's completion on a 0..100 scale and give one concrete piece of actionable feedback.

Respond with ONLY a JSON object:
{"score":82,"feedback":"specific improvement"}`

// ExecutorPrompt (stub): the statement and the snapshot's section.
func ExecutorPrompt(c Case, s Snapshot) string {
	if s.Kind == MemorySnapshot {
		d := s.Digest
		if d == "" {
			d = "(no memory)"
		}
		return "# Benchmark case\n" + c.Statement + "\n\n# Memory (captured snapshot)\n" + d
	}
	var lines []string
	for k, es := range s.Entries {
		for id, e := range es {
			lines = append(lines, fmt.Sprintf("- %s/%s: %s", k, id, e.Content))
		}
	}
	slices.Sort(lines)
	return "# Benchmark case\n" + c.Statement + "\n\n# Harness state overview (captured snapshot)\n" + strings.Join(lines, "\n")
}

// JudgePrompt (stub): the seed's buildReviewerPrompt.
func JudgePrompt(c Case, ev Evidence) string {
	b, _ := json.MarshalIndent(ev, "", "  ")
	return "# Benchmark case\n" + c.Statement + "\n\n# Rubric\n" + c.Rubric + "\n\n# Executor evidence\n" + string(b)
}

// ParseError (stub, slice A's shape) is a refused answer carrying the
// cell's failure reason.
type ParseError struct {
	Failure FailureReason
	Field   string
	Reason  string
}

func (e *ParseError) Error() string { return string(e.Failure) + ": " + e.Field + ": " + e.Reason }

// FailureOf (stub) is the FailureReason err carries, or "".
func FailureOf(err error) FailureReason {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Failure
	}
	return ""
}

// GateEvidence (stub) passes every evidence text through GateText.
func GateEvidence(ev Evidence) Evidence {
	out := Evidence{Completed: ev.Completed, Summary: GateText(ev.Summary), Actions: []string{}, Observations: []string{}}
	for _, s := range ev.Actions {
		out.Actions = append(out.Actions, GateText(s))
	}
	for _, s := range ev.Observations {
		out.Observations = append(out.Observations, GateText(s))
	}
	for _, a := range ev.Artifacts {
		out.Artifacts = append(out.Artifacts, Artifact{Name: GateText(a.Name), Content: GateText(a.Content)})
	}
	return out
}

// GateText (stub): trust.Check's text, or harness.Hidden when quarantined.
func GateText(s string) string {
	if s == "" {
		return ""
	}
	v := trust.Check(s)
	if v.Quarantined {
		return harness.Hidden
	}
	return v.Text
}

func object(text string) (string, bool) {
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return "", false
	}
	return text[i : j+1], true
}

// ParseEvidence (stub): strict, unknown fields rejected.
func ParseEvidence(text string) (Evidence, error) {
	fail := func(err error) (Evidence, error) {
		return Evidence{}, &ParseError{Failure: MalformedExecutorJSON, Reason: err.Error()}
	}
	obj, ok := object(text)
	if !ok {
		return fail(errors.New("no JSON object"))
	}
	dec := json.NewDecoder(strings.NewReader(obj))
	dec.DisallowUnknownFields()
	var ev Evidence
	if err := dec.Decode(&ev); err != nil {
		return fail(err)
	}
	if strings.TrimSpace(ev.Summary) == "" || ev.Actions == nil || ev.Observations == nil {
		return fail(errors.New("summary, actions and observations are required"))
	}
	return ev, nil
}

// ParseVerdict (stub): a finite score in 0..100 and non-empty feedback.
func ParseVerdict(text string) (Verdict, error) {
	obj, ok := object(text)
	var m map[string]any
	if !ok || json.Unmarshal([]byte(obj), &m) != nil {
		return Verdict{}, &ParseError{Failure: MalformedReviewerJSON, Reason: "not a JSON object"}
	}
	score, ok := m["score"].(float64)
	if !ok || math.IsNaN(score) || score < 0 || score > 100 {
		return Verdict{}, &ParseError{Failure: InvalidReviewerScore, Field: "score", Reason: fmt.Sprintf("%v", m["score"])}
	}
	fb, _ := m["feedback"].(string)
	if strings.TrimSpace(fb) == "" {
		return Verdict{}, &ParseError{Failure: EmptyReviewerFeedback, Field: "feedback", Reason: "empty"}
	}
	return Verdict{Score: score, Feedback: strings.TrimSpace(fb)}, nil
}
