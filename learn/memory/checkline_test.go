package memory_test

import (
	"errors"
	"testing"

	"github.com/mullhq/mull/learn/memory"
)

func TestCheckLine(t *testing.T) {
	tests := []struct {
		in   string
		want string // the problem, "" for none
	}{
		{"the repo uses pnpm", ""},
		{"  padded  ", ""},
		{"", "required"},
		{"   ", "required"},
		{"two\nlines", "must be one line"},
		{"paragraph\u2029break", "must be one line"},
		{"next\u0085line", "must be one line"},
		{"a", "shorter than 2 characters"},
		{"this line is much too long for its field", "longer than 30 characters"},
		{"bad \xff utf8", "not valid UTF-8"},
	}
	for _, tt := range tests {
		err := memory.CheckLine("lessons[0].text", tt.in, 2, 30)
		var fe *memory.FieldError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckLine(%q) = %v, want nil", tt.in, err)
		case tt.want != "" && (!errors.As(err, &fe) || fe.Field != "lessons[0].text" || fe.Problem != tt.want):
			t.Errorf("CheckLine(%q) = %v, want lessons[0].text: %s", tt.in, err, tt.want)
		}
	}
}
