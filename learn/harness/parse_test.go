package harness

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func given[T any](v T) *T { return &v }

func TestParseReview(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want Review
		err  string
	}{
		{"parses an approved review", `{"approved":true,"rationale":"repeated failure with a fix"}`, Review{true, "repeated failure with a fix"}, ""},
		{"tolerates prose and a code fence", "Sure.\n```json\n{\"approved\":false,\"rationale\":\"thin\"}\n```\nDone.", Review{false, "thin"}, ""},
		{"throws a truncated-reply error when no JSON object completes", `{"approved":true,"rationale":"cut`, Review{}, MsgTruncatedJSON},
		{"an empty reply is truncated", ``, Review{}, MsgTruncatedJSON},
		{"a } before the { is truncated", `} {`, Review{}, MsgTruncatedJSON},
		{"approved is required", `{"rationale":"x"}`, Review{}, "approved: required"},
		{"approved null is missing", `{"approved":null,"rationale":"x"}`, Review{}, "approved: required"},
		{"rationale is required", `{"approved":true}`, Review{}, "rationale: required"},
		{"approved must be a boolean", `{"approved":"true","rationale":"x"}`, Review{}, "approved: must be true or false, got a string"},
		{"rationale must be a string", `{"approved":true,"rationale":1}`, Review{}, "rationale: must be a string, got a number"},
		{"an unknown field is refused", `{"approved":true,"rationale":"x","confidence":0.9}`, Review{}, "confidence: unknown field"},
		{"two objects are refused", `{"approved":true,"rationale":"x"} and {"approved":false,"rationale":"y"}`, Review{}, "more than one JSON value"},
		{"broken JSON is refused", `{"approved":true,,}`, Review{}, "not JSON: invalid character ',' looking for beginning of object key string"},
		{"a rationale of 20000 runes is read", `{"approved":true,"rationale":"` + strings.Repeat("é", 20000) + `"}`, Review{true, strings.Repeat("é", 20000)}, ""},
		{"a rationale of 20001 runes is refused", `{"approved":true,"rationale":"` + strings.Repeat("é", 20001) + `"}`, Review{}, "rationale: longer than 20000 characters (20001)"},
		{"invalid UTF-8 is refused", "{\"approved\":true,\"rationale\":\"\xff\"}", Review{}, "the answer is not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseReview([]byte(c.raw))
			checkErr(t, err, c.err)
			if c.err == "" && got != c.want {
				t.Fatalf("review = %+v, want %+v", got, c.want)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Fatalf("error = %q, want %q", err, want)
	case err != nil:
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %T is not a *ParseError", err)
		}
	}
}

func edits(es ...string) string {
	return `{"id":"refine_1","summary":"one line","edits":[` + strings.Join(es, ",") + `]}`
}

func TestParseProposal(t *testing.T) {
	full := `{"action":"update","kind":"memory","id":"pin-versions","content":"Pin tool versions.","description":"d","reason":"the session repeated it","blastRadius":"project"}`
	cases := []struct {
		name string
		raw  string
		want []Edit
		err  string
	}{
		{"parses a proposal from a code-fenced reply", "```json\n" + edits(full) + "\n```",
			[]Edit{{Action: Update, Kind: KindMemory, ID: "pin-versions", Content: given("Pin tool versions."), Description: given("d"),
				Reason: "the session repeated it", BlastRadius: RadiusProject}}, ""},
		{"still parses legacy-shaped JSON without reason or blastRadius",
			edits(`{"action":"create","kind":"memory","id":"m","content":"x"}`), []Edit{{Action: Create, Kind: KindMemory, ID: "m", Content: given("x")}}, ""},
		{"a field given empty is set, one absent or null is not",
			edits(`{"action":"create","kind":"memory","id":"m","content":"","title":null}`), []Edit{{Action: Create, Kind: KindMemory, ID: "m", Content: given("")}}, ""},
		{"accepts blast_radius (mull's API form) too",
			edits(`{"action":"delete","kind":"memory","id":"m","reason":"stale","blast_radius":"session"}`),
			[]Edit{{Action: Delete, Kind: KindMemory, ID: "m", Reason: "stale", BlastRadius: RadiusSession}}, ""},
		{"blastRadius and blast_radius must agree",
			edits(`{"action":"delete","kind":"memory","id":"m","blastRadius":"general","blast_radius":"session"}`), nil,
			`edits[0].blast_radius: differs from blastRadius ("session" vs "general"); give one`},
		{"edit semantics are Apply's: an unknown action, kind or blast radius passes",
			edits(`{"action":"rename","kind":"tool","id":"Not Kebab","blastRadius":"galaxy"}`),
			[]Edit{{Action: "rename", Kind: "tool", ID: "Not Kebab", BlastRadius: "galaxy"}}, ""},
		{"text is kept as written (not trimmed)", edits(`{"action":"create","kind":"memory","id":"m","content":"  x\n"}`),
			[]Edit{{Action: Create, Kind: KindMemory, ID: "m", Content: given("  x\n")}}, ""},
		{"an empty proposal parses", edits(), []Edit{}, ""},
		{"rejects malformed proposals: id required", `{"summary":"s","edits":[]}`, nil, "id: required"},
		{"summary required", `{"id":"r","edits":[]}`, nil, "summary: required"},
		{"edits required", `{"id":"r","summary":"s"}`, nil, "edits: required (an empty array when there is nothing to change)"},
		{"edits must be an array", `{"id":"r","summary":"s","edits":{}}`, nil, "edits: must be an array, got an object"},
		{"id must be a string", `{"id":7,"summary":"s","edits":[]}`, nil, "id: must be a string, got a number"},
		{"an unknown top-level field", `{"id":"r","summary":"s","edits":[],"scope":"global"}`, nil, "scope: unknown field"},
		{"an unknown edit field names its path", edits(full, full, `{"action":"create","kind":"memory","id":"m","foo":1}`), nil, "edits[2].foo: unknown field"},
		{"the model may not set lifecycle fields", edits(`{"action":"update","kind":"memory","id":"m","reason":"r","archive":true}`), nil, "edits[0].archive: unknown field"},
		{"the model may not set protection", edits(`{"action":"create","kind":"memory","id":"m","content":"x","protection":"pinned"}`), nil, "edits[0].protection: unknown field"},
		{"the model may not set metadata", edits(`{"action":"create","kind":"memory","id":"m","content":"x","metadata":{}}`), nil, "edits[0].metadata: unknown field"},
		{"an edit must be an object", edits(`"create m"`), nil, "edits[0]: must be an object, got a string"},
		{"edit action required", edits(`{"kind":"memory","id":"m"}`), nil, "edits[0].action: required"},
		{"edit kind required", edits(`{"action":"create","id":"m"}`), nil, "edits[0].kind: required"},
		{"edit id required", edits(`{"action":"create","kind":"memory"}`), nil, "edits[0].id: required"},
		{"edit content must be a string", edits(`{"action":"create","kind":"memory","id":"m","content":["a"]}`), nil, "edits[0].content: must be a string, got an array"},
		{"edit reason must be a string", edits(`{"action":"delete","kind":"memory","id":"m","reason":false}`), nil, "edits[0].reason: must be a string, got a boolean"},
		{"a content of 20001 runes is refused", edits(`{"action":"create","kind":"memory","id":"m","content":"` + strings.Repeat("x", 20001) + `"}`), nil,
			"edits[0].content: longer than 20000 characters (20001)"},
		{"an array around the object: the object is read (first { to last })", `[{"id":"r"}]`, nil, "summary: required"},
		{"a JSON string holding braces: the braces are read", `"{}"`, nil, "id: required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseProposal([]byte(c.raw))
			checkErr(t, err, c.err)
			if c.err != "" {
				return
			}
			if got.ID != "refine_1" || got.Summary != "one line" || !reflect.DeepEqual(got.Edits, c.want) {
				t.Fatalf("proposal = %s\nwant edits %s", show(got.Edits), show(c.want))
			}
		})
	}
	t.Run("at most 20 edits", func(t *testing.T) {
		e := `{"action":"create","kind":"memory","id":"m","content":"x"}`
		if p, err := ParseProposal([]byte(edits(strings.Split(strings.Repeat(e+"\n", 20), "\n")[:20]...))); err != nil || len(p.Edits) != 20 {
			t.Fatalf("20 edits: %v", err)
		}
		_, err := ParseProposal([]byte(edits(strings.Split(strings.Repeat(e+"\n", 21), "\n")[:21]...)))
		checkErr(t, err, "edits: at most 20 edits, got 21")
	})
	t.Run("an answer over 1 MiB is refused", func(t *testing.T) {
		_, err := ParseProposal([]byte(strings.Repeat(" ", MaxAnswerBytes+1)))
		checkErr(t, err, fmt.Sprintf("the answer is %d bytes, more than %d", MaxAnswerBytes+1, MaxAnswerBytes))
	})
}

func TestParsePersonProposal(t *testing.T) {
	p, err := ParsePersonProposal([]byte(edits(`{"action":"update","kind":"memory","id":"m","reason":"done","archive":true,"pin":false,"title":"T"}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := Edit{Action: Update, Kind: KindMemory, ID: "m", Reason: "done", Archive: given(true), Pin: given(false), Title: given("T")}
	if !reflect.DeepEqual(p.Edits, []Edit{want}) {
		t.Fatalf("edits %s", show(p.Edits))
	}
	for raw, want := range map[string]string{
		"here: " + edits(): "not JSON: invalid character 'h' looking for beginning of value",
		`[]`:               "the answer must be a JSON object, got an array",
		edits(`{"action":"update","kind":"memory","id":"m","archive":"yes"}`):  "edits[0].archive: must be true or false, got a string",
		edits(`{"action":"update","kind":"memory","id":"m","protection":"x"}`): "edits[0].protection: unknown field",
	} {
		_, err := ParsePersonProposal([]byte(raw))
		checkErr(t, err, want)
	}
}

func show(es []Edit) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "{%s %s %s content=%v desc=%v title=%v reason=%q br=%q archive=%v pin=%v} ", e.Action, e.Kind, e.ID,
			orNil(e.Content), orNil(e.Description), orNil(e.Title), e.Reason, e.BlastRadius, orNil(e.Archive), orNil(e.Pin))
	}
	return b.String()
}

func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
