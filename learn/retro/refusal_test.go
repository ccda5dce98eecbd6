package retro_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
)

// A rejected entry is kept as its section, its field and the check's
// reason: never its text, nor a value of it that a check quoted.
func TestRefusalsKeepNoText(t *testing.T) {
	out := retro.Output{
		Lessons:   []retro.Entry{{Text: "the token " + secret + " leaked, no arrows here"}},
		Facts:     []retro.Entry{{Text: "fine fact about the build"}, {Text: "a fact with a bad source", Src: memory.Src(instruction)}},
		Playbooks: []retro.Playbook{{Slug: secret, Steps: []string{"make release"}}},
		Supersede: []retro.Supersede{{Kind: instruction, Text: "some old fact"}},
	}
	c := retro.Plan(out, nil, src, now)
	got := c.Refusals()
	want := []retro.Refusal{ // in Plan's order: supersede first
		{Section: "supersede", Field: "supersede[0]"},
		{Section: "lessons", Field: "lessons[0]"},
		{Section: "facts", Field: "facts[1]"},
		{Section: "playbooks", Field: "playbooks[0]"},
	}
	if len(got) != len(c.Rejected) || len(got) != len(want) {
		t.Fatalf("Refusals = %+v, want %d (one per rejected: %+v)", got, len(want), c.Rejected)
	}
	b, _ := json.Marshal(got)
	for _, leak := range []string{secret, instruction, "ignore previous", "ghp_", "leaked"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the refusals hold %q: %s", leak, b)
		}
	}
	for i, w := range want {
		g := got[i]
		if g.Section != w.Section || g.Field != w.Field || g.Reason == "" {
			t.Errorf("refusal %d = %+v, want section %s field %s and a reason", i, g, w.Section, w.Field)
		}
	}
	if !strings.Contains(got[1].Reason, "a -> b -> c") {
		t.Errorf("the format check's hint is lost: %q", got[1].Reason)
	}
	if !strings.Contains(got[3].Reason, `"…" is not kebab-case`) {
		t.Errorf("the slug's check should read with its value masked: %q", got[3].Reason)
	}
}

// A reason the gate still objects to is withheld whole; a long one is cut.
func TestRefusalWithheld(t *testing.T) {
	r := retro.Rejected{Field: "facts[0]", Err: &memory.FieldError{Field: "facts[0].text", Problem: "token " + secret}}.Refusal()
	if strings.Contains(r.Reason, "ghp_") || !strings.Contains(r.Reason, "withheld") {
		t.Errorf("Reason = %q, want it withheld", r.Reason)
	}
	r = retro.Rejected{Field: "facts[0]", Err: &memory.FieldError{Field: "facts[0].text", Problem: strings.Repeat("long ", 200)}}.Refusal()
	if n := len([]rune(r.Reason)); n > retro.MaxReasonRunes {
		t.Errorf("Reason is %d runes, at most %d", n, retro.MaxReasonRunes)
	}
}

// Dropped ids keep their field, id and reason, never what the model wrote
// in place of an id; held texts their kind, field and the gate's reason.
func TestDroppedAndHeldRows(t *testing.T) {
	var ref retro.Ref
	if err := json.Unmarshal([]byte(`"`+secret+`"`), &ref); err != nil {
		t.Fatal(err)
	}
	out := retro.Output{
		Facts:     []retro.Entry{{Text: "the build runs on port 8081", Repeats: retro.Ref{ID: 77}, Supersedes: []retro.Ref{ref}}},
		Playbooks: []retro.Playbook{{Slug: "deploy", Steps: []string{instruction}}},
	}
	c := retro.Plan(out, nil, src, now)
	dropped, held := c.DroppedRows(), c.HeldRows()
	b, _ := json.Marshal(map[string]any{"dropped": dropped, "held": held})
	for _, leak := range []string{secret, "ghp_", instruction, "x.example"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the rows hold %q: %s", leak, b)
		}
	}
	want := []retro.DroppedRow{{Field: "facts[0].repeats", ID: 77, Reason: retro.DropUnknown}, {Field: "facts[0].supersedes[0]", Reason: retro.DropMalformed}}
	if len(dropped) != 2 || dropped[0] != want[0] || dropped[1] != want[1] {
		t.Errorf("DroppedRows = %+v, want %+v", dropped, want)
	}
	if len(held) != 1 || held[0].Kind != "playbook" || held[0].Field != "playbooks[0]" || held[0].Reason == "" {
		t.Errorf("HeldRows = %+v, want the playbook's", held)
	}
}
