package memory_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
)

func TestSearchTerms(t *testing.T) {
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = "w" + strconv.Itoa(i)
		}
		return strings.Join(w, " ")
	}
	tests := []struct {
		name, q string
		terms   int
		want    string // "" = fine
	}{
		{"a few", "Go  test go TEST", 2, ""},
		{"exactly the cap", words(memory.MaxSearchTerms), memory.MaxSearchTerms, ""},
		{"repeats count once", words(memory.MaxSearchTerms) + " " + words(memory.MaxSearchTerms), memory.MaxSearchTerms, ""},
		{"one over the cap", words(memory.MaxSearchTerms + 1), 0, "33 distinct words; at most 32"},
		{"999 words", words(999), 0, "at most"},
		{"40 short words", strings.Repeat("a b c d e f g h i j ", 4) + "k l m n o p q r s t u v w x y z 1 2 3 4 5 6 7", 0, "at most 32"},
		{"too long", strings.Repeat("x", memory.MaxSearchChars+1), 0, "at most 1000"},
		{"a word at the cap", strings.Repeat("x", memory.MaxSearchTermChars) + " go", 2, ""},
		{"a word over the cap is cut", "go " + strings.Repeat("x", memory.MaxSearchTermChars+1), 2, ""},
		{"a Chinese word over the cap is cut", strings.Repeat("中文", 33), 1, ""},
		{"words alike to the cap count once", strings.Repeat("x", memory.MaxSearchTermChars) + "a " + strings.Repeat("x", memory.MaxSearchTermChars) + "b", 1, ""},
		{"a Chinese word", "中文", 1, ""},
		{"blank", "  ", 0, "required"},
		{"NUL", "go\x00test", 0, "NUL"},
		{"invalid UTF-8", "go\xfftest", 0, "UTF-8"},
		{"escape", "go\x1b[2J", 0, "U+001B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			terms, err := memory.SearchTerms(tt.q)
			if tt.want == "" {
				if err != nil || len(terms) != tt.terms {
					t.Fatalf("got %d terms, %v; want %d", len(terms), err, tt.terms)
				}
				for _, term := range terms {
					if n := utf8.RuneCountInString(term); n > memory.MaxSearchTermChars {
						t.Fatalf("a term of %d characters: %q", n, term)
					}
				}
				return
			}
			var fe *memory.FieldError
			if !errors.As(err, &fe) || fe.Field != "q" || !strings.Contains(fe.Problem, tt.want) {
				t.Fatalf("got %v; want q: …%s…", err, tt.want)
			}
		})
	}
}

func TestValidateRefusesControlBytes(t *testing.T) {
	base := memory.Memory{Workspace: "/w", Kind: memory.Fact, Text: "the build uses make", Origin: memory.OriginTool}
	tests := []struct {
		name  string
		edit  func(*memory.Memory)
		field string
	}{
		{"NUL in text", func(m *memory.Memory) { m.Text = "the build\x00uses make" }, "text"},
		{"invalid UTF-8 in text", func(m *memory.Memory) { m.Text = "the build \xff uses make" }, "text"},
		{"escape in text", func(m *memory.Memory) { m.Text = "the build \x1b[31m uses make" }, "text"},
		{"NUL in workspace", func(m *memory.Memory) { m.Workspace = "/w\x00" }, "workspace"},
		{"newline in workspace", func(m *memory.Memory) { m.Workspace = "/w\nx" }, "workspace"},
		{"long workspace", func(m *memory.Memory) { m.Workspace = "/" + strings.Repeat("w", 5000) }, "workspace"},
		{"NUL in session", func(m *memory.Memory) { m.SessionID = "s\x00" }, "session_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			tt.edit(&m)
			var fe *memory.FieldError
			if err := memory.Validate(m); !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("got %v; want field %s", err, tt.field)
			}
		})
	}
	if err := memory.Validate(base); err != nil {
		t.Fatalf("valid memory refused: %v", err)
	}
	w := memory.Write{Workspace: "/w", Kind: memory.Fact, Text: "the build \xff uses make"}
	var fe *memory.FieldError
	if _, _, err := memory.New(w, memory.Provenance{Origin: memory.OriginTool}, time.Now()); !errors.As(err, &fe) || fe.Field != "text" {
		t.Fatalf("New with invalid UTF-8 (which OneLine would turn into U+FFFD): %v", err)
	}
	if err := memory.CheckLine("entry", "tab\tis fine", 2, 100); err != nil {
		t.Fatalf("a tab refused: %v", err)
	}
	if err := memory.CheckLine("entry", "nul\x00is not", 2, 100); err == nil {
		t.Fatal("a NUL in a line accepted")
	}
}
