package memories_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSearchRanksByRelevanceAndSeed: at an equal seed score the more
// relevant text comes first, and a much more important memory still
// outranks a better match.
func TestSearchRanksByRelevanceAndSeed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(t, s, "workspace")
		storetest.Memories(t, s, "/w", 0, 50, t0)
		weak := remember(t, svc, "/w", memory.Fact, "a long note about lunch and the weather that says deploy once among many other words of little use")
		strong := remember(t, svc, "/w", memory.Fact, "deploy with the deploy script")
		hits, err := svc.Search(ctx, memories.Query{Workspace: "/w", Text: "deploy", Peek: true})
		if err != nil || len(hits) != 2 {
			t.Fatalf("search: %+v, %v", hits, err)
		}
		if hits[0].ID != strong.Memory.ID || hits[1].ID != weak.Memory.ID || hits[0].Score <= hits[1].Score {
			t.Fatalf("at an equal seed: %d (%v) before %d (%v); want the more relevant %d first",
				hits[0].ID, hits[0].Score, hits[1].ID, hits[1].Score, strong.Memory.ID)
		}

		important, err := svc.Remember(ctx, memory.Write{Workspace: "/w", Kind: memory.Fact, Importance: 9,
			Text: "deploy only on weekdays, and never while the on-call engineer is away from the keyboard"}, memory.Provenance{Origin: memory.OriginPanel})
		if err != nil {
			t.Fatal(err)
		}
		hits, err = svc.Search(ctx, memories.Query{Workspace: "/w", Text: "deploy", Peek: true})
		if err != nil || len(hits) != 3 || hits[0].ID != important.Memory.ID || hits[1].ID != strong.Memory.ID {
			t.Fatalf("with an important memory: %+v, %v; want %d then %d", hits, err, important.Memory.ID, strong.Memory.ID)
		}
	})
}

// TestSearchChinese: a Chinese keyword of 2 characters, too short for the
// trigram index, and one of 3 find their memory; a hit's uses go up.
func TestSearchChinese(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(t, s, "workspace")
		storetest.Memories(t, s, "/w", 0, 200, t0)
		zh := remember(t, svc, "/w", memory.Preference, "部署之前先运行数据库迁移脚本。")
		for i, q := range []string{"迁移", "数据库", "请 迁移"} {
			hits, err := svc.Search(ctx, memories.Query{Workspace: "/w", Text: q})
			if err != nil || len(hits) != 1 || hits[0].ID != zh.Memory.ID || hits[0].Uses != i+1 {
				t.Fatalf("search %q: %+v, %v; want %d alone, used %d times", q, hits, err, zh.Memory.ID, i+1)
			}
		}
	})
}

// TestSearchCaps: a query over a cap is a *memory.FieldError on q naming
// the cap, never a statement the database chokes on.
func TestSearchCaps(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		svc, _ := newService(t, s, "workspace")
		words := make([]string, 999)
		for i := range words {
			words[i] = "w" + strconv.Itoa(i)
		}
		for q, want := range map[string]string{
			strings.Join(words[:100], " "): "100 distinct words; at most 32",
			strings.Join(words, " "):       "at most 1000",
		} {
			_, err := svc.Search(context.Background(), memories.Query{Workspace: "/w", Text: q})
			var fe *memory.FieldError
			if !errors.As(err, &fe) || fe.Field != "q" || !strings.Contains(fe.Problem, want) {
				t.Errorf("search of %d characters: %v; want q: …%s…", len(q), err, want)
			}
		}

		// A word over the per-word cap (a pasted URL, a Chinese phrase) is
		// looked for by its first characters, not refused.
		url := "https://git.example.com/team/service/blob/main/internal/handlers/payments/refund_test.go"
		zh := strings.Repeat("部署", 40)
		ctx := context.Background()
		want := rememberTool(t, svc, "/w", "fact", "the flaky test is "+url+" and "+zh)
		for _, q := range []string{url, "go " + zh} {
			hits, err := svc.Search(ctx, memories.Query{Workspace: "/w", Text: q})
			if err != nil || len(hits) != 1 || hits[0].ID != want.ID {
				t.Errorf("search %q: %+v, %v; want memory %d", q, hits, err, want.ID)
			}
		}
	})
}
