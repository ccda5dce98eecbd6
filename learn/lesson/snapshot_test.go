package lesson_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

var snapBase = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

// snapLesson is a structured lesson recorded minutes after snapBase; conf
// "legacy" is a free-text lesson from before the lesson model (no fields).
func snapLesson(id int64, conf string, minutes int) memory.Memory {
	m := memory.Memory{
		ID:         id,
		Kind:       memory.Lesson,
		Text:       fmt.Sprintf("text of %d", id),
		Scope:      memory.LessonGlobal,
		RecordedAt: snapBase.Add(time.Duration(minutes) * time.Minute),
	}
	if conf != "legacy" {
		m.Lesson = &memory.LessonFields{
			Problem:     fmt.Sprintf("problem %d", id),
			Correction:  fmt.Sprintf("correction %d", id),
			AppliesWhen: fmt.Sprintf("when %d", id),
			Confidence:  memory.Confidence(conf),
		}
	}
	return m
}

// snapTwenty is the seed's over-the-limit case: 20 lessons in force, their
// ids in no particular order of time or confidence, crossing the 12th place
// inside the low level, so a limit of 11 or 13 gives another split.
func snapTwenty() []memory.Memory {
	rows := []struct {
		id      int64
		conf    string
		minutes int
	}{
		// high: newest first, the tie at 30 goes to the higher id.
		{3, "high", 10}, {17, "high", 50}, {8, "high", 30}, {12, "high", 30}, {1, "high", 5},
		// medium, with two legacy lessons, one unrated and one out of range.
		{2, "legacy", 40}, {5, "medium", 60}, {9, "", 20}, {14, "medium", 70}, {19, "legacy", 1}, {6, "bogus", 35},
		// low.
		{4, "low", 80}, {7, "low", 15}, {10, "low", 90}, {11, "low", 25}, {13, "low", 45},
		{15, "low", 55}, {16, "low", 65}, {18, "low", 75}, {20, "low", 85},
	}
	var ms []memory.Memory
	for _, r := range rows {
		ms = append(ms, snapLesson(r.id, r.conf, r.minutes))
	}
	return ms
}

func TestBuildSnapshotTwentyLessons(t *testing.T) {
	in := snapTwenty()
	// Neither a fact nor a second copy of lesson 5 is a lesson in force.
	in = append(in, memory.Memory{ID: 21, Kind: memory.Fact, Text: "a fact", RecordedAt: snapBase.Add(time.Hour)})
	in = append(in, snapLesson(5, "high", 999))
	taken, committed := snapBase.Add(3*time.Hour), snapBase.Add(2*time.Hour)
	s := lesson.BuildSnapshot(in, taken.In(time.FixedZone("x", 3600)), committed)

	wantDetailed := []int64{17, 12, 8, 3, 1, 14, 5, 2, 6, 9, 19, 10}
	wantOmitted := []int64{20, 4, 18, 16, 15, 13, 11, 7}
	var gotDetailed, gotOmitted []int64
	for _, e := range s.Lessons {
		gotDetailed = append(gotDetailed, e.ID)
	}
	for _, o := range s.Omitted {
		gotOmitted = append(gotOmitted, o.ID)
	}
	if !slices.Equal(gotDetailed, wantDetailed) {
		t.Errorf("detailed = %v, want %v (high → medium → low, newest first)", gotDetailed, wantDetailed)
	}
	if !slices.Equal(gotOmitted, wantOmitted) {
		t.Errorf("omitted = %v, want %v", gotOmitted, wantOmitted)
	}
	if s.Count != 20 || !s.Truncated {
		t.Errorf("count %d truncated %v, want 20 true", s.Count, s.Truncated)
	}
	ids := s.IDs()
	slices.Sort(ids)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("ids = %v, want every id 1..20 once", ids)
		}
	}
	if !s.TakenAt.Equal(taken) || s.TakenAt.Location() != time.UTC || !s.CommittedAt.Equal(committed) {
		t.Errorf("times %v %v", s.TakenAt, s.CommittedAt)
	}
}

func TestBuildSnapshotEntries(t *testing.T) {
	s := lesson.BuildSnapshot(snapTwenty(), snapBase, snapBase)
	byID := map[int64]lesson.Entry{}
	for _, e := range s.Lessons {
		byID[e.ID] = e
	}
	tests := []struct {
		name string
		id   int64
		want lesson.Entry
	}{
		{"structured", 17, lesson.Entry{ID: 17, Kind: "lesson", Scope: "global", Confidence: "high",
			Problem: "problem 17", Correction: "correction 17", AppliesWhen: "when 17"}},
		{"legacy free text: Text is the problem, medium", 2, lesson.Entry{ID: 2, Kind: "lesson", Scope: "global",
			Confidence: "medium", Problem: "text of 2"}},
		{"unrated reads medium", 9, lesson.Entry{ID: 9, Kind: "lesson", Scope: "global", Confidence: "medium",
			Problem: "problem 9", Correction: "correction 9", AppliesWhen: "when 9"}},
		{"out of range reads medium", 6, lesson.Entry{ID: 6, Kind: "lesson", Scope: "global", Confidence: "medium",
			Problem: "problem 6", Correction: "correction 6", AppliesWhen: "when 6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := byID[tt.id]; got != tt.want {
				t.Errorf("entry = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
	if o := s.Omitted[0]; o != (lesson.Omitted{ID: 20, Confidence: "low", Problem: "problem 20"}) {
		t.Errorf("omitted[0] = %+v", o)
	}
}

func TestBuildSnapshotKindsAndScopes(t *testing.T) {
	failure := memory.Memory{ID: 1, Kind: memory.Failure, Text: "f", Scope: memory.LessonReflection,
		Lesson: &memory.LessonFields{Problem: "p", Avoid: "a", Instead: "i", Confidence: memory.ConfidenceLow}}
	directive := memory.Memory{ID: 2, Kind: memory.Directive, Text: "d", Workspace: "/w",
		Lesson: &memory.LessonFields{Problem: "p2", Correction: "c2", Confidence: memory.ConfidenceHigh}}
	oldGlobal := memory.Memory{ID: 3, Kind: memory.Lesson, Text: "old"}
	s := lesson.BuildSnapshot([]memory.Memory{failure, directive, oldGlobal}, snapBase, snapBase)
	want := []lesson.Entry{
		{ID: 2, Kind: "directive", Scope: "workspace", Confidence: "high", Problem: "p2", Correction: "c2"},
		{ID: 3, Kind: "lesson", Scope: "global", Confidence: "medium", Problem: "old"},
		{ID: 1, Kind: "failure", Scope: "reflection", Confidence: "low", Problem: "p", Avoid: "a", Instead: "i"},
	}
	if !slices.Equal(s.Lessons, want) {
		t.Errorf("lessons = %+v\nwant      %+v", s.Lessons, want)
	}
}

// TestBuildSnapshotLimit pins MaxDetailed at the seed's 12 from both sides.
func TestBuildSnapshotLimit(t *testing.T) {
	tests := []struct {
		n, detailed, omitted int
		truncated            bool
	}{
		{0, 0, 0, false},
		{1, 1, 0, false},
		{11, 11, 0, false},
		{12, 12, 0, false},
		{13, 12, 1, true},
		{20, 12, 8, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			var in []memory.Memory
			for i := range tt.n {
				in = append(in, snapLesson(int64(i+1), "medium", i))
			}
			s := lesson.BuildSnapshot(in, snapBase, snapBase)
			if len(s.Lessons) != tt.detailed || len(s.Omitted) != tt.omitted || s.Truncated != tt.truncated || s.Count != tt.n {
				t.Errorf("detailed %d omitted %d truncated %v count %d, want %d %d %v %d",
					len(s.Lessons), len(s.Omitted), s.Truncated, s.Count, tt.detailed, tt.omitted, tt.truncated, tt.n)
			}
		})
	}
}

// TestSnapshotJSON: the stored shape is the seed's, and an empty snapshot
// stores empty lists, not nulls.
func TestSnapshotJSON(t *testing.T) {
	b, err := json.Marshal(lesson.BuildSnapshot(nil, snapBase, snapBase))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"taken_at":"2026-11-03T09:00:00Z","committed_at":"2026-11-03T09:00:00Z","count":0,"truncated":false,"lessons":[],"omitted":[]}`
	if string(b) != want {
		t.Errorf("json = %s\nwant   %s", b, want)
	}
	s := lesson.BuildSnapshot(snapTwenty(), snapBase, snapBase)
	b, _ = json.Marshal(s)
	var back lesson.Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.IDs(), s.IDs()) || back.Count != 20 {
		t.Errorf("round trip lost ids: %v", back.IDs())
	}
}
