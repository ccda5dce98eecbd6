package memory_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

func TestForget(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	lib := []memory.Memory{
		{ID: 1, Text: "The repo uses pnpm, not npm."},
		{ID: 2, Text: "Deploys go through the staging cluster first"},
		{ID: 3, Text: "用中文回答，保持简洁"},
		{ID: 4, Text: "The repo uses pnpm, not npm, since 2025", InvalidAt: now.Add(-time.Hour)}, // forgotten already
		{ID: 5, Text: "uses pnpm not npm ever", Quarantined: true},                               // never served
		{ID: 6, Text: "pnpm"},
		{ID: 7, Text: "The repo uses pnpm, not npm.", RecordedAt: now.Add(time.Hour)}, // not yet recorded
	}
	tests := []struct {
		keywords string
		want     []int64
	}{
		{"PNPM, not NPM", []int64{1}},       // case and punctuation fold; ≥ 6 runes: contained
		{"pnpm", []int64{6}},                // 4 runes: equal only
		{"the staging cluster", []int64{2}}, // a phrase inside the text
		{"staging first", nil},              // every word is in the text, but not as one phrase
		{"简洁", nil},                         // under 4: never (CheckForget refuses it)
		{"保持简洁", nil},                       // 4 runes: equal only
		{"用中文回答 保持简洁", []int64{3}},          // CJK punctuation folds to a space
		// The needle contains 1's text (≥ 6 runes); it contains 6's too, but
		// "pnpm" is under 6 runes, so only equal would match it.
		{"note: the repo uses pnpm, not npm. ok", []int64{1}},
	}
	for _, tt := range tests {
		var got []int64
		for _, m := range memory.Forget(tt.keywords, lib, now) {
			got = append(got, m.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Forget(%q) = %v, want %v", tt.keywords, got, tt.want)
		}
	}
}

func TestCheckForget(t *testing.T) {
	for _, tt := range []struct {
		keywords string
		ok       bool
	}{
		{"pnpm", true},
		{"保持简洁", true},
		{"", false},
		{"   ", false},
		{"a.b", false},      // 2 runes once normalized
		{"简洁", false},       // 2 runes
		{"x\x00yz1", false}, // NUL
	} {
		err := memory.CheckForget("keywords", tt.keywords)
		var fe *memory.FieldError
		if (err == nil) != tt.ok || (err != nil && (!errors.As(err, &fe) || fe.Field != "keywords")) {
			t.Errorf("CheckForget(%q) = %v, want ok %v", tt.keywords, err, tt.ok)
		}
	}
}
