package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestCLIRefusesBadBytes: the CLI refuses what the API refuses, exit 2
// with one line naming the field, and stores nothing.
func TestCLIRefusesBadBytes(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			ctx := context.Background()
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			words := strings.Fields(strings.Repeat("a b c d e f g h i j k l m n o p q ", 2))
			for i := range words {
				words[i] += string(rune('a' + i%26))
			}
			tests := []struct {
				name string
				args []string
				want string
			}{
				{"NUL in text", []string{"memory", "add", "--workspace", "/w", "--kind", "fact", "the build\x00uses make"}, "text: contains a NUL"},
				{"invalid UTF-8 in text", []string{"memory", "add", "--workspace", "/w", "--kind", "fact", "the build \xff uses make"}, "text: not valid UTF-8"},
				{"NUL in workspace", []string{"memory", "add", "--workspace", "/w\x00", "--kind", "fact", "the build uses make"}, "workspace: contains a NUL"},
				{"33 search words", append([]string{"memory", "search", "--workspace", "/w"}, append(words, "z")...), "q: 35 distinct words; at most 32"},
				{"NUL in a search", []string{"memory", "search", "--workspace", "/w", "go\x00"}, "q: contains a NUL"},
				{"NUL in any flag", []string{"sessions", "list", "--workspace", "/w\x00"}, "--workspace: contains a NUL"},
				{"invalid UTF-8 in any argument", []string{"sessions", "show", "session-\xff"}, "argument 1: not valid UTF-8"},
				{"purge 999999999h", []string{"dlq", "purge", "--older-than", "999999999h"}, "--older-than: \"999999999h\" is too long ago"},
				{"purge 106751d", []string{"dlq", "purge", "--older-than", "106751d"}, "at most 100 years"},
			}
			for _, tt := range tests {
				code, out, errOut := mull(t, ctx, append([]string{"--database-url", url}, tt.args...)...)
				if code != 2 || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
					t.Errorf("%s: exit %d, stderr %q; want 2 and one line with %q\n%s", tt.name, code, errOut, tt.want, out)
				}
			}
			code, out, _ := mull(t, ctx, "--database-url", url, "memory", "list", "--all", "--workspace", "/w")
			if code != 0 || out != "no memories\n" {
				t.Fatalf("memory list after refused adds: exit %d\n%s", code, out)
			}
		})
	}
}

// Text from logs and LLM calls reaches the operator's terminal: control
// characters and bidi overrides are shown as escapes, lines and tabs kept.
func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain title":            "plain title",
		"a\nb\tc":                "a\nb\tc",
		"\x1b]0;pwned\x07 title": `\x1b]0;pwned\a title`,
		"\x1b[2J\x1b[Hclear":     `\x1b[2J\x1b[Hclear`,
		"rtl \u202eevil":         `rtl \u202eevil`,
		"c1 \u009b31m":           `c1 \u009b31m`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
