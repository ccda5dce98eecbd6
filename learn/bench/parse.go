package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The evidence caps (mull's; the seed has none). A cell's evidence is
// stored with the run and read by the judge, so an executor cannot make
// either unbounded.
const (
	MaxSummaryRunes  = 2000
	MaxListItems     = 50
	MaxItemRunes     = 2000
	MaxArtifacts     = 10
	MaxArtifactRunes = 20000
	// MaxArtifactNameRunes caps an artifact's name.
	MaxArtifactNameRunes = 200
	// MaxFeedbackRunes caps the judge's feedback.
	MaxFeedbackRunes = 2000
	// MaxAnswerBytes caps an answer as a whole.
	MaxAnswerBytes = 1 << 20
)

// MsgTruncatedJSON is the seed's TRUNCATED_JSON_ERROR, verbatim: the
// answer holds no complete {…}.
const MsgTruncatedJSON = "the model stopped before completing its JSON object; the reply was truncated or empty"

// ParseError is a refused executor or judge answer: the FailureReason a
// cell that ends on it is recorded with, the JSON field that was wrong
// ("" for the answer as a whole) and why.
type ParseError struct {
	Failure FailureReason
	Field   string
	Reason  string
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return string(e.Failure) + ": " + e.Reason
	}
	return string(e.Failure) + ": " + e.Field + ": " + e.Reason
}

// FailureOf is the FailureReason err carries (a *ParseError's), or "".
func FailureOf(err error) FailureReason {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Failure
	}
	return ""
}

// evidenceKeys are the executor's documented fields (the seed's
// EXECUTOR_EVIDENCE_FIELDS); verdictKeys the judge's.
var (
	evidenceKeys = []string{"completed", "summary", "actions", "observations", "artifacts"}
	artifactKeys = []string{"name", "content"}
	verdictKeys  = []string{"score", "feedback"}
)

// ParseEvidence reads the executor's answer strictly (the seed's
// parseExecutorEvidence): the first { through the last } is taken as the
// JSON object (the seed's extractJsonObject: prose and code fences
// around it are tolerated), exactly {completed, summary, actions,
// observations, artifacts?} with those types, an artifact exactly {name,
// content}; an unknown field is refused, and so is anything over mull's
// caps. Every refusal names the field and carries
// malformed-executor-json, the reason the cell fails with.
func ParseEvidence(text string) (Evidence, error) {
	var ev Evidence
	o, err := answer(text, MalformedExecutorJSON)
	if err != nil {
		return ev, err
	}
	if err := o.only(evidenceKeys); err != nil {
		return ev, err
	}
	if ev.Completed, err = o.boolean("completed"); err != nil {
		return ev, err
	}
	if ev.Summary, err = o.str("summary", MaxSummaryRunes); err != nil {
		return ev, err
	}
	if ev.Actions, err = o.strings("actions"); err != nil {
		return ev, err
	}
	if ev.Observations, err = o.strings("observations"); err != nil {
		return ev, err
	}
	ev.Artifacts, err = o.artifacts()
	return ev, err
}

// ParseVerdict reads the judge's answer strictly (the seed's
// parseReviewerScore): {score, feedback} and nothing else. A score that
// is not a finite number in 0..100 is invalid-reviewer-score; feedback
// that is not a non-empty string is empty-reviewer-feedback; anything
// else wrong (not JSON, not an object, an unknown field, feedback over
// MaxFeedbackRunes) is malformed-reviewer-json. Feedback is trimmed, as
// in the seed.
func ParseVerdict(text string) (Verdict, error) {
	var v Verdict
	o, err := answer(text, MalformedReviewerJSON)
	if err != nil {
		return v, err
	}
	if err := o.only(verdictKeys); err != nil {
		return v, err
	}
	if v.Score, err = o.score(); err != nil {
		return v, err
	}
	fb, ok := o.m["feedback"].(string)
	if _, given := o.m["feedback"]; !given {
		return v, &ParseError{EmptyReviewerFeedback, "feedback", "required"}
	}
	if !ok || strings.TrimSpace(fb) == "" {
		return v, &ParseError{EmptyReviewerFeedback, "feedback", "must be a non-empty string"}
	}
	v.Feedback = strings.TrimSpace(fb)
	if n := utf8.RuneCountInString(v.Feedback); n > MaxFeedbackRunes {
		return v, o.refuse("feedback", "longer than %d characters (%d)", MaxFeedbackRunes, n)
	}
	return v, nil
}

// artifacts reads the optional artifacts: absent is none; given (even
// null, as in the seed) it must be an array of exactly {name, content}.
func (o obj) artifacts() ([]Artifact, error) {
	v, given := o.m["artifacts"]
	if !given {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, o.refuse("artifacts", "must be an array of {name, content}, got %s", kindOf(v))
	}
	if len(arr) > MaxArtifacts {
		return nil, o.refuse("artifacts", "at most %d artifacts, got %d", MaxArtifacts, len(arr))
	}
	out := make([]Artifact, 0, len(arr))
	for i, v := range arr {
		at := "artifacts[" + strconv.Itoa(i) + "]"
		m, ok := v.(map[string]any)
		if !ok {
			return nil, o.refuse(at, "must be an object {name, content}, got %s", kindOf(v))
		}
		a := obj{m: m, failure: o.failure}
		if err := a.only(artifactKeys); err != nil {
			return nil, prefix(err, at)
		}
		name, err := a.str("name", MaxArtifactNameRunes)
		if err != nil {
			return nil, prefix(err, at)
		}
		content, err := a.str("content", MaxArtifactRunes)
		if err != nil {
			return nil, prefix(err, at)
		}
		out = append(out, Artifact{Name: name, Content: content})
	}
	return out, nil
}

// prefix puts an element's path before a field's.
func prefix(err error, at string) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.Field = at + "." + pe.Field
	}
	return err
}

// score reads the judge's score: a JSON number, finite, in 0..100.
func (o obj) score() (float64, error) {
	invalid := func(format string, args ...any) error {
		return &ParseError{InvalidReviewerScore, "score", fmt.Sprintf(format, args...)}
	}
	if _, given := o.m["score"]; !given {
		return 0, invalid("required")
	}
	n, ok := o.m["score"].(json.Number)
	if !ok {
		return 0, invalid("must be a finite number, got %s", kindOf(o.m["score"]))
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, invalid("must be a finite number, got %s", n)
	}
	if f < 0 || f > 100 {
		return 0, invalid("out of range 0..100: %s", n)
	}
	return f, nil
}
