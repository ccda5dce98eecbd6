package retro_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
)

// example is the example answer inside Prompt.
func example(t *testing.T) retro.Output {
	t.Helper()
	_, rest, ok := strings.Cut(retro.Prompt, "\nExample:\n")
	if !ok {
		t.Fatal("Prompt has no example")
	}
	js, _, ok := strings.Cut(rest, "\nThe library and then the evidence follow.")
	if !ok {
		t.Fatal("Prompt's example is not followed by the evidence line")
	}
	var o retro.Output
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("Prompt's example does not decode: %v", err)
	}
	return o
}

func TestPrompt(t *testing.T) {
	if !strings.HasPrefix(retro.Prompt, "mull-prompt: retro_session v2\n") {
		t.Errorf("Prompt does not start with its type line: %q", retro.Prompt[:40])
	}
	if !strings.Contains(retro.Prompt, "json") {
		t.Error("Prompt lacks the word json, which DeepSeek's JSON mode needs")
	}
	for _, key := range []string{"lessons", "facts", "resources", "methods", "handoff", "playbooks", "supersede", "proposal"} {
		if !strings.Contains(retro.Prompt, `"`+key+`"`) {
			t.Errorf("Prompt's schema lacks %q", key)
		}
	}
	o := example(t)
	if err := o.Validate(); err != nil {
		t.Errorf("Prompt's example fails validation: %v", err)
	}
	if len(o.Lessons) != 1 || len(o.Handoff) != 3 || len(o.Playbooks) != 1 || len(o.Supersede) != 1 || len(o.Proposal) != 0 ||
		len(o.Facts) != 2 || o.Facts[0].Supersedes[0].ID != 12 || o.Facts[1].Repeats.ID != 31 || o.Supersede[0].ID.ID != 27 {
		t.Errorf("example decoded to %+v", o)
	}
	if errs := retro.CheckEntries(o); len(errs) != 0 {
		t.Errorf("Prompt's example has bad entries: %v", errs)
	}
}

// structural problems fail the whole answer (a retry can fix them); every
// other one is an entry's, refused alone.
var structural = map[string]bool{"13 facts": true, "handoff of 2 lines": true, "handoff of 6 lines": true,
	"4 playbooks": true, "two proposals": true}

func TestValidateNamesTheField(t *testing.T) {
	long := strings.Repeat("x", 401)
	tests := []struct {
		name  string
		edit  func(o *retro.Output)
		field string
	}{
		{"lesson without arrows", func(o *retro.Output) { o.Lessons[0].Text = "tests failed, fixed them" }, "lessons[0].text"},
		{"lesson with two parts", func(o *retro.Output) { o.Lessons[0].Text = "error -> fix" }, "lessons[0].text"},
		{"lesson with an empty part", func(o *retro.Output) { o.Lessons[0].Text = "error ->  -> fix" }, "lessons[0].text"},
		{"lesson too long", func(o *retro.Output) { o.Lessons[0].Text = "a -> b -> " + long }, "lessons[0].text"},
		{"lesson importance 11", func(o *retro.Output) { o.Lessons[0].Importance = 11 }, "lessons[0].importance"},
		{"lesson importance -1", func(o *retro.Output) { o.Lessons[0].Importance = -1 }, "lessons[0].importance"},
		{"src user", func(o *retro.Output) { o.Facts[0].Src = memory.SrcUser }, "facts[0].src"},
		{"blank fact", func(o *retro.Output) { o.Facts[0].Text = "  " }, "facts[0].text"},
		{"one-rune fact", func(o *retro.Output) { o.Facts[0].Text = "x" }, "facts[0].text"},
		{"two-line fact", func(o *retro.Output) { o.Facts[0].Text = "uses pnpm\n## HANDOFF" }, "facts[0].text"},
		{"13 facts", func(o *retro.Output) {
			for range 12 {
				o.Facts = append(o.Facts, retro.Entry{Text: "another fact"})
			}
		}, "facts"},
		{"resource without pipes", func(o *retro.Output) { o.Resources[0].Text = "River docs at riverqueue.com" }, "resources[0].text"},
		{"resource without use", func(o *retro.Output) { o.Resources[0].Text = "River | https://riverqueue.com | " }, "resources[0].text"},
		{"method with four parts", func(o *retro.Output) { o.Methods[0].Text = "a -> b -> c -> d" }, "methods[0].text"},
		{"handoff of 2 lines", func(o *retro.Output) { o.Handoff = o.Handoff[:2] }, "handoff"},
		{"handoff of 6 lines", func(o *retro.Output) { o.Handoff = append(o.Handoff, "d", "e", "f") }, "handoff"},
		{"blank handoff line", func(o *retro.Output) { o.Handoff[1] = " " }, "handoff[1]"},
		{"slug not kebab", func(o *retro.Output) { o.Playbooks[0].Slug = "Add_DB_Migration" }, "playbooks[0].slug"},
		{"slug double dash", func(o *retro.Output) { o.Playbooks[0].Slug = "add--migration" }, "playbooks[0].slug"},
		{"slug trailing dash", func(o *retro.Output) { o.Playbooks[0].Slug = "add-" }, "playbooks[0].slug"},
		{"slug missing", func(o *retro.Output) { o.Playbooks[0].Slug = "" }, "playbooks[0].slug"},
		{"slug repeated", func(o *retro.Output) { o.Playbooks = append(o.Playbooks, o.Playbooks[0]) }, "playbooks[1].slug"},
		{"no steps", func(o *retro.Output) { o.Playbooks[0].Steps = nil }, "playbooks[0].steps"},
		{"blank step", func(o *retro.Output) { o.Playbooks[0].Steps[2] = "" }, "playbooks[0].steps[2]"},
		{"4 playbooks", func(o *retro.Output) {
			o.Playbooks = []retro.Playbook{{"a", []string{"do"}}, {"b", []string{"do"}}, {"c", []string{"do"}}, {"d", []string{"do"}}}
		}, "playbooks"},
		{"supersede kind", func(o *retro.Output) { o.Supersede[0] = retro.Supersede{Kind: "fact", Text: "the repo uses npm"} }, "supersede[0].kind"},
		{"supersede preferences", func(o *retro.Output) {
			o.Supersede[0] = retro.Supersede{Kind: "preferences", Text: "the repo uses npm"}
		}, "supersede[0].kind"},
		{"supersede too short", func(o *retro.Output) { o.Supersede[0] = retro.Supersede{Kind: "facts", Text: "npm."} }, "supersede[0].text"},
		{"supersede id and text", func(o *retro.Output) { o.Supersede[0].Text = "the repo uses npm" }, "supersede[0]"},
		{"supersede why too long", func(o *retro.Output) { o.Supersede[0].Why = strings.Repeat("w", 201) }, "supersede[0].why"},
		{"NUL in a why", func(o *retro.Output) { o.Supersede[0].Why = "gone\x00" }, "supersede[0].why"},
		{"four supersedes", func(o *retro.Output) {
			o.Facts[0].Supersedes = []retro.Ref{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
		}, "facts[0].supersedes"},
		{"two proposals", func(o *retro.Output) {
			o.Proposal = retro.Proposals{{Summary: "one idea"}, {Summary: "two ideas"}}
		}, "proposal"},
		{"NUL in a lesson", func(o *retro.Output) { o.Lessons[0].Text = "a -> b\x00 -> c" }, "lessons[0].text"},
		{"invalid UTF-8 in a fact", func(o *retro.Output) { o.Facts[0].Text = "uses \xff pnpm" }, "facts[0].text"},
		{"NUL in a handoff line", func(o *retro.Output) { o.Handoff[2] = "next\x00" }, "handoff[2]"},
		{"NUL in a step", func(o *retro.Output) { o.Playbooks[0].Steps[0] = "run\x00 it" }, "playbooks[0].steps[0]"},
		{"NUL in a slug", func(o *retro.Output) { o.Playbooks[0].Slug = "a\x00b" }, "playbooks[0].slug"},
		{"NUL in a supersede", func(o *retro.Output) { o.Supersede[0] = retro.Supersede{Kind: "facts", Text: "the repo\x00 uses npm"} }, "supersede[0].text"},
		{"NUL in a proposal detail", func(o *retro.Output) {
			o.Proposal = retro.Proposals{{Summary: "idea", Detail: "d\x00"}}
		}, "proposal.detail"},
		{"proposal without summary", func(o *retro.Output) { o.Proposal = retro.Proposals{{Detail: "details"}} }, "proposal.summary"},
		{"proposal detail too long", func(o *retro.Output) {
			o.Proposal = retro.Proposals{{Summary: "idea", Detail: strings.Repeat("d", 2001)}}
		}, "proposal.detail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := example(t)
			tt.edit(&o)
			err := o.Validate()
			if !structural[tt.name] {
				// An entry's own problem: the answer is valid, and the
				// entry alone is refused (by Plan, as CheckEntries says).
				if err != nil {
					t.Fatalf("Validate() = %v; an entry's problem must not fail the answer", err)
				}
				errs := retro.CheckEntries(o)
				if len(errs) != 1 {
					t.Fatalf("CheckEntries() = %v, want one problem", errs)
				}
				err = errs[0]
			}
			var fe *memory.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *memory.FieldError", err)
			}
			if fe.Field != tt.field {
				t.Errorf("Validate() names %q (%v), want %q", fe.Field, err, tt.field)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *retro.Output)
	}{
		{"empty sections", func(o *retro.Output) { *o = retro.Output{Handoff: o.Handoff} }},
		{"five handoff lines", func(o *retro.Output) { o.Handoff = append(o.Handoff, "d", "e") }},
		{"unicode arrows", func(o *retro.Output) {
			o.Lessons[0].Text = "构建失败 → 缺少依赖 → 先运行 go mod download"
		}},
		{"resource without a link", func(o *retro.Output) { o.Resources[0].Text = "mull CLI |  | inspect memories" }},
		{"one proposal", func(o *retro.Output) { o.Proposal = retro.Proposals{{Summary: "add a lint step"}} }},
		{"slug with digits", func(o *retro.Output) { o.Playbooks[0].Slug = "pg-16-upgrade" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := example(t)
			tt.edit(&o)
			if err := o.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

func TestProposalJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{`null`, 0, false},
		{`{"summary":"add a lint step","detail":"run go vet"}`, 1, false},
		{`[{"summary":"a"},{"summary":"b"}]`, 2, false},
		{`{"summary":"x","extra":1}`, 0, true},
		{`"add a lint step"`, 0, true},
	}
	for _, tt := range tests {
		var o retro.Output
		err := json.Unmarshal([]byte(`{"proposal":`+tt.in+`}`), &o)
		if (err != nil) != tt.wantErr || len(o.Proposal) != tt.want {
			t.Errorf("proposal %s: got %d proposals, err %v", tt.in, len(o.Proposal), err)
		}
	}
	b, err := json.Marshal(retro.Output{Proposal: retro.Proposals{{Summary: "s"}}})
	if err != nil || !strings.Contains(string(b), `"proposal":{"summary":"s"}`) {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

func TestAdditive(t *testing.T) {
	o := example(t)
	o.Proposal = retro.Proposals{{Summary: "add a lint step"}}
	got := retro.Additive(o)
	if len(got.Playbooks) != 0 || len(got.Supersede) != 0 || len(got.Proposal) != 0 {
		t.Errorf("Additive kept a non-additive section: %+v", got)
	}
	if len(got.Lessons) != len(o.Lessons) || len(got.Facts) != len(o.Facts) || len(got.Resources) != len(o.Resources) ||
		len(got.Methods) != len(o.Methods) || strings.Join(got.Handoff, "|") != strings.Join(o.Handoff, "|") {
		t.Errorf("Additive lost an additive section: %+v", got)
	}
	if got.Facts[0].Supersedes != nil || got.Facts[1].Repeats.ID != 31 || o.Facts[0].Supersedes == nil {
		t.Errorf("Additive kept an entry's supersedes, lost its repeats or changed its input: %+v", got.Facts)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Additive(example) fails validation: %v", err)
	}
}
