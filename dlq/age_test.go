package dlq_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/dlq"
)

func TestParseAge(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string // "" = fine
	}{
		{"720h", 720 * time.Hour, ""},
		{"30d", 30 * 24 * time.Hour, ""},
		{"0s", 0, ""},
		{"36500d", dlq.MaxAge, ""},
		{"876000h", dlq.MaxAge, ""},
		{"36501d", 0, "too long ago"},
		{"106751d", 0, "too long ago"},    // fits a Duration, but 292 years
		{"106752d", 0, "too long ago"},    // wrapped negative before
		{"213504d", 0, "too long ago"},    // wrapped positive before
		{"999999999h", 0, "too long ago"}, // time.ParseDuration overflows
		{"99999999999999999999d", 0, "too long ago"},
		{"9223372036854775808ns", 0, "too long ago"},
		{"-1h", 0, "negative"},
		{"-3d", 0, "negative"},
		{"soon", 0, "want an age"},
		{"d", 0, "want an age"},
		{"1.5d", 0, "want an age"},
	}
	for _, tt := range tests {
		got, err := dlq.ParseAge(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("%s: %v, %v; want %v", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
	if _, err := dlq.ParseSince("106752d", time.Now()); err == nil || !strings.Contains(err.Error(), "too long ago") {
		t.Errorf("since 106752d: %v", err)
	}
}
