package benches

import (
	"fmt"
	"net/http"

	"github.com/mullhq/mull/events"
)

// coded is a CodedError of the seed's form: benchmark:<code>, where code
// is "<action>:<reason>" (run:no-frozen-cases).
func coded(status int, code, format string, args ...any) *CodedError {
	return &CodedError{Code: "benchmark:" + code, Msg: fmt.Sprintf(format, args...), Status: status}
}

func badRequest(code, format string, args ...any) *CodedError {
	return coded(http.StatusBadRequest, code, format, args...)
}

func notFound(code, format string, args ...any) *CodedError {
	return coded(http.StatusNotFound, code, format, args...)
}

func conflict(code, format string, args ...any) *CodedError {
	return coded(http.StatusConflict, code, format, args...)
}

// maxID is the longest case, set or snapshot id.
const maxID = 128

// checkID says what is wrong with an id (a case's, a set's, a snapshot's):
// letters, digits, '.', '_' and '-', at most 128, or "" when nothing is.
// Ids become workflow step names and file-safe names, so the grammar is
// narrow.
func checkID(id string) string {
	if id == "" {
		return "required"
	}
	if len(id) > maxID {
		return fmt.Sprintf("is %d characters, at most %d", len(id), maxID)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Sprintf("%q has the character %q: use letters, digits, '.', '_' and '-'", id, r)
		}
	}
	return ""
}

// checkOptionalName checks a workspace or session name when given.
func checkOptionalName(field, v string, max int) error {
	if v == "" {
		return nil
	}
	if problem := events.CheckName(v, max); problem != "" {
		return &FieldError{Field: field, Problem: problem}
	}
	return nil
}
