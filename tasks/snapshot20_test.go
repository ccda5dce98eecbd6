package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A task opened with 20 lessons in force freezes the seed's snapshot: 12
// detailed, high → medium → low and newest first within a level, then 8
// by id and problem only, every id present, as stored on either database.
// The fixture puts the cut inside the low level, so a limit of 11 or 13, or
// another order, fails.
//
// A snapshot is what the digest showed (memories.LessonsInForce), and 20
// lessons overflow the default lessons quota (900) and budget (3200), so
// the fixture gives the digest room for all 20: a lessons quota of 8000 in
// a budget of 12000, and MaxLines above 20.
func TestOpenSnapshotOfTwentyLessons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, func(c *config.Config) {
			c.Digest.Budget, c.Digest.MaxLines = 12000, 40
			c.Digest.Quotas = map[string]int{"lessons": 8000}
		})
		conf := map[int]memory.Confidence{}
		var ids []int64
		for i := range 20 {
			c := memory.ConfidenceLow
			switch {
			case i%5 == 0: // 0, 5, 10, 15
				c = memory.ConfidenceHigh
			case i%3 == 0: // 3, 6, 9, 12, 18
				c = memory.ConfidenceMedium
			}
			if i == 19 {
				c = memory.ConfidenceMedium // 6 medium in all
			}
			m := memory.Memory{Workspace: "/w", Kind: memory.Lesson, Scope: memory.LessonWorkspace, Origin: memory.OriginPanel,
				Lesson: &memory.LessonFields{Problem: fmt.Sprintf("problem number %d of the snapshot", i),
					Correction: fmt.Sprintf("the correction for problem number %d, in full", i), Confidence: c, Boundary: "seen in this workspace"}}
			m, _, err := lesson.New(m, f.s.Now())
			if err != nil {
				t.Fatal(err)
			}
			id, err := s.InsertMemory(ctx, s.DB, memories.ToRow(m))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			conf[i] = c
			f.clock.add(time.Minute)
		}
		if _, err := f.mem.Digest(ctx, "/w"); err != nil {
			t.Fatal(err)
		}
		f.clock.add(time.Minute)
		o := f.open("s1", "a task with twenty lessons in force")

		// The seed's order, computed from the fixture: by level, newest first.
		var want []int64
		for _, level := range []memory.Confidence{memory.ConfidenceHigh, memory.ConfidenceMedium, memory.ConfidenceLow} {
			for i := 19; i >= 0; i-- {
				if conf[i] == level {
					want = append(want, ids[i])
				}
			}
		}
		if n := len(want); n != 20 {
			t.Fatalf("fixture: %d lessons", n)
		}
		stored, err := f.svc.Get(ctx, o.Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		var env lesson.Snapshot
		if err := json.Unmarshal([]byte(stored.Environment), &env); err != nil {
			t.Fatalf("stored environment: %v", err)
		}
		var detailed, omitted []int64
		for _, e := range env.Lessons {
			detailed = append(detailed, e.ID)
			if e.Correction == "" {
				t.Errorf("detailed L%d has no correction", e.ID)
			}
		}
		for _, e := range env.Omitted {
			omitted = append(omitted, e.ID)
			if e.Problem == "" {
				t.Errorf("omitted L%d has no problem", e.ID)
			}
		}
		if env.Count != 20 || !env.Truncated || !slices.Equal(detailed, want[:12]) {
			t.Fatalf("detailed %v (count %d, truncated %t); want %v", detailed, env.Count, env.Truncated, want[:12])
		}
		if !slices.Equal(slices.Sorted(slices.Values(omitted)), slices.Sorted(slices.Values(want[12:]))) {
			t.Fatalf("omitted %v; want %v", omitted, want[12:])
		}
		if all := slices.Sorted(slices.Values(env.IDs())); !slices.Equal(all, slices.Sorted(slices.Values(ids))) {
			t.Fatalf("ids %v; want every one of %v", all, ids)
		}
	})
}
