package retrosession_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A retro whose proposal repeats one the user rejected stores no new
// proposal and says so in its counts; a different proposal is stored.
func TestRejectedProposalIsNotProposedAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: "retro-0", Workspace: ws,
				Summary: "run go test from the module root in the agent's test command", SessionID: "s0", CreatedAt: time.Now().UTC()}); err != nil {
				return err
			}
			_, err := s.DecideProposal(ctx, tx, "retro-0", store.ProposalRejected, "the agent already does", store.DecidedByCLI, time.Now().UTC())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e := start(t, s, script(mustJSON(answer), "stop")) // answer proposes the rejected one again
		session(t, s, "session-1")
		id := e.run(t, "session-1")
		if c := counts(t, s, id); c.Proposal || !c.ProposalRefused {
			t.Fatalf("counts %+v: want the proposal refused", c)
		}
		if ps, err := s.ListProposals(ctx, s.DB, ws, store.ProposalPending); err != nil || len(ps) != 0 {
			t.Fatalf("pending proposals %+v, %v", ps, err)
		}

		other := answer
		other.Proposal = retro.Proposals{{Summary: "cache the go module download directory between sessions"}}
		if err := e.fake.SetScript(script(mustJSON(other), "stop")); err != nil {
			t.Fatal(err)
		}
		session(t, s, "session-2")
		id = e.run(t, "session-2")
		if c := counts(t, s, id); !c.Proposal || c.ProposalRefused {
			t.Fatalf("counts %+v: want the new proposal stored", c)
		}
	})
}

func counts(t *testing.T, s *store.Store, jobID int64) retrosession.Counts {
	t.Helper()
	r, ok, err := s.GetRetroRun(context.Background(), s.DB, jobID)
	if err != nil || !ok {
		t.Fatalf("retro run %d: %v, %v", jobID, ok, err)
	}
	var c retrosession.Counts
	if err := json.Unmarshal([]byte(r.Counts), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
