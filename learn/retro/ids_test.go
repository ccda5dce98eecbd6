package retro_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
)

// An id is untrusted input: whatever the model writes decodes, and what is
// not an id is kept as a malformed Ref for Plan to drop, so one bad id
// never fails the answer (and the call is not paid for again).
func TestRefDecodes(t *testing.T) {
	for _, c := range []struct {
		in        string
		id        int64
		malformed bool
	}{
		{`12`, 12, false}, {`"12"`, 12, false}, {`"id 12"`, 12, false}, {`"[id 12]"`, 12, false}, {`"#12"`, 12, false},
		{`"ID 7"`, 7, false}, {`null`, 0, false},
		{`0`, 0, true}, {`-3`, 0, true}, {`1.5`, 0, true}, {`"twelve"`, 0, true}, {`"12; 13"`, 0, true},
		{`true`, 0, true}, {`{"id": 12}`, 0, true}, {`[12]`, 0, true}, {`99999999999999999999`, 0, true},
	} {
		var r retro.Ref
		if err := json.Unmarshal([]byte(c.in), &r); err != nil {
			t.Errorf("%s: %v; an id must never fail the answer", c.in, err)
			continue
		}
		if r.ID != c.id || r.Malformed() != c.malformed {
			t.Errorf("%s decoded to %+v (malformed %t), want id %d malformed %t", c.in, r, r.Malformed(), c.id, c.malformed)
		}
	}
	// A whole answer, decoded strictly as llm.CompleteJSON does.
	js := `{"facts": [{"text": "uses pnpm", "repeats": "id 3", "supersedes": [4, "x"]}], "supersede": [{"id": "nope", "why": "gone"}]}`
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	var o retro.Output
	if err := dec.Decode(&o); err != nil {
		t.Fatal(err)
	}
	if o.Facts[0].Repeats.ID != 3 || o.Facts[0].Supersedes[0].ID != 4 || !o.Facts[0].Supersedes[1].Malformed() || !o.Supersede[0].ID.Malformed() {
		t.Fatalf("decoded %+v", o)
	}
	b, err := json.Marshal(o.Facts[0])
	if err != nil || !strings.Contains(string(b), `"repeats":3`) || !strings.Contains(string(b), `"supersedes":[4,"x"]`) {
		t.Fatalf("marshal %s, %v", b, err)
	}
}

// The model's ids decide repeats and supersedes; mull's text check is the
// fallback when it names none (or only ids that are dropped). Every id is
// checked against the library the prompt showed: what was not shown, what
// is not an id and what is no longer live is dropped with its reason.
func TestPlanIDs(t *testing.T) {
	gone := mem(5, memory.Fact, "staging runs on host s1")
	gone.InvalidAt = now.Add(-time.Minute) // invalidated after the library was published
	existing := []memory.Memory{
		mem(1, memory.Fact, "the repo uses npm"),
		mem(2, memory.Lesson, "go test failed -> wrong dir -> cd to the module root"),
		mem(3, memory.Fact, "CI runs on Postgres 15"),
		mem(4, memory.Fact, "deploys go through make ship"),
		gone,
	}
	shown := map[int64]memory.Kind{1: memory.Fact, 2: memory.Lesson, 3: memory.Fact, 4: memory.Fact, 5: memory.Fact}
	// 9 is another workspace's memory, 6 one newer than the digest: neither
	// was shown.
	id := func(n int64) retro.Ref { return retro.Ref{ID: n} }
	bad := retro.Ref{Raw: `"first one"`}
	type inv struct {
		id int64
		by int
	}
	tests := []struct {
		name       string
		out        retro.Output
		add        []string
		bump       []int64
		invalidate []inv
		dropped    map[string]int
		byID       [2]int // repeats, supersedes
	}{
		{name: "repeat by id bumps though the text differs",
			out:  retro.Output{Facts: []retro.Entry{{Text: "npm is the package manager here", Repeats: id(1)}}},
			bump: []int64{1}, byID: [2]int{1, 0}},
		{name: "repeat of another kind bumps it",
			out:  retro.Output{Lessons: []retro.Entry{{Text: "go test failed -> ran it from /tmp -> run it in the module root", Repeats: id(2)}}},
			bump: []int64{2}, byID: [2]int{1, 0}},
		{name: "repeat of an id not shown falls back to the text check",
			out:  retro.Output{Facts: []retro.Entry{{Text: "the repo uses npm", Repeats: id(9)}, {Text: "redis is at port 6380", Repeats: id(6)}}},
			bump: []int64{1}, add: []string{"redis is at port 6380"}, dropped: map[string]int{retro.DropUnknown: 2}},
		{name: "malformed repeat falls back to the text check",
			out:  retro.Output{Facts: []retro.Entry{{Text: "the repo uses npm", Repeats: bad}}},
			bump: []int64{1}, dropped: map[string]int{retro.DropMalformed: 1}},
		{name: "repeat of a memory invalidated since is dropped, the entry added",
			out: retro.Output{Facts: []retro.Entry{{Text: "staging runs on host s1", Repeats: id(5)}}},
			add: []string{"staging runs on host s1"}, dropped: map[string]int{retro.DropNotLive: 1}},
		{name: "supersedes by id invalidates and links the new entry",
			out: retro.Output{Facts: []retro.Entry{{Text: "the CI database is Postgres 16", Supersedes: []retro.Ref{id(3)}}}},
			add: []string{"the CI database is Postgres 16"}, invalidate: []inv{{3, 0}}, byID: [2]int{0, 1}},
		{name: "supersedes drops the ids it may not name and keeps the rest",
			out: retro.Output{Facts: []retro.Entry{{Text: "deploys go through the release workflow", Supersedes: []retro.Ref{id(9), bad, id(4)}}}},
			add: []string{"deploys go through the release workflow"}, invalidate: []inv{{4, 0}}, byID: [2]int{0, 1},
			dropped: map[string]int{retro.DropUnknown: 1, retro.DropMalformed: 1}},
		{name: "an entry that repeats cannot supersede",
			out:  retro.Output{Facts: []retro.Entry{{Text: "npm it is", Repeats: id(1), Supersedes: []retro.Ref{id(3)}}}},
			bump: []int64{1}, byID: [2]int{1, 0}, dropped: map[string]int{retro.DropConflict: 1}},
		{name: "a rejected entry decides nothing",
			out:     retro.Output{Lessons: []retro.Entry{{Text: "no arrows here", Repeats: id(2), Supersedes: []retro.Ref{id(3)}}}},
			dropped: map[string]int{retro.DropRefused: 2}},
		{name: "an instruction-like entry decides nothing",
			out: retro.Output{Facts: []retro.Entry{{Text: instruction, Supersedes: []retro.Ref{id(1), id(3), id(4)}}}},
			add: []string{instruction}, dropped: map[string]int{retro.DropRefused: 3}},
		// The section goes first; the entry is then linked by similarity.
		{name: "one memory superseded twice is invalidated once",
			out: retro.Output{Facts: []retro.Entry{{Text: "CI runs on Postgres 16", Supersedes: []retro.Ref{id(3)}}},
				Supersede: []retro.Supersede{{ID: id(3), Why: "upgraded"}}},
			add: []string{"CI runs on Postgres 16"}, invalidate: []inv{{3, 0}}, byID: [2]int{0, 1}, dropped: map[string]int{retro.DropNotLive: 1}},
		{name: "supersede section by id",
			out:        retro.Output{Supersede: []retro.Supersede{{ID: id(4), Why: "make ship was removed"}, {ID: id(9)}, {ID: bad}}},
			invalidate: []inv{{4, -1}}, byID: [2]int{0, 1}, dropped: map[string]int{retro.DropUnknown: 1, retro.DropMalformed: 1}},
		{name: "no ids: the text check decides, as before",
			out:  retro.Output{Facts: facts("The repo uses NPM.", "a new fact about the repo")},
			bump: []int64{1}, add: []string{"a new fact about the repo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := retro.PlanShown(tt.out, existing, shown, src, now)
			var added []string
			for _, m := range c.Add {
				added = append(added, m.Text)
			}
			if !reflect.DeepEqual(added, tt.add) {
				t.Errorf("Add = %q, want %q", added, tt.add)
			}
			if !reflect.DeepEqual(c.Bump, tt.bump) {
				t.Errorf("Bump = %v, want %v", c.Bump, tt.bump)
			}
			var got []inv
			for _, i := range c.Invalidate {
				got = append(got, inv{i.ID, i.By})
			}
			if !reflect.DeepEqual(got, tt.invalidate) {
				t.Errorf("Invalidate = %v, want %v", got, tt.invalidate)
			}
			if d := c.DroppedCounts(); !reflect.DeepEqual(d, tt.dropped) {
				t.Errorf("Dropped = %v (%+v), want %v", d, c.Dropped, tt.dropped)
			}
			if [2]int{c.RepeatsByID, c.SupersedesByID} != tt.byID {
				t.Errorf("by id: %d repeats, %d supersedes; want %v", c.RepeatsByID, c.SupersedesByID, tt.byID)
			}
		})
	}
	// Plan, with no library shown, drops every id as unknown.
	c := retro.Plan(retro.Output{Facts: []retro.Entry{{Text: "npm is used", Repeats: id(1)}}}, existing, src, now)
	if c.DroppedCounts()[retro.DropUnknown] != 1 || len(c.Bump) != 0 || len(c.Add) != 1 {
		t.Errorf("Plan without a library: %+v", c)
	}
}

// The reason an id's invalidation carries passes the trust gate and fits
// memory.MaxReasonRunes, with the job's id first.
func TestPlanSupersedeReason(t *testing.T) {
	existing := []memory.Memory{mem(1, memory.Fact, "the repo uses npm"), mem(2, memory.Fact, "tokens live in .env")}
	shown := map[int64]memory.Kind{1: memory.Fact, 2: memory.Fact}
	out := retro.Output{Supersede: []retro.Supersede{
		{ID: retro.Ref{ID: 1}, Why: "switched to pnpm in the November cleanup of the whole build, see the PR"},
		{ID: retro.Ref{ID: 2}, Why: "moved, the old one was " + secret},
	}}
	c := retro.PlanShown(out, existing, shown, src, now)
	if len(c.Invalidate) != 2 {
		t.Fatalf("Invalidate = %+v", c.Invalidate)
	}
	for _, i := range c.Invalidate {
		if n := len([]rune(i.Reason)); n > memory.MaxReasonRunes || !strings.HasPrefix(i.Reason, "retro job 42: ") {
			t.Errorf("reason %q (%d runes): want the job first, at most %d runes", i.Reason, n, memory.MaxReasonRunes)
		}
		if strings.Contains(i.Reason, "ghp_") {
			t.Errorf("reason %q keeps a credential", i.Reason)
		}
	}
	// An instruction as the reason: held in quarantine, nothing invalidated.
	c = retro.PlanShown(retro.Output{Supersede: []retro.Supersede{{ID: retro.Ref{ID: 1}, Why: instruction}}}, existing, shown, src, now)
	if len(c.Invalidate) != 0 || len(c.Held) != 1 || c.DroppedCounts()[retro.DropRefused] != 1 {
		t.Errorf("instruction as reason: %+v", c)
	}
	// The text form keeps its why too, through the same gate.
	c = retro.PlanShown(retro.Output{Supersede: []retro.Supersede{{Kind: "facts", Text: "the repo uses npm", Why: "switched to pnpm"}}}, existing, shown, src, now)
	if len(c.Invalidate) != 1 || c.Invalidate[0].Reason != "retro job 42: switched to pnpm" {
		t.Errorf("text-form supersede: %+v", c.Invalidate)
	}
	// No why: mull's own reason.
	c = retro.PlanShown(retro.Output{Facts: []retro.Entry{{Text: "the repo uses pnpm", Supersedes: []retro.Ref{{ID: 1}}}}}, existing, shown, src, now)
	if len(c.Invalidate) != 1 || c.Invalidate[0].Reason != retro.SupersedeReason(src) || c.Invalidate[0].Reason != "superseded by retro job 42" {
		t.Errorf("reason without why: %+v", c.Invalidate)
	}
}
