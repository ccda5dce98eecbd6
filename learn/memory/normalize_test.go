package memory_test

import (
	"testing"

	"github.com/mullhq/mull/learn/memory"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Use pnpm, not npm.", "use pnpm not npm"},
		{"  use  PNPM\tnot npm ", "use pnpm not npm"},
		{"ＵＳＥ　ｐｎｐｍ，ｎｏｔ　ｎｐｍ！", "use pnpm not npm"},
		{"用中文，简洁。", "用中文 简洁"},
		{"「先读后改」——编辑前先读完整文件", "先读后改 编辑前先读完整文件"},
		{"{imp:8}", "imp 8"},
		{"...", ""},
	}
	for _, tt := range tests {
		if got := memory.Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDuplicate(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"same", "same", true},
		{"Use pnpm, not npm.", "use pnpm not npm", true},
		{"用中文，简洁", "用中文 简洁", true},
		{"ＡＰＩ key in vault", "api key in vault", true},
		{"use pnpm", "use npm", false},
		{"!!!", "???", false},
	}
	for _, tt := range tests {
		if got := memory.Duplicate(tt.a, tt.b); got != tt.want {
			t.Errorf("Duplicate(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		needle, text string
		want         bool
	}{
		{"Uses pnpm", "uses pnpm.", true},                                      // normalized equal
		{"pnpm not npm", "the repo uses pnpm, not npm", true},                  // needle ≥ 6, contained
		{"repo uses pnpm, not npm, for everything", "uses pnpm not npm", true}, // text ≥ 6, contained in the needle
		{"pnpm", "the repo uses pnpm, not npm", false},                         // 4 chars: exact only
		{"npm", "npm", false},                                                  // under 4 matches nothing
		{"端点已变更", "旧端点已变更为 v2", false},                                         // 5 runes: exact only
		{"端点已变更为", "旧端点已变更为 v2", true},
		{"uses yarn", "uses pnpm", false},
	}
	for _, tt := range tests {
		if got := memory.Matches(tt.needle, tt.text); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v", tt.needle, tt.text, got)
		}
	}
}
