package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
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

// obj is one decoded answer object and the reason its refusals carry.
type obj struct {
	m       map[string]any
	failure FailureReason
}

func (o obj) refuse(field, format string, args ...any) error {
	return &ParseError{Failure: o.failure, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// answer decodes the first { through the last } of text as one JSON
// object.
func answer(text string, failure FailureReason) (obj, error) {
	o := obj{failure: failure}
	if len(text) > MaxAnswerBytes {
		return o, o.refuse("", "the answer is %d bytes, more than %d", len(text), MaxAnswerBytes)
	}
	start, end := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}')
	if start < 0 || end <= start {
		return o, o.refuse("", "%s", MsgTruncatedJSON)
	}
	raw := text[start : end+1]
	if !utf8.ValidString(raw) {
		return o, o.refuse("", "the answer is not valid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return o, o.refuse("", "not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return o, o.refuse("", "more than one JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return o, o.refuse("", "the answer must be a JSON object, got %s", kindOf(v))
	}
	if err := noDuplicateKeys(raw); err != nil {
		return o, o.refuse("", "%v", err)
	}
	o.m = m
	return o, nil
}

// noDuplicateKeys refuses an object that gives a key twice at any depth:
// encoding/json keeps the last, and the seed's JSON.parse does too, but a
// strict reader should not silently pick one of two answers.
func noDuplicateKeys(raw string) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token in this object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, isKey := tok.(string); isKey && top != nil && top.object && top.key {
			if top.keys[k] {
				return fmt.Errorf("field %q is given twice", k)
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// only refuses the first unknown key (sorted, so the error is stable).
func (o obj) only(known []string) error {
	var extra []string
	for k := range o.m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	return o.refuse(extra[0], "unknown field (allowed: %s)", strings.Join(known, ", "))
}

// missing refuses an absent key as required.
func (o obj) missing(key string) error {
	if _, given := o.m[key]; !given {
		return o.refuse(key, "required")
	}
	return nil
}

func (o obj) boolean(key string) (bool, error) {
	if err := o.missing(key); err != nil {
		return false, err
	}
	b, ok := o.m[key].(bool)
	if !ok {
		return false, o.refuse(key, "must be true or false, got %s", kindOf(o.m[key]))
	}
	return b, nil
}

func (o obj) str(key string, most int) (string, error) {
	if err := o.missing(key); err != nil {
		return "", err
	}
	s, ok := o.m[key].(string)
	if !ok {
		return "", o.refuse(key, "must be a string, got %s", kindOf(o.m[key]))
	}
	if n := utf8.RuneCountInString(s); n > most {
		return "", o.refuse(key, "longer than %d characters (%d)", most, n)
	}
	return s, nil
}

// strings reads a required array of at most MaxListItems strings of at
// most MaxItemRunes each.
func (o obj) strings(key string) ([]string, error) {
	if err := o.missing(key); err != nil {
		return nil, err
	}
	arr, ok := o.m[key].([]any)
	if !ok {
		return nil, o.refuse(key, "must be an array of strings, got %s", kindOf(o.m[key]))
	}
	if len(arr) > MaxListItems {
		return nil, o.refuse(key, "at most %d items, got %d", MaxListItems, len(arr))
	}
	out := make([]string, 0, len(arr))
	for i, v := range arr {
		s, ok := v.(string)
		at := key + "[" + strconv.Itoa(i) + "]"
		if !ok {
			return nil, o.refuse(at, "must be a string, got %s", kindOf(v))
		}
		if n := utf8.RuneCountInString(s); n > MaxItemRunes {
			return nil, o.refuse(at, "longer than %d characters (%d)", MaxItemRunes, n)
		}
		out = append(out, s)
	}
	return out, nil
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

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
