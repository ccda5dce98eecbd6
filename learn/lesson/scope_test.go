package lesson

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

var scopeNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// scoped is a valid lesson with id, scope, workspace and scope session.
func scoped(id int64, s memory.LessonScope, ws, session string) memory.Memory {
	m := fieldsMemory(memory.Lesson, s, seedFields)
	m.ID, m.Workspace, m.ScopeSession = id, ws, session
	if s == memory.LessonReflection {
		m.SessionID = session
	}
	return m
}

func ids(ms []memory.Memory) []int64 {
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestCheckScope(t *testing.T) {
	cases := []struct {
		name  string
		m     memory.Memory
		field string
	}{
		{"global", scoped(1, memory.LessonGlobal, "", ""), ""},
		{"global with a workspace", scoped(1, memory.LessonGlobal, "/src/app", ""), "workspace"},
		{"global with a session", scoped(1, memory.LessonGlobal, "", "s-1"), "scope_session"},
		{"workspace", scoped(1, memory.LessonWorkspace, "/src/app", ""), ""},
		{"workspace without one", scoped(1, memory.LessonWorkspace, "", ""), "workspace"},
		{"workspace with a session", scoped(1, memory.LessonWorkspace, "/src/app", "s-1"), "scope_session"},
		{"session", scoped(1, memory.LessonSession, "/src/app", "s-1"), ""},
		{"session without its session", scoped(1, memory.LessonSession, "/src/app", " "), "scope_session"},
		{"reflection", scoped(1, memory.LessonReflection, "/src/app", "s-1"), ""},
		{"reflection without its session", scoped(1, memory.LessonReflection, "/src/app", ""), "scope_session"},
		{"reflection of another session", func() memory.Memory {
			m := scoped(1, memory.LessonReflection, "/src/app", "s-1")
			m.SessionID = "s-2"
			return m
		}(), "scope_session"},
		{"control character in a session", scoped(1, memory.LessonSession, "", "s\x01"), "scope_session"},
		{"no scope", scoped(1, "", "", ""), "scope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckScope(c.m)
			if c.field == "" {
				if err != nil {
					t.Fatalf("CheckScope = %v", err)
				}
				return
			}
			if fe := fieldErr(t, err); fe.Field != c.field {
				t.Fatalf("CheckScope = %v, want field %s", err, c.field)
			}
		})
	}
}

func TestInForceScopes(t *testing.T) {
	deprecated := scoped(7, memory.LessonGlobal, "", "")
	deprecated.State, deprecated.InvalidAt = memory.StateDeprecated, scopeNow
	legacy := memory.Memory{ID: 8, Kind: memory.Lesson, Text: "old free text", InvalidAt: scopeNow} // superseded by its InvalidAt
	quarantined := scoped(9, memory.LessonGlobal, "", "")
	quarantined.Quarantined = true
	all := []memory.Memory{
		scoped(1, memory.LessonGlobal, "", ""),
		scoped(2, memory.LessonWorkspace, "/src/app", ""),
		scoped(3, memory.LessonWorkspace, "/src/other", ""),
		scoped(4, memory.LessonSession, "/src/other", "s-1"),
		scoped(5, memory.LessonReflection, "/src/app", "s-1"),
		scoped(6, memory.LessonReflection, "/src/app", "s-2"),
		deprecated, legacy, quarantined,
		{ID: 10, Kind: memory.Fact, Text: "a fact"},
		{ID: 11, Kind: memory.Lesson, Text: "legacy global lesson"},
		{ID: 12, Kind: memory.Lesson, Workspace: "/src/app", Text: "legacy workspace lesson"},
	}
	cases := []struct {
		v    Viewer
		want []int64
	}{
		{Viewer{Workspace: "/src/app", Session: "s-1", GlobalLibrary: true}, []int64{1, 2, 4, 5, 11, 12}},
		{Viewer{Workspace: "/src/app", Session: "s-2", GlobalLibrary: true}, []int64{1, 2, 6, 11, 12}},
		{Viewer{Workspace: "/src/other", Session: "s-3", GlobalLibrary: true}, []int64{1, 3, 11}},
		{Viewer{GlobalLibrary: true}, []int64{1, 11}},
		// Under memory.scope workspace (the default) the global free-text
		// library is not served, so its legacy lesson stays out; a lesson
		// scoped global is still everyone's.
		{Viewer{Workspace: "/src/app", Session: "s-1"}, []int64{1, 2, 4, 5, 12}},
		{Viewer{}, []int64{1}},
	}
	for _, c := range cases {
		if got := ids(InForce(all, c.v)); !slices.Equal(got, c.want) {
			t.Errorf("InForce(%+v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// The seed's promotion rule: to global covers the source on every path; to
// a named session only in that session.
func TestInForcePromotion(t *testing.T) {
	src := scoped(1, memory.LessonReflection, "/src/app", "s-1")
	toS2 := scoped(2, memory.LessonSession, "/src/app", "s-2")
	toS2.PromotedFromID = 1
	toGlobal := scoped(3, memory.LessonGlobal, "", "")
	toGlobal.PromotedFromID = 1
	toWS := scoped(4, memory.LessonWorkspace, "/src/app", "")
	toWS.PromotedFromID = 1

	cases := []struct {
		name string
		all  []memory.Memory
		v    Viewer
		want []int64
	}{
		{"source alone, its session", []memory.Memory{src}, Viewer{Session: "s-1"}, []int64{1}},
		{"to session s-2: hidden in s-2", []memory.Memory{src, toS2}, Viewer{Session: "s-2"}, []int64{2}},
		{"to session s-2: still shown in its source session", []memory.Memory{src, toS2}, Viewer{Session: "s-1"}, []int64{1}},
		{"to global: hidden in its source session", []memory.Memory{src, toGlobal}, Viewer{Session: "s-1"}, []int64{3}},
		{"to global: shown once elsewhere", []memory.Memory{src, toGlobal}, Viewer{Session: "s-9"}, []int64{3}},
		{"to workspace: hidden in its sessions", []memory.Memory{src, toWS}, Viewer{Workspace: "/src/app", Session: "s-1"}, []int64{4}},
		{"to workspace: other workspaces unaffected", []memory.Memory{src, toWS}, Viewer{Workspace: "/src/x", Session: "s-1"}, []int64{1}},
		{"chain: session then global covers both", []memory.Memory{src, toS2, func() memory.Memory {
			g := scoped(5, memory.LessonGlobal, "", "")
			g.PromotedFromID = 2
			return g
		}()}, Viewer{Session: "s-1"}, []int64{5}},
		{"a deprecated promotion does not bring the source back", []memory.Memory{src, func() memory.Memory {
			g := toGlobal
			g.State, g.InvalidAt = memory.StateDeprecated, scopeNow
			return g
		}()}, Viewer{Session: "s-1"}, []int64{}},
		{"a self-reference does not loop (check reports it)", []memory.Memory{func() memory.Memory { m := toGlobal; m.PromotedFromID = 3; return m }()}, Viewer{}, []int64{3}},
		{"a cycle does not loop", []memory.Memory{func() memory.Memory { m := toGlobal; m.ID, m.PromotedFromID = 5, 6; return m }(),
			func() memory.Memory { m := toGlobal; m.ID, m.PromotedFromID = 6, 5; return m }()}, Viewer{}, []int64{}},
	}
	for _, c := range cases {
		if got := ids(InForce(c.all, c.v)); !slices.Equal(got, c.want) {
			t.Errorf("%s: InForce = %v, want %v", c.name, got, c.want)
		}
	}
}

// Viewer.At answers what was in force at a watermark.
func TestInForceAt(t *testing.T) {
	early, late := scopeNow.Add(-2*time.Hour), scopeNow.Add(-time.Hour)
	a := scoped(1, memory.LessonGlobal, "", "")
	a.RecordedAt = early
	a.State, a.InvalidAt = memory.StateDeprecated, late
	b := scoped(2, memory.LessonGlobal, "", "")
	b.RecordedAt = late
	src := scoped(3, memory.LessonReflection, "", "s-1")
	src.RecordedAt = early
	p := scoped(4, memory.LessonGlobal, "", "")
	p.RecordedAt, p.PromotedFromID = late, 3
	all := []memory.Memory{a, b, src, p}
	for _, c := range []struct {
		at   time.Time
		want []int64
	}{
		{early, []int64{1, 3}},
		{late, []int64{2, 4}},
		{time.Time{}, []int64{2, 4}},
	} {
		if got := ids(InForce(all, Viewer{Session: "s-1", At: c.at})); !slices.Equal(got, c.want) {
			t.Errorf("At %v: InForce = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"global":             {Scope: memory.LessonGlobal},
		"session:s-1":        {Scope: memory.LessonSession, Session: "s-1"},
		" workspace:/src/a ": {Scope: memory.LessonWorkspace, Workspace: "/src/a"},
	} {
		got, err := ParseTarget(in)
		if err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, _ := ParseTarget(got.String()); back != got {
			t.Errorf("ParseTarget(%q.String()) = %+v", got, back)
		}
	}
	for _, bad := range []string{"", "global:x", "session:", "session", "workspace: ", "reflection", "Global"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) = nil error", bad)
		}
	}
}

func TestPromote(t *testing.T) {
	src := scoped(1, memory.LessonReflection, "/src/app", "s-1")
	src.Lesson.Boundary = ""
	src.Text = Line(src)

	if _, err := Promote(src, Target{Scope: memory.LessonGlobal}, "", scopeNow); err == nil || !strings.Contains(err.Error(), "boundary") {
		t.Fatalf("promote without a boundary = %v, want the boundary refusal", err)
	}
	d, err := Promote(src, Target{Scope: memory.LessonGlobal}, "跨项目通用", scopeNow)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != 0 || d.PromotedFromID != 1 || d.Scope != memory.LessonGlobal || d.Workspace != "" || d.ScopeSession != "" ||
		d.Lesson.Boundary != "跨项目通用" || !d.RecordedAt.Equal(scopeNow) || d.Text != src.Text || StateOf(d) != memory.StateActive {
		t.Fatalf("derived = %+v", d)
	}
	if src.Lesson.Boundary != "" {
		t.Fatal("Promote changed the source's fields")
	}
	// Shown once: the derived one covers the source on every path.
	d.ID = 2
	if got := ids(InForce([]memory.Memory{src, d}, Viewer{Session: "s-1"})); !slices.Equal(got, []int64{2}) {
		t.Fatalf("in force after promotion = %v", got)
	}

	s, err := Promote(d, Target{Scope: memory.LessonSession, Session: "s-9"}, "", scopeNow)
	if err != nil || s.ScopeSession != "s-9" || s.Lesson.Boundary != "跨项目通用" || s.PromotedFromID != 2 {
		t.Fatalf("promote to a session = %+v, %v (want the boundary kept)", s, err)
	}
	w, err := Promote(d, Target{Scope: memory.LessonWorkspace, Workspace: "/src/b"}, "", scopeNow)
	if err != nil || w.Workspace != "/src/b" || w.Scope != memory.LessonWorkspace {
		t.Fatalf("promote to a workspace = %+v, %v", w, err)
	}

	dep, _ := Deprecate(src, "old", scopeNow)
	for name, c := range map[string]struct {
		src memory.Memory
		t   Target
	}{
		"not active":         {dep, Target{Scope: memory.LessonGlobal}},
		"to reflection":      {src, Target{Scope: memory.LessonReflection}},
		"to where it is":     {d, Target{Scope: memory.LessonGlobal}},
		"unstored":           {func() memory.Memory { m := src; m.ID = 0; return m }(), Target{Scope: memory.LessonGlobal}},
		"bad workspace":      {src, Target{Scope: memory.LessonWorkspace, Workspace: "relative/path"}},
		"not a lesson":       {memory.Memory{ID: 5, Kind: memory.Fact}, Target{Scope: memory.LessonGlobal}},
		"free-text lesson":   {memory.Memory{ID: 5, Kind: memory.Lesson, Text: "x y"}, Target{Scope: memory.LessonGlobal}},
		"unknown scope name": {src, Target{Scope: "team"}},
	} {
		if _, err := Promote(c.src, c.t, "b b", scopeNow); err == nil {
			t.Errorf("%s: Promote = nil error", name)
		}
	}
}

func TestTransitions(t *testing.T) {
	active := scoped(1, memory.LessonGlobal, "", "")
	dep, err := Deprecate(active, "no longer recommended", scopeNow)
	if err != nil || dep.State != memory.StateDeprecated || !dep.InvalidAt.Equal(scopeNow) || dep.InvalidReason != "no longer recommended" {
		t.Fatalf("Deprecate = %+v, %v", dep, err)
	}
	sup, err := Supersede(active, 9, "", scopeNow)
	if err != nil || sup.State != memory.StateSuperseded || sup.SupersededBy != 9 || sup.InvalidAt.IsZero() {
		t.Fatalf("Supersede = %+v, %v", sup, err)
	}
	if sup, err := Supersede(active, 0, "merged into the workspace rule", scopeNow); err != nil || sup.SupersededBy != 0 {
		t.Fatalf("Supersede by a reason = %+v, %v", sup, err)
	}
	// Deleting a deprecated one keeps when and why it stopped being valid.
	later := scopeNow.Add(time.Hour)
	del, err := Delete(dep, "cleanup", later)
	if err != nil || del.State != memory.StateDeleted || !del.InvalidAt.Equal(scopeNow) || del.InvalidReason != "no longer recommended" {
		t.Fatalf("Delete(deprecated) = %+v, %v", del, err)
	}
	if del, err := Delete(active, "wrong", scopeNow); err != nil || del.State != memory.StateDeleted || del.InvalidAt.IsZero() {
		t.Fatalf("Delete(active) = %+v, %v", del, err)
	}
	if _, err := Delete(sup, "", scopeNow); err != nil {
		t.Fatalf("Delete(superseded) = %v", err)
	}

	refused := []struct {
		name string
		m    memory.Memory
		to   memory.State
		by   int64
		why  string
	}{
		{"revive a deleted one", del, memory.StateActive, 0, "never revived"},
		{"revive a deprecated one", dep, memory.StateActive, 0, "never revived"},
		{"deprecate a deleted one", del, memory.StateDeprecated, 0, "tombstone"},
		{"delete twice", del, memory.StateDeleted, 0, "tombstone"},
		{"deprecate twice", dep, memory.StateDeprecated, 0, "already"},
		{"supersede a deprecated one", dep, memory.StateSuperseded, 9, "only an active"},
		{"deprecate a superseded one", sup, memory.StateDeprecated, 0, "only an active"},
		{"supersede with nothing", active, memory.StateSuperseded, 0, "name the lesson"},
		{"supersede itself", active, memory.StateSuperseded, 1, "itself"},
		{"unknown state", active, "archived", 0, "unknown"},
		{"legacy superseded row (InvalidAt, no state)", memory.Memory{ID: 3, Kind: memory.Lesson, InvalidAt: scopeNow}, memory.StateDeprecated, 0, "only an active"},
	}
	for _, c := range refused {
		_, err := Transition(c.m, c.to, "", c.by, scopeNow)
		var te *TransitionError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.why) || te.To != c.to {
			t.Errorf("%s: Transition = %v, want a TransitionError saying %q", c.name, err, c.why)
		}
	}
}
