package memory

import (
	"strings"
	"unicode/utf8"
)

// CheckStorable refuses a text neither database can keep as it is: a NUL
// byte (PostgreSQL refuses it in text; SQLite would store it raw) or
// invalid UTF-8. It runs on the text as written, before the trust gate, so
// nothing is stripped silently: the entry is refused, named by field.
func CheckStorable(field, s string) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return &FieldError{Field: field, Problem: "contains a NUL byte"}
	case !utf8.ValidString(s):
		return &FieldError{Field: field, Problem: "not valid UTF-8"}
	}
	return nil
}
