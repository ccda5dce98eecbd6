package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

const usesAdmin = "adm-uses"

// useLogServer serves the agent's routes (apiToken) and the admin's
// (usesAdmin).
func useLogServer(t *testing.T, s *store.Store) *api.Server {
	t.Helper()
	cfg := enginetest.Config()
	cfg.APIToken, cfg.AdminToken = apiToken, usesAdmin
	client := enginetest.NewClient(t, s, engine.NewRegistry(nil), cfg, false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{Store: s, Client: client, Registry: engine.NewRegistry(nil), Logger: enginetest.Logger(),
		Config: cfg, AdminToken: usesAdmin, Memories: memories.New(s, cfg.Memory, cfg.Digest)})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// The admin API lists a playbook's logged uses (3 uses, 2 successes, 1
// fail, each reported by the agent with its session) and a memory's (a
// duplicate write and two searches), paginated, with the totals.
func TestUseLogRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := useLogServer(t, s)
		agent, admin := bearer(apiToken), bearer(usesAdmin)
		now := time.Now()
		if err := s.InTx(context.Background(), func(tx *sql.Tx) error {
			for _, slug := range []string{"release", "bisect"} {
				if err := s.PutPlaybook(context.Background(), tx, store.Playbook{Workspace: "/w", Slug: slug, Steps: []string{"step"}, UpdatedAt: now}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []struct{ slug, body string }{
			{"release", `{"workspace":"/w","success":true,"session_id":"sess-a"}`},
			{"release", `{"workspace":"/w","success":false,"session_id":"sess-a"}`},
			{"release", `{"workspace":"/w","success":true}`},
			{"bisect", `{"workspace":"/w","success":false}`},
		} {
			expect(t, serve(srv, "POST", "/v1/playbooks/"+u.slug+"/use", u.body, agent), http.StatusOK, nil)
		}
		expectError(t, serve(srv, "POST", "/v1/playbooks/release/use", `{"workspace":"/w","success":true,"session_id":"a\nb"}`, agent),
			http.StatusBadRequest, "session_id")
		for q, want := range map[string]int{"": 3, "&outcome=success": 2, "&outcome=fail": 1} {
			var out memories.PlaybookUses
			expect(t, serve(srv, "GET", "/v1/admin/playbooks/uses?workspace=/w&slug=release"+q, "", admin), http.StatusOK, &out)
			if len(out.Rows) != want || out.Uses.Total != want || out.Uses.Logged != want || out.Uses.Unlogged != 0 {
				t.Fatalf("%q: %+v", q, out)
			}
		}
		var all memories.PlaybookUses
		expect(t, serve(srv, "GET", "/v1/admin/playbooks/uses?workspace=/w&limit=3", "", admin), http.StatusOK, &all)
		if len(all.Rows) != 3 || all.Next != 3 || all.Uses.Total != 4 || all.Rows[0].Slug != "bisect" || all.Rows[0].ReportedBy != store.PlaybookByAgent {
			t.Fatalf("workspace page 1: %+v", all)
		}
		all = memories.PlaybookUses{}
		expect(t, serve(srv, "GET", "/v1/admin/playbooks/uses?workspace=/w&limit=3&offset=3", "", admin), http.StatusOK, &all)
		if len(all.Rows) != 1 || all.Next != 0 || all.Rows[0].SessionID != "sess-a" || !all.Rows[0].Success {
			t.Fatalf("workspace page 2: %+v", all)
		}
		expect(t, serve(srv, "GET", "/v1/admin/playbooks/uses?workspace=/w", "", agent), http.StatusUnauthorized, nil)
		expectError(t, serve(srv, "GET", "/v1/admin/playbooks/uses?workspace=/w&outcome=maybe", "", admin), http.StatusBadRequest, "outcome")
		expectError(t, serve(srv, "GET", "/v1/admin/playbooks/uses", "", admin), http.StatusBadRequest, "workspace")
		expectError(t, serve(srv, "GET", "/v1/admin/playbooks/uses?workspace=/w&slug=nope", "", admin), http.StatusNotFound, "no playbook nope")

		var wr writtenBody
		expect(t, serve(srv, "POST", "/v1/memories", `{"workspace":"/w","kind":"fact","text":"the build uses make"}`, agent), http.StatusCreated, &wr)
		expect(t, serve(srv, "POST", "/v1/memories", `{"workspace":"/w","kind":"fact","text":"the build uses make","session_id":"sess-w"}`, agent), http.StatusOK, nil)
		for range 2 {
			expect(t, serve(srv, "GET", "/v1/memories/search?workspace=/w&q=make&session=sess-s", "", agent), http.StatusOK, nil)
		}
		path := "/v1/admin/memories/" + strconv.FormatInt(wr.Memory.ID, 10) + "/uses"
		var mu memories.MemoryUses
		expect(t, serve(srv, "GET", path+"?limit=2", "", admin), http.StatusOK, &mu)
		if mu.Uses != (memories.UseTotals{Total: 3, Logged: 3}) || len(mu.Rows) != 2 || mu.Next != 2 ||
			mu.Rows[0].Cause != store.UseSearch || mu.Rows[0].SessionID != "sess-s" {
			t.Fatalf("memory uses page 1: %+v", mu)
		}
		mu = memories.MemoryUses{}
		expect(t, serve(srv, "GET", path+"?limit=2&offset=2", "", admin), http.StatusOK, &mu)
		if len(mu.Rows) != 1 || mu.Next != 0 || mu.Rows[0].Cause != store.UseWrite || mu.Rows[0].SessionID != "sess-w" || mu.Rows[0].Origin != "tool" {
			t.Fatalf("memory uses page 2: %+v", mu)
		}
		expect(t, serve(srv, "GET", path, "", agent), http.StatusUnauthorized, nil)
		expectError(t, serve(srv, "GET", "/v1/admin/memories/999999/uses", "", admin), http.StatusNotFound, "no memory 999999")
		expectError(t, serve(srv, "GET", "/v1/admin/memories/x/uses", "", admin), http.StatusBadRequest, "id")
		expectError(t, serve(srv, "GET", path+"?limit=0", "", admin), http.StatusBadRequest, "limit")
	})
}

// The admin's verify route needs the admin token: with one set, the
// agent's token is refused (401) and verifies nothing; the admin's
// verifies as the admin API.
func TestAdminVerifyNeedsTheAdminToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		srv := useLogServer(t, s)
		text := "the release needs a signed tag"
		id, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: "/w", Kind: "fact", Text: text, TextNorm: memory.Normalize(text),
			Importance: 5, Origin: "retro", RecordedAt: time.Now().Add(-time.Hour), TTLDays: 180})
		if err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprintf("/v1/admin/memories/%d/verify", id)
		expectError(t, serve(srv, "POST", path, "", bearer(apiToken)), http.StatusUnauthorized, "")
		if m, _ := s.GetMemory(ctx, s.DB, id); !m.VerifiedAt.IsZero() || m.VerifiedBy != "" {
			t.Fatalf("the agent's token verified it: %+v", m)
		}
		var v struct {
			Memory memory.Memory `json:"memory"`
		}
		expect(t, serve(srv, "POST", path, "", bearer(usesAdmin)), http.StatusOK, &v)
		if m, _ := s.GetMemory(ctx, s.DB, id); m.VerifiedBy != store.ActorAPI || v.Memory.VerifiedBy != store.ActorAPI {
			t.Fatalf("verified by the admin: stored %q, answered %q, want %q", m.VerifiedBy, v.Memory.VerifiedBy, store.ActorAPI)
		}
	})
}
