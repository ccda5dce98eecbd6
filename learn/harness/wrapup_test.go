package harness

import (
	"reflect"
	"testing"
)

func TestWrapup(t *testing.T) {
	mem := func(ids ...string) map[string]Entry {
		m := map[string]Entry{}
		for _, id := range ids {
			m[id] = Entry{ID: id, Kind: KindMemory, Version: 1, Content: "x"}
		}
		return m
	}
	local := State{
		KindMemory: mem("used", "never", "covered"),
		KindPrompt: {"tone": {ID: "tone", Kind: KindPrompt, Version: 1, Content: "x"}},
		KindSkill:  {"repro": {ID: "repro", Kind: KindSkill, Version: 1, Content: "x"}},
	}
	global := State{KindMemory: mem("covered"), KindPrompt: {"other": {}}}
	uses := map[string]int{"memory/used": 3, "memory/covered": 3, "prompt/tone": 1, "skill/repro": 7}
	got := Wrapup(local, global, func(k Kind, id string) int { return uses[string(k)+"/"+id] })
	want := []Suggestion{
		{ID: "tone", Kind: KindPrompt, Fate: Promote, Reason: "1 injections, no same-id global"},
		{ID: "covered", Kind: KindMemory, Fate: Keep, Reason: "3 injections, global already covers id"},
		{ID: "never", Kind: KindMemory, Fate: Archive, Reason: "never injected (0 uses)"},
		{ID: "used", Kind: KindMemory, Fate: Promote, Reason: "3 injections, no same-id global"},
		{ID: "repro", Kind: KindSkill, Fate: Promote, Reason: "7 injections, no same-id global"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("suggestions:\n%+v\nwant\n%+v", got, want)
	}
	for range 20 {
		if again := Wrapup(local, global, func(k Kind, id string) int { return uses[string(k)+"/"+id] }); !reflect.DeepEqual(again, want) {
			t.Fatalf("not deterministic: %+v", again)
		}
	}
	if got := Wrapup(State{KindMemory: mem("a")}, nil, nil); !reflect.DeepEqual(got, []Suggestion{{ID: "a", Kind: KindMemory, Fate: Archive, Reason: "never injected (0 uses)"}}) {
		t.Fatalf("no injections: %+v", got)
	}
	if Wrapup(nil, nil, nil) != nil {
		t.Fatal("no local entries: want no suggestions")
	}
}
