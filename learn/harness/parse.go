package harness

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The model's answers are read strictly, the way learn/reflection reads a
// reflection: the JSON is decoded into plain values and every field is
// checked by name, so an unknown field, a wrong type or a missing field is
// refused with the JSON path of what was wrong, and nothing of a refused
// answer is used. What an edit means (its action, kind, id rules) is not
// checked here: Apply's rule 1 records a bad edit as rejected, as the seed
// does.

// MsgTruncatedJSON is the seed's TRUNCATED_JSON_ERROR, verbatim: the
// answer holds no complete {…}.
const MsgTruncatedJSON = "the model stopped before completing its JSON object; the reply was truncated or empty"

// The parse caps.
const (
	// MaxEdits caps a proposal's edits.
	MaxEdits = 20
	// MaxTextRunes caps every text of an answer (a content, a reason, a
	// rationale).
	MaxTextRunes = 20000
	// MaxAnswerBytes caps an answer as a whole.
	MaxAnswerBytes = 1 << 20
)

// ParseError is a refused answer: the JSON path of what was wrong
// ("edits[2].foo") and why. Path is "" for the answer as a whole.
type ParseError struct {
	Path   string
	Reason string
}

func (e *ParseError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

func refuse(path, format string, args ...any) error {
	return &ParseError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// The fields of the answers. The model writes the seed's "blastRadius";
// "blast_radius" (Edit's own JSON name, mull's API form) is read too.
var (
	reviewKeys     = []string{"approved", "rationale"}
	proposalKeys   = []string{"id", "summary", "edits"}
	modelEditKeys  = []string{"action", "kind", "id", "content", "description", "title", "reason", "blastRadius", "blast_radius"}
	personEditKeys = append(slices.Clone(modelEditKeys), "archive", "pin")
)

// ParseReview parses the review answer strictly (the first { through the
// last } is taken as JSON, as in the seed's extractJsonObject; unknown
// fields, wrong types and a missing field are errors naming the JSON
// path).
func ParseReview(raw []byte) (Review, error) {
	o, err := answer(raw, true)
	if err != nil {
		return Review{}, err
	}
	var r Review
	if err = o.done(reviewKeys); err != nil {
		return r, err
	}
	if r.Approved, err = o.boolean("approved"); err != nil {
		return r, err
	}
	r.Rationale, err = o.str("rationale", true)
	return r, err
}

// ParseProposal parses the planner answer strictly, like ParseReview:
// {"id","summary","edits"} required, each edit's "action", "kind" and "id"
// required, at most MaxEdits edits. An edit may carry content,
// description, title, reason and blastRadius; a field given (even "")
// is set (non-nil). Edits are not validated here (Apply's rule 1 records
// them as rejected).
func ParseProposal(raw []byte) (Proposal, error) {
	o, err := answer(raw, true)
	if err != nil {
		return Proposal{}, err
	}
	return proposal(o, modelEditKeys)
}

// ParsePersonProposal parses a proposal a person wrote (the admin API's
// and `mull harness apply`'s): the whole of raw is the JSON object, and an
// edit may also carry the lifecycle fields "archive" and "pin", which the
// model may not.
func ParsePersonProposal(raw []byte) (Proposal, error) {
	o, err := answer(raw, false)
	if err != nil {
		return Proposal{}, err
	}
	return proposal(o, personEditKeys)
}

func proposal(o obj, editKeys []string) (Proposal, error) {
	var p Proposal
	var err error
	if err = o.done(proposalKeys); err != nil {
		return p, err
	}
	if p.ID, err = o.str("id", true); err != nil {
		return p, err
	}
	if p.Summary, err = o.str("summary", true); err != nil {
		return p, err
	}
	arr, err := o.array("edits", MaxEdits)
	if err != nil {
		return p, err
	}
	p.Edits = make([]Edit, 0, len(arr))
	for i, v := range arr {
		eo, err := asObj("edits["+strconv.Itoa(i)+"]", v)
		if err != nil {
			return p, err
		}
		e, err := edit(eo, editKeys)
		if err != nil {
			return p, err
		}
		p.Edits = append(p.Edits, e)
	}
	return p, nil
}

func edit(o obj, keys []string) (Edit, error) {
	var e Edit
	if err := o.done(keys); err != nil {
		return e, err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"action", (*string)(&e.Action)}, {"kind", (*string)(&e.Kind)}, {"id", &e.ID}} {
		s, err := o.str(f.key, true)
		if err != nil {
			return e, err
		}
		*f.dst = s
	}
	for _, f := range []struct {
		key string
		dst **string
	}{{"content", &e.Content}, {"description", &e.Description}, {"title", &e.Title}} {
		if !o.has(f.key) {
			continue
		}
		s, err := o.str(f.key, false)
		if err != nil {
			return e, err
		}
		*f.dst = &s
	}
	var err error
	if e.Reason, err = o.str("reason", false); err != nil {
		return e, err
	}
	if e.BlastRadius, err = blastRadius(o); err != nil {
		return e, err
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{{"archive", &e.Archive}, {"pin", &e.Pin}} {
		if !o.has(f.key) {
			continue
		}
		b, err := o.boolean(f.key)
		if err != nil {
			return e, err
		}
		*f.dst = &b
	}
	return e, nil
}

// blastRadius reads "blastRadius" (the seed's) or "blast_radius"; both
// given must agree. Its value is Apply's to check.
func blastRadius(o obj) (BlastRadius, error) {
	camel, err := o.str("blastRadius", false)
	if err != nil {
		return "", err
	}
	snake, err := o.str("blast_radius", false)
	if err != nil {
		return "", err
	}
	if o.has("blastRadius") && o.has("blast_radius") && camel != snake {
		return "", refuse(o.at("blast_radius"), "differs from blastRadius (%q vs %q); give one", snake, camel)
	}
	return BlastRadius(cmp.Or(camel, snake)), nil
}

// answer decodes one JSON object: from an answer's first { through its
// last } when extract is set (the model may wrap it in prose or a code
// fence), else the whole of raw.
func answer(raw []byte, extract bool) (obj, error) {
	if len(raw) > MaxAnswerBytes {
		return obj{}, refuse("", "the answer is %d bytes, more than %d", len(raw), MaxAnswerBytes)
	}
	if !utf8.Valid(raw) {
		return obj{}, refuse("", "the answer is not valid UTF-8")
	}
	if extract {
		start, end := bytes.IndexByte(raw, '{'), bytes.LastIndexByte(raw, '}')
		if start < 0 || end <= start {
			return obj{}, refuse("", "%s", MsgTruncatedJSON)
		}
		raw = raw[start : end+1]
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return obj{}, refuse("", "not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return obj{}, refuse("", "more than one JSON value")
	}
	return asObj("", v)
}

// obj is one JSON object being read, with its path, so every error names
// where it is.
type obj struct {
	path string
	m    map[string]any
}

func asObj(path string, v any) (obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if path == "" {
			return obj{}, refuse("", "the answer must be a JSON object, got %s", kindOf(v))
		}
		return obj{}, refuse(path, "must be an object, got %s", kindOf(v))
	}
	return obj{path, m}, nil
}

func (o obj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// done refuses the first unknown key (sorted, so the error is stable).
func (o obj) done(known []string) error {
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
	return refuse(o.at(extra[0]), "unknown field")
}

// has: the key is given and not null (null reads as absent).
func (o obj) has(key string) bool { return o.m[key] != nil }

// str reads a string of at most MaxTextRunes runes, as given (not
// trimmed): the growth rule measures what the model wrote.
func (o obj) str(key string, required bool) (string, error) {
	v := o.m[key]
	if v == nil {
		if required {
			return "", refuse(o.at(key), "required")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", refuse(o.at(key), "must be a string, got %s", kindOf(v))
	}
	if n := utf8.RuneCountInString(s); n > MaxTextRunes {
		return "", refuse(o.at(key), "longer than %d characters (%d)", MaxTextRunes, n)
	}
	return s, nil
}

func (o obj) boolean(key string) (bool, error) {
	v := o.m[key]
	if v == nil {
		return false, refuse(o.at(key), "required")
	}
	b, ok := v.(bool)
	if !ok {
		return false, refuse(o.at(key), "must be true or false, got %s", kindOf(v))
	}
	return b, nil
}

func (o obj) array(key string, most int) ([]any, error) {
	v := o.m[key]
	if v == nil {
		return nil, refuse(o.at(key), "required (an empty array when there is nothing to change)")
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, refuse(o.at(key), "must be an array, got %s", kindOf(v))
	}
	if len(arr) > most {
		return nil, refuse(o.at(key), "at most %d edits, got %d", most, len(arr))
	}
	return arr, nil
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
