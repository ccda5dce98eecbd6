package bench

import (
	"errors"
	"strings"
	"testing"
)

func validCase() Case {
	return Case{ID: "case-a", Set: "demo", Title: "Fix the test", Statement: "Fix the failing test.", Rubric: "Mentions `go test`."}
}

func TestValidateCase(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name  string
		edit  func(*Case)
		field string
	}{
		{"a valid case", func(*Case) {}, ""},
		{"no set reads as default", func(c *Case) { c.Set = "" }, ""},
		{"id of 128", func(c *Case) { c.ID = long(128) }, ""},
		{"title of 200", func(c *Case) { c.Title = strings.Repeat("é", 200) }, ""},
		{"statement of 8000", func(c *Case) { c.Statement = long(8000) }, ""},
		{"rubric of 4000", func(c *Case) { c.Rubric = long(4000) }, ""},
		{"capability of 100", func(c *Case) { c.Capability = long(100) }, ""},
		{"empty id", func(c *Case) { c.ID = "" }, "id"},
		{"id of 129", func(c *Case) { c.ID = long(129) }, "id"},
		{"id with a slash", func(c *Case) { c.ID = "a/b" }, "id"},
		{"id with a space", func(c *Case) { c.ID = "a b" }, "id"},
		{"set with a slash", func(c *Case) { c.Set = "../x" }, "set"},
		{"blank title", func(c *Case) { c.Title = "  \n" }, "title"},
		{"title of 201", func(c *Case) { c.Title = strings.Repeat("é", 201) }, "title"},
		{"blank statement", func(c *Case) { c.Statement = "\t" }, "statement"},
		{"statement of 8001", func(c *Case) { c.Statement = long(8001) }, "statement"},
		{"blank rubric", func(c *Case) { c.Rubric = "" }, "rubric"},
		{"rubric of 4001", func(c *Case) { c.Rubric = long(4001) }, "rubric"},
		{"capability of 101", func(c *Case) { c.Capability = long(101) }, "capability"},
		{"invalid UTF-8", func(c *Case) { c.Statement = "a\xffb" }, "statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCase()
			tc.edit(&c)
			err := ValidateCase(c)
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("got %v, want a refusal of %s", err, tc.field)
			case tc.field != "" && !strings.HasPrefix(err.Error(), tc.field+": "):
				t.Fatalf("message %q does not name %s", err, tc.field)
			}
		})
	}
}

// The hashes the seed computes for the same material (its canonicalJson
// and hashBenchmarkCase, run under node): mull and the seed name a frozen
// case alike.
func TestCaseHashIsTheSeeds(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Case
		want string
	}{
		{"without a capability", Case{ID: "case-a", Statement: "Fix the failing test.", Rubric: "Mentions `go test`."},
			"737adcaa1cfef676d7eaa1e809879d7c8e24c578684f5eae1d2766a58b633aa0"},
		{"with a capability", Case{ID: "case-a", Statement: "Fix the failing test.", Rubric: "Mentions `go test`.", Capability: "testing"},
			"1c6a2b71cc938546a68725ed23092fb2318e939d813b434921c45aed384951c6"},
		{"escapes as JSON.stringify", Case{ID: "c.1", Statement: "Line one\nline\ttwo <b>&</b> \u2028 \"q\" \\ \u0001 é 中 😀", Rubric: "r\r\f\b"},
			"a42bd3273b1ce0dcc50b9ea0d1f546ef299cc91f7ca151a17d3f92ddabd919ec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CaseHash(tc.c); got != tc.want {
				t.Fatalf("CaseHash = %s, want the seed's %s", got, tc.want)
			}
		})
	}
}

func TestCaseHashCoversTheMaterialOnly(t *testing.T) {
	base := validCase()
	h := CaseHash(base)
	for name, edit := range map[string]func(*Case){
		"title": func(c *Case) { c.Title = "Another" }, "set": func(c *Case) { c.Set = "other" },
		"state": func(c *Case) { c.State = Frozen }, "hash": func(c *Case) { c.Hash = "x" },
	} {
		c := base
		edit(&c)
		if CaseHash(c) != h {
			t.Errorf("changing %s changed the hash", name)
		}
	}
	for name, edit := range map[string]func(*Case){
		"id": func(c *Case) { c.ID = "case-b" }, "statement": func(c *Case) { c.Statement += "!" },
		"rubric": func(c *Case) { c.Rubric += "!" }, "capability": func(c *Case) { c.Capability = "x" },
	} {
		c := base
		edit(&c)
		if CaseHash(c) == h {
			t.Errorf("changing %s left the hash", name)
		}
	}
}

// JavaScript sorts keys by UTF-16 units: a character beyond U+FFFF (a
// surrogate pair) sorts before U+E000, unlike in byte order.
func TestCanonicalJSONSortsAsJavaScript(t *testing.T) {
	got, err := canonicalJSON(map[string]any{"b": 1, "a": map[string]any{"z": []any{1, "x", nil}, "\ue000": 1, "😀": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":{\"z\":[1,\"x\",null],\"😀\":2,\"\ue000\":1},\"b\":1}"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
