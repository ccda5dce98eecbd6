package bench

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const validEvidence = `{"completed":true,"summary":"did the task","actions":["checked the state"],"observations":["the state is empty"]}`

// tests/evaluate.spec.ts, describe('parseExecutorEvidence'), and mull's
// caps.
func TestParseEvidence(t *testing.T) {
	t.Run("parses exactly the documented fields and tolerates code fences", func(t *testing.T) {
		ev, err := ParseEvidence("```json\n{\"completed\":true,\"summary\":\"s\",\"actions\":[\"a\"],\"observations\":[\"o\"],\"artifacts\":[{\"name\":\"n\",\"content\":\"c\"}]}\n```")
		want := Evidence{Completed: true, Summary: "s", Actions: []string{"a"}, Observations: []string{"o"}, Artifacts: []Artifact{{"n", "c"}}}
		if err != nil || !reflect.DeepEqual(ev, want) {
			t.Fatalf("got %+v %v", ev, err)
		}
	})
	t.Run("empty lists and no artifacts", func(t *testing.T) {
		ev, err := ParseEvidence(`Here it is: {"completed":false,"summary":"","actions":[],"observations":[]} done`)
		if err != nil || ev.Completed || ev.Actions == nil || ev.Observations == nil || ev.Artifacts != nil {
			t.Fatalf("got %+v %v", ev, err)
		}
	})
	at := func(n int, s string) string { return strings.Repeat(s, n) }
	list := func(n int) string { return "[" + strings.TrimSuffix(at(n, `"a",`), ",") + "]" }
	arts := func(n int) string {
		return "[" + strings.TrimSuffix(at(n, `{"name":"n","content":"c"},`), ",") + "]"
	}
	evidence := func(summary, actions, observations, artifacts string) string {
		s := `{"completed":true,"summary":"` + summary + `","actions":` + actions + `,"observations":` + observations
		if artifacts != "" {
			s += `,"artifacts":` + artifacts
		}
		return s + "}"
	}
	const ok = "(accepted)"
	for _, tc := range []struct {
		name, text, field string
	}{
		{"a summary of 2000", evidence(at(2000, "é"), "[]", "[]", ""), ok},
		{"50 actions and observations", evidence("s", list(50), list(50), ""), ok},
		{"an item of 2000", evidence("s", `["`+at(2000, "x")+`"]`, "[]", ""), ok},
		{"10 artifacts", evidence("s", "[]", "[]", arts(10)), ok},
		{"an artifact of 20000", evidence("s", "[]", "[]", `[{"name":"n","content":"`+at(20000, "x")+`"}]`), ok},
		{"unknown field", `{"completed":true,"summary":"s","actions":[],"observations":[],"extra":1}`, "extra"},
		{"not JSON", "not json", ""},
		{"prose around broken JSON", "sure: {\"completed\": true,", ""},
		{"an array: its first object is taken, as the seed's extractJsonObject does", `[{"completed":true}]`, "summary"},
		{"completed mistyped", `{"completed":"yes","summary":"s","actions":[],"observations":[]}`, "completed"},
		{"completed missing", `{"summary":"s","actions":[],"observations":[]}`, "completed"},
		{"summary missing", `{"completed":true,"actions":[],"observations":[]}`, "summary"},
		{"actions a string", `{"completed":true,"summary":"s","actions":"a","observations":[]}`, "actions"},
		{"observations null", `{"completed":true,"summary":"s","actions":[],"observations":null}`, "observations"},
		{"an action not a string", `{"completed":true,"summary":"s","actions":[1],"observations":[]}`, "actions[0]"},
		{"artifacts null", `{"completed":true,"summary":"s","actions":[],"observations":[],"artifacts":null}`, "artifacts"},
		{"unknown field inside an artifact", `{"completed":true,"summary":"s","actions":[],"observations":[],"artifacts":[{"name":"n","content":"c","path":"/tmp/x"}]}`, "artifacts[0].path"},
		{"an artifact without content", `{"completed":true,"summary":"s","actions":[],"observations":[],"artifacts":[{"name":"n"}]}`, "artifacts[0].content"},
		{"a key given twice", `{"completed":true,"completed":false,"summary":"s","actions":[],"observations":[]}`, ""},
		{"two objects", `{"completed":true} {"summary":"s"}`, ""},
		{"a summary of 2001", evidence(at(2001, "é"), "[]", "[]", ""), "summary"},
		{"51 actions", evidence("s", list(51), "[]", ""), "actions"},
		{"51 observations", evidence("s", "[]", list(51), ""), "observations"},
		{"an item of 2001", evidence("s", "[]", `["`+at(2001, "x")+`"]`, ""), "observations[0]"},
		{"11 artifacts", evidence("s", "[]", "[]", arts(11)), "artifacts"},
		{"an artifact of 20001", evidence("s", "[]", "[]", `[{"name":"n","content":"`+at(20001, "x")+`"}]`), "artifacts[0].content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvidence(tc.text)
			if tc.field == ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Failure != MalformedExecutorJSON || FailureOf(err) != MalformedExecutorJSON {
				t.Fatalf("got %v, want a malformed-executor-json refusal", err)
			}
			if pe.Field != tc.field || tc.field != "" && !strings.Contains(err.Error(), tc.field+": ") {
				t.Fatalf("field %q (%v), want %q", pe.Field, err, tc.field)
			}
		})
	}
}

// tests/evaluate.spec.ts, describe('parseReviewerScore') and the failure
// reasons of describe('failure conversion').
func TestParseVerdict(t *testing.T) {
	v, err := ParseVerdict(`{"score":82,"feedback":"specific improvement"}`)
	if err != nil || v != (Verdict{82, "specific improvement"}) {
		t.Fatalf("got %+v %v", v, err)
	}
	v, err = ParseVerdict("```json\n{\"score\":0,\"feedback\":\"  trimmed \\n\"}\n```")
	if err != nil || v != (Verdict{0, "trimmed"}) {
		t.Fatalf("got %+v %v", v, err)
	}
	if v, err = ParseVerdict(`{"score":100,"feedback":"f"}`); err != nil || v.Score != 100 {
		t.Fatalf("100: %+v %v", v, err)
	}
	if v, err = ParseVerdict(`{"score":72.5,"feedback":"f"}`); err != nil || v.Score != 72.5 {
		t.Fatalf("72.5: %+v %v", v, err)
	}
	for _, tc := range []struct {
		text  string
		want  FailureReason
		field string
	}{
		{`{"score":-1,"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":-0.01,"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":101,"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":100.01,"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":1e400,"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":null,"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":"82","feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"feedback":"f"}`, InvalidReviewerScore, "score"},
		{`{"score":50,"feedback":""}`, EmptyReviewerFeedback, "feedback"},
		{`{"score":50,"feedback":"   "}`, EmptyReviewerFeedback, "feedback"},
		{`{"score":50,"feedback":7}`, EmptyReviewerFeedback, "feedback"},
		{`{"score":50}`, EmptyReviewerFeedback, "feedback"},
		{`reviewer prose`, MalformedReviewerJSON, ""},
		{`{"score":50,"feedback":"f"`, MalformedReviewerJSON, ""},
		{`{"score":50,"feedback":"f","reasoning":"r"}`, MalformedReviewerJSON, "reasoning"},
		{`{"score":50,"feedback":"` + strings.Repeat("x", 2001) + `"}`, MalformedReviewerJSON, "feedback"},
	} {
		_, err := ParseVerdict(tc.text)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Failure != tc.want || pe.Field != tc.field || !strings.HasPrefix(err.Error(), string(tc.want)+": ") {
			t.Errorf("%.60s: got %v, want %s on %q", tc.text, err, tc.want, tc.field)
		}
	}
	if _, err := ParseVerdict(`{"score":50,"feedback":"` + strings.Repeat("x", 2000) + `"}`); err != nil {
		t.Errorf("feedback of 2000: %v", err)
	}
}

func TestFailureOfOtherErrors(t *testing.T) {
	if FailureOf(errors.New("x")) != "" || FailureOf(nil) != "" {
		t.Fatal("FailureOf of a plain error")
	}
}
