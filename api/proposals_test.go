package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func addProposal(t *testing.T, s *store.Store, id, ws, summary string) {
	t.Helper()
	err := s.InTx(context.Background(), func(tx *sql.Tx) error {
		_, err := s.AddPendingProposal(context.Background(), tx, store.Proposal{ID: id, Workspace: ws, Summary: summary,
			SessionID: "session-1", JobID: 7, CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

type proposalsBody struct {
	Proposals []memories.Proposal `json:"proposals"`
}

type decisionBody struct {
	Proposal memories.Proposal `json:"proposal"`
	Lesson   *struct {
		Memory    memory.Memory `json:"memory"`
		Duplicate bool          `json:"duplicate"`
	} `json:"lesson"`
}

func TestProposalRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := memoryServer(t, s, "")
		addProposal(t, s, "retro-1", "/w", "cache go modules in CI")
		addProposal(t, s, "retro-2", "/v", "add a lint step")

		var list proposalsBody
		expect(t, serve(srv, "GET", "/v1/admin/proposals", ""), http.StatusOK, &list)
		if len(list.Proposals) != 2 || list.Proposals[0].ID != "retro-1" || list.Proposals[0].Status != store.ProposalPending {
			t.Fatalf("list: %+v", list)
		}
		expect(t, serve(srv, "GET", "/v1/admin/proposals?workspace=/v&status=pending", ""), http.StatusOK, &list)
		if len(list.Proposals) != 1 || list.Proposals[0].ID != "retro-2" {
			t.Fatalf("list /v pending: %+v", list)
		}
		expectError(t, serve(srv, "GET", "/v1/admin/proposals?status=maybe", ""), http.StatusBadRequest, "status")
		var p memories.Proposal
		expect(t, serve(srv, "GET", "/v1/admin/proposals/retro-1", ""), http.StatusOK, &p)
		if p.Summary != "cache go modules in CI" || p.JobID != 7 || !p.DecidedAt.IsZero() {
			t.Fatalf("show: %+v", p)
		}
		expectError(t, serve(srv, "GET", "/v1/admin/proposals/retro-9", ""), http.StatusNotFound, "no proposal retro-9")
		// A pending proposal has no decider: decided_by is left out, in
		// its show and in the list.
		for _, path := range []string{"/v1/admin/proposals/retro-1", "/v1/admin/proposals"} {
			if rec := serve(srv, "GET", path, ""); strings.Contains(rec.Body.String(), "decided_by") {
				t.Fatalf("%s shows a pending proposal's decider: %s", path, rec.Body)
			}
		}

		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/reject", ""), http.StatusBadRequest, "note: required")
		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/reject", `{"note":""}`), http.StatusBadRequest, "note: required")
		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/reject", `{"why":"x"}`), http.StatusBadRequest, `unknown field "why"`)
		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/reject", `{"note":`), http.StatusBadRequest, "invalid JSON body")
		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-9/reject", `{"note":"no"}`), http.StatusNotFound, "no proposal retro-9")

		var d decisionBody
		expect(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/reject", `{"note":"the CI cache is already warm"}`), http.StatusOK, &d)
		if d.Proposal.Status != store.ProposalRejected || d.Proposal.DecidedAt.IsZero() || d.Proposal.Note != "the CI cache is already warm" ||
			d.Proposal.DecidedBy != store.DecidedByAPI ||
			d.Lesson == nil || d.Lesson.Memory.Kind != memory.Lesson || d.Lesson.Memory.Origin != memory.OriginCommand ||
			d.Lesson.Memory.Text != "proposal rejected: cache go modules in CI -> the CI cache is already warm" {
			t.Fatalf("reject: %+v", d)
		}
		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/accept", ""), http.StatusConflict, "already rejected")
		// Who decided is in the proposal's JSON, as decided_by.
		if rec := serve(srv, "GET", "/v1/admin/proposals/retro-1", ""); !strings.Contains(rec.Body.String(), `"decided_by": "admin (api)"`) {
			t.Fatalf("show decided: %s", rec.Body)
		}

		d = decisionBody{}
		expect(t, serve(srv, "POST", "/v1/admin/proposals/retro-2/accept", ""), http.StatusOK, &d)
		if d.Proposal.Status != store.ProposalAccepted || d.Lesson != nil {
			t.Fatalf("accept: %+v", d)
		}
		expectError(t, serve(srv, "POST", "/v1/admin/proposals/retro-2/reject", `{"note":"changed my mind"}`), http.StatusConflict, "already accepted")
		expect(t, serve(srv, "GET", "/v1/admin/proposals?status=pending", ""), http.StatusOK, &list)
		if len(list.Proposals) != 0 {
			t.Fatalf("pending after deciding both: %+v", list)
		}
	})
}

func TestProposalRoutesAreAdmin(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	srv := memoryServer(t, s, "")
	expect(t, serve(srv, "GET", "/v1/admin/proposals", "", from("192.0.2.1:4000")), http.StatusForbidden, nil)
	expect(t, serve(srv, "POST", "/v1/admin/proposals/retro-1/accept", "", from("192.0.2.1:4000")), http.StatusForbidden, nil)
}
