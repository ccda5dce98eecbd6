package retrosession_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/retro"
	memsvc "github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A retro is shown its workspace's library as the digest last published
// it, with ids, and the ids in its answer decide: a repeat bumps the memory
// named, a supersede invalidates it (linked to its replacement, with a
// reason that passed the gate). Ids it may not name (another workspace's,
// one newer than the digest, a word) are dropped and counted, and mull's
// text check decides for their entries, as it does when the model names
// none.
func TestRetroAppliesLibraryIDs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		npm := seed(t, s, "fact", "the repo uses npm")
		pg := seed(t, s, "fact", "CI runs on Postgres 15")
		ship := seed(t, s, "fact", "deploys go through make ship")
		other, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: "/home/dev/other", Kind: "fact", Text: "the other repo uses yarn",
			TextNorm: "the other repo uses yarn", Origin: "tool", RecordedAt: s.Now()})
		if err != nil {
			t.Fatal(err)
		}
		d, err := memsvc.New(s, config.Memory{}, config.Digest{}).Digest(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		redis := seed(t, s, "fact", "redis listens on port 6380") // after the watermark: not shown
		out := retro.Output{
			Facts: []retro.Entry{
				{Text: "npm is the package manager here", Repeats: retro.Ref{ID: npm}},
				{Text: "CI runs on Postgres 16", Supersedes: []retro.Ref{{ID: pg}}},
				{Text: "redis listens on port 6380", Repeats: retro.Ref{ID: redis}},
				{Text: "deploy notes live in docs/deploy.md", Repeats: retro.Ref{Raw: `"the first one"`}},
			},
			Handoff:   []string{"one", "two", "three"},
			Supersede: []retro.Supersede{{ID: retro.Ref{ID: other}, Why: "gone"}, {ID: retro.Ref{ID: ship}, Why: "make ship was removed"}},
		}
		e := start(t, s, script(mustJSON(out), ""))
		session(t, s, "session-1")
		id := e.run(t, "session-1")

		// The prompt: instructions, the library as published, the excerpt.
		reqs := e.fake.Requests()
		msgs := reqs[len(reqs)-1].Messages
		lib := publishedLibrary(t, s, ws, d.Watermark)
		if len(msgs) != 3 || msgs[0].Content != retro.Prompt || msgs[1].Role != "system" || msgs[1].Content != lib.Text || msgs[2].Role != "user" {
			t.Fatalf("prompt messages %+v", msgs)
		}
		if !strings.Contains(lib.Text, "] fact: the repo uses npm") || strings.Contains(lib.Text, "6380") || strings.Contains(lib.Text, "yarn") {
			t.Fatalf("library shown:\n%s", lib.Text)
		}

		byID := map[int64]store.Memory{}
		byText := map[string]store.Memory{}
		for _, m := range memories(t, s) {
			byID[m.ID], byText[m.Text] = m, m
		}
		if m := byID[npm]; m.Uses != 1 || !m.InvalidAt.IsZero() {
			t.Errorf("repeated by id: %+v, want bumped", m)
		}
		if _, ok := byText["npm is the package manager here"]; ok {
			t.Error("an entry that repeats a memory was stored as well")
		}
		pg16 := byText["CI runs on Postgres 16"]
		if m := byID[pg]; m.InvalidAt.IsZero() || m.SupersededBy != pg16.ID || pg16.ID == 0 || m.InvalidReason != retro.SupersedeReason(retro.Source{JobID: id}) {
			t.Errorf("superseded by an entry: %+v, want invalid and linked to %d", m, pg16.ID)
		}
		if m := byID[ship]; m.InvalidAt.IsZero() || m.InvalidReason != "retro job "+itoa(id)+": make ship was removed" {
			t.Errorf("superseded by id: %+v", m)
		}
		if m := byID[redis]; m.Uses != 1 { // the id was not shown: the text check bumped it
			t.Errorf("memory after the watermark: %+v, want bumped by the text check", m)
		}
		if _, ok := byText["deploy notes live in docs/deploy.md"]; !ok {
			t.Error("the entry with a malformed id was not added")
		}
		if m, err := s.GetMemory(ctx, s.DB, other); err != nil || !m.InvalidAt.IsZero() {
			t.Errorf("another workspace's memory: %+v, %v", m, err)
		}
		run, ok, err := s.GetRetroRun(ctx, s.DB, id)
		if !ok || err != nil {
			t.Fatal(run, ok, err)
		}
		var c struct {
			RepeatsByID    int            `json:"repeats_by_id"`
			SupersedesByID int            `json:"supersedes_by_id"`
			DroppedIDs     map[string]int `json:"dropped_ids"`
			Invalidated    int            `json:"invalidated"`
		}
		if err := json.Unmarshal([]byte(run.Counts), &c); err != nil {
			t.Fatal(err)
		}
		if c.RepeatsByID != 1 || c.SupersedesByID != 2 || c.Invalidated != 2 ||
			c.DroppedIDs[retro.DropUnknown] != 2 || c.DroppedIDs[retro.DropMalformed] != 1 || len(c.DroppedIDs) != 2 {
			t.Errorf("counts %s", run.Counts)
		}
	})
}

// publishedLibrary is the library of workspace at the digest published
// with watermark.
func publishedLibrary(t *testing.T, s *store.Store, workspace string, watermark int64) retro.Library {
	t.Helper()
	st, ok, err := s.GetDigestState(context.Background(), s.DB, workspace)
	if err != nil || !ok || st.WatermarkID != watermark {
		t.Fatalf("digest state %+v, %t, %v; want watermark %d", st, ok, err, watermark)
	}
	rows, err := s.ListMemories(context.Background(), s.DB, store.MemoryFilter{Workspaces: []string{workspace}, All: true, UpTo: watermark})
	if err != nil {
		t.Fatal(err)
	}
	return retro.BuildLibrary(memsvc.FromRows(rows), retro.Published{Watermark: watermark, At: st.PublishedAt}, 0)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
