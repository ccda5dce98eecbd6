package store_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSearchMemoriesTermCap: MaxSearchTerms terms run on both databases;
// one more is refused with an error, never a statement the database chokes
// on.
func TestSearchMemoriesTermCap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		m := store.Memory{Workspace: "/w", Kind: "fact", Text: "w31 here", TextNorm: "w31 here", Importance: 5, Origin: "tool",
			RecordedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), TTLDays: 180}
		if _, err := s.InsertMemory(ctx, s.DB, m); err != nil {
			t.Fatal(err)
		}
		terms := make([]string, store.MaxSearchTerms+1)
		for i := range terms {
			terms[i] = "w" + strconv.Itoa(i)
		}
		hits, err := s.SearchMemories(ctx, s.DB, []string{"/w"}, terms[:store.MaxSearchTerms], 0)
		if err != nil || len(hits) != 1 {
			t.Fatalf("%d terms: %d hits, %v", store.MaxSearchTerms, len(hits), err)
		}
		if _, err := s.SearchMemories(ctx, s.DB, []string{"/w"}, terms, 0); err == nil || !strings.Contains(err.Error(), "at most 32") {
			t.Fatalf("%d terms: %v", len(terms), err)
		}
	})
}

// fillerAt is when the filler memories were recorded.
var fillerAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// insertText stores one live memory whose text is already normalized.
func insertText(t *testing.T, s *store.Store, ws, text string) int64 {
	t.Helper()
	id, err := s.InsertMemory(context.Background(), s.DB, store.Memory{Workspace: ws, Kind: "fact", Text: text, TextNorm: text,
		Importance: 5, Origin: "tool", RecordedAt: fillerAt, TTLDays: 180})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// matchIDs searches /w and the global library for q's words.
func matchIDs(t *testing.T, s *store.Store, q string) []int64 {
	t.Helper()
	found, err := s.MatchMemories(context.Background(), s.DB, []string{"/w", ""}, strings.Fields(q), 200)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	ids := make([]int64, len(found))
	for i, f := range found {
		ids[i] = f.ID
	}
	return ids
}

// TestMatchMemoriesInBigWorkspace: among 10,000 memories a search finds
// one by a word in its middle, by part of a word, by a Chinese keyword of
// 2 characters (too short for the trigram index) and of 3, and follows an
// edit of the text and an invalidation.
func TestMatchMemoriesInBigWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		storetest.Memories(t, s, "/w", 0, 5000, fillerAt)
		en := insertText(t, s, "/w", "before the release run calibrateflux on every staging node then tag it")
		zh := insertText(t, s, "/w", "部署之前先运行数据库迁移脚本")
		insertText(t, s, "/other", "calibrateflux 数据库迁移 in another workspace")
		storetest.Memories(t, s, "/w", 5000, 5000, fillerAt)

		for q, want := range map[string][]int64{
			"calibrateflux":         {en},
			"ibratefl":              {en},
			"迁移":                    {zh},
			"数据库":                   {zh},
			"zzqq 迁移 calibrateflux": {en, zh},
			"xq":                    nil,
		} {
			got := matchIDs(t, s, q)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("search %q found %v; want %v", q, got, want)
			}
		}

		// The index follows an edit of text_norm (no writer edits it
		// today; the triggers are there for one that will).
		if _, err := s.DB.ExecContext(ctx, `update memories set text = $1, text_norm = $1 where id = $2`, "再部署一次 quasarlight", zh); err != nil {
			t.Fatal(err)
		}
		if got := matchIDs(t, s, "数据库"); len(got) != 0 {
			t.Errorf("after the edit, the old text is still found: %v", got)
		}
		if got := matchIDs(t, s, "quasarlight"); !slices.Equal(got, []int64{zh}) {
			t.Errorf("after the edit, the new text found %v; want %v", got, []int64{zh})
		}
		// An invalidated memory is not found.
		if ok, err := s.InvalidateMemory(ctx, s.DB, en, fillerAt, "forgot", 0); !ok || err != nil {
			t.Fatalf("invalidate: %v, %v", ok, err)
		}
		if got := matchIDs(t, s, "calibrateflux"); len(got) != 0 {
			t.Errorf("an invalidated memory is found: %v", got)
		}
	})
}

// TestMatchMemoriesRelevance: at equal terms matched, the text that says
// the term more often, in fewer words, is more relevant; a memory matched
// only by a term too short for the index has relevance 0.
func TestMatchMemoriesRelevance(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		storetest.Memories(t, s, "/w", 0, 50, fillerAt)
		weak := insertText(t, s, "/w", "a long note about lunch and the weather that says deploy once among many other words of little use")
		strong := insertText(t, s, "/w", "deploy with the deploy script")
		short := insertText(t, s, "/w", "中文 only")
		found, err := s.MatchMemories(context.Background(), s.DB, []string{"/w"}, []string{"deploy", "中文"}, 0)
		if err != nil || len(found) != 3 {
			t.Fatalf("found %+v, %v; want 3", found, err)
		}
		if found[0].ID != strong || found[1].ID != weak || found[2].ID != short {
			t.Fatalf("order %d %d %d; want strong %d, weak %d, short %d", found[0].ID, found[1].ID, found[2].ID, strong, weak, short)
		}
		if !(found[0].Relevance > found[1].Relevance && found[1].Relevance > 0 && found[2].Relevance == 0) {
			t.Fatalf("relevances %v %v %v", found[0].Relevance, found[1].Relevance, found[2].Relevance)
		}
	})
}

// TestMatchMemoriesLimitKeepsTheBest: the limit cuts after ranking by
// relevance, so limit 1 is the most relevant hit; equal relevance goes to
// the newer memory; an invalidated memory leaves its place to the next.
func TestMatchMemoriesLimitKeepsTheBest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		storetest.Memories(t, s, "/w", 0, 50, fillerAt)
		weak := insertText(t, s, "/w", "a long note about lunch and the weather that says deploy once among many other words of little use")
		strong := insertText(t, s, "/w", "deploy with the deploy script")
		middle := insertText(t, s, "/w", "deploy from the release branch only")
		best := func(limit int) []int64 {
			t.Helper()
			found, err := s.MatchMemories(ctx, s.DB, []string{"/w"}, []string{"deploy"}, limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, m := range found {
				ids = append(ids, m.ID)
			}
			return ids
		}
		if got := best(1); !slices.Equal(got, []int64{strong}) {
			t.Fatalf("limit 1: %v; want the strongest %d (weak %d, middle %d)", got, strong, weak, middle)
		}
		if got := best(2); !slices.Equal(got, []int64{strong, middle}) {
			t.Fatalf("limit 2: %v; want %d then %d", got, strong, middle)
		}
		twin := insertText(t, s, "/w", "deploy with the deploy script")
		if got := best(1); !slices.Equal(got, []int64{twin}) {
			t.Fatalf("equal relevance: %v; want the newer %d over %d", got, twin, strong)
		}
		for _, id := range []int64{twin, strong} {
			if ok, err := s.InvalidateMemory(ctx, s.DB, id, fillerAt, "forgot", 0); !ok || err != nil {
				t.Fatalf("invalidate %d: %v, %v", id, ok, err)
			}
		}
		if got := best(1); !slices.Equal(got, []int64{middle}) {
			t.Fatalf("after invalidating the best two: %v; want %d", got, middle)
		}
	})
}

// TestMigrationMemorySearchBackfills: the search migration indexes the
// memories stored before it.
func TestMigrationMemorySearchBackfills(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		undo := []string{`drop index memories_text_trgm`}
		if s.Dialect == store.SQLite {
			undo = []string{`drop trigger memories_fts_insert`, `drop trigger memories_fts_delete`,
				`drop trigger memories_fts_update`, `drop table memories_fts`}
		}
		for _, q := range append(undo, `delete from mull_migrations where name = 'memory_search'`) {
			if _, err := s.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		storetest.Memories(t, s, "/w", 0, 100, fillerAt)
		old := insertText(t, s, "/w", "the old memory names calibrateflux and 迁移")
		planned, err := s.Migrate(ctx, false)
		if err != nil || len(planned) != 1 || planned[0].Name != "memory_search" {
			t.Fatalf("migrate = %+v, %v; want memory_search alone", planned, err)
		}
		for _, q := range []string{"calibrateflux", "ibratefl", "迁移"} {
			if got := matchIDs(t, s, q); !slices.Equal(got, []int64{old}) {
				t.Errorf("after the migration, %q found %v; want %v", q, got, []int64{old})
			}
		}
		// New memories are indexed as they are stored.
		added := insertText(t, s, "/w", "a new one names calibrateflux too")
		if got := matchIDs(t, s, "calibrateflux"); !slices.Equal(got, []int64{added, old}) {
			t.Errorf("after an insert, found %v; want %v", got, []int64{added, old})
		}
	})
}

// TestSearchPlansAtTenThousand: in a workspace of 10,000 memories, a
// search's terms of 3 characters or more are looked up by the full-text
// index on both databases (on Postgres the trigram index, which the
// planner passed over while GIN's pending list held the memories; see
// migration 032), and on SQLite shorter ones read the library's live
// memories by their own index, not the whole table.
func TestSearchPlansAtTenThousand(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		storetest.Memories(t, s, "/w", 0, 10000, fillerAt)
		storetest.Memories(t, s, "/other", 10000, 2000, fillerAt)
		middle := strings.Fields(storetest.Sentence(5000))
		indexed, _, args, _ := s.SearchStatements([]string{"/w"}, []string{middle[len(middle)/2]}, 40)
		want := "memories_fts"
		if s.Dialect == store.Postgres {
			want = "memories_text_trgm"
		}
		if plan := queryPlan(t, s, indexed, args...); !strings.Contains(plan, want) {
			t.Errorf("the indexed search does not use %s:\n%s", want, plan)
		}
		if s.Dialect == store.SQLite {
			_, substring, _, args := s.SearchStatements([]string{"/w"}, []string{"口河"}, 40)
			if plan := queryPlan(t, s, substring, args...); !strings.Contains(plan, "memories_live_workspace") {
				t.Errorf("the substring search does not read memories_live_workspace:\n%s", plan)
			}
		}
	})
}

// queryPlan is the database's plan for a statement, one line per step.
func queryPlan(t *testing.T, s *store.Store, query string, args ...any) string {
	t.Helper()
	explain := "explain "
	if s.Dialect == store.SQLite {
		explain = "explain query plan "
	}
	rows, err := s.DB.QueryContext(context.Background(), explain+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestMatchMemoriesShortTermNewestFirst: a term too short for the index
// finds the newest live memories of the libraries searched that contain
// it, at most limit of them; another workspace's, an invalidated and a
// quarantined one are never among them.
func TestMatchMemoriesShortTermNewestFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var ids []int64
		for i := range 5 {
			ids = append(ids, insertText(t, s, "/w", "迁移 第"+strconv.Itoa(i)))
			insertText(t, s, "/w", "no such word "+strconv.Itoa(i))
		}
		insertText(t, s, "/other", "迁移 elsewhere")
		dead := insertText(t, s, "/w", "迁移 forgotten")
		if ok, err := s.InvalidateMemory(ctx, s.DB, dead, fillerAt, "forgot", 0); !ok || err != nil {
			t.Fatalf("invalidate: %v, %v", ok, err)
		}
		held := insertText(t, s, "/w", "迁移 held")
		if _, err := s.DB.ExecContext(ctx, `update memories set quarantined = true where id = $1`, held); err != nil {
			t.Fatal(err)
		}
		found, err := s.MatchMemories(ctx, s.DB, []string{"/w"}, []string{"迁移"}, 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, f := range found {
			got = append(got, f.ID)
		}
		if want := []int64{ids[4], ids[3], ids[2]}; !slices.Equal(got, want) {
			t.Errorf("found %v; want the 3 newest live ones of /w, %v", got, want)
		}
	})
}
