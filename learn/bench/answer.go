package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The answer reader: one JSON object decoded into plain values and read
// field by field, so a refusal names the field (the way learn/harness
// reads the planner's answers).

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
