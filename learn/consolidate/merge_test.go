package consolidate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
)

// promptExample is the example input's memories and the example answer
// inside MergePrompt.
func promptExample(t *testing.T) ([]consolidate.Cluster, map[int64]memory.Memory, consolidate.MergeOutput) {
	t.Helper()
	_, rest, ok := strings.Cut(consolidate.MergePrompt, "\nExample input:\n")
	if !ok {
		t.Fatal("MergePrompt has no example input")
	}
	input, rest, ok := strings.Cut(rest, "Example answer:\n")
	if !ok {
		t.Fatal("MergePrompt has no example answer")
	}
	answer, _, ok := strings.Cut(rest, "\nThe clusters follow.")
	if !ok {
		t.Fatal("MergePrompt's example is not followed by the clusters line")
	}
	chunk := []consolidate.Cluster{
		{Kind: memory.Fact, IDs: []int64{17, 23}}, {Kind: memory.Fact, IDs: []int64{30, 41}}, {Kind: memory.Lesson, IDs: []int64{52, 58}},
	}
	ms := byID(
		mem(17, memory.Fact, "use pnpm not npm in this repo"), mem(23, memory.Fact, "This repo uses pnpm, not npm."),
		mem(30, memory.Fact, "postgres listens on port 5433 in dev"), mem(41, memory.Fact, "the dev database is postgres 16"),
		mem(52, memory.Lesson, "flaky test -> shared state -> rerun it alone with go test -race -count=1"),
		mem(58, memory.Lesson, "flaky test -> shared state -> rerun it alone with -count=1"),
	)
	if got := consolidate.MergeInput(chunk, ms); got != input {
		t.Errorf("MergeInput renders the example as\n%s\nwant\n%s", got, input)
	}
	var o consolidate.MergeOutput
	dec := json.NewDecoder(strings.NewReader(answer))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("MergePrompt's example answer does not decode: %v", err)
	}
	return chunk, ms, o
}

func TestMergePrompt(t *testing.T) {
	if !strings.HasPrefix(consolidate.MergePrompt, "mull-prompt: consolidate_merge v1\n") {
		t.Errorf("MergePrompt does not start with its type line: %q", consolidate.MergePrompt[:40])
	}
	if !strings.Contains(consolidate.MergePrompt, "json") {
		t.Error("MergePrompt lacks the word json, which DeepSeek's JSON mode needs")
	}
	chunk, ms, o := promptExample(t)
	if err := o.Validate(len(chunk)); err != nil {
		t.Errorf("the example answer fails validation: %v", err)
	}
	c := consolidate.PlanMerges(o, chunk, ms, src, now)
	if len(c.Merged) != 3 || len(c.Rejected) != 0 {
		t.Errorf("the example answer plans %d merges, rejects %+v; want all 3 accepted", len(c.Merged), c.Rejected)
	}
}

func TestMergeInput(t *testing.T) {
	ms := byID(mem(3, memory.Fact, "uses pnpm"), mem(9, memory.Fact, "Uses pnpm.\nreally"), mem(4, memory.Method, "a -> b -> c"), mem(5, memory.Method, "a->b->c"))
	got := consolidate.MergeInput([]consolidate.Cluster{{Kind: memory.Fact, IDs: []int64{3, 9}}, {Kind: memory.Method, IDs: []int64{4, 5}}}, ms)
	want := "## cluster 1 (fact)\n- [id 3] uses pnpm\n- [id 9] Uses pnpm. really\n## cluster 2 (method)\n- [id 4] a -> b -> c\n- [id 5] a->b->c\n"
	if got != want {
		t.Errorf("MergeInput =\n%s\nwant\n%s", got, want)
	}
}

func TestMergeOutputValidate(t *testing.T) {
	long := strings.Repeat("x", consolidate.MaxMergeRunes+1)
	tests := []struct {
		name   string
		merges []consolidate.Merge
		field  string
		msg    string
	}{
		{"none", nil, "", ""},
		// A text's own problem is PlanMerges' to refuse, that merge alone.
		{"blank text", []consolidate.Merge{{1, "  "}}, "", ""},
		{"two lines", []consolidate.Merge{{1, "uses pnpm\n## cluster 2"}}, "", ""},
		{"too long", []consolidate.Merge{{3, long}}, "", ""},
		{"NUL", []consolidate.Merge{{3, "a\x00b"}}, "", ""},
		{"all four", []consolidate.Merge{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}, "", ""},
		{"600 runes", []consolidate.Merge{{1, strings.Repeat("é", consolidate.MaxMergeRunes)}}, "", ""},
		{"out of range", []consolidate.Merge{{1, "a"}, {2, "b"}, {9, "c"}}, "merges[2].cluster", "merges[2].cluster: 9 is not a cluster of this chunk (1..4)"},
		{"zero", []consolidate.Merge{{0, "a"}}, "merges[0].cluster", ""},
		{"repeated", []consolidate.Merge{{2, "a"}, {2, "b"}}, "merges[1].cluster", "merges[1].cluster: 2 repeats merges[0]"},
		{"more merges than clusters", []consolidate.Merge{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}, {4, "e"}}, "merges", ""},
	}
	for _, tt := range tests {
		err := consolidate.MergeOutput{Merges: tt.merges}.Validate(4)
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: Validate = %v", tt.name, err)
			}
			continue
		}
		var fe *memory.FieldError
		switch {
		case !errors.As(err, &fe):
			t.Errorf("%s: Validate = %v, want a *memory.FieldError", tt.name, err)
		case fe.Field != tt.field:
			t.Errorf("%s: Validate names %q (%v), want %q", tt.name, fe.Field, err, tt.field)
		case tt.msg != "" && err.Error() != tt.msg:
			t.Errorf("%s: Validate = %q, want %q", tt.name, err, tt.msg)
		}
	}
}

func TestMergeReplyValidate(t *testing.T) {
	var r consolidate.MergeReply
	if err := json.Unmarshal([]byte(`{"merges":[{"cluster":7,"text":"x y"},{"cluster":2,"text":"z"}]}`), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("MergeReply.Validate = %v", err)
	}
	if err := consolidate.MergeOutput(r).Validate(4); err == nil {
		t.Error("cluster 7 of a 4-cluster chunk passed")
	}
	r.Merges[1].Cluster = 7
	if err := r.Validate(); err == nil {
		t.Error("a repeated cluster passed MergeReply.Validate")
	}
}
