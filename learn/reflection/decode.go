package reflection

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FieldError is a refused reflection: the JSON path of what was wrong
// ("lessons[2].relation", "lessons[0].critique.steelman_rounds") and why.
// The API answers it as 422 {"error", "field"}.
type FieldError struct {
	// Field is the JSON path; "" for the document as a whole.
	Field string
	// Reason says what was wrong; a rule of the adversarial review starts
	// with the rule's name ("one round is refused: …").
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func refuse(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// obj is one JSON object being read, with its path, so every error names
// where it is. The reader is strict: an unknown key is refused by done.
type obj struct {
	path string
	m    map[string]any
}

func (o obj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func asObj(path string, v any) (obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, refuse(path, "must be an object, got %s", kindOf(v))
	}
	return obj{path, m}, nil
}

// done refuses the first unknown key (sorted, so the error is stable).
func (o obj) done(known ...string) error {
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
	return refuse(o.at(extra[0]), "unknown field (known: %s)", strings.Join(known, ", "))
}

func (o obj) has(key string) bool {
	v, ok := o.m[key]
	return ok && v != nil
}

// str reads an optional string, trimmed, of at most max runes; null and
// absent read as "".
func (o obj) str(key string, max int) (string, error) {
	v, ok := o.m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", refuse(o.at(key), "must be a string, got %s", kindOf(v))
	}
	return text(o.at(key), s, max)
}

// strOrList reads a string, or an array of strings joined with "; " (a
// critique's premises or alternatives are often written as a list).
func (o obj) strOrList(key string, max int) (string, error) {
	arr, ok := o.m[key].([]any)
	if !ok {
		return o.str(key, max)
	}
	parts := make([]string, 0, len(arr))
	for i, v := range arr {
		s, ok := v.(string)
		if !ok {
			return "", refuse(index(o.at(key), i), "must be a string, got %s", kindOf(v))
		}
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return text(o.at(key), strings.Join(parts, "; "), max)
}

func text(path, s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		return "", refuse(path, "is not valid UTF-8")
	}
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > max {
		return "", refuse(path, "longer than %d characters (%d)", max, n)
	}
	return s, nil
}

// enum reads an optional string that must be one of allowed; def when
// absent or empty.
func enum[T ~string](o obj, key string, def T, allowed ...T) (T, error) {
	s, err := o.str(key, 40)
	if err != nil || s == "" {
		return def, err
	}
	for _, a := range allowed {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return def, refuse(o.at(key), "%q is not one of %s", s, strings.Join(names, ", "))
}

func (o obj) array(key string, max int) ([]any, error) {
	v, ok := o.m[key]
	if !ok || v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, refuse(o.at(key), "must be an array, got %s", kindOf(v))
	}
	if len(arr) > max {
		return nil, refuse(o.at(key), "at most %d entries, got %d", max, len(arr))
	}
	return arr, nil
}

// refDigits reads a lesson id written as 12, "12", "#12", "id 12" or
// "L12" (lesson.LessonRef, how mull shows ids), lower-cased first.
var refDigits = regexp.MustCompile(`^(?:id\s*|l)?#?\s*([0-9]{1,18})$`)

// lessonID reads a stored lesson's id: a positive integer, or a string
// holding one.
func lessonID(path string, v any) (int64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		m := refDigits.FindStringSubmatch(strings.ToLower(strings.TrimSpace(x)))
		if m == nil {
			return 0, refuse(path, "%q is not a lesson id", cutRunes(x, 40))
		}
		s = m[1]
	case nil:
		return 0, refuse(path, "required")
	default:
		return 0, refuse(path, "must be a lesson id, got %s", kindOf(v))
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, refuse(path, "%s is not a lesson id", s)
	}
	return id, nil
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

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
