package retrosession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestRetroRetriesAfter30Minutes pins the seed's retro queue backoff
// (pendingRetryBackoffMs: 30 minutes) as the default specs apply it: a
// session or error retro whose call fails is retried 30 minutes after the
// attempt, not sooner and not later, with no config override.
func TestRetroRetriesAfter30Minutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		l := llmtest.New(t, s, llmtest.Options{Fake: fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
			{Fault: fakeds.FaultServerError, Message: "the first call fails"}}}}})
		reg := engine.NewRegistry(nil)
		engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: s, LLM: l.LLM, Logger: enginetest.Logger()})
		engine.Add(reg, retroerror.Spec, &retroerror.Worker{Store: s, LLM: l.LLM, Logger: enginetest.Logger()})
		client := enginetest.NewClient(t, s, reg, l.Config, true)
		evs := enginetest.Events(t, client)
		ctx := context.Background()
		if err := client.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Stop(context.Background()) })

		t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		var batch []events.Event
		for i, e := range []struct {
			typ     events.Type
			payload string
		}{
			{events.SessionStart, `{"title":"fix the build","primary":true}`},
			{events.ToolResult, `{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true,"output":"FAIL"}`},
			{events.Error, `{"message":"no required module provides package","code":"go-test"}`},
			{events.SessionEnd, `{"reason":"completed"}`},
		} {
			batch = append(batch, events.Event{ID: fmt.Sprintf("backoff-%d", i), Type: e.typ, SessionID: "backoff", Workspace: ws,
				Time: t0.Add(time.Duration(i) * time.Second), Payload: json.RawMessage(e.payload)})
		}
		if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(ctx, batch, store.SourcePush); err != nil {
			t.Fatal(err)
		}
		for _, args := range []river.JobArgs{retrosession.Args{SessionID: "backoff"}, retroerror.Args{SessionID: "backoff"}} {
			before := time.Now()
			res, err := client.Insert(ctx, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			ev := enginetest.WaitFor(t, evs, func(ev *river.Event) bool {
				return ev.Job.ID == res.Job.ID && ev.Kind == river.EventKindJobFailed
			})
			after := time.Now()
			if ev.Job.State != rivertype.JobStateRetryable || len(ev.Job.Errors) != 1 || !strings.Contains(ev.Job.Errors[0].Error, "the first call fails") {
				t.Fatalf("failed %s is %s (%+v), want retryable after the fake's 500", args.Kind(), ev.Job.State, ev.Job.Errors)
			}
			lo, hi := before.Add(30*time.Minute-time.Second), after.Add(30*time.Minute+time.Second)
			if at := ev.Job.ScheduledAt; at.Before(lo) || at.After(hi) {
				t.Fatalf("%s retry scheduled %s after the attempt, want 30m", args.Kind(), at.Sub(before).Round(time.Second))
			}
		}
	})
}
