package probe_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestProbe(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		reg := engine.NewRegistry(nil)
		engine.Add(reg, probe.Spec, &probe.Worker{})
		client := enginetest.Start(t, s, reg, enginetest.Config())
		events := enginetest.Events(t, client)

		ok, err := client.Insert(ctx, probe.Args{Note: "ok"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := enginetest.WaitFinal(t, events, ok.Job.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("succeeding probe ended %s", row.State)
		}

		var failing *rivertype.JobInsertResult
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			failing, err = client.InsertTx(ctx, tx, probe.Args{Fail: true}, nil)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if failing.Job.MaxAttempts != 2 || failing.Job.Queue != "default" {
			t.Fatalf("spec not applied on insert: max_attempts=%d queue=%s", failing.Job.MaxAttempts, failing.Job.Queue)
		}
		row := enginetest.WaitFinal(t, events, failing.Job.ID)
		if row.State != rivertype.JobStateDiscarded || row.Attempt != 2 {
			t.Fatalf("failing probe ended %s after %d attempts; want discarded after 2", row.State, row.Attempt)
		}
		if len(row.Errors) != 2 || !strings.Contains(row.Errors[1].Error, "failed on purpose (attempt 2 of 2)") {
			t.Fatalf("errors = %+v", row.Errors)
		}
	})
}
